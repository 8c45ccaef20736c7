"""The expected end-point error of a returned flow (issue 35, motion).

``segment_motion(posterior_samples=N)`` returns ``flow_spread``: for every
pixel p of frame 2, the root of the expected squared end-point error of the
returned (refined) flow f̂,

    s_p² = E_local ‖x_p − f̂_p‖² + ‖f̂_p + b(p − f̂_p)‖²,

two terms for the two places the error comes from:

1. **The data term, at the final level** (:func:`local_posterior`). The
   velocity of p is f̂_p + d, with the offset d on a grid of ±``RADIUS`` px
   in steps of ``STEP`` (81 values, u and v). Its local posterior at T = 1
   is the motion model's data term (eq. 74 with its rounding variance and
   its nil cap: min(Σ_c r²/(2σ_p²), nil_cost), sampled at full resolution,
   :func:`offset_costs`) of the pixels that move with p, coarsened:
   the pixels q of p's own intensity region (the unit the refinement fits),
   weighted by ``DECAY``^(path length) along a row-then-column path that
   stays in the region (:func:`region_window`), each pixel counting as
   ``ZETA`` of an independent one, so that the window's evidence is that of
   n_eff = ZETA · ((1 + DECAY)/(1 − DECAY))² ≈ 46 independent pixels
   (neighbouring pixels' residuals are strongly correlated, and the posterior
   with every pixel independent is a point mass: the coarsened posterior of
   Miller & Dunson, JASA 2019). Its moment E‖d‖² (exact: a sum over the 81
   offsets) is the expected squared error of f̂_p under that posterior: it is
   large where the data term is flat (texture-less, the aperture problem),
   multi-modal (repetitive texture) or lowest away from f̂ (a wrong fit).
2. **What one reference frame cannot see**: the disagreement of f̂ with the
   backward flow b (OpenCV's DIS from frame 1 to frame 2, the one the
   refinement's occlusion check uses, :func:`~swcuts.motion.flow_refine.occlusion_check`)
   at p's source: ‖f̂ + b'‖ is zero where both agree and large where p is
   occluded in frame 1 or where either flow is wrong.

This is ours, not the paper's. The sampled spread of the discrete level-0
labels (``label_spread``, :func:`swcuts.motion.segment._flow_posterior`)
measures the posterior of the labelling with every pixel independent and
β = 4 between neighbours, nearly a point mass, and it did not predict the
error (Spearman −0.01 to 0.27 on the Middlebury pairs; this: 0.31 to 0.50,
docs/algorithms/motion.md).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.image.warp import frame_gradient, warp_frame1

__all__ = ["flow_error", "local_posterior", "offset_costs", "region_window"]

#: The offsets d around the returned flow: −RADIUS..RADIUS px in steps of STEP per axis.
RADIUS, STEP = 2.0, 0.5
#: Weight per pixel of path length of the region-restricted window.
DECAY = 0.85
#: Independent pixels per pixel of the window (the coarsening power).
ZETA = 0.3
#: Tuned on Dimetrodon, Grove3, Urban3, Venus and the synthetic sets
#: (DECAY ∈ {0.7, 0.85, 0.9}, ZETA ∈ {0.1, 0.3, 1}; worst Middlebury pair
#: 0.22, 0.31, 0.32 with ZETA 0.3); Sintel held out.
#: Offsets summed at a time (memory O(CHUNK · H · W)).
CHUNK = 9


def offset_costs(frame1, frame2, flow, *, sigma, nil_cost, rounding=1.0, radius=RADIUS, step=STEP,
                 vertical=True, offsets=None):
    """The motion model's capped data cost of every pixel at every offset.

    Parameters
    ----------
    frame1, frame2 : (H, W, C) float arrays, intensities on the 0..255 scale
    flow : (H, W, 2) float array (finite everywhere)
    sigma, nil_cost, rounding : float
        The weights of :class:`~swcuts.models.motion.MotionPosterior`.
    radius, step : float
        The offset grid per axis.
    vertical : bool
        False: offsets in u only (stereo).
    offsets : (du, dv) arrays, optional
        These offsets instead of the grid (``step`` still sets the rounding variance).

    Returns
    -------
    costs : (K, H, W) float32 array
        min(Σ_c r²/(2σ_p²), nil_cost) with r = I2(p) − I1(p − f_p − d_k),
        σ_p² = σ² + rounding·(step²/12)‖∇I2‖² (the model's per-pixel
        variance), ``nil_cost`` where the source is outside frame 1.
    du, dv : (K,) float arrays
        The offsets.

    Examples
    --------
    >>> f = np.zeros((6, 8, 1), np.float32)
    >>> c, du, dv = offset_costs(f, f, np.zeros((6, 8, 2)), sigma=2.0, nil_cost=6.0)
    >>> c.shape, float(c.max())
    ((81, 6, 8), 6.0)
    """
    f1 = np.asarray(frame1, np.float32)
    f2 = np.asarray(frame2, np.float32)
    if f1.ndim == 2:
        f1, f2 = f1[..., None], f2[..., None]
    du, dv = _grid(radius, step, vertical) if offsets is None else (np.asarray(o, float) for o in offsets)
    gx, gy = frame_gradient(f2)
    g2 = gx * gx + (gy * gy if vertical else 0.0)
    scale = (0.5 / (sigma * sigma + rounding * step * step / 12.0 * g2)).astype(np.float32)
    base = np.asarray(flow, np.float32)
    out = np.empty((du.size,) + f2.shape[:2], np.float32)
    for k in range(du.size):
        warped, inside = warp_frame1(f1, base + np.float32([du[k], dv[k]]), with_inside=True)
        r = f2 - warped
        c = (r * r * scale).sum(axis=2)
        c[~inside] = nil_cost
        out[k] = np.minimum(c, nil_cost)
    return out, du, dv


def _grid(radius, step, vertical):
    g = np.arange(-radius, radius + step / 2, step)
    du, dv = np.meshgrid(g, g if vertical else np.zeros(1))
    return du.ravel(), dv.ravel()


@njit(cache=True)
def _rows(a, reg, decay):
    """Per row, Σ_j' decay^|j − j'| a[.., j'] over the run of ``reg`` holding j."""
    n_k, h, w = a.shape
    out = np.empty_like(a)
    for k in range(n_k):
        for i in range(h):
            acc = 0.0
            for j in range(w):
                if j > 0 and reg[i, j] != reg[i, j - 1]:
                    acc = 0.0
                acc = a[k, i, j] + decay * acc
                out[k, i, j] = acc
            acc = 0.0
            for j in range(w - 1, -1, -1):
                if j < w - 1 and reg[i, j] != reg[i, j + 1]:
                    acc = 0.0
                out[k, i, j] += decay * acc
                acc = a[k, i, j] + decay * acc
    return out


def region_window(a, regions, decay=DECAY):
    """Σ_q w_pq a_q with w_pq = decay^(|Δx| + |Δy|) when the path from q
    along its column to p's row, then along that row to p, stays in one
    region of ``regions`` (else 0): two recursive passes per axis, compiled.

    Parameters
    ----------
    a : (K, H, W) float array
    regions : (H, W) int array
    decay : float in [0, 1)

    Returns
    -------
    (K, H, W) float array

    Examples
    --------
    >>> r = np.array([[0, 0, 1]])
    >>> region_window(np.ones((1, 1, 3)), r, 0.5)[0].tolist()
    [[1.5, 1.5, 1.0]]
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    reg = np.ascontiguousarray(regions, dtype=np.int64)
    cols = _rows(np.ascontiguousarray(a.transpose(0, 2, 1)), np.ascontiguousarray(reg.T), decay)
    return _rows(np.ascontiguousarray(cols.transpose(0, 2, 1)), reg, decay)


class _Moments:
    """Running Σ_k exp(−a_k) (1, d_u², d_v²) over chunks of offsets, scaled
    by the running minimum of a (log-sum-exp, memory O(H·W))."""

    def __init__(self, shape):
        self.m = np.full(shape, np.inf)
        self.s = np.zeros((3,) + shape)

    def add(self, a, du, dv):
        m = np.minimum(self.m, a.min(axis=0))
        self.s *= np.exp(np.where(np.isfinite(self.m), m - self.m, 0.0))
        p = np.exp(m - a)
        self.s[0] += p.sum(axis=0)
        self.s[1] += np.tensordot(du * du, p, axes=1)
        self.s[2] += np.tensordot(dv * dv, p, axes=1)
        self.m = m

    def e2(self):
        return np.stack([self.s[1] / self.s[0], self.s[2] / self.s[0]], axis=2)


def _chunk_energy(costs, regions, decay, zeta, weight):
    n_eff = zeta * ((1.0 + decay) / (1.0 - decay)) ** 2
    return region_window(costs, regions, decay) * (n_eff / weight)


def _moments(chunks, shape, regions, decay, zeta):
    """E d_u² and E d_v² of the coarsened local posterior from ``chunks`` of
    (costs, du, dv), summed a chunk at a time (memory O(chunk · H · W))."""
    weight = region_window(np.ones((1,) + tuple(shape)), regions, decay)[0]
    acc = _Moments(tuple(shape))
    for costs, du, dv in chunks:
        acc.add(_chunk_energy(costs, regions, decay, zeta, weight), du, dv)
    return acc.e2()


def local_posterior(costs, du, dv, regions, decay=DECAY, zeta=ZETA, chunk=CHUNK):
    """Per pixel the moments of the coarsened local posterior of its offset.

    π_p(d_k) ∝ exp(−n_eff · Σ_q w_pq c_q(d_k) / Σ_q w_pq), w from
    :func:`region_window`, n_eff = zeta · ((1 + decay)/(1 − decay))²
    (summed ``chunk`` offsets at a time).

    Returns
    -------
    e2 : (H, W, 2) float array
        E d_u² and E d_v² (the expected squared error of the flow the
        offsets are measured from, per axis).

    Examples
    --------
    >>> c = np.zeros((3, 2, 2)); c[1] = 0.0; c[[0, 2]] = 50.0
    >>> e2 = local_posterior(c, np.array([-1.0, 0.0, 1.0]), np.zeros(3), np.zeros((2, 2), int))
    >>> bool(e2.max() < 1e-6)
    True
    """
    slices = [slice(i, i + chunk) for i in range(0, len(du), chunk)]
    return _moments(((costs[sl], du[sl], dv[sl]) for sl in slices), costs.shape[1:], regions, decay, zeta)


def flow_error(frame1, frame2, flow, regions, *, sigma, nil_cost, rounding=1.0, backward=None,
               vertical=True, decay=DECAY, zeta=ZETA):
    """The expected end-point error of ``flow`` (see the module's docstring).

    Parameters
    ----------
    frame1, frame2 : (H, W, C) float arrays, 0..255 (frame 2 the reference)
    flow : (H, W, 2) float array, finite (nil pixels filled)
    regions : (H, W) int array
    sigma, nil_cost, rounding : float
        The motion posterior's weights.
    backward : (H, W, 2) float array, optional
        The backward flow (frame1(y) = frame2(y − b(y))); default OpenCV's DIS.
    vertical : bool
        False: stereo (offsets and disagreement in u only).

    Returns
    -------
    spread : (H, W) float array
        sqrt(E‖d‖² + ‖f + b'‖²) in pixels.
    per_axis : (H, W, 2) float array
        The same per axis (sqrt(E d_u² + (f_u + b'_u)²), ...).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> import scipy.ndimage as ndi
    >>> f1 = ndi.gaussian_filter(rng.random((30, 30)), 1.5)[..., None].astype(np.float32) * 2550
    >>> s, _ = flow_error(f1, f1, np.zeros((30, 30, 2)), np.zeros((30, 30), int), sigma=2.0,
    ...                   nil_cost=6.0, backward=np.zeros((30, 30, 2)))
    >>> bool(np.median(s) < 0.2)
    True
    """
    from swcuts.motion.flow_refine import _dis

    f1 = np.asarray(frame1, np.float32)
    f2 = np.asarray(frame2, np.float32)
    if f1.ndim == 2:
        f1, f2 = f1[..., None], f2[..., None]
    flow = np.asarray(flow, np.float32)
    # Offsets a chunk at a time: memory O(chunk · H · W), not O(81 · H · W).
    du, dv = _grid(RADIUS, STEP, vertical)
    chunks = (offset_costs(f1, f2, flow, sigma=sigma, nil_cost=nil_cost, rounding=rounding,
                           vertical=vertical, offsets=(du[i:i + CHUNK], dv[i:i + CHUNK]))
              for i in range(0, du.size, CHUNK))
    e2 = _moments(chunks, f2.shape[:2], regions, decay, zeta)
    if backward is None:
        backward = _dis(f2, f1)
    b = warp_frame1(np.asarray(backward, np.float32), flow)
    gap = (flow + b).astype(np.float64)
    if not vertical:
        gap[..., 1] = 0.0
    per_axis = np.sqrt(e2 + gap * gap)
    return np.sqrt(e2.sum(axis=2) + (gap * gap).sum(axis=2)), per_axis
