"""How many of an image's pixels are independent evidence: the power ζ of
the coarsened region likelihood.

The region likelihood of :class:`~swcuts.models.image.ImageModel` (eqs.
55-58) treats a label's n pixels as n independent draws. Neighbouring
pixels of a photo are strongly correlated (optics, demosaicing, JPEG,
smooth shading), so the likelihood counts the same evidence many times:
splitting a textured or shaded region buys n·ΔH nats that no annotator
would pay, and a one-atom move costs hundreds of nats at T = 1.

The coarsened posterior (Miller & Dunson 2019, "Robust Bayesian inference
via coarsening", JASA 114, eq. 3.3) raises the likelihood to a power
ζ ∈ (0, 1]. Here ζ is the share of independent pixels: for a stationary
field with lag-one correlations ρx, ρy along rows and columns (a separable
first-order autoregression), the variance of the mean of n pixels is that
of n·ζ independent ones (Whittle 1954; the effective sample size of an
AR(1) series is n (1 − ρ)/(1 + ρ), and the two axes multiply):

    ζ = (1 − ρx)(1 − ρy) / ((1 + ρx)(1 + ρy))

The correlations are those of the residuals after each atom's mean is
taken away (the atoms carry the image's structure; what is left is the
within-region variation the likelihood models), pooled over the channels,
over the pixel pairs of the same atom.
"""

from __future__ import annotations

import numpy as np

__all__ = ["neighbour_correlations", "effective_pixel_fraction", "MAX_CORRELATION"]

#: The largest lag-one correlation used (ζ ≥ (0.05 / 1.95)² ≈ 6.6e-4): a
#: constant or perfectly smooth atom gives ρ → 1 and would leave no evidence.
MAX_CORRELATION = 0.95


def neighbour_correlations(features, atoms) -> tuple[float, float]:
    """Lag-one correlations (ρx, ρy) of the within-atom residuals.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
        The model's image features.
    atoms : (H, W) int array
        Atom labels 0..N-1.

    Returns
    -------
    (float, float)
        The correlation between horizontally and between vertically
        adjacent pixels of the same atom, of each pixel's features minus its
        atom's mean, pooled over channels; 0 where there are no such pairs
        or no variation.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> noise = rng.normal(size=(64, 64))
    >>> atoms = np.zeros((64, 64), dtype=int)
    >>> [abs(round(r, 1)) for r in neighbour_correlations(noise, atoms)]     # white noise
    [0.0, 0.0]
    >>> smooth = noise.cumsum(axis=1) / 8.0                                   # a random walk along rows
    >>> rx, ry = neighbour_correlations(smooth - smooth.mean(axis=1, keepdims=True), atoms)
    >>> bool(rx > 0.8), abs(round(ry, 1))
    (True, 0.0)
    """
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 2:
        z = z[..., None]
    lab = np.asarray(atoms, dtype=np.int64)
    n = int(lab.max()) + 1 if lab.size else 0
    flat = lab.ravel()
    counts = np.maximum(np.bincount(flat, minlength=n), 1)
    res = np.empty_like(z)
    for c in range(z.shape[-1]):
        means = np.bincount(flat, weights=z[..., c].ravel(), minlength=n) / counts
        res[..., c] = z[..., c] - means[lab]
    out = []
    for a, b, la, lb in ((res[:, :-1], res[:, 1:], lab[:, :-1], lab[:, 1:]),
                         (res[:-1], res[1:], lab[:-1], lab[1:])):
        same = la == lb
        num = float((a[same] * b[same]).sum())
        den = float(np.sqrt((a[same] ** 2).sum() * (b[same] ** 2).sum()))
        out.append(num / den if den > 0 else 0.0)
    return out[0], out[1]


def effective_pixel_fraction(features, atoms) -> float:
    """ζ: the share of an image's pixels that are independent evidence.

    ζ = (1 − ρx)(1 − ρy) / ((1 + ρx)(1 + ρy)) with the lag-one correlations
    of :func:`neighbour_correlations`, each clipped to [0, :data:`MAX_CORRELATION`].

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> atoms = np.zeros((64, 64), dtype=int)
    >>> round(effective_pixel_fraction(rng.normal(size=(64, 64)), atoms), 1)
    1.0
    >>> from scipy.ndimage import gaussian_filter
    >>> blurred = gaussian_filter(rng.normal(size=(64, 64)), 2.0)
    >>> bool(effective_pixel_fraction(blurred, atoms) < 0.05)
    True
    """
    zeta = 1.0
    for rho in neighbour_correlations(features, atoms):
        rho = min(max(rho, 0.0), MAX_CORRELATION)
        zeta *= (1.0 - rho) / (1.0 + rho)
    return float(zeta)
