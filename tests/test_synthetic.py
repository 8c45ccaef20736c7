"""Tests of swcuts.evaluation.synthetic.images."""

import numpy as np
import pytest
from skimage.measure import label

from swcuts.evaluation.synthetic.images import SYNTHETIC_NOISE, make_fig7, make_synthetic

SHAPE = (40, 60)


def _check_truth(truth, shape, min_fraction=0.02):
    assert truth.shape == shape
    assert truth.dtype == np.int64
    k = int(truth.max()) + 1
    sizes = np.bincount(truth.ravel(), minlength=k)
    assert truth.min() == 0 and np.all(sizes > 0)
    assert sizes.min() >= min_fraction * truth.size
    assert int(label(truth, background=-1, connectivity=1).max()) == k
    return k


def _boundary_contrasts(image, truth):
    """Difference of the mean intensities on the two sides of each boundary
    between two touching regions (4-adjacent pixel pairs)."""
    img = image.reshape(truth.size, -1)
    h, w = truth.shape
    idx = np.arange(truth.size).reshape(h, w)
    i = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    j = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    t = truth.ravel()
    keep = t[i] != t[j]
    i, j = i[keep], j[keep]
    swap = t[i] > t[j]
    i, j = np.where(swap, j, i), np.where(swap, i, j)
    out = {}
    for a, b in {(int(x), int(y)) for x, y in zip(t[i], t[j])}:
        sel = (t[i] == a) & (t[j] == b)
        out[(a, b)] = float(np.linalg.norm(img[i[sel]].mean(0) - img[j[sel]].mean(0)))
    return out


def _residual_std(image, truth):
    """Pooled std of the residual of a per-region quadratic fit."""
    img = image.reshape(truth.size, -1)
    h, w = truth.shape
    yy, xx = np.mgrid[0:h, 0:w]
    x, y = xx.ravel() / w, yy.ravel() / h
    res = []
    for k in range(int(truth.max()) + 1):
        m = truth.ravel() == k
        a = np.stack([np.ones(m.sum()), x[m], y[m], x[m] ** 2, x[m] * y[m], y[m] ** 2], 1)
        coef, *_ = np.linalg.lstsq(a, img[m], rcond=None)
        res.append(img[m] - a @ coef)
    return float(np.concatenate(res).std())


@pytest.mark.parametrize("colour", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_make_synthetic_outputs(colour, seed):
    image, truth = make_synthetic(SHAPE, colour=colour, seed=seed)
    assert image.dtype == np.float64
    assert image.shape == (SHAPE + (3,) if colour else SHAPE)
    assert image.min() >= 0.0 and image.max() <= 1.0
    k = _check_truth(truth, SHAPE)
    assert 4 <= k <= 6


@pytest.mark.parametrize("colour", [False, True])
def test_touching_regions_differ(colour):
    for seed in range(5):
        image, truth = make_synthetic(SHAPE, colour=colour, noise="low", seed=seed)
        contrasts = _boundary_contrasts(image, truth)
        assert contrasts and min(contrasts.values()) >= 0.12, contrasts


def test_same_seed_same_output():
    a = make_synthetic(SHAPE, colour=True, seed=5)
    b = make_synthetic(SHAPE, colour=True, seed=5)
    c = make_synthetic(SHAPE, colour=True, seed=6)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_noise_levels_increase_residual():
    stds = []
    for noise in SYNTHETIC_NOISE:
        image, truth = make_synthetic(SHAPE, noise=noise, seed=8)
        stds.append(_residual_std(image, truth))
    assert stds[0] < stds[1] < stds[2], stds
    # Same seed: only the noise differs, not the layout.
    t_low = make_synthetic(SHAPE, noise="low", seed=8)[1]
    t_high = make_synthetic(SHAPE, noise="high", seed=8)[1]
    np.testing.assert_array_equal(t_low, t_high)


def test_n_shapes_and_bad_arguments():
    _, truth = make_synthetic((60, 80), n_shapes=2, seed=0)
    assert truth.max() == 2
    with pytest.raises(ValueError):
        make_synthetic(SHAPE, noise="extreme")
    with pytest.raises(ValueError):
        make_synthetic(SHAPE, n_shapes=0)


def test_make_fig7():
    image, truth = make_fig7()
    assert image.shape == (160, 240) and image.dtype == np.float64
    assert image.min() >= 0.0 and image.max() <= 1.0
    assert _check_truth(truth, (160, 240)) == 7
    again, truth2 = make_fig7()
    np.testing.assert_array_equal(image, again)
    np.testing.assert_array_equal(truth, truth2)
    contrasts = _boundary_contrasts(make_fig7(noise="low")[0], truth)
    assert (4, 5) in contrasts  # the two touching rectangles
    assert min(contrasts.values()) >= 0.15, contrasts
    small, small_truth = make_fig7((80, 120), seed=1)
    assert small.shape == (80, 120)
    _check_truth(small_truth, (80, 120))
