"""Tests for swcuts.io.memory: loading, validation, memory check, atomic writes."""

from __future__ import annotations

import os

import imageio.v3 as iio
import numpy as np
import pytest

from swcuts import segment
from swcuts.io.errors import InputError
from swcuts.io.image_write import atomic_write, save_label_png, save_npy, save_rgb_png
from swcuts.io.memory import check_memory, estimate_memory
from swcuts.io.image_read import load_image
from swcuts.image.prepare import prepare_image


def one_line(excinfo):
    msg = str(excinfo.value)
    assert msg
    assert "\n" not in msg
    return msg


def rng_image(shape, dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)


def check_outputs(features, display, n_feat, display_shape):
    assert features.dtype == np.float64 and display.dtype == np.float64
    assert features.shape == display_shape[:2] + (n_feat,)
    assert display.shape == display_shape
    assert features.flags.c_contiguous and display.flags.c_contiguous
    for a in (features, display):
        assert np.isfinite(a).all()
        assert a.min() >= 0.0 and a.max() <= 1.0


# --------------------------------------------------------------------------- load_image


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as ei:
        load_image(tmp_path / "nope.png")
    msg = one_line(ei)
    assert "does not exist" in msg and "nope.png" in msg


def test_directory(tmp_path):
    with pytest.raises(InputError) as ei:
        load_image(tmp_path)
    assert "directory" in one_line(ei)


def test_text_file_named_png(tmp_path):
    p = tmp_path / "x.png"
    p.write_text("this is not a picture\n")
    with pytest.raises(InputError) as ei:
        load_image(p)
    msg = one_line(ei)
    assert "is not an image file that swcuts can read" in msg
    assert "PNG, JPEG, TIFF or .npy" in msg


def test_truncated_png(tmp_path):
    p = tmp_path / "cut.png"
    iio.imwrite(p, rng_image((20, 20)))
    p.write_bytes(p.read_bytes()[:40])
    with pytest.raises(InputError) as ei:
        load_image(p)
    one_line(ei)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.png"
    p.write_bytes(b"")
    with pytest.raises(InputError) as ei:
        load_image(p)
    assert "empty" in one_line(ei)


def test_npy_loading(tmp_path):
    a = np.random.default_rng(1).random((6, 7, 3)).astype(np.float32)
    p = tmp_path / "a.npy"
    np.save(p, a)
    b = load_image(p)
    assert b.dtype == np.float32 and np.array_equal(a, b)
    # str path works as well
    assert np.array_equal(load_image(str(p)), a)


def test_npy_with_pickled_objects_rejected(tmp_path):
    p = tmp_path / "obj.npy"
    np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError) as ei:
        load_image(p)
    one_line(ei)


def test_png8_roundtrip(tmp_path):
    img = rng_image((12, 15, 3))
    img[0, 0] = 255
    img[0, 1] = 0
    p = tmp_path / "rgb8.png"
    iio.imwrite(p, img)
    loaded = load_image(p)
    assert loaded.dtype == np.uint8 and np.array_equal(loaded, img)
    features, display = prepare_image(loaded)
    check_outputs(features, display, 3, (12, 15, 3))
    np.testing.assert_allclose(display, img / 255.0)
    np.testing.assert_allclose(display[0, 0], 1.0)
    np.testing.assert_allclose(display[0, 1], 0.0)


def test_png8_grey(tmp_path):
    img = rng_image((9, 11))
    p = tmp_path / "g8.png"
    iio.imwrite(p, img)
    features, display = prepare_image(load_image(p))
    check_outputs(features, display, 1, (9, 11))
    np.testing.assert_allclose(features[..., 0], img / 255.0)
    np.testing.assert_allclose(display, img / 255.0)


def test_png16_grey_roundtrip(tmp_path):
    img = rng_image((10, 13), np.uint16)
    img[0, 0] = 65535
    img[0, 1] = 0
    p = tmp_path / "g16.png"
    iio.imwrite(p, img)
    loaded = load_image(p)
    assert loaded.dtype == np.uint16 and np.array_equal(loaded, img)
    features, display = prepare_image(loaded)
    check_outputs(features, display, 1, (10, 13))
    assert display[0, 0] == 1.0 and display[0, 1] == 0.0
    np.testing.assert_allclose(display, img / 65535.0)


def test_png16_white_is_one(tmp_path):
    p = tmp_path / "white16.png"
    iio.imwrite(p, np.full((4, 5), 65535, np.uint16))
    features, display = prepare_image(load_image(p))
    assert np.all(display == 1.0) and np.all(features == 1.0)


def test_png16_rgb_keeps_16_bits(tmp_path):
    import cv2

    img = rng_image((8, 9, 3), np.uint16)
    img[0, 0] = (65535, 0, 257)
    p = tmp_path / "rgb16.png"
    assert cv2.imwrite(str(p), img[..., ::-1])  # OpenCV writes BGR
    loaded = load_image(p)
    assert loaded.dtype == np.uint16 and np.array_equal(loaded, img)
    features, display = prepare_image(loaded)
    check_outputs(features, display, 3, (8, 9, 3))
    np.testing.assert_allclose(display[0, 0], [1.0, 0.0, 257 / 65535])


def test_jpeg(tmp_path):
    img = np.zeros((16, 16, 3), np.uint8)
    img[:, 8:] = (200, 30, 30)
    p = tmp_path / "a.jpg"
    iio.imwrite(p, img)
    loaded = load_image(p)
    assert loaded.shape == (16, 16, 3) and loaded.dtype == np.uint8
    features, display = prepare_image(loaded)
    check_outputs(features, display, 3, (16, 16, 3))


def test_tiff_and_multipage_takes_first(tmp_path):
    frames = rng_image((3, 10, 12, 3))
    p = tmp_path / "m.tif"
    iio.imwrite(p, frames)
    loaded = load_image(p)
    assert np.array_equal(loaded, frames[0])

    grey = rng_image((5, 10, 12), np.uint16)
    p2 = tmp_path / "stack.tiff"
    iio.imwrite(p2, grey)
    assert np.array_equal(load_image(p2), grey[0])


def test_animated_gif_first_frame(tmp_path):
    frames = np.zeros((3, 10, 12, 3), np.uint8)
    frames[1] = 255
    p = tmp_path / "anim.gif"
    iio.imwrite(p, frames)
    loaded = load_image(p)
    assert loaded.shape[:2] == (10, 12)
    assert loaded.max() == 0  # first (black) frame


# --------------------------------------------------------------------------- prepare_image


def test_rgba_drops_alpha():
    rgb = rng_image((6, 7, 3))
    rgba = np.concatenate([rgb, np.full((6, 7, 1), 17, np.uint8)], axis=-1)
    f4, d4 = prepare_image(rgba)
    f3, d3 = prepare_image(rgb)
    check_outputs(f4, d4, 3, (6, 7, 3))
    np.testing.assert_array_equal(f4, f3)
    np.testing.assert_array_equal(d4, d3)


def test_rgba_png(tmp_path):
    rgba = rng_image((6, 7, 4))
    p = tmp_path / "rgba.png"
    iio.imwrite(p, rgba)
    features, display = prepare_image(load_image(p))
    check_outputs(features, display, 3, (6, 7, 3))


def test_grey_alpha():
    grey = rng_image((5, 6))
    ga = np.stack([grey, np.zeros_like(grey)], axis=-1)
    features, display = prepare_image(ga)
    check_outputs(features, display, 1, (5, 6))
    np.testing.assert_allclose(display, grey / 255.0)


def test_single_channel_3d_is_grey():
    grey = rng_image((5, 6))
    features, display = prepare_image(grey[..., None])
    check_outputs(features, display, 1, (5, 6))
    np.testing.assert_allclose(features[..., 0], grey / 255.0)


def test_lab_features_known_colours():
    img = np.zeros((2, 3, 3), np.float64)
    img[0, 0] = 1.0  # white
    img[0, 1] = (1.0, 0.0, 0.0)  # red
    img[1, 2] = (0.0, 0.0, 1.0)  # blue
    features, _ = prepare_image(img)
    np.testing.assert_allclose(features[0, 0], [1.0, 0.5, 0.5], atol=1e-4)
    np.testing.assert_allclose(features[1, 0], [0.0, 0.5, 0.5], atol=1e-4)
    assert features[0, 1, 1] > 0.7  # red: a* strongly positive
    assert features[1, 2, 2] < 0.3  # blue: b* strongly negative


@pytest.mark.parametrize("shape", [(1, 1), (0, 5), (5, 0), (1, 10), (10, 1), (1, 1, 3), (0, 5, 3)])
def test_too_small_rejected(shape):
    with pytest.raises(InputError) as ei:
        prepare_image(np.zeros(shape, np.uint8))
    h, w = shape[:2]
    assert one_line(ei) == f"image is {h}x{w}; swcuts needs at least 2x2 pixels"


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4, 5), ()])
def test_wrong_ndim_rejected(shape):
    with pytest.raises(InputError) as ei:
        prepare_image(np.zeros(shape))
    one_line(ei)


def test_five_channels_rejected():
    with pytest.raises(InputError) as ei:
        prepare_image(np.zeros((4, 4, 5), np.uint8))
    assert one_line(ei).startswith(
        "image has 5 channels; swcuts takes grey, grey+alpha, RGB or RGBA (at most 4)"
    )


def test_channels_first_without_channel_axis_hints():
    with pytest.raises(InputError) as ei:
        prepare_image(np.zeros((3, 20, 30), np.uint8))
    msg = one_line(ei)
    assert "30 channels" in msg and "channel_axis" in msg


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_inf_rejected(bad):
    img = np.random.default_rng(0).random((5, 5, 3))
    img[2, 3, 1] = bad
    with pytest.raises(InputError) as ei:
        prepare_image(img)
    assert one_line(ei).startswith("image contains NaN or infinite values; ")


def test_channel_axis_0():
    hwc = rng_image((8, 9, 3))
    chw = np.ascontiguousarray(np.moveaxis(hwc, -1, 0))
    f0, d0 = prepare_image(chw, channel_axis=0)
    f1, d1 = prepare_image(hwc)
    check_outputs(f0, d0, 3, (8, 9, 3))
    np.testing.assert_array_equal(f0, f1)
    np.testing.assert_array_equal(d0, d1)


def test_channel_axis_none_requires_2d():
    grey = rng_image((5, 6))
    features, display = prepare_image(grey, channel_axis=None)
    check_outputs(features, display, 1, (5, 6))
    with pytest.raises(InputError) as ei:
        prepare_image(rng_image((5, 6, 3)), channel_axis=None)
    one_line(ei)


def test_channel_axis_out_of_range():
    with pytest.raises(InputError) as ei:
        prepare_image(rng_image((5, 6, 3)), channel_axis=3)
    one_line(ei)


def test_float_in_unit_range_kept():
    img = np.random.default_rng(2).uniform(0.2, 0.6, (5, 6))
    _, display = prepare_image(img)
    np.testing.assert_array_equal(display, img)


def test_float_outside_unit_range_rescaled():
    img = np.array([[-2.0, 0.0], [2.0, 6.0]])
    features, display = prepare_image(img)
    np.testing.assert_allclose(display, [[0.0, 0.25], [0.5, 1.0]])
    np.testing.assert_allclose(features[..., 0], display)


def test_float_rgb_out_of_range_rescaled_jointly():
    img = np.zeros((2, 2, 3))
    img[0, 0] = (255.0, 0.0, 0.0)
    img[1, 1] = (0.0, 127.5, 0.0)
    _, display = prepare_image(img)
    np.testing.assert_allclose(display[0, 0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(display[1, 1], [0.0, 0.5, 0.0])


def test_constant_float_image_out_of_range_is_zero():
    features, display = prepare_image(np.full((4, 4), 7.5))
    assert np.all(display == 0.0) and np.all(features == 0.0)


def test_float32_and_float16():
    img = np.random.default_rng(3).random((4, 5)).astype(np.float32)
    _, d = prepare_image(img)
    assert d.dtype == np.float64
    np.testing.assert_allclose(d, img.astype(np.float64))
    _, d16 = prepare_image(img.astype(np.float16))
    assert d16.dtype == np.float64


def test_bool_image():
    img = np.zeros((4, 5), bool)
    img[1:3, 2:4] = True
    features, display = prepare_image(img)
    check_outputs(features, display, 1, (4, 5))
    np.testing.assert_array_equal(display, img.astype(float))


def test_signed_int16_by_dtype_range():
    img = np.array([[-32768, 0], [32767, -32768]], np.int16)
    _, display = prepare_image(img)
    np.testing.assert_allclose(display, [[0.0, 32768 / 65535], [1.0, 0.0]])


def test_int64_rescaled_by_own_range():
    img = np.array([[0, 100], [200, 50]], np.int64)  # e.g. from np.array(list)
    _, display = prepare_image(img)
    np.testing.assert_allclose(display, [[0.0, 0.5], [1.0, 0.25]])


def test_nested_list_accepted():
    features, display = prepare_image([[0.0, 0.5], [1.0, 0.25]])
    check_outputs(features, display, 1, (2, 2))


@pytest.mark.parametrize(
    "bad",
    [
        "image.png",
        np.array([["a", "b"], ["c", "d"]]),
        np.zeros((3, 3), complex),
        np.empty((3, 3), object),
        [[1, 2], [3]],
        None,
    ],
)
def test_non_numeric_type_error(bad):
    with pytest.raises(TypeError) as ei:
        prepare_image(bad)
    assert not isinstance(ei.value, InputError)
    one_line(ei)


def test_input_error_is_value_error():
    assert issubclass(InputError, ValueError)


def test_prepare_does_not_modify_input():
    img = np.random.default_rng(4).uniform(-1, 3, (5, 5, 3))
    before = img.copy()
    prepare_image(img)
    np.testing.assert_array_equal(img, before)


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
