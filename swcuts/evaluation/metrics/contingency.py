"""Checked label images and their contingency table, shared by the metrics.

The contingency table of two label images is ``n[i, j] = #{p : seg[p] == i,
truth[p] == j}``. It is scikit-image's
:func:`skimage.metrics.contingency_table`, built on the images relabelled
to ``0 .. k - 1`` by ``np.unique`` (skimage indexes the table by the label
values themselves, so negative labels would fail and large ones would give
a table of that many rows). That is O(n log n) for ``n`` pixels; the
region-based metrics are exact functions of the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from skimage.metrics import contingency_table

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
    seg and truth, exact int64); ``n`` is the number of pixels. ``table``
    is skimage's sparse table (float64 counts, CSR) and ``si``, ``ti`` the
    relabelled images it was built from, for the skimage metrics that take
    a table.
    """

    row: np.ndarray
    col: np.ndarray
    nij: np.ndarray
    a: np.ndarray
    b: np.ndarray
    n: int
    table: object
    si: np.ndarray
    ti: np.ndarray


def _relabel(image: np.ndarray) -> np.ndarray:
    """``image`` flattened, its labels renamed ``0 .. k - 1`` in sorted order."""
    return np.unique(image.ravel(), return_inverse=True)[1].ravel()


def _table(si: np.ndarray, ti: np.ndarray) -> _Contingency:
    """Contingency table of two relabelled images (see :func:`_relabel`)."""
    table = contingency_table(si, ti)  # rows: si, columns: ti; no label ignored
    cells = table.tocoo()
    # counts are float64 in skimage: exact integers below 2**53 pixels
    nij = cells.data.astype(np.int64)
    a = np.bincount(si).astype(np.int64)
    b = np.bincount(ti).astype(np.int64)
    return _Contingency(cells.row, cells.col, nij, a, b, si.size, table, si, ti)


def _contingency(seg: np.ndarray, truth: np.ndarray) -> _Contingency:
    return _table(_relabel(seg), _relabel(truth))


def _contingencies(seg: np.ndarray, truths: list) -> list:
    """The tables of ``seg`` against each ground truth, ``seg`` relabelled once."""
    si = _relabel(seg)
    return [_table(si, _relabel(t)) for t in truths]


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
