"""The mixture posterior over partitions of data items under a Dirichlet-
process or NGGP prior (:mod:`.priors`): the CRP prior
(:func:`crp_log_prior`), :class:`MixtureModel`, the model interface
(``new_state``, ``log_target``, ``delta``, ``apply``, ``delta_regroup``,
``update_auxiliary``)
that the samplers run on, and :class:`AuxiliaryCycle`, which adds the
prior's auxiliary-variable move to any kernel.
"""

from __future__ import annotations

import math

import numpy as np

from swcuts.io.errors import InputError, InputTypeError
from swcuts.models.partition import Partition
from swcuts.models.protocols import is_compiled
from swcuts.models.base import SCORE_MIXTURE, ModelState
from swcuts.models.mixture.likelihoods import LIKELIHOODS, _data_matrix
from swcuts.models.mixture.marginals import log_marginal
from swcuts.models.mixture.moves import (
    _gather, _prior_change, _store, gibbs_sweep, mixture_delta, regroup_delta)
from swcuts.models.mixture.priors import (
    DirichletProcess, make_prior, prior_log_factor, prior_size_change)


def crp_log_prior(sizes, alpha: float) -> float:
    """Log probability of a partition with the given cluster sizes under the
    Chinese restaurant process with concentration ``alpha``.

    Parameters
    ----------
    sizes : array_like of int
        Sizes n_k of the non-empty clusters (zeros are ignored).
    alpha : float
        Concentration α > 0.

    Returns
    -------
    float
        L log α + Σ_k lgamma(n_k) + lgamma(α) − lgamma(α + n).
    """
    return DirichletProcess(alpha).log_prior(sizes)


class MixtureModel:
    """Mixture posterior over partitions of data items, under a Dirichlet
    process or an NGGP prior.

    Parameters
    ----------
    data : array_like, shape (n, d)
        The items (rows). A 1-D array is n items with one feature (not for
        ``"lines"``, which needs exactly two columns x, y).
    likelihood : {"beta-bernoulli", "gaussian", "lines"} or ConjugateLikelihood
        The cluster likelihood, by name or as an instance (which may be
        unbound; the model binds a copy to the data).
    alpha : float
        Concentration α > 0 of the DP (the NGGP's total mass parameter).
    prior : {"dp", "nggp"} or PartitionPrior
        The partition prior (:mod:`.priors`). An instance carries its own
        α (``alpha`` is then ignored).
    **likelihood_kwargs
        Passed to the likelihood class when it is given by name, e.g.
        ``a``, ``b`` (Beta-Bernoulli), ``mu0``, ``kappa0``, ``nu0``,
        ``Psi0``, ``preset`` (Gaussian), ``sigma``, ``prior_mean``,
        ``prior_cov`` (lines), ``beta`` (multinomial). With
        ``prior="nggp"`` the keyword ``sigma`` is the NGGP discount
        σ ∈ [0, 1) instead (give a lines likelihood's noise through a
        :class:`LineMixture` instance then).

    Attributes
    ----------
    data : ndarray, float64 (n, d)
    likelihood : ConjugateLikelihood
        The bound likelihood.
    alpha : float
    prior : PartitionPrior
    vstats : ndarray (n, D)
        Per-item sufficient statistics.
    graph : None
        Mixture items have no graph; kernels use their graph-free paths.

    Notes
    -----
    The model interface is that of every swcuts model: :meth:`new_state`,
    :meth:`log_target` (slow, from scratch), :meth:`delta` (exact change of
    log π for a relabelling, O(|R| · D), state unchanged) and :meth:`apply`.
    A state caches per label slot the summed statistics (``state.stats``) and
    the log marginal likelihood (``state.loglik``, 0 for empty slots), and
    holds the prior's auxiliary variable ``state.u`` (None for the DP and
    for the NGGP with σ = 0) with the prior parameters ``state.prior`` that
    the compiled moves take. ``state.log_pi`` is log p(partition, X) for
    the DP and log p(partition, u, X) for the NGGP with σ > 0 (Lee & Choi's
    joint); the partitions' moves change it at fixed u and
    :meth:`update_auxiliary` moves u.

    Raises
    ------
    InputError
        Bad data, alpha or hyperparameters (one-line message).
    TypeError
        ``likelihood`` of the wrong type, or keyword arguments that the
        likelihood does not take.
    """

    graph = None

    def __init__(self, data, likelihood="beta-bernoulli", alpha=1.0, prior="dp",
                 **likelihood_kwargs):
        sigma = likelihood_kwargs.pop("sigma", None) if prior == "nggp" else None
        self.prior = make_prior(prior, alpha, sigma)
        if isinstance(likelihood, str):
            cls = LIKELIHOODS.get(likelihood)
            if cls is None:
                raise InputError(f"unknown mixture likelihood {likelihood!r}; choose from "
                                 f"{', '.join(LIKELIHOODS)}")
            try:
                lik = cls(**likelihood_kwargs)
            except InputTypeError:  # a hyperparameter of the wrong type: its own message
                raise
            except TypeError as exc:  # an unknown keyword
                raise TypeError(f"{likelihood} likelihood: {exc}".splitlines()[0]) from None
        elif (callable(getattr(likelihood, "stats", None))
              and callable(getattr(likelihood, "log_marginal", None))):
            if likelihood_kwargs:
                raise TypeError("likelihood keyword arguments apply only to a likelihood given by name")
            lik = likelihood
        else:
            raise TypeError(f"likelihood must be one of {', '.join(LIKELIHOODS)} or a "
                            f"ConjugateLikelihood, got {type(likelihood).__name__}")
        self.alpha = self.prior.alpha
        self.log_alpha = self.prior.log_alpha
        validate = getattr(lik, "validate", None)
        self.data = validate(data) if callable(validate) else _data_matrix(data)
        bind = getattr(lik, "bind", None)
        self.likelihood = bind(self.data) if callable(bind) else lik
        self.vstats = np.ascontiguousarray(self.likelihood.stats(self.data), dtype=np.float64)
        if self.vstats.ndim != 2 or self.vstats.shape[0] != self.data.shape[0]:
            raise TypeError("likelihood.stats must return one statistics row per item")
        kind = getattr(self.likelihood, "kind", None)
        self._kind = -1 if kind is None else int(kind)
        self._params = (np.zeros(1) if kind is None
                        else np.ascontiguousarray(self.likelihood.params, dtype=np.float64))
        #: Item evaluations so far: |R| per :meth:`delta` call, one per
        #: (item, label) predictive in the compiled sampler paths (for
        #: benchmarks: the work a move does).
        self.evaluations = 0

    # ------------------------------------------------------------ helpers
    @property
    def n_vertices(self) -> int:
        """Number of items n (the vertices of the partition)."""
        return self.data.shape[0]

    @property
    def n_stats(self) -> int:
        """Length of a statistics row."""
        return self.vstats.shape[1]

    def _lm(self, st) -> float:
        if self._kind < 0:
            return float(self.likelihood.log_marginal(st))
        return float(log_marginal(self._kind, st, self._params))

    def _labels(self, labels) -> np.ndarray:
        labels = np.asarray(labels)
        if labels.shape != (self.n_vertices,) or labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be {self.n_vertices} integers, got shape {labels.shape} "
                             f"dtype {labels.dtype}")
        return labels.astype(np.int64)

    def log_prior(self, labels, u=None) -> float:
        """Log prior of a labelling (labels are names only): log p(partition)
        with u integrated out when ``u`` is None, else log p(partition, u)
        (NGGP with σ > 0; the DP ignores ``u``)."""
        labels = self._labels(labels)
        return self.prior.log_prior(np.bincount(labels), u)

    def log_likelihood(self, labels) -> float:
        """Σ_k log m(x_{V_k}) of a labelling, from scratch."""
        labels = self._labels(labels)
        _, inv = np.unique(labels, return_inverse=True)
        lstats = np.zeros((inv.max() + 1, self.vstats.shape[1]))
        np.add.at(lstats, inv, self.vstats)
        return float(sum(self._lm(s) for s in lstats))

    @property
    def compiled_likelihood(self) -> bool:
        """Whether the likelihood has a compiled marginal, so that samplers
        can run their restricted scans and sweeps compiled
        (:meth:`kernel_arrays`)."""
        return self._kind >= 0

    def cluster_score(self):
        """The log potential s(A) = log κ(|A|) + log m(x_A) of an item set A
        taken as one cluster, for kernels that score sets before they are
        labels (tree-guided).

        log κ(n) is the prior's cluster factor at the prior's initial u (the
        DP: log α + lgamma(n)): a state-independent score, so that a
        proposal built from it stays exact while u moves
        (``docs/algorithms/mixture.md``).

        Returns
        -------
        params : float array
            With a compiled marginal (:attr:`compiled_likelihood`):
            ``[SCORE_MIXTURE, kind, prior (3), likelihood params...]``, read
            by the compiled score
            (:func:`swcuts.samplers.tree_guided.scores._score_any`);
            otherwise ``zeros(1)``.
        score : callable or None
            None when the score is compiled, else ``score(stats, n, params)``
            in plain Python.
        """
        prior = self.prior.params(self.prior.initial_u(self.n_vertices))
        if self._kind < 0:
            def score(st, n, params, _lm=self.likelihood.log_marginal):
                return float(prior_log_factor(prior, n, float(_lm(st))))

            return np.zeros(1), score
        return np.concatenate(([SCORE_MIXTURE, float(self._kind)], prior, self._params)), None

    def kernel_arrays(self, state) -> tuple:
        """The arrays compiled mixture samplers take, in their order.

        Returns
        -------
        tuple
            ``(labels, size, free_stack, n_free, lstats, lloglik, vstats,
            kind, params, prior)``: the partition's arrays, the state's
            per-label caches (all updated in place by the compiled moves),
            the model's constants and the state's prior parameters
            [c, σ, lgamma(1 − σ)] (:mod:`.priors`). Only for
            :attr:`compiled_likelihood`.
        """
        part = state.partition
        return (part.labels, part.size, part.free_stack, part.n_free, state.stats, state.loglik,
                self.vstats, self._kind, self._params, state.prior)

    def gibbs_sweep_items(self, state, items, u, temperature=1.0) -> float:
        """Single-site Gibbs updates of ``items`` in the given order, with
        one uniform of ``u`` per update (compiled likelihoods only; see
        :func:`swcuts.samplers.gibbs.random_scan`). Returns the Δ log π (also added to
        ``state.log_pi``)."""
        d, evals = gibbs_sweep(np.ascontiguousarray(items, dtype=np.int64),
                               np.ascontiguousarray(u, dtype=np.float64),
                               1.0 / float(temperature), *self.kernel_arrays(state))
        self.evaluations += int(evals)
        state.log_pi += d
        return float(d)

    # ---------------------------------------------------------- interface
    def log_target(self, labels, u=None) -> float:
        """log π of a labelling, computed from scratch (the slow path): the
        log posterior of the partition (u integrated out when ``u`` is None)
        or, for the NGGP with σ > 0 and a given ``u``, of (partition, u) —
        what ``state.log_pi`` tracks."""
        return self.log_prior(labels, u) + self.log_likelihood(labels)

    def new_state(self, labels, u=None) -> ModelState:
        """A chain state for ``labels`` (one label per item, values 0..n-1)
        and the prior's auxiliary variable ``u`` (default
        :meth:`PartitionPrior.initial_u`; ignored without one)."""
        labels = self._labels(labels)
        part = Partition(labels)
        n = part.n_vertices
        D = self.vstats.shape[1]
        lstats = np.zeros((n, D))
        np.add.at(lstats, part.labels, self.vstats)
        loglik = np.zeros(n)
        for lab in part.used_labels().tolist():
            loglik[lab] = self._lm(lstats[lab])
        if self.prior.has_auxiliary:
            u = self.prior.initial_u(n) if u is None else float(u)
            if not (math.isfinite(u) and u > 0.0):
                raise ValueError(f"the auxiliary variable u must be a finite number > 0, got {u!r}")
        else:
            u = None
        log_pi = self.prior.log_prior(part.size, u) + float(loglik.sum())
        scratch = (np.full(n, -1, np.int64), np.empty(n + 1, np.int64),
                   np.empty((n + 1, D)), np.empty(n + 1, np.int64))
        state = ModelState(part, lstats, loglik, log_pi, scratch)
        state.u = u
        state.prior = self.prior.params(u)
        return state

    def _check_move(self, R, new_label):
        R = np.ascontiguousarray(R, dtype=np.int64).reshape(-1)
        new_label = int(new_label)
        n = self.n_vertices
        if not 0 <= new_label < n:
            raise IndexError(f"new_label {new_label} outside the label slots 0..{n - 1}")
        return R, new_label

    def delta(self, state: ModelState, R, new_label: int) -> float:
        """Exact change of log π when the items ``R`` get ``new_label``.

        ``R`` may span several labels and contain items that already carry
        ``new_label`` (they stay); ``new_label`` is an existing label or an
        unused slot (a new cluster). The state is not modified. Cost
        O(|R| · D) plus one marginal per touched label.
        """
        R, new_label = self._check_move(R, new_label)
        self.evaluations += R.size
        part = state.partition
        slot_of, out_labels, out_stats, out_counts = state.scratch
        if self._kind >= 0:
            return mixture_delta(part.labels, part.size, R, new_label, self.vstats, state.stats,
                                 state.loglik, self._kind, self._params, state.prior,
                                 state.work.mark_c, slot_of, out_labels, out_stats, out_counts)
        k = _gather(part.labels, part.size, R, new_label, self.vstats, state.stats,
                    state.work.mark_c, slot_of, out_labels, out_stats, out_counts)
        if k == 1:
            return 0.0
        d = _prior_change(k, out_labels, out_counts, part.size, state.prior)
        for t in range(k):
            lab = int(out_labels[t])
            if out_counts[t] > 0:
                d += self._lm(out_stats[t])
            if part.size[lab] > 0:
                d -= state.loglik[lab]
        return float(d)

    def delta_regroup(self, state: ModelState, labels, stats, counts) -> float:
        """Exact change of log π when the items of the labels ``labels``
        (whole labels, distinct) are regrouped into ``len(counts)`` labels
        with summed statistics ``stats`` (one row each) and ``counts``
        items, as a merge or a split of labels does.

        The state is not modified. Cost O((len(labels) + len(counts)) · D),
        independent of the labels' sizes: the caller gives the statistics
        of the new labels (sums of label statistics for a merge, of tree
        nodes for a split), so no item is visited.
        """
        labels = np.ascontiguousarray(labels, dtype=np.int64).reshape(-1)
        stats = np.ascontiguousarray(stats, dtype=np.float64).reshape(-1, self.vstats.shape[1])
        counts = np.ascontiguousarray(counts, dtype=np.int64).reshape(-1)
        part = state.partition
        if self._kind >= 0:
            return float(regroup_delta(labels, part.size, state.loglik, stats, counts,
                                       self._kind, self._params, state.prior))
        d = 0.0
        for lab in labels.tolist():
            d += prior_size_change.py_func(state.prior, int(part.size[lab]), 0) - state.loglik[lab]
        for st, m in zip(stats, counts.tolist()):
            if m > 0:
                d += prior_size_change.py_func(state.prior, 0, m) + self._lm(st)
        return float(d)

    def apply(self, state: ModelState, R, new_label: int, delta: float) -> None:
        """Relabel ``R`` to ``new_label``, update the per-label caches, and
        add ``delta`` (what :meth:`delta` returned for this move) to log π."""
        R, new_label = self._check_move(R, new_label)
        part = state.partition
        slot_of, out_labels, out_stats, out_counts = state.scratch
        k = _gather(part.labels, part.size, R, new_label, self.vstats, state.stats,
                    state.work.mark_c, slot_of, out_labels, out_stats, out_counts)
        if k == 1:
            return
        if self._kind >= 0:
            _store(k, out_labels, out_stats, out_counts, state.stats, state.loglik,
                   self._kind, self._params)
        else:
            state.store_label_stats(k, out_labels, out_stats, out_counts, self._lm)
        part.relabel(R, new_label)
        state.log_pi += float(delta)

    def update_auxiliary(self, state, rng, temperature=1.0) -> float:
        """The exact move of the prior's auxiliary variable u given the
        partition (:meth:`NGGP.update_u`, a slice sampler on log u); refreshes
        ``state.prior`` and ``state.log_pi``. No random number is drawn when
        the prior has no auxiliary variable (the DP, the NGGP with σ = 0).

        Returns
        -------
        float
            The change of log π.
        """
        if not self.prior.has_auxiliary:
            return 0.0
        part = state.partition
        u, d = self.prior.update_u(state.u, part.n_vertices, part.n_labels, rng, temperature)
        state.u = u
        state.prior[:] = self.prior.params(u)
        state.log_pi += d
        return float(d)

    def __repr__(self):
        n, d = self.data.shape
        return f"MixtureModel(n={n}, d={d}, likelihood={self.likelihood!r}, prior={self.prior!r})"


class AuxiliaryCycle:
    """A kernel with the model's auxiliary-variable move after every
    ``every``-th of its steps.

    Each :meth:`step` is one step of ``kernel`` (a move of the partition at
    fixed u); every ``every``-th one is followed by
    :meth:`MixtureModel.update_auxiliary` (a move of u at a fixed partition).
    Both leave p(partition, u | X)^(1/T) invariant, so their deterministic
    cycle does. Other attributes are the kernel's.

    Parameters
    ----------
    kernel : object with ``model`` and ``step(state, rng, temperature)``
    every : int
        Kernel steps per u move.
    """

    def __init__(self, kernel, every=1):
        self.kernel = kernel
        self.model = kernel.model
        self.every = int(every)
        if self.every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        self._count = 0

    def step(self, state, rng, temperature=1.0):
        info = self.kernel.step(state, rng, temperature)
        self._count += 1
        if self._count == self.every:
            self._count = 0
            self.model.update_auxiliary(state, rng, temperature)
        return info

    @property
    def compiled(self) -> bool:
        """Whether :meth:`run` is available: the kernel has a compiled ``run``."""
        return is_compiled(self.kernel)

    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-math.inf):
        """The kernel's compiled ``run`` between the u moves: one kernel step
        per temperature, and after every ``every``-th step the u move (the
        same draws in the same order as :meth:`step`). Returns (accepted,
        best log π, best labels), ``best_labels`` updated in place."""
        if not self.compiled:
            raise AttributeError("run")
        temps = np.ascontiguousarray(temperatures, dtype=np.float64)
        if best_labels is None:
            best_labels = state.partition.labels.copy()
        acc = 0
        a = 0
        while a < temps.size:
            b = min(temps.size, a + self.every - self._count)
            got, best_log_pi, _ = self.kernel.run(state, rng, temps[a:b], best_labels, best_log_pi)
            acc += got
            self._count += b - a
            if self._count == self.every:
                self._count = 0
                self.model.update_auxiliary(state, rng, float(temps[b - 1]))
                if state.log_pi > best_log_pi + 1e-9:
                    best_log_pi = state.log_pi
                    best_labels[:] = state.partition.labels
            a = b
        return acc, best_log_pi, best_labels

    def step_all(self, states, rng, temperature=1.0) -> list:
        """The kernel's multi-chain iteration (e.g. ``Reconfiguration``),
        then one u move per chain."""
        infos = self.kernel.step_all(states, rng, temperature)
        for state in states:
            self.model.update_auxiliary(state, rng, temperature)
        return infos

    def __getattr__(self, name):
        kernel = self.__dict__.get("kernel")
        if kernel is None:
            raise AttributeError(name)
        return getattr(kernel, name)
