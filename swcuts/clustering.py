"""Clustering API for mixture data: ``swcuts.cluster(data, ...)``.

The partition samplers that need no graph (single-site Gibbs, split-merge,
random split, triadic, reconfiguration, sRM, tree-guided) run on a Dirichlet-
process or NGGP mixture (:mod:`swcuts.models.mixture`) at temperature 1,
i.e. they sample the posterior; the result is the last state, the best state
seen and the trace. Under the NGGP with σ > 0 each kernel step is followed
by the exact move of the prior's auxiliary variable u
(:class:`~swcuts.models.mixture.AuxiliaryCycle`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swcuts.inference.anneal import Schedule, Trace, anneal
from swcuts.inference.budget import check_budget
from swcuts.io.errors import InputError, InputTypeError, check_number, describe
from swcuts.models.mixture.model import AuxiliaryCycle, MixtureModel
from swcuts.models.partition import canonical
from swcuts.samplers import KERNELS
from swcuts.samplers.registry import REGISTRY, find_spec
from swcuts.segmentation.costs import check_alpha, check_cluster_cost, check_sampler_options
from swcuts.segmentation.options import _check_positive_int, _check_real, _check_seed

__all__ = ["cluster", "Clustering", "MIXTURE_MODELS", "MIXTURE_SAMPLERS"]

#: Likelihood names accepted by ``cluster(model=...)``.
MIXTURE_MODELS = ("beta-bernoulli", "gaussian", "lines", "multinomial")
#: Samplers that need no graph, accepted by ``cluster(sampler=...)``.
MIXTURE_SAMPLERS = tuple(spec.name for spec in REGISTRY if not spec.needs_graph)


@dataclass
class Clustering:
    """Result of :func:`cluster`.

    Attributes
    ----------
    labels : (n,) int array
        Cluster of every item in the last state, 0..K-1.
    best_labels : (n,) int array
        The highest-posterior state seen.
    log_posterior : float
        log π (unnormalised) of ``best_labels``: log p(partition, X), with
        the NGGP's u integrated out numerically.
    trace : Trace
        Its energies are −log π of the chain's states: −log p(partition, u, X)
        under the NGGP with σ > 0 (Lee & Choi's joint).
    u : float or None
        The NGGP's auxiliary variable in the last state (None for the DP and
        for σ = 0).

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.clustering import cluster
    >>> x = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0], [1, 1, 0]])
    >>> res = cluster(x, model="beta-bernoulli", sampler="gibbs", seed=0, steps=100)
    >>> res.sampler, res.steps, res.labels.shape
    ('gibbs', 100, (4,))
    >>> res.log_posterior == res.model.log_target(res.best_labels)
    True
    """

    labels: np.ndarray
    best_labels: np.ndarray
    log_posterior: float
    trace: Trace
    sampler: str
    steps: int
    seconds: float
    accepted: int
    model: MixtureModel
    u: float = None

    @property
    def n_clusters(self) -> int:
        return int(self.labels.max()) + 1


def _make_kernel(sampler, mix, options):
    """The kernel, with a one-line error for an option it does not know."""
    import inspect

    cls = KERNELS[sampler]
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in options if k in ("model", "q") or (k not in params and not takes_any)]
    if unknown:
        known = [k for k, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        raise InputError(f"sampler '{sampler}' has no option {unknown[0]!r}; its options: "
                         f"{', '.join(known) or 'none'}")
    return cls(mix, **options)


#: Largest |value| in the data: sums of squares must stay finite in float64.
MAX_ABS_DATA = 1e100


def cluster(data, *, model="gaussian", sampler="split-merge", alpha=1.0, prior="dp", seed=None,
            steps=None, time_budget=None, init="one", temperature=1.0, sampler_options=None,
            **model_kwargs) -> Clustering:
    """Sample a Dirichlet-process or NGGP mixture posterior over partitions
    of ``data``.

    Parameters
    ----------
    data : (n, d) array
        Binary data for ``beta-bernoulli``, real data for ``gaussian``,
        2-D points (x, y) for ``lines``, non-negative integer counts (one
        row of category counts per item, e.g. a bag of words) for
        ``multinomial``.
    model : str or likelihood instance
        One of :data:`MIXTURE_MODELS`.
    sampler : str
        A sampler that needs no graph (:data:`MIXTURE_SAMPLERS`): ``gibbs``,
        ``split-merge``, ``random-split``, ``triadic``, ``reconfiguration``,
        ``srm``, ``tree-guided``.
    alpha : float
        Concentration of the DP (> 0); the NGGP's total mass parameter.
    prior : {"dp", "nggp"} or PartitionPrior
        The partition prior. With ``"nggp"`` the keyword ``sigma`` is its
        discount σ ∈ [0, 1) (default 0, the DP; a lines likelihood's noise
        is then given as ``model=LineMixture(sigma=...)``).
    seed : int or numpy.random.Generator, optional
    steps, time_budget :
        Budget in kernel steps (default 20 per item) or in seconds.
    init : {"one", "singletons", "random"}
        Start from one cluster, from n clusters, or from random labels.
    temperature : float
        Sample π^(1/T); 1 samples the posterior.
    sampler_options : dict, optional
        Keyword arguments of the sampler, e.g. ``{"beta": 0.3}`` for
        ``triadic``, ``{"t": 5, "M": 1, "R": 1}`` for ``split-merge``,
        ``{"n_chains": 4}`` for ``reconfiguration`` (at least 2 chains).
    **model_kwargs
        Hyperparameters of the likelihood (``sigma``: the NGGP's discount
        when ``prior="nggp"``).

    Returns
    -------
    Clustering

    Examples
    --------
    Two well-separated groups of 20 points in the plane:

    >>> import numpy as np
    >>> from swcuts.clustering import cluster
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(10, 1, (20, 2))])
    >>> res = cluster(x, model="gaussian", sampler="split-merge", seed=0, steps=200)
    >>> res.n_clusters, res.labels[:20].tolist() == [0] * 20, res.labels[20:].tolist() == [1] * 20
    (2, True, True)
    """
    if not isinstance(sampler, str):
        raise InputTypeError(f"sampler must be a string, got {describe(sampler)}")
    if sampler not in MIXTURE_SAMPLERS:
        if find_spec(sampler) is not None:
            raise InputError(f"sampler '{sampler}' needs an image graph; for mixture data use one "
                             f"of {', '.join(MIXTURE_SAMPLERS)}")
        raise InputError(f"unknown sampler '{sampler}'; choose one of {', '.join(MIXTURE_SAMPLERS)}")
    if sampler_options is None:
        sampler_options = {}
    if not isinstance(sampler_options, dict) or not all(isinstance(k, str) for k in sampler_options):
        raise TypeError(f"sampler_options must be a dict of keyword arguments, got {sampler_options!r}")

    _check_positive_int("steps", steps)  # the same checks as segment()
    _check_real("time_budget", time_budget, what="a positive, finite number of seconds", allow_none=True)
    if steps is not None and time_budget is not None:
        raise InputError("give either steps or time_budget, not both")
    check_number("temperature", temperature, minimum=0, exclusive=True, what="a positive temperature")
    if init not in ("one", "singletons", "random"):
        raise InputError(f"unknown init '{init}'; choose 'one', 'singletons' or 'random'")
    _check_seed(seed)
    check_alpha(alpha)
    check_budget(steps, time_budget)
    check_sampler_options(sampler, sampler_options)
    values = np.asarray(data) if not isinstance(data, np.ndarray) else data
    if values.ndim == 2:  # memory first: the checks below take copies
        check_cluster_cost(values.shape[0], values.shape[1], model=model, sampler=sampler,
                           sampler_options=sampler_options)
    if values.dtype.kind in "iuf" and values.size and np.isfinite(values).all() \
            and np.abs(values).max() > MAX_ABS_DATA:
        raise InputError(f"data values reach {np.abs(values).max():.3g}, too large for the models' "
                         f"statistics (at most {MAX_ABS_DATA:.0e}); rescale the data, e.g. standardise "
                         f"each column")
    mix = MixtureModel(data, model, alpha=alpha, prior=prior, **model_kwargs)
    n = mix.n_vertices
    rng = np.random.default_rng(seed)
    if init == "one":
        labels = np.zeros(n, dtype=np.int64)
    elif init == "singletons":
        labels = np.arange(n, dtype=np.int64)
    else:
        labels = rng.integers(0, max(2, int(np.sqrt(n))), size=n)
    state = mix.new_state(labels)
    kernel = _make_kernel(sampler, mix, sampler_options)
    if mix.prior.has_auxiliary:
        # One u move per kernel step (per sweep of n single-site updates).
        kernel = AuxiliaryCycle(kernel, every=n if sampler == "gibbs" else 1)
    if steps is None and time_budget is None:
        steps = 20 * n
    result = anneal(kernel, state, Schedule(float(temperature), float(temperature)), rng=rng,
                    steps=steps, time_budget=time_budget, keep_best=False)
    best = result.best_labels
    return Clustering(
        labels=np.asarray(canonical(state.partition.labels), dtype=np.int64),
        best_labels=np.asarray(canonical(best), dtype=np.int64),
        log_posterior=-result.best_energy,
        trace=result.trace,
        sampler=sampler,
        steps=result.steps,
        seconds=result.seconds,
        accepted=result.accepted,
        model=mix,
        u=getattr(state, "u", None),
    )
