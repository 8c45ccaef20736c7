"""Edge probabilities q_ij for the clustering step.

The data-driven probability is eq. 53 of Barbu & Zhu:
``q_ij = exp(-(KL(h_i||h_j) + KL(h_j||h_i)) / 2)`` on 15-bin intensity
histograms normalised to 1 (for colour, the KL of each channel is summed),
with a scale factor ``s`` that divides the divergence (``s`` acts as a
temperature: larger ``s`` gives stronger bonds).
"""

from __future__ import annotations

import numpy as np

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
    hist : (H*W, C, bins) float64 array of patch fractions.
    """
    from scipy.ndimage import uniform_filter

    features = np.asarray(features, dtype=np.float64)
    if features.ndim == 2:
        features = features[..., None]
    h, w, n_channels = features.shape
    idx = np.clip((features * bins).astype(np.int64), 0, bins - 1)
    hist = np.empty((h * w, n_channels, bins))
    for c in range(n_channels):
        for b in range(bins):
            plane = (idx[..., c] == b).astype(np.float64)
            hist[:, c, b] = uniform_filter(plane, size=2 * radius + 1, mode="nearest").ravel()
    return hist


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
    h = np.asarray(hist, dtype=np.float64)
    total = h.sum(axis=-1, keepdims=True)
    p = h / np.maximum(total, 1e-300)
    p = (p + eps) / (1.0 + eps * h.shape[-1])
    logp = np.log(p)
    i, j = edges[:, 0], edges[:, 1]
    # KL(i||j) + KL(j||i) = sum (p_i - p_j)(log p_i - log p_j), summed over channels.
    sym = np.sum((p[i] - p[j]) * (logp[i] - logp[j]), axis=(1, 2))
    q = np.exp(-0.5 * sym / scale)
    return np.minimum(q, Q_MAX)


def constant_edge_probabilities(n_edges, q):
    """The original SW edge probability: the same ``q`` on every edge.

    For the Potts model with coupling beta use ``q = 1 - exp(-beta)``.
    """
    if not 0.0 <= q < 1.0:
        raise ValueError(f"constant q must lie in [0, 1), got {q}")
    return np.full(int(n_edges), float(q))
