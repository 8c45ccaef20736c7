"""Tests for swcuts.io: the memory check, atomic writes and the save_* writers.
Loading and preparing images are in test_imageio.py."""

from __future__ import annotations

import os

import imageio.v3 as iio
import numpy as np
import pytest

from swcuts import segment
from swcuts.image.prepare import prepare_image
from swcuts.io.errors import InputError
from swcuts.io.image_read import load_image
from swcuts.io.image_write import atomic_write, save_label_png, save_npy, save_rgb_png
from swcuts.io.memory import check_memory, estimate_memory

from test_imageio import one_line, rng_image

# --------------------------------------------------------------------------- check_memory


def test_check_memory_raises_with_tiny_limit():
    with pytest.raises(InputError) as ei:
        check_memory((1000, 2000), 5000, limit_bytes=1000)
    msg = one_line(ei)
    assert msg.startswith("image of 1000x2000 pixels with 5000 atoms needs about ")
    assert " GB but only " in msg
    assert msg.endswith("GB is available; downscale the image or use fewer atoms")


def test_check_memory_passes_with_big_limit():
    need = check_memory((1000, 2000, 3), 5000, limit_bytes=10**15)
    assert need == estimate_memory((1000, 2000), 5000)
    assert need == 1000 * 2000 * 200 + 5000 * 2048


def test_check_memory_custom_cost():
    assert check_memory((10, 10), 0, bytes_per_pixel=1, limit_bytes=100) == 100
    with pytest.raises(InputError):
        check_memory((10, 10), 1, bytes_per_pixel=1, bytes_per_vertex=1, limit_bytes=100)


def test_check_memory_real_system_small_job():
    # A tiny job must fit on any machine running the tests.
    assert check_memory((10, 10), 100) > 0


def test_check_memory_absurd_job_fails_on_real_system():
    with pytest.raises(InputError) as ei:
        check_memory((10**6, 10**6), 10**12)
    one_line(ei)


# --------------------------------------------------------------------------- atomic_write


def test_atomic_write_success_and_temp_name(tmp_path):
    seen = []
    target = tmp_path / "labels.png"

    def write(tmp):
        seen.append(tmp)
        with open(tmp, "w") as fh:
            fh.write("ok")

    assert atomic_write(target, write) == target
    assert target.read_text() == "ok"
    (tmp,) = seen
    name = os.path.basename(tmp)
    assert os.path.dirname(tmp) == str(tmp_path)
    assert name.startswith(".labels.png.tmp-") and name.endswith(".png")
    assert os.listdir(tmp_path) == ["labels.png"]


def test_atomic_write_failure_leaves_nothing(tmp_path):
    target = tmp_path / "out.png"

    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(b"partial")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        atomic_write(target, write)
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_atomic_write_failure_keeps_old_target(tmp_path):
    target = tmp_path / "out.npy"
    target.write_bytes(b"old")

    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(b"new but incomplete")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, write)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.npy"]


def test_atomic_write_overwrites(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    def write(tmp):
        with open(tmp, "w") as fh:
            fh.write("new")

    atomic_write(target, write)
    assert target.read_text() == "new"


def test_atomic_write_missing_directory(tmp_path):
    with pytest.raises(InputError) as ei:
        atomic_write(tmp_path / "no" / "such" / "x.png", lambda tmp: None)
    assert "does not exist" in one_line(ei)


def test_atomic_write_writer_that_writes_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "x.png", lambda tmp: None)
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- save_*


def test_save_label_png_roundtrip_exact(tmp_path):
    labels = np.random.default_rng(5).integers(0, 65536, size=(17, 23)).astype(np.int64)
    labels[0, 0] = 65535
    labels[0, 1] = 0
    p = tmp_path / "labels.png"
    assert save_label_png(p, labels) == p
    back = load_image(p)
    assert back.dtype == np.uint16
    np.testing.assert_array_equal(back, labels)
    assert iio.imread(p).dtype == np.uint16  # a genuine 16-bit PNG
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(tmp_path) == ["labels.png"]


@pytest.mark.parametrize("bad", [np.array([[0, 65536]]), np.array([[-1, 3]])])
def test_save_label_png_out_of_range(tmp_path, bad):
    p = tmp_path / "labels.png"
    with pytest.raises(InputError) as ei:
        save_label_png(p, np.tile(bad, (2, 1)))
    assert "65535" in one_line(ei)
    assert os.listdir(tmp_path) == []


def test_save_label_png_rejects_float_and_3d(tmp_path):
    with pytest.raises(TypeError):
        save_label_png(tmp_path / "l.png", np.zeros((3, 3)))
    with pytest.raises(InputError):
        save_label_png(tmp_path / "l.png", np.zeros((3, 3, 3), int))
    assert os.listdir(tmp_path) == []


def test_save_rgb_png(tmp_path):
    rgb = np.random.default_rng(6).random((7, 8, 3))
    rgb[0, 0] = (1.0, 0.0, 1.2)  # out of range is clipped
    p = tmp_path / "overlay.png"
    save_rgb_png(p, rgb)
    back = load_image(p)
    assert back.dtype == np.uint8 and back.shape == (7, 8, 3)
    expected = np.round(np.clip(rgb, 0, 1) * 255).astype(np.uint8)
    np.testing.assert_array_equal(back, expected)
    assert os.listdir(tmp_path) == ["overlay.png"]


def test_save_rgb_png_bad_shape(tmp_path):
    with pytest.raises(InputError) as ei:
        save_rgb_png(tmp_path / "o.png", np.zeros((4, 4, 5)))
    one_line(ei)


def test_save_npy(tmp_path):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    p = tmp_path / "feat.npy"
    save_npy(p, a)
    np.testing.assert_array_equal(np.load(p), a)
    # no ".npy" appended to other suffixes, unlike np.save
    q = tmp_path / "feat.bin"
    save_npy(q, a)
    np.testing.assert_array_equal(np.load(q), a)
    assert sorted(os.listdir(tmp_path)) == ["feat.bin", "feat.npy"]


def test_jpeg_exif_orientation_applied(tmp_path):
    from PIL import Image

    img = np.zeros((10, 20, 3), np.uint8)  # wide image, left half white
    img[:, :10] = 255
    pil = Image.fromarray(img)
    exif = pil.getexif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    p = tmp_path / "rot.jpg"
    pil.save(p, exif=exif, quality=95)
    loaded = load_image(p)
    assert loaded.shape == (20, 10, 3)  # tall, as a viewer shows it
    assert loaded[:5].mean() > 200 and loaded[-5:].mean() < 50


def test_control_characters_in_path_keep_message_one_line(tmp_path):
    with pytest.raises(InputError) as ei:
        load_image(tmp_path / "bad\nname.png")
    assert "\\n" in one_line(ei)


def test_palette_tiff_expanded_to_colour(tmp_path):
    from PIL import Image

    img = np.zeros((10, 12, 3), np.uint8)
    img[:, 6:] = (255, 0, 0)
    p = tmp_path / "pal.tif"
    Image.fromarray(img).convert("P").save(p)
    loaded = load_image(p)
    assert loaded.shape[:2] == (10, 12) and loaded.shape[2] in (3, 4)
    np.testing.assert_array_equal(loaded[..., :3], img)


def test_planar_tiff_channels_last(tmp_path):
    import tifffile

    img = rng_image((10, 12, 3))
    p = tmp_path / "planar.tif"
    tifffile.imwrite(p, np.moveaxis(img, -1, 0), photometric="rgb", planarconfig="separate")
    np.testing.assert_array_equal(load_image(p), img)


def test_multipage_tiff_warns_and_cmyk_jpeg_reads_as_rgb(tmp_path):
    import tifffile
    from PIL import Image

    rgb = (np.random.default_rng(0).random((20, 30, 3)) * 255).astype(np.uint8)
    tifffile.imwrite(tmp_path / "two.tif", np.stack([rgb, 255 - rgb]), photometric="rgb")
    with pytest.warns(UserWarning, match="2 pages"):
        first = load_image(tmp_path / "two.tif")
    assert np.array_equal(first, rgb)
    Image.fromarray(rgb).convert("CMYK").save(tmp_path / "cmyk.jpg", quality=95)
    read = load_image(tmp_path / "cmyk.jpg")
    assert read.shape == rgb.shape and np.abs(read.astype(int) - rgb).mean() < 5


def test_very_large_image_is_refused_for_its_size_not_as_unreadable(tmp_path, monkeypatch):
    """Pillow's decompression-bomb limit is not swcuts' limit: memory is."""
    import PIL.Image

    from swcuts.io import memory as sio

    iio.imwrite(tmp_path / "big.png", np.zeros((60, 80), np.uint8))
    monkeypatch.setattr(PIL.Image, "MAX_IMAGE_PIXELS", 100)  # Pillow would refuse 4800 pixels
    assert load_image(tmp_path / "big.png").shape == (60, 80)
    assert PIL.Image.MAX_IMAGE_PIXELS == 100
    monkeypatch.setattr(sio, "available_memory", lambda: 1000)
    with pytest.raises(InputError, match="60x80 pixels.*downscale"):
        load_image(tmp_path / "big.png")


def test_rgb_with_equal_channels_is_grey():
    # A grey photo saved as RGB: the same features and segmentation as the
    # grey image (as colour, rgb2lab leaves chroma noise of ~1e-5 and the
    # constant chroma channels would pay the likelihood's complexity cost).
    rng = np.random.default_rng(3)
    grey = (rng.random((12, 16)) * 255).astype(np.uint8)
    grey[:, 8:] //= 3
    for rgb in (np.dstack([grey] * 3), np.dstack([grey] * 3 + [np.full_like(grey, 255)])):
        features, display = prepare_image(rgb)
        assert features.shape == (12, 16, 1) and display.shape == (12, 16)
        np.testing.assert_array_equal(features, prepare_image(grey)[0])
    np.testing.assert_array_equal(segment(np.dstack([grey] * 3), seed=0, steps=300).labels,
                                  segment(grey, seed=0, steps=300).labels)
    tinted = np.dstack([grey] * 3)
    tinted[0, 0, 2] += 1   # one step of blue on one pixel: colour
    assert prepare_image(tinted)[0].shape == (12, 16, 3)
