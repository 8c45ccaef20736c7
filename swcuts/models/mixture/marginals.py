"""Compiled log marginal likelihoods of one cluster, from its statistics.

Each built-in likelihood (:mod:`.likelihoods`) has a ``kind`` code and a
float ``params`` vector; :func:`log_marginal` dispatches on the code. The
statistics layouts are documented in each ``_lm_*`` function and the
formulas in ``docs/algorithms/mixture.md``.

All are ``inline="always"``: numba types them inside each compiled caller
(the tree-guided cluster score, the mixture kernels), so a score is one
compiled call, not three nested ones with array arguments (a 2-D NIW
score ~60 ns instead of ~110); the arithmetic, hence every bit, is the
same.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

KIND_BETA_BERNOULLI = 0
KIND_NIW = 1
KIND_LINES = 2
KIND_MULTINOMIAL = 3

_LOG_PI = math.log(math.pi)
_LOG_2PI = math.log(2.0 * math.pi)
_LOG2 = math.log(2.0)


@njit(cache=True, inline="always")
def _lm_beta_bernoulli(st, p):
    """Layout of ``st``: [n, Σx_1, ..., Σx_d]; ``p`` = [a, b, ln B(a, b)]."""
    n = st[0]
    a = p[0]
    b = p[1]
    lgab = math.lgamma(a + b + n)
    s = 0.0
    for i in range(1, st.size):
        k = st[i]
        s += math.lgamma(a + k) + math.lgamma(b + n - k) - lgab - p[2]
    return s


@njit(cache=True, inline="always")
def _lm_niw(st, p):
    """Layout of ``st``: [n, Σy (d), Σyyᵀ (d·d, row-major)] with y = x − μ0;
    ``p`` = [d, κ0, ν0, log|Ψ0|, Ψ0 (d·d), c0] with the constant
    c0 = ½ ν0 log|Ψ0| + ½ d log κ0 − Σ_j log Γ((ν0 − j)/2), j = 0..d−1."""
    n = st[0]
    d = int(p[0])
    kappa0 = p[1]
    nn = p[2] + n
    kn = kappa0 + n
    # Ψn = Ψ0 + Σyyᵀ − (Σy)(Σy)ᵀ / κn (Murphy 2007 with μ0 = 0 after shifting).
    if d == 1:
        det = p[4] + st[2] - st[1] * st[1] / kn
        if det <= 0.0:
            return -np.inf
        logdet = math.log(det)
    elif d == 2:
        # Cholesky of [[a, b], [b, c]] by hand (no allocation).
        a = p[4] + st[3] - st[1] * st[1] / kn
        b = p[6] + st[5] - st[2] * st[1] / kn
        c = p[7] + st[6] - st[2] * st[2] / kn
        if a <= 0.0:
            return -np.inf
        r = c - b * b / a
        if r <= 0.0:
            return -np.inf
        logdet = math.log(a * r)
    else:
        # Cholesky of the lower triangle, in place in a small matrix.
        L = np.empty((d, d))
        for i in range(d):
            for j in range(i + 1):
                L[i, j] = p[4 + i * d + j] + st[1 + d + i * d + j] - st[1 + i] * st[1 + j] / kn
        logdet = 0.0
        for j in range(d):
            s = L[j, j]
            for k in range(j):
                s -= L[j, k] * L[j, k]
            if s <= 0.0:
                return -np.inf
            s = math.sqrt(s)
            L[j, j] = s
            logdet += 2.0 * math.log(s)
            for i in range(j + 1, d):
                t = L[i, j]
                for k in range(j):
                    t -= L[i, k] * L[j, k]
                L[i, j] = t / s
    # Σ_j log Γ((νn − j)/2), the factors paired by the
    # duplication formula Γ(z)Γ(z + ½) = 2^(1−2z) √π Γ(2z), z = (νn − j − 1)/2.
    lg = 0.0
    j = 0
    while j + 1 < d:
        lg += math.lgamma(nn - j - 1.0) + (2.0 - nn + j) * _LOG2 + 0.5 * _LOG_PI
        j += 2
    if j < d:
        lg += math.lgamma(0.5 * (nn - j))
    return -0.5 * n * d * _LOG_PI + lg - 0.5 * nn * logdet - 0.5 * d * math.log(kn) + p[4 + d * d]


@njit(cache=True, inline="always")
def _lm_lines(st, p):
    """Layout of ``st``: [n, Σx², Σx, Σxy, Σy, Σy²]; ``p`` = [σ², Λ0 (3:
    00, 01, 11), Λ0 m0 (2), m0ᵀΛ0 m0, log|S0|] with Λ0 = S0⁻¹."""
    n = st[0]
    s2 = p[0]
    l00 = p[1] + st[1] / s2
    l01 = p[2] + st[2] / s2
    l11 = p[3] + st[0] / s2
    b0 = p[4] + st[3] / s2
    b1 = p[5] + st[4] / s2
    det = l00 * l11 - l01 * l01
    quad = (l11 * b0 * b0 - 2.0 * l01 * b0 * b1 + l00 * b1 * b1) / det
    return (-0.5 * n * (_LOG_2PI + math.log(s2)) - 0.5 * p[7] - 0.5 * math.log(det)
            - 0.5 * (st[5] / s2 + p[6] - quad))


@njit(cache=True, inline="always")
def _lm_multinomial(st, p):
    """Layout of ``st``: [n, N, Σ log multinomial coefficients, s_1, ...,
    s_V] (items, total count, the items' log(N_i! / Π_v x_iv!) summed, the
    count of each category); ``p`` = [β, Vβ, lgamma(Vβ), lgamma(β)]."""
    beta = p[0]
    s = st[2] + p[2] - math.lgamma(p[1] + st[1])
    for v in range(3, st.size):
        if st[v] != 0.0:  # a zero count contributes lgamma(β) − lgamma(β) = 0
            s += math.lgamma(beta + st[v]) - p[3]
    return s


@njit(cache=True, inline="always")
def log_marginal(kind, st, params):
    """Log marginal likelihood of one cluster from its statistics vector.

    Parameters
    ----------
    kind : int
        ``KIND_BETA_BERNOULLI``, ``KIND_NIW``, ``KIND_LINES`` or
        ``KIND_MULTINOMIAL``.
    st : ndarray of float64
        The cluster's sufficient statistics (the likelihood's layout).
    params : ndarray of float64
        The likelihood's ``params`` vector.

    Returns
    -------
    float
    """
    if kind == KIND_BETA_BERNOULLI:
        return _lm_beta_bernoulli(st, params)
    if kind == KIND_NIW:
        return _lm_niw(st, params)
    if kind == KIND_MULTINOMIAL:
        return _lm_multinomial(st, params)
    return _lm_lines(st, params)
