"""Compiled arithmetic of the motion posterior (Barbu & Zhu, eqs. 73-75).

The one home of the level-0 and level-2 terms that the motion kernels
evaluate; :class:`swcuts.models.motion.MotionPosterior` computes ``log π``
from scratch with the same functions, so a kernel's Δ and the model's
``log_target`` cannot drift apart.

Notation. Pixel ``p`` has velocity label ``x_p`` in ``0..K`` (``K`` is nil,
the half-occluded label); its velocity is ``w_p + d_k`` with ``w`` the base
flow of the pyramid level (0 on a single scale) and ``d_k`` the label's
displacement. Objects ``o`` carry a velocity ``c_o`` on a product grid
``C = C_u × C_v``; it is summed out of the prior (the collapsed form of
eq. 75's first factor), which leaves, per object, with ``n, S1, S2`` the
count, sum and sum of squares of the velocities of its non-nil pixels,

    f(o) = log Σ_{c ∈ C} exp(−α Σ_p ‖x_p − c‖²)
         = −α (S2 − ‖S1‖²/n) + Σ_{axis} log Σ_{c_a} exp(−α n (c_a − S1_a/n)²),

separable over the two axes (``n = 0`` gives ``log |C|``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["pair_cost", "object_score", "object_scores", "cluster_log_pi", "move_object_stats",
           "N_STATS"]

#: Object statistics per row: n, S1_u, S1_v, S2 (non-nil pixels only).
N_STATS = 4

#: Columns of the affine statistics (:mod:`swcuts.models.affine_objects`):
#: the four above, then Σx, Σy, Σx², Σxy, Σy², Σxu, Σyu, Σxv, Σyv.
N_AFFINE = 13


@njit(cache=True)
def pair_cost(a, b, p, q, du, dv, wu, wv, nil, beta, delta, nu):
    """Eq. 75's Markov term on one neighbour pair: β‖x_p − x_q‖ + δ·1[a ≠ b]
    (the level-0 boundary length), with distance ``nu`` between nil and any
    velocity and 0 between two nils."""
    if a == nil:
        if b == nil:
            return 0.0
        return beta * nu + delta
    if b == nil:
        return beta * nu + delta
    eu = wu[p] + du[a] - wu[q] - du[b]
    ev = wv[p] + dv[a] - wv[q] - dv[b]
    dist = math.sqrt(eu * eu + ev * ev)
    return beta * dist + (delta if a != b else 0.0)


#: Terms below e^-TAIL of the largest are dropped from a log-sum-exp: they
#: change it by less than the float64 rounding of the largest term.
TAIL = 40.0


@njit(cache=True)
def _axis_log_sum(grid, mean, precision):
    """log Σ_c exp(−precision (c − mean)²) over one axis of the (uniform)
    grid, summed outward from the grid point nearest the mean until the
    terms fall below e^-TAIL of the largest."""
    n = grid.size
    if n == 1:
        return -precision * (grid[0] - mean) ** 2
    step = grid[1] - grid[0]
    i0 = int(round((mean - grid[0]) / step))
    i0 = min(max(i0, 0), n - 1)
    best = -precision * (grid[i0] - mean) ** 2
    s = 1.0
    i = i0 - 1
    while i >= 0:
        e = -precision * (grid[i] - mean) ** 2 - best
        if e < -TAIL:
            break
        s += math.exp(e)
        i -= 1
    i = i0 + 1
    while i < n:
        e = -precision * (grid[i] - mean) ** 2 - best
        if e < -TAIL:
            break
        s += math.exp(e)
        i += 1
    return best + math.log(s)


@njit(cache=True)
def _spread(n, s1u, s1v, s2, alpha):
    """−α Σ_p ‖x_p − mean‖² of an object's statistics (n > 0)."""
    return -alpha * max(s2 - (s1u * s1u + s1v * s1v) / n, 0.0)


@njit(cache=True)
def object_score(n, s1u, s1v, s2, cu, cv, alpha):
    """f(o) of the module docstring from an object's statistics."""
    if n <= 0.0:
        return math.log(cu.size * cv.size)
    return (_spread(n, s1u, s1v, s2, alpha) + _axis_log_sum(cu, s1u / n, alpha * n)
            + _axis_log_sum(cv, s1v / n, alpha * n))


@njit(cache=True)
def object_scores(stats, cu, cv, alpha):
    """f(o) of every row of ``stats`` (shape (n_objects, N_STATS))."""
    out = np.empty(stats.shape[0])
    for o in range(stats.shape[0]):
        out[o] = object_score(stats[o, 0], stats[o, 1], stats[o, 2], stats[o, 3], cu, cv, alpha)
    return out


@njit(cache=True)
def _centred(st):
    """(n, Sxx, Sxy, Syy, sxu, syu, sxv, syv) of the moments about the centroid."""
    n = st[0]
    mx, my = st[4] / n, st[5] / n
    sxx = max(st[6] - n * mx * mx, 0.0)
    syy = max(st[8] - n * my * my, 0.0)
    sxy = st[7] - n * mx * my
    mu, mv = st[1] / n, st[2] / n
    sxu = st[9] - n * mx * mu
    syu = st[10] - n * my * mu
    sxv = st[11] - n * mx * mv
    syv = st[12] - n * my * mv
    return sxx, sxy, syy, sxu, syu, sxv, syv


@njit(cache=True)
def _gradient_term(st, alpha, tau, occam, n_axes):
    """Σ_a [2α² s_aᵀ M⁻¹ s_a − occam · ½ log det(τ² M)] of the module docstring
    over the first ``n_axes`` axes (2; 1: u only, stereo, where v ≡ 0 has no
    gradient to integrate) (``occam`` = 1; 0 only for the tests' negative
    control)."""
    if tau <= 0.0 or st[0] <= 0.0:
        return 0.0
    sxx, sxy, syy, sxu, syu, sxv, syv = _centred(st)
    k = 2.0 * alpha * tau * tau
    # τ² M = I + k S; its inverse times τ² is M⁻¹.
    a, b, d = 1.0 + k * sxx, k * sxy, 1.0 + k * syy
    det = a * d - b * b
    t2 = tau * tau
    # sᵀ M⁻¹ s = τ² sᵀ (τ² M)⁻¹ s, per axis
    out = 2.0 * alpha * alpha * t2 * (d * sxu * sxu - 2.0 * b * sxu * syu + a * syu * syu) / det
    if n_axes > 1:
        out += 2.0 * alpha * alpha * t2 * (d * sxv * sxv - 2.0 * b * sxv * syv + a * syv * syv) / det
    return out - occam * 0.5 * n_axes * math.log(det)


@njit(cache=True)
def _shift_row(row, acc_o, d_u, d_v, sign):
    """``row`` += sign · (R's affine statistics at displacement (d_u, d_v))
    from R's base-flow sums ``acc_o`` (see :func:`cluster_log_pi`)."""
    m, su, sv, s2 = acc_o[0], acc_o[1], acc_o[2], acc_o[3]
    ax, ay = acc_o[4], acc_o[5]
    row[0] += sign * m
    row[1] += sign * (su + m * d_u)
    row[2] += sign * (sv + m * d_v)
    row[3] += sign * (s2 + 2.0 * (d_u * su + d_v * sv) + m * (d_u * d_u + d_v * d_v))
    for j in range(4, 9):
        row[j] += sign * acc_o[j]
    row[9] += sign * (acc_o[9] + d_u * ax)
    row[10] += sign * (acc_o[10] + d_u * ay)
    row[11] += sign * (acc_o[11] + d_v * ax)
    row[12] += sign * (acc_o[12] + d_v * ay)


@njit(cache=True)
def cluster_log_pi(R, n_r, x0, D, lattice_w, du, dv, wu, wv, nil, beta, delta, nu, obj, ostats,
                   cu, cv, alpha, qr, qd, log1mq_r, log1mq_d, win, in_r, acc, touched, lp, cut,
                   grid, axis_u, axis_v, grid_v, tau, row):
    """log π(X_R = k | rest) + const for every label k = 0..nil of the
    pixel set ``R`` (one label ℓ on entry), into ``lp``; and into ``cut``
    Σ log(1 − q) over the edges from R to pixels of label k outside R with
    both ends in the window ``win`` (the cluster-Gibbs factor γ_k of
    eq. 49). Δ log π of relabelling R ℓ → k is ``lp[k] − lp[ℓ]``.

    The object term is the affine one of
    :mod:`swcuts.models.affine_objects` (gradient prior deviation ``tau``;
    τ = 0 is the translation model exactly), so ``ostats`` has
    :data:`N_AFFINE` columns (positions from the lattice's centre).
    ``acc`` (n_objects, N_AFFINE) and ``in_r`` must be zero on entry;
    ``in_r`` is zero on return and ``acc`` holds R's sums per object (the
    base-flow part: count, Σ w_u, Σ w_v, Σ ‖w‖², Σx, Σy, Σx², Σxy, Σy²,
    Σx w_u, Σy w_u, Σx w_v, Σy w_v) for :func:`move_object_stats`, which
    clears it. ``touched`` lists the objects R meets; returns their count.
    ``grid`` and ``grid_v`` are the two axes of the labels (d_k =
    (grid[k % n], grid_v[k // n]), n = grid.size; grid_v = [0] for
    horizontal motion only, stereo); ``axis_u``, ``axis_v`` are scratch of
    their sizes, ``row`` scratch of 2 · N_AFFINE.
    """
    n_lab = nil + 1
    w = lattice_w
    h = D.shape[0] // w
    xc = (w - 1) / 2.0
    yc = (h - 1) / 2.0
    n_axes = 2 if cv.size > 1 else 1
    for k in range(n_lab):
        lp[k] = 0.0
        cut[k] = 0.0
    for t in range(n_r):
        in_r[R[t]] = 1
    n_touched = 0
    for t in range(n_r):
        p = R[t]
        for k in range(n_lab):
            lp[k] -= D[p, k]
        o = obj[p]
        if acc[o, 0] == 0.0:
            touched[n_touched] = o
            n_touched += 1
        y = p // w
        x = p - y * w
        px = x - xc
        py = y - yc
        acc[o, 0] += 1.0
        acc[o, 1] += wu[p]
        acc[o, 2] += wv[p]
        acc[o, 3] += wu[p] * wu[p] + wv[p] * wv[p]
        acc[o, 4] += px
        acc[o, 5] += py
        acc[o, 6] += px * px
        acc[o, 7] += px * py
        acc[o, 8] += py * py
        acc[o, 9] += px * wu[p]
        acc[o, 10] += py * wu[p]
        acc[o, 11] += px * wv[p]
        acc[o, 12] += py * wv[p]
        # The four lattice neighbours: (q, log(1 - q_pq)).
        for side in range(4):
            if side == 0:
                if x + 1 >= w:
                    continue
                q = p + 1
                l1q = log1mq_r[p]
            elif side == 1:
                if x == 0:
                    continue
                q = p - 1
                l1q = log1mq_r[q]
            elif side == 2:
                if y + 1 >= h:
                    continue
                q = p + w
                l1q = log1mq_d[p]
            else:
                if y == 0:
                    continue
                q = p - w
                l1q = log1mq_d[q]
            if in_r[q]:
                if q > p:  # inside R: both ends get k; only nil-nil differs
                    c = pair_cost(0, 0, p, q, du, dv, wu, wv, nil, beta, delta, nu)
                    for k in range(nil):
                        lp[k] -= c
                continue
            b = x0[q]
            for k in range(n_lab):
                lp[k] -= pair_cost(k, b, p, q, du, dv, wu, wv, nil, beta, delta, nu)
            qy = q // w
            qx = q - qy * w
            if win[0] <= qy < win[1] and win[2] <= qx < win[3]:
                cut[b] += l1q
    # The objects R meets: their statistics without R's pixels, plus R at k.
    ell = x0[R[0]]
    na = acc.shape[1]
    for i in range(n_touched):
        o = touched[i]
        m, su, sv, s2 = acc[o, 0], acc[o, 1], acc[o, 2], acc[o, 3]
        for j in range(na):
            row[j] = ostats[o, j]
        if ell != nil:  # remove R's current velocities
            _shift_row(row, acc[o], du[ell], dv[ell], -1.0)
        n0, r1u, r1v, r2 = row[0], row[1], row[2], row[3]
        # f(o) at label k: the spread term per k, the two axis sums per
        # grid value (they depend on k only through d_k's u or v).
        nk = n0 + m
        for i2 in range(grid.size):
            axis_u[i2] = _axis_log_sum(cu, (r1u + su + m * grid[i2]) / nk, alpha * nk)
        for i2 in range(grid_v.size):
            axis_v[i2] = _axis_log_sum(cv, (r1v + sv + m * grid_v[i2]) / nk, alpha * nk)
        for k in range(nil):
            lp[k] += (_spread(nk, r1u + su + m * du[k], r1v + sv + m * dv[k],
                              r2 + s2 + 2.0 * (du[k] * su + dv[k] * sv)
                              + m * (du[k] ** 2 + dv[k] ** 2), alpha)
                      + axis_u[k % grid.size] + axis_v[k // grid.size])
        lp[nil] += object_score(n0, r1u, r1v, r2, cu, cv, alpha)
        if tau > 0.0:
            lp[nil] += _gradient_term(row[:na], alpha, tau, 1.0, n_axes)
            with_r = row[na:2 * na]
            for k in range(nil):
                for j in range(na):
                    with_r[j] = row[j]
                _shift_row(with_r, acc[o], du[k], dv[k], 1.0)
                lp[k] += _gradient_term(with_r, alpha, tau, 1.0, n_axes)
    for t in range(n_r):
        in_r[R[t]] = 0
    return n_touched


@njit(cache=True)
def move_object_stats(n_touched, touched, acc, ostats, old, new, du, dv, nil):
    """Move the statistics of R (gathered in ``acc`` by
    :func:`cluster_log_pi`) from label ``old`` to ``new``; clears ``acc``."""
    na = acc.shape[1]
    for i in range(n_touched):
        o = touched[i]
        if old != new:
            if old != nil:
                _shift_row(ostats[o], acc[o], du[old], dv[old], -1.0)
            if new != nil:
                _shift_row(ostats[o], acc[o], du[new], dv[new], 1.0)
        for j in range(na):
            acc[o, j] = 0.0
