"""Scoring soft boundary maps against BSDS annotators, shared by
``benchmarks/posterior.py`` and ``benchmarks/boundary_detector.py``.

A map in [0, 1] is cut at thresholds; each binary map is thinned
(``skimage.morphology.thin``) and matched one-to-one to every annotator's
boundaries (:func:`swcuts.evaluation.metrics.boundary_map`, tolerance
0.0075 x diagonal, the matching of
:func:`swcuts.evaluation.metrics.boundary_scores`, by scipy: :func:`match_points`). ODS F: the best F of
the data set's pooled counts at one threshold; OIS F: pooled counts at
each image's best threshold; AP: area under the pooled precision-recall
curve. Baselines: a soft Canny and a Gaussian gradient magnitude.
"""

from __future__ import annotations

import numpy as np
from numba import njit



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


def match_points(points_a, points_b, radius):
    """For each point of ``a``, whether a maximum one-to-one matching of the
    points of ``a`` to those of ``b`` within ``radius`` (inclusive) matches
    it: the matching of :func:`swcuts.evaluation.metrics.boundaries._matched`
    (the same number of matches: a maximum matching), by augmenting paths
    from a greedy start, compiled (:func:`_max_matching`): networkx's took
    0.1-0.7 s per map, scipy's from 0.01 s to minutes on the same maps."""
    from scipy.spatial import cKDTree

    if len(points_a) == 0 or len(points_b) == 0:
        return np.zeros(len(points_a), dtype=bool)
    pairs = cKDTree(points_a).sparse_distance_matrix(cKDTree(points_b), radius, output_type="ndarray")
    order = np.lexsort((pairs["v"], pairs["i"]))          # nearest candidates first
    i, j = pairs["i"][order].astype(np.int64), pairs["j"][order].astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(i, minlength=len(points_a)))]).astype(np.int64)
    return _max_matching(indptr, j, len(points_b)) >= 0


@njit(cache=True)
def _max_matching(indptr, indices, n_b):
    """Maximum bipartite matching (Kuhn's augmenting paths, iterative, after
    a greedy pass): the partner in b of each vertex of a, or -1."""
    n_a = indptr.shape[0] - 1
    mate_a = np.full(n_a, -1, np.int64)
    mate_b = np.full(n_b, -1, np.int64)
    for u in range(n_a):
        for p in range(indptr[u], indptr[u + 1]):
            v = indices[p]
            if mate_b[v] < 0:
                mate_a[u] = v
                mate_b[v] = u
                break
    seen = np.full(n_b, -1, np.int64)
    stack_u = np.empty(n_a, np.int64)
    stack_p = np.empty(n_a, np.int64)
    via = np.empty(n_a, np.int64)
    for root in range(n_a):
        if mate_a[root] >= 0 or indptr[root] == indptr[root + 1]:
            continue
        top = 0
        stack_u[0] = root
        stack_p[0] = indptr[root]
        found = False
        while top >= 0 and not found:
            u = stack_u[top]
            if stack_p[top] >= indptr[u + 1]:
                top -= 1
                continue
            v = indices[stack_p[top]]
            stack_p[top] += 1
            if seen[v] == root:
                continue
            seen[v] = root
            via[top] = v
            w = mate_b[v]
            if w < 0:
                found = True
                break
            top += 1
            stack_u[top] = w
            stack_p[top] = indptr[w]
        if found:
            for k in range(top, -1, -1):     # flip the path root .. via[top]
                u = stack_u[k]
                v = via[k]
                mate_a[u] = v
                mate_b[v] = u
    return mate_a


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
            m = match_points(pts, tp, radius)
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
