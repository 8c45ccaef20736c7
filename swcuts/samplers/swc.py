"""Swendsen-Wang cuts: SWC-1, SWC-2 (Wolff growth) and cluster Gibbs (SWC-3).

Barbu & Zhu, Theorem 4 (eq. 40): a component R of the on-edges is relabelled
ℓ -> ℓ' and accepted with

    α = min{1, Π_{C(R,V_ℓ')}(1-q) / Π_{C(R,V_ℓ)}(1-q)
              · q(ℓ | R, X') / q(ℓ' | R, X) · [π(X')/π(X)]^(1/T)}.

Cluster Gibbs (Prop. 7, eq. 49) instead draws the label of R from
γ_k π(X_R = k | rest)^(1/T), γ_k = Π_{C(R,V_k)}(1-q), and always accepts.
"""

from __future__ import annotations

import math

import numpy as np

from swcuts.samplers import compiled as _c
from swcuts.samplers.common import (
    CutScratch, StepInfo, TargetProposal, cuts_of, edge_arrays, grow_component,
    metropolis_hastings, sample_components)
from swcuts.samplers.targets import gibbs_relabel

__all__ = ["SWC1", "SWC2", "SWC", "ClusterGibbs"]


class CompiledRunMixin:
    """``run`` and the compiled ``step`` for models with a compiled path.

    ``compiled=None`` uses the compiled path when the model offers one
    (the image model does); ``compiled=False`` forces the generic path.
    """

    kind = None

    def _init_compiled(self, compiled):
        available = getattr(self.model, "compiled", False)
        self.compiled = available if compiled is None else bool(compiled)
        if self.compiled and not available:
            raise ValueError(f"{type(self.model).__name__} has no compiled kernels")

    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-np.inf):
        """Run one step per temperature; returns (accepted, best log π, best labels).

        ``best_labels`` is updated only by states better than ``best_log_pi``.
        """
        return _c.run_compiled(self.kind, self.model, state, self.q, self.log1mq,
                               self.proposal, temperatures, best_labels, best_log_pi,
                               getattr(self, "p_single", 0.0))

    def _compiled_step(self, state, temperature):
        before = state.log_pi
        acc, _, _ = self.run(state, None, np.array([temperature]))
        return StepInfo(bool(acc), 0.0, int(acc), state.log_pi - before)


class _SWCBase(CompiledRunMixin):
    """Shared parts: edge probabilities, scratch space, the MH flip of R."""

    def __init__(self, model, q, proposal=None, compiled=None):
        self.model = model
        self.graph = model.graph
        self.q, self.log1mq = edge_arrays(self.graph, q)
        self.proposal = proposal or TargetProposal()
        self.cut_scratch = CutScratch(self.graph.n_vertices)
        self._init_compiled(compiled)

    def _flip(self, state, R, rng, temperature, single=False):
        """Propose a new label for component R and accept or reject (eq. 40)."""
        labs, s_log, mean_q = cuts_of(state, R, self.graph, self.q, self.log1mq, self.cut_scratch)
        new_label, log_fwd, log_rev = self.proposal.propose(state, R, labs, mean_q, rng)
        ell = int(state.partition.labels[R[0]])
        if new_label == ell:
            return StepInfo(False, -math.inf, 0)
        cut_new = 0.0 if single else _cut_log(labs, s_log, new_label)
        cut_old = 0.0 if single else _cut_log(labs, s_log, ell)
        d = self.model.delta(state, R, new_label)
        log_alpha = cut_new - cut_old + log_rev - log_fwd + d / temperature
        if metropolis_hastings(log_alpha, rng):
            self.model.apply(state, R, new_label, d)
            return StepInfo(True, log_alpha, len(R), d)
        return StepInfo(False, log_alpha, len(R), d)


def _cut_log(labs, s_log, label):
    """Σ log(1 − q) over the cut to ``label`` (0 when R has no edge to it):
    the cut labels ``labs`` are distinct, so this is ``s_log[labs == label].sum()``.

    Examples
    --------
    >>> _cut_log(np.array([4, 2]), np.array([-0.5, -1.5]), 2), _cut_log(np.array([4]), np.array([-0.5]), 3)
    (-1.5, 0.0)
    """
    for t, lab in enumerate(labs.tolist()):
        if lab == label:
            return float(s_log[t])
    return 0.0


class SWC1(_SWCBase):
    """SWC-1: sample every edge, pick one connected component uniformly."""

    name = "swc1"
    kind = _c.KIND_SWC1

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        if self.compiled:
            return self._compiled_step(state, temperature)
        comp, n_comp = sample_components(state.partition.labels, self.graph.edges, self.q)
        R = np.flatnonzero(comp == int(rng.random() * n_comp))
        return self._flip(state, R, rng, temperature)


class SWC2(_SWCBase):
    """SWC-2: grow the component of a uniformly chosen vertex (Wolff).

    With ``p_single > 0``, each step is, with that probability, instead a
    single-vertex step: the same move with every q_ij = 0 in the clustering
    (R = {v}, no cut factor). A mixture of π-invariant kernels chosen
    independently of the state is π-invariant; the single-vertex moves
    refine boundaries that large clusters rarely touch.
    """

    name = "swc2"
    kind = _c.KIND_SWC2

    def __init__(self, model, q, proposal=None, compiled=None, p_single=0.0):
        super().__init__(model, q, proposal, compiled)
        if not 0.0 <= p_single <= 1.0:
            raise ValueError(f"p_single must lie in [0, 1], got {p_single}")
        self.p_single = float(p_single)

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        if self.compiled:
            return self._compiled_step(state, temperature)
        g = self.graph
        v = int(rng.random() * g.n_vertices)
        if rng.random() < self.p_single:
            R = np.array([v], dtype=np.int64)
            return self._flip(state, R, rng, temperature, single=True)
        R = grow_component(v, state.partition.labels, self.q, g.indptr, g.indices, g.edge_ids,
                           state.work.mark_a, state.work.stack)
        return self._flip(state, R, rng, temperature)


class SWC(SWC2):
    """The default SW-cut kernel (``sampler="swc"``): SWC-2 with half of the
    steps single-vertex steps (see :class:`SWC2`). Single-vertex steps cost
    ~1/30 of a cluster step and refine boundaries; in 1.5 s this mixture
    anneals the image posterior to within 0.2% of the best known energy on
    average, pure SWC-2 to 2.2% (five 481x321 photos: coffee, chelsea,
    camera, astronaut, rocket; 80% single steps did better at 0.5 s on
    rocket, worse at 1.5 s)."""

    name = "swc"
    DEFAULT_P_SINGLE = 0.5

    def __init__(self, model, q, proposal=None, compiled=None, p_single=DEFAULT_P_SINGLE):
        super().__init__(model, q, proposal, compiled, p_single)


class ClusterGibbs(_SWCBase):
    """Cluster Gibbs sampler (SWC-3, Prop. 7): grow R, then draw its label
    from γ_k π(X_R = k | rest)^(1/T) over every target; always accepted."""

    name = "cluster-gibbs"
    kind = _c.KIND_CLUSTER_GIBBS

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        if self.compiled:
            return self._compiled_step(state, temperature)
        g = self.graph
        v = int(rng.random() * g.n_vertices)
        R = grow_component(v, state.partition.labels, self.q, g.indptr, g.indices, g.edge_ids,
                           state.work.mark_a, state.work.stack)
        labs, s_log, _ = cuts_of(state, R, g, self.q, self.log1mq, self.cut_scratch)
        return gibbs_relabel(self.model, state, R, rng, temperature, labs, s_log)
