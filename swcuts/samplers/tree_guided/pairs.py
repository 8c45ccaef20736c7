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

import numpy as np
from numba import njit

from .ratio import merge_lp1
from .scores import _score_any


def _refresh_impl(sp, S, n, keep_from, old_sc, old_ld, old_lp, old_l1p, inv_t, eps, same_t):
    """Scores, log d, log p and log(1 - p) of the labels with statistics
    ``S`` (rows) and sizes ``n``; label i is row ``keep_from[i]`` of the
    kept tables (-1: changed or new), whose log p and log(1 - p) are at the
    same temperature when ``same_t``. log d as :func:`.scores._logd_matrix_impl`,
    log p as :func:`.ratio._merge_lp`."""
    L = S.shape[0]
    sc = np.empty(L)
    for i in range(L):
        sc[i] = old_sc[keep_from[i]] if keep_from[i] >= 0 else _score_any(S[i], n[i], sp)
    ld = np.empty((L, L))
    lp = np.empty((L, L))
    l1p = np.empty((L, L))
    tmp = np.empty(S.shape[1])
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
                np.add(S[i], S[j], tmp)
                ld[i, j] = sc[i] + sc[j] - _score_any(tmp, n[i] + n[j], sp)
            lp[i, j], l1p[i, j] = merge_lp1(ld[i, j], inv_t, eps)
    return sc, ld, lp, l1p


_refresh = njit(cache=True)(_refresh_impl)


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
        self._kept = None
        self.recomputed = 0  # labels recomputed so far (for the tests)

    def refresh(self, labs, S, n, temperature):
        """(scores, log d, log p, log(1 - p)) of the labels ``labs``
        (ascending) with statistics ``S`` and sizes ``n``, rows and columns
        in the order of ``labs``."""
        inv_t = 1.0 / temperature
        kept = self._kept
        L = labs.size
        if kept is None or kept[0].size == 0:
            keep_from = np.full(L, -1, np.int64)
            zeros = np.zeros((0, 0))
            old = (np.zeros(0), zeros, zeros, zeros)
            same_t = False
        else:
            klabs, kS, kn, inv_t0 = kept[0], kept[1], kept[2], kept[3]
            idx = np.minimum(np.searchsorted(klabs, labs), klabs.size - 1)
            same = (klabs[idx] == labs) & (kn[idx] == n) & np.all(kS[idx] == S, axis=1)
            keep_from = np.where(same, idx, -1).astype(np.int64)
            old = kept[4:]
            same_t = inv_t0 == inv_t
        out = self._fn(self._sp, S, n, keep_from, *old, inv_t, self._eps, same_t)
        self.recomputed += int(np.count_nonzero(keep_from < 0))
        self._kept = (labs, S, n, inv_t) + tuple(out)
        return out
