"""Tests of swcuts.image.boundary_detector: the learned boundary probability."""

import numpy as np
import pytest

from swcuts.image import boundary_detector as bd
from swcuts.io.errors import InputError


def _step(channels, shape=(48, 64), seed=0):
    """A vertical step between columns 31 and 32, light noise."""
    rng = np.random.default_rng(seed)
    img = np.full(shape + (channels,), 0.3)
    img[:, shape[1] // 2:, 0] = 0.75
    if channels == 3:
        img[..., 1:] = 0.5
        img[:, shape[1] // 2:, 1] = 0.6
    return np.clip(img + 0.005 * rng.standard_normal(img.shape), 0, 1)


@pytest.mark.parametrize("channels", [1, 3])
def test_step_edge_high_flat_low(channels):
    img = _step(channels)
    p = bd.boundary_probability(img)
    assert p.shape == img.shape[:2] and p.dtype == np.float64
    assert (p > 0).all() and (p < 1).all()
    edge = p[8:-8, 31:33].min()
    flat = max(p[8:-8, 4:20].max(), p[8:-8, 44:60].max())
    # Calibrated on people's boundaries: a clean step is not always drawn, flat areas rarely are.
    assert edge > 0.15 and edge > 20 * flat, (edge, flat)


def test_fine_texture_is_not_a_boundary():
    """Inside fine stripes (pixel contrast everywhere) the probability stays
    below that of the edge between the stripes and a flat area."""
    stripes = np.tile([0.25, 0.75], (64, 32))          # 64 x 64
    img = np.concatenate([stripes, np.full((64, 64), 0.5)], axis=1)[..., None]
    p = bd.boundary_probability(img)
    inside = p[16:-16, 12:52].mean()
    edge = p[16:-16, 62:66].max(axis=1).mean()
    assert edge > 2 * inside, (edge, inside)


def test_deterministic_and_grey_from_2d():
    img = _step(1)
    a = bd.boundary_probability(img)
    b = bd.boundary_probability(img[..., 0])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, bd.boundary_probability(img.copy()))


def test_odd_and_tiny_shapes():
    rng = np.random.default_rng(1)
    for shape in [(2, 2), (5, 3), (33, 17)]:
        p = bd.boundary_probability(rng.random(shape + (3,)))
        assert p.shape == shape and np.isfinite(p).all()


def test_bad_features_shape():
    with pytest.raises(InputError):
        bd.boundary_probability(np.zeros((10, 10, 2)))


def test_missing_weights_file(tmp_path):
    path = tmp_path / "nothere.npz"
    with pytest.raises(InputError) as err:
        bd.load_detector(path)
    msg = str(err.value)
    assert "\n" not in msg and "nothere.npz" in msg and bd.REBUILD in msg
    with pytest.raises(InputError):
        bd.boundary_probability(_step(1), detector=path)


@pytest.mark.parametrize("content", [b"not a zip at all", b"PK\x03\x04 truncated"])
def test_corrupt_weights_file(tmp_path, content):
    path = tmp_path / "broken.npz"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        bd.load_detector(path)
    msg = str(err.value)
    assert "\n" not in msg and "broken.npz" in msg and bd.REBUILD in msg


def test_incomplete_or_other_version(tmp_path):
    det = bd.load_detector()
    path = tmp_path / "partial.npz"
    np.savez(path, format_version=bd.FORMAT_VERSION, colour_w1=det["colour"]["w1"])
    with pytest.raises(InputError, match="partial.npz"):
        bd.load_detector(path)
    old = tmp_path / "old.npz"
    np.savez(old, format_version=bd.FORMAT_VERSION + 7)
    with pytest.raises(InputError, match="format version"):
        bd.load_detector(old)


def test_save_and_load_round_trip(tmp_path):
    det = bd.load_detector()
    path = tmp_path / "copy.npz"
    bd.save_detector(path, {m: det[m] for m in ("colour", "grey")}, det["settings"], "a copy")
    again = bd.load_detector(path)
    assert again["training"] == "a copy"
    img = _step(3)
    np.testing.assert_allclose(bd.boundary_probability(img, detector=again),
                               bd.boundary_probability(img), rtol=1e-5, atol=1e-7)


def test_nonmax_suppress_keeps_the_ridge():
    img = _step(1)
    p = bd.boundary_probability(img)
    thin = bd.nonmax_suppress(p)
    rows = thin[8:-8]
    peak = p[8:-8, 28:36].max()
    strong = rows[:, 28:36] > 0.8 * peak
    assert (strong.sum(axis=1) <= 2).all() and strong.any(axis=1).all()
    assert (thin <= p).all()


def _disc_map(shape=(100, 120), radius=30):
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]]
    r = np.hypot(yy - shape[0] / 2, xx - shape[1] / 2)
    return np.where(np.abs(r - radius) < 1.5, 0.9, 0.01), r


def test_spectral_features_mark_the_closed_contour():
    """The spectral cue is high on a closed contour of the map (through the
    ARPACK path: 750 grid nodes) and low well inside and outside it, and
    the same on every call (fixed start vector)."""
    p, r = _disc_map()
    s = bd.spectral_features(p, n_vectors=6, factor=4)
    assert s.shape == p.shape + (2,) and s.dtype == np.float32 and np.isfinite(s).all()
    on = s[np.abs(r - 30) < 2, 0].mean()
    inside, outside = s[r < 15, 0].mean(), s[(r > 45) & (r < 55), 0].mean()
    assert on > 3 * max(inside, outside), (on, inside, outside)
    np.testing.assert_array_equal(s, bd.spectral_features(p, n_vectors=6, factor=4))


def test_spectral_features_without_a_contour_are_flat_and_tiny_maps_are_zero():
    flat = bd.spectral_features(np.full((60, 80), 0.02), n_vectors=4, factor=2)
    edge = bd.spectral_features(_disc_map((60, 80), 20)[0], n_vectors=4, factor=2)
    assert flat[..., 0].max() < 0.5 * edge[..., 0].max()
    tiny = bd.spectral_features(np.full((3, 2), 0.5), n_vectors=8, factor=4)
    assert tiny.shape == (3, 2, 2) and not tiny.any()


@pytest.mark.parametrize("channels", [1, 3])
def test_scales_average_the_maps_and_keep_the_contract(channels):
    """``scales=(1, 2)`` is the mean of the map as given and of the map of the
    features at twice the size, resized back; the step stays a boundary
    and flat areas do not become one; the default is one scale."""
    img = _step(channels)
    one = bd.boundary_probability(img)
    np.testing.assert_array_equal(one, bd.boundary_probability(img, scales=(1,)))
    two = bd.boundary_probability(img, scales=(2,))
    both = bd.boundary_probability(img, scales=(1, 2))
    np.testing.assert_allclose(both, (one + two) / 2, atol=1e-6)
    assert not np.allclose(one, two)
    edge = both[8:-8, 31:33].min()
    flat = max(both[8:-8, 4:20].max(), both[8:-8, 44:60].max())
    assert edge > 0.15 and edge > 20 * flat, (edge, flat)
    for shape in [(2, 2), (5, 3)]:
        assert bd.boundary_probability(np.full(shape + (channels,), 0.5), scales=(1, 2)).shape == shape


@pytest.mark.parametrize("scales", [(), (0,), (1, -2), (1, float("nan")), ("2",), (True,), "2", -1.0])
def test_bad_scales(scales):
    with pytest.raises(InputError, match="scales"):
        bd.boundary_probability(_step(1), scales=scales)
