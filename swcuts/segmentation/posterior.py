"""Posterior samples of a segmentation: how sure is the answer?

:func:`sample_posterior` anneals several chains of a partition sampler down
to temperature 1 (not below), then keeps sampling the image posterior at
T = 1 exactly, thinned by the measured integrated autocorrelation time of
label-invariant statistics (−log π and the number of segments). The result,
:class:`PosteriorSamples`, holds the sampled atom labellings and answers,
with no Python loop over pixels:

* :meth:`PosteriorSamples.boundary_probability` — for every pixel, the
  fraction of samples in which a segment boundary passes there;
* :meth:`PosteriorSamples.segment_stability` — for every segment of the
  best state, its mean best-match IoU across the samples;
* :meth:`PosteriorSamples.coassignment` — the probability that each atom
  shares a segment with a chosen atom;
* :meth:`PosteriorSamples.n_segments_distribution` — the posterior of the
  number of segments;

with the convergence diagnostics of :mod:`swcuts.inference.diagnostics` (split R-hat
and ESS of the label-invariant statistics across chains, acceptance) and
warnings when they say the chains have not mixed.

Every estimate is a Monte Carlo average over states drawn at T = 1 by
kernels that leave π invariant (the enumeration tests), after burn-in, so
it is consistent for the posterior expectation; annealing (T > 1) only
moves the chains to where π has its mass faster.
"""

from __future__ import annotations

import math
import time

import numpy as np

from swcuts.inference.budget import Budget, phase_of
from swcuts.inference.chains import Chain, ChainPool, default_workers
from swcuts.inference.sampling_phases import diagnose, progress_bar, run_phases
from swcuts.inference.tempering import TemperedChain, geometric_ladder, tempering_summary
from swcuts.samplers.registry import steps_for
from swcuts.segmentation.granularity import check_segment_samples
from swcuts.io.errors import InputError, check_number
from swcuts.inference.posterior_samples import (
    ESS_WARN, R_HAT_WARN, PosteriorSamples, pixel_boundary_probability)

__all__ = ["sample_posterior", "sample_model", "PosteriorSamples", "pixel_boundary_probability",
           "R_HAT_WARN", "check_segment_samples"]

#: Start temperature of the annealing to T = 1 (SW cuts: T0 <= 15, section 5).
T0 = 10.0
#: Default annealing budget per chain, in steps per atom (10 -> 1).
ANNEAL_STEPS_PER_ATOM = 40
#: Pilot run at T = 1 per chain (burn-in and autocorrelation estimate), in steps per atom.
PILOT_STEPS_PER_ATOM = 40
#: Chains of :func:`sample_posterior` by default: of one posterior, and of
#: each posterior of a granularity ladder (swcuts.segmentation.granularity).
POSTERIOR_CHAINS = 4
LEVEL_CHAINS = 2
#: Hottest temperature of the replica ladder (``replicas > 1``).
T_MAX = 2.0
#: Swap sweeps of a ladder: one every this many kernel steps per atom.
SWAP_EVERY_PER_ATOM = 1.0


def _make_kernel(sampler, model, q):
    """(name, kernel) for a sampler name or a factory ``(model, q) -> kernel``."""
    from swcuts.samplers import ALIASES, KERNELS

    if callable(sampler) and not isinstance(sampler, str):
        kernel = sampler(model, q)
        return getattr(kernel, "name", type(kernel).__name__), kernel
    name = ALIASES.get(sampler, sampler)
    if name not in KERNELS:
        raise InputError(f"unknown sampler '{sampler}' for posterior sampling; choose one of "
                         f"{', '.join(sorted(KERNELS))}")
    return name, KERNELS[name](model, q)


def _starts(n, chains, rng):
    """Different starts: one label, then random labellings with sqrt(n), 2
    and 2 sqrt(n) labels (in turn). Starts with hundreds of labels (n/4)
    were tried: at ~1,000 atoms they were still far from the others' level
    of −log π after the default annealing."""
    out = [np.zeros(n, dtype=np.int64)]
    root = max(2, int(round(np.sqrt(n))))
    ks = [root, 2, 2 * root]
    for c in range(1, chains):
        k = min(ks[(c - 1) % len(ks)], n)
        out.append(rng.integers(0, k, size=n).astype(np.int64))
    return out


def _check_sampling(*, n_samples, thin, chains, t0, time_budget, anneal_steps, pilot_steps, workers,
                    replicas=1, t_max=T_MAX, swap_every=None):
    """The options of :func:`sample_model` (and :func:`sample_posterior`),
    before any work (:func:`~swcuts.io.errors.check_number`: a wrong type is an
    :class:`~swcuts.io.errors.InputTypeError`, a bad value an
    :class:`~swcuts.io.errors.InputError`)."""
    check_number("n_samples", n_samples, integer=True, minimum=1)
    check_number("chains", chains, integer=True, minimum=1)
    check_number("thin", thin, integer=True, minimum=1, allow_none=True)
    check_number("t0", t0, minimum=1, what="at least 1 (sampling is at T = 1)")
    check_number("time_budget", time_budget, minimum=0, exclusive=True, allow_none=True,
                 what="a positive number of seconds")
    check_number("anneal_steps", anneal_steps, integer=True, minimum=0, allow_none=True)
    check_number("pilot_steps", pilot_steps, integer=True, minimum=0, allow_none=True)
    check_number("workers", workers, integer=True, minimum=1, allow_none=True)
    check_number("replicas", replicas, integer=True, minimum=1)
    check_number("swap_every", swap_every, integer=True, minimum=1, allow_none=True)
    check_number("t_max", t_max, minimum=1, exclusive=replicas > 1,
                 what="above 1 (the hottest replica's temperature)")
    if pilot_steps == 0 and thin is None:
        raise InputError("without a pilot run (pilot_steps=0) give thin")


def sample_model(model, q, *, atoms, n_samples=100, thin=None, chains=4, sampler="swc", seed=None,
                 time_budget=None, t0=T0, anneal_steps=None, pilot_steps=None, starts=None,
                 image=None, posterior=None, workers=None, progress=False, replicas=1, t_max=T_MAX,
                 swap_every=None, records=1) -> PosteriorSamples:
    """Sample a built posterior (model, edge probabilities) at T = 1.

    The engine of :func:`sample_posterior`, usable on any partition model
    with ``new_state``/``log_target`` and a graph (the tests run it on
    exactly enumerable posteriors). Each chain is annealed from ``t0`` to
    T = 1 (never below), runs a pilot at T = 1 (burn-in; the autocorrelation
    time of −log π and the number of segments is measured on it), and then
    keeps one state every ``thin`` steps at T = 1. Chains advance in turn,
    one kept sample each per round.

    Parameters
    ----------
    model : partition model
        With ``graph``, ``n_vertices``, ``new_state`` and ``log_target``.
    q : (n_edges,) float array
        Edge probabilities of the SW-cut kernels.
    atoms : (H, W) int array
        Atom of every pixel (for the pixel maps).
    n_samples : int
        Kept samples over all chains (split evenly; at least 4 per chain,
        for the split R-hat).
    thin : int, optional
        Kernel steps between kept samples. Default: the measured integrated
        autocorrelation time in steps (at least 1).
    chains : int
        Number of chains, from different starts (one label; random
        labellings).
    sampler : str or callable
        A kernel name of :data:`swcuts.samplers.KERNELS` (``"swc"``
        default) or a factory ``(model, q) -> kernel``.
    seed : int or numpy.random.Generator, optional
    time_budget : float or Budget, optional
        Seconds for the whole run: :data:`~swcuts.inference.sampling_phases.ANNEAL_TIME_SHARE` for annealing,
        :data:`~swcuts.inference.sampling_phases.PILOT_TIME_SHARE` for the pilot, the rest for sampling;
        when it runs out before ``n_samples``, fewer are kept (a warning).
        A :class:`~swcuts.inference.budget.Budget`: what the run it belongs to has
        left once the chains are made (:meth:`~swcuts.inference.budget.Budget.allot`).
    t0 : float
        Start temperature of the annealing (1: no annealing).
    anneal_steps, pilot_steps : int, optional
        Steps per chain (default :data:`ANNEAL_STEPS_PER_ATOM`,
        :data:`PILOT_STEPS_PER_ATOM` per atom of SW cuts, in steps of
        ``sampler``: :func:`~swcuts.samplers.registry.steps_for`). ``pilot_steps=0``: no
        pilot (then ``thin`` must be given).
    starts : list of (n_atoms,) int arrays, optional
        The chains' starts (default: one label, then random labellings).
    workers : int, optional
        Threads running chains at once (default:
        the processors available, at most ``chains``). The samples do not
        depend on it: each chain draws from its own generator.
    progress : bool
        A progress bar over the kept samples on stderr, when it is a terminal.
    replicas : int
        Replica exchange (:mod:`swcuts.inference.tempering`): every chain
        is a ladder of this many replicas at temperatures from 1 to
        ``t_max`` (equal in log T), each running the kernel, with swaps of
        adjacent temperatures; the samples are those at T = 1. 1 (default):
        no tempering. Every step then costs ``replicas`` kernel steps.
    t_max : float
        The hottest replica's temperature (``replicas > 1``).
    swap_every : int, optional
        Kernel steps of every replica between swap sweeps (default
        :data:`SWAP_EVERY_PER_ATOM` per atom).
    records : int
        Records of −log π and of the number of segments per kept sample
        (evenly spaced in its ``thin`` steps): split R-hat is computed on
        them (1: on the kept samples); the ESS is the kept samples'.

    Returns
    -------
    PosteriorSamples

    Examples
    --------
    >>> ps = _demo()
    >>> ps.labels.shape[0], ps.n_chains
    (40, 2)
    """
    _check_sampling(n_samples=n_samples, thin=thin, chains=chains, t0=t0,
                    time_budget=Budget.seconds_of(time_budget), anneal_steps=anneal_steps,
                    pilot_steps=pilot_steps, workers=workers, replicas=replicas, t_max=t_max,
                    swap_every=swap_every)
    check_number("records", records, integer=True, minimum=1)
    budget = time_budget if isinstance(time_budget, Budget) else None
    time_budget = Budget.seconds_of(time_budget)
    clock = time.perf_counter()
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n = model.n_vertices
    per_chain = max(4, int(math.ceil(n_samples / chains)))
    if starts is None:
        starts = _starts(n, chains, rng)
    if len(starts) != chains:
        raise ValueError(f"starts must hold one labelling per chain ({chains}), got {len(starts)}")
    name = None
    runs = []
    child = rng.spawn(chains)
    temperatures = geometric_ladder(replicas, t_max) if replicas > 1 else None
    swap_every = (max(1, int(round(SWAP_EVERY_PER_ATOM * n))) if swap_every is None
                  else int(swap_every))
    for c in range(chains):
        reps = []
        for r, gen in enumerate(child[c].spawn(replicas) if replicas > 1 else [child[c]]):
            name, kernel = _make_kernel(sampler, model, q)
            state = model.new_state(np.asarray(starts[c], dtype=np.int64))
            reps.append(Chain(kernel, state, gen))
        runs.append(reps[0] if replicas == 1 else TemperedChain(reps, temperatures, swap_every, child[c]))
    warnings = []
    anneal_steps = steps_for(sampler, ANNEAL_STEPS_PER_ATOM, n) if anneal_steps is None else int(anneal_steps)
    pilot_steps = steps_for(sampler, PILOT_STEPS_PER_ATOM, n) if pilot_steps is None else int(pilot_steps)
    run_clock = clock
    if budget is not None and budget.timed:  # what the run has left, from now
        time_budget, run_clock = budget.allot(), time.perf_counter()
    share = None if time_budget is None else time_budget / chains
    samples = np.zeros((chains, per_chain, n), dtype=np.int16 if n < 32768 else np.int32)
    energies = np.zeros((chains, per_chain))
    n_segs = np.zeros((chains, per_chain), dtype=np.int64)
    accepted = np.zeros(chains)
    steps_t1 = np.zeros(chains)
    trace = np.zeros((chains, per_chain * int(records), 2))

    phases = {}
    pool = ChainPool(runs, default_workers(chains) if workers is None else int(workers))
    bar_cm = progress_bar(progress, per_chain * chains, chains)
    try:
        with bar_cm as bar, phase_of(budget, "sampling", f"{chains} chains"):
            thin, tau_steps, kept = run_phases(
                model, runs, pool, bar, phases, warnings, run_clock, thin=thin, t0=t0,
                anneal_steps=anneal_steps, pilot_steps=pilot_steps, share=share,
                time_budget=time_budget, samples=samples, energies=energies, n_segs=n_segs,
                accepted=accepted, steps_t1=steps_t1, trace=trace)
    finally:
        pool.close()
    samples, energies, n_segs = samples[:, :kept], energies[:, :kept], n_segs[:, :kept]
    r_hat, ess = diagnose(energies, n_segs)
    if records > 1:
        r_hat = diagnose(trace[:, :kept * records, 0], trace[:, :kept * records, 1])[0]
    for stat, value in r_hat.items():
        if math.isfinite(value) and value > R_HAT_WARN or value == math.inf:
            warnings.append(f"split R-hat of {stat} is {value:.3g} > {R_HAT_WARN}: the chains have "
                            f"not mixed; run longer (larger thin or more samples)")
    finite_ess = [v for v in ess.values() if math.isfinite(v)]
    if finite_ess and min(finite_ess) < ESS_WARN:
        warnings.append(f"effective sample size {min(finite_ess):.1f} < {ESS_WARN:g}: the estimates "
                        f"are noisy; take more samples")
    best_c = int(np.argmax([ch.best_log_pi for ch in runs]))
    best = runs[best_c].best_labels
    from swcuts.models.partition import canonical

    best_labels = np.asarray(canonical(best), dtype=np.int64)
    return PosteriorSamples(
        labels=samples.reshape(-1, n),
        chain=np.repeat(np.arange(chains), kept),
        atoms=np.asarray(atoms),
        graph=model.graph,
        best_labels=best_labels,
        best_energy=-float(model.log_target(best)),
        energies=energies,
        n_segments=n_segs,
        thin=int(thin),
        tau_steps=float(tau_steps),
        acceptance=accepted / np.maximum(steps_t1, 1),
        r_hat=r_hat,
        ess=ess,
        warnings=warnings,
        sampler=name,
        seconds=time.perf_counter() - clock,
        steps=int(sum(ch.steps for ch in runs)),
        seed=seed,
        posterior=posterior,
        image=image,
        model=model,
        phase_seconds=phases,
        tempering=tempering_summary(runs),
    )


def sample_posterior(image, *, n_samples=100, thin=None, chains=None, sampler="swc", seed=None,
                     time_budget=None, channel_axis=-1, model=None, atoms=None, n_atoms=None,
                     t0=T0, anneal_steps=None, pilot_steps=None, edge_scale=None, q_max=None,
                     bins=None, a0=None, a1=None, a2=None, kappa=None, workers=None,
                     progress=False, replicas=1, t_max=T_MAX, swap_every=None,
                     granularity=None, superatoms=None) -> PosteriorSamples:
    """Samples of the posterior over segmentations of ``image``.

    By default (``model="edges"``) the learned edge evidence alone, coarsened
    and calibrated against human annotators, at granularities fitted to the
    photo (:func:`~swcuts.segmentation.edge_posterior.sample_edge_posterior`;
    it takes none of the image posteriors' options). ``model="image"`` (or a
    named image posterior): the segmentation's own posterior, prepared as
    :func:`swcuts.segment` prepares it; each of ``chains`` chains, from a
    different start, is annealed from ``t0`` to T = 1, runs a pilot at T = 1
    (burn-in and autocorrelation estimate), then keeps one state every
    ``thin`` steps at T = 1 exactly.

    Parameters
    ----------
    image : (H, W) or (H, W, C) array
        As for :func:`swcuts.segment` (an array; a file name is refused
        with a :class:`TypeError` naming :func:`swcuts.load_image`).
    n_samples : int
        Kept samples over all chains, rounded up to equal shares of the
        granularity levels and their chains (at least 4 per chain).
    thin : int, optional
        Kernel steps between kept samples; default a number of steps per atom
        (edges) or the measured integrated autocorrelation time of −log π
        and the number of segments, the larger (image posteriors).
    chains : int, optional
        Chains of each posterior of ``granularity`` (2 or more detect chains
        stuck in different modes). Default 2 a share of each edges level;
        image posteriors :data:`POSTERIOR_CHAINS`, 4, for one posterior and
        :data:`LEVEL_CHAINS`, 2, for each of several.
    sampler : str
        A kernel (``"swc"`` default; ``"swc2"``, ``"gibbs"``, ...).
    seed : int or numpy.random.Generator, optional
        The same seed gives the same samples.
    time_budget : float or Budget, optional
        Wall seconds of the whole call: preparing the image, the atoms and
        the posterior come out of it, and the chains get what is left, at
        least :data:`~swcuts.inference.budget.MIN_SAMPLING_SHARE` of it (see
        :func:`sample_model`, :func:`swcuts.segment`).
    channel_axis : int or None
        Axis of the channels, as in scikit-image.
    model : str, optional
        ``"edges"`` (default): the learned edge evidence alone
        (:mod:`swcuts.segmentation.edge_posterior`; ``granularity``: its target numbers of
        segments); ``"image"``: the image posterior of :func:`swcuts.segment` (its default
        model), or a named image posterior (:data:`swcuts.MODELS`).
    atoms : str, optional
        Over-segmentation method (default as :func:`swcuts.segment`:
        ``"watershed"``; not ``"pixels"``).
    n_atoms : int, optional
        Approximate number of atoms (default as :func:`swcuts.segment`).
    t0, anneal_steps, pilot_steps
        The annealing to T = 1 and the pilot, see :func:`sample_model`.
    edge_scale, q_max, bins, a0, a1, a2, kappa : optional
        Posterior parameters, as for :func:`swcuts.segment` (None: its defaults).
    workers : int, optional
        Threads running chains at once (default: the processors available,
        at most ``chains``); the samples do not depend on it.
    progress : bool
        On a terminal, the phases on stderr and a progress bar over the sampling.
    replicas, t_max, swap_every
        Replica exchange between temperatures 1..``t_max`` (``replicas > 1``),
        see :func:`sample_model`.
    granularity : float or sequence of float, optional
        Edges: the levels' target numbers of segments (default (4, 8, 16)). An
        image posterior: the granularity is unknown: the samples are an equal mixture of the
        posteriors whose prior weights a0 and a1 are the model's times each
        multiplier, each sampled by its own ``chains`` chains
        (:mod:`swcuts.segmentation.granularity`). Default
        :data:`~swcuts.segmentation.granularity.GRANULARITY`, ``(1, 3, 10)``;
        ``1``: the posterior at the model's own weights alone. With
        ``superatoms``: default
        :data:`~swcuts.segmentation.superatom_posterior.SUPERATOM_GRANULARITY`.
    superatoms : int, optional
        Sample the "superatoms" posterior instead
        (:mod:`swcuts.segmentation.superatom_posterior`): on this many
        super-atoms (the atoms merged along their weakest boundaries), the
        likelihood coarsened to the super-atoms' share of independent pixels
        and the boundary evidence to a share of its pixel pairs
        (:data:`~swcuts.segmentation.superatom_posterior.SUPERATOMS`, 100); ``anneal_steps``,
        ``pilot_steps`` and ``thin`` default to steps per super-atom (that module's).

    Returns
    -------
    PosteriorSamples

    Examples
    --------
    >>> import numpy as np, swcuts
    >>> image = np.zeros((24, 24)); image[:, 12:] = 1.0
    >>> ps = swcuts.segmentation.posterior.sample_posterior(image, n_samples=8, chains=2, n_atoms=16, seed=0)
    >>> ps.boundary_probability().shape
    (24, 24)
    """
    from swcuts.segmentation.edge_posterior import check_sampling_model

    if model is None or model in ("image", "edges"):
        model = None if check_sampling_model(model) == "image" else "edges"
    if model == "edges":  # issue 35, rounds 8-11: the default
        from swcuts.segmentation.edge_posterior import refuse_options, sample_edge_posterior
        refuse_options(t0=None if t0 == T0 else t0, anneal_steps=anneal_steps, edge_scale=edge_scale, q_max=q_max,
                       bins=bins, a0=a0, a1=a1, a2=a2, kappa=kappa, superatoms=superatoms)
        return sample_edge_posterior(image, n_samples=n_samples, chains=chains, seed=seed, time_budget=time_budget,
                                     channel_axis=channel_axis, atoms=atoms, n_atoms=n_atoms, granularity=granularity,
                                     thin=thin, pilot_steps=pilot_steps, sampler=sampler, workers=workers,
                                     progress=progress, replicas=replicas, t_max=t_max, swap_every=swap_every)
    from swcuts.segmentation.build import build_posterior
    from swcuts.image.atoms import DEFAULT_ATOMS
    from swcuts.image.prepare import prepare_image, refuse_path
    from swcuts.segmentation.options import DEFAULTS, resolve_options

    from swcuts.segmentation.granularity import check_granularity, sample_granularities

    refuse_path(image, "sample_posterior")
    check_number("superatoms", superatoms, integer=True, minimum=2, allow_none=True)
    if superatoms is not None and granularity is None:
        from swcuts.segmentation.superatom_posterior import SUPERATOM_GRANULARITY as granularity
    granularity = check_granularity(granularity)
    if chains is None:
        chains = POSTERIOR_CHAINS if len(granularity) == 1 else LEVEL_CHAINS
    _check_sampling(n_samples=n_samples, thin=thin, chains=chains, t0=t0,
                    time_budget=Budget.seconds_of(time_budget), anneal_steps=anneal_steps,
                    pilot_steps=pilot_steps, workers=workers, replicas=replicas, t_max=t_max,
                    swap_every=swap_every)
    called = time.perf_counter()
    opts = dict(edge_scale=edge_scale, q_max=q_max, bins=bins, a0=a0, a1=a1, a2=a2, kappa=kappa)
    opts = {k: (DEFAULTS[k] if v is None else v) for k, v in opts.items()}  # a0, a1, a2: None
    atoms = DEFAULT_ATOMS if atoms is None else atoms
    if atoms == "pixels":
        raise InputError("posterior sampling runs on atoms; choose atoms other than 'pixels'")
    sampler_name = sampler if isinstance(sampler, str) else "swc"
    resolved = resolve_options(sampler=sampler_name, atoms=atoms, n_atoms=n_atoms, seed=seed,
                               time_budget=Budget.seconds_of(time_budget), model=model, **opts)
    budget = Budget.of(time_budget, progress=progress, start=called)
    with budget.phase("preparing"):
        features, display = prepare_image(image, channel_axis=channel_axis)
        run = resolved.on_image(features)  # the posterior of segment() on this image
    model_name = run.posterior
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    atom_seed = seed if not isinstance(seed, np.random.Generator) else int(rng.integers(2**31))
    if superatoms is None:
        atom_labels, graph, q, post = build_posterior(features, atoms, run.n_atoms, seed=atom_seed,
                                                      budget=budget, **run.posterior_params())
    else:
        from swcuts.segmentation import superatom_posterior as sp

        sa, q, post = sp.build_superatom_posterior(features, atoms, run.n_atoms, seed=atom_seed, budget=budget,
                                                   params=run.posterior_params(), n_superatoms=superatoms)
        atom_labels, model_name, k = sa.labels, "superatoms", sa.n_regions
        anneal_steps = steps_for(sampler, sp.ANNEAL_PER_SUPERATOM, k) if anneal_steps is None else anneal_steps
        pilot_steps = steps_for(sampler, sp.PILOT_PER_SUPERATOM, k) if pilot_steps is None else pilot_steps
        thin = steps_for(sampler, sp.THIN_PER_SUPERATOM, k) if thin is None else thin
    result = sample_granularities(post, q, granularity=granularity, atoms=atom_labels,
                                  n_samples=n_samples, thin=thin, chains=chains, sampler=sampler,
                                  seed=rng, time_budget=budget, t0=t0, anneal_steps=anneal_steps,
                                  pilot_steps=pilot_steps, image=display, posterior=model_name,
                                  workers=workers, progress=progress, replicas=replicas, t_max=t_max,
                                  swap_every=swap_every)
    result.seed = seed
    if budget is not time_budget:
        budget.check_end()
    return result


def _demo() -> PosteriorSamples:
    """A small run for the examples: two halves of a grey image, 16 atoms, one posterior."""
    image = np.zeros((24, 24))
    image[:, 12:] = 1.0
    image += 0.05 * np.random.default_rng(1).standard_normal(image.shape)
    return sample_posterior(image, n_samples=40, chains=2, n_atoms=16, seed=0, anneal_steps=200,
                            pilot_steps=400, granularity=1, model="image")
