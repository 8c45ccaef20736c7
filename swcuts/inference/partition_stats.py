"""Label-invariant statistics of sampled partitions: the number of labels,
the largest label's share, co-assignment of item pairs and the boundary
probability of graph edges, over a (n_samples, n_items) array of
labellings. Re-exported by :mod:`swcuts.inference.diagnostics`."""

from __future__ import annotations

import numpy as np

__all__ = ["n_labels", "largest_label_fraction", "coassignment", "edge_boundary_probability"]


def _as_samples(samples, name: str = "samples") -> np.ndarray:
    """A 2-D integer array of label vectors, draws x n_items."""
    try:
        arr = np.asarray(samples)
    except Exception as exc:
        raise ValueError(f"{name} must be a 2-D integer array (draws x n_items) ({exc})") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D integer array (draws x n_items), got shape {arr.shape}"
        )
    if arr.dtype.kind not in "biu":
        raise ValueError(f"{name} must hold integer labels, got dtype {arr.dtype}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one draw and one item, got shape {arr.shape}")
    return arr


def _as_pairs(pairs, n_items: int, name: str) -> np.ndarray:
    """An (n_pairs, 2) int64 array of item indices in ``0..n_items-1``."""
    try:
        arr = np.asarray(pairs)
    except Exception as exc:
        raise ValueError(f"{name} must be an integer array of shape (n, 2) ({exc})") from None
    if arr.size == 0 and arr.ndim <= 2 and (arr.ndim < 2 or arr.shape[1] in (0, 2)):
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must be an integer array of shape (n, 2), got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer item indices, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= n_items:
        raise ValueError(
            f"{name} must hold item indices in 0..{n_items - 1}, "
            f"got values in {int(arr.min())}..{int(arr.max())}"
        )
    return arr.astype(np.int64, copy=False)


def _label_runs(samples: np.ndarray):
    """Sizes of the labels of every draw: (run lengths, labels per draw), in draw order."""
    d, n = samples.shape
    s = np.sort(samples, axis=1)
    starts = np.ones((d, n), dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    counts = starts.sum(axis=1)
    pos = np.flatnonzero(starts.ravel())
    sizes = np.diff(np.append(pos, d * n))
    return sizes, counts


def n_labels(samples) -> np.ndarray:
    """Number of distinct labels (parts of the partition) in each draw.

    Parameters
    ----------
    samples : array_like of int, shape (draws, n_items)
        One label vector per row; labels are arbitrary integer names.

    Returns
    -------
    k : ndarray of int64, shape (draws,)
        The number of distinct values in each row.

    Raises
    ------
    ValueError
        If ``samples`` is not a non-empty 2-D integer array.

    Examples
    --------
    >>> n_labels([[0, 0, 1], [7, 7, 7], [2, 5, 9]])
    array([2, 1, 3])
    """
    samples = _as_samples(samples)
    _, counts = _label_runs(samples)
    return counts.astype(np.int64)


def largest_label_fraction(samples) -> np.ndarray:
    """Fraction of items carrying the most frequent label, per draw.

    The parameter and the error are those of :func:`n_labels`.

    Returns
    -------
    frac : ndarray of float64, shape (draws,)
        ``max_l #{i : x_i = l} / n_items``, in ``[1/n_items, 1]``.

    Examples
    --------
    >>> largest_label_fraction([[0, 0, 0, 1], [3, 3, 5, 5]])
    array([0.75, 0.5 ])
    """
    samples = _as_samples(samples)
    sizes, counts = _label_runs(samples)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return np.maximum.reduceat(sizes, first) / samples.shape[1]


def coassignment(samples, pairs) -> np.ndarray:
    """Whether each given pair of items shares a label, per draw.

    Parameters
    ----------
    samples : array_like of int, shape (draws, n_items)
        As for :func:`n_labels`.
    pairs : array_like of int, shape (n_pairs, 2)
        Item index pairs ``(i, j)`` in ``0..n_items-1``. An empty list gives
        an empty result; ``i == j`` is allowed (always 1).

    Returns
    -------
    c : ndarray of uint8, shape (draws, n_pairs)
        ``c[t, p] = 1`` if ``x_t[i_p] == x_t[j_p]``, else 0. The column means
        estimate the posterior co-assignment probabilities.

    Raises
    ------
    ValueError
        As :func:`n_labels` for ``samples``, or if ``pairs`` is not an
        integer (n, 2) array of valid item indices.

    Examples
    --------
    >>> coassignment([[0, 0, 1], [4, 2, 2]], pairs=[(0, 1), (1, 2)])
    array([[1, 0],
           [0, 1]], dtype=uint8)
    """
    samples = _as_samples(samples)
    p = _as_pairs(pairs, samples.shape[1], "pairs")
    return (samples[:, p[:, 0]] == samples[:, p[:, 1]]).astype(np.uint8)


def edge_boundary_probability(samples, edges) -> np.ndarray:
    """Estimated probability that each edge lies on a partition boundary.

    Parameters
    ----------
    samples, edges
        As ``samples`` and ``pairs`` of :func:`coassignment` (the edges
        are e.g. ``RegionGraph.edges``), which also lists the errors raised.

    Returns
    -------
    p : ndarray of float64, shape (n_edges,)
        The fraction of draws with ``x_i != x_j``, i.e. the Monte Carlo
        estimate of ``P(x_i != x_j)``.

    Examples
    --------
    >>> edge_boundary_probability([[0, 0, 1], [4, 2, 2]], edges=[(0, 1), (1, 2)])
    array([0.5, 0.5])
    """
    samples = _as_samples(samples)
    e = _as_pairs(edges, samples.shape[1], "edges")
    return (samples[:, e[:, 0]] != samples[:, e[:, 1]]).mean(axis=0)
