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
def cluster_log_pi(R, n_r, x0, D, lattice_w, du, dv, wu, wv, nil, beta, delta, nu, obj, ostats,
                   cu, cv, alpha, qr, qd, log1mq_r, log1mq_d, win, in_r, acc, touched, lp, cut,
                   grid, axis_u, axis_v, grid_v):
    """log π(X_R = k | rest) + const for every label k = 0..nil of the
    pixel set ``R`` (one label ℓ on entry), into ``lp``; and into ``cut``
    Σ log(1 − q) over the edges from R to pixels of label k outside R with
    both ends in the window ``win`` (the cluster-Gibbs factor γ_k of
    eq. 49). Δ log π of relabelling R ℓ → k is ``lp[k] − lp[ℓ]``.

    ``acc`` (n_objects, 4) and ``in_r`` must be zero on entry; ``in_r`` is
    zero on return and ``acc`` holds R's sums per object (the base-flow
    part: count, Σ w_u, Σ w_v, Σ ‖w‖²) for :func:`move_object_stats`, which
    clears it. ``touched`` lists the objects R meets; returns their count.
    ``grid`` and ``grid_v`` are the two axes of the labels (d_k =
    (grid[k % n], grid_v[k // n]), n = grid.size; grid_v = [0] for
    horizontal motion only, stereo); ``axis_u``, ``axis_v`` are scratch of
    their sizes.
    """
    n_lab = nil + 1
    w = lattice_w
    h = D.shape[0] // w
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
        acc[o, 0] += 1.0
        acc[o, 1] += wu[p]
        acc[o, 2] += wv[p]
        acc[o, 3] += wu[p] * wu[p] + wv[p] * wv[p]
        y = p // w
        x = p - y * w
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
    for i in range(n_touched):
        o = touched[i]
        m, su, sv, s2 = acc[o, 0], acc[o, 1], acc[o, 2], acc[o, 3]
        n0, r1u, r1v, r2 = ostats[o, 0], ostats[o, 1], ostats[o, 2], ostats[o, 3]
        if ell != nil:  # remove R's current velocities
            n0 -= m
            r1u -= su + m * du[ell]
            r1v -= sv + m * dv[ell]
            r2 -= s2 + 2.0 * (du[ell] * su + dv[ell] * sv) + m * (du[ell] ** 2 + dv[ell] ** 2)
        # f(o) at label k: the spread term per k, the two axis sums per
        # grid value (they depend on k only through d_k's u or v).
        nk = n0 + m
        for i in range(grid.size):
            axis_u[i] = _axis_log_sum(cu, (r1u + su + m * grid[i]) / nk, alpha * nk)
        for i in range(grid_v.size):
            axis_v[i] = _axis_log_sum(cv, (r1v + sv + m * grid_v[i]) / nk, alpha * nk)
        for k in range(nil):
            lp[k] += (_spread(nk, r1u + su + m * du[k], r1v + sv + m * dv[k],
                              r2 + s2 + 2.0 * (du[k] * su + dv[k] * sv)
                              + m * (du[k] ** 2 + dv[k] ** 2), alpha)
                      + axis_u[k % grid.size] + axis_v[k // grid.size])
        lp[nil] += object_score(n0, r1u, r1v, r2, cu, cv, alpha)
    for t in range(n_r):
        in_r[R[t]] = 0
    return n_touched


@njit(cache=True)
def move_object_stats(n_touched, touched, acc, ostats, old, new, du, dv, nil):
    """Move the statistics of R (gathered in ``acc`` by
    :func:`cluster_log_pi`) from label ``old`` to ``new``; clears ``acc``."""
    for i in range(n_touched):
        o = touched[i]
        if old == new:
            for j in range(4):
                acc[o, j] = 0.0
            continue
        m, su, sv, s2 = acc[o, 0], acc[o, 1], acc[o, 2], acc[o, 3]
        if old != nil:
            ostats[o, 0] -= m
            ostats[o, 1] -= su + m * du[old]
            ostats[o, 2] -= sv + m * dv[old]
            ostats[o, 3] -= s2 + 2.0 * (du[old] * su + dv[old] * sv) + m * (du[old] ** 2 + dv[old] ** 2)
        if new != nil:
            ostats[o, 0] += m
            ostats[o, 1] += su + m * du[new]
            ostats[o, 2] += sv + m * dv[new]
            ostats[o, 3] += s2 + 2.0 * (du[new] * su + dv[new] * sv) + m * (du[new] ** 2 + dv[new] ** 2)
        for j in range(4):
            acc[o, j] = 0.0
