"""The sub-label flow refinement (swcuts.motion.flow_refine, issue 17): what it
keeps, what it may not do, and that it reaches sub-pixel accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from swcuts.motion.flow_refine import _pick, _pixel_cost, _pair_cost, refine_flow
from swcuts.evaluation.motion_metrics import endpoint_error
from swcuts.evaluation.synthetic.motion import layered_pair

SIGMA, NIL, BETA = 2.0, 6.0, 4.0


def _frames(pair):
    f1, f2 = pair.frame1 * 255.0, pair.frame2 * 255.0
    if f1.ndim == 2:
        f1, f2 = f1[..., None], f2[..., None]
    return f1.astype(np.float32), f2.astype(np.float32)


def _energy(f1, f2, flow, regions, valid):
    """Per region: capped data term + β × Markov term (the rule of _pick)."""
    n = int(regions.max()) + 1
    e = _pixel_cost(f1, f2, flow, valid, SIGMA, NIL)[0]
    return np.bincount(regions[valid], e[valid], minlength=n) + BETA * _pair_cost(flow, regions, valid, n)


def test_large_region_reaches_subpixel_translation():
    # One 96x128 region shifted by (0.3, -0.2), started from zero flow: the
    # damping must not freeze the translation of a large region (a ridge
    # relative to the trace, dominated by the affine terms, did: 0.35 px).
    rng = np.random.default_rng(4)
    from scipy import ndimage as ndi
    big = ndi.gaussian_filter(rng.random((110, 142)), 1.5)
    big = (big - big.mean()) / big.std() * 30 + 128
    ys, xs = np.mgrid[0:96, 0:128].astype(float)
    f1 = big[7:103, 7:135]
    f2 = ndi.map_coordinates(big, [ys + 7 + 0.2, xs + 7 - 0.3], order=3)
    truth = np.zeros((96, 128, 2))
    truth[..., 0], truth[..., 1] = 0.3, -0.2
    out = refine_flow(f1[..., None].astype(np.float32), f2[..., None].astype(np.float32),
                      np.zeros((96, 128, 2)), np.zeros((96, 128), int), dense=False)
    inner = np.s_[4:-4, 4:-4]
    assert endpoint_error(out[inner], truth[inner]) < 0.03


@pytest.mark.parametrize("seed", [0, 3])
def test_label_noise_is_not_kept_and_energy_never_rises(seed):
    # The truth rounded to the 1/2-px grid plus label noise of one step on
    # 30% of the pixels: the refinement fits the regions' motion (EPE well
    # below the discrete flow's), no region's energy rises, nil stays NaN
    # and the filled flow has a value everywhere.
    pair = layered_pair(seed=seed, colour=seed % 2 == 1)
    f1, f2 = _frames(pair)
    rng = np.random.default_rng(seed)
    disc = np.round(pair.flow * 2) / 2
    noisy = rng.random(disc.shape[:2]) < 0.3
    disc[noisy] += rng.choice([-0.5, 0.5], size=(int(noisy.sum()), 2))
    disc[pair.occluded] = np.nan
    regions = pair.objects
    valid = ~pair.occluded
    out, filled = refine_flow(f1, f2, disc, regions, sigma=SIGMA, nil_cost=NIL, beta=BETA,
                              return_filled=True)
    assert np.isnan(out[pair.occluded]).all() and np.isfinite(out[valid]).all()
    assert np.isfinite(filled).all()
    np.testing.assert_array_equal(filled[valid], out[valid])
    e_disc = endpoint_error(np.where(valid[..., None], disc, pair.flow), pair.flow, valid)
    e_out = endpoint_error(out, pair.flow, valid)
    assert e_out < 0.1 < e_disc
    start = np.where(valid[..., None], disc, 0.0).astype(np.float32)
    before = _energy(f1, f2, start, regions, valid)
    after = _energy(f1, f2, np.where(valid[..., None], out, 0.0).astype(np.float32), regions, valid)
    assert np.all(after <= before + 1e-6)


def test_pick_keeps_the_lower_energy_and_cannot_win_off_frame():
    # Candidate 0 is the truth; candidate 1 pushes every pixel's source far
    # out of frame 1 and is perfectly smooth. A rule that left off-frame
    # pixels out of the comparison would take it; ours must not.
    pair = layered_pair(seed=2)
    f1, f2 = _frames(pair)
    valid = ~pair.occluded
    truth = pair.flow.astype(np.float32)
    away = np.full_like(truth, 500.0)
    regions = pair.objects
    out = _pick(f1, f2, [away, truth], regions, valid, SIGMA, NIL, BETA)
    np.testing.assert_array_equal(out, truth)
    # Negative control: the rule that leaves off-frame pixels out of the
    # comparison does prefer the far candidate on every region.
    n = int(regions.max()) + 1

    def energy_inside_only(flow):
        e, _, inside, _ = _pixel_cost(f1, f2, flow, valid, SIGMA, NIL)
        keep = valid & inside
        return np.bincount(regions[keep], e[keep], minlength=n) + BETA * _pair_cost(flow, regions, valid, n)

    assert np.all(energy_inside_only(away) < energy_inside_only(truth))


def _out_of_view_pair():
    """A rectified pair (disparity 8 everywhere) whose left image's first 8
    columns are out of view in the right one, and a discrete flow that
    gives them a wrong match that fits (a copy of them planted in the right
    image, 30 px away), as a sampler can when nothing is left to match."""
    rng = np.random.default_rng(5)
    from scipy import ndimage as ndi
    h, w, d = 48, 96, 8
    big = ndi.gaussian_filter(rng.random((h, w + 40)), 1.2)
    big = (big - big.mean()) / big.std() * 40 + 128
    left = big[:, 10:10 + w]
    right = big[:, 10 + d:10 + d + w].copy()   # right(x - 8) = left(x)
    right[:, 30:30 + d] = left[:, :d]           # left's band matches here, at u = -30
    flow = np.zeros((h, w, 2))
    flow[..., 0] = d
    flow[:, :d, 0] = -30.0
    flow[:, 30 + d:30 + 2 * d] = np.nan          # hidden by the planted copy
    regions = np.zeros((h, w), int)
    regions[:, :d] = 1
    frames = [a[..., None].astype(np.float32) for a in (right, left)]
    return frames, flow, regions, d


@pytest.mark.parametrize("on", [True, False])
def test_out_of_view_band_takes_its_context_flow(monkeypatch, on):
    # The band's discrete flow fits the data but fails the forward-backward
    # check, and the flow of its context (u = 8) would take it out of frame
    # 1: it is not seen there, so it is filled from its context. Negative
    # control (OUT_OF_VIEW off): the band keeps its wrong match.
    import swcuts.motion.flow_refine as fr

    monkeypatch.setattr(fr, "OUT_OF_VIEW", on)
    (f1, f2), flow, regions, d = _out_of_view_pair()
    out, filled = refine_flow(f1, f2, flow, regions, sigma=SIGMA, nil_cost=NIL, beta=BETA,
                              return_filled=True, vertical=False)
    band = np.abs(filled[:, :d, 0] - d)
    if on:
        assert np.median(band) < 1.0
        np.testing.assert_array_equal(out[:, :d], filled[:, :d])   # not nil: a flow
    else:
        assert np.median(band) > 20.0
    inner = np.abs(filled[4:-4, 60:-4, 0] - d)
    assert np.median(inner) < 0.5
