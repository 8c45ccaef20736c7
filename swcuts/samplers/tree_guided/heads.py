"""The head of a global move of the tree-guided kernel, compiled.

Every global move of :class:`~.kernel.TreeGuided` on a mixture draws its
merge set from the kept merge probabilities (:mod:`.pairs`), and a merge
sums its labels' statistics and sizes before its first bound rejects most
merges. In Python these were ~20 numpy calls on L-vectors (~20 µs a move,
whatever n: at n = 100,000 merges are 43 % of the moves and more than half
of them end at the first bound, docs/algorithms/tree_guided.md, "Fifth
round"). :func:`merge_set` does it in one compiled call with the same
floating-point operations in the same order, so the same bits:

* the sums of log p and log(1 - p) as numpy sums a 1-D array (identity
  0, then its pairwise summation: :func:`swcuts._numba.primitives.np_sum`);
* the merged statistics as ``S[rows].sum(axis=0)`` adds them: zeros,
  then row after row in the order of ``rows`` (pairwise when there is one
  column).

The tests check both against numpy (``tests/test_tree_guided_heads.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts._numba.primitives import np_sum  # noqa: F401 (its home; tests import it here)


@njit(cache=True)
def merge_set(a, log_u, lpm, l1pm, S, n):
    """The merge set of a global move with anchor row ``a`` and, when it is
    not empty, the merged labels' sums.

    Parameters
    ----------
    a : int
        The anchor's row (of the L labels, ascending).
    log_u : ndarray
        log of the L - 1 uniforms drawn for the other labels, ascending.
    lpm, l1pm : ndarray (L, L)
        log p and log(1 - p) between the labels (:mod:`.pairs`).
    S, n : ndarray
        The labels' summed statistics (rows) and sizes.

    Returns
    -------
    perm : ndarray of int64
        The rows of the merged labels P, the anchor first and the others
        ascending, then the rows of the other labels, ascending.
    k : int
        |P| (1: the merge set is empty, a split).
    lsum : float
        Σ log p over the merge set plus Σ log(1 - p) over the others, as
        ``lp[inM].sum() + l1p[~inM].sum()`` (the anchor's log q less
        log L).
    S_U : ndarray
        The summed statistics of P, as ``S[perm[:k]].sum(axis=0)``.
    n_U, keep : int
        Its size, and the index in ``perm[:k]`` of the largest label (the
        first of equals).
    """
    L = lpm.shape[0]
    D = S.shape[1]
    perm = np.empty(L, np.int64)
    perm[0] = a
    inn = np.empty(max(L - 1, 0))
    out = np.empty(max(L - 1, 0))
    k = 1
    ni = 0
    no = 0
    for i in range(L - 1):
        j = i if i < a else i + 1
        if log_u[i] < lpm[a, j]:
            perm[k] = j
            k += 1
            inn[ni] = lpm[a, j]
            ni += 1
        else:
            out[no] = l1pm[a, j]
            no += 1
            perm[L - no] = j  # from the end: reversed below
    rest = perm[k:].copy()
    for i in range(rest.shape[0]):
        perm[k + i] = rest[rest.shape[0] - 1 - i]
    lsum = np_sum(inn[:ni]) + np_sum(out[:no])
    S_U = np.zeros(D)
    n_U = 0
    keep = 0
    if k > 1:
        if D == 1:
            col = np.empty(k)
            for t in range(k):
                col[t] = S[perm[t], 0]
            S_U[0] = np_sum(col)
        else:
            for t in range(k):  # S_U starts at zeros: numpy's identity
                for q in range(D):
                    S_U[q] += S[perm[t], q]
        for t in range(k):
            n_U += n[perm[t]]
            if n[perm[t]] > n[perm[keep]]:
                keep = t
    return perm, k, lsum, S_U, n_U, keep
