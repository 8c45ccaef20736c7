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
