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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix

__all__ = [
    "probabilistic_rand_index",
    "rand_index",
    "variation_of_information",
    "global_consistency_error",
    "boundary_map",
    "boundary_precision_recall",
    "boundary_f_measure",
    "segmentation_scores",
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
