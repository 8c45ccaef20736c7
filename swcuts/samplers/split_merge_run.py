"""Split-merge compiled: the restricted Gibbs scans and whole runs of updates.

:class:`~swcuts.samplers.split_merge.SplitMerge` orchestrates one update in
Python (:meth:`~swcuts.samplers.split_merge.SplitMerge.step`, the reference
path for any model). For the models with compiled arithmetic (the image
model, and mixture models with a built-in likelihood) :func:`run_split_merge`
makes n updates in one compiled call, and makes **the same moves as n
calls of ``step``, bit for bit**:

* it draws from the caller's ``numpy.random.Generator`` (numba's
  Generator support shares the generator's state), the same numbers in the
  same order as ``step`` (anchors, launch sides, one uniform per item and
  scan, the MH uniform only when −inf < log α < 0:
  :func:`~swcuts._numba.primitives.mh_decide`);
* Δ log π comes from the same compiled functions, called in the same order
  on the same arrays: the model's set moves
  (:func:`~swcuts.models.image.set_move_delta` /
  :func:`~swcuts.models.image.set_move_apply`, the compiled forms of
  ``ImageModel.delta`` / ``apply``;
  :func:`~swcuts.models.mixture.moves.mixture_delta` /
  :func:`~swcuts.models.mixture.moves.mixture_apply`) and the restricted
  scans below, which ``step`` calls too;
* the label member lists follow
  :class:`~swcuts.models.partition.MemberIndex` exactly, list order
  included (a merge's Δ sums the smaller label's vertices in that order):
  :mod:`~swcuts.samplers.run_lists`.

Numba compiles one runner per model kind (the image model's tuple ``img``
or the mixture's ``mix``, the other None: the branch of the other kind is
pruned), with no literal arguments.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only
from swcuts._numba.primitives import mh_decide
from swcuts.models.boundary import boundary_delta
from swcuts.models.image import set_move_apply, set_move_delta
from swcuts.models.image_kernels import (
    FP_BOUNDARY, apply_move_cached, join_label, join_regions, leave_label, vertex_leave_regions)
from swcuts.models.mixture.moves import (
    item_join, item_leave, item_move, mixture_apply, mixture_delta)
from swcuts.samplers.compiled import _book
from swcuts.samplers.run_lists import _members, _set_list, draw_pair, export_lists

__all__ = ["run_split_merge"]

_LOG2 = math.log(2.0)


@njit(cache=True)
def _log_sigmoid_c(x):
    """log(1 / (1 + e^-x)), stable for every x (including ±inf)."""
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(cache=True, inline="always")
def _choose_side(x, a, forced, target, u, idx):
    """The restricted Gibbs choice of item ``idx`` of S, now on side ``a``:
    it moves to the other side with probability σ(x), x = Δ log π / T of
    the move (drawn with ``u[idx]``, or forced: it moves iff ``target[idx]
    != a``). Returns (move, log of the probability of the outcome)."""
    lp_move = _log_sigmoid_c(x)
    if forced:
        move = target[idx] != a
    else:
        move = u[idx] < math.exp(lp_move)
    if move:
        return True, lp_move
    return False, _log_sigmoid_c(-x)


@njit(cache=True, inline="always")
def _scan_item(S, side, labs, idx):
    """Item ``idx`` of a restricted scan: (vertex k, its side a, the other
    side b, their labels)."""
    k = S[idx]
    a = side[idx]
    b = 1 - a
    return k, a, b, labs[a], labs[b]


@njit(cache=True)
def _scan_image(S, side, labs, inv_t, u, target, f_state, labels, size, free_stack, n_free,
                lstats, lloglik, comp_root, comp_area, vstats, indptr, indices, area, bw,
                use_family, n_channels, n_bins, fp, R1, in_r, mark, visited, roots, tmp_a, tmp_b):
    """One restricted Gibbs scan over S on an image-model state, compiled.

    The same scan as :meth:`SplitMerge._scan` with Δ log π of moving one
    vertex k between the two labels from the cached statistics and regions
    (as the compiled Gibbs kernel computes it): the two labels' likelihoods
    with and without k, the pieces of k's region once k leaves it, the
    regions of the other label that k joins, and the boundary term
    (``bw``: the boundary weights in CSR order). Both labels stay non-empty
    (they hold the anchors), so the label-count prior does not change.
    ``u`` holds one uniform per item (drawn scans) and ``target`` is empty,
    or ``target`` holds the forced sides. ``f_state[0]`` (log π) is
    updated. Returns log of the probability of the outcome.
    """
    forced = target.size > 0
    log_q = 0.0
    for idx in range(S.size):
        k, a, b, la, lb = _scan_item(S, side, labs, idx)
        R1[0] = k
        sR = vstats[k]
        d, ll_rest = leave_label(la, 1, size, lstats, lloglik, sR, tmp_a, n_channels, n_bins,
                                 use_family, fp)
        d_new, ll_new = join_label(lb, False, lstats, lloglik, sR, tmp_b, n_channels, n_bins,
                                   use_family, fp)
        d += d_new
        d += vertex_leave_regions(k, la, labels, indptr, indices, area, comp_area, in_r, mark,
                                  visited, fp)
        d += join_regions(R1, 1, lb, area[k], False, labels, indptr, indices, comp_root, comp_area,
                          in_r, mark, roots, fp)
        d += boundary_delta(fp[FP_BOUNDARY], R1, 1, lb, labels, indptr, indices, bw, in_r)
        move, lp = _choose_side(d * inv_t, a, forced, target, u, idx)
        log_q += lp
        if move:
            apply_move_cached(R1, 1, la, lb, labels, size, free_stack, n_free, lstats, lloglik, sR,
                              ll_rest, ll_new, comp_root, comp_area, indptr, indices, area, mark,
                              visited)
            side[idx] = b
            f_state[0] += d
    return log_q


@njit(cache=True)
def _scan_mixture(S, side, labs, inv_t, u, target, labels, size, free_stack, n_free, lstats,
                  lloglik, vstats, kind, params, prior):
    """One restricted Gibbs scan over S on a mixture-model state, compiled.

    The same scan as :meth:`SplitMerge._scan` (same uniforms ``u``, or the
    forced sides ``target``; the other one empty): Δ log π of moving item
    k to the other label is the leave part of its label plus the join part
    of the other (:func:`~swcuts.models.mixture.item_leave`,
    :func:`~swcuts.models.mixture.item_join`). The state arrays are those of
    :meth:`~swcuts.models.mixture.MixtureModel.kernel_arrays`. Returns
    (log of the probability of the outcome, Δ log π).
    """
    forced = target.size > 0
    D = vstats.shape[1]
    st_a = np.empty(D)
    st_b = np.empty(D)
    one = np.empty(1, np.int64)
    log_q = 0.0
    total = 0.0
    for idx in range(S.size):
        k, a, b, la, lb = _scan_item(S, side, labs, idx)
        d_leave, ll_a = item_leave(k, la, size, lstats, lloglik, vstats, kind, params, prior,
                                   st_a)
        d_join, ll_b = item_join(k, lb, size, lstats, lloglik, vstats, kind, params, prior,
                                 st_b)
        d = d_leave + d_join
        move, lp = _choose_side(d * inv_t, a, forced, target, u, idx)
        log_q += lp
        if move:
            item_move(k, la, lb, labels, size, free_stack, n_free, lstats, lloglik, st_a, ll_a,
                      st_b, ll_b, one)
            side[idx] = b
            total += d
    return log_q, total


# ------------------------------------------------------ the model's moves
@compiled_only
def _move_delta(img, mix, labels, size, R, new, ev):
    """``model.delta`` of relabelling R to ``new`` (and the mixture's
    evaluation count, ``ev[0]``)."""
    d = 0.0
    if img is not None:  # numba prunes each branch whose tuple is None
        d = set_move_delta(img[0], labels, size, R, new)
    if mix is not None:
        ev[0] += R.size
        (lstats, lloglik, vstats, kind, params, prior, mark, slot_of, out_labels, out_stats,
         out_counts) = mix
        d = mixture_delta(labels, size, R, new, vstats, lstats, lloglik, kind, params, prior, mark,
                          slot_of, out_labels, out_stats, out_counts)
    return d


@compiled_only
def _move_apply(img, mix, labels, size, free_stack, n_free, R, new):
    """``model.apply`` of relabelling R to ``new`` (log π is the caller's)."""
    if img is not None:
        set_move_apply(img[0], labels, size, free_stack, n_free, R, new)
    if mix is not None:
        (lstats, lloglik, vstats, kind, params, prior, mark, slot_of, out_labels, out_stats,
         out_counts) = mix
        mixture_apply(labels, size, free_stack, n_free, R, new, vstats, lstats, lloglik, kind,
                      params, mark, slot_of, out_labels, out_stats, out_counts)


@compiled_only
def _move(img, mix, f_state, labels, size, free_stack, n_free, R, new, ev):
    """``SplitMerge._move``: relabel R on the live state, log π updated."""
    d = _move_delta(img, mix, labels, size, R, new, ev)
    _move_apply(img, mix, labels, size, free_stack, n_free, R, new)
    f_state[0] += d


@compiled_only
def _scan(img, mix, S, side, labs, inv_t, u, target, f_state, labels, size, free_stack, n_free,
          ev):
    """``SplitMerge._scan`` on the compiled path: log of the probability
    of the outcome; log π (``f_state[0]``) updated as ``step`` updates it."""
    log_q = 0.0
    if img is not None:
        (vsrc, lstats, lloglik, indptr, indices, area, bw, use_family, n_channels, n_bins, mfp,
         comp_root, comp_area, mark_c, mark_a, mark_b, stack, visited, out_labels, out_stats,
         out_counts) = img[0]
        vstats, fp, R1, in_r, mark, visited_s, roots, sR, tmp = img[1]
        log_q = _scan_image(S, side, labs, inv_t, u, target, f_state, labels, size, free_stack,
                            n_free, lstats, lloglik, comp_root, comp_area, vstats, indptr, indices,
                            area, bw, use_family, n_channels, n_bins, fp, R1, in_r, mark,
                            visited_s, roots, sR, tmp)
    if mix is not None:
        (lstats, lloglik, vstats, kind, params, prior, mark, slot_of, out_labels, out_stats,
         out_counts) = mix
        log_q, d = _scan_mixture(S, side, labs, inv_t, u, target, labels, size, free_stack,
                                 n_free, lstats, lloglik, vstats, kind, params, prior)
        ev[0] += S.size
        f_state[0] += d
    return log_q


@compiled_only
def _side_sets(i, S, m, side, Ri, Rj):
    """[i] + S[side == 0] into ``Ri`` and S[side == 1] after ``Rj[0]``;
    returns (|Ri|, |Rj|)."""
    Ri[0] = i
    ni = 1
    nj = 1
    for t in range(m):
        if side[t] == 0:
            Ri[ni] = S[t]
            ni += 1
        else:
            Rj[nj] = S[t]
            nj += 1
    return ni, nj


# ------------------------------------------------------------- the runner
@njit(cache=True, nogil=True, no_cfunc_wrapper=True)
def run_split_merge(rng, temps, opts, edges, counts, ev, f_state, best_labels, path, labels, size,
                    free_stack, n_free, head, nxt, entry, bufs, img, mix):
    """``temps.size`` split-merge updates (:meth:`SplitMerge.step` each,
    the same moves and random numbers), on an image-model state (``img``:
    ``(set_move_arrays, scan arrays)``) or a mixture state (``mix``).

    ``opts`` = [pair anchors, t, random split]; ``edges`` the graph's edge
    list (edge anchors); ``counts`` = [splits proposed, accepted, merges
    proposed, accepted, vertices moved by accepted updates]; ``ev[0]`` the
    mixture's model evaluations; ``f_state`` = [log π, best log π, log α of
    the last update] (``best_labels`` copied at a new best, as
    :func:`~swcuts.samplers.compiled._book` does); ``path`` (n, N)
    receives the labels after every update (or has no rows); ``head``,
    ``nxt``, ``entry`` the member lists (:mod:`~swcuts.samplers.run_lists`); ``bufs`` =
    (C, A, B, S, Ri, Rj, side, orig, labs). At the end C holds the exact
    lists one after another, by label. Returns the number of accepted
    updates.
    """
    pair = opts[0] != 0
    t_scans = opts[1]
    restricted = opts[2] == 0  # restricted Gibbs scans (else the random split)
    n = labels.size
    C, A, B, S, Ri, Rj, side, orig, labs = bufs
    no_u = np.zeros(0)
    no_target = np.zeros(0, np.int8)
    accepted = 0
    # Each model call has one call site (two for the Δ): a call passes the
    # model's ~30 arrays, and every site costs compile time.
    for step in range(temps.size):
        T = temps[step]
        inv_t = 1.0 / T
        f_state[2] = -np.inf  # log α of this update (-inf: no anchors, no move)
        ok, i, j = draw_pair(rng, pair, n, edges)
        if ok:
            ci = labels[i]
            cj = labels[j]
            split = ci == cj
            # S: the other vertices of the two labels, ascending.
            m = 0
            if split:
                nc = _members(ci, labels, free_stack, n_free, head, nxt, entry, C)
                for t in range(nc):
                    if C[t] != i and C[t] != j:
                        S[m] = C[t]
                        m += 1
                counts[0] += 1
                labs[0] = free_stack[n_free[0] - 1]  # Partition.fresh_label
                labs[1] = ci
            else:
                na = _members(ci, labels, free_stack, n_free, head, nxt, entry, A)
                nb = _members(cj, labels, free_stack, n_free, head, nxt, entry, B)
                for t in range(na):
                    if A[t] != i:
                        S[m] = A[t]
                        m += 1
                for t in range(nb):
                    if B[t] != j:
                        S[m] = B[t]
                        m += 1
                counts[2] += 1
                labs[0] = ci
                labs[1] = cj
            S[:m].sort()
            Sm = S[:m]
            sm = side[:m]
            f = labs[0]
            if split or restricted:
                sd = rng.integers(0, 2, size=m)
                for t in range(m):
                    side[t] = sd[t]
            log_pi0 = f_state[0]
            # Launch moves: a split's i and S[side == 0] to the fresh label;
            # a merge's items whose launch side is not their own.
            n_pre0 = 0
            n_pre1 = 0
            lab_pre0 = f
            lab_pre1 = ci
            if split:
                ni, nj = _side_sets(i, Sm, m, sm, Ri, Rj)
                Rj[0] = j
                if restricted:
                    n_pre0 = ni
            elif restricted:
                lab_pre0 = cj
                for t in range(m):
                    orig[t] = 1 if labels[S[t]] == cj else 0
                    if orig[t] == 0 and side[t] == 1:
                        Ri[n_pre0] = S[t]
                        n_pre0 += 1
                    elif orig[t] == 1 and side[t] == 0:
                        Rj[n_pre1] = S[t]
                        n_pre1 += 1
            for p in range(2):
                n_p = n_pre0 if p == 0 else n_pre1
                if n_p:
                    _move(img, mix, f_state, labels, size, free_stack, n_free,
                          (Ri if p == 0 else Rj)[:n_p], lab_pre0 if p == 0 else lab_pre1, ev)
            # Restricted scans: t to the launch state, then a split's final
            # scan (drawn: q(X* | X)) or a merge's forced scan (q(X | X*)).
            n_drawn = 0
            n_forced = 0
            if restricted:
                n_drawn = t_scans + (1 if split else 0)
                n_forced = 0 if split else 1
            log_q = 0.0
            for sc in range(n_drawn + n_forced):
                drawn = sc < n_drawn
                log_q = _scan(img, mix, Sm, sm, labs, inv_t, rng.random(m) if drawn else no_u,
                              no_target if drawn else orig[:m], f_state, labels, size, free_stack,
                              n_free, ev)
            # log α; the move that accepting makes (none for a restricted
            # split, already made) and the one that rejecting makes.
            if split and restricted:
                d = f_state[0] - log_pi0
                log_alpha = d / T - log_q
                ni, nj = _side_sets(i, Sm, m, sm, Ri, Rj)
                Rj[0] = j
                Rp = Ri
                n_p = ni
                lab_p = ci
            else:
                if split:
                    Rp = Ri
                    n_p = ni
                    lab_p = f
                    extra = m * _LOG2  # q(X | X*) / q(X* | X) = 1 / (1/2)^|S|
                else:
                    if restricted:
                        f_state[0] = log_pi0
                        extra = log_q
                    else:
                        extra = -m * _LOG2
                    # Merge the smaller label into the larger.
                    if na <= nb:
                        Rp = A
                        n_p = na
                        lab_p = cj
                    else:
                        Rp = B
                        n_p = nb
                        lab_p = ci
                d = _move_delta(img, mix, labels, size, Rp[:n_p], lab_p, ev)
                log_alpha = d / T + extra
            f_state[2] = log_alpha
            acc = mh_decide(log_alpha, rng)
            if acc != (split and restricted):
                if not acc:  # reject a restricted split: Ri back to ci
                    d = _move_delta(img, mix, labels, size, Rp[:n_p], lab_p, ev)
                _move_apply(img, mix, labels, size, free_stack, n_free, Rp[:n_p], lab_p)
                f_state[0] += d
            if not acc and split and restricted:
                f_state[0] = log_pi0
            if acc:
                accepted += 1
                if split:
                    counts[1] += 1
                    counts[4] += ni
                    _set_list(f, Ri, ni, head, nxt, entry)
                    _set_list(ci, Rj, nj, head, nxt, entry)
                else:
                    counts[3] += 1
                    counts[4] += n_p
                    entry[ci if lab_p == cj else cj] = 0
                    for t in range(nb):
                        A[na + t] = B[t]
                    _set_list(lab_p, A, na + nb, head, nxt, entry)
        _book(0.0, f_state, labels, best_labels)
        if path.shape[0] > 0:
            for v in range(n):
                path[step, v] = labels[v]
    export_lists(head, nxt, entry, C)  # for SplitMerge's MemberIndex
    return accepted


