"""Affine object motion (level 2): the closed form against quadrature, the
level-2 SW cuts under the affine model by exact enumeration (with a
negative control), Δ against log π, degenerate fits, and the
non-rigid synthetic generator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from enumeration import assert_matches, chain_visits, exact_distribution, set_partitions
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.affine_objects import affine_fit, affine_score, affine_stats
from swcuts.models.motion import MotionPosterior, ObjectModel, velocity_grid
from swcuts.models.motion_kernels import object_score
from swcuts.samplers.swc import SWC, SWC2

GRID = velocity_grid(2.0, 0.5)


def _gradient_term_by_quadrature(x, y, u, v, alpha, tau, axes=2):
    """Σ_a log ∫ exp(−α[Σ(x_a − x̄_a − b·d)² − Σ(x_a − x̄_a)²]) N(b; 0, τ² I) db
    on a 2-D grid (d = p − p̄): what f_aff − f must be."""
    d = np.stack([x - x.mean(), y - y.mean()], axis=1)
    s = np.linspace(-6 * tau, 6 * tau, 801)
    bx, by = np.meshgrid(s, s, indexing="ij")
    logprior = -(bx ** 2 + by ** 2) / (2 * tau ** 2) - math.log(2 * math.pi * tau ** 2)
    total = 0.0
    for vel in (u, v)[:axes]:
        r = vel - vel.mean()
        fit = (r[None, None, :] - bx[..., None] * d[:, 0] - by[..., None] * d[:, 1]) ** 2
        e = -alpha * (fit.sum(axis=2) - (r ** 2).sum()) + logprior
        m = e.max()
        total += m + math.log(np.exp(e - m).sum() * (s[1] - s[0]) ** 2)
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_affine_term_equals_the_integral_over_the_gradient(seed):
    rng = np.random.default_rng(seed)
    n = 6
    x, y = rng.normal(0, 2, n), rng.normal(0, 2, n)
    u = 0.5 + 0.3 * x - 0.2 * y + rng.normal(0, 0.3, n)
    v = -1.0 + 0.1 * x + 0.25 * y + rng.normal(0, 0.3, n)
    alpha, tau = 0.4, 0.3
    st = affine_stats(x, y, u, v, np.zeros(n, np.int64), 1)[0]
    closed = affine_score(st, GRID, GRID, alpha, tau) - object_score(st[0], st[1], st[2], st[3], GRID, GRID, alpha)
    assert closed == pytest.approx(_gradient_term_by_quadrature(x, y, u, v, alpha, tau), abs=1e-4)


def test_stereo_objects_integrate_the_u_gradient_only():
    """With one v value (stereo, v ≡ 0) only the u row of B exists."""
    rng = np.random.default_rng(4)
    x, y = rng.normal(0, 2, 6), rng.normal(0, 2, 6)
    u = 1.0 + 0.2 * x + rng.normal(0, 0.3, 6)
    st = affine_stats(x, y, u, 0 * u, np.zeros(6, np.int64), 1)[0]
    one = np.zeros(1)
    closed = affine_score(st, GRID, one, 0.4, 0.3) - object_score(st[0], st[1], st[2], st[3], GRID, one, 0.4)
    assert closed == pytest.approx(_gradient_term_by_quadrature(x, y, u, 0 * u, 0.4, 0.3, axes=1), abs=1e-4)


def test_tau_zero_and_degenerate_objects_are_the_translation_model():
    rng = np.random.default_rng(3)
    x, y, u, v = rng.normal(0, 3, (4, 9))
    st = affine_stats(x, y, u, v, np.zeros(9, np.int64), 1)[0]
    trans = object_score(st[0], st[1], st[2], st[3], GRID, GRID, 0.4)
    assert affine_score(st, GRID, GRID, 0.4, 0.0) == pytest.approx(trans, abs=1e-12)
    # One point (one region's centroid): S = 0, nothing to fit.
    one = affine_stats(x[:1], y[:1], u[:1], v[:1], np.zeros(1, np.int64), 1)[0]
    assert affine_score(one, GRID, GRID, 0.4, 0.3) == pytest.approx(
        object_score(one[0], one[1], one[2], one[3], GRID, GRID, 0.4), abs=1e-9)
    # Collinear points: finite score, the gradient along the line only.
    t = rng.normal(0, 3, 9)
    line = affine_stats(t, 2 * t, 0.2 * t, 0 * t, np.zeros(9, np.int64), 1)
    _, _, B = affine_fit(line, 0.4, 0.3)
    assert np.isfinite(affine_score(line[0], GRID, GRID, 0.4, 0.3))
    assert B[0, 0] @ np.array([-2.0, 1.0]) == pytest.approx(0.0, abs=1e-9)  # nothing across the line
    # No non-nil pixel: log |C|.
    assert affine_score(np.zeros(13), GRID, GRID, 0.4, 0.3) == pytest.approx(math.log(GRID.size ** 2))


def test_a_rotating_object_is_one_object_under_the_affine_model():
    """Two halves of a disc (radius 40 px) rotating by 5°: the translation model prefers
    two objects, the affine model one."""
    ys, xs = np.mgrid[-40:41, -40:41].astype(float)
    inside = xs ** 2 + ys ** 2 <= 1600
    x, y = xs[inside], ys[inside]
    th = math.radians(5)
    u, v = (math.cos(th) - 1) * x - math.sin(th) * y, math.sin(th) * x + (math.cos(th) - 1) * y
    vstats = affine_stats(x, y, u, v, (x > 0).astype(np.int64), 2)
    graph = RegionGraph.from_edges(2, np.array([[0, 1]]))
    grid = velocity_grid(5.0, 0.5)
    gain = {}
    for tau in (0.0, 0.1):
        model = ObjectModel(graph, vstats, grid, grid, alpha=0.2, lambda2=200.0, tau=tau)
        gain[tau] = model.log_target(np.array([0, 0])) - model.log_target(np.array([0, 1]))
    assert gain[0.0] < 0 < gain[0.1]


def affine_setting(seed=1, occam=1.0, connected=None):
    """Six level-2 vertices (a path plus chords), each a few pixels whose
    velocities follow one of two affine maps plus noise; one vertex all nil."""
    rng = np.random.default_rng(seed)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 2], [3, 5]])
    graph = RegionGraph.from_edges(6, edges)
    rows = []
    maps = [np.array([[0.3, -0.2, 0.5], [0.2, 0.3, -0.5]]), np.array([[0.0, 0.0, -0.5], [0.0, 0.0, 0.5]])]
    for vtx in range(6):
        n = 0 if vtx == 4 else int(rng.integers(1, 4))
        centre = rng.normal(0, 2, 2)
        pts = centre + rng.normal(0, 1, (n, 2))
        A = maps[vtx % 2]
        vel = pts @ A[:, :2].T + A[:, 2] + rng.normal(0, 0.3, (n, 2))
        rows.append(affine_stats(pts[:, 0], pts[:, 1], vel[:, 0], vel[:, 1], np.zeros(n, np.int64), 1)[0])
    model = ObjectModel(graph, np.array(rows), GRID, GRID, alpha=0.5, lambda2=1.0, tau=0.5, connected=connected)
    model.occam = occam
    return model, rng.uniform(0.2, 0.8, len(edges))


@pytest.fixture(scope="module", params=[True, False], ids=["connected", "any"])
def level2(request):
    model, q = affine_setting(connected=request.param)
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    if request.param:  # the connectivity prior removes states
        assert 0 < np.count_nonzero(p == 0) < len(states)
    return model, q, states, p


def test_affine_term_matters_in_the_setting(level2):
    """The negative control can only fail if the Occam factor moves π."""
    model, q, states, p = level2
    wrong, _ = affine_setting(occam=0.0, connected=model.connected)
    p_wrong = exact_distribution(wrong, states)
    assert 0.5 * np.abs(p - p_wrong).sum() > 0.08
    plain = ObjectModel(model.graph, model.vstats, GRID, GRID, alpha=0.5, lambda2=1.0, tau=0.0,
                        connected=model.connected)
    assert 0.5 * np.abs(p - exact_distribution(plain, states)).sum() > 0.08


@pytest.mark.parametrize("kernel", [SWC2, SWC])
def test_object_swc_leaves_the_affine_level2_conditional_invariant(level2, kernel):
    model, q, states, p = level2
    k = kernel(model, q) if kernel is SWC2 else kernel(model, q, compiled=False)
    tv, pvalue = chain_visits(k, model, states, p, seed=4, n_samples=5000, thin=40)
    assert_matches(tv, pvalue, p, 5000)


def test_enumeration_catches_a_kernel_without_the_occam_factor(level2):
    """Negative control: SW cuts on the affine term without its log det
    (the gradient fitted, not integrated) sample a different distribution."""
    model, q, states, p = level2
    wrong, _ = affine_setting(occam=0.0, connected=model.connected)
    tv, pvalue = chain_visits(SWC2(wrong, q), wrong, states, p, seed=4, n_samples=5000, thin=40)
    assert pvalue < 1e-3


@pytest.mark.parametrize("connected", [False, True])
def test_affine_delta_equals_difference_of_log_target(connected):
    model, _ = affine_setting(seed=7, connected=connected)
    rng = np.random.default_rng(0)
    state = model.new_state(np.zeros(model.n_vertices, np.int64) if connected
                            else rng.integers(0, 3, model.n_vertices))
    n_refused = 0
    for _ in range(200):
        R = np.flatnonzero(rng.random(model.n_vertices) < 0.4)
        if R.size == 0:
            continue
        R = R[state.labels[R] == state.labels[R[0]]]
        new = int(rng.integers(0, model.n_vertices))
        d = model.delta(state, R, new)
        labels = state.labels.copy()
        labels[R] = new
        if d == -math.inf:  # disconnects an object: refused, never applied
            assert connected and model.log_target(labels) == -math.inf
            n_refused += 1
            continue
        assert d == pytest.approx(model.log_target(labels) - model.log_target(state.labels), abs=1e-8)
        model.apply(state, R, new, d)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-7)
    assert (n_refused > 0) == connected


def test_posterior_log_target_holds_the_affine_term():
    """MotionPosterior.log_target with τ > 0 is the τ = 0 one plus Σ_o of
    the gradient term, from the same per-object statistics."""
    rng = np.random.default_rng(5)
    h, w = 6, 7
    f1 = rng.random((h, w, 1)) * 255
    f2 = rng.random((h, w, 1)) * 255
    base = rng.normal(0, 1, (h, w, 2))
    kw = dict(sigma=30.0, alpha=0.3)
    p0 = MotionPosterior(f1, f2, velocity_grid(1.0, 0.5), base=base, tau=0.0, **kw)
    p1 = MotionPosterior(f1, f2, velocity_grid(1.0, 0.5), base=base, tau=0.2, **kw)
    x0 = rng.integers(0, p0.n_labels, h * w)
    obj = (np.arange(h * w) % w >= 3).astype(np.int64)
    st = p1.affine_stats(x0, obj, 2)
    extra = sum(affine_score(r, p1.cu, p1.cv, 0.3, 0.2)
                - object_score(r[0], r[1], r[2], r[3], p1.cu, p1.cv, 0.3) for r in st)
    assert p1.log_target(x0, obj) == pytest.approx(p0.log_target(x0, obj) + extra, abs=1e-8)
    np.testing.assert_allclose(st[:, :4], p0.object_stats(x0, obj, 2), atol=1e-9)


def test_nonrigid_pair_flow_is_its_affine_maps_and_warps_frame1_onto_frame2():
    import cv2

    from swcuts.evaluation.synthetic.nonrigid import nonrigid_pair

    p = nonrigid_pair((60, 80), n_objects=2, seed=4, noise=0.0)
    q = nonrigid_pair((60, 80), n_objects=2, seed=4, noise=0.0)
    np.testing.assert_array_equal(p.frame2, q.frame2)
    h, w = p.objects.shape
    ys, xs = np.mgrid[0:h, 0:w].astype(float)
    homog = np.stack([xs, ys, np.ones_like(xs)], axis=-1)
    expect = np.einsum("hwij,hwj->hwi", p.motions[p.objects], homog)
    np.testing.assert_allclose(p.flow, expect, atol=1e-9)
    # Not rigid: the flow varies inside every layer.
    for k in range(3):
        assert np.ptp(p.flow[p.objects == k], axis=0).max() > 0.3
    # I2(x) = I1(x − f(x)) where visible (up to cubic interpolation of frame 1).
    warped = cv2.remap(p.frame1.astype(np.float32), (xs - p.flow[..., 0]).astype(np.float32),
                       (ys - p.flow[..., 1]).astype(np.float32), cv2.INTER_CUBIC)
    ok = ~p.occluded
    ok[:3], ok[-3:], ok[:, :3], ok[:, -3:] = False, False, False, False
    assert np.abs(warped - p.frame2)[ok].mean() < 0.01 * np.abs(p.frame2 - p.frame1).mean() + 0.003


def test_nonrigid_pair_refuses_bad_arguments():
    from swcuts.evaluation.synthetic.nonrigid import nonrigid_pair

    with pytest.raises(ValueError, match="max_rotation"):
        nonrigid_pair((40, 40), max_rotation=-1)
    with pytest.raises(ValueError, match="n_objects"):
        nonrigid_pair((40, 40), n_objects=9)


def test_segment_motion_reports_each_objects_affine_motion():
    """On a rotating object, the reported affine map predicts the true flow
    of the object's pixels better than its one velocity."""
    import swcuts
    from swcuts.evaluation.synthetic.nonrigid import nonrigid_pair

    p = nonrigid_pair((60, 80), n_objects=1, max_rotation=8.0, seed=2)
    res = swcuts.segment_motion(p.frame1, p.frame2, seed=0, rounds=3)
    assert res.object_motion.shape == (res.n_objects, 2, 3)
    h, w = p.objects.shape
    ys, xs = np.mgrid[0:h, 0:w].astype(float)
    homog = np.stack([xs, ys, np.ones_like(xs)], axis=-1)
    mask = p.objects == 1
    k = np.bincount(res.objects[mask]).argmax()
    mine = mask & (res.objects == k)
    affine = np.einsum("ij,pj->pi", res.object_motion[k], homog[mine])
    err_affine = np.hypot(*(affine - p.flow[mine]).T).mean()
    err_one = np.hypot(*(res.object_velocity[k] - p.flow[mine]).T).mean()
    assert err_affine < 0.7 * err_one


def test_a_disconnected_start_is_split_into_connected_objects():
    model, _ = affine_setting(connected=True)
    labels = np.array([0, 1, 0, 1, 1, 0])  # path 0-1-2-3-4-5 plus chords 0-2, 3-5
    state = model.new_state(labels)
    assert np.isfinite(state.log_pi)
    assert state.log_pi == pytest.approx(model.log_target(state.labels))
    assert model.log_target(labels) == -math.inf
    assert len(np.unique(state.labels)) == 4  # {0, 2}, {1}, {3, 4}, {5}
