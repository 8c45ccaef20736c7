"""Single-site Gibbs sampler over partitions (the baseline of Figs. 8-10).

A vertex v is drawn uniformly and relabelled from π(X_v = k | rest)^(1/T)
over every existing label and one fresh label.
"""

from __future__ import annotations

import numpy as np

from .common import StepInfo
from .targets import gibbs_relabel

__all__ = ["Gibbs"]


class Gibbs:
    """Single-site Gibbs: one random vertex per step."""

    name = "gibbs"

    def __init__(self, model, q=None, proposal=None):
        self.model = model
        self.graph = model.graph
        self._R = np.empty(1, dtype=np.int64)

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        R = np.array([int(rng.random() * self.graph.n_vertices)], dtype=np.int64)
        return gibbs_relabel(self.model, state, R, rng, temperature)
