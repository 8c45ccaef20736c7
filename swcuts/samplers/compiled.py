"""Compiled SW-cut and Gibbs kernels for the image posterior.

The Python kernels in :mod:`.swc` and :mod:`.gibbs` work with any model
through ``model.delta``/``model.apply``. For the image model they hand whole
runs of steps to the functions here, which do the same moves with no
Python in the loop, so that every sampler is measured at compiled speed.
They choose R, propose and decide; every term of Δ log π, its bound and
the update of the state are the model's, in :mod:`swcuts.models.image_kernels`.

Two exact shortcuts make a step cheap:

* The connected regions (m and Σ area^0.9 of eq. 59) are cached per vertex
  as the root and area of its region. A component R of SW clustering is
  connected and inside one region C; moving it changes m and Σ area^0.9 by
  (pieces of C \\ R) − 1 + 1 − (regions of the new label touching R), and
  the areas accordingly. The regions of the new label come from the cache,
  the pieces of C \\ R need a search of C.
  Within a run the cache is a region index (see :func:`~swcuts.models.image_kernels.move_regions`): a
  move renames R and the smaller sides only; the search of C \\ R grows
  from all of R's neighbours at once and stops when they have met
  (:func:`~swcuts.models.image_kernels.pieces_interleaved`), so its cost is that of the smaller pieces.
* The MH uniform is drawn before the target ratio is computed. Splitting C
  can only raise the energy by at least the amount given by C \\ R staying in
  one piece, which bounds the acceptance ratio from above; when the bound
  already rejects, the search of C is skipped. The decision is the same as
  with the exact ratio.
"""

from __future__ import annotations


import numpy as np
from numba import njit

from swcuts.models.boundary import boundary_delta
from swcuts.models.image_kernels import (
    FP_A0, FP_A1, FP_A2, FP_BOUNDARY, FP_EXP, FP_KAPPA, FP_RIDGE, N_MODEL_PARAMS, REG_AREA,
    REG_RID, label_join_delta, label_leave_delta, label_loglik, leave_regions, load_regions,
    move_regions, region_join_delta, relabel_delta_bounded, stats_with,
    stats_without, store_regions)
from swcuts.models.regions import touching_regions
from swcuts.models.vertex_stats import sum_stats
from swcuts._numba.compiled_only import compiled_only
from swcuts._numba.primitives import draw_log_weights, mh_threshold
from swcuts.samplers.common import clear_cut_sums as _clear_cuts
from swcuts.samplers.common import cut_sums as _cuts
from swcuts.samplers.common import grow_into as _grow
from swcuts.samplers.common import RelabelScratch, propose_target, sample_components

KIND_GIBBS = 0
KIND_SWC1 = 1
KIND_SWC2 = 2
KIND_CLUSTER_GIBBS = 3

# fp: the model's parameters (ImageModel.kernel_params), then the sampler's
FP_W_ADJ, FP_W_FLOOR, FP_W_FRESH, FP_W_FAR, FP_P_SINGLE = range(N_MODEL_PARAMS, N_MODEL_PARAMS + 5)


@compiled_only
def _swc1_component(labels, edges, q, Rbuf):
    """Sample every edge, then pick one connected component uniformly."""
    comp, n_comp = sample_components(labels, edges, q)
    k = int(np.random.random() * n_comp)
    n_r = 0
    for v in range(labels.size):
        if comp[v] == k:
            Rbuf[n_r] = v
            n_r += 1
    return n_r


@njit(cache=True, inline="always")
def _choose_local(kind, labels, q, indptr, indices, edge_ids, mark, Rbuf, p_single):
    """R of a local step into ``Rbuf``: a vertex v drawn uniformly, then
    R = {v} (Gibbs; SWC-2 with probability ``p_single``) or the Wolff
    component of v. A single-vertex step is an SW-cut step with every
    q_ij = 0: no cut factor (the label proposal keeps using q).
    Returns (n_r, single)."""
    v = int(np.random.random() * labels.size)
    single = kind == KIND_GIBBS or (kind == KIND_SWC2 and np.random.random() < p_single)
    if single:
        Rbuf[0] = v
        return 1, True
    return _grow(v, labels, q, indptr, indices, edge_ids, mark, Rbuf), False


@njit(cache=True, inline="always")
def _book(d, f_state, labels, best_labels):
    """Book a move (Δ log π ``d``) in ``f_state`` = [log π, best log π] and
    copy the labels to ``best_labels`` when they are the best so far."""
    f_state[0] += d
    if f_state[0] > f_state[1] + 1e-9:
        f_state[1] = f_state[0]
        for v in range(labels.size):  # a loop: ``best_labels[:] = labels`` compiles shape-error formatting
            best_labels[v] = labels[v]


# The runners: ``temps.size`` steps of a kind. Each compiles only the moves
# of its kinds (a first run of the default sampler compiles run_swc alone,
# without SWC-1's clustering); both take the same arguments, so that
# run_compiled calls either. nogil: chains of sample_posterior run in
# threads; no_cfunc_wrapper: only Python calls them (a C-callable wrapper
# would cost a first run compile time for nothing).
@njit(cache=True, nogil=True, no_cfunc_wrapper=True)
def run_swc(kind, temps, f_state, labels, size, free_stack, n_free, lstats, lloglik, regions,
            best_labels, vsrc, indptr, indices, edge_ids, edges, q, log1mq, area, bw, use_family,
            n_channels, n_bins, fp, Rbuf, in_r, mark, stack, acc_log, acc_q, acc_n, adj, roots,
            sR, tmp, tlab, tlogw, tll, pws, comp_root, comp_area):
    """SW-cut steps: R a component of SW clustering of the whole graph
    (``KIND_SWC1``) or a local step (``KIND_SWC2``, :func:`_choose_local`);
    then the label proposal over targets, the cut factor, the bound-first MH
    decision and the move. ``edges`` is the graph's edge list for SWC-1 and
    None otherwise: numba then compiles the SWC-1 branch away. Returns the
    number of accepted moves. The state's per-vertex region cache
    (``comp_root``, ``comp_area``) is loaded into the region index
    ``regions`` first and stored back at the end."""
    load_regions(comp_root, comp_area, regions)
    n_slots = size.size
    accepted = 0
    for step in range(temps.size):
        T = temps[step]
        single = False
        if edges is not None:  # KIND_SWC1
            n_r = _swc1_component(labels, edges, q, Rbuf)
        else:
            n_r, single = _choose_local(kind, labels, q, indptr, indices, edge_ids, mark, Rbuf,
                                        fp[FP_P_SINGLE])
        R = Rbuf
        ell = labels[R[0]]
        whole = size[ell] == n_r
        n_adj = _cuts(R, n_r, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log, acc_q,
                      acc_n, adj)
        new_label, log_prop = propose_target(ell, whole, n_slots - n_free[0], adj, n_adj,
                                             acc_q, acc_n, free_stack, n_free[0], fp[FP_W_ADJ],
                                             fp[FP_W_FLOOR], fp[FP_W_FRESH], fp[FP_W_FAR], True)
        if new_label < 0:
            _clear_cuts(adj, n_adj, acc_log, acc_q, acc_n)
            continue
        cut = 0.0 if single else acc_log[new_label] - acc_log[ell]
        _clear_cuts(adj, n_adj, acc_log, acc_q, acc_n)
        threshold = mh_threshold(T, cut + log_prop)
        d, ll_rest, ll_new = relabel_delta_bounded(
            R, n_r, ell, new_label, threshold, labels, size, lstats, lloglik, regions[REG_RID],
            regions[REG_AREA], vsrc, indptr, indices, area, bw, use_family, n_channels, n_bins, fp,
            in_r, mark, roots, sR, tmp, pws)
        if d != d:  # rejected
            continue
        move_regions(R, n_r, ell, new_label, labels, size, free_stack, n_free, lstats, lloglik,
                     sR, ll_rest, ll_new, regions, indptr, indices, area, in_r, pws, stack)
        accepted += 1
        _book(d, f_state, labels, best_labels)
    if accepted or temps.size == 0:
        store_regions(regions, comp_root, comp_area)
    return accepted


@njit(cache=True, nogil=True, no_cfunc_wrapper=True)
def run_gibbs(kind, temps, f_state, labels, size, free_stack, n_free, lstats, lloglik, regions,
              best_labels, vsrc, indptr, indices, edge_ids, edges, q, log1mq, area, bw, use_family,
              n_channels, n_bins, fp, Rbuf, in_r, mark, stack, acc_log, acc_q, acc_n, adj, roots,
              sR, tmp, tlab, tlogw, tll, pws, comp_root, comp_area):
    """Single-site Gibbs (``KIND_GIBBS``) or cluster Gibbs
    (``KIND_CLUSTER_GIBBS``) steps: R's label drawn over every target, with
    the cut factors γ_k for cluster Gibbs. Returns the number of moves.
    The region cache is loaded and stored as in :func:`run_swc`."""
    load_regions(comp_root, comp_area, regions)
    rid = regions[REG_RID]
    rarea = regions[REG_AREA]
    kappa = fp[FP_KAPPA]
    ridge = fp[FP_RIDGE]
    a0 = fp[FP_A0]
    a1 = fp[FP_A1]
    a2 = fp[FP_A2]
    ex = fp[FP_EXP]
    n_slots = size.size
    accepted = 0
    for step in range(temps.size):
        n_r, single = _choose_local(kind, labels, q, indptr, indices, edge_ids, mark, Rbuf, 0.0)
        # One Gibbs draw of R's label over every target (single-site Gibbs, or
        # cluster Gibbs with the cut factors γ_k), the move applied unless R
        # keeps its label. Written in the loop: as a function taking ~40
        # arrays per call it cost single-site Gibbs 30 % of its steps.
        R = Rbuf
        T = temps[step]
        ell = labels[R[0]]
        whole = size[ell] == n_r
        n_adj = _cuts(R, n_r, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log, acc_q,
                      acc_n, adj)
        sum_stats(R, n_r, vsrc, n_channels, n_bins, sR)
        ll_rest = 0.0
        if not whole:
            stats_without(lstats, ell, sR, tmp)
            ll_rest = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
        d_rest = label_leave_delta(ll_rest, lloglik[ell], whole, a0)
        r_area = 0.0
        for t in range(n_r):
            r_area += area[R[t]]
        d_rest += leave_regions(R, n_r, ell, labels, indptr, indices, area, r_area,
                                rarea[rid[R[0]]], fp, in_r, pws)
        n_t = 0
        cur = -1
        for t_used in range(n_free[0], n_slots):
            lab = free_stack[t_used]
            if whole and lab == ell:
                continue
            tlab[n_t] = lab
            if lab == ell:
                cur = n_t
            n_t += 1
        fresh_lab = ell if whole else free_stack[n_free[0] - 1]
        tlab[n_t] = fresh_lab
        if whole:
            cur = n_t
        n_t += 1
        best_w = -np.inf
        for t in range(n_t):
            lab = tlab[t]
            g = acc_log[lab] if (kind == KIND_CLUSTER_GIBBS and acc_n[lab] > 0 and lab != ell) else 0.0
            if t == cur:
                tlogw[t] = 0.0
                tll[t] = 0.0
                if kind == KIND_CLUSTER_GIBBS and acc_n[ell] > 0 and not whole:
                    tlogw[t] = acc_log[ell]
            else:
                fresh = size[lab] == 0 or lab == ell
                ll_old = stats_with(lstats, lloglik, lab, fresh, sR, tmp)
                ll_new = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
                d = d_rest + label_join_delta(ll_new, ll_old, fresh, a0)
                k_j = 0
                s_j = 0.0
                sp_j = 0.0
                if not fresh:
                    k_j, s_j, sp_j = touching_regions(R, n_r, lab, labels, indptr, indices,
                                                      rid, rarea, in_r, mark, roots,
                                                      ex)
                d += region_join_delta(k_j, s_j, sp_j, r_area, a1, a2, ex)
                d += boundary_delta(fp[FP_BOUNDARY], R, n_r, lab, labels, indptr, indices,
                                    bw, in_r)
                tll[t] = d
                tlogw[t] = g + d / T
            if tlogw[t] > best_w:
                best_w = tlogw[t]
        _clear_cuts(adj, n_adj, acc_log, acc_q, acc_n)
        pick = draw_log_weights(tlogw, n_t, best_w)
        if pick == cur:
            continue
        new_label = tlab[pick]
        if whole and new_label == ell:
            continue
        if size[new_label] == 0:
            new_label = free_stack[n_free[0] - 1]
        stats_with(lstats, lloglik, new_label, size[new_label] == 0, sR, tmp)
        ll_new = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
        move_regions(R, n_r, ell, new_label, labels, size, free_stack, n_free, lstats, lloglik,
                     sR, ll_rest, ll_new, regions, indptr, indices, area, in_r, pws, stack)
        accepted += 1
        _book(tll[pick], f_state, labels, best_labels)
    if accepted or temps.size == 0:
        store_regions(regions, comp_root, comp_area)
    return accepted


#: The runner of each kind.
RUNNERS = {KIND_SWC1: run_swc, KIND_SWC2: run_swc, KIND_GIBBS: run_gibbs,
           KIND_CLUSTER_GIBBS: run_gibbs}


class CompiledWorkspace(RelabelScratch):
    """Scratch arrays of the runners (:data:`RUNNERS`; zero between calls)."""

    def __init__(self, n_vertices, n_slots, n_stats):
        super().__init__(n_vertices, n_slots, n_stats)
        self.Rbuf = np.empty(n_vertices, np.int64)
        self.stack = np.empty(n_vertices, np.int64)
        self.acc_log = np.zeros(n_slots)
        self.adj = np.empty(n_slots, np.int64)
        self.tlab = np.empty(n_slots + 1, np.int64)
        self.tlogw = np.empty(n_slots + 1)
        self.tll = np.empty(n_slots + 1)


def run_compiled(kind, model, state, q, log1mq, proposal, temps, best_labels=None,
                 best_log_pi=-np.inf, p_single=0.0):
    """Run ``len(temps)`` compiled steps on an image-model state.

    ``best_labels`` is overwritten only by states better than both
    ``best_log_pi`` and the current state. Returns (accepted moves, best
    log π seen, best labels array).
    """
    part = state.partition
    ws = state.workspace(CompiledWorkspace, part.n_vertices, part.size.size, model.n_stats)
    if best_labels is None:
        best_labels = part.labels.copy()
    f_state = np.array([state.log_pi, max(state.log_pi, best_log_pi)])
    fp = model.kernel_params(5)
    fp[FP_W_ADJ], fp[FP_W_FLOOR] = proposal.adjacent, proposal.floor
    fp[FP_W_FRESH], fp[FP_W_FAR], fp[FP_P_SINGLE] = proposal.fresh, proposal.far, p_single
    g = model.graph
    temps = np.ascontiguousarray(temps, dtype=np.float64)
    edges = g.edges if kind == KIND_SWC1 else None  # only SWC-1 compiles and reads them
    acc = RUNNERS[kind](kind, temps, f_state, part.labels, part.size, part.free_stack, part.n_free,
                        state.stats, state.loglik, ws.regions, best_labels, model.vsrc, g.indptr,
                        g.indices, g.edge_ids, edges, q, log1mq, model.area, model.boundary_csr,
                        model.use_family, model.n_channels, model.n_bins, fp, ws.Rbuf, ws.in_r,
                        ws.mark, ws.stack, ws.acc_log, ws.acc_q, ws.acc_n, ws.adj, ws.roots, ws.sR,
                        ws.tmp, ws.tlab, ws.tlogw, ws.tll, ws.pws, state.comp_root, state.comp_area)
    state.log_pi = float(f_state[0])
    return int(acc), float(f_state[1]), best_labels
