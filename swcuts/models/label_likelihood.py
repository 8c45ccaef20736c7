"""The penalised log-likelihood of one label from its statistics vector
(:func:`label_loglik`): the likelihood of the image posterior
(:mod:`swcuts.models.image`), called by every compiled kernel of it
(:mod:`swcuts.models.image_kernels` re-exports it).

Its own module since its 6x6 Cholesky and triangular solves are written out
in scalars (issue 37: numba compiled the loops over ``np.zeros`` arrays in
~0.4 CPU s more, on every first run); the operations and their order are
those of the loops, so the values are the same to the bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts.models.vertex_stats import row_offsets

__all__ = ["label_loglik"]

_LOG_2PIE = math.log(2.0 * math.pi * math.e)


# ------------------------------------------------------------ likelihood
# no_cfunc_wrapper: Python and compiled code call it, never C (that wrapper
# would only cost a first run compile time).
@njit(cache=True, no_cfunc_wrapper=True)
def label_loglik(st, n_channels, n_bins, use_family, kappa, ridge):
    """Penalised log-likelihood of one label from its statistics vector.

    Layout of ``st``: [n, hist (C*B), M (36), Σφ·I (6C), Σ I² (C)].
    """
    n = st[0]
    if n <= 0.0:
        return 0.0
    C = n_channels
    B = n_bins
    w = 1.0 / B
    # BIC's log n, below n = e its tangent through 0 (n / e): concave from 0,
    # so the penalty per pixel never grows as labels shrink and splitting a
    # flat region never pays. Under the coarsened likelihood a row's n is
    # zeta x pixels, often below 1: log n would pay a label for its
    # parameters, and log max(n, 1) would let splits of few pixels go free.
    log_n = math.log(n) if n >= math.e else n / math.e
    best = -np.inf
    if use_family[0]:
        ll = 0.0
        for t in range(1, 1 + C * B):
            h = st[t]
            if h > 0.0:
                ll += h * math.log(h / n)
        ll -= kappa * 0.5 * C * (B - 1) * log_n
        best = ll
    if use_family[1] or use_family[2]:
        off_m, off_b, off_s = row_offsets(C, B)
        # Cholesky of M + ridge*n*I; its leading 3x3 block factors the linear fit.
        # Unrolled into scalars Lij (row i, column j <= i), the same operations in
        # the same order as the loops over a 6x6 array it replaces (numba compiles
        # scalars in less time than np.zeros temporaries and their indexing).
        ok = True
        s = st[off_m + 0]
        s += ridge * n
        if s <= 0.0:
            ok = False
            s = 1e-300
        L00 = math.sqrt(s)
        s = st[off_m + 6]
        L10 = s / L00
        s = st[off_m + 7]
        s += ridge * n
        s -= L10 * L10
        if s <= 0.0:
            ok = False
            s = 1e-300
        L11 = math.sqrt(s)
        s = st[off_m + 12]
        L20 = s / L00
        s = st[off_m + 13]
        s -= L20 * L10
        L21 = s / L11
        s = st[off_m + 14]
        s += ridge * n
        s -= L20 * L20
        s -= L21 * L21
        if s <= 0.0:
            ok = False
            s = 1e-300
        L22 = math.sqrt(s)
        s = st[off_m + 18]
        L30 = s / L00
        s = st[off_m + 19]
        s -= L30 * L10
        L31 = s / L11
        s = st[off_m + 20]
        s -= L30 * L20
        s -= L31 * L21
        L32 = s / L22
        s = st[off_m + 21]
        s += ridge * n
        s -= L30 * L30
        s -= L31 * L31
        s -= L32 * L32
        if s <= 0.0:
            ok = False
            s = 1e-300
        L33 = math.sqrt(s)
        s = st[off_m + 24]
        L40 = s / L00
        s = st[off_m + 25]
        s -= L40 * L10
        L41 = s / L11
        s = st[off_m + 26]
        s -= L40 * L20
        s -= L41 * L21
        L42 = s / L22
        s = st[off_m + 27]
        s -= L40 * L30
        s -= L41 * L31
        s -= L42 * L32
        L43 = s / L33
        s = st[off_m + 28]
        s += ridge * n
        s -= L40 * L40
        s -= L41 * L41
        s -= L42 * L42
        s -= L43 * L43
        if s <= 0.0:
            ok = False
            s = 1e-300
        L44 = math.sqrt(s)
        s = st[off_m + 30]
        L50 = s / L00
        s = st[off_m + 31]
        s -= L50 * L10
        L51 = s / L11
        s = st[off_m + 32]
        s -= L50 * L20
        s -= L51 * L21
        L52 = s / L22
        s = st[off_m + 33]
        s -= L50 * L30
        s -= L51 * L31
        s -= L52 * L32
        L53 = s / L33
        s = st[off_m + 34]
        s -= L50 * L40
        s -= L51 * L41
        s -= L52 * L42
        s -= L53 * L43
        L54 = s / L44
        s = st[off_m + 35]
        s += ridge * n
        s -= L50 * L50
        s -= L51 * L51
        s -= L52 * L52
        s -= L53 * L53
        s -= L54 * L54
        if s <= 0.0:
            ok = False
            s = 1e-300
        L55 = math.sqrt(s)
        if ok:
            h_lin = 0.0
            h_quad = 0.0
            for c in range(C):
                ob = off_b + 6 * c
                s = st[ob]
                z0 = s / L00
                s = st[ob + 1]
                s -= L10 * z0
                z1 = s / L11
                s = st[ob + 2]
                s -= L20 * z0
                s -= L21 * z1
                z2 = s / L22
                s = st[ob + 3]
                s -= L30 * z0
                s -= L31 * z1
                s -= L32 * z2
                z3 = s / L33
                s = st[ob + 4]
                s -= L40 * z0
                s -= L41 * z1
                s -= L42 * z2
                s -= L43 * z3
                z4 = s / L44
                s = st[ob + 5]
                s -= L50 * z0
                s -= L51 * z1
                s -= L52 * z2
                s -= L53 * z3
                s -= L54 * z4
                z5 = s / L55
                # yy - |z|^2 = yy - b'(M + ridge*n*I)^-1 b = RSS(beta) + ridge*n*|beta|^2
                # at the ridge solution beta; drop the penalty term, so that the
                # ridge only stabilises the solve (RSS(beta) = OLS RSS + O(ridge^2)).
                s = z5
                b65 = s / L55
                s = z4
                s -= L54 * b65
                b64 = s / L44
                s = z3
                s -= L43 * b64
                s -= L53 * b65
                b63 = s / L33
                s = z2
                s -= L32 * b63
                s -= L42 * b64
                s -= L52 * b65
                b62 = s / L22
                s = z1
                s -= L21 * b62
                s -= L31 * b63
                s -= L41 * b64
                s -= L51 * b65
                b61 = s / L11
                s = z0
                s -= L10 * b61
                s -= L20 * b62
                s -= L30 * b63
                s -= L40 * b64
                s -= L50 * b65
                b60 = s / L00
                s = z2
                b32 = s / L22
                s = z1
                s -= L21 * b32
                b31 = s / L11
                s = z0
                s -= L10 * b31
                s -= L20 * b32
                b30 = s / L00
                yy = st[off_s + c]
                r3 = yy - (z0 * z0 + z1 * z1 + z2 * z2)
                r6 = r3 - (z3 * z3 + z4 * z4 + z5 * z5)
                r3 -= ridge * n * (b30 * b30 + b31 * b31 + b32 * b32)
                r6 -= ridge * n * (b60 * b60 + b61 * b61 + b62 * b62
                                   + b63 * b63 + b64 * b64 + b65 * b65)

                var3 = max(r3 / n, 0.0) + w * w / 12.0
                var6 = max(r6 / n, 0.0) + w * w / 12.0
                h_lin += 0.5 * (_LOG_2PIE + math.log(var3)) - math.log(w)
                h_quad += 0.5 * (_LOG_2PIE + math.log(var6)) - math.log(w)
            if use_family[1]:
                ll = -n * h_lin - kappa * 0.5 * C * 4 * log_n
                if ll > best:
                    best = ll
            if use_family[2]:
                ll = -n * h_quad - kappa * 0.5 * C * 7 * log_n
                if ll > best:
                    best = ll
    return best
