"""The original Swendsen-Wang algorithm on the Potts model (section 2.1).

Every edge between equal labels is turned on with ρ = 1 − e^(−β) (eq. 3);
every connected component draws a label uniformly from 1..L (eq. 6). The
acceptance probability is always 1 (Props. 5-6).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.samplers.common import StepInfo, sample_components

__all__ = ["SwendsenWang"]


@njit(cache=True)
def _flip_all(comp, n_comp, n_labels):
    new = np.empty(n_comp, np.int64)
    for c in range(n_comp):
        new[c] = np.random.randint(0, n_labels)
    return new[comp]


class SwendsenWang:
    """Original SW on a :class:`~swcuts.models.PottsModel` without field."""

    name = "sw"

    def __init__(self, model, q=None):
        if not getattr(model, "fixed_labels", False):
            raise ValueError("the original SW needs a Potts model with a fixed number of labels")
        if np.any(model.field != 0):
            raise ValueError("the original SW samples the Potts model without external field")
        self.model = model
        self.graph = model.graph
        self.q = np.full(self.graph.n_edges, 1.0 - np.exp(-model.beta))

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        if temperature != 1.0:
            q = np.full(self.graph.n_edges, 1.0 - np.exp(-self.model.beta / temperature))
        else:
            q = self.q
        comp, n_comp = sample_components(state.partition.labels, self.graph.edges, q)
        new = _flip_all(comp, n_comp, self.model.n_labels)
        part = state.partition
        part.labels[:] = new
        part.size[:] = np.bincount(new, minlength=part.size.size)
        part._rebuild_free()
        state.log_pi = self.model.log_target(new)
        return StepInfo(True, 0.0, self.graph.n_vertices)
