"""Scoring soft boundary maps against BSDS annotators, shared by
``benchmarks/posterior.py`` and ``benchmarks/boundary_detector.py``.

A map in [0, 1] is cut at thresholds; each binary map is thinned
(``skimage.morphology.thin``) and matched one-to-one to every annotator's
boundaries (:func:`swcuts.evaluation.metrics.boundary_map`, tolerance
0.0075 x diagonal, the matching of
:func:`swcuts.evaluation.metrics.boundary_scores`). ODS F: the best F of
the data set's pooled counts at one threshold; OIS F: pooled counts at
each image's best threshold; AP: area under the pooled precision-recall
curve. Baselines: a soft Canny and a Gaussian gradient magnitude.
"""

from __future__ import annotations

import numpy as np

from swcuts.evaluation.metrics.boundaries import _matched

THRESHOLDS = np.linspace(0.05, 1.0, 12)


def grey(image):
    from skimage.color import rgb2gray

    img = np.asarray(image, dtype=np.float64)
    if img.max() > 1:
        img = img / 255.0
    return rgb2gray(img[..., :3]) if img.ndim == 3 else img


def canny_map(image, sigma):
    """Soft Canny: the highest threshold (of 25) at which a pixel is an edge."""
    from skimage.feature import canny

    g = grey(image)
    out = np.zeros(g.shape)
    highs = np.linspace(0.02, 0.5, 25)
    for k, hi in enumerate(highs):
        e = canny(g, sigma=sigma, low_threshold=0.4 * hi, high_threshold=hi)
        out[e] = (k + 1) / len(highs)
    return out


def gradient_map(image, sigma):
    from scipy import ndimage

    g = grey(image)
    mag = ndimage.gaussian_gradient_magnitude(g, sigma)
    return mag / max(mag.max(), 1e-12)


def counts(soft, truth_bdry, radius, thresholds=THRESHOLDS):
    """(match_p, total_p, match_r, total_r) per threshold of ``soft``."""
    from skimage.morphology import thin

    out = np.zeros((len(thresholds), 4), dtype=np.int64)
    truth_pts = [np.argwhere(t).astype(np.float64) for t in truth_bdry]
    total_r = sum(len(p) for p in truth_pts)
    for k, t in enumerate(thresholds):
        b = thin(soft >= t - 1e-9)
        pts = np.argwhere(b).astype(np.float64)
        matched = np.zeros(len(pts), dtype=bool)
        match_r = 0
        for tp in truth_pts:
            m = _matched(pts, tp, radius)
            matched |= m
            match_r += int(m.sum())
        out[k] = (int(matched.sum()), len(pts), match_r, total_r)
    return out


def f_of(c):
    p = c[..., 0] / np.maximum(c[..., 1], 1)
    r = c[..., 2] / np.maximum(c[..., 3], 1)
    f = np.where(p + r > 0, 2 * p * r / np.maximum(p + r, 1e-12), 0.0)
    return p, r, f


def scores(per_image, thresholds=THRESHOLDS):
    """ODS F, OIS F, AP of a list of per-threshold count arrays."""
    pooled = np.sum(per_image, axis=0)
    p, r, f = f_of(pooled)
    ods = float(f.max())
    best = [c[int(np.argmax(f_of(c)[2]))] for c in per_image]
    ois = float(f_of(np.sum(best, axis=0))[2])
    # AP: precision integrated over recall (thresholds descending: recall rising).
    order = np.argsort(r)
    rr, pp = r[order], p[order]
    pp = np.maximum.accumulate(pp[::-1])[::-1]  # interpolated precision
    ap = float(np.sum(np.diff(np.concatenate([[0.0], rr])) * pp))
    return {"ods": ods, "ois": ois, "ap": ap, "threshold": float(thresholds[int(np.argmax(f))])}
