"""The merge probabilities between the current labels, kept between moves.

Every global move needs the merge probability p(c, c') of its anchor with
every other label, and a merge needs it between every label it merges and
every label (:func:`.ratio.merge_anchor_sum`): O(|P| L) cluster scores per
move. These are functions of the two labels' summed statistics and sizes
(log d(A, B) = s(A) + s(B) - s(A ∪ B)), and between two global moves most
labels are unchanged (a local move changes a few, an accepted global move
a few more). :meth:`LabelPairs.refresh` keeps the scores, log d, log p and
log(1 - p) of every pair of labels and recomputes only the rows and
columns of labels whose statistics or size are not bit for bit the ones
kept (same arithmetic, so the same bits as computing them afresh): O(L^2)
copies and O(changed · L) scores per global move.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only

from swcuts._numba.primitives import np_sum
from swcuts.samplers.tree_guided.ratio import merge_anchor_sum, merge_lp1
from swcuts.samplers.tree_guided.scores import _logd_pair, _same_stats, _score_any


def _refresh_impl(sp, labs, S, n, klabs, kS, kn, old_sc, old_ld, old_lp, old_l1p, inv_t, eps,
                  same_t):
    """Scores, log d, log p and log(1 - p) of the labels ``labs``
    (ascending) with statistics ``S`` (rows) and sizes ``n``, and the number
    of labels recomputed. ``klabs`` (ascending), ``kS``, ``kn`` and
    ``old_*``: the kept labels and their tables, at the same temperature
    when ``same_t``; a label is taken from them when its statistics and
    size are bit for bit the kept ones. log d by
    :func:`.scores._logd_pair_impl`, log p by :func:`.ratio.merge_lp1`."""
    L = S.shape[0]
    D = S.shape[1]
    keep_from = np.full(L, -1, np.int64)
    t = 0
    for i in range(L):  # both ascending: one merge walk
        while t < klabs.shape[0] and klabs[t] < labs[i]:
            t += 1
        if t < klabs.shape[0] and klabs[t] == labs[i] and kn[t] == n[i] and _same_stats(kS[t], S[i]):
            keep_from[i] = t
    sc = np.empty(L)
    fresh = 0
    for i in range(L):
        if keep_from[i] >= 0:
            sc[i] = old_sc[keep_from[i]]
        else:
            sc[i] = _score_any(S[i], n[i], sp)
            fresh += 1
    ld = np.empty((L, L))
    lp = np.empty((L, L))
    l1p = np.empty((L, L))
    tmp = np.empty(D)
    for i in range(L):
        oi = keep_from[i]
        for j in range(L):
            oj = keep_from[j]
            if oi >= 0 and oj >= 0:
                ld[i, j] = old_ld[oi, oj]
                if same_t:
                    lp[i, j] = old_lp[oi, oj]
                    l1p[i, j] = old_l1p[oi, oj]
                    continue
            else:
                ld[i, j] = _logd_pair(sp, S[i], sc[i], n[i], S[j], sc[j], n[j], tmp)
            lp[i, j], l1p[i, j] = merge_lp1(ld[i, j], inv_t, eps)
    return sc, ld, lp, l1p, fresh


_refresh = njit(cache=True)(_refresh_impl)


# ---------------------------------------------------------------------------
# Merge probabilities of the sets of one move (not of the kept labels)
# ---------------------------------------------------------------------------


def _merge_row_impl(sp, cS, csc, cn, RS, Rsc, Rn, inv_t, eps):
    """(log p, log(1 - p)) of the merge probability between one set
    (statistics ``cS``, score ``csc``, size ``cn``) and each set of R
    (rows): log d by :func:`.scores._logd_pair_impl`, p by
    :func:`.ratio.merge_lp1`, as ``_logd_matrix`` and ``_merge_lp`` give them."""
    r = RS.shape[0]
    lp = np.empty(r)
    l1p = np.empty(r)
    tmp = np.empty(cS.shape[0])
    for j in range(r):
        lp[j], l1p[j] = merge_lp1(_logd_pair(sp, cS, csc, cn, RS[j], Rsc[j], Rn[j], tmp), inv_t,
                                  eps)
    return lp, l1p


def _log_q_anchor_impl(sp, cS, csc, cn, RS, Rsc, Rn, inv_t, eps):
    """log probability that a global move picks the set c as its anchor
    among it and the sets R and merges none of them into it: -log L + Σ
    log(1 - p(c, r)) (numpy's sum, :func:`swcuts._numba.primitives.np_sum`)."""
    lq = -math.log(RS.shape[0] + 1)
    if RS.shape[0]:
        lq += np_sum(_merge_row(sp, cS, csc, cn, RS, Rsc, Rn, inv_t, eps)[1])
    return lq


def _anchor_draw_impl(sp, cS, csc, cn, RS, Rsc, Rn, log_u, inv_t, eps):
    """The merge set of the anchor c among the sets R, given the log
    uniforms ``log_u`` (one per set of R: in it iff log u < log p), and
    Σ log p over it plus Σ log(1 - p) over the others, as
    ``lp[inM].sum() + l1p[~inM].sum()``."""
    lp, l1p = _merge_row(sp, cS, csc, cn, RS, Rsc, Rn, inv_t, eps)
    r = RS.shape[0]
    inM = np.empty(r, np.bool_)
    inn = np.empty(r)
    out = np.empty(r)
    ni = 0
    no = 0
    for j in range(r):
        inM[j] = log_u[j] < lp[j]
        if inM[j]:
            inn[ni] = lp[j]
            ni += 1
        else:
            out[no] = l1p[j]
            no += 1
    return inM, np_sum(inn[:ni]) + np_sum(out[:no])


def _log_q_merge_impl(sp, PS, Psc, Pn, RS, Rsc, Rn, inv_t, eps):
    """log q of merging the sets P (rows) into one, the other labels being
    R, summed over every set of P as the anchor
    (:func:`.ratio.merge_anchor_sum` of the merge probabilities)."""
    m = PS.shape[0]
    lpP = np.empty((m, m))
    l1R = np.empty((m, RS.shape[0]))
    for i in range(m):
        lpP[i] = _merge_row(sp, PS[i], Psc[i], Pn[i], PS, Psc, Pn, inv_t, eps)[0]
        l1R[i] = _merge_row(sp, PS[i], Psc[i], Pn[i], RS, Rsc, Rn, inv_t, eps)[1]
    return merge_anchor_sum(lpP, l1R)


_merge_row = compiled_only(_merge_row_impl)
_log_q_anchor = njit(cache=True)(_log_q_anchor_impl)
_anchor_draw = njit(cache=True)(_anchor_draw_impl)
_log_q_merge = njit(cache=True)(_log_q_merge_impl)


class LabelPairs:
    """The kept tables of :func:`_refresh_impl` for one kernel.

    Parameters
    ----------
    refresh : callable
        :func:`_refresh_impl`, compiled or a plain-Python copy
        (:class:`.algorithms._Fns`).
    sp : array
        The cluster score's parameters.
    merge_floor : float
        ε of the merge probability.
    """

    def __init__(self, refresh, sp, merge_floor):
        self._fn = refresh
        self._sp = sp
        self._eps = float(merge_floor)
        z = np.zeros((0, 0))
        # labels, statistics, sizes, 1/T, scores, log d, log p, log(1 - p)
        self._kept = (np.zeros(0, np.int64), z, np.zeros(0, np.int64), math.nan, np.zeros(0),
                      z, z, z)
        self.recomputed = 0  # labels recomputed so far (for the tests)

    def refresh(self, labs, S, n, temperature):
        """(scores, log d, log p, log(1 - p)) of the labels ``labs``
        (ascending) with statistics ``S`` and sizes ``n``, rows and columns
        in the order of ``labs``."""
        inv_t = 1.0 / temperature
        k = self._kept
        sc, ld, lp, l1p, fresh = self._fn(self._sp, labs, S, n, k[0], k[1], k[2], k[4], k[5],
                                          k[6], k[7], inv_t, self._eps, k[3] == inv_t)
        self.recomputed += int(fresh)
        self._kept = (labs, S, n, inv_t, sc, ld, lp, l1p)
        return sc, ld, lp, l1p
