"""Edge probabilities q_ij for the clustering step.

The data-driven probability is eq. 53 of Barbu & Zhu:
``q_ij = exp(-(KL(h_i||h_j) + KL(h_j||h_i)) / 2)`` on 15-bin intensity
histograms normalised to 1 (for colour, the KL of each channel is summed),
with a scale factor ``s`` that divides the divergence (``s`` acts as a
temperature: larger ``s`` gives stronger bonds).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .primitives import compiled_only

__all__ = [
    "vertex_histograms",
    "patch_histograms",
    "kl_edge_probabilities",
    "constant_edge_probabilities",
    "Q_MAX",
]

#: Upper clip of q so that log(1 - q) stays finite.
Q_MAX = 1.0 - 1e-9


def vertex_histograms(features, atoms, n_vertices=None, bins=15):
    """Per-vertex, per-channel intensity histograms (counts).

    Parameters
    ----------
    features : (H, W, C) float array in [0, 1]
    atoms : (H, W) int array, labels 0..N-1
    n_vertices : int, optional
    bins : int

    Returns
    -------
    hist : (N, C, bins) float64 array of pixel counts.
    """
    features = np.asarray(features, dtype=np.float64)
    if features.ndim == 2:
        features = features[..., None]
    n_channels = features.shape[-1]
    atoms = np.asarray(atoms, dtype=np.int64).ravel()
    n = int(atoms.max()) + 1 if n_vertices is None else int(n_vertices)
    idx = np.minimum((features.reshape(-1, n_channels) * bins).astype(np.int64), bins - 1)
    idx = np.maximum(idx, 0)
    flat = (atoms[:, None] * n_channels + np.arange(n_channels)[None, :]) * bins + idx
    counts = np.bincount(flat.ravel(), minlength=n * n_channels * bins)
    return counts.reshape(n, n_channels, bins).astype(np.float64)


def patch_histograms(features, radius=1, bins=15):
    """Per-pixel histograms of the (2r+1)x(2r+1) patch around each pixel.

    The histogram of a single pixel is one bin, so eq. 53 on pixels would
    give q = Q_MAX or ~0; the histograms of overlapping patches change
    gradually inside a region and sharply across its boundary.

    Parameters
    ----------
    features : (H, W, C) float array in [0, 1]
    radius : int
        Patch radius r (patches are clipped at the image border by
        replicating the edge pixels).
    bins : int

    Returns
    -------
    hist : (H*W, C, bins) float32 array of patch fractions.
        Single precision: a patch fraction is a multiple of 1/(2r+1)^2,
        and at a megapixel the histograms are the largest array of a run.
    """
    from scipy.ndimage import uniform_filter

    features = np.asarray(features, dtype=np.float64)
    if features.ndim == 2:
        features = features[..., None]
    h, w, n_channels = features.shape
    idx = np.clip((features * bins).astype(np.int64), 0, bins - 1)
    hist = np.empty((h * w, n_channels, bins), dtype=np.float32)
    plane = np.empty((h, w), dtype=np.float32)
    for c in range(n_channels):
        for b in range(bins):
            np.equal(idx[..., c], b, out=plane, casting="unsafe")
            hist[:, c, b] = uniform_filter(plane, size=2 * radius + 1, mode="nearest").ravel()
    return hist


@compiled_only
def _smoothed(row, eps, p, logp):
    """Normalised, smoothed histogram of each channel of ``row`` (C, B)."""
    n_channels, n_bins = row.shape
    for c in range(n_channels):
        total = 0.0
        for b in range(n_bins):
            total += row[c, b]
        total = max(total, 1e-300)
        for b in range(n_bins):
            v = (row[c, b] / total + eps) / (1.0 + eps * n_bins)
            p[c, b] = v
            logp[c, b] = math.log(v)


@njit(cache=True)
def _symmetric_kl(hist, edges, eps, out):
    n_channels, n_bins = hist.shape[1], hist.shape[2]
    pi = np.empty((n_channels, n_bins))
    li = np.empty((n_channels, n_bins))
    pj = np.empty((n_channels, n_bins))
    lj = np.empty((n_channels, n_bins))
    last = -1
    for e in range(edges.shape[0]):
        i, j = edges[e, 0], edges[e, 1]
        if i != last:  # edges are sorted by their first end: reuse its histogram
            _smoothed(hist[i], eps, pi, li)
            last = i
        _smoothed(hist[j], eps, pj, lj)
        s = 0.0
        for c in range(n_channels):
            for b in range(n_bins):
                s += (pi[c, b] - pj[c, b]) * (li[c, b] - lj[c, b])
        out[e] = s


def kl_edge_probabilities(hist, edges, scale=1.0, eps=1e-2):
    """Eq. 53: q_ij from the symmetric KL divergence of vertex histograms.

    Parameters
    ----------
    hist : (N, C, B) array of histogram counts (normalised here).
    edges : (E, 2) int array.
    scale : float
        Divergences are divided by ``scale`` before exponentiation.
    eps : float
        Additive smoothing of each normalised histogram bin, which keeps
        the KL divergence finite for empty bins.

    Returns
    -------
    q : (E,) float64 array in [0, Q_MAX].
    """
    if scale <= 0:
        raise ValueError(f"edge scale must be positive, got {scale}")
    hist = np.asarray(hist)
    if hist.dtype not in (np.float32, np.float64):
        hist = hist.astype(np.float64)
    edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    # KL(i||j) + KL(j||i) = sum (p_i - p_j)(log p_i - log p_j), summed over
    # channels; computed edge by edge, so no (E, C, B) array is ever built.
    sym = np.empty(edges.shape[0])
    _symmetric_kl(hist, edges, float(eps), sym)
    q = np.exp(-0.5 * sym / scale)
    return np.minimum(q, Q_MAX)


def constant_edge_probabilities(n_edges, q):
    """The original SW edge probability: the same ``q`` on every edge.

    For the Potts model with coupling beta use ``q = 1 - exp(-beta)``.
    """
    if not 0.0 <= q < 1.0:
        raise ValueError(f"constant q must lie in [0, 1), got {q}")
    return np.full(int(n_edges), float(q))
