"""The sampler state: a partition of the graph's vertices into labels.

Labels are names only. They live in slots ``0..N-1`` (there can never be
more labels than vertices); unused slots sit on a free list so that a fresh
label is found in O(1).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Partition", "canonical"]


def canonical(labels) -> tuple:
    """Relabel by order of first occurrence; a hashable key of the partition."""
    labels = np.asarray(labels)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return tuple(rank[inverse].tolist())


class Partition:
    """Labels of the vertices, label sizes and a free list of unused labels.

    Parameters
    ----------
    labels : array of int, shape (N,)
        Initial label of every vertex, values in ``0..n_slots-1``.
    n_slots : int, optional
        Number of label slots; defaults to N, enough for any partition.
    """

    def __init__(self, labels, n_slots=None):
        labels = np.asarray(labels, dtype=np.int64).copy()
        n = labels.size if n_slots is None else int(n_slots)
        if labels.size == 0:
            raise ValueError("a partition needs at least one vertex")
        if labels.min() < 0 or labels.max() >= n:
            raise ValueError(f"labels must lie in 0..{n - 1}")
        self.labels = labels
        self.size = np.bincount(labels, minlength=n).astype(np.int64)
        self._rebuild_free()

    def _rebuild_free(self):
        self.free = list(np.flatnonzero(self.size == 0)[::-1].tolist())

    @property
    def n_vertices(self) -> int:
        return self.labels.size

    @property
    def n_labels(self) -> int:
        """Number of non-empty labels L."""
        return self.size.size - len(self.free)

    def used_labels(self) -> np.ndarray:
        """The non-empty labels, ascending."""
        return np.flatnonzero(self.size)

    def fresh_label(self) -> int:
        """An unused label (not removed from the free list until used)."""
        return self.free[-1]

    def relabel(self, vertices, new_label: int) -> None:
        """Give every vertex of ``vertices`` the label ``new_label``."""
        vertices = np.asarray(vertices, dtype=np.int64)
        old = self.labels[vertices]
        if self.size[new_label] == 0:
            self.free.remove(new_label)
        np.subtract.at(self.size, old, 1)
        self.size[new_label] += vertices.size
        self.labels[vertices] = new_label
        for lab in np.unique(old).tolist():
            if self.size[lab] == 0:
                self.free.append(lab)

    def members(self, label: int) -> np.ndarray:
        """Vertices with the given label."""
        return np.flatnonzero(self.labels == label)

    def compact_labels(self) -> np.ndarray:
        """Labels renumbered to ``0..L-1`` in order of first occurrence."""
        return np.asarray(canonical(self.labels), dtype=np.int64)

    def copy(self) -> "Partition":
        return Partition(self.labels, n_slots=self.size.size)
