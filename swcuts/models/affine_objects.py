"""Affine object motion: the object term of eq. 75 with c_o an affine map.

Eq. 75 pulls every pixel of object o to the object's one velocity c_o,
exp(−α Σ_p ‖x_p − c_o‖²), and :mod:`swcuts.models.motion_kernels` sums c_o
out over its grid C. A slanted or rotating surface has no one velocity,
so it pays for its spread and level 2 cuts it into strips. Here every
object moves by an affine map of position (6 parameters; ours, not the
paper's),

    c_o(p) = t_o + B_o (p − p̄_o),

with p̄_o the centroid of the object's non-nil pixels, t_o on the grid C
as before (summed out exactly as the translation model sums c_o) and the
2 × 2 gradient B_o a priori Gaussian, every entry N(0, τ²) (a proper
prior: the term stays a marginal likelihood). Centring at p̄_o decouples
t and B: Σ_p ‖x_p − t − B(p − p̄)‖² = Σ‖x_p − x̄‖² + n‖x̄ − t‖² − 2 Σ_a b_aᵀ s_a
+ Σ_a b_aᵀ S b_a, with b_a the row of B of axis a (u or v),
S = Σ (p − p̄)(p − p̄)ᵀ and s_a = Σ (p − p̄)(x_{a,p} − x̄_a). Integrating
b_a against N(0, τ² I) gives, per object,

    f_aff(o) = f(o) + Σ_a [ 2α² s_aᵀ M⁻¹ s_a − ½ log det(I + 2ατ² S) ],
    M = 2α S + I / τ²,

with f(o) the translation model's term. The first bracket is what the
fitted gradient gains (the ridge, i.e. closed-form weighted least-squares,
estimate B̂ rows M⁻¹ (2α s_a)); the log-determinant is its Occam factor.
τ = 0 gives the translation model exactly.

**Degenerate fits** need no special case: an object with one or two
regions, or with collinear or coincident pixels, has a singular or tiny
S; the prior keeps M invertible (M ⪰ I/τ²), B̂ shrinks towards 0 along
every direction the pixels do not span, and the term falls back to the
translation model there (S = 0: f_aff = f exactly). An object with no
non-nil pixel scores f(o) = log |C|.

**Connected objects.** One affine map also fits two distant rigid objects
whose velocities happen to lie on a plane (with thousands of pixels the
prior on B barely matters), so under the affine model every object must be
connected in the region graph: π = 0 otherwise (a proper prior, an
indicator; :class:`~swcuts.models.motion.ObjectModel` gives Δ = −∞ for a
move that disconnects an object, which SW cuts rejects).

Statistics per vertex or object (additive, :data:`N_AFFINE`): n, Σu,
Σv, Σ(u² + v²) (the translation model's four), then Σx, Σy, Σx², Σxy,
Σy², Σxu, Σyu, Σxv, Σyv over the non-nil pixels, with (x, y) measured from
the frame's centre (smaller sums, less cancellation).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts.models.motion_kernels import N_AFFINE, _centred, _gradient_term, object_score

__all__ = ["N_AFFINE", "affine_score", "affine_scores", "affine_fit", "affine_maps", "affine_stats", "connected_within",
           "object_delta"]

@njit(cache=True)
def affine_score(st, cu, cv, alpha, tau, occam=1.0):
    """f_aff(o) of the module docstring from one row of statistics (a
    one-value ``cv`` grid, stereo: the u axis only has a gradient)."""
    n_axes = 2 if cv.size > 1 else 1
    return (object_score(st[0], st[1], st[2], st[3], cu, cv, alpha)
            + _gradient_term(st, alpha, tau, occam, n_axes))


@njit(cache=True)
def affine_scores(stats, cu, cv, alpha, tau, occam=1.0):
    """f_aff(o) of every row of ``stats`` (shape (n_objects, N_AFFINE))."""
    out = np.empty(stats.shape[0])
    for o in range(stats.shape[0]):
        out[o] = affine_score(stats[o], cu, cv, alpha, tau, occam)
    return out


def affine_fit(stats, alpha, tau):
    """The posterior-mean affine motion of each object.

    Parameters
    ----------
    stats : (K, N_AFFINE) float array
    alpha, tau : float

    Returns
    -------
    centre : (K, 2) float array
        p̄_o, the centroid (x, y) of the non-nil pixels (from the frame's centre).
    mean : (K, 2) float array
        x̄_o, the mean velocity (u, v) (the translation part at p̄_o).
    gradient : (K, 2, 2) float array
        B̂_o: rows (∂u/∂x, ∂u/∂y) and (∂v/∂x, ∂v/∂y); 0 with τ = 0.

    Examples
    --------
    >>> import numpy as np
    >>> ys, xs = np.mgrid[-5:6, -5:6].astype(float)
    >>> u, v = 0.1 * xs, -0.1 * ys + 1.0   # a slanted surface
    >>> st = affine_stats(xs.ravel(), ys.ravel(), u.ravel(), v.ravel(), np.zeros(121, np.int64), 1)
    >>> c, m, B = affine_fit(st, alpha=0.5, tau=0.2)
    >>> np.round(B[0], 2).tolist(), round(float(m[0, 1]), 3)  # the prior shrinks B a little
    ([[0.1, 0.0], [0.0, -0.1]], 1.0)
    """
    stats = np.atleast_2d(np.asarray(stats, np.float64))
    k = stats.shape[0]
    centre = np.zeros((k, 2))
    mean = np.zeros((k, 2))
    grad = np.zeros((k, 2, 2))
    for o in range(k):
        st = stats[o]
        if st[0] <= 0:
            continue
        centre[o] = st[4:6] / st[0]
        mean[o] = st[1:3] / st[0]
        if tau <= 0:
            continue
        sxx, sxy, syy, sxu, syu, sxv, syv = _centred(st)
        m = 2 * alpha * np.array([[sxx, sxy], [sxy, syy]]) + np.eye(2) / tau ** 2
        grad[o] = np.linalg.solve(m, 2 * alpha * np.array([[sxu, sxv], [syu, syv]])).T
    return centre, mean, grad


def affine_stats(x, y, u, v, group, n_groups):
    """(n_groups, N_AFFINE) statistics of the points (x, y) with velocities
    (u, v), summed per ``group`` (flat arrays of one length; pass only the
    non-nil pixels)."""
    group = np.asarray(group, np.int64).ravel()
    x, y, u, v = (np.asarray(a, np.float64).ravel() for a in (x, y, u, v))
    cols = (np.ones_like(x), u, v, u * u + v * v, x, y, x * x, x * y, y * y, x * u, y * u, x * v, y * v)
    out = np.empty((n_groups, N_AFFINE))
    for j, c in enumerate(cols):
        out[:, j] = np.bincount(group, c, minlength=n_groups)
    return out


@njit(cache=True)
def connected_within(indptr, indices, inside, start, mark):
    """Is the set ``inside`` (a 0/1 array over the vertices, ``start`` one of
    them) connected in the graph (CSR ``indptr``, ``indices``)? ``mark`` is
    zero scratch of the vertices' size, zero again on return."""
    total = 0
    for v in range(inside.size):
        total += inside[v]
    stack = np.empty(total, np.int64)
    stack[0] = start
    mark[start] = 1
    top, seen = 1, 1
    while top > 0:
        top -= 1
        v = stack[top]
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if inside[u] and not mark[u]:
                mark[u] = 1
                stack[top] = u
                top += 1
                seen += 1
    for v in range(inside.size):
        mark[v] = 0
    return seen == total


def affine_maps(stats, alpha, tau, shape, factor=1):
    """Each object's posterior-mean motion as a (K, 2, 3) array ``A`` with
    flow(x, y) ≈ A[k] @ (x, y, 1) in the pixels of the full frame.

    ``stats`` are :func:`affine_stats` rows measured on a level of ``shape``
    (H, W) (positions from its centre) that is ``factor`` times smaller than
    the full frame (full pixel x ↔ level pixel (x − (factor − 1)/2) / factor;
    velocities scale by ``factor``). An object without non-nil pixels gets 0.

    Examples
    --------
    >>> import numpy as np
    >>> ys, xs = np.mgrid[0:20, 0:30].astype(float)
    >>> u, v = 0.05 * xs + 1.0, -0.05 * ys
    >>> st = affine_stats(xs.ravel() - 14.5, ys.ravel() - 9.5, u.ravel(), v.ravel(), np.zeros(600, np.int64), 1)
    >>> A = affine_maps(st, alpha=0.5, tau=0.3, shape=(20, 30), factor=2)
    >>> (np.round(A[0], 2) + 0.0).tolist()   # u = 2 u_level((x - 0.5) / 2) on the full frame
    [[0.05, 0.0, 1.98], [0.0, -0.05, 0.02]]
    """
    centre, mean, grad = affine_fit(stats, alpha, tau)
    h, w = shape
    f = float(factor)
    origin = (f - 1.0) / 2.0 + f * (centre + np.array([(w - 1) / 2.0, (h - 1) / 2.0]))
    out = np.zeros((grad.shape[0], 2, 3))
    out[:, :, :2] = grad
    out[:, :, 2] = f * mean - np.einsum("kij,kj->ki", grad, origin)
    out[np.asarray(stats)[:, 0] <= 0] = 0.0
    return out


@njit(cache=True)
def _connected_after(R, n_r, lab, add, labels, indptr, indices, inside, bmark):
    """Is label ``lab`` connected once R is added to it (``add``) or taken
    out of it (not ``add``)? An empty or one-vertex set is."""
    total = 0
    start = -1
    for v in range(labels.size):
        inside[v] = 1 if labels[v] == lab else 0
    for t in range(n_r):
        inside[R[t]] = 1 if add else 0
    for v in range(labels.size):
        if inside[v]:
            total += 1
            if start < 0:
                start = v
    if total <= 1:
        return True
    return connected_within(indptr, indices, inside, start, bmark)


@njit(cache=True)
def object_delta(R, n_r, old, new, labels, size, lstats, lloglik, vstats, cu, cv, alpha, tau, occam,
                 lambda2, connected, indptr, indices, inside, bmark, moved, row):
    """Δ log π of moving R (all of label ``old``'s vertices ``R[:n_r]``)
    to label ``new``: :meth:`ObjectModel.delta` (−inf when a label would
    be disconnected under the connectivity prior). ``moved`` gets R's
    statistics."""
    if new == old:
        return 0.0
    if connected:
        if not (_connected_after(R, n_r, old, False, labels, indptr, indices, inside, bmark)
                and _connected_after(R, n_r, new, True, labels, indptr, indices, inside, bmark)):
            return -math.inf
    for c in range(moved.size):
        moved[c] = 0.0
    for t in range(n_r):
        for c in range(moved.size):
            moved[c] += vstats[R[t], c]
    d = -lloglik[old] - lloglik[new]
    if size[old] > n_r:
        for c in range(row.size):
            row[c] = lstats[old, c] - moved[c]
        d += affine_score(row, cu, cv, alpha, tau, occam)
    else:
        d += lambda2
    for c in range(row.size):
        row[c] = lstats[new, c] + moved[c]
    d += affine_score(row, cu, cv, alpha, tau, occam)
    if size[new] == 0:
        d -= lambda2
    return d
