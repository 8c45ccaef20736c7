"""Motion segmentation: invariance of the level-0 and level-2 kernels by
exact enumeration (with negative controls), Δ against log π, and the API."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from enumeration import assert_matches, chain_visits, compare, exact_distribution, set_partitions
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.motion import MotionPosterior, ObjectModel, velocity_grid
from swcuts.samplers.swc import SWC2
from swcuts.samplers.velocity import VelocityGibbs


def tiny_posterior(seed=0, h=2, w=2, tau=0.0, alpha=0.3):
    """A 2x2 pair with 4 velocities + nil; data costs and edge probabilities
    randomised to O(1) so that every state matters, a non-zero base flow."""
    rng = np.random.default_rng(seed)
    f1 = rng.random((h, w, 1)) * 255
    f2 = rng.random((h, w, 1)) * 255
    # tau=0 by default (the translation object model); tau > 0, the affine
    # object model: tests/test_motion_level0_affine.py.
    post = MotionPosterior(f1, f2, velocity_grid(0.5, 1.0), base=rng.normal(0, 0.5, (h, w, 2)),
                           sigma=60.0, alpha=alpha, beta=0.5, delta=0.4, nu=1.0, nil_cost=1.0, tau=tau)
    post.D = (rng.random(post.D.shape) * 2).astype(np.float32)
    xs, ys = np.arange(h * w) % w, np.arange(h * w) // w
    post.q_right = np.where(xs < w - 1, rng.uniform(0.7, 0.95, h * w), 0.0)
    post.q_down = np.where(ys < h - 1, rng.uniform(0.7, 0.95, h * w), 0.0)
    return post


def level0_visits(kernel, post, n_samples, thin, seed):
    """Visit counts of the level-0 labellings (after 500 burn-in sweeps) and the last state."""
    rng = np.random.default_rng(seed)
    state = kernel.new_state(np.zeros(post.n_pixels, np.int64))
    kernel.run(state, rng, np.ones(500))
    counts = Counter()
    for _ in range(n_samples):
        kernel.run(state, rng, np.ones(thin))
        counts[tuple(int(v) for v in state.x0)] += 1
    return counts, state


def velocity_visits(kernel, post, obj, states, n_samples, thin, seed):
    counts, state = level0_visits(kernel, post, n_samples, thin, seed)
    assert state.log_pi == pytest.approx(post.log_target(state.x0, obj), abs=1e-6)
    return counts


def level0_distribution(post, obj):
    """Every velocity labelling of the tiny lattice and its exact probability
    given the objects ``obj``: (states, p)."""
    states = list(itertools.product(range(post.n_labels), repeat=post.n_pixels))
    logp = np.array([post.log_target(np.array(s), obj) for s in states])
    p = np.exp(logp - logp.max())
    return states, p / p.sum()


@pytest.fixture(scope="module")
def level0():
    post = tiny_posterior()
    obj = np.array([0, 0, 1, 1])
    return post, obj, *level0_distribution(post, obj)


@pytest.mark.parametrize("sizes", [[2], [1, 2]])
def test_velocity_gibbs_leaves_level0_conditional_invariant(level0, sizes):
    post, obj, states, p = level0
    kernel = VelocityGibbs(post, obj, 2, window_sizes=sizes)
    counts = velocity_visits(kernel, post, obj, states, n_samples=20000, thin=4, seed=3)
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 20000)


def test_enumeration_catches_velocity_gibbs_without_cut_factor(level0):
    post, obj, states, p = level0
    kernel = VelocityGibbs(post, obj, 2, window_sizes=[2], _omit_cut=True)
    counts = velocity_visits(kernel, post, obj, states, n_samples=20000, thin=4, seed=3)
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3


def object_setting(seed=1):
    """Five level-2 vertices on a path-plus-chord graph with random
    velocity statistics (some vertices all nil: n = 0)."""
    rng = np.random.default_rng(seed)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [0, 2]])
    graph = RegionGraph.from_edges(5, edges)
    n = rng.integers(0, 4, 5).astype(float)
    vel = rng.normal(0, 1, (5, 2))
    vstats = np.column_stack([n, n * vel[:, 0], n * vel[:, 1],
                              n * (vel ** 2).sum(1) + rng.random(5) * n])
    grid = velocity_grid(2.0, 0.5)
    model = ObjectModel(graph, vstats, grid, grid, alpha=0.4, lambda2=1.0)
    return model, rng.uniform(0.2, 0.8, len(edges))


def test_object_swc_leaves_level2_conditional_invariant():
    model, q = object_setting()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    tv, pvalue = chain_visits(SWC2(model, q), model, states, p, seed=4, n_samples=5000, thin=40)
    assert_matches(tv, pvalue, p, 5000)


class _NoCutSWC2(SWC2):
    """Wrong: drops the cut ratio of eq. 40."""

    def __init__(self, model, q):
        super().__init__(model, q)
        self.log1mq = np.zeros_like(self.log1mq)


def test_enumeration_catches_object_swc_without_cut_ratio():
    model, q = object_setting()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    tv, pvalue = chain_visits(_NoCutSWC2(model, q), model, states, p, seed=4, n_samples=5000,
                              thin=40)
    assert pvalue < 1e-3


def test_object_delta_equals_difference_of_log_target():
    model, _ = object_setting(seed=7)
    rng = np.random.default_rng(0)
    state = model.new_state(rng.integers(0, 3, model.n_vertices))
    for _ in range(200):
        R = np.flatnonzero(rng.random(model.n_vertices) < 0.4)
        if R.size == 0:
            continue
        R = R[state.labels[R] == state.labels[R[0]]]
        new = int(rng.integers(0, model.n_vertices))
        d = model.delta(state, R, new)
        labels = state.labels.copy()
        labels[R] = new
        assert d == pytest.approx(model.log_target(labels) - model.log_target(state.labels), abs=1e-9)
        model.apply(state, R, new, d)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)


def test_velocity_moves_keep_cached_log_pi_on_a_larger_lattice():
    """Δ of every move (the kernel's lp[k] − lp[ℓ]) sums to the change of
    log_target over many steps, with several objects and a base flow."""
    rng = np.random.default_rng(2)
    h, w = 9, 11
    f1 = rng.random((h, w, 2)) * 255
    f2 = np.roll(f1, 1, axis=1) + rng.normal(0, 3, f1.shape)
    post = MotionPosterior(f1, f2, velocity_grid(1.0, 0.5), base=rng.normal(0, 1, (h, w, 2)), tau=0.0)
    obj = (np.arange(h * w) % w >= 5).astype(np.int64) + 2 * (np.arange(h * w) // w >= 4)
    kernel = VelocityGibbs(post, obj, 4)
    state = kernel.new_state(rng.integers(0, post.n_labels, h * w))
    for T in (5.0, 1.0, 0.2):
        kernel.run(state, rng, np.full(300, T))
        assert state.log_pi == pytest.approx(post.log_target(state.x0, obj), rel=1e-9, abs=1e-6)
        np.testing.assert_allclose(state.ostats, post.affine_stats(state.x0, obj, 4), atol=1e-6)


def test_segment_motion_recovers_two_translating_layers():
    """A textured square moving by (−2, 1) over a background moving by
    (1, 0): the flow and the two objects are found."""
    from scipy import ndimage as ndi

    import swcuts

    rng = np.random.default_rng(0)
    h, w = 48, 64

    def texture(lo, hi):
        t = ndi.gaussian_filter(rng.random((h, w)), 2.0)
        return (t - t.min()) / (t.max() - t.min()) * (hi - lo) + lo

    bg, fg = texture(40, 200), texture(0, 120)
    mask1 = np.zeros((h, w), bool)
    mask1[14:34, 20:44] = True

    def shift(a, u):
        return np.roll(np.roll(a, u[1], 0), u[0], 1)

    mask2 = shift(mask1, (-2, 1))
    frame1 = np.where(mask1, fg, bg).astype(np.uint8)
    frame2 = np.where(mask2, shift(fg, (-2, 1)), shift(bg, (1, 0))).astype(np.uint8)
    res = swcuts.segment_motion(frame1, frame2, seed=0, rounds=8)
    truth = np.where(mask2[..., None], [-2.0, 1.0], [1.0, 0.0])
    inner = np.zeros((h, w), bool)
    inner[3:-3, 3:-3] = True
    err = np.hypot(*(res.flow - truth).transpose(2, 0, 1))[inner & ~res.occluded]
    assert np.median(err) < 0.25
    assert res.n_objects >= 2
    fg_label = np.bincount(res.objects[mask2]).argmax()
    assert np.mean(res.objects[mask2] == fg_label) > 0.8
    assert np.mean(res.objects[~mask2] == fg_label) < 0.1
    assert res.flow.shape == (h, w, 2) and res.regions.shape == (h, w)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_displacement=0), "max_displacement"),
    (dict(max_displacement=3.0, precision=0.7), "multiple of precision"),
    (dict(max_displacement=30, precision=0.5), "labels per axis"),
    (dict(pyramid_levels=0), "pyramid_levels"),
    (dict(pyramid_levels=6), "below 8 pixels"),
    (dict(rounds=0), "rounds"),
    (dict(time_budget=float("inf")), "time_budget"),
    (dict(gamma=1.0), "unknown argument"),
])
def test_segment_motion_rejects_bad_options(kwargs, message):
    import swcuts

    frame = np.zeros((40, 40), np.uint8)
    with pytest.raises((ValueError, TypeError), match=message):
        swcuts.segment_motion(frame, frame, **kwargs)


def test_segment_motion_rejects_frames_of_different_size():
    import swcuts

    with pytest.raises(ValueError, match="differ in size"):
        swcuts.segment_motion(np.zeros((20, 30)), np.zeros((20, 31)))


def test_cli_motion_writes_every_output(tmp_path):
    import skimage.io

    from swcuts.cli.app import main
    from swcuts.cli.motion import MOTION_OUTPUTS
    from swcuts.io.flow import read_flo
    from swcuts.evaluation.synthetic.motion import layered_pair

    pair = layered_pair(shape=(40, 48), n_objects=1, seed=3)
    for name, frame in (("a.png", pair.frame1), ("b.png", pair.frame2)):
        skimage.io.imsave(tmp_path / name, (frame * 255).astype(np.uint8), check_contrast=False)
    out = tmp_path / "out"
    assert main(["motion", str(tmp_path / "a.png"), str(tmp_path / "b.png"), "-o", str(out),
                 "--seed", "0", "--rounds", "3"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(MOTION_OUTPUTS)
    flow = read_flo(out / "flow.flo")
    np.testing.assert_array_equal(np.isnan(flow), np.isnan(np.load(out / "flow.npy")))
    np.testing.assert_allclose(np.nan_to_num(flow), np.nan_to_num(np.load(out / "flow.npy")))
    assert skimage.io.imread(out / "flow.png").shape[:2] == (40, 48)


@pytest.mark.parametrize("extra, message", [
    (["--max-displacement", "3", "--precision", "0.7"], "multiple of --precision"),
    (["--pyramid-levels", "9"], "--pyramid-levels"),
    (["--rounds", "0"], "--rounds"),
])
def test_cli_motion_bad_options_are_one_line_and_write_nothing(tmp_path, capsys, extra, message):
    import skimage.io

    from swcuts.cli.app import main

    frame = (np.random.default_rng(0).random((24, 32)) * 255).astype(np.uint8)
    skimage.io.imsave(tmp_path / "a.png", frame, check_contrast=False)
    out = tmp_path / "out"
    assert main(["motion", str(tmp_path / "a.png"), str(tmp_path / "a.png"), "-o", str(out)] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()
