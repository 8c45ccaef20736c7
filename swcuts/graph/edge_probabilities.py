"""Edge probabilities q_ij for the clustering step.

The data-driven probability is eq. 53 of Barbu & Zhu:
``q_ij = exp(-(KL(h_i||h_j) + KL(h_j||h_i)) / 2)`` on 15-bin intensity
histograms normalised to 1 (for colour, the KL of each channel is summed),
with a scale factor ``s`` that divides the divergence (``s`` acts as a
temperature: larger ``s`` gives stronger bonds).

On noisy images (:func:`noise_edge_scale`) the scale shrinks with the
noise: noise widens every atom's histogram, so atoms on either side of a
boundary look alike and q stays high across it; SW cuts from one label then
grow the whole label every step and never split it.
"""

from __future__ import annotations

import math

import numpy as np


__all__ = [
    "vertex_histograms",
    "patch_histograms",
    "kl_edge_probabilities",
    "constant_edge_probabilities",
    "noise_sigma",
    "noise_edge_scale",
    "Q_MAX",
    "NOISE_REF",
]

#: Upper clip of q so that log(1 - q) stays finite.
Q_MAX = 1.0 - 1e-9

#: Noise level (:func:`noise_sigma` of features in [0, 1]) above which the
#: edge scale shrinks as NOISE_REF / σ (:func:`noise_edge_scale`). Chosen
#: on the tuning scenes of ``benchmarks/synthetic_scenes.py`` (of 0.01-0.06);
#: the BSDS photos measure σ = 0.0003-0.002, twenty times below it, so their
#: q is unchanged (README, "Atoms").
NOISE_REF = 0.04


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


#: Edges per block of :func:`_symmetric_kl` (bounds its (block, C, B) arrays).
_KL_BLOCK = 1 << 15


def _smoothed(rows, eps):
    """Normalised, smoothed histogram of each channel of ``rows`` (E, C, B),
    and its log."""
    rows = rows.astype(np.float64)
    total = np.maximum(rows.sum(axis=2, keepdims=True), 1e-300)
    p = (rows / total + eps) / (1.0 + eps * rows.shape[2])
    return p, np.log(p)


def _symmetric_kl(hist, edges, eps, out):
    """``out[e]`` = KL(i||j) + KL(j||i) of edge e's two histograms, summed
    over channels: sum (p_i - p_j)(log p_i - log p_j). NumPy in blocks of
    edges, not a compiled loop: it runs once per image, and numba's compile
    of it (0.3 s) was a share of every first run (issue 37)."""
    for lo in range(0, edges.shape[0], _KL_BLOCK):
        block = edges[lo:lo + _KL_BLOCK]
        pi, li = _smoothed(hist[block[:, 0]], eps)
        pj, lj = _smoothed(hist[block[:, 1]], eps)
        out[lo:lo + block.shape[0]] = ((pi - pj) * (li - lj)).sum(axis=(1, 2))


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
    # channels; computed in blocks of edges, so no (E, C, B) array is built.
    sym = np.empty(edges.shape[0])
    _symmetric_kl(hist, edges, float(eps), sym)
    q = np.exp(-0.5 * sym / scale)
    return np.minimum(q, Q_MAX)


def noise_sigma(features) -> float:
    """Standard deviation of the additive noise in ``features`` (Immerkær
    1996, *Fast noise variance estimation*): the mean absolute response to
    the Laplacian-difference mask [[1, -2, 1], [-2, 4, -2], [1, -2, 1]] times
    √(π/2) / 6, the median over the channels that vary.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> round(noise_sigma(0.5 + 0.05 * rng.standard_normal((200, 200))), 2)
    0.05
    >>> noise_sigma(np.zeros((20, 20, 3)))
    0.0
    """
    from scipy import ndimage

    f = np.asarray(features, dtype=np.float64)
    f = f[..., None] if f.ndim == 2 else f
    if min(f.shape[:2]) < 3:
        return 0.0
    mask = np.array([[1.0, -2.0, 1.0], [-2.0, 4.0, -2.0], [1.0, -2.0, 1.0]])
    sigmas = [math.sqrt(math.pi / 2) / 6 * np.abs(ndimage.convolve(f[..., c], mask)[1:-1, 1:-1]).mean()
              for c in range(f.shape[2]) if np.ptp(f[..., c]) > 1e-6]
    return float(np.median(sigmas)) if sigmas else 0.0


def noise_edge_scale(features, ref=NOISE_REF) -> float:
    """The factor of the edge scale on ``features``: min(1, ref / σ), σ
    :func:`noise_sigma`; 1 on images with noise below ``ref``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> noise_edge_scale(np.full((50, 50), 0.5))
    1.0
    >>> round(noise_edge_scale(0.5 + 0.08 * rng.standard_normal((200, 200))), 2)
    0.5
    """
    sigma = noise_sigma(features)
    return 1.0 if sigma <= ref else ref / sigma


def constant_edge_probabilities(n_edges, q):
    """The original SW edge probability: the same ``q`` on every edge.

    For the Potts model with coupling beta use ``q = 1 - exp(-beta)``.
    """
    if not 0.0 <= q < 1.0:
        raise ValueError(f"constant q must lie in [0, 1), got {q}")
    return np.full(int(n_edges), float(q))
