"""The Potts model with a fixed number of labels (eq. 1), for validation.

    π(X) ∝ exp( β Σ_<i,j> 1(x_i = x_j) + Σ_v h_v(x_v) )

The optional external field ``h`` (shape N x L) makes it a posterior; with
h = 0 the original Swendsen-Wang algorithm samples it exactly. Unlike the
image model, labels here are values (0..L-1), not names.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.models.partition import Partition
from swcuts.models.base import ModelState

__all__ = ["PottsModel"]


@njit(cache=True)
def _potts_delta(labels, R, new_label, indptr, indices, beta, field, in_r):
    for v in R:
        in_r[v] = 1
    d = 0.0
    for v in R:
        old = labels[v]
        d += field[v, new_label] - field[v, old]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if in_r[u]:
                if u > v:  # inside R: both ends become new_label
                    d += beta * (1.0 - (1.0 if labels[u] == old else 0.0))
            else:
                d += beta * ((1.0 if labels[u] == new_label else 0.0) - (1.0 if labels[u] == old else 0.0))
    for v in R:
        in_r[v] = 0
    return d


class PottsModel:
    """Potts model on a graph with ``n_labels`` labels and coupling ``beta``.

    Parameters
    ----------
    graph : RegionGraph
    n_labels : int
    beta : float
    field : (N, n_labels) array, optional
        External field h_v(k) added to log π.
    """

    fixed_labels = True

    def __init__(self, graph, n_labels, beta, field=None):
        if n_labels < 1:
            raise ValueError("n_labels must be at least 1")
        self.graph = graph
        self.n_labels = int(n_labels)
        self.beta = float(beta)
        n = graph.n_vertices
        self.field = np.zeros((n, self.n_labels)) if field is None else np.asarray(field, np.float64)
        if self.field.shape != (n, self.n_labels):
            raise ValueError("field must have shape (N, n_labels)")

    @property
    def n_vertices(self) -> int:
        return self.graph.n_vertices

    def new_state(self, labels) -> ModelState:
        part = Partition(labels, n_slots=max(self.n_labels, len(labels)))
        if part.labels.max() >= self.n_labels:
            raise ValueError(f"Potts labels must lie in 0..{self.n_labels - 1}")
        return ModelState(part, None, None, self.log_target(part.labels))

    def log_target(self, labels) -> float:
        labels = np.asarray(labels)
        e = self.graph.edges
        same = np.count_nonzero(labels[e[:, 0]] == labels[e[:, 1]])
        return float(self.beta * same + self.field[np.arange(labels.size), labels].sum())

    def energy_and_magnetisation(self, labels):
        """(number of unequal edges, fraction of vertices with label 0)."""
        labels = np.asarray(labels)
        e = self.graph.edges
        return (int(np.count_nonzero(labels[e[:, 0]] != labels[e[:, 1]])),
                float(np.mean(labels == 0)))

    def delta(self, state, R, new_label) -> float:
        R = np.asarray(R, dtype=np.int64)
        g = self.graph
        return _potts_delta(state.partition.labels, R, int(new_label), g.indptr, g.indices,
                            self.beta, self.field, state.work.mark_c)

    def apply(self, state, R, new_label, delta) -> None:
        state.partition.relabel(np.asarray(R, dtype=np.int64), int(new_label))
        state.log_pi += delta
