"""Cluster scores s(A) of sets from their summed statistics.

:func:`_score_any` is the score the tree-guided kernel's dissimilarity
log d(A, B) = s(A) + s(B) - s(A ∪ B) is made of (the model's arithmetic,
called, not repeated); :func:`_logd_matrix_impl` and :func:`_scores_impl`
apply it to many sets. See ``docs/algorithms/tree_guided.md``
("Dissimilarity").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.models.base import SCORE_IMAGE
from swcuts.models.image_kernels import set_score
from swcuts.models.mixture.marginals import log_marginal
from swcuts.models.mixture.priors import prior_log_factor


@njit(cache=True)
def _score_any(st, n, sp):
    """Cluster score of a set with summed statistics ``st`` and ``n`` items.

    ``sp`` is what the model's ``cluster_score()`` returns; ``sp[0]`` selects the model: SCORE_IMAGE, sp[1:] = [C, B, use_hist,
    use_lin, use_quad, kappa, ridge, a0 + a1, a2, exponent]
    (:func:`swcuts.models.image_kernels.set_score`); SCORE_MIXTURE,
    sp[1:] = [likelihood kind, the partition prior's parameters (3,
    :mod:`swcuts.models.mixture.priors`), likelihood params...] (the
    potential κ(n) m(x) with log κ(n) = f(n), the prior's cluster factor;
    log α + lgamma(n) for the DP). The plain-Python helpers rebind this name
    to a user's score.

    Not inlined itself (inlining it into its ~25 callers more than doubled
    the cold compile of the kernel, 24 → 59 s), but its callees are
    (``log_marginal`` and the ``_lm_*``, ``inline="always"``): one compiled
    call per score, ~60 ns for the 2-D NIW against ~110 with the calls
    nested.
    """
    if sp[0] == SCORE_IMAGE:
        return set_score(st, sp)
    return prior_log_factor(sp[2:5], n, log_marginal(int(sp[1]), st, sp[5:]))


#: The score of the walks and replays of :mod:`.walks`: :func:`_score_any`
#: itself. (Inlined there, numba typed the whole model arithmetic again at
#: each of those call sites: ~20 s more of a first compile, empty cache, to
#: save ~10 ns a score, 50 against 60 ns.)
_score_inline = _score_any


@njit(cache=True, inline="always")
def _same_stats(a, b):
    """Whether two statistics rows are equal bit for bit (a kept score or
    merge probability is reused only then, so reuse changes no result)."""
    for q in range(a.shape[0]):
        if a[q] != b[q]:
            return False
    return True


def _logd_pair_impl(sp, Sa, sa, na, Sb, sb, nb, tmp):
    """log d(A, B) = s(A) + s(B) - s(A ∪ B) of two disjoint sets from their
    summed statistics, scores and sizes (``tmp``: a scratch row)."""
    np.add(Sa, Sb, tmp)
    return sa + sb - _score_any(tmp, na + nb, sp)


def _logd_matrix_impl(sp, SA, sA, nA, SB, sB, nB):
    """log d between every set of A and every set of B, from their statistics."""
    out = np.empty((SA.shape[0], SB.shape[0]))
    tmp = np.empty(SA.shape[1])
    for i in range(SA.shape[0]):
        for j in range(SB.shape[0]):
            out[i, j] = _logd_pair(sp, SA[i], sA[i], nA[i], SB[j], sB[j], nB[j], tmp)
    return out


def _scores_impl(sp, S, n):
    """Cluster scores of sets with statistics ``S`` (rows) and sizes ``n``."""
    out = np.empty(S.shape[0])
    for i in range(S.shape[0]):
        out[i] = _score_any(S[i], n[i], sp)
    return out


_logd_pair = njit(cache=True)(_logd_pair_impl)
_logd_matrix = njit(cache=True)(_logd_matrix_impl)
_scores = njit(cache=True)(_scores_impl)
