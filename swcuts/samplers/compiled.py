"""Compiled SW-cut and Gibbs kernels for the image posterior.

The Python kernels in :mod:`.swc` and :mod:`.gibbs` work with any model
through ``model.delta``/``model.apply``. For the image model they hand whole
runs of steps to the functions here, which do the same moves with no
Python in the loop, so that every sampler is measured at compiled speed.

Two exact shortcuts make a step cheap:

* The connected regions (m and Σ area^0.9 of eq. 59) are cached per vertex
  as the root and area of its region. A component R of SW clustering is
  connected and inside one region C; moving it changes m and Σ area^0.9 by
  (pieces of C \\ R) − 1 + 1 − (regions of the new label touching R), and
  the areas accordingly. The regions of the new label come from the cache,
  the pieces of C \\ R need a search of C.
* The MH uniform is drawn before the target ratio is computed. Splitting C
  can only raise the energy by at least the amount given by C \\ R staying in
  one piece, which bounds the acceptance ratio from above; when the bound
  already rejects, the search of C is skipped. The decision is the same as
  with the exact ratio.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..models.image import label_loglik
from ..models.regions import refresh_regions
from ..partition import relabel_vertices
from .common import clear_cut_sums as _clear_cuts
from .common import cut_sums as _cuts
from .common import grow_into as _grow
from .common import sample_components

KIND_GIBBS = 0
KIND_SWC1 = 1
KIND_SWC2 = 2
KIND_CLUSTER_GIBBS = 3

# fp: float parameters
(FP_KAPPA, FP_RIDGE, FP_A0, FP_A1, FP_A2, FP_EXP, FP_W_ADJ, FP_W_FLOOR, FP_W_FRESH, FP_W_FAR,
 FP_P_SINGLE) = range(11)


@njit(cache=True)
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


@njit(cache=True)
def _pick_far(free_stack, n_free, acc_n, ell, n_pick):
    """The n_pick-th used label that is not adjacent to R and is not ell."""
    seen = 0
    for t in range(n_free, free_stack.size):
        lab = free_stack[t]
        if acc_n[lab] == 0 and lab != ell:
            if seen == n_pick:
                return lab
            seen += 1
    return -1


@njit(cache=True)
def _join(R, n_r, new_label, labels, indptr, indices, comp_root, comp_area, in_r, mark, roots, exponent):
    """Regions of ``new_label`` touching R: (count, Σ area, Σ area^e).

    A region's area is read at its name, ``comp_area[comp_root[u]]``: right
    for the per-vertex cache (the root is a vertex of its region) and for
    the region index of :mod:`.flips`."""
    for t in range(n_r):
        in_r[R[t]] = 1
    k = 0
    s = 0.0
    sp = 0.0
    for t in range(n_r):
        v = R[t]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if in_r[u] or labels[u] != new_label:
                continue
            r = comp_root[u]
            if mark[r]:
                continue
            mark[r] = 1
            roots[k] = r
            k += 1
            s += comp_area[r]
            sp += comp_area[r] ** exponent
    for t in range(k):
        mark[roots[t]] = 0
    for t in range(n_r):
        in_r[R[t]] = 0
    return k, s, sp


@njit(cache=True)
def _pieces(R, n_r, ell, labels, indptr, indices, area, in_r, mark, visited, exponent):
    """Pieces of C \\ R, C the region of label ``ell`` containing R: each
    contains a neighbour of R. Returns (count, Σ area^e)."""
    for t in range(n_r):
        in_r[R[t]] = 1
    n_pieces = 0
    sp = 0.0
    n_vis = 0
    for t in range(n_r):
        v0 = R[t]
        for p0 in range(indptr[v0], indptr[v0 + 1]):
            s = indices[p0]
            if in_r[s] or mark[s] or labels[s] != ell:
                continue
            start = n_vis
            mark[s] = 1
            visited[n_vis] = s
            n_vis += 1
            head = start
            a = 0.0
            while head < n_vis:
                v = visited[head]
                head += 1
                a += area[v]
                for p in range(indptr[v], indptr[v + 1]):
                    u = indices[p]
                    if mark[u] or in_r[u] or labels[u] != ell:
                        continue
                    mark[u] = 1
                    visited[n_vis] = u
                    n_vis += 1
            n_pieces += 1
            sp += a ** exponent
    for h in range(n_vis):
        mark[visited[h]] = 0
    for t in range(n_r):
        in_r[R[t]] = 0
    return n_pieces, sp


@njit(cache=True)
def _sum_stats(R, n_r, vstats, out):
    out[:] = 0.0
    for t in range(n_r):
        out += vstats[R[t]]
    return out


@njit(cache=True)
def _move(R, n_r, ell, new_label, labels, size, free_stack, n_free, lstats, lloglik,
          sR, ll_rest, ll_new, comp_root, comp_area, indptr, indices, area, mark, visited):
    """Apply the move R: ell -> new_label (R's statistics ``sR``; new
    log-likelihoods ``ll_rest`` of ell without R and ``ll_new``)."""
    whole = size[ell] == n_r
    if whole:
        lstats[ell, :] = 0.0
        lloglik[ell] = 0.0
    else:
        lstats[ell, :] -= sR
        lloglik[ell] = ll_rest
    lstats[new_label, :] += sR
    lloglik[new_label] = ll_new
    relabel_vertices(labels, size, free_stack, n_free, R, n_r, new_label)
    refresh_regions(labels, R[:n_r], indptr, indices, area, comp_root, comp_area, mark, visited)


@njit(cache=True)
def run_image_kernel(kind, temps, f_state, labels, size, free_stack, n_free, lstats, lloglik,
                     comp_root, comp_area, best_labels, vstats, indptr, indices, edge_ids, edges,
                     q, log1mq, area, use_family, n_channels, n_bins, fp,
                     Rbuf, in_r, mark, stack, visited, acc_log, acc_q, acc_n, adj, roots,
                     sR, tmp, tlab, tlogw, tll):
    """Run ``temps.size`` steps of a kernel on the image posterior.

    ``f_state`` = [log π, best log π] is updated in place; ``best_labels``
    receives the best labelling. Returns the number of accepted moves.
    """
    kappa = fp[FP_KAPPA]
    ridge = fp[FP_RIDGE]
    a0 = fp[FP_A0]
    a1 = fp[FP_A1]
    a2 = fp[FP_A2]
    ex = fp[FP_EXP]
    n = labels.size
    n_slots = size.size
    accepted = 0
    for step in range(temps.size):
        T = temps[step]
        # ---- choose R
        single = False
        if kind == KIND_SWC1:
            n_r = _swc1_component(labels, edges, q, Rbuf)
        else:
            v = int(np.random.random() * n)
            # A single-vertex step is an SW-cut step with every q_ij = 0:
            # R = {v} and no cut factor (the label proposal keeps using q).
            single = kind == KIND_GIBBS or (kind == KIND_SWC2 and np.random.random() < fp[FP_P_SINGLE])
            if single:
                Rbuf[0] = v
                n_r = 1
            else:
                n_r = _grow(v, labels, q, indptr, indices, edge_ids, mark, Rbuf)
        R = Rbuf
        ell = labels[R[0]]
        whole = size[ell] == n_r
        n_labels = n_slots - n_free[0]
        r_area = 0.0
        for t in range(n_r):
            r_area += area[R[t]]
        c_area = comp_area[R[0]]
        _sum_stats(R, n_r, vstats, sR)
        # Likelihood of ell without R (shared by every target).
        if whole:
            ll_rest = 0.0
            d_rest = -lloglik[ell] + a0
        else:
            tmp[:] = lstats[ell] - sR
            ll_rest = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
            d_rest = ll_rest - lloglik[ell]
        n_adj = _cuts(R, n_r, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log, acc_q, acc_n, adj)

        if kind == KIND_SWC1 or kind == KIND_SWC2:
            # ---- label proposal over targets (see common.TargetProposal)
            w_adj = fp[FP_W_ADJ]
            w_floor = fp[FP_W_FLOOR]
            w_fresh = fp[FP_W_FRESH]
            w_far = fp[FP_W_FAR]
            n_exist = n_labels - (1 if whole else 0)
            total = w_fresh + (n_exist - n_adj) * w_far
            for t in range(n_adj):
                lab = adj[t]
                total += w_adj * (w_floor + acc_q[lab] / acc_n[lab])
            if whole:
                w_cur = w_fresh
            elif acc_n[ell] > 0:
                w_cur = w_adj * (w_floor + acc_q[ell] / acc_n[ell])
            else:
                w_cur = w_far
            avail = total - w_cur
            u = np.random.random() * avail
            new_label = -1
            w_new = 0.0
            for t in range(n_adj):
                lab = adj[t]
                if lab == ell:
                    continue
                w = w_adj * (w_floor + acc_q[lab] / acc_n[lab])
                if u < w:
                    new_label = lab
                    w_new = w
                    break
                u -= w
            if new_label < 0:
                if (not whole) and u < w_fresh:
                    new_label = free_stack[n_free[0] - 1]
                    w_new = w_fresh
                else:
                    n_far = n_exist - n_adj - (0 if (whole or acc_n[ell] > 0) else 1)
                    if n_far > 0:
                        new_label = _pick_far(free_stack, n_free[0], acc_n, ell, int(np.random.random() * n_far))
                        w_new = w_far
            if new_label < 0:
                _clear_cuts(adj, n_adj, acc_log, acc_q, acc_n)
                continue
            log_prop = (math.log(w_cur) - math.log(total - w_new)) - (math.log(w_new) - math.log(avail))
            cut = 0.0 if single else acc_log[new_label] - acc_log[ell]
            _clear_cuts(adj, n_adj, acc_log, acc_q, acc_n)
            # ---- Δ log π, with the MH uniform drawn first
            fresh = size[new_label] == 0
            tmp[:] = lstats[new_label] + sR
            ll_new = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
            d = d_rest + ll_new - lloglik[new_label] - (a0 if fresh else 0.0)
            k_j, s_j, sp_j = _join(R, n_r, new_label, labels, indptr, indices, comp_root, comp_area,
                                   in_r, mark, roots, ex)
            d -= a1 * (1 - k_j) + a2 * ((r_area + s_j) ** ex - sp_j)
            # Leaving C: pieces >= 1 unless R = C, and Σ pieces^e >= (c - r)^e.
            if c_area - r_area > 0.5:  # areas are whole pixel counts
                d_leave_ub = -a2 * ((c_area - r_area) ** ex - c_area ** ex)
            else:
                d_leave_ub = a1 + a2 * c_area ** ex
            log_u = math.log(np.random.random())
            threshold = T * (log_u - cut - log_prop)
            if d + d_leave_ub <= threshold:
                continue
            if c_area - r_area > 0.5:  # areas are whole pixel counts
                k_p, sp_p = _pieces(R, n_r, ell, labels, indptr, indices, area, in_r, mark,
                                    visited, ex)
                d -= a1 * (k_p - 1) + a2 * (sp_p - c_area ** ex)
            else:
                d += a1 + a2 * c_area ** ex
            if d <= threshold:
                continue
            _move(R, n_r, ell, new_label, labels, size, free_stack, n_free, lstats, lloglik,
                  sR, ll_rest, ll_new, comp_root, comp_area, indptr, indices, area, mark, visited)
        else:
            # ---- Gibbs over every target (single site, or cluster Gibbs with γ_k)
            if whole:
                d_leave = a1 + a2 * c_area ** ex
            else:
                k_p, sp_p = _pieces(R, n_r, ell, labels, indptr, indices, area, in_r, mark,
                                    visited, ex)
                d_leave = -(a1 * (k_p - 1) + a2 * (sp_p - c_area ** ex))
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
                    if fresh:
                        tmp[:] = sR
                        ll_old = 0.0
                    else:
                        tmp[:] = lstats[lab] + sR
                        ll_old = lloglik[lab]
                    ll_new = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
                    d = d_rest + d_leave + ll_new - ll_old - (a0 if fresh else 0.0)
                    if fresh:
                        d -= a1 + a2 * r_area ** ex
                    else:
                        k_j, s_j, sp_j = _join(R, n_r, lab, labels, indptr, indices, comp_root,
                                               comp_area, in_r, mark, roots, ex)
                        d -= a1 * (1 - k_j) + a2 * ((r_area + s_j) ** ex - sp_j)
                    tll[t] = d
                    tlogw[t] = g + d / T
                if tlogw[t] > best_w:
                    best_w = tlogw[t]
            _clear_cuts(adj, n_adj, acc_log, acc_q, acc_n)
            z = 0.0
            for t in range(n_t):
                tlogw[t] = math.exp(tlogw[t] - best_w)
                z += tlogw[t]
            u = np.random.random() * z
            pick = n_t - 1
            for t in range(n_t):
                if u < tlogw[t]:
                    pick = t
                    break
                u -= tlogw[t]
            if pick == cur:
                continue
            new_label = tlab[pick]
            if whole and new_label == ell:
                continue
            if size[new_label] == 0:
                new_label = free_stack[n_free[0] - 1]
                tmp[:] = sR
            else:
                tmp[:] = lstats[new_label] + sR
            ll_new = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
            d = tll[pick]
            _move(R, n_r, ell, new_label, labels, size, free_stack, n_free, lstats, lloglik,
                  sR, ll_rest, ll_new, comp_root, comp_area, indptr, indices, area, mark, visited)
        accepted += 1
        f_state[0] += d
        if f_state[0] > f_state[1] + 1e-9:
            f_state[1] = f_state[0]
            best_labels[:] = labels
    return accepted


class CompiledWorkspace:
    """Scratch arrays of :func:`run_image_kernel` (zero between calls)."""

    def __init__(self, n_vertices, n_slots, n_stats):
        n = n_vertices
        self.Rbuf = np.empty(n, np.int64)
        self.in_r = np.zeros(n, np.int8)
        self.mark = np.zeros(n, np.int8)
        self.stack = np.empty(n, np.int64)
        self.visited = np.empty(n, np.int64)
        self.acc_log = np.zeros(n_slots)
        self.acc_q = np.zeros(n_slots)
        self.acc_n = np.zeros(n_slots, np.int64)
        self.adj = np.empty(n_slots, np.int64)
        self.roots = np.empty(n, np.int64)
        self.sR = np.empty(n_stats)
        self.tmp = np.empty(n_stats)
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
    ws = getattr(state, "compiled_ws", None)
    if ws is None:
        ws = state.compiled_ws = CompiledWorkspace(part.n_vertices, part.size.size, model.vstats.shape[1])
    if best_labels is None:
        best_labels = part.labels.copy()
    f_state = np.array([state.log_pi, max(state.log_pi, best_log_pi)])
    fp = np.array([model.kappa, model.ridge, model.a0, model.a1, model.a2, model.exponent,
                   proposal.adjacent, proposal.floor, proposal.fresh, proposal.far,
                   p_single])
    g = model.graph
    acc = run_image_kernel(kind, np.ascontiguousarray(temps, dtype=np.float64), f_state, part.labels,
                           part.size, part.free_stack, part.n_free, state.stats, state.loglik,
                           state.comp_root, state.comp_area, best_labels, model.vstats, g.indptr,
                           g.indices, g.edge_ids, g.edges, q, log1mq, model.area, model.use_family,
                           model.n_channels, model.n_bins, fp, ws.Rbuf, ws.in_r, ws.mark, ws.stack,
                           ws.visited, ws.acc_log, ws.acc_q, ws.acc_n, ws.adj, ws.roots, ws.sR, ws.tmp,
                           ws.tlab, ws.tlogw, ws.tll)
    state.log_pi = float(f_state[0])
    return int(acc), float(f_state[1]), best_labels
