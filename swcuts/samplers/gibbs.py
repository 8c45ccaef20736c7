"""Single-site Gibbs sampler over partitions (the baseline of Figs. 8-10).

A vertex v is drawn uniformly and relabelled from π(X_v = k | rest)^(1/T)
over every existing label and one fresh label.
"""

from __future__ import annotations

import numpy as np

from . import compiled as _c
from .common import StepInfo, TargetProposal
from .swc import CompiledRunMixin
from .targets import gibbs_relabel

__all__ = ["Gibbs"]


class Gibbs(CompiledRunMixin):
    """Single-site Gibbs: one random vertex per step."""

    name = "gibbs"
    kind = _c.KIND_GIBBS

    def __init__(self, model, q=None, proposal=None, compiled=None):
        self.model = model
        self.graph = getattr(model, "graph", None)  # models without a graph work too
        n_edges = self.graph.n_edges if self.graph is not None else 0
        # The compiled path shares the SW-cut machinery; no edge is ever used.
        self.q = np.zeros(n_edges)
        self.log1mq = np.zeros(n_edges)
        self.proposal = TargetProposal()
        self._init_compiled(compiled)

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        if self.compiled:
            return self._compiled_step(state, temperature)
        R = np.array([int(rng.random() * self.model.n_vertices)], dtype=np.int64)
        return gibbs_relabel(self.model, state, R, rng, temperature)
