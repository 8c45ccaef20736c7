"""Tests of swcuts.evaluation.synthetic.scenes (the second, independent generator)."""


import numpy as np
import pytest
from scipy import ndimage as ndi
from skimage.measure import label

from swcuts.evaluation.synthetic.scenes import (
    FAMILY_MIXES, LAYOUTS, MIN_AREA_FRACTION, MIN_CONTRAST, NOISE_KINDS, NOISE_LEVELS, SPREAD_GAP,
    SPREAD_RATIO, make_scene, make_scene_set)

SHAPE = (64, 88)


def _pairs(lab):
    h, w = lab.shape
    idx = np.arange(h * w).reshape(h, w)
    i = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    j = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    f = lab.ravel()
    keep = f[i] != f[j]
    return i[keep], j[keep]


def _fit_residual(values, yy, xx, quadratic=False):
    cols = [np.ones_like(yy), xx, yy] + ([xx * xx, xx * yy, yy * yy] if quadratic else [])
    a = np.stack(cols, axis=1)
    coef, *_ = np.linalg.lstsq(a, values, rcond=None)
    return float(np.std(values - a @ coef))


def test_same_seed_same_scene_and_noise_on_its_own_stream():
    a, la = make_scene(SHAPE, seed=7)
    b, lb = make_scene(SHAPE, seed=7)
    assert np.array_equal(a, b) and np.array_equal(la, lb)
    c, _ = make_scene(SHAPE, seed=8)
    assert not np.array_equal(a, c)
    _, l1, i1 = make_scene(SHAPE, seed=7, noise="low", return_info=True)
    _, l2, i2 = make_scene(SHAPE, seed=7, noise="high", noise_kind="poisson", return_info=True)
    assert np.array_equal(l1, l2) and np.array_equal(i1["clean"], i2["clean"])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n", [3, 9])
def test_labels_connected_cover_and_count(layout, n):
    _, lab = make_scene(SHAPE, n_regions=n, layout=layout, seed=n)
    assert lab.shape == SHAPE and lab.dtype == np.int64
    k = int(lab.max()) + 1
    sizes = np.bincount(lab.ravel(), minlength=k)
    assert lab.min() == 0 and np.all(sizes > 0)  # labels 0..K-1, every pixel labelled
    assert sizes.min() >= MIN_AREA_FRACTION * lab.size
    assert int(label(lab, background=-1, connectivity=1).max()) == k  # one 4-connected piece each
    assert n - 1 <= k <= n


@pytest.mark.parametrize("layout,family,colour", [("voronoi", "mixed", True), ("blobs", "shading", False),
                                                  ("stripes", "texture", False), ("occlusion", "mixed", False)])
def test_touching_regions_differ(layout, family, colour):
    _, lab, info = make_scene(SHAPE, n_regions=8, layout=layout, family=family, colour=colour, seed=2,
                              return_info=True)
    mean = info["mean_part"].reshape(lab.size, -1)
    tex = (info["clean"] - info["mean_part"]).reshape(lab.size, -1)
    k = int(lab.max()) + 1
    spread = np.array([np.sqrt(tex[lab.ravel() == r].var(axis=0).mean()) for r in range(k)])
    i, j = _pairs(lab)
    f = lab.ravel()
    d = np.linalg.norm(mean[i] - mean[j], axis=1)
    key = np.minimum(f[i], f[j]) * k + np.maximum(f[i], f[j])
    assert np.unique(key).size >= k - 1  # the layout has boundaries to check
    for pair in np.unique(key).tolist():
        a, b = divmod(pair, k)
        lo, hi = sorted((spread[a], spread[b]))
        by_mean = np.percentile(d[key == pair], 10) >= MIN_CONTRAST - 1e-9
        by_texture = hi - lo >= SPREAD_GAP - 1e-9 and hi >= SPREAD_RATIO * max(lo, 0.01) - 1e-9
        assert by_mean or by_texture, (a, b)


@pytest.mark.parametrize("kind", NOISE_KINDS)
def test_values_in_unit_range_and_shapes(kind):
    for level in NOISE_LEVELS:
        rgb, lab = make_scene(SHAPE, n_regions=5, noise=level, noise_kind=kind, seed=1)
        grey, lab2 = make_scene(SHAPE, n_regions=5, noise=level, noise_kind=kind, colour=False, seed=1)
        assert rgb.shape == SHAPE + (3,) and grey.shape == SHAPE and lab.shape == SHAPE
        assert np.array_equal(lab, lab2)  # colour changes the appearance, not the layout
        for im in (rgb, grey):
            assert im.dtype == np.float64 and np.isfinite(im).all()
            assert im.min() >= 0.0 and im.max() <= 1.0


def test_noise_levels_and_kinds_do_what_they_say():
    _, _, info = make_scene(SHAPE, n_regions=5, seed=4, blur=0, return_info=True)
    clean = info["clean"]
    sd = {}
    for level in NOISE_LEVELS:
        im, _ = make_scene(SHAPE, n_regions=5, seed=4, blur=0, noise=level)
        sd[level] = float(np.std(im - clean))
    assert sd["low"] < sd["medium"] < sd["high"]
    assert abs(sd["low"] - 0.015) < 0.004
    sp, _ = make_scene(SHAPE, n_regions=5, seed=4, blur=0, noise="high", noise_kind="salt-pepper")
    impulses = np.all((sp == 0) | (sp == 1), axis=2).mean()
    assert 0.03 < impulses < 0.08  # 5 % of the pixels, all channels
    clean_im, _ = make_scene(SHAPE, n_regions=5, seed=4, blur=0, noise="none")
    assert np.array_equal(clean_im, clean)


def _regions(lab, min_pixels=60):
    """(label, interior mask) of the regions large enough after a 2-px erosion."""
    for r in range(int(lab.max()) + 1):
        m = ndi.binary_erosion(lab == r, iterations=2)
        if m.sum() >= min_pixels:
            yield r, m


def test_linear_regions_are_planes():
    yy, xx = np.mgrid[0:SHAPE[0], 0:SHAPE[1]].astype(float)
    clean, lab = make_scene(SHAPE, n_regions=6, family="linear", noise="none", blur=0, seed=5)
    noisy, _ = make_scene(SHAPE, n_regions=6, family="linear", noise="low", blur=0, seed=5)
    checked = 0
    for _, m in _regions(lab):
        for c in range(3):
            assert _fit_residual(clean[..., c][m], yy[m], xx[m]) < 1e-9
            assert _fit_residual(noisy[..., c][m], yy[m], xx[m]) < 0.02  # sigma 0.015
        assert np.ptp(clean[..., 0][m]) > 0.03  # a ramp, not a constant
        checked += 1
    assert checked >= 3


def test_quadratic_regions_are_curved_surfaces():
    yy, xx = np.mgrid[0:SHAPE[0], 0:SHAPE[1]].astype(float)
    img, lab = make_scene(SHAPE, n_regions=5, family="quadratic", colour=False, noise="none", blur=0, seed=6)
    plane_res = []
    for _, m in _regions(lab):
        assert _fit_residual(img[m], yy[m], xx[m], quadratic=True) < 1e-9
        plane_res.append(_fit_residual(img[m], yy[m], xx[m]))
    assert len(plane_res) >= 3 and np.median(plane_res) > 0.005  # not planes


@pytest.mark.parametrize("family", ["histogram", "smooth-texture"])
def test_texture_regions_have_the_requested_spread(family):
    _, lab, info = make_scene(SHAPE, n_regions=6, family=family, noise="none", blur=0, seed=3,
                              return_info=True)
    img = info["clean"]
    lag1 = []
    for r, reg in enumerate(info["regions"]):
        assert reg["family"] == family and 0.03 <= reg["spread"] <= 0.12
        vals = img[lab == r]
        assert np.sqrt(vals.var(axis=0).mean()) == pytest.approx(reg["spread"], rel=1e-6)
        m = (lab == r)[:, :-1] & (lab == r)[:, 1:]  # horizontal neighbours inside the region
        a, b = img[:, :-1, 0][m], img[:, 1:, 0][m]
        lag1.append(np.corrcoef(a, b)[0, 1])
    if family == "histogram":
        assert np.max(np.abs(lag1)) < 0.3  # iid
    else:
        assert np.min(lag1) > 0.3  # filtered noise is spatially correlated


def test_histogram_is_a_mixture_of_levels():
    _, lab, info = make_scene(SHAPE, n_regions=3, family="histogram", colour=False, noise="none", blur=0,
                              seed=11, return_info=True)
    img = info["clean"][..., 0]
    r = int(np.argmax(np.bincount(lab.ravel())))
    vals = img[lab == r]
    z = (vals - vals.mean()) / vals.std()
    kurt = np.mean(z ** 4)
    hist, _ = np.histogram(vals, bins=40)
    assert kurt != pytest.approx(3.0, abs=0.15) or np.count_nonzero(hist == 0) > 0  # not a plain Gaussian


def test_scene_set_covers_every_option():
    scenes = make_scene_set(12, seed=0, shape=(40, 48), n_regions=4)
    metas = [m for _, _, _, m in scenes]
    assert {(m["layout"], m["family"]) for m in metas} == {(a, b) for a in LAYOUTS for b in FAMILY_MIXES}
    assert sum(m["colour"] for m in metas) == 6  # half grey, half colour
    assert sorted(sum(m["noise_kind"] == k for m in metas) for k in NOISE_KINDS) == [4, 4, 4]
    assert {m["noise"] for m in metas} == set(NOISE_LEVELS)
    assert {m["noise_kind"] for m in metas} == set(NOISE_KINDS)
    for m in LAYOUTS:  # every layout in grey and colour, and at every noise level
        assert {x["colour"] for x in metas if x["layout"] == m} == {True, False}
        assert {x["noise"] for x in metas if x["layout"] == m} == set(NOISE_LEVELS)
    names = [s[0] for s in scenes]
    assert len(set(names)) == 12
    other = make_scene_set(2, seed=1, shape=(40, 48), n_regions=4)
    assert not np.array_equal(other[0][1], scenes[0][1])


def test_bad_arguments_raise():
    for kw in ({"layout": "grid"}, {"family": "fractal"}, {"noise": "extreme"}, {"noise_kind": "speckle"},
               {"n_regions": 1}):
        with pytest.raises(ValueError):
            make_scene(SHAPE, seed=0, **kw)
    with pytest.raises(ValueError):
        make_scene((16, 16), seed=0)
