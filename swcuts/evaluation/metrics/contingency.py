"""Checked label images and their contingency table, shared by the metrics.

The contingency table of two label images is ``n[i, j] = #{p : seg[p] == i,
truth[p] == j}``, built in one vectorised pass (``np.unique`` +
``scipy.sparse.coo_matrix``) in O(n log n) for ``n`` pixels; the
region-based metrics are exact functions of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix

__all__: list = []


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


def _checked_truths(seg, truths) -> tuple:
    seg = _as_labels(seg, "seg")
    truths = [_as_labels(t, "truth") for t in _truth_list(seg, truths)]
    for t in truths:
        if t.shape != seg.shape:
            raise ValueError(f"seg and truth must have the same shape, got {seg.shape} and {t.shape}")
    return seg, truths
