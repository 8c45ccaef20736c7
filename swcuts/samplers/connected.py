"""SW cuts under the constraint that every label is one connected region
(the levels below the top of :mod:`swcuts.samplers.multilevel`).

:func:`connected_step` is the move, :func:`run_connected` a run of moves in
attention windows as :mod:`.multigrid`'s, :class:`ConnectedMultigrid` the
kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image_kernels import join_delta, leave_bound
from swcuts.models.regions import pieces_interleaved
from swcuts.models.partition import relabel_vertices
from swcuts._numba.primitives import mh_threshold
from swcuts.samplers.common import StepInfo, clear_cut_sums, cut_sums, propose_target
from swcuts.samplers.flips import FW_ADJ, FW_FLOOR, FW_FRESH, model_params
from swcuts.samplers.multigrid import Multigrid, window_component

__all__ = ["ConnectedMultigrid", "ConnectedWorkspace", "connected_step", "run_connected",
           "label_regions", "restrict_graph"]


# Below the top every label is one connected region of the level's graph,
# so the labels are their own region index: the region of v is labels[v]
# and its area larea[labels[v]] (the form ``comp_area[comp_root[v]]`` that
# :func:`~swcuts.models.image_kernels.join_delta` reads). A move renames R only, with no search
# of the regions it joins or leaves beyond the check that what R leaves
# stays connected.
@njit(cache=True)
def connected_step(n_r, T, labels, size, free_stack, n_free, lstats, lloglik, larea, vsrc, indptr,
                   indices, edge_ids, q, log1mq, area, bw, use_family, n_channels, n_bins, fp, vy, vx,
                   win, R, in_r, mark, roots, sR, tmp, acc_q, acc_n, acc_log, adj, pws):
    """Relabel the connected set R = ``R[:n_r]`` (grown in the window, inside
    one label) under π · 1[every label one connected region]: an SW-cut
    move (Props. 9-10) with Δ log π returned if accepted, NaN if rejected
    (the state is then unchanged).

    The label proposal is that of :class:`.common.TargetProposal` restricted
    to the moves that can stay in the constrained space: a label adjacent
    to R (weight ``adjacent * (floor + mean q over the cut)``) or a fresh
    label (``fresh``); the current one is never proposed. A label not
    adjacent to R would get a second region (target 0), so it is not
    proposed. Every label adjacent to R stays adjacent after the move (only
    R changes), the current label of R is adjacent to R unless R is all of
    it (then it is "fresh"), so the normaliser is the same in X and X' and
    the reverse probability is computable. Partitions are the target (one
    fresh option, as :mod:`.compiled`). A move that would leave the rest of
    R's label in pieces is rejected (target 0). Δ log π is
    :func:`~swcuts.models.image_kernels.join_delta`'s, with the boundary
    term of the "contrast" posterior (``bw``: its weights in CSR order).
    """
    ell = labels[R[0]]
    whole = size[ell] == n_r
    # Labels adjacent to R: sum of q and number of edges (all edges), and
    # Σ log(1 − q) over the edges with both ends in the window (Prop. 9).
    n_adj = cut_sums(R, n_r, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log, acc_q,
                     acc_n, adj, vy, vx, win)
    fresh_ok = whole or n_free[0] > 0
    if not whole and acc_n[ell] == 0:  # R's label not connected: not a state of the space
        clear_cut_sums(adj, n_adj, acc_log, acc_q, acc_n)
        return np.nan
    new, log_prop = propose_target(ell, whole, 0, adj, n_adj, acc_q, acc_n, free_stack, n_free[0],
                                   fp[FW_ADJ], fp[FW_FLOOR], fp[FW_FRESH] if fresh_ok else 0.0,
                                   0.0, False)
    cut = 0.0
    if new >= 0:
        cut = acc_log[new] - acc_log[ell]
    clear_cut_sums(adj, n_adj, acc_log, acc_q, acc_n)
    if new < 0:  # nowhere to go (or rounding ran past the last weight)
        return np.nan
    # MH uniform first; C's own terms are exact when C \ R stays in one
    # piece (the bound of image_kernels.leave_bound), the only case allowed.
    threshold = mh_threshold(T, log_prop + cut)
    d, ll_rest, ll_new, r_area, c_area = join_delta(
        R, n_r, ell, new, labels, size, lstats, lloglik, labels, larea, vsrc, indptr, indices,
        area, bw, use_family, n_channels, n_bins, fp, in_r, mark, roots, sR, tmp)
    d += leave_bound(r_area, c_area, fp)
    if d <= threshold:
        return np.nan
    if not whole:
        owner, queue, parent, count, garea = pws
        k_p, _ = pieces_interleaved(R, n_r, ell, labels, indptr, indices, area, c_area - r_area,
                                    1.0, in_r, owner, queue, parent, count, garea)
        if k_p > 1:
            return np.nan  # the rest of ell would fall apart
    if whole:
        lstats[ell, :] = 0.0
        lloglik[ell] = 0.0
        larea[ell] = 0.0
    else:
        lstats[ell, :] -= sR
        lloglik[ell] = ll_rest
        larea[ell] -= r_area
    lstats[new, :] += sR
    lloglik[new] = ll_new
    larea[new] += r_area
    relabel_vertices(labels, size, free_stack, n_free, R, n_r, new)
    return d


@njit(cache=True)
def run_connected(temps, sizes, cdf, fixed, h, w, pix2v, vy, vx, f_state, labels, size,
                  free_stack, n_free, lstats, lloglik, larea, vsrc, indptr, indices, edge_ids, q,
                  qr, qd, log1mq, area, bw, use_family, n_channels, n_bins, fp, win, Rbuf, in_r,
                  mark, roots, sR, tmp, acc_q, acc_n, acc_log, adj, pws):
    """Run ``temps.size`` constrained multigrid steps; returns the number
    accepted and adds the change of log π to ``f_state[0]``.

    Windows as :func:`.multigrid.run_multigrid` (side ``sizes[k]`` with
    probability ``cdf[k] - cdf[k-1]``, or the fixed ``win``); ``qr``, ``qd``:
    :func:`.multigrid.lattice_q` (empty: grow over the CSR lists).
    """
    accepted = 0
    for step in range(temps.size):
        n_r = window_component(fixed, sizes, cdf, h, w, pix2v, vy, vx, win, labels, q, qr, qd,
                               indptr, indices, edge_ids, mark, Rbuf)
        if n_r == 0:
            continue
        d = connected_step(n_r, temps[step], labels, size, free_stack, n_free, lstats, lloglik,
                           larea, vsrc, indptr, indices, edge_ids, q, log1mq, area, bw, use_family,
                           n_channels, n_bins, fp, vy, vx, win, Rbuf, in_r, mark, roots, sR, tmp,
                           acc_q, acc_n, acc_log, adj, pws)
        if d == d:
            accepted += 1
            f_state[0] += d
    return accepted


@njit(cache=True)
def label_regions(labels, larea, comp_root, comp_area):
    """The per-vertex region cache of a state whose labels are connected:
    root = first vertex of the label, area = the label's (``larea``)."""
    rep = np.full(larea.size, -1, np.int64)
    for v in range(labels.size):
        lab = labels[v]
        if rep[lab] < 0:
            rep[lab] = v
        comp_root[v] = rep[lab]
        comp_area[v] = larea[lab]


@njit(cache=True)
def _filter_csr(indptr, indices, edge_ids, new_id):
    """CSR lists keeping the edges with ``new_id >= 0`` (renamed to it), in
    their order."""
    n = indptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    k = 0
    for p in range(indices.size):
        if new_id[edge_ids[p]] >= 0:
            k += 1
    out_idx = np.empty(k, np.int64)
    out_eid = np.empty(k, np.int64)
    k = 0
    for v in range(n):
        for p in range(indptr[v], indptr[v + 1]):
            e = new_id[edge_ids[p]]
            if e >= 0:
                out_idx[k] = indices[p]
                out_eid[k] = e
                k += 1
        out_ptr[v + 1] = k
    return out_ptr, out_idx, out_eid


def restrict_graph(graph, keep):
    """``graph.subgraph(keep)`` (the same vertices and pixels, the edges
    where ``keep``, renumbered in order) by filtering the CSR lists."""
    keep = np.asarray(keep, dtype=bool)
    new_id = np.cumsum(keep) - 1
    new_id[~keep] = -1
    indptr, indices, edge_ids = _filter_csr(graph.indptr, graph.indices, graph.edge_ids, new_id)
    return RegionGraph(n_vertices=graph.n_vertices, edges=graph.edges[keep],
                       boundary_length=graph.boundary_length[keep], indptr=indptr, indices=indices,
                       edge_ids=edge_ids, pixel_count=graph.pixel_count, pixel_ptr=graph.pixel_ptr,
                       pixel_index=graph.pixel_index, shape=graph.shape)


class ConnectedWorkspace:
    """Scratch arrays of :func:`run_connected` (zero or −1 between calls)."""

    def __init__(self, n_vertices, n_slots, n_stats):
        n = n_vertices
        self.Rbuf = np.empty(n, np.int64)
        self.in_r = np.zeros(n, np.int8)
        self.mark = np.zeros(max(n, n_slots), np.int8)
        self.roots = np.empty(max(n, n_slots), np.int64)
        self.sR = np.empty(n_stats)
        self.tmp = np.empty(n_stats)
        self.acc_q = np.zeros(n_slots)
        self.acc_n = np.zeros(n_slots, np.int64)
        self.acc_log = np.zeros(n_slots)
        self.adj = np.empty(max(n, n_slots), np.int64)
        self.larea = np.zeros(n_slots)
        # pieces_interleaved: owner, queue, parent, count, area of searches
        self.pws = (-np.ones(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
                    np.zeros(n, np.int64), np.zeros(n))


class ConnectedMultigrid(Multigrid):
    """Multigrid SW cuts for π restricted to labellings whose every label is
    one connected region of the model's graph (the levels below the top).

    Same parameters as :class:`~swcuts.samplers.multigrid.Multigrid`
    (window sides drawn with ``window_weights``, by default ∝ 1/side²);
    with ``window`` covering the image it is a plain SW-cut kernel
    (vertices drawn in proportion to their pixels). The state must start
    connected; it stays so. See :func:`connected_step` for the move.
    """

    name = "multigrid-connected"

    def run(self, state, rng, temperatures):
        """Run one step per temperature; returns the number accepted."""
        part = state.partition
        n_slots = part.size.size
        ws = state.workspace(ConnectedWorkspace, part.n_vertices, n_slots, self.model.n_stats)
        f_state = np.array([state.log_pi])
        m, g = self.model, self.graph
        h, w = g.shape
        fixed, win = self._window()
        temps = np.ascontiguousarray(temperatures, dtype=np.float64)
        larea = ws.larea
        larea[:] = np.bincount(part.labels, weights=m.area, minlength=n_slots)
        acc = run_connected(temps, self.sizes, self.size_cdf, fixed, h, w, self.pix2v, self.vy,
                            self.vx, f_state, part.labels, part.size, part.free_stack, part.n_free,
                            state.stats, state.loglik, larea, self.vsrc, g.indptr, g.indices,
                            g.edge_ids, self.q, self.qr, self.qd, self.log1mq, m.area,
                            m.boundary_csr, m.use_family,
                            m.n_channels, m.n_bins, model_params(m, self.proposal), win, ws.Rbuf,
                            ws.in_r, ws.mark, ws.roots, ws.sR, ws.tmp, ws.acc_q, ws.acc_n,
                            ws.acc_log, ws.adj, ws.pws)
        if acc:
            label_regions(part.labels, larea, state.comp_root, state.comp_area)
        state.log_pi = float(f_state[0])
        return int(acc)

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        before = state.log_pi
        acc = self.run(state, rng, np.array([temperature]))
        return StepInfo(bool(acc), 0.0, int(acc), state.log_pi - before)
