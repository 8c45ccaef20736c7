"""The segmentation API: ``swcuts.segment(image, ...) -> Segmentation``."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import time
import warnings

import numpy as np

from swcuts.inference.anneal import AnnealResult, Converged, Schedule, anneal, join_results
from swcuts.inference.budget import Budget
from swcuts.graph.region_graph import RegionGraph
from swcuts.io.errors import check_number
from swcuts.image.full_size import WORK_PIXELS, carry_atoms, prepare_working, working_size
from swcuts.image.prepare import ImageScaleWarning, prepare_image, refuse_path
from swcuts.models.image import ImageModel
from swcuts.segmentation.options import (
    SAMPLERS, DEFAULTS, DEFAULT_T0_SWC, INITS, ATOMS_INIT_T0, ATOMS_INIT_SMALLEST_WINDOW,
    ATOMS_INIT_TIME_SHARE, _check_positive_int, _check_real, _check_window_sizes, _raw_hw, _check_windows_fit, default_steps,
    resolve_options)
from swcuts.segmentation.image_models import model_evidence, model_evidence_offset, model_temperature
from swcuts.segmentation.build import build_posterior
from swcuts.segmentation.costs import check_cost
from swcuts.samplers.registry import sampler_spec
from swcuts.samplers.multigrid import Multigrid, window_pyramid
from swcuts.segmentation.energy import energy
from swcuts.segmentation.result import Segmentation

__all__ = ["segment", "energy", "Segmentation", "SAMPLERS", "DEFAULTS", "INITS", "multigrid_from_atoms"]

def _anneal_atoms(features, n_atoms, seed, rng, posterior, *, total_steps, budget, t_final, progress):
    """Phase 1 of :func:`multigrid_from_atoms`: the ``swc`` kernel on SLIC
    atoms from one label, for its default budget, or :data:`ATOMS_INIT_TIME_SHARE`
    of what a timed ``budget`` has left, or its share of ``total_steps``
    (split in the proportion of the two phases' defaults). Returns
    (segment of every pixel, AnnealResult), or (one label, None) when the
    share rounds to no step."""
    atom_labels, graph, q, model = build_posterior(features, "slic", n_atoms, seed=seed, budget=budget,
                                                   **posterior)
    n = graph.n_vertices
    timed = budget.timed and total_steps is None
    steps = None if timed else default_steps("swc", n)
    if total_steps is not None:
        n_pixels = features.shape[0] * features.shape[1]
        other = default_steps("multigrid", n_pixels, pixels=True)
        steps = min(int(round(total_steps * steps / (steps + other))), total_steps - 1)
        if steps < 1:
            return np.zeros(atom_labels.size, dtype=np.int64), None
    steps, stop = _default_budget(steps) if steps is not None and total_steps is None else (steps, None)
    state = model.new_state(np.zeros(n, dtype=np.int64))
    schedule = Schedule(max(DEFAULT_T0_SWC, t_final), t_final)
    result = anneal(sampler_spec("swc").kernel(model, q), state, schedule, rng=rng, steps=steps,
                    time_budget=budget.share(ATOMS_INIT_TIME_SHARE) if timed else budget, progress=progress,
                    stop=stop)
    return state.partition.labels[atom_labels].ravel(), result


def multigrid_from_atoms(features, *, n_atoms, posterior, seed=None, rng=None, steps=None,
                         time_budget=None, t0=ATOMS_INIT_T0, t_final=DEFAULTS["t_final"],
                         window_sizes=None, progress=False):
    """Multigrid on the pixels started from SW cuts on SLIC atoms
    (``segment(sampler="multigrid", init="atoms")``, the default on pixels).

    Phase 1 anneals ``n_atoms`` SLIC atoms with the ``swc`` kernel from one
    label, exactly as ``segment(sampler="swc")`` does; phase 2 anneals the
    pixel posterior with :class:`~swcuts.samplers.multigrid.Multigrid` from
    phase 1's segmentation, from ``t0`` (default 1: the start is already
    annealed) to ``t_final``, with ``window_sizes`` (default 2, 4, 8, ...
    up to the longer side, frequencies ∝ 1/side²). Starting from one label
    the chain must build every region in windows large enough to pay a
    region's prior cost, which takes long at pixel scale; from the atoms'
    segmentation it only moves boundaries inside atoms, which small windows
    do well. Both phases anneal the same posterior (a union of atoms has
    the statistics of its pixels), so their −log π values are comparable.

    Budget: with neither ``steps`` nor ``time_budget``, each phase's default
    (:func:`default_steps` of ``swc`` on the atoms, of ``multigrid`` on the
    pixels); ``steps`` is split between the phases in that proportion (the
    atoms' share may round to none); a ``time_budget`` (seconds from the
    call, or the :class:`~swcuts.inference.budget.Budget` of a run) gives the atoms'
    sampling :data:`ATOMS_INIT_TIME_SHARE` of what is left when it starts,
    and the pixels' sampling what is left after the pixel posterior is built.

    Parameters
    ----------
    features : (H, W, C) array
        Prepared image (:func:`~swcuts.image.prepare.prepare_image`).
    n_atoms : int
        Approximate number of SLIC atoms.
    posterior : dict
        ``bins, a0, a1, a2, kappa, edge_scale, q_max`` (see :func:`segment`).
    seed, rng
        Seed of the atoms, and the generator of both runs (default
        ``numpy.random.default_rng(seed)``).

    Returns
    -------
    (atoms, graph, q, model, vertex_labels, result)
        The pixel level (atom label image, graph, edge probabilities,
        posterior), the segment of every pixel vertex (0..K-1), and an
        AnnealResult whose trace, steps, seconds and accepted count cover
        both phases and whose ``best_energy`` is −log π on the pixels.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.image.prepare import prepare_image
    >>> image = np.zeros((24, 32)); image[:, 16:] = 1.0
    >>> features, _ = prepare_image(image)
    >>> posterior = dict(bins=32, a0=0.5, a1=5.0, a2=5.0, kappa=1.0, edge_scale=1.0, q_max=0.95)
    >>> atoms, graph, q, model, labels, result = multigrid_from_atoms(
    ...     features, n_atoms=20, posterior=posterior, seed=0, steps=2000)
    >>> atoms.shape, graph.n_vertices, int(labels.max()) + 1, result.steps
    ((24, 32), 768, 2, 2000)
    """
    _check_positive_int("n_atoms", n_atoms, allow_none=False)
    _check_positive_int("steps", steps)
    _check_real("time_budget", Budget.seconds_of(time_budget), what="a positive number of seconds", allow_none=True)
    _check_real("t0", t0, what="a positive temperature")
    _check_real("t_final", t_final, what="a positive temperature")
    window_sizes = _check_window_sizes(window_sizes)
    rng = np.random.default_rng(seed) if rng is None else rng
    budget = Budget.of(time_budget)
    h, w = features.shape[:2]
    start, first = _anneal_atoms(features, n_atoms, seed, rng, posterior, budget=budget, t_final=t_final,
                                 total_steps=None if steps is None else int(steps), progress=progress)
    atom_labels, graph, q, model = build_posterior(features, "pixels", h * w, seed=seed, budget=budget,
                                                   **posterior)
    init_labels = np.empty(graph.n_vertices, dtype=np.int64)
    init_labels[atom_labels.ravel()] = start
    state = model.new_state(init_labels)
    if window_sizes is None:
        window_sizes = window_pyramid((h, w), ATOMS_INIT_SMALLEST_WINDOW)
    kernel = Multigrid(model, q, window_sizes=window_sizes)
    steps2 = None
    if steps is not None:
        steps2 = int(steps) - (first.steps if first is not None else 0)
    elif not budget.timed:
        steps2 = default_steps("multigrid", graph.n_vertices, pixels=True)
    # A timed budget: what the run has left (at least its minimum).
    second = anneal(kernel, state, Schedule(t0, t_final), rng=rng, steps=steps2, time_budget=budget,
                    progress=progress)
    result = join_results(first, second)
    return atom_labels, graph, q, model, state.partition.compact_labels(), result


def segment(image, *, sampler="swc", atoms=None, n_atoms=DEFAULTS["n_atoms"], seed=None,
            steps=None, time_budget=None, t0=None, t_final=DEFAULTS["t_final"], init=None,
            channel_axis=-1, edge_scale=DEFAULTS["edge_scale"], q_max=DEFAULTS["q_max"],
            bins=DEFAULTS["bins"], a0=DEFAULTS["a0"], a1=DEFAULTS["a1"], a2=DEFAULTS["a2"],
            kappa=DEFAULTS["kappa"], window_sizes=None, levels=DEFAULTS["levels"], model=None,
            progress=False, posterior_samples=None, granularity=None, posterior_model=None,
            work_pixels=WORK_PIXELS) -> Segmentation:
    """Segment an image by annealing its posterior with a partition sampler.

    Parameters
    ----------
    image : (H, W) or (H, W, C) array
        Grey, grey+alpha, RGB or RGBA image of any integer or float dtype,
        scaled to [0, 1] by its type (:func:`swcuts.image.prepare.prepare_image`;
        10-, 12- and 14-bit data in a 16-bit image by its sample depth,
        with a warning). An array, not a file name: read a file with
        :func:`swcuts.load_image`.
    sampler : str
        One of :data:`SAMPLERS`; ``"swc"`` is the default SW-cut kernel
        (SWC-2 mixed with single-vertex steps). ``"multigrid"`` samples in
        attention windows (Props. 9-11), ``"multiflip"`` relabels several
        components per step (Prop. 8), ``"multilevel"`` forms the atoms by
        cluster sampling on pixels and the segments on those atoms
        (Prop. 12); the split-merge family (``"split-merge"``,
        ``"triadic"``, ...) runs on the same posterior for comparison.
    atoms : str, optional
        Over-segmentation method: ``slic``, ``felzenszwalb``, ``watershed``,
        ``edges`` or ``pixels``. Default: ``pixels`` for ``multigrid`` and
        ``multilevel``, ``watershed`` (atoms that follow the image's
        gradient) for every other sampler.
    n_atoms : int, optional
        Approximate number of atoms (default: one per 80 pixels, between 100 and 1000; the
        "learned" model then merges its watershed atoms along their weakest boundaries, ~90 on
        a photo); with ``init="atoms"``, of the SLIC atoms of the start.
    seed : int or numpy.random.Generator, optional
        The same seed gives the same result.
    steps : int, optional
        Budget in kernel steps (default: a sampler-specific number per atom;
        on pixels, per pixel up to a cap: :data:`STEPS_PER_PIXEL`,
        :data:`MAX_PIXEL_STEPS`).
    time_budget : float or Budget, optional
        Wall seconds of the whole call, instead of ``steps``: preparing the
        image, the atoms, graph, edge probabilities and model come out of
        it, and the sampler gets what is left, at least
        :data:`~swcuts.inference.budget.MIN_SAMPLING_SHARE` of it (a
        :class:`~swcuts.inference.budget.BudgetWarning` says when the earlier phases
        left less, and the call then takes longer). A
        :class:`~swcuts.inference.budget.Budget` counts from its own start (the CLI:
        from the start of the process, less a reserve for writing).
    t0, t_final : float
        Start and final temperature of the geometric schedule (default t0:
        10 for SW-cut kernels, 100 for Gibbs, 1 for multigrid from atoms), in
        the posterior's unit (:func:`~swcuts.segmentation.image_models.model_temperature`).
    init : {"atoms", "uniform", "random"}, optional
        Start from one label (``"uniform"``), from a random labelling of
        the atoms (``"random"``), or, for ``multigrid`` on pixels only
        (where it is the default), from a segmentation of SLIC atoms
        (``"atoms"``): ``swc`` anneals ``n_atoms`` SLIC atoms first (its
        default budget, or 10 % of a ``time_budget``), then multigrid
        refines that segmentation on the pixels from t0 = 1 with windows
        of side 2, 4, 8, ...; ``steps``, ``time_budget``, the result's
        ``trace``, ``steps``, ``seconds`` and ``accepted`` cover both
        phases (see :func:`multigrid_from_atoms`). Default: ``"atoms"``
        for ``multigrid`` on pixels, ``"uniform"`` otherwise.
    channel_axis : int or None
        Axis of the channels, as in scikit-image.
    edge_scale, q_max : float
        Scale of the KL divergence in the edge probabilities (eq. 53; on
        noisy images times :func:`swcuts.graph.edge_probabilities.noise_edge_scale`), and the
        ceiling of q that keeps every partition reachable.
    bins, a0, a1, a2, kappa : float
        Posterior parameters: likelihood histogram bins per channel, prior
        weights of eq. 59 and the weight of the complexity prior. ``bins``
        defaults to the model's (24 for "window", 32 for the others;
        :func:`swcuts.segmentation.options.model_bins`); ``a0``, ``a1`` and
        ``a2`` to the model's weights (:data:`MODELS`; a0 and a1 per
        10^5 pixels of the image, at least those of 1,000 pixels), times 0.35
        on an image with one varying channel (grey), which has less evidence
        per pixel than a colour one (:data:`swcuts.segmentation.image_models.ONE_CHANNEL_WEIGHT`).
    model : {"learned", "window", "contrast", "texture", "paper"}, optional
        The image posterior (:data:`~swcuts.segmentation.image_models.MODELS`). "paper": section 5 of Barbu & Zhu (region
        likelihoods, eq. 59 prior). "contrast": the same plus a
        contrast-sensitive boundary term that pays for boundaries across
        flat areas and little along image edges (:mod:`swcuts.models.boundary`;
        Boykov & Jolly 2001), with no per-region weight. "texture": "contrast"
        with texture-robust boundary evidence (a cut is cheap only where
        the pixel contrast and a half-window histogram gradient both mark
        an edge; Martin, Fowlkes & Malik 2004). "window": "contrast" whose
        histogram likelihood counts each pixel through the histogram of the
        window around it (about 31x31 pixels on a 481x321 photo), so that
        textures look alike from atom to atom, with a per-region weight;
        samplers on atoms only. "learned": "window" with the coarsened
        likelihood, the trained boundary detector's evidence and learned
        SW-cut edge probabilities (docs/algorithms/learned_posterior.md).
        Default: "learned" on atoms (it leads on held-out real photos;
        "window" on images with a side below 32 pixels,
        :func:`~swcuts.segmentation.image_models.default_model_for`), "contrast" on pixels
        (``atoms="pixels"``, the multigrid and multi-level samplers;
        :func:`swcuts.segmentation.options.default_model`). Every sampler's moves
        include the boundary term, and those of the samplers on atoms
        the window counts, proved by exact enumeration.
    window_sizes : sequence of int, optional
        ``multigrid`` and ``multilevel``: sides of the square attention
        windows (default 8, 16, 32, ... up to the image's longer side;
        2, 4, 8, ... with ``init="atoms"``). A window larger than the
        image is refused.
    levels : int
        ``multilevel``: number of levels of the hierarchy above the pixels
        (1: segments sampled on pixels; 2: atoms on pixels and segments on
        atoms). Must be at least 1.
    progress : bool
        On a terminal, name each phase on stderr while it runs (preparing,
        atoms, graph, edges, model, compiling) and show a progress bar
        while sampling.
    posterior_samples : int, optional
        Also draw this many samples at T = 1 with the same sampler
        (:func:`swcuts.sample_posterior`; samplers on atoms only) of the
        sampling posterior ``posterior_model``, in :attr:`Segmentation.samples`; with a
        ``time_budget``, the segmentation samples for half of what is left
        and the posterior samples get the rest.
    granularity : float or sequence of float, optional
        With ``posterior_samples``: the target numbers of segments of the
        edges posterior (default (4, 8, 16)); with ``posterior_model="image"``
        the ladder of prior-weight multipliers (default (1, 3, 10); 1: the posterior alone).
    posterior_model : {None, "edges", "image"}
        With ``posterior_samples``: the learned edge evidence alone (None, "edges":
        ``sample_posterior(model="edges")``, calibrated; without a0 ... kappa), or the
        segmentation's own posterior ("image", with its model and weights), which
        anneals to the answer but whose samples at T = 1 are over-confident.
    work_pixels : int or None
        A sampler on atoms segments an image of more than twice this many
        pixels on a working image of about this many (area averaging), at
        the cost of a photo of that size, and carries its atoms back to
        full size along the image's edges (:func:`swcuts.image.full_size.carry_atoms`;
        :attr:`Segmentation.work_shape`). Default
        :data:`swcuts.image.full_size.WORK_PIXELS` (500,000); None: at full
        size, as are runs with ``posterior_samples``, on pixels or hierarchical.

    Returns
    -------
    Segmentation

    Raises
    ------
    ValueError
        For a bad image or bad options (the message says how to fix it).
    TypeError
        For arguments of the wrong type, e.g. a file name for ``image``
        (swcuts takes arrays; read a file with :func:`swcuts.load_image`).

    Examples
    --------
    Two halves of a noisy grey image, on 20 SLIC atoms, with a budget of
    300 steps of the default SW-cut kernel:

    >>> import numpy as np, swcuts
    >>> image = np.zeros((24, 32)); image[:, 16:] = 1.0
    >>> image += 0.05 * np.random.default_rng(0).standard_normal(image.shape)
    >>> seg = swcuts.segment(image, seed=0, steps=300, n_atoms=20)
    >>> seg.labels.shape, seg.n_labels, bool(seg.labels[0, 0] != seg.labels[0, -1])
    ((24, 32), 2, True)
    >>> seg.energy == -seg.model.log_target(seg.vertex_labels)  # −log π of the result
    True

    Every pixel a vertex, multigrid from the atoms' segmentation (two large
    segments; on pixels a noisy pixel may also get a label of its own):

    >>> seg = swcuts.segment(image, sampler="multigrid", seed=0, steps=2000, n_atoms=20)
    >>> seg.init, seg.graph.n_vertices, int((np.bincount(seg.labels.ravel()) > 300).sum())
    ('atoms', 768, 2)
    """
    refuse_path(image, "segment")
    called = time.perf_counter()
    options = resolve_options(sampler=sampler, atoms=atoms, n_atoms=n_atoms, seed=seed, steps=steps,
                              time_budget=Budget.seconds_of(time_budget), t0=t0, t_final=t_final, init=init,
                              edge_scale=edge_scale, q_max=q_max, bins=bins, a0=a0, a1=a1, a2=a2,
                              kappa=kappa, window_sizes=window_sizes, levels=levels, model=model)
    if posterior_samples is not None or granularity is not None or posterior_model is not None:
        from swcuts.segmentation.granularity import check_segment_samples
        check_segment_samples(posterior_samples, options, granularity, posterior_model)
    budget = Budget.of(time_budget, progress=progress, start=called)
    if work_pixels is not None:
        check_number("work_pixels", work_pixels, integer=True, minimum=1000, what="an integer >= 1000 or None")
    reducible = (options.spec.runs_on == "atoms" and not options.on_pixels and options.init != "atoms"
                 and not options.spec.hierarchical and not posterior_samples)
    with budget.phase("preparing"):
        features, display, work_shape = _prepare(image, channel_axis, options,
                                                 work_pixels if reducible else None)
        options = options.on_image(features)  # the weights for its size, its noise
    if work_shape is not None and budget.timed:
        budget.reserve += CARRY_SECONDS_PER_MEGAPIXEL * display.shape[0] * display.shape[1] / 1e6
    rng = np.random.default_rng(seed)
    # With posterior samples to draw after it, the segmentation samples for half of what is left.
    own = budget.share(0.5) if posterior_samples and budget.timed else budget
    if options.init == "atoms":  # two runs, each on its own posterior
        run = _Run(*multigrid_from_atoms(
            features, n_atoms=options.n_atoms, seed=seed, rng=rng, posterior=options.posterior_params(),
            steps=options.steps, time_budget=own, t0=options.t0,
            t_final=options.t_final, window_sizes=options.window_sizes, progress=progress))
    else:
        posterior = build_posterior(features, options.atoms, options.n_atoms, seed=seed, budget=budget,
                                    **options.posterior_params())
        run = _run_sampler(options, features, posterior, rng, progress, own)
    if work_shape is not None:
        with budget.phase("full size", f"{display.shape[1]}x{display.shape[0]} pixels"):
            run = run._replace(atoms=carry_atoms(run.atoms, display))
    seg = _segmentation(options, run, display)
    seg.work_shape = work_shape
    seg.phase_seconds = dict(budget.phases)
    if posterior_samples:
        from swcuts.segmentation.edge_posterior import sampling_options
        from swcuts.segmentation.posterior import sample_posterior

        # The same atoms and image (whose scale was said above); the posterior per posterior_model.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ImageScaleWarning)
            seg.samples = sample_posterior(
                image, n_samples=posterior_samples, sampler=sampler, seed=seed, atoms=options.atoms,
                n_atoms=n_atoms, channel_axis=channel_axis, progress=progress, time_budget=budget,
                granularity=granularity, **sampling_options(
                    posterior_model, model=model, edge_scale=edge_scale, q_max=q_max, bins=bins, a0=a0,
                    a1=a1, a2=a2, kappa=kappa))
        # The stability map describes this answer's segments (nearest pixel if the samples' image is smaller).
        h, w = seg.samples.atoms.shape
        rows, cols = np.arange(h) * seg.labels.shape[0] // h, np.arange(w) * seg.labels.shape[1] // w
        seg.samples.refer_to(seg.labels[np.ix_(rows, cols)])
    if budget is not time_budget:
        budget.check_end()
    return seg


class _Run(NamedTuple):
    """What a run of :func:`segment` produced, before it is a Segmentation."""

    atoms: np.ndarray
    graph: RegionGraph
    q: object
    model: object
    vertex_labels: np.ndarray
    result: AnnealResult
    levels: list = None


#: An swc run without steps or time_budget: a third of its default steps (under "learned" as 0.5 on
#: val and train-rest, within 0.4 SE, in ~30 % less sampling), stopped once converged
#: (benchmarks/step_budget.py, docs/speed.md), at least 5,000 (65 a vertex left tiny images wrong).
DEFAULT_BUDGET = (0.33, Converged(patience=0.05, below=0.5), 5000)


def _default_budget(steps):
    """segment()'s swc budget from the sampler's default ``steps``: (steps, stop rule)."""
    return max(DEFAULT_BUDGET[2], int(round(DEFAULT_BUDGET[0] * steps))), DEFAULT_BUDGET[1]


#: Seconds per megapixel to carry the atoms back to full size, kept from a timed run's sampling.
CARRY_SECONDS_PER_MEGAPIXEL = 0.12


def _prepare(image, channel_axis, options, work_pixels=None):
    """The image as features and for display (:func:`~swcuts.image.prepare.prepare_image`;
    the features reduced to the working size of ``work_pixels``, if any:
    :func:`~swcuts.image.full_size.working_size`), refused if too large for
    memory or for the attention windows, and the working shape (or None).
    The memory check runs first on the raw shape, before the conversion."""
    hw = _raw_hw(image, channel_axis)
    work = None if hw is None or min(hw) < 2 else working_size(*hw, work_pixels)
    if hw is not None and min(hw) >= 2:
        # At full size (the image, labels and outputs are): what was refused stays refused.
        check_cost(hw, sampler=options.name, atoms=options.atoms, n_atoms=options.n_atoms,
                   bins=options.bins, levels=options.levels)
    if hw is not None and options.window_sizes is not None:
        _check_windows_fit(options.window_sizes, hw)
    if work is None:
        features, display = prepare_image(image, channel_axis=channel_axis)
    else:
        features, display = prepare_working(image, work, channel_axis=channel_axis)
    h, w = features.shape[:2]
    if options.window_sizes is not None:
        _check_windows_fit(options.window_sizes, (h, w))
    check_cost((h, w), sampler=options.name, atoms=options.atoms, n_atoms=options.n_atoms,
               bins=options.bins, levels=options.levels, channels=features.shape[-1])
    return features, display, work


def _run_sampler(options, features, posterior, rng, progress, budget) -> _Run:
    """Anneal ``posterior`` (:func:`build_posterior`'s tuple) with the
    sampler of ``options`` from its start, for its steps or what the run's
    ``budget`` has left."""
    atom_labels, graph, q, model = posterior
    n = graph.n_vertices
    steps, stop = options.steps, None
    if steps is None and options.time_budget is None:  # the default budget (for swc, as measured)
        steps = options.default_steps(n)
        if options.name == "swc":
            steps, stop = _default_budget(steps)
    unit = model_temperature(options.posterior)
    schedule = Schedule(options.t0 * unit, options.t_final * unit)
    stop = stop if stop is None or unit == 1.0 else replace(stop, below=stop.below * unit)
    if options.spec.hierarchical:
        return _run_multilevel(options, features, posterior, schedule, rng, steps, progress, budget)
    if options.init == "uniform":
        init_labels = np.zeros(n, dtype=np.int64)
    else:
        k = max(2, int(round(np.sqrt(n))))
        init_labels = rng.integers(0, min(k, n), size=n)
    state = model.new_state(init_labels)
    kwargs = {"window_sizes": options.window_sizes} if options.window_sizes is not None else {}
    kernel = options.spec.kernel(model, q, **kwargs)
    result = anneal(kernel, state, schedule, rng=rng, steps=steps, time_budget=budget, progress=progress,
                    stop=stop)
    return _Run(atom_labels, graph, q, model, state.partition.compact_labels(), result)


def _run_multilevel(options, features, posterior, schedule, rng, steps, progress, budget) -> _Run:
    """The hierarchical sampler: levels of atoms formed by cluster sampling
    on the pixels of ``posterior``, the segments on the top level."""
    from swcuts.inference.multilevel_anneal import anneal_multilevel

    atom_labels, graph, q, model = posterior
    sampler = options.spec.kernel(model, q, features, window_sizes=options.window_sizes,
                                  n_levels=options.levels, q_max=options.q_max,
                                  edge_scale=options.edge_scale)
    result = anneal_multilevel(sampler, schedule, rng=rng, steps=steps, time_budget=budget, progress=progress)
    levels = [np.asarray(lv) for lv in sampler.best_levels]
    if len(levels) > 1:
        # The atoms of this run are the ones it sampled (level 0): the
        # result describes the segments on them, with their own graph
        # and the same posterior (a union of atoms has the pixel statistics).
        atom_labels = levels[0]
        graph = RegionGraph.from_labels(atom_labels)
        model = ImageModel(features, atom_labels, graph, bins=options.bins, a0=options.a0, a1=options.a1,
                           a2=options.a2, kappa=options.kappa, boundary=options.boundary, window=options.window,
                           evidence=model_evidence(options.posterior), likelihood_weight=options.likelihood_weight,
                           evidence_offset=model_evidence_offset(options.posterior))
    vertex_labels = np.zeros(graph.n_vertices, dtype=np.int64)
    vertex_labels[atom_labels.ravel()] = levels[-1].ravel()
    return _Run(atom_labels, graph, None, model, vertex_labels, result, levels)


def _segmentation(options, run: _Run, display) -> Segmentation:
    """The :class:`Segmentation` of a run."""
    result = run.result
    return Segmentation(
        levels=run.levels, init=options.init, posterior=options.posterior, labels=run.vertex_labels[run.atoms],
        atoms=run.atoms, graph=run.graph, vertex_labels=run.vertex_labels, trace=result.trace,
        energy=result.best_energy, sampler=options.sampler, atom_method=options.atoms, steps=result.steps,
        seconds=result.seconds, accepted=result.accepted, seed=options.seed, image=display,
        edge_probabilities=run.q, model=run.model)
