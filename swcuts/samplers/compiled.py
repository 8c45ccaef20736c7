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
  Within a run the cache is a region index (see :func:`move_regions`): a
  move renames R and the smaller sides only; the search of C \\ R grows
  from all of R's neighbours at once and stops when they have met
  (:func:`pieces_interleaved`), so its cost is that of the smaller pieces.
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
from ..models.vertex_stats import sum_stats
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
def _find(parent, g):
    while parent[g] != g:
        parent[g] = parent[parent[g]]
        g = parent[g]
    return g


@njit(cache=True)
def _search_pieces(R, n_r, ell, labels, indptr, indices, area, in_r, owner, queue, parent, count,
                   garea):
    """The interleaved search of :func:`pieces_interleaved`; leaves its
    groups in place (``owner`` of every queued vertex, union-find ``parent``,
    ``count`` of queued but unvisited vertices, ``garea``) for the caller to
    read and clear. Returns (groups, queued vertices, pieces found).
    ``in_r`` marks R on entry."""
    tail = 0
    n_groups = 0
    for t in range(n_r):
        v = R[t]
        for p in range(indptr[v], indptr[v + 1]):
            s = indices[p]
            if in_r[s] or owner[s] >= 0 or labels[s] != ell:
                continue
            owner[s] = n_groups
            parent[n_groups] = n_groups
            count[n_groups] = 1
            garea[n_groups] = area[s]
            n_groups += 1
            queue[tail] = s
            tail += 1
    n_roots = n_groups
    growing = n_groups
    head = 0
    while head < tail and n_roots > 1 and growing > 1:
        v = queue[head]
        head += 1
        g = _find(parent, owner[v])
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if in_r[u] or labels[u] != ell:
                continue
            if owner[u] < 0:
                owner[u] = g
                count[g] += 1
                garea[g] += area[u]
                queue[tail] = u
                tail += 1
            else:
                h = _find(parent, owner[u])
                if h != g:
                    # Two searches met: one piece. Merge h into g.
                    growing -= 1 if count[h] > 0 else 0
                    parent[h] = g
                    count[g] += count[h]
                    garea[g] += garea[h]
                    n_roots -= 1
        count[g] -= 1
        if count[g] == 0:
            growing -= 1
    return n_groups, tail, n_roots


@njit(cache=True)
def pieces_interleaved(R, n_r, ell, labels, indptr, indices, area, rest_area, exponent, in_r,
                       owner, queue, parent, count, garea):
    """Pieces of C \\ R (C the region of label ``ell`` holding the connected
    set R; ``rest_area`` = area of C \\ R): (count, Σ area^exponent).

    Every piece holds a neighbour of R. One breadth-first search grows from
    all those neighbours at once, merging searches that meet; it stops when
    all have met (C \\ R is one piece, the common case) or when at most one
    search is still growing (its area is what the others leave). The cost
    is that of the smaller pieces, not of C. ``owner`` must be −1 on entry
    (and is again on return); ``in_r`` zero.
    """
    for t in range(n_r):
        in_r[R[t]] = 1
    n_groups, tail, n_roots = _search_pieces(R, n_r, ell, labels, indptr, indices, area, in_r,
                                             owner, queue, parent, count, garea)
    if n_roots == 1:
        n_pieces = 1
        sp = rest_area ** exponent
    else:
        n_pieces = 0
        sp = 0.0
        done = 0.0
        open_root = -1
        for gi in range(n_groups):
            if parent[gi] != gi:
                continue
            n_pieces += 1
            if count[gi] == 0:
                sp += garea[gi] ** exponent
                done += garea[gi]
            else:
                open_root = gi
        if open_root >= 0:
            sp += max(rest_area - done, 0.0) ** exponent
    for t in range(tail):
        owner[queue[t]] = -1
    for t in range(n_r):
        in_r[R[t]] = 0
    return n_pieces, sp


# ------------------------------------------------------------------ regions
# Flips keep the connected regions in a "region index" instead of the
# per-vertex cache of the state (``comp_root``, ``comp_area``: every vertex
# holds its region's area, so a move costs the size of every region it
# changes): ``rid[v]`` names v's region, ``rarea[rid]`` is its area, and
# the unused names are on a stack. A move renames only R and the smaller
# sides: of the regions it joins, all but the largest; of the pieces it
# leaves behind, those the interleaved search finished (the search stops
# while the largest is still growing). The functions that read regions
# (:func:`_join`, :func:`.flips.join_delta`) look areas up as
# ``comp_area[comp_root[v]]``, which holds in both forms.
REG_RID, REG_AREA, REG_IDS, REG_NFREE, REG_MARK = range(5)


def new_region_index(n):
    """Arrays of a region index on n vertices: (rid, rarea, free names,
    [number of free names], a mark per name)."""
    return (np.zeros(n, np.int64), np.zeros(n), np.empty(n, np.int64), np.zeros(1, np.int64),
            np.zeros(n, np.int8))


@njit(cache=True)
def load_regions(comp_root, comp_area, regions):
    """Region index from the per-vertex cache (names: the root vertices)."""
    rid, rarea, ids, n_ids, used = regions
    n = comp_root.size
    for v in range(n):
        r = comp_root[v]
        rid[v] = r
        rarea[r] = comp_area[v]
        used[r] = 1
    k = 0
    for v in range(n):
        if used[v]:
            used[v] = 0
        else:
            ids[k] = v
            k += 1
    n_ids[0] = k


@njit(cache=True)
def store_regions(regions, comp_root, comp_area):
    """The per-vertex cache from a region index (roots: a vertex of each
    region). Clobbers the stack of free names (reload before use)."""
    rid, rarea, rep, n_ids, seen = regions
    n = rid.size
    for v in range(n):
        r = rid[v]
        if not seen[r]:
            seen[r] = 1
            rep[r] = v
        comp_root[v] = rep[r]
        comp_area[v] = rarea[r]
    for v in range(n):
        seen[rid[v]] = 0
    n_ids[0] = -1


@njit(cache=True)
def _rename(start, name, lab, old, labels, rid, indptr, indices, stack):
    """Give the region of ``start`` (label ``lab``, name ``old``) the name ``name``."""
    rid[start] = name
    stack[0] = start
    top = 1
    while top > 0:
        top -= 1
        v = stack[top]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if rid[u] == old and labels[u] == lab:
                rid[u] = name
                stack[top] = u
                top += 1


@njit(cache=True)
def move_regions(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, sR, ll_rest,
                 ll_new, regions, indptr, indices, area, in_r, pws, stack):
    """Apply R: ell -> new (R connected, inside one region C of ``ell``;
    R's statistics ``sR``; new log-likelihoods ``ll_rest`` of ell without R
    and ``ll_new``) and update the region index. ``stack``: room for N."""
    rid, rarea, ids, n_ids, idmark = regions
    owner, queue, parent, count, garea = pws
    C = rid[R[0]]
    r_area = 0.0
    for t in range(n_r):
        r_area += area[R[t]]
    rest = rarea[C] - r_area
    if rest <= 0.5:  # R is all of C (areas are whole pixel counts): free its name first
        ids[n_ids[0]] = C
        n_ids[0] += 1
    # Regions of `new` that R touches (named in queue[:k], with one vertex each
    # in parent[:k]), and the largest of them.
    k = 0
    big = -1
    for t in range(n_r):
        v = R[t]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if labels[u] != new:
                continue
            j = rid[u]
            if idmark[j]:
                continue
            idmark[j] = 1
            queue[k] = j
            parent[k] = u
            if big < 0 or rarea[j] > rarea[queue[big]]:
                big = k
            k += 1
    for t in range(k):
        idmark[queue[t]] = 0
    # Statistics and labels (as compiled._move).
    if size[ell] == n_r:
        lstats[ell, :] = 0.0
        lloglik[ell] = 0.0
    else:
        lstats[ell, :] -= sR
        lloglik[ell] = ll_rest
    lstats[new, :] += sR
    lloglik[new] = ll_new
    relabel_vertices(labels, size, free_stack, n_free, R, n_r, new)
    # The joined region: R and the regions of `new` it touches, under the
    # name of the largest; the others are renamed and their names freed.
    if k == 0:
        n_ids[0] -= 1
        name = ids[n_ids[0]]
        joined = r_area
    else:
        name = queue[big]
        joined = r_area + rarea[name]
        for t in range(k):
            j = queue[t]
            if t == big:
                continue
            joined += rarea[j]
            _rename(parent[t], name, new, j, labels, rid, indptr, indices, stack)
            ids[n_ids[0]] = j
            n_ids[0] += 1
    for t in range(n_r):
        rid[R[t]] = name
    rarea[name] = joined
    # What R leaves of C: nothing, one piece (the common case), or pieces of
    # which the search finished all but perhaps one; the finished ones get
    # new names, the last (or, when all finished, the first) keeps C's.
    if rest <= 0.5:
        return
    rarea[C] = rest
    for t in range(n_r):
        in_r[R[t]] = 1
    n_groups, tail, n_roots = _search_pieces(R, n_r, ell, labels, indptr, indices, area, in_r,
                                             owner, queue, parent, count, garea)
    for t in range(n_r):
        in_r[R[t]] = 0
    if n_roots > 1:
        keep = -1
        for gi in range(n_groups):
            if parent[gi] == gi and count[gi] > 0:
                keep = gi
        for gi in range(n_groups):
            if parent[gi] != gi or gi == keep:
                continue
            if keep < 0:
                keep = gi  # every piece finished: the first keeps C's name
                continue
            # count[gi] == 0: gi's piece is all in the queue; name it anew.
            n_ids[0] -= 1
            nm = ids[n_ids[0]]
            garea[gi] = -(nm + 1.0)  # marks the new name of root gi
            rarea[nm] = 0.0
        for t in range(tail):
            v = queue[t]
            g = _find(parent, owner[v])
            if garea[g] < 0.0:
                nm = int(-garea[g]) - 1
                rid[v] = nm
                rarea[nm] += area[v]
                rarea[C] -= area[v]
    for t in range(tail):
        owner[queue[t]] = -1


@njit(cache=True)
def run_image_kernel(kind, temps, f_state, labels, size, free_stack, n_free, lstats, lloglik,
                     regions, best_labels, vsrc, indptr, indices, edge_ids, edges,
                     q, log1mq, area, use_family, n_channels, n_bins, fp,
                     Rbuf, in_r, mark, stack, visited, acc_log, acc_q, acc_n, adj, roots,
                     sR, tmp, tlab, tlogw, tll, pws):
    """Run ``temps.size`` steps of a kernel on the image posterior.

    ``f_state`` = [log π, best log π] is updated in place; ``best_labels``
    receives the best labelling. ``regions`` is the region index
    (:func:`load_regions`), ``pws`` the scratch of :func:`pieces_interleaved`.
    Returns the number of accepted moves.
    """
    comp_root = regions[REG_RID]
    comp_area = regions[REG_AREA]
    owner, queue, parent, count, garea = pws
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
        c_area = comp_area[comp_root[R[0]]]
        sum_stats(R, n_r, vsrc, n_channels, n_bins, sR)
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
                k_p, sp_p = pieces_interleaved(R, n_r, ell, labels, indptr, indices, area,
                                               c_area - r_area, ex, in_r, owner, queue, parent,
                                               count, garea)
                d -= a1 * (k_p - 1) + a2 * (sp_p - c_area ** ex)
            else:
                d += a1 + a2 * c_area ** ex
            if d <= threshold:
                continue
            move_regions(R, n_r, ell, new_label, labels, size, free_stack, n_free, lstats, lloglik,
                         sR, ll_rest, ll_new, regions, indptr, indices, area, in_r, pws, stack)
        else:
            # ---- Gibbs over every target (single site, or cluster Gibbs with γ_k)
            if whole:
                d_leave = a1 + a2 * c_area ** ex
            else:
                k_p, sp_p = pieces_interleaved(R, n_r, ell, labels, indptr, indices, area,
                                               c_area - r_area, ex, in_r, owner, queue, parent,
                                               count, garea)
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
            move_regions(R, n_r, ell, new_label, labels, size, free_stack, n_free, lstats, lloglik,
                         sR, ll_rest, ll_new, regions, indptr, indices, area, in_r, pws, stack)
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
        # pieces_interleaved: owner, queue, parent, count, area of searches
        self.pws = (-np.ones(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
                    np.zeros(n, np.int64), np.zeros(n))
        self.regions = new_region_index(n)


def run_compiled(kind, model, state, q, log1mq, proposal, temps, best_labels=None,
                 best_log_pi=-np.inf, p_single=0.0):
    """Run ``len(temps)`` compiled steps on an image-model state.

    ``best_labels`` is overwritten only by states better than both
    ``best_log_pi`` and the current state. Returns (accepted moves, best
    log π seen, best labels array).
    """
    part = state.partition
    ws = getattr(state, "compiled_ws", None)
    if ws is None or not hasattr(ws, "regions"):
        ws = state.compiled_ws = CompiledWorkspace(part.n_vertices, part.size.size, model.n_stats)
    if best_labels is None:
        best_labels = part.labels.copy()
    f_state = np.array([state.log_pi, max(state.log_pi, best_log_pi)])
    fp = np.array([model.kappa, model.ridge, model.a0, model.a1, model.a2, model.exponent,
                   proposal.adjacent, proposal.floor, proposal.fresh, proposal.far,
                   p_single])
    g = model.graph
    temps = np.ascontiguousarray(temps, dtype=np.float64)
    load_regions(state.comp_root, state.comp_area, ws.regions)
    acc = run_image_kernel(kind, temps, f_state, part.labels,
                           part.size, part.free_stack, part.n_free, state.stats, state.loglik,
                           ws.regions, best_labels, model.vsrc, g.indptr,
                           g.indices, g.edge_ids, g.edges, q, log1mq, model.area, model.use_family,
                           model.n_channels, model.n_bins, fp, ws.Rbuf, ws.in_r, ws.mark, ws.stack,
                           ws.visited, ws.acc_log, ws.acc_q, ws.acc_n, ws.adj, ws.roots, ws.sR, ws.tmp,
                           ws.tlab, ws.tlogw, ws.tll, ws.pws)
    if acc or temps.size == 0:
        store_regions(ws.regions, state.comp_root, state.comp_area)
    state.log_pi = float(f_state[0])
    return int(acc), float(f_state[1]), best_labels
