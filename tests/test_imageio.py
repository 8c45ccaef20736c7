"""Tests for swcuts.io.memory: loading, validation, memory check, atomic writes."""

from __future__ import annotations


import imageio.v3 as iio
import numpy as np
import pytest

from swcuts.io.errors import InputError
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
