"""Region-based metrics: Rand index, PRI, variation of information, global
consistency error and segmentation covering, each exact from the
contingency table (:mod:`.contingency`, scikit-image's).

The variation of information is scikit-image's
(:func:`skimage.metrics.variation_of_information`, in bits, converted to
nats). scikit-image has no Rand index, adjusted Rand index, PRI, GCE or
covering -- its :func:`skimage.metrics.adapted_rand_error` is the SNEMI3D
F-score of pair precision and recall, which by default ignores label 0 of
the ground truth -- so those are written here, in closed form over the
table's cells.

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
.. [5] L. Hubert, P. Arabie, "Comparing partitions", Journal of
   Classification 2(1), 1985.
"""

from __future__ import annotations

import math

import numpy as np
from skimage.metrics import variation_of_information as _skimage_voi

from swcuts.evaluation.metrics.contingency import (
    _as_labels, _check_pair, _checked_truths, _Contingency, _contingencies, _contingency,
    _truth_list)

__all__ = [
    "rand_index",
    "adjusted_rand_index",
    "probabilistic_rand_index",
    "variation_of_information",
    "global_consistency_error",
    "mean_variation_of_information",
    "segmentation_covering",
    "snap_to_atoms",
]


def _pairs(x) -> int:
    """s(x) = Σ C(x, 2): the unordered pairs inside groups of sizes ``x``
    (exact in int64 for fewer than ~3e9 pixels)."""
    return int(np.sum(x * (x - 1) // 2))


def _rand_from_table(t: _Contingency) -> float:
    # Over all C(n, 2) unordered pixel pairs, a pair agrees if it is together
    # in both images or apart in both. With s = _pairs:
    #   together in both            = s(nij)
    #   together in seg only        = s(a) - s(nij)
    #   together in truth only      = s(b) - s(nij)
    #   agreements = C(n,2) - (together in exactly one) = C(n,2) + 2 s(nij) - s(a) - s(b)
    total = t.n * (t.n - 1) // 2
    if total == 0:  # a single pixel: there are no pairs to disagree on
        return 1.0
    agree = total + 2 * _pairs(t.nij) - _pairs(t.a) - _pairs(t.b)
    return agree / total


def _adjusted_rand_from_table(t: _Contingency) -> float:
    # Hubert & Arabie: (index - expected) / (max - expected) with
    # index = s(nij), expected = s(a) s(b) / C(n, 2), max = (s(a) + s(b)) / 2.
    sa, sb = _pairs(t.a), _pairs(t.b)
    total = t.n * (t.n - 1) // 2
    expected = sa * sb / total if total else 0.0
    spread = 0.5 * (sa + sb) - expected
    if spread == 0:  # both images one region, or both all singletons: they agree
        return 1.0
    return float((_pairs(t.nij) - expected) / spread)


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

    Examples
    --------
    >>> seg = np.array([[0, 0, 1, 1]])
    >>> rand_index(seg, np.array([[5, 5, 7, 7]]))  # the same partition, other names
    1.0
    >>> rand_index(seg, np.array([[0, 0, 0, 1]]))  # 3 of the 6 pairs agree
    0.5
    """
    seg, truth = _check_pair(seg, truth)
    return _rand_from_table(_contingency(seg, truth))


def adjusted_rand_index(seg, truth) -> float:
    """Adjusted Rand index (ARI) of Hubert & Arabie [5]_.

    The Rand index corrected for chance: ``(s(n_ij) - E) / (M - E)`` over
    the contingency table, with ``s(x) = Σ C(x, 2)`` the pairs together in
    both images, ``E = s(a) s(b) / C(n, 2)`` its expectation under random
    labellings with the same region sizes, and ``M = (s(a) + s(b)) / 2``.
    Unlike :func:`rand_index`, two unrelated partitions score about 0 at
    any number of regions. It applies to any labelling of items (a 1-D
    array of cluster labels as well as a label image).

    The parameters and errors are :func:`rand_index`'s.

    Returns
    -------
    float
        ARI, at most 1 (equal partitions up to a renaming of labels), about
        0 for chance agreement, possibly negative. When both images are one
        region, or both all singletons, it is 1.

    Examples
    --------
    >>> adjusted_rand_index(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]))
    1.0
    >>> round(adjusted_rand_index(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])), 3)
    -0.5
    """
    seg, truth = _check_pair(seg, truth)
    return _adjusted_rand_from_table(_contingency(seg, truth))


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

    Examples
    --------
    >>> seg = np.array([[0, 0, 1, 1]])
    >>> probabilistic_rand_index(seg, [seg, np.array([[0, 0, 0, 1]])])  # (1 + 0.5) / 2
    0.75
    """
    seg = _as_labels(seg, "seg")
    return float(np.mean([rand_index(seg, t) for t in _truth_list(seg, truths)]))


def _voi_from_table(t: _Contingency) -> float:
    # skimage returns (H(truth | seg), H(seg | truth)) in bits; VoI is their
    # sum. It is exactly 0 for identical partitions (every p_ij / p_i is
    # exactly 1); clamping also turns skimage's -0.0 into 0.0. skimage
    # reads only the table here, but (0.26) checks the images' shapes first,
    # so they are passed too.
    bits = _skimage_voi(t.si, t.ti, table=t.table / t.n)
    voi = float(np.sum(bits)) * math.log(2.0)
    return voi if voi > 0.0 else 0.0


def variation_of_information(seg, truth) -> float:
    """Variation of information (VoI) between a segmentation and a ground truth.

    ``VoI(A, B) = H(A) + H(B) - 2 I(A; B) = H(A | B) + H(B | A)`` in nats
    (natural log), where the label of a uniformly drawn pixel is the random
    variable [2]_. It is a metric on partitions: symmetric, zero iff the
    partitions coincide, and bounded by ``log n``. This is the sum of the two
    conditional entropies of :func:`skimage.metrics.variation_of_information`
    (which returns them separately, in bits) times ``log 2``.

    The parameters and errors are :func:`rand_index`'s.

    Returns
    -------
    float
        VoI >= 0; lower is better.

    Examples
    --------
    >>> seg = np.array([[0, 0, 1, 1]])
    >>> variation_of_information(seg, seg + 3)  # the same partition
    0.0
    >>> round(variation_of_information(seg, np.zeros_like(seg)), 4)  # log 2
    0.6931
    """
    seg, truth = _check_pair(seg, truth)
    return _voi_from_table(_contingency(seg, truth))


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

    The parameters and errors are :func:`rand_index`'s.

    Returns
    -------
    float
        GCE in ``[0, 1)``; 0 when one partition refines the other (in
        particular when they are equal). Lower is better.

    Examples
    --------
    >>> seg = np.array([[0, 0, 1, 1]])
    >>> global_consistency_error(seg, np.array([[0, 1, 2, 3]]))  # a refinement
    0.0
    >>> global_consistency_error(seg, np.array([[0, 0, 0, 1]]))
    0.25
    """
    seg, truth = _check_pair(seg, truth)
    return _gce_from_table(_contingency(seg, truth))


def mean_variation_of_information(seg, truths) -> float:
    """Variation of information of ``seg`` averaged over several ground truths.

    The parameters and errors are :func:`probabilistic_rand_index`'s.

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
    return float(np.mean([_voi_from_table(t) for t in _contingencies(seg, truths)]))


def _covering_from_table(t: _Contingency) -> float:
    """Covering of the truth by the seg of table ``t``: (1/n) Σ over regions
    R of truth of |R| · max over regions R' of seg of |R ∩ R'| / |R ∪ R'|."""
    iou = t.nij / (t.a[t.row] + t.b[t.col] - t.nij)
    best = np.zeros(t.b.size)
    np.maximum.at(best, t.col, iou)  # per truth region (column), its best seg region
    return float(np.sum(t.b * best)) / t.n


def segmentation_covering(seg, truths, *, reduce="mean") -> float:
    """Covering of the ground truths by a segmentation (Arbelaez et al. [4]_).

    The covering of a ground truth S by the segmentation S' is
    ``C(S' -> S) = (1/N) Σ_{R in S} |R| max_{R' in S'} O(R, R')`` with
    ``O`` the intersection over union of two regions and N the pixel count
    (section 3.2 of [4]_), computed from the contingency table.

    Parameters
    ----------
    seg, truths
        As for :func:`probabilistic_rand_index`.
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
    covers = [_covering_from_table(t) for t in _contingencies(seg, truths)]
    return float(np.mean(covers) if reduce == "mean" else np.max(covers))


def snap_to_atoms(labels, atoms) -> np.ndarray:
    """``labels`` made constant on every atom: each atom takes the label
    that most of its pixels have (ties: the smallest label).

    The best a segmentation on ``atoms`` can do to reproduce ``labels``,
    e.g. an annotator's segmentation as the atom graph's samplers could
    reach it (hand-drawn boundaries a pixel or two off the image's edges
    land on the atoms' boundaries).

    Parameters
    ----------
    labels, atoms : (H, W) int array
        A segmentation and an over-segmentation of one image.

    Returns
    -------
    (H, W) int64 array
        The snapped labels (the names of ``labels``).

    Examples
    --------
    >>> atoms = np.array([[0, 0, 1, 1], [0, 0, 1, 1]])
    >>> labels = np.array([[5, 5, 5, 7], [5, 5, 7, 7]])
    >>> snap_to_atoms(labels, atoms)
    array([[5, 5, 7, 7],
           [5, 5, 7, 7]])
    """
    from swcuts.image.atoms import majority_labels

    seg, atoms = _check_pair(labels, atoms)
    per_atom = majority_labels(seg, atoms)
    return per_atom[np.unique(atoms, return_inverse=True)[1].reshape(seg.shape)].astype(np.int64)
