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

The correlations are those of the residuals after the mean of the 11x11
window around each pixel is taken away (the window, about an atom's size,
carries the image's structure; what is left is the within-region variation
the likelihood models), pooled over the channels. They depend on the image
alone, so every segmentation of it, a sampler's or an annotator's, is
scored with the same ζ (on the default watershed atoms of BSDS photos the
within-atom residuals give the same correlations within ±0.05).
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["neighbour_correlations", "effective_pixel_fraction", "region_correlations", "region_pixel_fraction",
           "MAX_CORRELATION", "REGION_MAX_CORRELATION", "LOCAL_RADIUS", "TRIM"]

#: The largest lag-one correlation used (ζ ≥ (0.05 / 1.95)² ≈ 6.6e-4): a
#: constant or perfectly smooth image gives ρ → 1 and would leave no evidence.
MAX_CORRELATION = 0.95
#: The largest lag-one correlation of :func:`region_pixel_fraction`
#: (ζ ≥ (0.01 / 1.99)² ≈ 2.5e-5): residuals from a region's mean carry its
#: shading, and on smooth photos (sky) their correlation is 0.97-0.99.
REGION_MAX_CORRELATION = 0.99
#: Radius of the window whose mean is the local structure (pixels).
LOCAL_RADIUS = 5
#: Pixel pairs with a residual beyond this many robust standard deviations
#: (1.4826 × the median absolute residual, per channel) are left out.
TRIM = 2.5


def neighbour_correlations(features, radius=LOCAL_RADIUS) -> tuple[float, float]:
    """Lag-one correlations (ρx, ρy) of an image's local residuals.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
        The model's image features.
    radius : int
        The residual of a pixel is its features minus their mean over the
        (2r + 1)² window around it (mirrored at the border).

    Returns
    -------
    (float, float)
        The correlation between horizontally and between vertically
        adjacent residuals, pooled over channels, over the pairs whose
        residuals are all within :data:`TRIM` robust standard deviations
        (a step edge inside the window leaves a ramp of large, correlated
        residuals: structure, not texture); 0 where nothing varies.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> noise = rng.normal(size=(64, 64))
    >>> [round(r, 1) for r in neighbour_correlations(noise)]           # white noise
    [-0.0, -0.0]
    >>> from scipy.ndimage import gaussian_filter
    >>> [round(r, 1) for r in neighbour_correlations(gaussian_filter(noise, 2.0))]
    [0.9, 0.9]
    """
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 2:
        z = z[..., None]
    side = 2 * int(radius) + 1
    res = np.empty(z.shape)
    for c in range(z.shape[-1]):
        plane = np.ascontiguousarray(z[..., c])
        res[..., c] = plane - cv2.blur(plane, (side, side), borderType=cv2.BORDER_REFLECT)
    return _lag_one(res)


def _lag_one(res, labels=None) -> tuple[float, float]:
    """Lag-one correlations (ρx, ρy) of the (H, W, C) residuals ``res``,
    pooled over channels, over the adjacent pairs whose residuals are all
    within :data:`TRIM` robust standard deviations (beyond, a residual is
    an edge: a step leaves a ramp of correlated residuals, structure, not
    texture) and, with ``labels``, in one region."""
    mad = np.median(np.abs(res), axis=(0, 1))
    keep = (np.abs(res) <= TRIM * 1.4826 * np.maximum(mad, 1e-12)).all(axis=-1)
    out = []
    for first, second in ((np.s_[:, :-1], np.s_[:, 1:]), (np.s_[:-1], np.s_[1:])):
        both = keep[first] & keep[second]
        if labels is not None:
            both &= labels[first] == labels[second]
        a, b = res[first][both], res[second][both]
        den = float(np.sqrt((a * a).sum() * (b * b).sum()))
        out.append(float((a * b).sum()) / den if den > 0 else 0.0)
    return out[0], out[1]


def _independent_share(correlations, cap) -> float:
    """(1 − ρx)(1 − ρy) / ((1 + ρx)(1 + ρy)), each ρ clipped to [0, ``cap``]:
    the share of independent draws of an AR(1) field on the lattice."""
    zeta = 1.0
    for rho in correlations:
        rho = min(max(rho, 0.0), cap)
        zeta *= (1.0 - rho) / (1.0 + rho)
    return float(zeta)


def effective_pixel_fraction(features) -> float:
    """ζ: the share of an image's pixels that are independent evidence.

    ζ = (1 − ρx)(1 − ρy) / ((1 + ρx)(1 + ρy)) with the lag-one correlations
    of :func:`neighbour_correlations`, each clipped to [0, :data:`MAX_CORRELATION`].

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> round(effective_pixel_fraction(rng.normal(size=(64, 64))), 1)
    1.0
    >>> from scipy.ndimage import gaussian_filter
    >>> blurred = gaussian_filter(rng.normal(size=(64, 64)), 2.0)
    >>> bool(effective_pixel_fraction(blurred) < 0.01)
    True
    """
    return _independent_share(neighbour_correlations(features), MAX_CORRELATION)


def region_correlations(features, labels) -> tuple[float, float]:
    """Lag-one correlations (ρx, ρy) of the residuals from each region's mean.

    The region likelihood models a region's pixels as draws around the
    region's own statistics; what it calls independent is the residual of
    a pixel from its region's mean. This measures how correlated those
    residuals are between horizontally and vertically adjacent pixels of
    one region (pairs that straddle two regions are left out; so are pairs
    with a residual beyond :data:`TRIM` robust standard deviations, as in
    :func:`neighbour_correlations`), pooled over the channels.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
    labels : (H, W) int array
        The regions (e.g. super-atoms), 0..K-1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> halves = np.repeat([[0] * 32 + [1] * 32], 64, axis=0)
    >>> [abs(round(r, 1)) for r in region_correlations(rng.normal(size=(64, 64)) + 5 * halves, halves)]
    [0.0, 0.0]
    >>> ramp = np.linspace(0, 1, 64)[None, :] * np.ones((64, 1)) + 0.01 * rng.normal(size=(64, 64))
    >>> [round(r, 1) for r in region_correlations(ramp, halves)]    # shading is correlated
    [1.0, 1.0]
    """
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 2:
        z = z[..., None]
    lab = np.asarray(labels, dtype=np.int64)
    n = int(lab.max()) + 1
    count = np.maximum(np.bincount(lab.ravel(), minlength=n), 1)
    res = np.empty(z.shape)
    for c in range(z.shape[-1]):
        mean = np.bincount(lab.ravel(), weights=z[..., c].ravel(), minlength=n) / count
        res[..., c] = z[..., c] - mean[lab]
    return _lag_one(res, lab)


def region_pixel_fraction(features, labels) -> float:
    """ζ of the residuals from each region's mean: the share of a region's
    pixels that are independent evidence about it,
    (1 − ρx)(1 − ρy) / ((1 + ρx)(1 + ρy)) with the correlations of
    :func:`region_correlations`, each clipped to [0, :data:`REGION_MAX_CORRELATION`].

    On the super-atoms (~200) of BSDS500 photos it is 2e-4 to 1e-2 (a
    super-atom of ~750 pixels holds 0.1 to 10 independent pixels), where
    :func:`effective_pixel_fraction`, on the residuals from an 11x11 window,
    gives 0.02 to 0.1: the window's mean takes away the shading that a
    region's mean leaves in.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> halves = np.repeat([[0] * 32 + [1] * 32], 64, axis=0)
    >>> round(region_pixel_fraction(rng.normal(size=(64, 64)), halves), 1)
    1.0
    """
    return _independent_share(region_correlations(features, labels), REGION_MAX_CORRELATION)
