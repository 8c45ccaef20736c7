"""The two-frame motion posterior (Barbu & Zhu, section 7, eqs. 73-76).

Frame 2 is the reference. Every pixel p of frame 2 has three labels: its
velocity x⁽⁰⁾_p (one of the ``K`` displacements of a grid, or nil when p is
half-occluded), its intensity region x⁽¹⁾_p and its object x⁽²⁾_p; objects
are unions of intensity regions. The posterior (eq. 73)

    π(X) ∝ L(I1 | I2, X⁽⁰⁾) · L(I2 | X⁽¹⁾) · π_o(X)

has the optical-flow likelihood of eq. 74 (I2(p) = I1(p − x_p) plus
Gaussian noise of deviation ``sigma`` on every channel, I1 sampled
bilinearly; a nil pixel pays ``nil_cost`` instead; ours: the variance of
each pixel's residual also holds the rounding error of the label grid,
(step²/12)‖∇I2‖²), the image-segmentation
likelihood of section 5 on level 1 (:class:`~swcuts.models.image.ImageModel`,
which also holds the level-1 prior), and the prior of eq. 75: per object a
velocity c_o with weight exp(−α Σ_p ‖x_p − c_o‖²), the Markov term
β Σ ‖x_p − x_q‖ over neighbour pairs, the level-0 boundary length δ|∂V⁽⁰⁾|
and λ₂ per object. c_o is summed out (see
:mod:`swcuts.models.motion_kernels`); after sampling each object reports
its most probable c_o. With the weight ``tau`` > 0 (ours) c_o is an affine
map of position per object, its gradient integrated against a N(0, τ²)
prior (:mod:`swcuts.models.affine_objects`): ``log_target`` and the level-2
model :class:`ObjectModel` and the level-0 kernel
(:func:`~swcuts.models.motion_kernels.cluster_log_pi`, which carries the
affine statistics of every object) all use it.

Departures from the paper, each to keep the kernels exact and cheap: the
label count λ₀L⁽⁰⁾ of the velocity regions is left out (δ already charges
every velocity boundary); level 1 is the image posterior on the atoms of
frame 2 rather than on the velocity regions; the distance from nil to a
velocity is a constant ``nu``.

This module holds the data terms and ``log π``; the compiled Δ of a
level-0 move is :func:`~swcuts.models.motion_kernels.cluster_log_pi`, the
level-2 model is :class:`ObjectModel`.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from swcuts.io.errors import check_number
from swcuts.graph.region_graph import pixel_pairs
from swcuts.models.partition import Partition
from swcuts.models.base import ModelState
from swcuts.image.warp import frame_gradient, warp_frame1
from swcuts.models.motion_kernels import N_STATS
from swcuts.models.affine_objects import (N_AFFINE, affine_score, affine_scores, affine_stats,
                                         connected_within, object_delta)

__all__ = ["MotionPosterior", "ObjectModel", "velocity_grid", "noise_sigma", "check_weights", "MOTION_DEFAULTS"]

#: Weights of eqs. 74-75 for intensities on the 0..255 scale.
#: ``sigma=None`` estimates the noise of the frames (:func:`noise_sigma`).
#: alpha (the pull of each pixel to its object's one velocity): 0.2 rather
#: than 0.5 lowers EPE on all four Middlebury sequences (Dimetrodon 0.280 ->
#: 0.265, Grove3 1.36 -> 1.07, Urban3 1.87 -> 1.77, Venus 0.551 -> 0.532),
#: whose surfaces slant and turn; on rigidly translating synthetic layers it
#: costs 0.165 -> 0.174 (a larger alpha fits those better and real scenes
#: worse: 2.0 gave 0.13 there and 0.35/1.74/2.00/0.62 on Middlebury).
#: tau: prior deviation of each entry of an object's affine gradient B_o
#: (:mod:`swcuts.models.affine_objects`; ours); 0 is the paper's translation
#: model. 0.1 (a 10 % strain, a 6° rotation), with segment's Q2_SCALE 2:
#: objects VoI on the non-rigid synthetic set 0.577 -> 0.183, rigid set
#: 0.258 -> 0.135, EPE unchanged there and on Middlebury (docs/algorithms/motion.md).
#: Re-tuned to 0.2 with the exact level 0 and compiled level 2 (τ ∈ {0.03,
#: 0.1, 0.2, 0.3}; seeds 0 and 1 for 0.1 and 0.2): the mean over both seeds
#: of Grove3 0.712 -> 0.700, Venus 0.350 -> 0.339, non-rigid VoI 0.186 ->
#: 0.175, the rest within ±0.004; 0.3 raised the rigid set's VoI to 0.197.
MOTION_DEFAULTS = dict(sigma=None, rounding=1.0, nil_cost=6.0, alpha=0.2, beta=4.0, delta=2.0, nu=1.0,
                       lambda2=200.0, tau=0.2)
#: Upper clip of the level-0 edge probability: q = 1 would freeze a pair
#: with different labels (its cut factor 1 − q would be 0 both ways).
Q0_MAX = 0.98


def check_weights(weights) -> None:
    """Refuse unknown or bad weights of the motion posterior.

    Parameters
    ----------
    weights : dict
        Names of :data:`MOTION_DEFAULTS` and their values: each a finite
        number >= 0, ``sigma`` None (estimated from the frames) or > 0.

    Raises
    ------
    TypeError
        An unknown name, or (:class:`~swcuts.io.errors.InputTypeError`) a
        value that is not a number: a string, a bool, an array.
    InputError
        A number out of range, NaN or infinite
        (:func:`~swcuts.io.errors.check_number`).
    """
    unknown = set(weights) - set(MOTION_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown motion weight(s): {', '.join(sorted(unknown))}")
    for name, value in weights.items():
        if name == "sigma":
            check_number(name, value, allow_none=True, minimum=0, exclusive=True)
        else:
            check_number(name, value, minimum=0)


def velocity_grid(max_displacement, precision):
    """The 1-D grid −m, −m + p, …, m of one velocity axis."""
    n = int(round(2 * max_displacement / precision)) + 1
    return np.linspace(-max_displacement, max_displacement, n)


def noise_sigma(frame1, frame2, floor=2.0):
    """The deviation σ_o of eq. 74's residual: √2 times the noise of one
    frame, at least ``floor`` (the interpolation error of the label grid).
    The noise is Immerkær's estimate (mean |Laplacian difference| · √(π/2)/6),
    averaged over channels and frames."""
    kernel = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)
    est = []
    for f in (frame1, frame2):
        for c in range(f.shape[2]):
            r = cv2.filter2D(np.ascontiguousarray(f[..., c]), -1, kernel)[1:-1, 1:-1]
            est.append(math.sqrt(math.pi / 2.0) * float(np.abs(r).mean()) / 6.0 if r.size else 0.0)
    return max(floor, math.sqrt(2.0) * float(np.mean(est)))


def _out_of_frame_cost(nil_cost):
    return 4.0 * nil_cost + 10.0


class MotionPosterior:
    """Levels 0 and 2 of the motion posterior for one frame pair.

    Parameters
    ----------
    frame1, frame2 : (H, W, C) float arrays, intensities on the 0..255 scale
    grid : (n,) float array
        One axis of the velocity labels; the labels are the n·m pairs
        (u, v) = (grid[k % n], grid_v[k // n]), k = 0..n·m − 1, and nil = n·m.
    grid_v : (m,) float array, optional
        The v axis (default: ``grid``; ``[0.0]``: horizontal motion only, stereo).
    base : (H, W, 2) float array, optional
        The base flow w of a pyramid level: label k means velocity
        w_p + d_k. Zero by default.
    sigma, nil_cost, alpha, beta, delta, nu, lambda2 : float
        Weights of eqs. 74-75 (see :data:`MOTION_DEFAULTS`).

    Attributes
    ----------
    D : (H·W, K + 1) float32 array
        The data cost −log L of every pixel and label (column K: nil).
    q_right, q_down : (H·W,) float arrays
        The level-0 edge probability to the right of and below each pixel
        (the paper's q⁽⁰⁾: the best common displacement of the pair).
    cu, cv : float arrays
        The grid of object velocities c_o (covering every pixel's labels).
    """

    def __init__(self, frame1, frame2, grid, base=None, grid_v=None, **weights):
        check_weights(weights)
        params = {**MOTION_DEFAULTS, **weights}
        f1 = np.asarray(frame1, np.float32)
        f2 = np.asarray(frame2, np.float32)
        if f1.ndim == 2:
            f1, f2 = f1[..., None], f2[..., None]
        if params["sigma"] is None:
            params["sigma"] = noise_sigma(f1, f2)
        params = {name: float(value) for name, value in params.items()}
        self.__dict__.update(params)
        self.shape = f2.shape[:2]
        h, w = self.shape
        self.grid = np.asarray(grid, np.float64)
        self.grid_v = self.grid.copy() if grid_v is None else np.asarray(grid_v, np.float64)
        n = self.grid.size
        self.du = np.tile(self.grid, self.grid_v.size)
        self.dv = np.repeat(self.grid_v, n)
        self.nil = n * self.grid_v.size
        base = np.zeros((h, w, 2)) if base is None else np.asarray(base, np.float64)
        self.wu = np.ascontiguousarray(base[..., 0].ravel())
        self.wv = np.ascontiguousarray(base[..., 1].ravel())
        self.D, q_right, q_down = self._data_terms(f1, f2)
        self.q_right, self.q_down = q_right, q_down
        step = self.grid[1] - self.grid[0] if n > 1 else 1.0
        self.cu = self._c_grid(self.wu, step, self.grid)
        self.cv = self._c_grid(self.wv, step, self.grid_v)

    @staticmethod
    def _c_grid(base, step, grid):
        lo = math.floor((base.min() + grid[0]) / step) * step
        hi = math.ceil((base.max() + grid[-1]) / step) * step
        return np.arange(lo, hi + step / 2, step)

    @property
    def n_pixels(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def n_labels(self) -> int:
        """Velocity labels plus nil."""
        return self.nil + 1

    def _data_terms(self, f1, f2):
        """Per-pixel costs of every label (eq. 74) and the level-0 edge
        probabilities, one remap per label (no loop over pixels)."""
        h, w = self.shape
        base = np.stack([self.wu.reshape(h, w), self.wv.reshape(h, w)], axis=2).astype(np.float32)
        D = np.empty((h * w, self.nil + 1), np.float32)
        best_r = np.full((h, max(w - 1, 0)), np.inf, np.float32)
        best_d = np.full((max(h - 1, 0), w), np.inf, np.float32)
        far = np.float32(_out_of_frame_cost(self.nil_cost))
        # Per pixel and channel 1/(2σ_p²), σ_p² = σ² + (step²/12)‖∇I2‖²: the
        # noise plus the residual of the label grid's rounding (uniform on
        # ±step/2 per axis), so that the true motion between two labels is
        # not out-fitted by noisy labels.
        step = float(self.grid[1] - self.grid[0]) if self.grid.size > 1 else 1.0
        gx, gy = frame_gradient(f2)
        g2 = gx * gx + (gy * gy if self.grid_v.size > 1 else 0.0)  # no v rounding for stereo
        scale = (0.5 / (self.sigma ** 2 + self.rounding * step * step / 12.0 * g2)).astype(np.float32)
        for k in range(self.nil):
            d_k = np.array([self.du[k], self.dv[k]], np.float32)
            warped, inside = warp_frame1(f1, base + d_k, with_inside=True)
            diff = f2 - warped
            cost = (diff * diff * scale).sum(axis=2)
            outside = ~inside
            cost[outside] = far
            D[:, k] = cost.ravel()
            ad = np.abs(diff).mean(axis=2)
            ad[outside] = np.inf
            np.minimum(best_r, ad[:, :-1] + ad[:, 1:], out=best_r)
            np.minimum(best_d, ad[:-1, :] + ad[1:, :], out=best_d)
        D[:, self.nil] = self.nil_cost
        g2 = f2.mean(axis=2)
        q_right = np.zeros(h * w)
        q_down = np.zeros(h * w)
        qr = np.exp(-best_r / 7.0 - np.abs(g2[:, :-1] - g2[:, 1:]) / 10.0)
        qd = np.exp(-best_d / 7.0 - np.abs(g2[:-1, :] - g2[1:, :]) / 10.0)
        q_right.reshape(h, w)[:, :-1] = np.minimum(qr, Q0_MAX)
        q_down.reshape(h, w)[:-1, :] = np.minimum(qd, Q0_MAX)
        return D, q_right, q_down

    # ----------------------------------------------------------- log π
    def velocities(self, x0):
        """(u, v, nil) of a velocity labelling: every pixel's velocity
        w_p + d_k (0 where nil) and the nil mask, flat arrays."""
        x0 = np.asarray(x0).ravel()
        nil = x0 == self.nil
        k = np.where(nil, 0, x0)
        u = np.where(nil, 0.0, self.wu + self.du[k])
        v = np.where(nil, 0.0, self.wv + self.dv[k])
        return u, v, nil

    def object_stats(self, x0, obj, n_objects):
        """(n_objects, 4) statistics n, S1_u, S1_v, S2 of the non-nil
        pixels' velocities per object."""
        u, v, nil = self.velocities(x0)
        ok = ~nil
        u, v, o = u[ok], v[ok], np.asarray(obj).ravel()[ok]
        out = np.zeros((n_objects, N_STATS))
        out[:, 0] = np.bincount(o, minlength=n_objects)
        out[:, 1] = np.bincount(o, u, minlength=n_objects)
        out[:, 2] = np.bincount(o, v, minlength=n_objects)
        out[:, 3] = np.bincount(o, u * u + v * v, minlength=n_objects)
        return out

    def affine_stats(self, x0, obj, n_objects):
        """(n_objects, N_AFFINE) statistics of the non-nil pixels per object
        (:func:`swcuts.models.affine_objects.affine_stats`; positions from
        the frame's centre)."""
        h, w = self.shape
        u, v, nil = self.velocities(x0)
        ok = ~nil
        idx = np.flatnonzero(ok)
        x = idx % w - (w - 1) / 2.0
        y = idx // w - (h - 1) / 2.0
        return affine_stats(x, y, u[ok], v[ok], np.asarray(obj).ravel()[ok], n_objects)

    def pair_energy(self, x0) -> float:
        """Σ over neighbour pairs of eq. 75's Markov and boundary terms."""
        h, w = self.shape
        x0 = np.asarray(x0).reshape(h, w)
        idx = np.arange(h * w).reshape(h, w)
        pa, pb = pixel_pairs(idx)
        a, b = x0.ravel()[pa], x0.ravel()[pb]
        u, v, nil = self.velocities(x0)
        dist = np.hypot(u[pa] - u[pb], v[pa] - v[pb])
        dist = np.where(nil[pa] != nil[pb], self.nu, np.where(nil[pa], 0.0, dist))
        return float(self.beta * dist.sum() + self.delta * np.count_nonzero(a != b))

    def log_target(self, x0, obj) -> float:
        """log π of levels 0 and 2 (unnormalised; level 1 held fixed),
        computed from scratch. With ``tau`` > 0 the object term is the
        affine one; its connectivity prior is :class:`ObjectModel`'s (the
        objects of :func:`~swcuts.motion.segment.segment_motion` are
        connected, so it is 0 there and not checked here)."""
        x0 = np.asarray(x0, np.int64).ravel()
        obj = np.asarray(obj, np.int64).ravel()
        used, inv = np.unique(obj, return_inverse=True)
        data = float(self.D[np.arange(x0.size), x0].astype(np.float64).sum())
        stats = self.affine_stats(x0, inv, used.size)
        prior = float(affine_scores(stats, self.cu, self.cv, self.alpha, self.tau).sum())
        return -data - self.pair_energy(x0) + prior - self.lambda2 * used.size

    def flow(self, x0):
        """(H, W, 2) flow of a velocity labelling, NaN where nil."""
        h, w = self.shape
        u, v, nil = self.velocities(x0)
        out = np.stack([u, v], axis=1)
        out[nil] = np.nan
        return out.reshape(h, w, 2)

    def best_object_velocity(self, stats):
        """The most probable c_o of each object given its statistics."""
        n = np.maximum(stats[:, 0], 1e-12)
        cu = self.cu[np.abs(self.cu[None, :] - (stats[:, 1] / n)[:, None]).argmin(axis=1)]
        cv = self.cv[np.abs(self.cv[None, :] - (stats[:, 2] / n)[:, None]).argmin(axis=1)]
        return np.stack([cu, cv], axis=1)

    def block_matching(self, radius=2):
        """The label of least data cost summed over the (2r+1)² window of
        every pixel (a start state, far less noisy than the label of least
        cost of each pixel alone)."""
        from scipy.ndimage import uniform_filter
        h, w = self.shape
        cube = uniform_filter(self.D.reshape(h, w, -1), size=(2 * radius + 1, 2 * radius + 1, 1),
                              mode="nearest").reshape(h * w, -1)
        # Near-ties (uniform areas: the aperture problem) go to the label
        # nearest the base flow, not to the first label of the grid.
        cube[:, :self.nil] += np.float32(1e-3) * (self.du ** 2 + self.dv ** 2).astype(np.float32)
        return np.asarray(cube.argmin(axis=1), np.int64)


def _hop_graph(graph, hops):
    """Edges (i < j), CSR indptr and indices of the graph joining the
    vertices at most ``hops`` edges of ``graph`` apart (``graph`` itself
    for 1)."""
    if hops == 1:
        return graph.edges, graph.indptr, graph.indices
    from scipy.sparse import csr_matrix, identity

    n = graph.n_vertices
    e = np.asarray(graph.edges)
    a = csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    a = ((a + a.T + identity(n, format="csr")) > 0).astype(np.int64)
    reach = a
    for _ in range(hops - 1):
        reach = ((reach @ a) > 0).astype(np.int64)
    reach = reach.tocsr()
    reach.setdiag(0)
    reach.eliminate_zeros()
    reach.sort_indices()
    coo = reach.tocoo()
    upper = coo.row < coo.col
    edges = np.stack([coo.row[upper], coo.col[upper]], axis=1).astype(np.int64)
    return edges, reach.indptr.astype(np.int64), reach.indices.astype(np.int64)


class ObjectModel:
    """Level 2 of the motion posterior: objects as a partition of the
    level-2 vertices (connected intensity regions), with the level-0
    velocities fixed. log π = Σ_o f(o) − λ₂ L⁽²⁾ (see
    :mod:`swcuts.models.motion_kernels` for f; with ``tau`` > 0, f is the
    affine object term of :mod:`swcuts.models.affine_objects`), in the
    model interface of the generic SW-cut kernels (:mod:`swcuts.samplers.swc`).

    Parameters
    ----------
    graph : RegionGraph
        Adjacency of the level-2 vertices.
    vstats : (N, 4) or (N, N_AFFINE) float array
        Statistics n, S1_u, S1_v, S2 of each vertex's non-nil velocities,
        then (affine model) their position moments
        (:func:`swcuts.models.affine_objects.affine_stats`); 4 columns: no
        positions, the translation model whatever ``tau``.
    cu, cv : float arrays
        The grid of object velocities.
    alpha, lambda2 : float
    tau : float
        Prior deviation of the entries of each object's affine gradient (0:
        one translation per object).
    connected : bool, optional
        Every object must be connected in ``graph`` (π = 0 otherwise).
        Default: with ``tau`` > 0 (see :mod:`swcuts.models.affine_objects`).
    connect_hops : int
        Connected means: through vertices of the object, each step to a
        vertex at most this many edges of ``graph`` away (1: adjacent; 2:
        also across one vertex of another object, e.g. an intensity region
        that straddles the object's border).
    """

    compiled = False
    #: 1: the affine term's Occam factor (log det); 0 only for the tests'
    #: negative control.
    occam = 1.0

    def __init__(self, graph, vstats, cu, cv, alpha, lambda2, tau=0.0, connected=None, connect_hops=1):
        self.graph = graph
        self.connected = bool(tau > 0) if connected is None else bool(connected)
        self.connect_hops = int(connect_hops)
        if self.connect_hops < 1:
            raise ValueError(f"connect_hops must be at least 1, got {connect_hops}")
        self.connect_edges, self.connect_indptr, self.connect_indices = _hop_graph(graph, self.connect_hops)
        self._mark = np.zeros(graph.n_vertices, np.int64)
        self._inside = None  # scratch of :meth:`delta`, made on first use
        vstats = np.asarray(vstats, np.float64)
        self.vstats = np.zeros((vstats.shape[0], N_AFFINE))
        self.vstats[:, :vstats.shape[1]] = vstats
        self.cu, self.cv = np.asarray(cu, np.float64), np.asarray(cv, np.float64)
        self.alpha, self.lambda2, self.tau = float(alpha), float(lambda2), float(tau)

    @property
    def n_vertices(self) -> int:
        return self.graph.n_vertices

    def _score(self, row):
        return affine_score(row, self.cu, self.cv, self.alpha, self.tau, self.occam)

    def _split_disconnected(self, labels):
        """Each connected piece of every object its own label (the start of
        a chain under the connectivity prior must have π > 0)."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        labels = np.asarray(labels, np.int64)
        e = self.connect_edges
        keep = labels[e[:, 0]] == labels[e[:, 1]]
        n = labels.size
        adj = coo_matrix((np.ones(int(keep.sum())), (e[keep, 0], e[keep, 1])), shape=(n, n))
        _, comp = connected_components(adj, directed=False)
        # Pieces of one object keep its label for the first piece met.
        out = labels.copy()
        first = {}
        fresh = iter(np.setdiff1d(np.arange(n), labels))
        for v in range(n):
            key = labels[v]
            piece = first.setdefault(key, comp[v])
            if comp[v] != piece:
                first.setdefault((key, comp[v]), next(fresh))
                out[v] = first[(key, comp[v])]
        return out

    def new_state(self, labels) -> ModelState:
        if self.connected:
            labels = self._split_disconnected(labels)
        part = Partition(labels)
        n = part.n_vertices
        stats = np.zeros((n, N_AFFINE))
        np.add.at(stats, part.labels, self.vstats)
        loglik = np.zeros(n)
        for lab in part.used_labels():
            loglik[lab] = self._score(stats[lab])
        return ModelState(part, stats, loglik, self.log_target(part.labels))

    def _is_connected(self, members) -> bool:
        if not self.connected or members.sum() <= 1:
            return True
        return connected_within(self.connect_indptr, self.connect_indices, members,
                                int(np.argmax(members)), self._mark)

    def log_target(self, labels) -> float:
        labels = np.asarray(labels)
        if self.connected:
            for lab in np.unique(labels):
                if not self._is_connected((labels == lab).astype(np.int64)):
                    return -math.inf
        used, inv = np.unique(labels, return_inverse=True)
        stats = np.zeros((used.size, N_AFFINE))
        np.add.at(stats, inv, self.vstats)
        return float(affine_scores(stats, self.cu, self.cv, self.alpha, self.tau, self.occam).sum()
                     - self.lambda2 * used.size)

    def delta(self, state, R, new_label) -> float:
        """Δ log π of relabelling R (vertices of one label) ``new_label``:
        :func:`~swcuts.models.affine_objects.object_delta` (−inf when a
        label would be disconnected under the connectivity prior)."""
        R = np.ascontiguousarray(R, np.int64)
        part = state.partition
        if self._inside is None:
            self._inside = np.zeros(part.n_vertices, np.int64)
            self._moved, self._row = np.zeros(N_AFFINE), np.zeros(N_AFFINE)
        return float(object_delta(R, R.size, int(part.labels[R[0]]), int(new_label), part.labels,
                                  part.size, state.stats, state.loglik, self.vstats, self.cu,
                                  self.cv, self.alpha, self.tau, float(self.occam), self.lambda2,
                                  self.connected, self.connect_indptr, self.connect_indices,
                                  self._inside, self._mark, self._moved, self._row))

    def apply(self, state, R, new_label, delta) -> None:
        R = np.asarray(R, np.int64)
        old = int(state.partition.labels[R[0]])
        moved = self.vstats[R].sum(axis=0)
        state.partition.relabel(R, int(new_label))
        size = state.partition.size
        state.stats[old] -= moved
        state.stats[new_label] += moved
        for lab in (old, int(new_label)):
            if size[lab] > 0:
                state.loglik[lab] = self._score(state.stats[lab])
            else:
                state.stats[lab] = 0.0
                state.loglik[lab] = 0.0
        state.log_pi += delta


def motion_histograms(x0, region, n_regions, posterior):
    """Per level-2 vertex, histograms of the u and of the v velocities of its
    non-nil pixels over the object-velocity grid: (N, 2, B) counts."""
    u, v, nil = posterior.velocities(x0)
    ok = ~nil
    r = np.asarray(region).ravel()[ok]
    bins = max(posterior.cu.size, posterior.cv.size)
    hist = np.empty((n_regions, 2, bins))
    for axis, (vel, grid) in enumerate(((u[ok], posterior.cu), (v[ok], posterior.cv))):
        step = grid[1] - grid[0] if grid.size > 1 else 1.0
        idx = np.clip(np.rint((vel - grid[0]) / step), 0, grid.size - 1).astype(np.int64)
        hist[:, axis] = np.bincount(r * bins + idx, minlength=n_regions * bins).reshape(n_regions, bins)
    return hist
