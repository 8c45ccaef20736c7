"""Standard metrics for comparing a segmentation with a ground truth.

Every function takes integer label images of equal shape. Labels are names
only: they may be any integers (not necessarily consecutive or starting at
0), and every metric here is invariant under a renaming of the labels of
either image. The region-based metrics (PRI, VoI, GCE) are computed exactly
from the contingency table ``n[i, j] = #{p : seg[p] == i, truth[p] == j}``,
built in one vectorised pass (``np.unique`` + ``scipy.sparse.coo_matrix``),
so they cost O(n log n) in the number of pixels ``n``.

References
----------
.. [1] R. Unnikrishnan, C. Pantofaru, M. Hebert, "Toward objective
   evaluation of image segmentation algorithms", IEEE TPAMI 29(6), 2007.
.. [2] M. Meila, "Comparing clusterings -- an information based distance",
   J. Multivariate Analysis 98(5), 2007.
.. [3] D. Martin, C. Fowlkes, D. Tal, J. Malik, "A database of human
   segmented natural images and its application to evaluating segmentation
   algorithms and measuring ecological statistics", ICCV 2001.
.. [4] P. Arbelaez, M. Maire, C. Fowlkes, J. Malik, "Contour detection and
   hierarchical image segmentation", IEEE TPAMI 33(5), 2011.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.spatial import cKDTree

__all__ = [
    "probabilistic_rand_index",
    "rand_index",
    "variation_of_information",
    "global_consistency_error",
    "boundary_map",
    "boundary_precision_recall",
    "boundary_f_measure",
    "segmentation_scores",
    "mean_variation_of_information",
    "segmentation_covering",
    "boundary_scores",
    "benchmark_scores",
]


# ---------------------------------------------------------------------------
# Input checking and the contingency table
# ---------------------------------------------------------------------------


def _as_labels(image, name: str) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype.kind not in "biu":
        raise TypeError(f"{name} must be an integer label image, got dtype {image.dtype}")
    if image.size == 0:
        raise ValueError(f"{name} is empty")
    return image


def _check_pair(seg, truth) -> tuple[np.ndarray, np.ndarray]:
    seg = _as_labels(seg, "seg")
    truth = _as_labels(truth, "truth")
    if seg.shape != truth.shape:
        raise ValueError(
            f"seg and truth must have the same shape, got {seg.shape} and {truth.shape}"
        )
    return seg, truth


@dataclass(frozen=True)
class _Contingency:
    """Non-zero cells of the contingency table of two label images.

    ``nij[k]`` pixels have seg label index ``row[k]`` and truth label index
    ``col[k]``; ``a`` and ``b`` are the row and column sums (region sizes of
    seg and truth); ``n`` is the number of pixels.
    """

    row: np.ndarray
    col: np.ndarray
    nij: np.ndarray
    a: np.ndarray
    b: np.ndarray
    n: int


def _contingency(seg: np.ndarray, truth: np.ndarray) -> _Contingency:
    _, si = np.unique(seg.ravel(), return_inverse=True)
    _, ti = np.unique(truth.ravel(), return_inverse=True)
    si = si.ravel()
    ti = ti.ravel()
    n = si.size
    shape = (int(si.max()) + 1, int(ti.max()) + 1)
    table = coo_matrix((np.ones(n, dtype=np.int64), (si, ti)), shape=shape)
    table.sum_duplicates()
    nij = table.data.astype(np.int64)
    a = np.bincount(si, minlength=shape[0]).astype(np.int64)
    b = np.bincount(ti, minlength=shape[1]).astype(np.int64)
    return _Contingency(table.row, table.col, nij, a, b, n)


# ---------------------------------------------------------------------------
# Rand index / PRI
# ---------------------------------------------------------------------------


def _rand_from_table(t: _Contingency) -> float:
    # Over all C(n, 2) unordered pixel pairs, a pair agrees if it is together
    # in both images or apart in both. With s(x) = sum C(x, 2):
    #   together in both            = s(nij)
    #   together in seg only        = s(a) - s(nij)
    #   together in truth only      = s(b) - s(nij)
    #   agreements = C(n,2) - (together in exactly one) = C(n,2) + 2 s(nij) - s(a) - s(b)
    # Exact in int64 for n < ~3e9 pixels.
    def pairs(x):
        return int(np.sum(x * (x - 1) // 2))

    total = t.n * (t.n - 1) // 2
    if total == 0:  # a single pixel: there are no pairs to disagree on
        return 1.0
    agree = total + 2 * pairs(t.nij) - pairs(t.a) - pairs(t.b)
    return agree / total


def rand_index(seg, truth) -> float:
    """Rand index of a segmentation against one ground truth.

    Parameters
    ----------
    seg, truth : array_like of int
        Label images of the same shape.

    Returns
    -------
    float
        Fraction of the ``n * (n - 1) / 2`` unordered pixel pairs on which the
        two images agree (both same label, or both different labels), in
        ``[0, 1]``. A one-pixel image gives 1.0.

    Raises
    ------
    ValueError
        If the shapes differ or the images are empty.
    TypeError
        If either image is not of integer (or bool) dtype.
    """
    seg, truth = _check_pair(seg, truth)
    return _rand_from_table(_contingency(seg, truth))


def _truth_list(seg: np.ndarray, truths) -> list:
    if isinstance(truths, np.ndarray):
        if truths.shape == seg.shape:
            return [truths]
        if truths.ndim == seg.ndim + 1 and truths.shape[1:] == seg.shape:
            return list(truths)
        raise ValueError(
            f"truths of shape {truths.shape} match neither seg's shape {seg.shape} "
            f"nor a stack (k, *{seg.shape})"
        )
    truths = list(truths)
    if not truths:
        raise ValueError("truths is an empty list; need at least one ground truth")
    return truths


def probabilistic_rand_index(seg, truths) -> float:
    """Probabilistic Rand index (PRI) of a segmentation against ground truths.

    The PRI of Unnikrishnan et al. [1]_ is the Rand index averaged over the
    available human segmentations: for every unordered pixel pair the
    probability ``p_ij`` that the pair lies in one region is estimated from
    the ground truths, and the score is the mean over pairs of
    ``c_ij p_ij + (1 - c_ij)(1 - p_ij)``, which equals the mean of the Rand
    indices against each ground truth. Each Rand index is computed exactly
    from the contingency table, over all ``n choose 2`` pairs.

    Parameters
    ----------
    seg : array_like of int
        Segmentation label image.
    truths : array_like of int, or sequence of array_like of int
        One ground truth of ``seg``'s shape, a stacked array of shape
        ``(k, *seg.shape)``, or a list/tuple of ground truths.

    Returns
    -------
    float
        PRI in ``[0, 1]``; 1 means every ground truth equals ``seg`` up to a
        renaming of labels.

    Raises
    ------
    ValueError
        If a ground truth's shape differs from ``seg``'s, an image is empty,
        or ``truths`` is an empty list.
    TypeError
        If an image is not of integer (or bool) dtype.
    """
    seg = _as_labels(seg, "seg")
    return float(np.mean([rand_index(seg, t) for t in _truth_list(seg, truths)]))


# ---------------------------------------------------------------------------
# Variation of information
# ---------------------------------------------------------------------------


def _voi_from_table(t: _Contingency) -> float:
    # VoI = H(A) + H(B) - 2 I(A;B) = H(A|B) + H(B|A)
    #     = sum_ij (n_ij / n) [log(a_i / n_ij) + log(b_j / n_ij)].
    # Written this way it is exactly 0 for identical partitions and exactly
    # symmetric term by term.
    a = t.a[t.row].astype(np.float64)
    b = t.b[t.col].astype(np.float64)
    nij = t.nij.astype(np.float64)
    voi = np.sum(nij * (np.log(a) + np.log(b) - 2.0 * np.log(nij))) / t.n
    return max(float(voi), 0.0)


def variation_of_information(seg, truth) -> float:
    """Variation of information (VoI) between a segmentation and a ground truth.

    ``VoI(A, B) = H(A) + H(B) - 2 I(A; B)`` in nats (natural log), where the
    label of a uniformly drawn pixel is the random variable [2]_. It is a
    metric on partitions: symmetric, zero iff the partitions coincide, and
    bounded by ``log n``.

    Parameters
    ----------
    seg, truth : array_like of int
        Label images of the same shape.

    Returns
    -------
    float
        VoI >= 0; lower is better.

    Raises
    ------
    ValueError
        If the shapes differ or the images are empty.
    TypeError
        If either image is not of integer (or bool) dtype.
    """
    seg, truth = _check_pair(seg, truth)
    return _voi_from_table(_contingency(seg, truth))


# ---------------------------------------------------------------------------
# Global consistency error
# ---------------------------------------------------------------------------


def _gce_from_table(t: _Contingency) -> float:
    # A pixel in cell (i, j) has R(S1, p) = seg region i (size a_i) and
    # R(S2, p) = truth region j (size b_j); their intersection is the cell,
    # so LRE(S1, S2, p) = (a_i - n_ij) / a_i. Summing over the n_ij pixels of
    # every cell:  sum_p LRE(S1, S2, p) = n - sum_ij n_ij^2 / a_i,
    # and symmetrically with b_j.
    nij = t.nij.astype(np.float64)
    sq = nij * nij
    e12 = t.n - np.sum(sq / t.a[t.row])
    e21 = t.n - np.sum(sq / t.b[t.col])
    return max(float(min(e12, e21)) / t.n, 0.0)


def global_consistency_error(seg, truth) -> float:
    """Global consistency error (GCE) of Martin et al. [3]_.

    With the local refinement error
    ``LRE(S1, S2, p) = |R(S1, p) \\ R(S2, p)| / |R(S1, p)|``, where
    ``R(S, p)`` is the region of ``S`` containing pixel ``p``,
    ``GCE = (1/n) min(sum_p LRE(S1, S2, p), sum_p LRE(S2, S1, p))``.
    Both sums are computed in closed form from the contingency table.

    Parameters
    ----------
    seg, truth : array_like of int
        Label images of the same shape.

    Returns
    -------
    float
        GCE in ``[0, 1)``; 0 when one partition refines the other (in
        particular when they are equal). Lower is better.

    Raises
    ------
    ValueError
        If the shapes differ or the images are empty.
    TypeError
        If either image is not of integer (or bool) dtype.
    """
    seg, truth = _check_pair(seg, truth)
    return _gce_from_table(_contingency(seg, truth))


# ---------------------------------------------------------------------------
# Boundary F-measure
# ---------------------------------------------------------------------------


def boundary_map(labels) -> np.ndarray:
    """Boolean map of boundary pixels of a label image.

    A pixel is a boundary pixel when its label differs from that of the next
    pixel along any axis (in 2-D: its right or its lower neighbour). This
    gives a one-pixel-thin boundary on one side of every edge between regions.

    Notes
    -----
    This is implemented directly with numpy rather than with
    ``skimage.segmentation.find_boundaries(mode='inner')``: that mode marks
    pixels differing from *any* 4-neighbour (a two-pixel-thick boundary) and
    never marks pixels labelled 0, which it treats as background, so it is
    not invariant under renaming labels.

    Parameters
    ----------
    labels : array_like of int
        Label image of any dimension >= 1.

    Returns
    -------
    ndarray of bool
        Same shape as ``labels``.
    """
    labels = _as_labels(labels, "labels")
    out = np.zeros(labels.shape, dtype=bool)
    for axis in range(labels.ndim):
        n = labels.shape[axis]
        here = [slice(None)] * labels.ndim
        nxt = [slice(None)] * labels.ndim
        here[axis] = slice(0, n - 1)
        nxt[axis] = slice(1, n)
        out[tuple(here)] |= labels[tuple(here)] != labels[tuple(nxt)]
    return out


def boundary_precision_recall(seg, truth, tolerance: float = 2) -> tuple[float, float, float]:
    """Boundary precision, recall and F-measure with a distance tolerance.

    Boundaries are computed with :func:`boundary_map` (pixels whose label
    differs from the right or lower neighbour). A boundary pixel of one image
    is matched when it lies within Euclidean distance ``tolerance``
    (inclusive) of some boundary pixel of the other image, as measured by
    ``scipy.ndimage.distance_transform_edt``. Matching is many-to-one (no
    bipartite assignment).

    Parameters
    ----------
    seg, truth : array_like of int
        Label images of the same shape.
    tolerance : float, default 2
        Maximum distance in pixels for a match; must be >= 0.

    Returns
    -------
    precision : float
        Fraction of ``seg`` boundary pixels matched to a ``truth`` boundary.
    recall : float
        Fraction of ``truth`` boundary pixels matched to a ``seg`` boundary.
    f : float
        ``2 P R / (P + R)``, or 0 when ``P + R == 0``.

    Notes
    -----
    Edge cases: if neither image has a boundary the result is
    ``(1.0, 1.0, 1.0)``. If only ``truth`` has boundaries, precision is
    vacuously 1.0 and recall 0.0; if only ``seg`` has, precision is 0.0 and
    recall vacuously 1.0. Either way F is 0.0.

    Raises
    ------
    ValueError
        If the shapes differ, the images are empty or ``tolerance < 0``.
    TypeError
        If either image is not of integer (or bool) dtype.
    """
    seg, truth = _check_pair(seg, truth)
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    bs = boundary_map(seg)
    bt = boundary_map(truth)
    has_s, has_t = bool(bs.any()), bool(bt.any())
    if not has_s and not has_t:
        return 1.0, 1.0, 1.0
    if not has_s:
        return 1.0, 0.0, 0.0
    if not has_t:
        return 0.0, 1.0, 0.0
    # distance from every pixel to the nearest boundary pixel of the other image
    dist_to_t = ndimage.distance_transform_edt(~bt)
    dist_to_s = ndimage.distance_transform_edt(~bs)
    precision = float(np.mean(dist_to_t[bs] <= tolerance))
    recall = float(np.mean(dist_to_s[bt] <= tolerance))
    denom = precision + recall
    f = 2.0 * precision * recall / denom if denom > 0 else 0.0
    return precision, recall, f


def boundary_f_measure(seg, truth, tolerance: float = 2) -> float:
    """Boundary F-measure of a segmentation against a ground truth.

    See :func:`boundary_precision_recall` for the definition, the boundary
    convention and the edge cases (both without boundaries -> 1.0, exactly
    one without -> 0.0).

    Parameters
    ----------
    seg, truth : array_like of int
        Label images of the same shape.
    tolerance : float, default 2
        Maximum Euclidean distance in pixels for a boundary match.

    Returns
    -------
    float
        F-measure in ``[0, 1]``; higher is better.

    Raises
    ------
    ValueError
        If the shapes differ, the images are empty or ``tolerance < 0``.
    TypeError
        If either image is not of integer (or bool) dtype.
    """
    return boundary_precision_recall(seg, truth, tolerance)[2]


# ---------------------------------------------------------------------------
# All at once
# ---------------------------------------------------------------------------


def segmentation_scores(seg, truth, tolerance: float = 2) -> dict:
    """All metrics of a segmentation against one ground truth.

    The contingency table is built once and shared by the region metrics.

    Parameters
    ----------
    seg, truth : array_like of int
        Label images of the same shape.
    tolerance : float, default 2
        Boundary-matching tolerance for ``'bf'``.

    Returns
    -------
    dict
        ``{'pri': float, 'voi': float, 'gce': float, 'bf': float}``: the
        (probabilistic, here single-truth) Rand index, variation of
        information, global consistency error and boundary F-measure.

    Raises
    ------
    ValueError
        If the shapes differ or the images are empty.
    TypeError
        If either image is not of integer (or bool) dtype.
    """
    seg, truth = _check_pair(seg, truth)
    t = _contingency(seg, truth)
    return {
        "pri": _rand_from_table(t),
        "voi": _voi_from_table(t),
        "gce": _gce_from_table(t),
        "bf": boundary_f_measure(seg, truth, tolerance),
    }


# ---------------------------------------------------------------------------
# Scores against several annotators (the BSDS benchmark)
# ---------------------------------------------------------------------------


def _checked_truths(seg, truths) -> tuple:
    seg = _as_labels(seg, "seg")
    truths = [_as_labels(t, "truth") for t in _truth_list(seg, truths)]
    for t in truths:
        if t.shape != seg.shape:
            raise ValueError(f"seg and truth must have the same shape, got {seg.shape} and {t.shape}")
    return seg, truths


def mean_variation_of_information(seg, truths) -> float:
    """Variation of information of ``seg`` averaged over several ground truths.

    Parameters
    ----------
    seg : array_like of int
        Segmentation label image.
    truths : array_like of int, or sequence of array_like of int
        Ground truths, as for :func:`probabilistic_rand_index`.

    Returns
    -------
    float
        Mean of :func:`variation_of_information` over the ground truths (nats).

    Examples
    --------
    >>> seg = np.array([[0, 0, 1, 1]])
    >>> round(mean_variation_of_information(seg, [seg, np.zeros_like(seg)]), 4)  # (0 + log 2) / 2
    0.3466
    """
    seg, truths = _checked_truths(seg, truths)
    return float(np.mean([_voi_from_table(_contingency(seg, t)) for t in truths]))


def _covering_sums(seg: np.ndarray, truth: np.ndarray) -> float:
    """Σ over regions R of ``truth`` of |R| · max over regions R' of ``seg``
    of |R ∩ R'| / |R ∪ R'| (the numerator of the covering of ``truth``)."""
    t = _contingency(truth, seg)  # rows: truth regions, columns: seg regions
    iou = t.nij / (t.a[t.row] + t.b[t.col] - t.nij)
    best = np.zeros(t.a.size)
    np.maximum.at(best, t.row, iou)
    return float(np.sum(t.a * best))


def segmentation_covering(seg, truths, *, reduce="mean") -> float:
    """Covering of the ground truths by a segmentation (Arbelaez et al. [4]_).

    The covering of a ground truth S by the segmentation S' is
    ``C(S' -> S) = (1/N) Σ_{R in S} |R| max_{R' in S'} O(R, R')`` with
    ``O`` the intersection over union of two regions and N the pixel count
    (section 3.2 of [4]_), computed from the contingency table.

    Parameters
    ----------
    seg : array_like of int
        Segmentation label image.
    truths : array_like of int, or sequence of array_like of int
        Ground truths, as for :func:`probabilistic_rand_index`.
    reduce : {"mean", "best"}
        ``"mean"`` pools the annotators as the BSDS benchmark does (the sum
        of every annotator's numerator over the sum of their pixel counts,
        i.e. the mean over annotators); ``"best"`` is the best annotator's.

    Returns
    -------
    float
        Covering in ``(0, 1]``; 1 when ``seg`` equals every ground truth.

    Examples
    --------
    >>> seg = np.array([[0, 0, 1, 1]])
    >>> segmentation_covering(seg, [np.array([[0, 0, 0, 1]])])  # (3 * 2/3 + 1 * 1/2) / 4
    0.625
    """
    if reduce not in ("mean", "best"):
        raise ValueError(f"reduce must be 'mean' or 'best', got {reduce!r}")
    seg, truths = _checked_truths(seg, truths)
    covers = [_covering_sums(seg, t) / seg.size for t in truths]
    return float(np.mean(covers) if reduce == "mean" else np.max(covers))


#: Boundary tolerance of the BSDS benchmark, as a fraction of the image diagonal.
BSDS_MAX_DIST = 0.0075


def _matched(points_a: np.ndarray, points_b: np.ndarray, radius: float) -> np.ndarray:
    """For each point of ``a``, whether a maximum one-to-one matching of the
    points of ``a`` to those of ``b`` within ``radius`` (inclusive) matches
    it. The matching's size is the number of matched points on either side.

    The matching is networkx's Hopcroft-Karp: scipy's
    ``maximum_bipartite_matching`` took from 0.004 s to 8.8 s on the same
    BSDS boundary graphs depending on the order of the pixels; networkx
    took 0.08-0.16 s on each.
    """
    import networkx as nx

    if points_a.size == 0 or points_b.size == 0:
        return np.zeros(len(points_a), dtype=bool)
    pairs = cKDTree(points_a).sparse_distance_matrix(cKDTree(points_b), radius, output_type="ndarray")
    n_a = len(points_a)
    graph = nx.Graph()
    graph.add_nodes_from(range(n_a + len(points_b)))
    graph.add_edges_from(zip(pairs["i"].tolist(), (pairs["j"] + n_a).tolist()))
    matching = nx.bipartite.hopcroft_karp_matching(graph, top_nodes=range(n_a))
    matched = np.zeros(n_a, dtype=bool)
    matched[[v for v in matching if v < n_a]] = True
    return matched


def boundary_scores(seg, truths, *, max_dist=BSDS_MAX_DIST) -> dict:
    """Boundary precision, recall and F against several annotators, as in BSDS.

    Boundaries are :func:`boundary_map`'s. A boundary pixel of ``seg`` and
    one of a ground truth may match when they lie within
    ``max_dist * diagonal`` pixels (inclusive); each pixel matches at most
    one pixel of the other image, and the number of matches is a maximum
    bipartite matching (Hopcroft-Karp, ``scipy.sparse.csgraph``) — the
    BSDS code's minimum-cost assignment matches the same number, its
    outlier cost dominating. With several annotators, as the BSDS benchmark
    pools them, a ``seg`` pixel is matched if it matches in any annotator's
    matching (precision), and recall sums the annotators' matched and total
    boundary pixels.

    Parameters
    ----------
    seg : array_like of int
        Segmentation label image.
    truths : array_like of int, or sequence of array_like of int
        Ground truths, as for :func:`probabilistic_rand_index`.
    max_dist : float
        Tolerance as a fraction of the image diagonal (BSDS: 0.0075).

    Returns
    -------
    dict
        ``bp``, ``br``, ``bf`` (precision, recall, F) and the counts
        ``match_p``, ``total_p`` (matched and all boundary pixels of
        ``seg``), ``match_r``, ``total_r`` (summed over annotators), from
        which a data set's boundary F is computed. Without boundaries on
        either side precision (recall) is vacuously 1, as in
        :func:`boundary_precision_recall`; F is 0 unless both are positive.

    Examples
    --------
    >>> seg = np.zeros((20, 20), int); seg[:, 10:] = 1
    >>> truth = np.zeros((20, 20), int); truth[:, 11:] = 1  # one pixel off
    >>> boundary_scores(seg, [truth])["bf"]  # tolerance 0.0075 * 28.3 = 0.2 px
    0.0
    >>> boundary_scores(seg, [truth], max_dist=0.05)["bf"]  # 1.4 px
    1.0
    """
    seg, truths = _checked_truths(seg, truths)
    if not max_dist >= 0:
        raise ValueError(f"max_dist must be >= 0, got {max_dist}")
    radius = max_dist * float(np.hypot(*seg.shape[:2])) if seg.ndim >= 2 else max_dist * seg.size
    points_s = np.argwhere(boundary_map(seg)).astype(np.float64)
    matched_s = np.zeros(len(points_s), dtype=bool)
    match_r = total_r = 0
    for truth in truths:
        points_t = np.argwhere(boundary_map(truth)).astype(np.float64)
        matched = _matched(points_s, points_t, radius)
        matched_s |= matched
        match_r += int(matched.sum())  # the matching's size: its matched truth pixels too
        total_r += len(points_t)
    match_p, total_p = int(matched_s.sum()), len(points_s)
    bp = match_p / total_p if total_p else 1.0
    br = match_r / total_r if total_r else 1.0
    if total_p == 0 and total_r == 0:
        bf = 1.0
    else:
        bf = 2 * bp * br / (bp + br) if (bp + br) > 0 and total_p and total_r else 0.0
    return {"bp": bp, "br": br, "bf": bf, "match_p": match_p, "total_p": total_p,
            "match_r": match_r, "total_r": total_r}


def benchmark_scores(seg, truths, *, max_dist=BSDS_MAX_DIST) -> dict:
    """Every BSDS score of a segmentation against several annotators.

    Parameters
    ----------
    seg : array_like of int
        Segmentation label image.
    truths : array_like of int, or sequence of array_like of int
        The annotators' label images (a list, or one image).
    max_dist : float
        Boundary tolerance as a fraction of the image diagonal.

    Returns
    -------
    dict
        ``pri`` (:func:`probabilistic_rand_index`), ``voi`` (mean over
        annotators), ``covering`` (pooled as BSDS) and ``covering_best``
        (:func:`segmentation_covering`), ``bp``, ``br``, ``bf`` and the
        boundary counts of :func:`boundary_scores`, and ``n_segments``.

    Raises
    ------
    ValueError
        If a ground truth's shape differs from ``seg``'s, or there is none.

    Examples
    --------
    >>> seg = np.zeros((20, 20), int); seg[:, 10:] = 1
    >>> s = benchmark_scores(seg, [seg, seg.T])
    >>> round(s["pri"], 3), s["n_segments"]
    (0.749, 2)
    """
    seg, truths = _checked_truths(seg, truths)
    tables = [_contingency(seg, t) for t in truths]
    covers = np.array([_covering_sums(seg, t) for t in truths]) / seg.size
    return {"pri": float(np.mean([_rand_from_table(t) for t in tables])),
            "voi": float(np.mean([_voi_from_table(t) for t in tables])),
            "covering": float(np.mean(covers)), "covering_best": float(np.max(covers)),
            **boundary_scores(seg, truths, max_dist=max_dist),
            "n_segments": int(np.unique(seg).size)}
