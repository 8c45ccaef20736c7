"""Motion, round 2: the range chosen from the frames, the clipping check,
and stereo (horizontal labels only): exact enumeration of the level-0 kernel
with a one-value v axis (with its negative control) and the API."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from enumeration import assert_matches, compare
from swcuts.models.motion import MotionPosterior, velocity_grid
from swcuts.motion.segment import (
    AUTO_RANGE_FRACTION, MIN_COARSE_SIDE, MOTION_LIMITS, _clipped, _recentre, auto_range)
from swcuts.samplers.velocity import VelocityGibbs
from test_motion import velocity_visits


def tiny_stereo_posterior(seed=0, h=2, w=2):
    """A 2x2 pair with 3 horizontal velocities + nil (v fixed at 0),
    randomised costs and edge probabilities, a non-zero base flow."""
    rng = np.random.default_rng(seed)
    f1 = rng.random((h, w, 1)) * 255
    f2 = rng.random((h, w, 1)) * 255
    base = np.stack([rng.normal(0, 0.5, (h, w)), np.zeros((h, w))], axis=2)
    post = MotionPosterior(f1, f2, velocity_grid(1.0, 1.0), base=base, grid_v=np.zeros(1),
                           sigma=60.0, alpha=0.3, beta=0.5, delta=0.4, nu=1.0, nil_cost=1.0,
                           tau=0.0)  # translation model (tau > 0: tests/test_motion_level0_affine.py)
    post.D = (rng.random(post.D.shape) * 2).astype(np.float32)
    xs, ys = np.arange(h * w) % w, np.arange(h * w) // w
    post.q_right = np.where(xs < w - 1, rng.uniform(0.7, 0.95, h * w), 0.0)
    post.q_down = np.where(ys < h - 1, rng.uniform(0.7, 0.95, h * w), 0.0)
    return post


@pytest.fixture(scope="module")
def stereo0():
    post = tiny_stereo_posterior()
    obj = np.array([0, 0, 1, 1])
    states = list(itertools.product(range(post.n_labels), repeat=post.n_pixels))
    logp = np.array([post.log_target(np.array(s), obj) for s in states])
    p = np.exp(logp - logp.max())
    return post, obj, states, p / p.sum()


def test_stereo_posterior_has_horizontal_labels_only(stereo0):
    post = stereo0[0]
    assert post.n_labels == 4 and np.all(post.dv == 0) and post.cv.size == 1
    u, v, nil = post.velocities(np.arange(post.n_pixels) % post.n_labels)
    assert np.all(v == 0)


@pytest.mark.parametrize("sizes", [[2], [1, 2]])
def test_velocity_gibbs_with_horizontal_labels_is_invariant(stereo0, sizes):
    post, obj, states, p = stereo0
    kernel = VelocityGibbs(post, obj, 2, window_sizes=sizes)
    counts = velocity_visits(kernel, post, obj, states, n_samples=20000, thin=4, seed=5)
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 20000)


def test_enumeration_catches_horizontal_kernel_without_cut_factor(stereo0):
    post, obj, states, p = stereo0
    kernel = VelocityGibbs(post, obj, 2, window_sizes=[2], _omit_cut=True)
    counts = velocity_visits(kernel, post, obj, states, n_samples=20000, thin=4, seed=5)
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3


@pytest.mark.parametrize("shape", [(480, 640), (380, 420), (388, 584), (120, 160), (40, 48), (600, 100)])
def test_auto_range_covers_a_tenth_of_the_width(shape):
    levels, m = auto_range(shape, 0.5)
    assert m * 2 ** (levels - 1) >= AUTO_RANGE_FRACTION * shape[1] - 1e-9
    assert levels == 1 or min(shape) >> (levels - 1) >= MIN_COARSE_SIDE
    assert abs(m / 0.5 - round(m / 0.5)) < 1e-9  # a multiple of the precision


def test_recentre_keeps_the_flow_and_moves_clipped_labels_to_the_centre():
    rng = np.random.default_rng(1)
    f = rng.random((6, 7, 1)) * 255
    post = MotionPosterior(f, f, velocity_grid(1.0, 0.5), base=rng.normal(0, 1, (6, 7, 2)))
    x0 = rng.integers(0, post.n_labels, post.n_pixels)
    clip = _clipped(post, x0)
    assert clip.any() and not clip[x0 == post.nil].any()
    base, x1 = _recentre(post, x0)
    post2 = MotionPosterior(f, f, post.grid, base=base)
    np.testing.assert_allclose(post2.flow(x1), post.flow(x0))
    assert not _clipped(post2, x1).any() or _clipped(post2, x1).sum() < clip.sum()


def _texture(rng, h, w, sigma=2.0):
    from scipy import ndimage as ndi
    t = ndi.gaussian_filter(rng.random((h, w)), sigma)
    return (t - t.min()) / (t.max() - t.min()) * 200 + 20


def test_default_range_finds_a_motion_of_a_tenth_of_the_width():
    """A 96x128 textured scene moving by (11, -4) px: beyond the old default
    range (±3 px on one level), found with no max_displacement."""
    import swcuts

    rng = np.random.default_rng(2)
    big = _texture(rng, 120, 160)
    frame1 = big[10:106, 20:148]
    frame2 = big[14:110, 9:137]  # frame2(x, y) = frame1(x - 11, y + 4)
    res = swcuts.segment_motion(frame1.astype(np.uint8), frame2.astype(np.uint8), seed=0, rounds=6)
    flow = res.dense_flow()[16:-16, 16:-16]
    err = np.hypot(flow[..., 0] - 11.0, flow[..., 1] + 4.0)
    assert np.median(err) < 0.5


def test_stereo_flow_is_horizontal_and_finds_the_disparity():
    import swcuts

    rng = np.random.default_rng(3)
    h, w = 48, 80
    big = _texture(rng, h, w + 20)
    left = big[:, 10:10 + w]
    depth = np.zeros((h, w))
    depth[12:36, 24:56] = 1
    d = np.where(depth > 0, 6, 3)
    # right(x - d(x)) = left(x) where visible; the rest of right is other texture.
    right = big[:, 5:5 + w].copy()
    for y in range(h):
        for x in range(w):
            if 0 <= x - d[y, x] < w:
                right[y, x - d[y, x]] = left[y, x]
    res = swcuts.segment_motion(right.astype(np.uint8), left.astype(np.uint8), seed=0, rounds=6,
                                vertical=False)
    flow = res.dense_flow()
    assert np.all(flow[..., 1] == 0)
    inner = np.zeros((h, w), bool)
    inner[4:-4, 10:-4] = True
    err = np.abs(flow[..., 0] - d)[inner & ~res.occluded]
    assert np.median(err) < 0.5


@pytest.mark.parametrize("seed", [0, 1])
def test_occlusion_check_flags_the_uncovered_pixels(seed):
    """With the true flow, the forward-backward check flags most pixels that
    frame 1 hides and few of the others (8-px layers)."""
    from swcuts.evaluation.synthetic.motion import layered_pair
    from swcuts.motion.flow_refine import occlusion_check
    from swcuts.motion.segment import _as_frames

    p = layered_pair((120, 160), n_objects=2, max_speed=8.0, seed=seed)
    f1, f2 = _as_frames(p.frame1, p.frame2, -1)
    occ = occlusion_check(f1, f2, p.flow.astype(np.float32))
    assert occ[p.occluded].mean() > 0.8
    assert occ[~p.occluded].mean() < 0.3
    # Control: with a backward flow that undoes the forward one almost
    # everywhere (minus the flow itself), few pixels are flagged.
    agree = occlusion_check(f1, f2, p.flow.astype(np.float32), backward=-p.flow.astype(np.float32))
    assert agree.mean() < 0.2


def test_cli_motion_stereo_writes_a_horizontal_flow(tmp_path):
    import skimage.io

    from swcuts.cli.app import main
    from swcuts.io.flow import read_flo

    rng = np.random.default_rng(4)
    big = _texture(rng, 32, 60)
    left, right = big[:, 4:52], big[:, 8:56]  # left(x) = right(x - 4)
    skimage.io.imsave(tmp_path / "r.png", right.astype(np.uint8), check_contrast=False)
    skimage.io.imsave(tmp_path / "l.png", left.astype(np.uint8), check_contrast=False)
    out = tmp_path / "out"
    assert main(["motion", str(tmp_path / "r.png"), str(tmp_path / "l.png"), "-o", str(out), "--stereo",
                 "--seed", "0", "--rounds", "3"]) == 0
    flow = read_flo(out / "flow.flo")
    known = ~np.isnan(flow[..., 0])
    assert np.all(flow[known][:, 1] == 0)
    assert np.median(flow[known][:, 0]) == pytest.approx(4.0, abs=0.5)


def _shifted_pair(du, dv, seed=2, shape=(96, 128)):
    """A textured scene seen through two windows: frame2(x, y) = frame1(x − du, y − dv)."""
    rng = np.random.default_rng(seed)
    h, w = shape
    big = _texture(rng, h + 104, w + 132)
    frame1 = big[50:50 + h, 60:60 + w]
    frame2 = big[50 - dv:50 - dv + h, 60 - du:60 - du + w]
    return frame1.astype(np.uint8), frame2.astype(np.uint8)


def _median_error(res, du, dv):
    flow = res.dense_flow()[16:-16, 16:-16]
    return float(np.median(np.hypot(flow[..., 0] - du, flow[..., 1] - dv)))


@pytest.mark.parametrize("du, dv", [(15, -5), (-16, 6)])
def test_default_range_finds_a_motion_of_an_eighth_of_the_width(du, dv):
    """~12 % of the width (96x128, 15-16 px): past the automatic range of
    the coarsest level (±3.5 px at 1/4 size, 14 px), found with no
    max_displacement; the coarsest level was clipped, so its range was
    widened."""
    import swcuts

    res = swcuts.segment_motion(*_shifted_pair(du, dv), seed=0, rounds=6)
    assert _median_error(res, du, dv) < 0.5
    assert res.widened and res.widened[0][1] > res.widened[0][0]


def test_widening_finds_what_recentring_alone_misses(monkeypatch):
    """A motion of 16 % of the width: found with the widened range; with
    widening off (only the per-level re-centring), the same call is wrong
    by many pixels (negative control)."""
    import swcuts
    from swcuts.motion import segment as seg

    frames = _shifted_pair(20, -4)
    res = swcuts.segment_motion(*frames, seed=0, rounds=6)
    assert _median_error(res, 20, -4) < 0.5
    monkeypatch.setattr(seg, "WIDEN_RETRIES", 0)
    res = swcuts.segment_motion(*frames, seed=0, rounds=6)
    assert res.widened == []
    assert _median_error(res, 20, -4) > 2.0


def test_a_motion_inside_the_range_is_not_widened():
    import swcuts

    res = swcuts.segment_motion(*_shifted_pair(4, -3), seed=0, rounds=6)
    assert _median_error(res, 4, -3) < 0.5
    assert res.widened == []


def test_widening_doubles_within_the_label_cap():
    from swcuts.motion.segment import _wider

    cap = (MOTION_LIMITS["max_labels_per_axis"] - 1) // 2 * 0.5
    assert _wider(3.5, 0.5) == 7.0
    assert _wider(cap - 1, 0.5) == cap
    assert _wider(cap, 0.5) == cap  # no wider: the caller stops


def test_a_widening_after_the_time_budget_ran_out_still_returns_a_flow(monkeypatch):
    """The first run stops at its clipped coarsest level to widen; when the
    time budget has run out by then, the widened run is still made (one
    round a level) and returned: there is no other. (It used to fail with
    no run kept.)"""
    import time

    import swcuts
    from swcuts.motion import segment as seg

    anneal = seg._anneal_level

    def late(*args, **kwargs):  # every level ends past the budget
        out = anneal(*args, **kwargs)
        time.sleep(0.2)
        return out

    monkeypatch.setattr(seg, "_anneal_level", late)
    res = swcuts.segment_motion(*_shifted_pair(20, -4), seed=0, rounds=6, time_budget=0.05)
    assert res.widened and res.flow.shape == (96, 128, 2)
