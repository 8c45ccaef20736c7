"""Single-site Gibbs sampler over partitions (the baseline of Figs. 8-10).

A vertex v is drawn uniformly and relabelled from π(X_v = k | rest)^(1/T)
over every existing label and one fresh label.

On a mixture model with a built-in likelihood one step is one compiled
update (:func:`~swcuts.models.mixture.gibbs_sweep` with a single item):
the same conditional as the generic path, O(L · D) for L labels and
statistics of size D, whatever the number of items.
"""

from __future__ import annotations

import math

import numpy as np

from swcuts.models.mixture.moves import gibbs_run, gibbs_sweep
from swcuts.samplers import compiled as _c
from swcuts.samplers.common import StepInfo, TargetProposal
from swcuts.samplers.swc import CompiledRunMixin
from swcuts.samplers.targets import gibbs_relabel

__all__ = ["Gibbs", "random_scan"]


class Gibbs(CompiledRunMixin):
    """Single-site Gibbs: one random vertex per step.

    Parameters
    ----------
    model : partition model
    q : array, optional
        Edge probabilities, taken so that every kernel is built as
        ``kernel(model, q)``; single-site Gibbs does not use them.
    compiled : bool, optional
        None: the compiled path when the model offers one (the image model's
        compiled kernels, or the compiled single-item update of a mixture
        model with a built-in likelihood); False: the generic path through
        ``model.delta``/``model.apply``. Both draw two uniforms per step
        (the vertex, then the label) and sample the same conditional; the
        mixture path walks the labels in another order, so the same
        uniforms may give another label.
    """

    name = "gibbs"
    kind = _c.KIND_GIBBS

    def __init__(self, model, q=None, *, compiled=None):
        self.model = model
        self.graph = getattr(model, "graph", None)  # models without a graph work too
        n_edges = self.graph.n_edges if self.graph is not None else 0
        # The compiled path shares the SW-cut machinery; no edge is ever used.
        self.q = np.zeros(n_edges)
        self.log1mq = np.zeros(n_edges)
        self.proposal = TargetProposal()
        mixture = bool(getattr(model, "compiled_likelihood", False))
        self._mixture = mixture and compiled is not False
        self._init_compiled(None if (mixture and compiled) else compiled)
        if self._mixture:
            self.compiled = True  # run(): the updates in one compiled loop (gibbs_run)
        self._item = np.zeros(1, dtype=np.int64)
        self._u = np.zeros(1)

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        if self._mixture:
            return self._mixture_step(state, rng, temperature)
        if self.compiled:
            return self._compiled_step(state, temperature)
        R = np.array([int(rng.random() * self.model.n_vertices)], dtype=np.int64)
        return gibbs_relabel(self.model, state, R, rng, temperature)

    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-math.inf):
        """One step per temperature; returns (moved, best log π, best labels).

        On a mixture: the single-item updates of :meth:`step` in one
        compiled loop (:func:`~swcuts.models.mixture.gibbs_run`), drawing
        the same uniforms in the same order (item, then the update's
        uniform), so that it makes the same moves as the steps one by one.
        ``best_labels`` is updated in place by states better than
        ``best_log_pi``.
        """
        if not self._mixture:
            return super().run(state, rng, temperatures, best_labels, best_log_pi)
        temps = np.ascontiguousarray(temperatures, dtype=np.float64)
        if best_labels is None:
            best_labels = state.partition.labels.copy()
        if temps.size == 0:
            return 0, best_log_pi, best_labels
        model = self.model
        r = rng.random(2 * temps.size)
        items = (r[0::2] * model.n_vertices).astype(np.int64)
        log_pi, best, moved, evals = gibbs_run(items, np.ascontiguousarray(r[1::2]), 1.0 / temps,
                                               float(state.log_pi), float(best_log_pi), best_labels,
                                               *model.kernel_arrays(state))
        model.evaluations += int(evals)
        state.log_pi = log_pi
        return int(moved), best, best_labels

    def _mixture_step(self, state, rng, temperature) -> StepInfo:
        model = self.model
        v = int(rng.random() * model.n_vertices)
        self._item[0] = v
        self._u[0] = rng.random()
        labels = state.partition.labels
        old = labels[v]
        d, evals = gibbs_sweep(self._item, self._u, 1.0 / float(temperature),
                               *model.kernel_arrays(state))
        model.evaluations += int(evals)
        state.log_pi += d
        moved = int(labels[v] != old)
        return StepInfo(True, 0.0, moved, float(d))


def random_scan(model, state, rng, temperature=1.0, n_updates=None) -> float:
    """Random-scan single-site Gibbs on a mixture model: ``n_updates``
    (default n) updates at uniformly random items, compiled when the
    likelihood is (:meth:`~swcuts.models.mixture.model.MixtureModel.gibbs_sweep_items`).

    Each update draws the item's label from π(x_v = k | rest)^(1/T) over
    every label and a fresh one. Returns the Δ log π (also added to
    ``state.log_pi``).
    """
    n = model.n_vertices if n_updates is None else int(n_updates)
    items = rng.integers(0, model.n_vertices, size=n)
    u = rng.random(n)
    if not model.compiled_likelihood:
        before = state.log_pi
        for s in range(n):
            gibbs_relabel(model, state, items[s:s + 1], _FixedUniform(u[s]), temperature)
        return state.log_pi - before
    return model.gibbs_sweep_items(state, items, u, temperature)


class _FixedUniform:
    """A stand-in generator whose ``random()`` returns one given uniform."""

    def __init__(self, u):
        self.u = float(u)

    def random(self):
        return self.u
