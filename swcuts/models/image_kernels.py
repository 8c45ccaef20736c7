"""Compiled arithmetic of the image posterior (:mod:`swcuts.models.image`).

Every compiled sampler of the image posterior calls these functions for the
moves it makes; none repeats a formula of the model. A move relabels a
vertex set R (connected, inside one region C of its label ℓ, for every
kernel here) to a label ℓ'; its Δ log π has four parts:

* the likelihood and label-count terms of ℓ losing R (:func:`leave_label`)
  and of ℓ' gaining it (:func:`join_label`);
* the region terms (−a1 m − a2 Σ area^e of eq. 59) of R joining the
  regions of ℓ' it touches (:func:`join_regions`) and of C losing R
  (:func:`leave_regions`, exact; :func:`leave_bound`, an upper bound that
  needs no search; :func:`vertex_leave_regions` for a single vertex).

:func:`join_delta` sums all but the last; :func:`relabel_delta_bounded`
adds it only when the bound does not already reject (the bound-first MH
shortcut, see :func:`swcuts._numba.primitives.mh_threshold`). Applying a move:
:func:`move_regions` (statistics, labels and the region index that the
runs keep, see below), :func:`apply_move_cached` (the per-vertex region
cache of the state), :func:`relabel` (no Δ needed).

``fp`` is the model's parameter vector (:meth:`ImageModel.kernel_params`,
layout ``FP_*``); samplers may append their own entries after
``N_MODEL_PARAMS``.

The region index. Runs keep the connected regions in a "region index"
instead of the per-vertex cache of the state (``comp_root``, ``comp_area``:
every vertex holds its region's area, so a move costs the size of every
region it changes): ``rid[v]`` names v's region, ``rarea[rid]`` is its
area, and the unused names are on a stack. A move renames only R and the
smaller sides: of the regions it joins, all but the largest; of the pieces
it leaves behind, those the interleaved search finished (the search stops
while the largest is still growing). The functions that read regions look
areas up as ``comp_area[comp_root[v]]``, which holds in both forms.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.models.partition import relabel_vertices
from swcuts._numba.compiled_only import compiled_only
from swcuts._numba.primitives import find
from swcuts.models.boundary import boundary_delta
from swcuts.models.label_likelihood import label_loglik
from swcuts.models.regions import (
    pieces_interleaved, refresh_regions, search_pieces, touching_regions, vertex_leave_pieces)
from swcuts.models.vertex_stats import sum_stats

# fp: the model's parameters (FP_BOUNDARY: λ of the boundary term, models/boundary.py)
FP_KAPPA, FP_RIDGE, FP_A0, FP_A1, FP_A2, FP_EXP, FP_BOUNDARY = range(7)
N_MODEL_PARAMS = 7
# The arrays of a region index.
REG_RID, REG_AREA, REG_IDS, REG_NFREE, REG_MARK = range(5)

# ------------------------------------------------------------ region index
def new_region_index(n):
    """Arrays of a region index on n vertices: (rid, rarea, free names,
    [number of free names], a mark per name)."""
    return (np.zeros(n, np.int64), np.zeros(n), np.empty(n, np.int64), np.zeros(1, np.int64),
            np.zeros(n, np.int8))


@compiled_only
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


@compiled_only
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


@compiled_only
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


# ------------------------------------------------------------------ Δ log π
# The formulas: scalars in, a term of Δ log π out (no arrays, so that any
# loop may call them at no cost). These and the other few-line helpers are
# ``inline="always"``: numba types them inside each caller instead of
# compiling and caching each on its own, which shortens a first run (empty
# numba cache) by some 40 ms of compilation per function.
@njit(cache=True, inline="always")
def label_leave_delta(ll_rest, ll_old, whole, a0):
    """Likelihood and label-count terms of Δ log π when R leaves its label
    (log-likelihood ``ll_old`` before, ``ll_rest`` without R; all of it
    when ``whole``: one label fewer)."""
    if whole:
        return -ll_old + a0
    return ll_rest - ll_old


@njit(cache=True, inline="always")
def label_join_delta(ll_new, ll_old, fresh, a0):
    """Likelihood and label-count terms of Δ log π when R joins a label
    (log-likelihood ``ll_old`` before, ``ll_new`` with R; a fresh label
    when ``fresh``: one label more)."""
    d = ll_new - ll_old
    if fresh:
        d -= a0
    return d


@njit(cache=True)
def set_score(st, sp):
    """Log potential of a vertex set scored as one region with summed
    statistics ``st``: its log-likelihood − (a0 + a1) − a2 n^exponent, n =
    ``st[0]`` (the region's own terms, no boundary). ``sp`` is
    :meth:`swcuts.models.ImageModel.cluster_score`'s array ``[SCORE_IMAGE,
    C, B, use_hist, use_lin, use_quad, kappa, ridge, a0 + a1, a2, exponent]``.
    Tree-guided proposals score sets with it before they are labels."""
    uf = np.empty(3, np.bool_)
    uf[0] = sp[3] > 0.5
    uf[1] = sp[4] > 0.5
    uf[2] = sp[5] > 0.5
    ll = label_loglik(st, int(sp[1]), int(sp[2]), uf, sp[6], sp[7])
    return ll - sp[8] - sp[9] * st[0] ** sp[10]


@njit(cache=True, inline="always")
def region_join_delta(k_j, s_j, sp_j, r_area, a1, a2, ex):
    """Region terms (−a1 m − a2 Σ area^ex) of Δ log π when the connected
    set R (area ``r_area``) joins a label whose regions touching R are
    ``k_j`` regions of total area ``s_j`` and Σ area^ex ``sp_j``
    (:func:`touching_regions`; 0, 0, 0 for a fresh label): they and R
    become one region."""
    return -(a1 * (1 - k_j) + a2 * ((r_area + s_j) ** ex - sp_j))


@njit(cache=True, inline="always")
def region_leave_delta(k_p, sp_p, c_area, a1, a2, ex):
    """Region terms of Δ log π when R leaves its region C (area ``c_area``)
    and C \\ R falls into ``k_p`` pieces with Σ area^ex ``sp_p``
    (:func:`pieces_interleaved`; 0, 0 when R = C)."""
    return -(a1 * (k_p - 1) + a2 * (sp_p - c_area ** ex))


@njit(cache=True, inline="always")
def region_leave_bound(r_area, c_area, a1, a2, ex):
    """Upper bound of :func:`region_leave_delta` without the search: C \\ R
    in one piece (fewest regions, and Σ piece^ex >= (Σ pieces)^ex for
    ex < 1). Exact when R = C."""
    if c_area - r_area > 0.5:  # areas are whole pixel counts
        return -a2 * ((c_area - r_area) ** ex - c_area ** ex)
    return a1 + a2 * c_area ** ex


# Statistics of a label with R taken out or added (the likelihood's input).
@njit(cache=True, inline="always")
def stats_without(lstats, ell, sR, tmp):
    """``tmp`` = statistics of label ``ell`` without R (statistics ``sR``)."""
    for i in range(tmp.size):
        tmp[i] = lstats[ell, i] - sR[i]


@njit(cache=True, inline="always")
def stats_with(lstats, lloglik, new, fresh, sR, tmp):
    """``tmp`` = statistics of label ``new`` (an empty one when ``fresh``)
    with R added; returns new's log-likelihood before (0 when fresh)."""
    if fresh:
        for i in range(tmp.size):  # a loop: ``tmp[:] = sR`` compiles numba's shape-error formatting
            tmp[i] = sR[i]
        return 0.0
    for i in range(tmp.size):
        tmp[i] = lstats[new, i] + sR[i]
    return lloglik[new]


# The terms of one move, from the state's arrays.
@compiled_only
def leave_label(ell, n_r, size, lstats, lloglik, sR, tmp, n_channels, n_bins, use_family, fp):
    """:func:`label_leave_delta` of R (``n_r`` vertices, statistics ``sR``)
    leaving label ``ell``: (Δ, log-likelihood of ell without R)."""
    whole = size[ell] == n_r
    ll_rest = 0.0
    if not whole:
        stats_without(lstats, ell, sR, tmp)
        ll_rest = label_loglik(tmp, n_channels, n_bins, use_family, fp[FP_KAPPA], fp[FP_RIDGE])
    return label_leave_delta(ll_rest, lloglik[ell], whole, fp[FP_A0]), ll_rest


@compiled_only
def join_label(new, fresh, lstats, lloglik, sR, tmp, n_channels, n_bins, use_family, fp):
    """:func:`label_join_delta` of R (statistics ``sR``) joining label
    ``new`` (read as empty when ``fresh``): (Δ, log-likelihood of new with R)."""
    ll_old = stats_with(lstats, lloglik, new, fresh, sR, tmp)
    ll_new = label_loglik(tmp, n_channels, n_bins, use_family, fp[FP_KAPPA], fp[FP_RIDGE])
    return label_join_delta(ll_new, ll_old, fresh, fp[FP_A0]), ll_new


@compiled_only
def join_regions(R, n_r, new, r_area, fresh, labels, indptr, indices, comp_root, comp_area, in_r,
                 mark, roots, fp):
    """:func:`region_join_delta` of the connected set R (area ``r_area``)
    joining label ``new`` (an empty one when ``fresh``: no search)."""
    if fresh:
        return region_join_delta(0, 0.0, 0.0, r_area, fp[FP_A1], fp[FP_A2], fp[FP_EXP])
    k_j, s_j, sp_j = touching_regions(R, n_r, new, labels, indptr, indices, comp_root, comp_area,
                                      in_r, mark, roots, fp[FP_EXP])
    return region_join_delta(k_j, s_j, sp_j, r_area, fp[FP_A1], fp[FP_A2], fp[FP_EXP])


@njit(cache=True, inline="always")
def leave_bound(r_area, c_area, fp):
    """:func:`region_leave_bound` with the model's parameters ``fp``."""
    return region_leave_bound(r_area, c_area, fp[FP_A1], fp[FP_A2], fp[FP_EXP])


@compiled_only
def leave_regions(R, n_r, ell, labels, indptr, indices, area, r_area, c_area, fp, in_r, pws):
    """:func:`region_leave_delta` of the connected set R leaving its region
    C of label ``ell`` (the search of :func:`pieces_interleaved`, ``pws`` its
    scratch; none when R = C)."""
    k_p = 0
    sp_p = 0.0
    if c_area - r_area > 0.5:  # areas are whole pixel counts
        owner, queue, parent, count, garea = pws
        k_p, sp_p = pieces_interleaved(R, n_r, ell, labels, indptr, indices, area, c_area - r_area,
                                       fp[FP_EXP], in_r, owner, queue, parent, count, garea)
    return region_leave_delta(k_p, sp_p, c_area, fp[FP_A1], fp[FP_A2], fp[FP_EXP])


@compiled_only
def vertex_leave_regions(k, ell, labels, indptr, indices, area, comp_area, is_nb, mark, visited,
                         fp):
    """:func:`leave_regions` for R = {k} with the per-vertex region cache
    (the search of :func:`vertex_leave_pieces`)."""
    k_p, sp_p = vertex_leave_pieces(k, ell, labels, indptr, indices, area, comp_area, is_nb, mark,
                                    visited, fp[FP_EXP])
    return region_leave_delta(k_p, sp_p, comp_area[k], fp[FP_A1], fp[FP_A2], fp[FP_EXP])


@compiled_only
def join_delta(R, n_r, ell, new, labels, size, lstats, lloglik, comp_root, comp_area, vsrc,
               indptr, indices, area, bw, use_family, n_channels, n_bins, fp, in_r, mark, roots, sR,
               tmp):
    """Δ log π of relabelling the connected set R (inside one region C of
    label ``ell``) to ``new``, except the change of C's own region terms
    (:func:`leave_bound`, :func:`leave_regions`). Fills ``sR`` with R's
    statistics. Areas are read as ``comp_area[comp_root[v]]``; ``bw`` holds
    the boundary weights in CSR order (read only when ``fp[FP_BOUNDARY]``
    is not 0).

    Returns (Δ without C's pieces, ll of ell without R, ll of new with R,
    area of R, area of C).
    """
    kappa = fp[FP_KAPPA]
    ridge = fp[FP_RIDGE]
    a0 = fp[FP_A0]
    ex = fp[FP_EXP]
    sum_stats(R, n_r, vsrc, n_channels, n_bins, sR)
    whole = size[ell] == n_r
    ll_rest = 0.0
    if not whole:
        stats_without(lstats, ell, sR, tmp)
        ll_rest = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
    d = label_leave_delta(ll_rest, lloglik[ell], whole, a0)
    fresh = size[new] == 0
    ll_old = stats_with(lstats, lloglik, new, fresh, sR, tmp)
    ll_new = label_loglik(tmp, n_channels, n_bins, use_family, kappa, ridge)
    d += label_join_delta(ll_new, ll_old, fresh, a0)
    r_area = 0.0
    for t in range(n_r):
        r_area += area[R[t]]
    k_j = 0
    s_j = 0.0
    sp_j = 0.0
    if not fresh:
        k_j, s_j, sp_j = touching_regions(R, n_r, new, labels, indptr, indices, comp_root,
                                          comp_area, in_r, mark, roots, ex)
    d += region_join_delta(k_j, s_j, sp_j, r_area, fp[FP_A1], fp[FP_A2], ex)
    d += boundary_delta(fp[FP_BOUNDARY], R, n_r, new, labels, indptr, indices, bw, in_r)
    return d, ll_rest, ll_new, r_area, comp_area[comp_root[R[0]]]


@njit(cache=True, inline="always")
def relabel_delta_bounded(R, n_r, ell, new, threshold, labels, size, lstats, lloglik, comp_root,
                          comp_area, vsrc, indptr, indices, area, bw, use_family, n_channels,
                          n_bins, fp, in_r, mark, roots, sR, tmp, pws):
    """Δ log π of relabelling the connected set R: ell -> new when it is
    above ``threshold`` (:func:`swcuts._numba.primitives.mh_threshold`), else NaN.
    The search of C \\ R is skipped when :func:`leave_bound` already puts Δ
    at or below the threshold (the same decision as with the exact Δ).

    Returns (Δ or NaN, ll of ell without R, ll of new with R); ``sR`` holds
    R's statistics, ready for :func:`move_regions`.
    """
    d, ll_rest, ll_new, r_area, c_area = join_delta(
        R, n_r, ell, new, labels, size, lstats, lloglik, comp_root, comp_area, vsrc, indptr,
        indices, area, bw, use_family, n_channels, n_bins, fp, in_r, mark, roots, sR, tmp)
    if d + leave_bound(r_area, c_area, fp) <= threshold:
        return np.nan, ll_rest, ll_new
    d += leave_regions(R, n_r, ell, labels, indptr, indices, area, r_area, c_area, fp, in_r, pws)
    if d <= threshold:
        return np.nan, ll_rest, ll_new
    return d, ll_rest, ll_new


# ------------------------------------------------------------------- apply
@compiled_only
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
    apply_stats(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, sR, ll_rest,
                ll_new)
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
    n_groups, tail, n_roots = search_pieces(R, n_r, ell, labels, indptr, indices, area, in_r,
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
            g = find(parent, owner[v])
            if garea[g] < 0.0:
                nm = int(-garea[g]) - 1
                rid[v] = nm
                rarea[nm] += area[v]
                rarea[C] -= area[v]
    for t in range(tail):
        owner[queue[t]] = -1


@njit(cache=True, inline="always")
def apply_stats(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, sR, ll_rest,
                ll_new):
    """Labels and label statistics of the move R: ell -> new (R's statistics
    ``sR``; new log-likelihoods ``ll_rest`` of ell without R and ``ll_new``
    of new with R); the regions are the caller's."""
    # Loops rather than ``lstats[ell, :] -= sR``: the same sums, without
    # compiling numba's array-expression machinery.
    if size[ell] == n_r:
        for i in range(sR.size):
            lstats[ell, i] = 0.0
        lloglik[ell] = 0.0
    else:
        for i in range(sR.size):
            lstats[ell, i] -= sR[i]
        lloglik[ell] = ll_rest
    for i in range(sR.size):
        lstats[new, i] += sR[i]
    lloglik[new] = ll_new
    relabel_vertices(labels, size, free_stack, n_free, R, n_r, new)


@njit(cache=True)
def apply_move_cached(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, sR,
                      ll_rest, ll_new, comp_root, comp_area, indptr, indices, area, mark, visited):
    """Apply the move R: ell -> new (as :func:`apply_stats`) and update the
    per-vertex region cache of the state."""
    apply_stats(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, sR, ll_rest,
                ll_new)
    refresh_regions(labels, R[:n_r], indptr, indices, area, comp_root, comp_area, mark, visited)


@njit(cache=True)
def relabel(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, regions, vsrc,
            indptr, indices, area, use_family, n_channels, n_bins, fp, in_r, pws, visited, sR, tmp):
    """Relabel R: ell -> new with every cache updated (no Δ log π needed)."""
    sum_stats(R, n_r, vsrc, n_channels, n_bins, sR)
    _, ll_rest = leave_label(ell, n_r, size, lstats, lloglik, sR, tmp, n_channels, n_bins,
                             use_family, fp)
    _, ll_new = join_label(new, size[new] == 0, lstats, lloglik, sR, tmp, n_channels, n_bins,
                           use_family, fp)
    move_regions(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, sR, ll_rest,
                 ll_new, regions, indptr, indices, area, in_r, pws, visited)
