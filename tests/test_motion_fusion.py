"""Per-pixel fusion of candidate flows (swcuts.motion.fusion, issue 36 round
7): on pairs whose true flow is known, the fusion takes the right candidate
at each pixel; negative controls show each ingredient (the region-restricted
window, the judged pixels, the margin) changes the answer."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from swcuts.image.warp import warp_frame1
from swcuts.motion import flow_refine as fr
from swcuts.motion import fusion as fu


def _two_motion_pair(seed=0, h=40, w=60, left=(1.0, 0.0), right=(-1.0, 0.5)):
    """A textured frame 1 and frame 2 = frame 1 warped by a flow that is
    ``left`` on the left half and ``right`` on the right half."""
    rng = np.random.default_rng(seed)
    g = ndi.gaussian_filter(rng.random((h, w)), 1.5)
    f1 = (255 * (g - g.min()) / (g.max() - g.min())).astype(np.float32)[..., None]
    truth = np.zeros((h, w, 2), np.float32)
    truth[:, : w // 2] = left
    truth[:, w // 2:] = right
    f2 = warp_frame1(f1, truth)
    return f1, f2, truth


def _costs(f1, f2, cand, sigma=2.0, nil_cost=6.0):
    valid = np.ones(f1.shape[:2], bool)
    return np.stack([fr._pixel_cost(f1, f2, c, valid, sigma, nil_cost)[0] for c in cand])


def _interior(w, h, margin=6):
    m = np.zeros((h, w), bool)
    m[margin:-margin, margin:w // 2 - margin] = True
    m[margin:-margin, w // 2 + margin:-margin] = True
    return m


@pytest.mark.parametrize("seed", [0, 1])
def test_fusion_takes_the_true_candidate_per_pixel(seed):
    """One region holding two motions, the region's choice the left one:
    the fusion gives the right half the right motion (EPE ≈ 0 away from the
    seam); with an infinite margin (negative control) it keeps the region's
    choice, 1.1 px wrong on the right half."""
    f1, f2, truth = _two_motion_pair(seed)
    h, w = truth.shape[:2]
    cand = [np.broadcast_to(np.float32(v), truth.shape).copy() for v in ((1.0, 0.0), (-1.0, 0.5))]
    regions = np.zeros((h, w), np.int64)
    judged = np.ones((h, w), bool)
    prior = np.zeros((h, w), np.int64)
    costs = _costs(f1, f2, cand)
    inner = _interior(w, h)

    def epe(flow):
        return float(np.hypot(*(flow - truth).transpose(2, 0, 1))[inner].mean())

    flow, choice = fu.fuse_flows(costs, cand, regions, judged, prior, beta=4.0)
    assert epe(flow) < 0.05
    assert (choice[inner][:, None] == 0).mean() > 0  # the left half keeps the prior
    control, _ = fu.fuse_flows(costs, cand, regions, judged, prior, beta=4.0, margin=1e9)
    assert epe(control) > 0.4


def test_window_stays_inside_its_region():
    """Costs favour candidate 1 strongly in region 1 and not at all in
    region 0: region 0's pixels next to the border keep the prior; with one
    region for all (negative control) the evidence leaks across."""
    h, w = 5, 10
    costs = np.zeros((2, h, w))
    costs[0, :, 5:] = 6.0
    regions = np.zeros((h, w), np.int64)
    regions[:, 5:] = 1
    cand = [np.zeros((h, w, 2)), np.ones((h, w, 2))]
    judged = np.ones((h, w), bool)
    prior = np.zeros((h, w), np.int64)
    _, choice = fu.fuse_flows(costs, cand, regions, judged, prior, beta=0.0, margin=1.0)
    assert (choice[:, 5:] == 1).all()
    assert (choice[:, :5] == 0).all()
    _, leak = fu.fuse_flows(costs, cand, np.zeros_like(regions), judged, prior, beta=0.0, margin=1.0)
    assert (leak[:, 4] == 1).all()


def test_only_judged_pixels_count():
    """Evidence on unjudged pixels only leaves the prior alone; judged
    (negative control), the same costs switch it."""
    h, w = 6, 6
    costs = np.zeros((2, h, w))
    costs[0, :, :3] = 6.0
    judged = np.ones((h, w), bool)
    judged[:, :3] = False
    args = (costs, [np.zeros((h, w, 2)), np.ones((h, w, 2))], np.zeros((h, w), np.int64))
    prior = np.zeros((h, w), np.int64)
    _, choice = fu.fuse_flows(*args, judged, prior, beta=0.0)
    assert (choice == 0).all()
    _, control = fu.fuse_flows(*args, np.ones((h, w), bool), prior, beta=0.0)
    assert (control[:, :3] == 1).all()


@pytest.mark.parametrize("gain, switches", [(0.5, False), (2.0, True)])
def test_margin(gain, switches):
    """A uniform gain per pixel below the margin (1 nat) keeps the prior,
    one above it switches."""
    h, w = 4, 4
    costs = np.zeros((2, h, w))
    costs[0] = gain
    one = np.zeros((h, w), np.int64)
    _, choice = fu.fuse_flows(costs, [np.zeros((h, w, 2)), np.ones((h, w, 2))], one, one == 0, one,
                              beta=0.0, margin=1.0)
    assert (choice == 1).all() == switches and ((choice == 0).all() != switches)


def test_markov_term_prefers_the_smooth_candidate():
    """Equal data costs: the Markov term takes the smooth candidate over a
    noisy one; without it (β = 0, negative control) the prior stays."""
    h, w = 8, 8
    rng = np.random.default_rng(0)
    noisy = rng.normal(0, 1, (h, w, 2))
    one = np.zeros((h, w), np.int64)
    costs = np.zeros((2, h, w))
    cand = [noisy, np.zeros((h, w, 2))]
    _, choice = fu.fuse_flows(costs, cand, one, one == 0, one, beta=4.0)
    assert (choice == 1).mean() > 0.9
    _, control = fu.fuse_flows(costs, cand, one, one == 0, one, beta=0.0)
    assert (control == 0).all()


def test_refine_flow_fuses_two_motions_in_one_region(monkeypatch):
    """refine_flow on a pair whose one intensity region holds two motions:
    with the fusion the flow is right on both halves; without it (negative
    control) one candidate serves the whole region and half of it is
    wrong."""
    f1, f2, truth = _two_motion_pair(0, h=48, w=64)
    h, w = truth.shape[:2]
    flow = np.zeros((h, w, 2))
    flow[:] = (1.0, 0.0)  # the discrete flow: the left motion everywhere
    regions = np.zeros((h, w), np.int64)
    inner = _interior(w, h, 8)

    def epe():
        out = fr.refine_flow(f1, f2, flow, regions, dense=False)
        return float(np.hypot(*(out - truth).transpose(2, 0, 1))[inner].mean())

    monkeypatch.setattr(fr, "FUSION", True)
    fused = epe()
    monkeypatch.setattr(fr, "FUSION", False)
    single = epe()
    assert single > 0.3
    assert fused < 0.5 * single


def test_bottom_up_variational_adds_the_refined_dis_candidate(monkeypatch):
    """With BOTTOM_UP_VARIATIONAL the variational refinement runs on DIS's
    flow (one more candidate); without it (negative control) it does not."""
    f1, f2, _ = _two_motion_pair(0, h=48, w=64)
    h, w = f1.shape[:2]
    dis = fr._dis(f1, f2)
    seen = []
    real = fr._variational_pyramid

    def spy(frame1, frame2, flow, scales, vertical=True):
        seen.append(np.array_equal(np.asarray(flow, np.float32), dis))
        return real(frame1, frame2, flow, scales, vertical)

    monkeypatch.setattr(fr, "_variational_pyramid", spy)
    for on in (True, False):
        seen.clear()
        monkeypatch.setattr(fr, "BOTTOM_UP_VARIATIONAL", on)
        fr.refine_flow(f1, f2, np.zeros((h, w, 2)), np.zeros((h, w), np.int64), dense=False)
        assert any(seen) == on


def test_nil_pixels_are_judged(monkeypatch):
    """The discrete flow is nil on the right half (a fast motion it could
    not match) and the left motion elsewhere: with FUSION_NIL the nil half
    is judged and takes the candidate that fits it (DIS's); without it
    (negative control) it keeps the nearest-pixel fill of the wrong motion."""
    f1, f2, truth = _two_motion_pair(0, h=48, w=64)
    h, w = truth.shape[:2]
    flow = np.zeros((h, w, 2))
    flow[:] = (1.0, 0.0)
    flow[:, w // 2:] = np.nan
    regions = np.zeros((h, w), np.int64)
    right = np.zeros((h, w), bool)
    right[8:-8, w // 2 + 8:-8] = True
    monkeypatch.setattr(fr, "FUSION", True)

    def epe():
        _, filled = fr.refine_flow(f1, f2, flow, regions, dense=False, return_filled=True)
        return float(np.hypot(*(filled - truth).transpose(2, 0, 1))[right].mean())

    monkeypatch.setattr(fr, "FUSION_NIL", True)
    judged = epe()
    monkeypatch.setattr(fr, "FUSION_NIL", False)
    control = epe()
    assert control > 0.5
    assert judged < 0.3 * control


def test_informative_gate_ignores_pixels_nothing_fits():
    """Every candidate near the nil cost: the Markov term alone would take
    the smooth candidate over the region's (noisy) one; with the gate those
    pixels are not judged and the prior stays (without it, the negative
    control, it switches)."""
    h, w = 8, 8
    noisy = np.random.default_rng(1).normal(0, 1, (h, w, 2))
    one = np.zeros((h, w), np.int64)
    costs = np.full((2, h, w), 5.9)
    cand = [noisy, np.zeros((h, w, 2))]
    _, gated = fu.fuse_flows(costs, cand, one, one == 0, one, beta=4.0, informative=3.0)
    assert (gated == 0).all()
    _, control = fu.fuse_flows(costs, cand, one, one == 0, one, beta=4.0)
    assert (control == 1).mean() > 0.9
