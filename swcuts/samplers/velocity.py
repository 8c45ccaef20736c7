"""Level 0 of motion segmentation: multigrid cluster Gibbs over velocities.

The labels of level 0 are values (the K velocities of a grid and nil), not
names, so the kernel is the cluster Gibbs sampler of Barbu & Zhu (Prop. 7,
eq. 49) on the pixel lattice, inside multigrid attention windows (section
6.2, Props. 9-11): a window drawn independently of the state, a uniform
pixel of it, its component R grown over same-velocity edges inside the
window with the level-0 probabilities q⁽⁰⁾, and a new velocity for R drawn
from

    γ_k π(X_R = k | rest)^(1/T),   γ_k = Π_{C_Λ(R, V_k \\ R)} (1 − q),

with C_Λ the cut edges with both ends in the window. Every move is
accepted, and each window's kernel leaves π(X⁽⁰⁾ | X⁽¹⁾, X⁽²⁾) invariant
(the product of γ_k and the probability of growing R is the same from
every labelling of R, as for eq. 49). The arithmetic of π is the model's,
:func:`swcuts.models.motion_kernels.cluster_log_pi`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.models.motion_kernels import N_AFFINE, cluster_log_pi, move_object_stats
from swcuts._numba.primitives import draw_log_weights, log_sum_exp
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers.multigrid import default_window_weights, window_component, window_pyramid

__all__ = ["VelocityGibbs"]


@njit(cache=True)
def run_velocity(temps, sizes, cdf, h, w, pix2v, vy, vx, win, x0, D, du, dv, wu, wv, nil, beta,
                 delta, nu, obj, ostats, cu, cv, alpha, qr, qd, l1q_r, l1q_d, mark, Rbuf, in_r, acc,
                 touched, lp, cut, logw, use_cut, grid, axis_u, axis_v, grid_v, tau, row):
    """One cluster-Gibbs step per temperature; returns (Σ Δ log π, moves)."""
    empty_i = np.zeros(0, np.int64)
    empty_f = np.zeros(0)
    total = 0.0
    moved = 0
    n_lab = nil + 1
    for t in range(temps.size):
        T = temps[t]
        n_r = window_component(False, sizes, cdf, h, w, pix2v, vy, vx, win, x0, empty_f, qr, qd,
                               empty_i, empty_i, empty_i, mark, Rbuf)
        if n_r == 0:
            continue
        n_t = cluster_log_pi(Rbuf, n_r, x0, D, w, du, dv, wu, wv, nil, beta, delta, nu, obj,
                             ostats, cu, cv, alpha, qr, qd, l1q_r, l1q_d, win, in_r, acc, touched,
                             lp, cut, grid, axis_u, axis_v, grid_v, tau, row)
        ell = x0[Rbuf[0]]
        best = -np.inf
        for k in range(n_lab):
            logw[k] = lp[k] / T + (cut[k] if use_cut else 0.0)
            if logw[k] > best:
                best = logw[k]
        k = draw_log_weights(logw, n_lab, best)
        move_object_stats(n_t, touched, acc, ostats, ell, k, du, dv, nil)
        if k != ell:
            for i in range(n_r):
                x0[Rbuf[i]] = k
            total += lp[k] - lp[ell]
            moved += 1
    return total, moved


class VelocityGibbs:
    """Multigrid cluster Gibbs over the velocity labels of a
    :class:`~swcuts.models.motion.MotionPosterior`, with the objects fixed.

    Parameters
    ----------
    posterior : MotionPosterior
    obj : (H·W,) int array
        Object label of every pixel (fixed while this kernel runs).
    n_objects : int
    window_sizes : sequence of int, optional
        Window sides (default: 8, 16, … up to the image's longer side, with
        frequencies ∝ 1/side², as :class:`~swcuts.samplers.multigrid.Multigrid`).
    _omit_cut : bool
        Test hook: drop the factor γ_k (a deliberately wrong kernel, the
        negative control of the invariance test).
    _translation_only : bool
        Test hook: pull pixels to one translation per object whatever the
        posterior's ``tau`` (the level-0 kernel before the affine object
        term reached it; wrong for τ > 0, a negative control).
    """

    name = "velocity-gibbs"

    def __init__(self, posterior, obj, n_objects, window_sizes=None, _omit_cut=False,
                 _translation_only=False):
        self.post = posterior
        h, w = posterior.shape
        self.obj = np.ascontiguousarray(obj, np.int64).ravel()
        self.n_objects = int(n_objects)
        sizes = window_pyramid((h, w)) if window_sizes is None else np.asarray(window_sizes, np.int64)
        self.sizes = sizes
        self.cdf = np.cumsum(default_window_weights(sizes))
        self.pix2v = np.arange(h * w, dtype=np.int64)
        self.vy = self.pix2v // w
        self.vx = self.pix2v % w
        with np.errstate(divide="ignore"):
            self.l1q_r = np.log1p(-posterior.q_right)
            self.l1q_d = np.log1p(-posterior.q_down)
        n_lab = posterior.n_labels
        self._mark = np.zeros(h * w, np.int8)
        self._in_r = np.zeros(h * w, np.int8)
        self._rbuf = np.empty(h * w, np.int64)
        self._acc = np.zeros((self.n_objects, N_AFFINE))
        self._row = np.zeros(2 * N_AFFINE)
        self._touched = np.empty(self.n_objects, np.int64)
        self._lp = np.empty(n_lab)
        self._cut = np.empty(n_lab)
        self._logw = np.empty(n_lab)
        self._win = np.zeros(4, np.int64)
        self._axis_u = np.empty(posterior.grid.size)
        self._axis_v = np.empty(posterior.grid_v.size)
        self.use_cut = not _omit_cut
        self.affine = not _translation_only

    def set_objects(self, obj):
        """Give the pixels new object labels (the level-2 state changed);
        ``new_state`` then computes the statistics under them."""
        obj = np.ascontiguousarray(obj, np.int64).ravel()
        if obj.shape != self.obj.shape or obj.max(initial=0) >= self.n_objects:
            raise ValueError(f"objects must be {self.obj.size} labels below {self.n_objects}")
        self.obj = obj

    def new_state(self, x0):
        """(labels, object statistics, log π) for a velocity labelling."""
        x0 = np.ascontiguousarray(x0, np.int64).ravel().copy()
        ostats = self.post.affine_stats(x0, self.obj, self.n_objects)
        return VelocityState(x0, ostats, self.post.log_target(x0, self.obj))

    def run(self, state, rng, temperatures):
        """One step per temperature; updates ``state`` in place and returns
        the number of moves that changed a label."""
        seed_compiled_rng(rng)
        p = self.post
        h, w = p.shape
        total, moved = run_velocity(
            np.asarray(temperatures, np.float64), self.sizes, self.cdf, h, w, self.pix2v, self.vy,
            self.vx, self._win, state.x0, p.D, p.du, p.dv, p.wu, p.wv, p.nil, p.beta, p.delta, p.nu,
            self.obj, state.ostats, p.cu, p.cv, p.alpha, p.q_right, p.q_down, self.l1q_r,
            self.l1q_d, self._mark, self._rbuf, self._in_r, self._acc, self._touched, self._lp,
            self._cut, self._logw, self.use_cut, p.grid, self._axis_u, self._axis_v, p.grid_v,
            p.tau if self.affine else 0.0, self._row)
        state.log_pi += total
        return int(moved)

    def site_moments(self, state, sums):
        """Add the single-site conditional moments of every pixel in
        ``state`` to ``sums`` (5, H·W): P(x_p ≠ nil | rest), E[d_u 1(≠nil)
        | rest], E[d_v 1(≠nil) | rest], E[d_u² 1(≠nil) | rest],
        E[d_v² 1(≠nil) | rest].

        Averaged over posterior samples they are Rao-Blackwellised
        estimates of the moments of x_p's posterior marginal (E[g(x_p)] =
        E[E[g(x_p) | rest]]): consistent like the samples' own moments and
        never worse, and not 0 where every sample happens to agree."""
        p = self.post
        site_moments(state.x0, p.D, p.shape[1], p.du, p.dv, p.wu, p.wv, p.nil, p.beta, p.delta,
                     p.nu, self.obj, state.ostats, p.cu, p.cv, p.alpha, p.q_right, p.q_down,
                     self.l1q_r, self.l1q_d, self._in_r, self._acc, self._touched, self._lp,
                     self._cut, p.grid, self._axis_u, self._axis_v, p.grid_v,
                     p.tau if self.affine else 0.0, self._row, sums[0], sums[1], sums[2], sums[3],
                     sums[4])


class VelocityState:
    """Level-0 chain state: velocity labels, object statistics, log π."""

    def __init__(self, x0, ostats, log_pi):
        self.x0 = x0
        self.ostats = ostats
        self.log_pi = float(log_pi)


@njit(cache=True)
def site_moments(x0, D, w, du, dv, wu, wv, nil, beta, delta, nu, obj, ostats, cu, cv, alpha, qr,
                 qd, l1q_r, l1q_d, in_r, acc, touched, lp, cut, grid, axis_u, axis_v, grid_v, tau,
                 row, s0, s1u, s1v, s2u, s2v):
    """Add every pixel's single-site conditional moments π(x_p | rest) to
    ``s0`` (P(not nil)), ``s1u``, ``s1v`` (Σ_k π_k d_k over the velocity
    labels) and ``s2u``, ``s2v`` (Σ_k π_k d_k²): the Rao-Blackwellised estimates
    of the posterior moments of x_p (see :meth:`VelocityGibbs.site_moments`)."""
    R = np.empty(1, np.int64)
    win = np.zeros(4, np.int64)
    n_lab = nil + 1
    for p in range(x0.size):
        R[0] = p
        n_t = cluster_log_pi(R, R.size, x0, D, w, du, dv, wu, wv, nil, beta, delta, nu, obj, ostats,
                             cu, cv, alpha, qr, qd, l1q_r, l1q_d, win, in_r, acc, touched, lp, cut,
                             grid, axis_u, axis_v, grid_v, tau, row)
        ell = x0[p]
        move_object_stats(n_t, touched, acc, ostats, ell, ell, du, dv, nil)  # clears acc
        lz = log_sum_exp(lp, n_lab)
        for k in range(nil):
            pk = np.exp(lp[k] - lz)
            s0[p] += pk
            s1u[p] += pk * du[k]
            s1v[p] += pk * dv[k]
            s2u[p] += pk * du[k] * du[k]
            s2v[p] += pk * dv[k] * dv[k]
