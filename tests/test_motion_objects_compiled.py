"""The compiled level-2 SW cuts of motion segmentation
(:class:`swcuts.samplers.objects.ObjectSWC`): Δ log π against the model's,
and the affine level-2 conditional by exact enumeration (with and without
the connectivity prior), with a negative control that fails."""

from __future__ import annotations

import numpy as np
import pytest

from enumeration import assert_matches, exact_distribution, run_visits, set_partitions
from swcuts.models.affine_objects import object_delta
from swcuts.samplers.objects import ObjectSWC
from test_motion_affine import affine_setting


@pytest.fixture(scope="module", params=[True, False], ids=["connected", "any"])
def level2(request):
    model, q = affine_setting(connected=request.param)
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    return model, q, states, p


@pytest.mark.parametrize("connected, hops", [(True, 1), (False, 1), (True, 2)])
def test_compiled_delta_equals_the_models(connected, hops):
    """object_delta (also :meth:`ObjectModel.delta`) against the difference
    of the model's ``log_target`` (−inf exactly when a label would be
    disconnected)."""
    model, _ = affine_setting(connected=connected)
    if hops == 2:
        model = _two_hop(model)
    rng = np.random.default_rng(3)
    n = model.n_vertices
    inside, bmark = np.zeros(n, np.int64), np.zeros(n, np.int64)
    moved, row = np.zeros(model.vstats.shape[1]), np.zeros(model.vstats.shape[1])
    refused = 0
    for _ in range(300):
        state = model.new_state(rng.integers(0, 3, n))
        labels = state.partition.labels
        old = int(labels[rng.integers(n)])
        members = np.flatnonzero(labels == old)
        R = rng.permutation(members)[:rng.integers(1, members.size + 1)].astype(np.int64)
        new = int(rng.integers(0, n))
        after = labels.copy()
        after[R] = new
        # The slow path (ObjectModel.delta is object_delta itself).
        want = model.log_target(after) - state.log_pi
        got = object_delta(R, R.size, old, new, labels, state.partition.size, state.stats,
                           state.loglik, model.vstats, model.cu, model.cv, model.alpha, model.tau,
                           float(model.occam), model.lambda2, model.connected, model.connect_indptr,
                           model.connect_indices, inside, bmark, moved, row)
        if np.isinf(want):
            refused += 1
            assert got == want
        else:
            assert got == pytest.approx(want, abs=1e-9)
    assert (refused > 0) == connected


@pytest.mark.parametrize("p_single", [0.5, 0.0])
def test_compiled_object_swc_leaves_the_affine_level2_conditional_invariant(level2, p_single):
    model, q, states, p = level2
    tv, pvalue = run_visits(ObjectSWC(model, q, p_single=p_single), model, states, p, seed=4,
                            n_samples=5000, thin=40)
    assert_matches(tv, pvalue, p, 5000)


def test_enumeration_catches_the_compiled_kernel_without_its_cut_factor(level2):
    """Negative control: the same kernel without the SW cut factor (the
    Π(1 − q) over the cuts left out of the acceptance ratio) samples a
    different distribution."""
    model, q, states, p = level2
    tv, pvalue = run_visits(ObjectSWC(model, q, p_single=0.0, _omit_cut=True), model, states, p,
                            seed=4, n_samples=5000, thin=40)
    assert pvalue < 1e-3


def _two_hop(model):
    from swcuts.models.motion import ObjectModel

    return ObjectModel(model.graph, model.vstats, model.cu, model.cv, model.alpha, model.lambda2,
                       model.tau, connected=True, connect_hops=2)


def test_two_hop_connectivity_joins_across_one_vertex():
    """On a path 0-1-2-3, {0, 2} is one object at 2 hops, two at 1 hop."""
    from swcuts.graph.region_graph import RegionGraph
    from swcuts.models.motion import ObjectModel

    g = RegionGraph.from_edges(4, np.array([[0, 1], [1, 2], [2, 3]]))
    stats = np.ones((4, 4))
    one = ObjectModel(g, stats, np.zeros(1), np.zeros(1), 1.0, 1.0, 0.1)
    two = ObjectModel(g, stats, np.zeros(1), np.zeros(1), 1.0, 1.0, 0.1, connect_hops=2)
    labels = np.array([0, 1, 0, 1])
    assert one.log_target(labels) == -np.inf
    assert np.isfinite(two.log_target(labels))
    assert one.log_target(np.array([0, 1, 1, 0])) == two.log_target(np.array([0, 1, 1, 0])) == -np.inf
    assert len(np.unique(one.new_state(labels).labels)) == 4
    assert len(np.unique(two.new_state(labels).labels)) == 2


def test_compiled_object_swc_is_exact_under_two_hop_connectivity():
    model, q = affine_setting(connected=True)
    model = _two_hop(model)
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    tv, pvalue = run_visits(ObjectSWC(model, q), model, states, p, seed=4, n_samples=5000, thin=40)
    assert_matches(tv, pvalue, p, 5000)
