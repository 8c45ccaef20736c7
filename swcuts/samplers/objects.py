"""Level 2 of motion segmentation, compiled: SW cuts over the objects.

The same moves as :class:`swcuts.samplers.swc.SWC` on
:class:`swcuts.models.motion.ObjectModel` (a uniform vertex; with
probability ``p_single`` R = {v}, otherwise its Wolff component grown
with q⁽²⁾; a target from :class:`~swcuts.samplers.common.TargetProposal`'s
weights; the cut factor and the MH decision of eq. 40), with no Python in
the loop: the grow, cut sums and label proposal are the shared compiled
ones of :mod:`swcuts.samplers.common`, the partition update
:func:`~swcuts.models.partition.relabel_vertices`, the object term
:func:`~swcuts.models.affine_objects.affine_score` and the connectivity
prior :func:`~swcuts.models.affine_objects.connected_within`. Δ log π is
:func:`~swcuts.models.affine_objects.object_delta`, which
:meth:`ObjectModel.delta` also calls (tested against the model's
``log_target`` and by exact enumeration in
``tests/test_motion_objects_compiled.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.models.affine_objects import affine_score, object_delta
from swcuts.models.motion_kernels import N_AFFINE
from swcuts.models.partition import relabel_vertices
from swcuts._numba.primitives import mh_accept
from swcuts.samplers.common import (
    StepInfo, TargetProposal, clear_cut_sums, cut_sums, edge_arrays, grow_into, propose_target,
    seed_compiled_rng)

__all__ = ["ObjectSWC"]


@njit(cache=True)
def run_objects(temps, labels, size, free_stack, n_free, lstats, lloglik, vstats, cu, cv, alpha, tau,
                occam, lambda2, connected, cindptr, cindices, indptr, indices, edge_ids, q, log1mq,
                p_single, w_adj,
                w_floor, w_fresh, w_far, omit_cut, Rbuf, mark, in_r, acc_log, acc_q, acc_n, adj,
                inside, bmark, moved, row):
    """One SW-cut step per temperature; returns (Σ Δ log π, accepted).
    ``indptr``, ``indices``: the graph (clusters, cuts); ``cindptr``,
    ``cindices``: the graph of the connectivity prior."""
    n = labels.size
    n_slots = size.size
    total = 0.0
    accepted = 0
    for step in range(temps.size):
        T = temps[step]
        v = int(np.random.random() * n)
        single = np.random.random() < p_single
        if single:
            Rbuf[0] = v
            n_r = 1
        else:
            n_r = grow_into(v, labels, q, indptr, indices, edge_ids, mark, Rbuf)
        ell = labels[v]
        whole = size[ell] == n_r
        n_adj = cut_sums(Rbuf, n_r, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log,
                         acc_q, acc_n, adj)
        new, log_prop = propose_target(ell, whole, n_slots - n_free[0], adj, n_adj, acc_q, acc_n,
                                       free_stack, n_free[0], w_adj, w_floor, w_fresh, w_far, True)
        cut = 0.0
        if new >= 0 and not single and not omit_cut:
            if acc_n[new] > 0:
                cut += acc_log[new]
            if acc_n[ell] > 0:
                cut -= acc_log[ell]
        clear_cut_sums(adj, n_adj, acc_log, acc_q, acc_n)
        if new < 0 or new == ell:
            continue
        d = object_delta(Rbuf, n_r, ell, new, labels, size, lstats, lloglik, vstats, cu, cv, alpha,
                         tau, occam, lambda2, connected, cindptr, cindices, inside, bmark, moved, row)
        if not mh_accept(cut + log_prop + d / T):
            continue
        # object_delta left R's statistics in ``moved``.
        relabel_vertices(labels, size, free_stack, n_free, Rbuf, n_r, new)
        for c in range(moved.size):
            lstats[ell, c] -= moved[c]
            lstats[new, c] += moved[c]
        for lab in (ell, new):
            if size[lab] > 0:
                lloglik[lab] = affine_score(lstats[lab], cu, cv, alpha, tau, occam)
            else:
                for c in range(moved.size):
                    lstats[lab, c] = 0.0
                lloglik[lab] = 0.0
        total += d
        accepted += 1
    return total, accepted


class ObjectSWC:
    """Compiled SW cuts (SWC-2 with single-vertex steps, as
    :class:`~swcuts.samplers.swc.SWC`) on a
    :class:`~swcuts.models.motion.ObjectModel`.

    Parameters
    ----------
    model : ObjectModel
    q : (E,) float array
        Edge probabilities q⁽²⁾ of the model's graph.
    p_single : float
        Probability of a single-vertex step.
    proposal : TargetProposal, optional
        The label proposal's weights.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> from swcuts.models.motion import ObjectModel, velocity_grid
    >>> g = RegionGraph.from_edges(3, np.array([[0, 1], [1, 2]]))
    >>> stats = np.array([[2, 2.0, 0, 2.0], [2, 2.0, 0, 2.0], [2, -2.0, 0, 2.0]])
    >>> grid = velocity_grid(1.0, 1.0)
    >>> model = ObjectModel(g, stats, grid, grid, alpha=1.0, lambda2=1.0)
    >>> state = model.new_state(np.arange(3))
    >>> kernel = ObjectSWC(model, np.full(2, 0.5))
    >>> kernel.run(state, np.random.default_rng(0), np.full(200, 0.1))
    >>> bool(abs(state.log_pi - model.log_target(state.labels)) < 1e-9)
    True
    """

    def __init__(self, model, q, p_single=0.5, proposal=None, _omit_cut=False):
        self.model = model
        g = model.graph
        self.q, self.log1mq = edge_arrays(g, q)
        self.p_single = float(p_single)
        self.proposal = proposal or TargetProposal()
        self.omit_cut = bool(_omit_cut)
        n = g.n_vertices
        self._n_slots = n
        self._scratch = (np.empty(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int8),
                         np.zeros(n), np.zeros(n), np.zeros(n, np.int64), np.empty(n, np.int64),
                         np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(N_AFFINE),
                         np.zeros(N_AFFINE))

    def run(self, state, rng, temperatures) -> None:
        """One step per temperature (compiled); ``rng`` seeds the compiled
        generator (None: continue its stream)."""
        if rng is not None:
            seed_compiled_rng(rng)
        m, g, p, part = self.model, self.model.graph, self.proposal, state.partition
        if part.size.size > self._n_slots:
            raise ValueError("the state has more label slots than the graph has vertices")
        d, _ = run_objects(np.asarray(temperatures, np.float64), part.labels, part.size,
                           part.free_stack, part.n_free, state.stats, state.loglik, m.vstats, m.cu,
                           m.cv, m.alpha, m.tau, float(m.occam), m.lambda2, m.connected,
                           m.connect_indptr, m.connect_indices, g.indptr,
                           g.indices, g.edge_ids, self.q, self.log1mq, self.p_single, p.adjacent,
                           p.floor, p.fresh, p.far, self.omit_cut, *self._scratch)
        state.log_pi += d

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        before = state.log_pi
        self.run(state, rng, np.array([temperature]))
        moved = state.log_pi != before
        return StepInfo(bool(moved), 0.0, int(moved), state.log_pi - before)
