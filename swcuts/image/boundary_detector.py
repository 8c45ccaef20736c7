"""A learned boundary detector: the probability that a person draws a
boundary at each pixel of a photo (:func:`boundary_probability`).

In the manner of Martin, Fowlkes & Malik (2004, "Learning to detect
natural image boundaries using local brightness, color, and texture
cues", "Pb"): at every pixel, the χ² difference of the brightness, colour
(a*, b*) and texton histograms of the two halves of a window, at several
scales and at the orientation where it is largest, plus the gradient
magnitude of each channel, combined by a small neural network (one hidden
layer) trained on BSDS500 photos with every annotator's boundaries
(``benchmarks/train_boundaries.py``; the weights ship in
``boundary_detector.npz`` beside this module, read by
:mod:`swcuts.image.boundary_weights`).

How the half-window histograms are computed fast. Each histogram bin is a
plane (soft-binned: a value splits between its two nearest bin centres).
Smoothing a plane with a Gaussian G gives the mass S_b of the bin in the
window, and filtering it with a derivative-of-Gaussian kernel x·G(x) (odd:
positive on one half, negative on the other) gives the difference D_b of
the bin between the two halves. Derivative filters are steerable: the
difference across orientation θ is cos θ D_x + sin θ D_y, so the χ²
distance Σ_b D_b(θ)² / S_b is the quadratic form (cos θ, sin θ) M (cos θ,
sin θ)ᵀ with M = Σ_b [D_x D_x, D_x D_y; D_x D_y, D_y D_y] / S_b, and its
maximum over every orientation is M's largest eigenvalue, exact and in
closed form: three separable filters per bin and scale instead of one per
orientation. Coarse scales are computed on a 2x2-averaged pyramid (the
bin planes are densities, so averaging them is exact) and interpolated
back. Textons (Malik, Belongie, Leung & Shi 2001) are the nearest of K
centres (k-means on the training photos, shipped) of a contrast-normalised
bank of Gaussian-derivative responses of the lightness.

Spectral globalization (as gPb's sPb, Maire et al. 2008), when the
weights' setting ``spectral`` is above 0: the local network's map gives a
normalised-cuts affinity on a reduced grid (:func:`spectral_features`);
the gradients of its leading eigenvectors mark the boundaries of large
coherent regions and not those inside textures. A second network reads
the local features, the local map's log-odds, the spectral cues and, when
the setting ``context`` is at least 2, auto-context cues of the local map
(Tu 2008; :func:`~swcuts.image.boundary_context.context_features`: the map
around each pixel, up to ``context`` pixels away), and gives the calibrated
probability. The second stage's cues live in
:mod:`swcuts.image.boundary_context`. When the setting ``conv`` is above
0, a small fully convolutional stage (:mod:`swcuts.image.boundary_conv`,
``conv`` dilated layers) reads the global network's inputs and log-odds
around each pixel and corrects its log-odds (round 10).

Colour images use a detector trained on CIELAB features; grey images one
trained on the grey values of the same photos. Both live in the same file.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np
from numba import njit

from swcuts.image.boundary_context import context_distances, context_features, spectral_features
from swcuts.image.boundary_conv import conv_stage
from swcuts.image.boundary_weights import DEFAULT_PATH, FORMAT_VERSION, MODES, REBUILD, load_detector, save_detector
from swcuts.io.errors import InputError

__all__ = ["boundary_probability", "boundary_features", "spectral_features", "load_detector", "save_detector",
           "texton_responses", "nonmax_suppress", "DEFAULT_PATH", "FORMAT_VERSION", "REBUILD", "SCALES",
           "check_scales"]

# ---------------------------------------------------------------- features

def _gauss(sigma):
    r = int(math.ceil(3.0 * sigma))
    x = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-0.5 * (x / sigma) ** 2)
    g /= g.sum()
    d = x * g
    d /= (x[x > 0] * g[x > 0]).sum()          # a unit step answers 1 (per half)
    dd = (x ** 2 / sigma ** 2 - 1.0) * g      # second derivative (up to scale)
    dd -= dd.mean()
    return g.astype(np.float32), d.astype(np.float32), dd.astype(np.float32)


def _sep(img, kx, ky):
    import cv2

    return cv2.sepFilter2D(img, cv2.CV_32F, kx, ky, borderType=cv2.BORDER_REFLECT)


def texton_responses(lightness) -> np.ndarray:
    """The filter bank of the textons: Gaussian first and second
    derivatives of ``lightness`` at σ = 1 and 2.5 pixels, contrast-normalised
    as Malik et al. (2001): F ← F · log(1 + ‖F‖/0.03) / ‖F‖.

    Parameters
    ----------
    lightness : (H, W) float array

    Returns
    -------
    (H, W, 10) float32 array
    """
    img = np.ascontiguousarray(lightness, dtype=np.float32)
    out = []
    for sigma in (1.0, 2.5):
        g, d, dd = _gauss(sigma)
        out += [_sep(img, d, g), _sep(img, g, d), _sep(img, dd, g), _sep(img, g, dd), _sep(img, d, d)]
    f = np.stack(out, axis=-1)
    norm = np.sqrt((f * f).sum(-1, keepdims=True))
    f *= np.log1p(norm / 0.03) / np.maximum(norm, 1e-12)
    return f


def _textons(lightness, centres):
    f = texton_responses(lightness).reshape(-1, centres.shape[1])
    c = centres.astype(np.float32)
    d = (c * c).sum(1)[None, :] - 2.0 * (f @ c.T)
    return np.argmin(d, axis=1).astype(np.int64).reshape(lightness.shape)


@njit(cache=True)
def _fill_planes(z, lo, hi, n_bins, out):
    """Raw channels, then soft-binned planes of every channel."""
    h, w, c = z.shape
    for y in range(h):
        for x in range(w):
            for k in range(out.shape[2]):
                out[y, x, k] = 0.0
            for ch in range(c):
                v = z[y, x, ch]
                out[y, x, ch] = v
                t = (v - lo[ch]) / (hi[ch] - lo[ch]) * (n_bins - 1)
                if t < 0.0:
                    t = 0.0
                elif t > n_bins - 1:
                    t = n_bins - 1.0
                b = int(t)
                if b >= n_bins - 1:
                    b = n_bins - 2
                f = t - b
                base = c + ch * n_bins
                out[y, x, base + b] = 1.0 - f
                out[y, x, base + b + 1] = f


@njit(cache=True)
def _chi2_forms(S, Dx, Dy, starts, ends, eps, out, col, ocol=-1):
    """For each histogram group [starts[g], ends[g]) of the planes: the
    largest and smallest eigenvalues of Σ_b [Dx², DxDy; DxDy, Dy²] / S_b,
    written (as square roots) to out[..., col + 2g] and col + 2g + 1; if
    ``ocol`` ≥ 0, the orientation θ of the largest as the doubled-angle
    vector (√λ1 − √λ2)(cos 2θ, sin 2θ) to out[..., ocol + 2g] and ocol + 2g + 1."""
    h, w, _ = S.shape
    for y in range(h):
        for x in range(w):
            for g in range(starts.shape[0]):
                a = 0.0
                b = 0.0
                c = 0.0
                for k in range(starts[g], ends[g]):
                    inv = 1.0 / (max(S[y, x, k], 0.0) + eps)
                    dx = Dx[y, x, k]
                    dy = Dy[y, x, k]
                    a += dx * dx * inv
                    b += dx * dy * inv
                    c += dy * dy * inv
                m = 0.5 * (a + c)
                r = math.sqrt(0.25 * (a - c) ** 2 + b * b)
                s1 = math.sqrt(max(m + r, 0.0))
                s2 = math.sqrt(max(m - r, 0.0))
                out[y, x, col + 2 * g] = s1
                out[y, x, col + 2 * g + 1] = s2
                if ocol >= 0:
                    scale = (s1 - s2) / (2.0 * r) if r > 0.0 else 0.0
                    out[y, x, ocol + 2 * g] = scale * (a - c)
                    out[y, x, ocol + 2 * g + 1] = scale * 2.0 * b


def _down(a):
    h, w = a.shape[0] // 2 * 2, a.shape[1] // 2 * 2
    a = a[:h, :w]
    return 0.25 * (a[0::2, 0::2] + a[1::2, 0::2] + a[0::2, 1::2] + a[1::2, 1::2])


def _level_features(stack, n_raw, groups, sigma, orientation=False):
    """Gradient magnitude of the raw channels and the oriented χ² of each
    histogram group, at one pyramid level: (h, w, n_raw + 2 len(groups));
    with ``orientation``, then each group's doubled-angle orientation
    vector (:func:`_chi2_forms`), 2 len(groups) more."""
    g, d, _ = _gauss(sigma)
    S = _sep(stack, g, g)
    Dx = _sep(stack, d, g)
    Dy = _sep(stack, g, d)
    if stack.ndim == 2 or S.ndim == 2:
        S, Dx, Dy = S[..., None], Dx[..., None], Dy[..., None]
    h, w = stack.shape[:2]
    n = n_raw + 2 * len(groups)
    out = np.empty((h, w, n + (2 * len(groups) if orientation else 0)), dtype=np.float32)
    out[..., :n_raw] = np.sqrt(Dx[..., :n_raw] ** 2 + Dy[..., :n_raw] ** 2)
    starts = np.array([s for s, _ in groups], dtype=np.int64)
    ends = np.array([e for _, e in groups], dtype=np.int64)
    _chi2_forms(S, Dx, Dy, starts, ends, 1e-3, out, n_raw, n if orientation else -1)
    return out


def boundary_features(features, detector=None, orientation=False):
    """The per-pixel inputs of the detector's network (before
    standardisation).

    Parameters
    ----------
    features : (H, W, 3) or (H, W, 1) float array
        :func:`swcuts.image.prepare.prepare_image`'s features.
    detector : dict, path or None
        :func:`load_detector`'s weights (or a path to them); default the
        shipped ones.
    orientation : bool
        Also return, per level and histogram group, the orientation of
        the largest χ² as a doubled-angle vector (√λ1 − √λ2)(cos 2θ,
        sin 2θ): the convolutional stage's orientation cues.

    Returns
    -------
    (H, W, F) float32 array, or a pair of it and (H, W, O) float32
        For σ/2 at full resolution (if the setting ``fine`` is 1), then
        each pyramid level (σ doubling from level to level): the
        gradient magnitude of each channel, then for each histogram group
        (each channel, and the textons from level ``texton_from`` on) the
        largest and the smallest oriented χ² (square roots).
    """
    import cv2

    det = _detector(detector)
    z = _check(features)
    mode = det[MODES[z.shape[2]]]
    st = det["settings"]
    n_bins, sigma, levels, tfrom = int(st["n_bins"]), st["sigma"], int(st["levels"]), int(st["texton_from"])
    fine = bool(st["fine"])
    h0, w0, c = z.shape
    m = 2 ** (levels - 1)
    hp, wp = max(-(-h0 // m) * m, 4 * m), max(-(-w0 // m) * m, 4 * m)
    if (hp, wp) != (h0, w0):
        z = np.pad(z, ((0, hp - h0), (0, wp - w0), (0, 0)), mode="symmetric")
    planes = np.empty((hp, wp, c + c * n_bins), dtype=np.float32)
    _fill_planes(np.ascontiguousarray(z), mode["lo"], mode["hi"], n_bins, planes)
    groups = [(c + k * n_bins, c + (k + 1) * n_bins) for k in range(c)]
    centres = mode["centres"]
    n_tex = centres.shape[0]
    tex = None
    if n_tex and tfrom < levels:
        labels = _textons(z[..., 0], centres)
        tex = np.zeros((hp, wp, n_tex), dtype=np.float32)
        np.put_along_axis(tex, labels[..., None], 1.0, axis=2)
    maps = [_level_features(planes, c, groups, 0.5 * sigma, orientation)] if fine else []
    for level in range(levels):
        if level:
            planes = _down(planes)
            if tex is not None:
                tex = _down(tex)
        if tex is not None and level >= tfrom:
            stack = np.concatenate([planes, tex], axis=2)
            grp = groups + [(planes.shape[2], planes.shape[2] + n_tex)]
        else:
            stack, grp = planes, groups
        f = _level_features(np.ascontiguousarray(stack), c, grp, sigma, orientation)
        if level:
            f = cv2.resize(f, (wp, hp), interpolation=cv2.INTER_LINEAR)
            if f.ndim == 2:
                f = f[..., None]
        maps.append(f)
    if orientation:
        n = [m.shape[2] - (m.shape[2] - c) // 2 for m in maps]       # each level: c + 2G features, 2G cues
        ori = np.concatenate([m[..., k:] for m, k in zip(maps, n)], axis=2)[:h0, :w0]
        maps = [m[..., :k] for m, k in zip(maps, n)]
    out = np.ascontiguousarray(np.concatenate(maps, axis=2)[:h0, :w0])
    return (out, np.ascontiguousarray(ori)) if orientation else out


def _check(features):
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 2:
        z = z[..., None]
    if z.ndim != 3 or z.shape[2] not in MODES:
        raise InputError(f"boundary_probability takes prepare_image's features, (H, W, 3) or (H, W, 1), "
                         f"got shape {np.shape(features)}")
    return z


def _detector(detector):
    if detector is None or isinstance(detector, (str, bytes, os.PathLike)):
        return load_detector(detector)
    return detector


def _network(x, mode, prefix=""):
    """The calibrated probability from the features (N, F) (the global
    network's arrays if ``prefix`` is ``"g_"``)."""
    return 1.0 / (1.0 + np.exp(-_logit(x, mode, prefix)))


def _logit(x, mode, prefix=""):
    """:func:`_network`'s log-odds."""
    a = {k: mode[prefix + k] for k in ("mean", "std", "w1", "b1", "w2", "b2")}
    x = (x - a["mean"].astype(np.float32)) / a["std"].astype(np.float32)
    hidden = np.tanh(x @ a["w1"].astype(np.float32) + a["b1"].astype(np.float32))
    return hidden.astype(np.float64) @ a["w2"] + float(a["b2"])


def _stage_inputs(z, det, mode, settings=None):
    """The global network's inputs (H, W, G) of features ``z``, its log-odds (H, W), float64, and the
    orientation cues (H, W, O; O = 0 unless the setting ``conv_orientation`` is 1): the convolutional stage
    reads them concatenated as [inputs, cues, log-odds] (float32)."""
    settings = det["settings"] if settings is None else settings
    if settings.get("conv_orientation", 0) > 0:
        f, ori = boundary_features(z, det, orientation=True)
    else:
        f = boundary_features(z, det)
        ori = np.zeros(f.shape[:2] + (0,), dtype=np.float32)
    h, w, n = f.shape
    x = _global_inputs(f, _network(f.reshape(-1, n), mode), settings)
    return x, _logit(x.reshape(-1, x.shape[-1]), mode, "g_").reshape(h, w), ori


def _global_inputs(features, prob, settings):
    """The global network's inputs: the local features, the local map's
    log-odds, :func:`spectral_features` and :func:`context_features` of the local map."""
    h, w, n = features.shape
    pr = np.clip(prob.reshape(h, w), 1e-6, 1 - 1e-6)
    spec = spectral_features(pr, int(settings["spectral"]), int(settings["spectral_factor"]),
                             settings["spectral_rho"])
    logit = np.log(pr / (1.0 - pr)).astype(np.float32)[..., None]
    parts = [features, logit, spec]
    if settings.get("context", 0) >= 2:
        parts.append(context_features(pr, context_distances(settings["context"])))
    return np.concatenate(parts, axis=2)


#: The scales of the features (1: as given, 2: twice the width and height)
#: at which :func:`boundary_probability` applies the detector, averaging
#: the maps resized back. Default one scale, as the networks were trained
#: and as ``segment()`` uses it. ``(1, 2)`` (boundaries of small detail that
#: the finest window blurs stand out at 2, as in Dollár & Zitnick's
#: multiscale structured edges) detects better, ODS F +0.015 on held-out
#: photos, at about four times the time; on the segmentation it made no
#: difference (docs/real_photos.md, round 8).
SCALES = (1.0,)


def boundary_probability(features, *, detector=None, scales=None, forest=None) -> np.ndarray:
    """The probability that an annotator draws a boundary at (within one
    pixel of) each pixel.

    Parameters
    ----------
    features : (H, W, 3) or (H, W, 1) float array
        What :func:`swcuts.image.prepare.prepare_image` returns first:
        CIELAB scaled to [0, 1], or grey. Grey images use the detector
        trained on grey photos.
    detector : dict, path or None
        :func:`load_detector`'s weights, or a path to a weights file;
        default the shipped ones.
    scales : sequence of float, optional
        Apply the detector to the features resized by each factor and
        average the maps (resized back); default :data:`SCALES`. ``(1,)``:
        the features as given, as the networks were trained.
    forest : bool, str or path-like, optional
        Combine the map with a structured edge forest's
        (:func:`swcuts.image.edge_forest.combine_with_forest`; ``True``: the
        shipped forest, whose file holds colour and grey weights; a file
        without grey weights leaves a grey map as it is). Default: no forest.

    Returns
    -------
    (H, W) float64 array in (0, 1)
        Calibrated on held-out BSDS500 pixels (see
        ``benchmarks/boundary_detector.py``). Deterministic. The map is a
        few pixels wide across an edge; :func:`nonmax_suppress` thins it.

    Raises
    ------
    InputError
        If the features have another shape, or the weights file is missing
        or corrupt (:func:`load_detector`).

    Examples
    --------
    >>> import numpy as np
    >>> image = np.zeros((40, 40, 1)); image[:, 20:] = 0.8     # a vertical step
    >>> p = boundary_probability(image)
    >>> bool(p[:, 19:21].min() > 20 * p[:, :10].max())
    True
    """
    det = _detector(detector)
    z = _check(features)
    scales = check_scales(SCALES if scales is None else scales)
    p = np.mean([_probability_at_scale(z, det, s) for s in scales], axis=0)
    if forest is not None and forest is not False:
        from swcuts.image.edge_forest import combine_with_forest

        p = combine_with_forest(p, z, forest)
    return np.clip(p, 1e-6, 1.0 - 1e-6)


def check_scales(scales) -> tuple:
    """``scales`` of :func:`boundary_probability` as a tuple of positive numbers, or an :class:`InputError`."""
    scales = tuple(np.atleast_1d(np.asarray(scales, dtype=object)).tolist())
    if not scales or not all(isinstance(s, numbers.Real) and not isinstance(s, bool) and 0 < s < math.inf
                             for s in scales):
        raise InputError(f"scales must be positive numbers, got {scales}")
    return scales


def _probability_at_scale(z, det, scale):
    """The detector's map of features ``z`` resized by ``scale``, resized back."""
    from skimage.transform import resize

    h, w = z.shape[:2]
    if scale != 1.0:
        size = (max(round(h * scale), 2), max(round(w * scale), 2))
        z = resize(z, size + z.shape[2:], order=1, anti_aliasing=scale < 1.0)
    mode = det[MODES[z.shape[2]]]
    settings = det["settings"]
    if settings["spectral"] > 0:
        # The same spectral grid at every scale: one node per factor·scale pixels.
        settings = {**settings, "spectral_factor": max(1, round(settings["spectral_factor"] * scale))}
        x, logit, ori = _stage_inputs(z, det, mode, settings)
        if settings["conv"] > 0:
            logit = conv_stage(np.concatenate([x, ori, logit.astype(np.float32)[..., None]], axis=2), mode)
        p = 1.0 / (1.0 + np.exp(-logit.astype(np.float64)))
    else:
        f = boundary_features(z, det)
        p = _network(f.reshape(-1, f.shape[2]), mode).reshape(f.shape[:2])
    return p if scale == 1.0 else resize(p, (h, w), order=1, anti_aliasing=scale > 1.0)


def nonmax_suppress(prob, sigma=1.0) -> np.ndarray:
    """A boundary map thinned to its ridges: each pixel keeps its value if
    it is not below its two neighbours across the local edge orientation
    (the direction of the strongest curvature of the map smoothed by
    ``sigma``), else 0.

    Parameters
    ----------
    prob : (H, W) float array
    sigma : float

    Returns
    -------
    (H, W) float64 array

    Examples
    --------
    >>> import numpy as np
    >>> p = np.exp(-0.5 * (np.arange(9) - 4.0) ** 2)[None, :].repeat(5, 0)
    >>> np.flatnonzero(nonmax_suppress(p)[2] > 0.1)
    array([4])
    """
    from scipy import ndimage as ndi

    p = np.asarray(prob, dtype=np.float64)
    s = ndi.gaussian_filter(p, sigma) if sigma > 0 else p
    gyy = ndi.gaussian_filter(s, 1.0, order=(2, 0)) if sigma > 0 else np.gradient(np.gradient(s, axis=0), axis=0)
    gxx = ndi.gaussian_filter(s, 1.0, order=(0, 2)) if sigma > 0 else np.gradient(np.gradient(s, axis=1), axis=1)
    gxy = ndi.gaussian_filter(s, 1.0, order=(1, 1)) if sigma > 0 else np.gradient(np.gradient(s, axis=0), axis=1)
    # The direction across the ridge: the eigenvector of the strongest curvature.
    theta = 0.5 * np.arctan2(2.0 * gxy, gxx - gyy)
    lam1 = 0.5 * (gxx + gyy) + np.sqrt(0.25 * (gxx - gyy) ** 2 + gxy ** 2)
    lam2 = 0.5 * (gxx + gyy) - np.sqrt(0.25 * (gxx - gyy) ** 2 + gxy ** 2)
    # theta points along the eigenvector of lam1; the normal is that of the curvature larger in size.
    normal = np.where(np.abs(lam2) >= np.abs(lam1), theta + np.pi / 2, theta)
    dx, dy = np.cos(normal), np.sin(normal)
    h, w = p.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    keep = np.ones_like(p, dtype=bool)
    for sgn in (1.0, -1.0):
        nb = ndi.map_coordinates(p, [yy + sgn * dy, xx + sgn * dx], order=1, mode="nearest")
        keep &= p >= nb - 1e-12
    return np.where(keep, p, 0.0)
