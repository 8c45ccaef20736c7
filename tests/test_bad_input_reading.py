"""Reading and scaling images and frames (issue 32, "silent wrong results"):
every case ends in a correct result, a one-line warning that says what was
done, or a one-line refusal (exit code 2 on the command line, an exception
from the API); never a run that silently segments the wrong thing.

1. Motion frames of different types (uint8 with uint16, uint8 with floats
   in [0, 1]) are each scaled by their own type.
2. 10/12/14-bit data in a 16-bit image is scaled by its sample depth.
3. A TIFF holding one (H, W, C) array as H pages of W x C is read as one
   image; real stacks give their first page and a warning.
4. A file name where an image array belongs is refused naming the function
   and what to call.

Every file is made here, tiny, in ``tmp_path``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
import tifffile

import swcuts
from swcuts.cli.app import main
from swcuts.io.errors import InputError
from swcuts.io.image_read import load_image
from swcuts.image.prepare import prepare_image
from swcuts.motion.segment import _as_frames

RUN = ["--steps", "60", "--n-atoms", "20", "--no-progress"]
MOTION = ["--seed", "0", "--rounds", "2"]


def one_line(text: str) -> str:
    assert text and "\n" not in text.strip(), text
    return text


def run_cli(capsys, argv):
    """``main(argv)``: (exit code, stdout, the lines of stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def messages(record) -> list[str]:
    return [str(w.message) for w in record]


class said_nothing(warnings.catch_warnings):
    """A block in which swcuts warns of nothing (other libraries may)."""

    def __init__(self):
        super().__init__(record=True)

    def __enter__(self):
        self.record = super().__enter__()
        warnings.simplefilter("always")
        return self.record

    def __exit__(self, *exc):
        super().__exit__(*exc)
        ours = [str(w.message) for w in self.record if "swcuts" in str(w.filename)]
        assert not ours, ours


@pytest.fixture(scope="module")
def pair():
    """Two uint8 frames (32x40) with one moving object."""
    from swcuts.evaluation.synthetic.motion import layered_pair

    p = layered_pair(shape=(32, 40), n_objects=1, seed=3)
    return tuple(np.round(f * 255).astype(np.uint8) for f in (p.frame1, p.frame2))


def halves_12bit(shape=(24, 32), seed=0):
    """A textured two-halves image of 12-bit samples in uint16 (max < 4096)."""
    rng = np.random.default_rng(seed)
    img = 1000 + 250 * rng.standard_normal(shape)
    img[:, shape[1] // 2:] += 1800
    return np.clip(img, 0, 4095).astype(np.uint16)


# ------------------------------------------ 1. motion frames of different types
def test_frames_of_different_types_are_each_scaled_by_their_own(pair):
    a, b = pair
    reference = _as_frames(a, b, -1)
    with said_nothing():  # nothing to say: both are plain 8-bit pictures
        for other in (b.astype(np.uint16) * 257,      # a 16-bit export of frame 2
                      b / 255.0,                      # floats in [0, 1]
                      b.astype(np.float32) / 255,
                      b.astype(np.int64),             # uint8 values in a wide integer
                      b.astype(np.float64)):          # floats on 0..255
            f1, f2 = _as_frames(a, other, -1)
            np.testing.assert_array_equal(f1, reference[0])
            np.testing.assert_allclose(f2, reference[1], atol=1e-3)
        # [0, 1] beside 0..255, both float64: the second by its own min..max, not squashed
        f1, f2 = _as_frames(a / 255.0, b.astype(np.float64), -1)
        np.testing.assert_allclose(f1, reference[0], atol=1e-3)
        assert f2.min() == 0 and f2.max() == 255


def test_motion_api_with_frames_of_different_types_finds_the_motion(pair):
    a, b = pair
    for other in (b.astype(np.uint16) * 257, b / 255.0):
        with said_nothing():
            res = swcuts.segment_motion(a, other, seed=0, rounds=2)
        assert res.occluded.mean() < 0.5 and np.isfinite(res.flow).any()  # was: 100 % occluded


def test_12bit_frame_beside_8bit_is_scaled_by_its_depth_and_said_once(pair):
    a, b = pair
    with pytest.warns(UserWarning) as record:
        _, f2 = _as_frames(a, b.astype(np.uint16) * 16, -1)  # values up to 4080
    said = messages(record)
    assert len(said) == 1 and "12-bit" in one_line(said[0]) and "0..4095" in said[0]
    np.testing.assert_allclose(f2, _as_frames(a, b, -1)[1], atol=1.0)


def test_frames_unlike_after_scaling_are_one_warning(pair):
    a, b = pair
    with pytest.warns(UserWarning, match="differ a lot in brightness") as record:
        _as_frames(a, b // 8, -1)  # the same type, but frame 2 near black
    assert len(record) == 1
    one_line(str(record[0].message))
    assert "frame 1: median" in str(record[0].message) and "frame 2: median" in str(record[0].message)


def test_motion_cli_uint8_with_uint16_and_float_frames(pair, tmp_path, capsys):
    a, b = pair
    iio.imwrite(tmp_path / "a.png", a)
    iio.imwrite(tmp_path / "b16.png", b.astype(np.uint16) * 257)
    np.save(tmp_path / "b.npy", b / 255.0)
    assert load_image(tmp_path / "b16.png").dtype == np.uint16
    for second in ("b16.png", "b.npy"):
        out = tmp_path / f"out_{second}"
        code, _, err = run_cli(capsys, ["motion", tmp_path / "a.png", tmp_path / second, "-o", out,
                                        *MOTION])
        assert code == 0 and err == [], err
        summary = json.loads((out / "summary.json").read_text())
        assert summary["occluded_fraction"] < 0.5, summary  # was 1.0, exit 0
        overlay = iio.imread(out / "overlay.png")  # frame 2 as scaled, not 16-bit values clipped white
        assert overlay.mean() < 250


def test_motion_cli_unlike_frames_warn_in_one_line(pair, tmp_path, capsys):
    a, b = pair
    iio.imwrite(tmp_path / "a.png", a)
    iio.imwrite(tmp_path / "dark.png", b // 8)
    code, _, err = run_cli(capsys, ["motion", tmp_path / "a.png", tmp_path / "dark.png", "-o",
                                    tmp_path / "out", *MOTION])
    assert code == 0
    assert len(err) == 1 and err[0].startswith("swcuts: warning: the frames differ a lot"), err


def test_motion_cli_12bit_frame_is_said_once(pair, tmp_path, capsys):
    a, b = pair
    iio.imwrite(tmp_path / "a.png", a)
    iio.imwrite(tmp_path / "b12.png", b.astype(np.uint16) * 16)
    code, _, err = run_cli(capsys, ["motion", tmp_path / "a.png", tmp_path / "b12.png", "-o",
                                    tmp_path / "out", *MOTION])
    assert code == 0
    assert len(err) == 1 and "12-bit" in err[0] and err[0].startswith("swcuts: warning:"), err


def test_motion_cli_frame_of_non_pixel_values_is_one_line(pair, tmp_path, capsys):
    iio.imwrite(tmp_path / "a.png", pair[0])
    np.save(tmp_path / "c.npy", pair[1].astype(np.complex128))  # was a traceback
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, ["motion", tmp_path / "a.png", tmp_path / "c.npy", "-o", out, *MOTION])
    assert code == 2 and stdout == "" and not out.exists()
    assert len(err) == 1 and err[0].startswith("swcuts: error: '") and "complex128" in err[0], err


# --------------------------------------- 2. 10/12/14-bit samples in 16-bit images
@pytest.mark.parametrize("bits", [8, 10, 12, 14])
def test_sample_depth_of_a_16bit_image(bits):
    top = 2**bits - 1
    img = np.linspace(0, top - 3, 24 * 32).reshape(24, 32).astype(np.uint16)
    with pytest.warns(UserWarning) as record:
        _, display = prepare_image(img)
    said = messages(record)
    assert len(said) == 1 and f"{bits}-bit" in one_line(said[0]) and f"0..{top}" in said[0]
    np.testing.assert_allclose(display, img / top)


def test_full_16bit_image_keeps_its_range():
    img = np.linspace(0, 65535, 24 * 32).reshape(24, 32).astype(np.uint16)
    with said_nothing():
        _, display = prepare_image(img)
    np.testing.assert_allclose(display, img / 65535)


@pytest.mark.parametrize("expand", [lambda d: d.astype(np.uint16) * 257, lambda d: d.astype(np.uint16) << 8],
                         ids=["x257", "shift8"])
def test_dark_8bit_photo_in_16_bits_is_not_brightened(expand):
    """8-bit data expanded to 16 bits (img_as_uint, PNG's rule, << 8)
    segments as its 8-bit original: a dark photo stays dark."""
    dark = (np.random.default_rng(1).random((24, 32)) * 15).astype(np.uint8)  # values 0..14
    dark[0, 0] = 1  # not all even
    with said_nothing():
        _, display = prepare_image(expand(dark))
    np.testing.assert_allclose(display, dark / 255.0, atol=0.002)


def test_int16_scaling():
    signed = np.array([[-32768, 0], [32767, -32768]], np.int16)  # negatives: the dtype's range, as before
    np.testing.assert_allclose(prepare_image(signed)[1], [[0.0, 32768 / 65535], [1.0, 0.0]])
    with pytest.warns(UserWarning, match="12-bit"):
        np.testing.assert_allclose(prepare_image(np.array([[0, 1000], [4000, 2]], np.int16))[1],
                                   [[0.0, 1000 / 4095], [4000 / 4095, 2 / 4095]])
    high = np.array([[0, 1000], [30000, 2]], np.int16)
    np.testing.assert_allclose(prepare_image(high)[1], high / 32767)


def test_12bit_array_segments_as_its_data(monkeypatch):
    img = halves_12bit()
    with pytest.warns(UserWarning, match="12-bit") as record:
        seg = swcuts.segment(img, seed=0, steps=200, n_atoms=20)
    assert len(record) == 1
    assert seg.n_labels >= 2 and seg.labels[0, 0] != seg.labels[0, -1]  # was: one segment
    np.testing.assert_array_equal(seg.labels, swcuts.segment(img / 4095.0, seed=0, steps=200, n_atoms=20).labels)


def test_12bit_scale_is_said_once_per_call_and_run(tmp_path, capsys):
    img = halves_12bit()
    with pytest.warns(swcuts.image.prepare.ImageScaleWarning) as record:
        seg = swcuts.segment(img, seed=0, steps=60, n_atoms=20, posterior_samples=8)
    assert len(record) == 1 and seg.samples is not None  # sample_posterior prepares it again
    iio.imwrite(tmp_path / "a.png", img)
    code, _, err = run_cli(capsys, ["compare", tmp_path / "a.png", "-o", tmp_path / "out", "--samplers",
                                    "swc,gibbs", "--time-budget", "0.05", "--n-atoms", "20"])
    # One line, not one per sampler (a 0.05 s whole-run budget also warns that it was exceeded).
    assert code == 0 and len([line for line in err if "12-bit" in line]) == 1, err


def test_12bit_png_on_the_cli(tmp_path, capsys):
    iio.imwrite(tmp_path / "a.png", halves_12bit())
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, ["segment", tmp_path / "a.png", "-o", out, *RUN, "--seed", "0"])
    assert code == 0
    assert len(err) == 1 and err[0].startswith("swcuts: warning: image is uint16") and "12-bit" in err[0], err
    labels = np.load(out / "labels.npy")
    assert labels.max() >= 1 and labels[0, 0] != labels[0, -1]


# ---------------------------------------------------- 3. TIFF pages and channels
def grey_alpha(shape=(24, 32)):
    img = np.zeros(shape + (2,), np.uint8)
    img[:, shape[1] // 2:, 0] = 200
    img[..., 1] = 255
    return img


def test_tiff_grey_alpha_in_pages_is_one_image(tmp_path):
    img = grey_alpha()
    tifffile.imwrite(tmp_path / "ga.tif", img)  # 24 pages of 32x2
    with pytest.warns(UserWarning, match="2 channels") as record:
        read = load_image(tmp_path / "ga.tif")
    assert len(record) == 1 and "pages or frames" not in str(record[0].message)
    np.testing.assert_array_equal(read, img)
    seg = swcuts.segment(read, seed=0, steps=60, n_atoms=20)
    assert seg.labels.shape == (24, 32) and seg.labels[0, 0] != seg.labels[0, -1]


def test_tiff_marked_grey_alpha_is_read_silently(tmp_path):
    img = grey_alpha()
    tifffile.imwrite(tmp_path / "la.tif", img, photometric="minisblack", planarconfig="contig",
                     extrasamples=["unassalpha"])
    with said_nothing():
        np.testing.assert_array_equal(load_image(tmp_path / "la.tif"), img)


def test_tiff_grey_alpha_on_the_cli(tmp_path, capsys):
    tifffile.imwrite(tmp_path / "ga.tif", grey_alpha())
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, ["segment", tmp_path / "ga.tif", "-o", out, *RUN])
    assert code == 0
    assert len(err) == 1 and "2 channels" in err[0] and err[0].startswith("swcuts: warning:"), err
    assert np.load(out / "labels.npy").shape == (24, 32)  # was (32, 2): one strip


@pytest.mark.parametrize("channels, dtype", [(5, np.float32), (7, np.uint8)])
def test_tiff_with_many_channels_is_refused(tmp_path, capsys, channels, dtype):
    path = tmp_path / "many.tif"
    tifffile.imwrite(path, np.zeros((24, 32, channels), dtype))
    read = load_image(path)
    assert read.shape == (24, 32, channels)  # as scikit-image reads it
    with pytest.raises(InputError, match=f"{channels} channels") as info:
        swcuts.segment(read, seed=0, steps=20)
    one_line(str(info.value))
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, ["segment", path, "-o", out, *RUN])
    assert code == 2 and stdout == "" and not out.exists()
    assert len(err) == 1 and err[0].startswith("swcuts: error:") and f"{channels} channels" in err[0], err


def test_tiff_stack_gives_its_first_page_with_a_warning(tmp_path, capsys):
    stack = np.zeros((5, 24, 32), np.uint8)
    stack[0, :, 16:] = 200
    stack[1:] = 90
    tifffile.imwrite(tmp_path / "stack.tif", stack)
    with pytest.warns(UserWarning, match="5 pages") as record:
        read = load_image(tmp_path / "stack.tif")
    assert len(record) == 1
    np.testing.assert_array_equal(read, stack[0])
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, ["segment", tmp_path / "stack.tif", "-o", out, *RUN])
    assert code == 0 and len(err) == 1 and "5 pages" in err[0] and err[0].startswith("swcuts: warning:"), err
    labels = np.load(out / "labels.npy")
    assert labels.shape == (24, 32) and labels[0, 0] != labels[0, -1]


def test_tiff_stack_of_grey_alpha_images_gives_the_first(tmp_path):
    stack = np.stack([grey_alpha(), 255 - grey_alpha()])
    tifffile.imwrite(tmp_path / "stack2.tif", stack)  # 48 pages of 32x2
    with pytest.warns(UserWarning) as record:
        read = load_image(tmp_path / "stack2.tif")
    said = messages(record)
    assert any("2 pages" in m for m in said) and any("2 channels" in m for m in said), said
    np.testing.assert_array_equal(read, stack[0])


# ------------------------------------------------- 4. a file name for an array
ARRAY = np.zeros((24, 32))
LABELS = np.zeros((24, 32), int)
PATH_CASES = {
    "segment": (lambda p: swcuts.segment(p), "segment()", "the image"),
    "segment_pathlib": (lambda p: swcuts.segment(Path(p)), "segment()", "the image"),
    "segment_motion": (lambda p: swcuts.segment_motion(p, "b.png"), "segment_motion()", "frame1"),
    "segment_motion_frame2": (lambda p: swcuts.segment_motion(ARRAY, p), "segment_motion()", "frame2"),
    "sample_posterior": (lambda p: swcuts.sample_posterior(p), "sample_posterior()", "the image"),
    "energy": (lambda p: swcuts.energy(p, LABELS), "energy()", "the image"),
    "energy_labels": (lambda p: swcuts.energy(ARRAY, p), "energy()", "the labels"),
    "energy_terms": (lambda p: swcuts.energy_terms(p, LABELS), "energy_terms()", "the image"),
    "run_peer": (lambda p: swcuts.evaluation.peers.run_peer("felzenszwalb", p), "run_peer()", "the image"),
    "prepare_image": (lambda p: prepare_image(p), "prepare_image()", "the image"),
}


@pytest.mark.parametrize("call, name, what", PATH_CASES.values(), ids=PATH_CASES.keys())
def test_a_path_for_an_array_names_the_function_and_load_image(call, name, what):
    with pytest.raises(TypeError) as info:
        call("a.png")
    msg = one_line(str(info.value))
    assert msg.startswith(f"{name} takes {what} as an array, got the path 'a.png'"), msg
    assert "swcuts.load_image('a.png')" in msg and "skimage.io.imread" in msg


def test_bytes_for_an_array_is_one_line():
    with pytest.raises(TypeError, match=r"segment\(\) takes the image as an array, got bytes"):
        swcuts.segment(b"\x89PNG\r\n\x1a\n" + bytes(300))


def test_load_image_is_public_and_reads_what_segment_takes(tmp_path):
    img = (np.arange(24 * 32).reshape(24, 32) % 256).astype(np.uint8)
    iio.imwrite(tmp_path / "a.png", img)
    assert "load_image" in swcuts.__all__
    np.testing.assert_array_equal(swcuts.load_image(tmp_path / "a.png"), img)


def test_examples_of_image_scale():
    import doctest

    import swcuts.image.prepare

    result = doctest.testmod(swcuts.image.prepare, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
