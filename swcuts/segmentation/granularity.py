"""Samples of a segmentation at an unknown granularity: an equal mixture of
the posteriors whose prior weights per label and per region are scaled.

People segment one photo at very different granularities (the BSDS500
annotators of one photo draw from a handful to a hundred segments), and the
image does not say which one a person will choose. The prior weights ``a0``
(per label) and ``a1`` (per region) of eq. 59 set the granularity of the
posterior, and at one value of them its samples at T = 1 keep one number of
segments: a boundary either belongs at that granularity (probability ~1)
or not (~0), whatever share of people would draw it.

:func:`sample_granularities` treats the granularity as unknown: a
hierarchical prior ``a0 = g·a0'``, ``a1 = g·a1'`` with ``g`` uniform on a
ladder ``G`` (:data:`GRANULARITY`, multipliers of the model's own weights),
whose samples follow

    π(X | I) = (1 / |G|) Σ_{g ∈ G} π_g(X | I),

each ``π_g`` normalised on its own. The weights of the mixture are the
hyperprior's, uniform: they are a choice, not inferred from the image (that
would need the normalising constant of the prior over partitions, which
eq. 59 does not give). Every ``π_g`` is sampled by its own chains, exactly as
:func:`~swcuts.segmentation.posterior.sample_model` samples one posterior, and
each gets the same number of samples, so the pooled samples are a stratified
sample of the mixture: averages over them (boundary probability,
co-assignment) estimate the mixture's expectations. ``tests/test_granularity.py``
checks the pooled co-assignment and pixel-boundary marginals against the
exact mixture by enumeration, and that they fail against the posterior at
``g = 1`` alone. R-hat compares chains of one posterior, so it is computed
per level (:attr:`~swcuts.inference.posterior_samples.PosteriorSamples.levels`).

Measured on BSDS500 validation photos (docs/algorithms/posterior.md, issue 35
round 6): the boundary map of the mixture over ``(1, 3, 10)`` scores a higher
ODS F and AP than the posterior at ``g = 1`` alone.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from swcuts.inference.budget import Budget
from swcuts.inference.posterior_samples import PosteriorSamples
from swcuts.io.errors import InputError, InputTypeError, check_number, describe

__all__ = ["GRANULARITY", "MAX_LEVELS", "check_granularity", "check_segment_samples", "sample_granularities"]

#: The default ladder of multipliers of a0 and a1 (equal steps in log g):
#: the posterior as built, and three and ten times coarser.
GRANULARITY = (1.0, 3.0, 10.0)
#: Most levels in a ladder (each runs its own chains).
MAX_LEVELS = 10


def check_granularity(granularity) -> tuple:
    """The ladder ``granularity`` as a tuple of floats, or a one-line error.

    None gives :data:`GRANULARITY`; one number a ladder of one level.

    Examples
    --------
    >>> check_granularity(None), check_granularity(1), check_granularity([1, 4])
    ((1.0, 3.0, 10.0), (1.0,), (1.0, 4.0))
    """
    if granularity is None:
        return GRANULARITY
    if isinstance(granularity, numbers.Real) and not isinstance(granularity, bool):
        granularity = (granularity,)
    if isinstance(granularity, (str, bytes)) or not hasattr(granularity, "__iter__"):
        raise InputTypeError(f"granularity must be a number or a sequence of numbers, not "
                             f"{describe(granularity)}")
    values = list(granularity)
    if not values or len(values) > MAX_LEVELS:
        raise InputError(f"granularity needs 1 to {MAX_LEVELS} multipliers, got {len(values)}")
    for g in values:
        if isinstance(g, bool) or not isinstance(g, numbers.Real):
            raise InputTypeError(f"granularity multipliers must be numbers, not {describe(g)}")
        if not (math.isfinite(g) and g > 0):
            raise InputError(f"granularity multipliers must be positive and finite, got {g}")
    if len(set(values)) != len(values):
        raise InputError(f"granularity multipliers must differ, got {values}")
    return tuple(float(g) for g in values)


def sample_granularities(model, q, *, granularity=None, n_samples=100, seed=None, time_budget=None,
                         sample=None, **options) -> PosteriorSamples:
    """Samples of the equal mixture of ``model``'s posteriors at the
    multipliers ``granularity`` of its prior weights a0 and a1.

    Parameters
    ----------
    model : ImageModel
        The posterior at multiplier 1 (anything with ``with_prior``, ``a0``
        and ``a1``).
    q : (n_edges,) float array
        The SW-cut edge probabilities (the same at every level).
    granularity : sequence of float, optional
        The multipliers (:func:`check_granularity`; default :data:`GRANULARITY`).
    n_samples : int
        Kept samples over all levels: each level keeps ``ceil(n_samples /
        levels)`` (and at least 4 per chain, as :func:`sample_model`).
    seed : int or numpy.random.Generator, optional
        One level: passed on as it is (the samples of
        :func:`~swcuts.segmentation.posterior.sample_model`); several: each
        level draws from its own child generator.
    time_budget : float or Budget, optional
        Shared evenly by the levels, each taking its share of what is left
        when it starts.
    sample : callable, optional
        The sampler of one posterior (default
        :func:`~swcuts.segmentation.posterior.sample_model`).
    **options
        Passed to ``sample`` (``atoms``, ``chains``, ``sampler``, ...).

    Returns
    -------
    PosteriorSamples
        Pooled (:meth:`~swcuts.inference.posterior_samples.PosteriorSamples.pooled`).

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> from swcuts.models.image import ImageModel
    >>> image = np.zeros((6, 6)); image[:, 3:] = 1.0
    >>> atoms = np.repeat(np.arange(3), 2)[None, :].repeat(6, axis=0)
    >>> atoms = atoms + 3 * (np.arange(6)[:, None] >= 3)
    >>> model = ImageModel(image, atoms, RegionGraph.from_labels(atoms), a0=1.0, a1=1.0)
    >>> q = np.full(model.graph.n_edges, 0.5)
    >>> ps = sample_granularities(model, q, atoms=atoms, n_samples=16, chains=2, seed=0,
    ...                           anneal_steps=20, pilot_steps=100)
    >>> ps.granularity, ps.n_samples, [level["a0"] for level in ps.levels]
    ((1.0, 3.0, 10.0), 24, [1.0, 3.0, 10.0])
    """
    if sample is None:
        from swcuts.segmentation.posterior import sample_model as sample
    granularity = check_granularity(granularity)
    levels = len(granularity)
    if levels == 1:
        g = granularity[0]
        one = model if g == 1.0 else model.with_prior(a0=g * model.a0, a1=g * model.a1)
        return PosteriorSamples.pooled([sample(one, q, n_samples=n_samples, seed=seed,
                                               time_budget=time_budget, **options)], granularity)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    budget = None if time_budget is None else Budget.of(time_budget)
    per_level = math.ceil(n_samples / levels)
    parts = []
    for i, (g, child) in enumerate(zip(granularity, rng.spawn(levels))):
        seconds = None
        if budget is not None and budget.timed:
            seconds = budget.allot(warn=i == 0) / (levels - i)
        parts.append(sample(model.with_prior(a0=g * model.a0, a1=g * model.a1), q, n_samples=per_level,
                            seed=child, time_budget=seconds, **options))
    pooled = PosteriorSamples.pooled(parts, granularity)
    pooled.seed = seed
    return pooled


def check_segment_samples(n, options, granularity=None, posterior_model=None) -> None:
    """:func:`swcuts.segment`'s ``posterior_samples``, ``granularity`` and
    ``posterior_model``, or a one-line error: a count from 1 to 10000 with a
    sampler on atoms, a ladder (:func:`check_granularity`; with
    ``posterior_model="edges"`` target numbers of segments,
    :func:`~swcuts.segmentation.edge_posterior.check_targets`) and a
    sampling model (:data:`~swcuts.segmentation.edge_posterior.SAMPLING_MODELS`)
    only with it."""
    from swcuts.segmentation.edge_posterior import check_sampling_model, check_targets

    if n is None:
        for name, value in (("granularity", granularity), ("posterior_model", posterior_model)):
            if value is not None:
                raise InputError(f"{name} sets how the posterior samples are drawn: give posterior_samples too")
        return
    check_number("posterior_samples", n, integer=True, minimum=1, maximum=10_000,
                 what="an integer from 1 to 10000")
    if options.spec.runs_on != "atoms" or options.atoms == "pixels" or options.init == "atoms":
        raise InputError("posterior_samples samples on atoms: use a sampler on atoms (e.g. swc), "
                         f"not '{options.name}' on {options.atoms} atoms")
    if check_sampling_model(posterior_model) == "edges":
        check_targets(granularity)
    else:
        check_granularity(granularity)
