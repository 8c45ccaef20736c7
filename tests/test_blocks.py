"""Block flips (swcuts.samplers.blocks): π P = π on the exact transition
matrix over all 877 partitions of 7 atoms, and a version that takes the
moves without a reverse fails; the mixture with the compiled swc kernel
samples the exact distribution (and the biased one does not)."""

import numpy as np
import pytest
from enumeration import assert_matches, exact_distribution, run_visits, set_partitions

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.partition import canonical
from swcuts.samplers.blocks import BlockFlip, BlockMixture, region_blocks
from swcuts.samplers.swc import SWC
from swcuts.segmentation.edge_posterior import bond_probabilities, edge_model, edge_weights

ATOMS = np.array([[0, 0, 1, 1, 2],
                  [3, 0, 1, 4, 2],
                  [3, 5, 5, 4, 6]])


def _setting(offset=0.3):
    graph = RegionGraph.from_labels(ATOMS)
    q = np.random.default_rng(2).uniform(0.15, 0.9, graph.n_edges)
    w = edge_weights(q, offset)
    model = edge_model(ATOMS, graph, w)
    rng = np.random.default_rng(3)
    blocks = region_blocks(graph, [rng.integers(0, 3, graph.n_vertices) for _ in range(4)])
    blocks.append(np.array([0, 6]))  # a block that is not connected: allowed
    return graph, w, model, blocks


class _Script:
    """A generator stand-in: integers() returns scripted choices (recording
    their ranges), random() a fixed number."""

    def __init__(self, choices, u):
        self.choices, self.u, self.ranges = list(choices), u, []

    def integers(self, n):
        self.ranges.append(int(n))
        return self.choices.pop(0) if self.choices else 0

    def random(self):
        return self.u


def _transition_matrix(model, blocks, reverse=True):
    states = set_partitions(model.n_vertices)
    index = {s: i for i, s in enumerate(states)}
    P = np.zeros((len(states), len(states)))
    kernel = BlockFlip(model, blocks, reverse=reverse)
    for a, s in enumerate(states):
        for i in range(len(blocks)):
            probe = _Script([i], 2.0)
            kernel.step(model.new_state(np.array(s)), probe, 1.0)
            m = probe.ranges[1] if len(probe.ranges) > 1 else 0
            for r in range(m):
                state = model.new_state(np.array(s))
                info = kernel.step(state, _Script([i, r], -1.0), 1.0)  # u = -1: every move with a reverse is taken
                if not info.accepted:  # no reverse move
                    continue
                alpha = min(1.0, np.exp(info.log_accept_ratio))
                assert state.log_pi == pytest.approx(model.log_target(state.partition.labels), abs=1e-9)
                P[a, index[canonical(state.partition.labels)]] += alpha / (len(blocks) * m)
        P[a, a] += 1.0 - P[a].sum()
    return states, P


def test_block_flips_leave_the_posterior_invariant_exactly():
    graph, w, model, blocks = _setting()
    states, P = _transition_matrix(model, blocks)
    p = exact_distribution(model, states)
    assert np.all(P >= -1e-12) and np.allclose(P.sum(axis=1), 1.0)
    assert np.abs(p @ P - p).max() < 1e-12
    # Moves happen: merges and splits of whole blocks.
    assert (np.diag(P) < 1 - 1e-9).sum() > len(states) // 4
    # Detailed balance, move by move.
    flow = p[:, None] * P
    assert np.abs(flow - flow.T).max() < 1e-12


def test_moves_without_a_reverse_break_the_invariance():
    graph, w, model, blocks = _setting()
    states, P = _transition_matrix(model, blocks, reverse=False)
    p = exact_distribution(model, states)
    assert np.abs(p @ P - p).max() > 1e-4


@pytest.mark.parametrize("reverse", [True, False])
def test_the_mixture_with_compiled_swc_samples_the_posterior(reverse):
    graph, w, model, blocks = _setting(offset=-0.5)
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    kernel = BlockMixture(SWC(model, bond_probabilities(w)), BlockFlip(model, blocks, reverse=reverse), every=1)
    assert kernel.compiled
    n = 6000
    tv, pvalue = run_visits(kernel, model, states, p, seed=5, n_samples=n, thin=20)
    if reverse:
        assert_matches(tv, pvalue, p, n)
        assert kernel.flips.accepted > 100
    else:
        assert pvalue < 1e-3, (tv, pvalue)
