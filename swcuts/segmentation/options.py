"""Options of :func:`swcuts.segment`: their defaults (the named image
posteriors are in :mod:`swcuts.segmentation.image_models`), and their validation and resolution (one place, used by the
API, the command line and the benchmark, which check options before
reading any image; every numeric option by :func:`~swcuts.io.errors.check_number`,
re-exported here). What each sampler needs and gets by default (budget,
start temperature, atoms) is its record in
:data:`swcuts.samplers.registry.REGISTRY`; the tables here are read off it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np

from swcuts.image.atoms import ATOM_METHODS
from swcuts.segmentation.image_models import (
    DEFAULT_MODEL, MODELS, PIXEL_MODEL, default_model_for, model_atom_merge, model_atom_relief, model_bins,
    model_edge_power, model_edges, model_evidence, model_evidence_offset, model_likelihood_weight, model_window,
    posterior_weights, varying_channels)
from swcuts.io.errors import InputTypeError, check_number, describe, is_integer
from swcuts.io.memory import BYTES_PER_PIXEL_VERTEX, BYTES_PER_VERTEX
from swcuts.io.errors import InputError
from swcuts.samplers.registry import REGISTRY, SamplerSpec, find_spec
from swcuts.inference.budget import check_budget
from swcuts.samplers.multigrid import check_window_count

#: Samplers that are not a single kernel but a schedule over a hierarchy of graphs.
HIERARCHICAL = tuple(spec.name for spec in REGISTRY if spec.hierarchical)
#: Sampler names accepted by ``segment(sampler=...)``.
SAMPLERS = tuple(sorted({spec.name for spec in REGISTRY}
                        | {alias for spec in REGISTRY for alias in spec.aliases}))
#: Samplers made for the pixel lattice: with ``atoms=None`` they run on pixels.
PIXEL_SAMPLERS = tuple(spec.name for spec in REGISTRY if spec.default_atoms == "pixels")

#: Defaults of :func:`segment`; see the issue note for what they were tuned on.
DEFAULTS = dict(
    n_atoms=None,
    t_final=0.05,
    edge_scale=1.0,
    q_max=0.95,
    bins=None,
    a0=None,
    a1=None,
    a2=None,
    kappa=1.0,
    levels=2,
)
#: Bounds of options whose cost grows with them: histogram bins (every
#: label's statistics hold channels x bins numbers; an 8-bit channel has
#: 256 levels) and the levels of the multi-level hierarchy.
MAX_BINS = 1024
BINS_WHY = " (an 8-bit channel has 256 levels; more bins only cost memory)"
MAX_LEVELS = 8
#: With ``n_atoms=None``: one atom per this many pixels, within the bounds.
PIXELS_PER_ATOM = 80
ATOM_BOUNDS = (100, 1000)


def default_n_atoms(n_pixels: int) -> int:
    """Number of atoms used when ``n_atoms`` is None."""
    lo, hi = ATOM_BOUNDS
    return int(min(max(round(n_pixels / PIXELS_PER_ATOM), lo), hi))


#: Start temperatures by sampler (section 5: SW-cuts T0 <= 15, Gibbs T0 >= 100).
DEFAULT_T0 = {spec.name: spec.t0 for spec in REGISTRY}
#: The start temperature of the default SW-cut kernel (and of ``init="atoms"``'s first phase).
DEFAULT_T0_SWC = DEFAULT_T0["swc"]
#: Default budget in steps per atom (on atoms other than pixels).
STEPS_PER_ATOM = {spec.name: spec.steps_per_atom for spec in REGISTRY}
#: Default budget of the pixel-scale samplers on pixels (:func:`default_steps`):
#: steps per pixel, and at most ``MAX_PIXEL_STEPS`` whatever the image size
#: (how they were measured: :mod:`swcuts.samplers.registry`).
STEPS_PER_PIXEL = {spec.name: spec.steps_per_pixel for spec in REGISTRY if spec.steps_per_pixel}
MAX_PIXEL_STEPS = {spec.name: spec.max_pixel_steps for spec in REGISTRY if spec.steps_per_pixel}

#: Starts of a run (``init``). "atoms" is pixel-level multigrid only.
INITS = ("atoms", "uniform", "random")
#: ``init="atoms"``: SW cuts (the ``swc`` kernel, its default schedule and
#: budget) on SLIC atoms first, then multigrid on the pixels from their
#: segmentation, from temperature ``ATOMS_INIT_T0`` with windows of side
#: ``ATOMS_INIT_SMALLEST_WINDOW``, 2x that, ... up to the image's longer
#: side: the atoms' result is already annealed, and what is left to do
#: is to move boundaries inside atoms, which small windows do best (on
#: five 481x321 photos, windows from 2 and T0 = 1 beat windows from 8 and
#: T0 in 2..10; benchmarks/pixel_scale.py).
ATOMS_INIT_T0 = 1.0
ATOMS_INIT_SMALLEST_WINDOW = 2
#: ``init="atoms"`` with a ``time_budget``: the share of it the atoms get.
#: (With ``steps``, the steps are split in the proportion of the two
#: phases' default budgets.)
ATOMS_INIT_TIME_SHARE = 0.1


def _sampler_spec(sampler) -> SamplerSpec:
    """The registry record of ``sampler`` (a name or an alias), or the error."""
    if not isinstance(sampler, str):
        raise InputTypeError(f"sampler must be a string, one of {', '.join(SAMPLERS)}; got {describe(sampler)}")
    spec = find_spec(sampler)
    if spec is None:
        raise InputError(f"unknown sampler '{sampler}'; choose one of {', '.join(SAMPLERS)}")
    return spec


def _resolve_sampler(sampler) -> str:
    """The name of ``sampler``'s record (an alias resolved)."""
    return _sampler_spec(sampler).name


def _check_positive_int(name, value, allow_none=True, minimum=1, maximum=None, why=""):
    """An integer >= ``minimum`` (and <= ``maximum``; ``why`` says why the
    bound): :func:`~swcuts.io.errors.check_number`."""
    check_number(name, value, integer=True, allow_none=allow_none, minimum=minimum, maximum=maximum,
                 why=why)


def _check_real(name, value, *, what, allow_none=False, allow_zero=False):
    """A finite real number > 0 (or >= 0 with ``allow_zero``); bools,
    strings and arrays are refused: :func:`~swcuts.io.errors.check_number`."""
    check_number(name, value, allow_none=allow_none, minimum=0, exclusive=not allow_zero, what=what)


def _check_choice(name, value, choices, label):
    if not isinstance(value, str):
        raise InputTypeError(f"{name} must be a string, one of {', '.join(choices)}; got {describe(value)}")
    if value not in choices:
        raise InputError(f"unknown {label} '{value}'; choose one of {', '.join(choices)}")


def default_model(atoms) -> str:
    """The posterior of a run on ``atoms`` without ``model``.

    Examples
    --------
    >>> default_model("slic"), default_model("pixels")
    ('learned', 'contrast')
    """
    return PIXEL_MODEL if atoms == "pixels" else DEFAULT_MODEL


def resolve_model(sampler_name, model, atoms=None):
    """The posterior a run of ``sampler_name`` on ``atoms`` (None: the
    sampler's default atoms) samples: ``model``, or :func:`default_model`
    with None."""
    _sampler_spec(sampler_name)
    atoms = resolve_atoms(sampler_name, atoms)
    if model is None:
        return default_model(atoms)
    _check_choice("model", model, MODELS, "model")
    return model


def common_model(samplers, atoms=None):
    """The posterior several samplers are compared on (one target for
    all): None when every one runs on atoms larger than pixels (each
    image's default on atoms, :func:`default_model_for`: the same for every
    sampler), :data:`PIXEL_MODEL` when one of them runs on pixels.

    ``samplers``: names, or (name, atoms) pairs; ``atoms`` applies to the
    names (None: each sampler's default atoms).

    Examples
    --------
    >>> common_model(["swc", "gibbs"]), common_model(["swc", "multigrid"])
    (None, 'contrast')
    >>> common_model([("swc", "slic"), ("gibbs", "pixels")])
    'contrast'
    """
    runs = [run if isinstance(run, tuple) else (run, atoms) for run in samplers]
    on_pixels = any(resolve_atoms(name, run_atoms) == "pixels" for name, run_atoms in runs)
    return PIXEL_MODEL if on_pixels else None


def _check_seed(seed):
    if seed is None or isinstance(seed, (np.random.Generator, np.random.BitGenerator,
                                         np.random.SeedSequence)):
        return
    if not is_integer(seed):
        raise InputTypeError(f"seed must be None, a non-negative integer or a numpy.random.Generator, "
                        f"got {describe(seed)}")
    check_number("seed", seed, integer=True, minimum=0)


def resolve_atoms(sampler_name, atoms):
    """The atom method a run uses: ``atoms``, or with None ``"pixels"`` for
    the pixel-scale samplers (:data:`PIXEL_SAMPLERS`) and
    :data:`~swcuts.image.atoms.DEFAULT_ATOMS` (``"watershed"``) otherwise."""
    if atoms is None:
        return _sampler_spec(sampler_name).default_atoms
    return atoms


#: Samplers that read every vertex's full statistics row (``model.vstats``),
#: which a pixel graph makes only on demand (~1.2 KB per pixel).
ROW_SAMPLERS = tuple(spec.name for spec in REGISTRY if spec.needs_rows)


def vertex_bytes(sampler_name, atoms) -> int:
    """Memory estimate per graph vertex of a run (see :func:`~swcuts.io.memory.check_memory`)."""
    if atoms == "pixels" and not _sampler_spec(sampler_name).needs_rows:
        return BYTES_PER_PIXEL_VERTEX
    return BYTES_PER_VERTEX


def resolve_init(sampler_name, atoms, init):
    """The start a run uses: ``init``, or with None ``"atoms"`` for
    ``multigrid`` on pixels and ``"uniform"`` otherwise (``atoms`` as
    resolved by :func:`resolve_atoms`)."""
    if init is None:
        return "atoms" if _sampler_spec(sampler_name).starts_from_atoms and atoms == "pixels" else "uniform"
    return init


def _check_window_sizes(window_sizes):
    """None, or a non-empty sequence of positive integers; returns a tuple or None."""
    if window_sizes is None:
        return None
    if is_integer(window_sizes):
        window_sizes = (window_sizes,)
    try:
        sizes = tuple(window_sizes)
    except TypeError:
        raise InputTypeError(f"window_sizes must be a list of integers, got {describe(window_sizes)}") from None
    if not sizes:
        raise InputError("window_sizes must list at least one window side")
    for s in sizes:
        if not is_integer(s):
            raise InputTypeError(f"window sizes must be integers, got {describe(s)}")
        check_number("window sizes", s, integer=True, minimum=1, what="at least 1 pixel")
    return tuple(int(s) for s in sizes)


@dataclass(frozen=True)
class RunOptions:
    """The options of one :func:`~swcuts.segment` run, checked and resolved
    (:func:`resolve_options`): every default that depends on the sampler is
    filled in from its registry record; those that depend on the image
    (``n_atoms``, the posterior's weights) by :meth:`on_image`.

    Attributes
    ----------
    spec : SamplerSpec
        The sampler's record (:mod:`swcuts.samplers.registry`).
    sampler : str
        The sampler as the caller named it (an alias stays an alias).
    atoms, init, posterior : str
        The atom method, the start and the named posterior (:data:`MODELS`).
    t0 : float
        The start temperature.
    window_sizes : tuple of int or None
    a0, a1, boundary : float or None
        The posterior's weights; None (``a0``, ``a1``) or not yet scaled
        (``boundary``) until :meth:`on_image`.
    window : int
        The window radius of the histogram likelihood (:func:`model_window`),
        set by :meth:`on_image`.
    likelihood_weight : float
        ζ of the coarsened likelihood (:func:`model_likelihood_weight`),
        set by :meth:`on_image`; 1: every pixel counts.
    posterior_by_default : bool
        ``model`` was not given on atoms: :meth:`on_image` sets ``posterior``
        for the image's size (:func:`default_model_for`).
    bins : int or None
        The likelihood's bins per channel; None (the model's) until
        :meth:`on_image` (:func:`model_bins`).
    """

    spec: SamplerSpec
    sampler: str
    atoms: str
    n_atoms: object
    seed: object
    steps: object
    time_budget: object
    t0: float
    t_final: float
    init: str
    edge_scale: float
    q_max: float
    bins: object
    a0: object
    a1: object
    a2: float
    kappa: float
    window_sizes: object
    levels: int
    posterior: str
    boundary: object = None
    window: int = 0
    likelihood_weight: float = 1.0
    posterior_by_default: bool = False

    @property
    def name(self) -> str:
        """The sampler's registry name."""
        return self.spec.name

    @property
    def on_pixels(self) -> bool:
        return self.atoms == "pixels"

    def n_vertices(self, h, w) -> int:
        """Vertices of the run's graph on an h x w image (an estimate on atoms)."""
        n_pix = h * w
        if self.on_pixels:
            return n_pix
        return min(self.n_atoms if self.n_atoms is not None else default_n_atoms(n_pix), n_pix)

    def on_image(self, features) -> "RunOptions":
        """These options on an image's (H, W, C) features: ``n_atoms``, the
        posterior's weights ``a0``, ``a1``, ``a2``, ``boundary`` for its
        pixel count and channels (:func:`posterior_weights`), its ``bins``
        for the channels (:func:`model_bins`), and
        ``edge_scale`` times the image's noise factor
        (:func:`swcuts.graph.edge_probabilities.noise_edge_scale`)."""
        from swcuts.graph.edge_probabilities import noise_edge_scale

        h, w = features.shape[:2]
        n_atoms = default_n_atoms(h * w) if self.n_atoms is None else self.n_atoms
        channels = varying_channels(features)
        posterior = default_model_for(h, w) if self.posterior_by_default else self.posterior
        a0, a1, a2, boundary = posterior_weights(posterior, h, w, self.a0, self.a1, self.a2, channels)
        return replace(self, posterior=posterior, n_atoms=n_atoms, a0=a0, a1=a1, a2=a2, boundary=boundary,
                       bins=model_bins(posterior, self.bins, channels),
                       window=model_window(posterior, h, w),
                       likelihood_weight=model_likelihood_weight(posterior, features),
                       edge_scale=self.edge_scale * noise_edge_scale(features))

    def posterior_params(self) -> dict:
        """Keyword arguments of :func:`swcuts.segmentation.build.build_posterior` (after :meth:`on_image`)."""
        return dict(bins=self.bins, a0=self.a0, a1=self.a1, a2=self.a2, kappa=self.kappa,
                    edge_scale=self.edge_scale, q_max=self.q_max, boundary=self.boundary,
                    evidence=model_evidence(self.posterior), window=self.window,
                    likelihood_weight=self.likelihood_weight, edges=model_edges(self.posterior),
                    evidence_offset=model_evidence_offset(self.posterior),
                    edge_power=model_edge_power(self.posterior),
                    atom_relief=model_atom_relief(self.posterior),
                    atom_merge=model_atom_merge(self.posterior))

    def default_steps(self, n_vertices) -> int:
        """The budget without ``steps`` or ``time_budget``, on ``n_vertices``."""
        return self.spec.default_steps(n_vertices, pixels=self.on_pixels)


def resolve_options(*, sampler="swc", atoms=None, n_atoms=DEFAULTS["n_atoms"], seed=None, steps=None,
                    time_budget=None, t0=None, t_final=DEFAULTS["t_final"], init=None,
                    edge_scale=DEFAULTS["edge_scale"], q_max=DEFAULTS["q_max"], bins=DEFAULTS["bins"],
                    a0=DEFAULTS["a0"], a1=DEFAULTS["a1"], a2=DEFAULTS["a2"], kappa=DEFAULTS["kappa"],
                    window_sizes=None, levels=DEFAULTS["levels"], model=None) -> RunOptions:
    """Validate the options of :func:`segment` (everything but the image)
    and resolve their defaults.

    Cheap, so callers (the CLI) can refuse bad options before reading an
    image. The arguments are those of :func:`~swcuts.segment`.

    Returns
    -------
    RunOptions

    Raises
    ------
    ValueError
        (:class:`~swcuts.io.errors.InputError`) for a bad value; the message
        is one line that says what is wrong.
    TypeError
        For an argument of the wrong type.
    """
    spec = _sampler_spec(sampler)
    name = spec.name
    atoms = resolve_atoms(name, atoms)
    _check_choice("atoms", atoms, ATOM_METHODS, "atoms")
    if spec.hierarchical and atoms != "pixels":
        raise InputError(f"sampler '{name}' forms its own atoms by cluster sampling on pixels; "
                         f"use atoms='pixels' (the default for it), not '{atoms}'")
    window_sizes = _check_window_sizes(window_sizes)
    if window_sizes is not None and not spec.windows:
        windowed = " and ".join(s.name for s in REGISTRY if s.windows)
        raise InputError(f"window_sizes is an option of the {windowed} samplers, not of '{name}'")
    _check_positive_int("levels", levels, allow_none=False, maximum=MAX_LEVELS,
                        why=" (each level merges the one below; more levels hold nothing new)")
    _check_positive_int("n_atoms", n_atoms)
    _check_seed(seed)
    posterior = resolve_model(name, model, atoms)
    _check_positive_int("steps", steps)
    _check_real("time_budget", time_budget, what="a positive number of seconds", allow_none=True)
    if steps is not None and time_budget is not None:
        raise InputError("give either steps or time_budget, not both")
    if init is not None:
        _check_choice("init", init, INITS, "init")
    init = resolve_init(name, atoms, init)
    if MODELS[posterior].get("window") and atoms == "pixels":
        raise InputError(f"model '{posterior}' counts each pixel through the window around it and "
                         f"needs atoms larger than pixels; sampler '{name}' runs on pixels here "
                         f"(use atoms='watershed' or model='contrast')")
    if init == "atoms" and not (spec.starts_from_atoms and atoms == "pixels"):
        raise InputError(f"init='atoms' starts multigrid on pixels from a segmentation of SLIC atoms; "
                         f"it needs sampler='multigrid' with atoms='pixels', not sampler '{name}' "
                         f"on atoms '{atoms}'; use init='uniform' or 'random'")
    if init == "random" and spec.hierarchical:
        raise InputError(f"sampler '{name}' starts from blocks of pixels under one segment; "
                         f"init='random' does not apply to it (use init='uniform', the default)")
    _check_real("t0", t0, what="a positive temperature", allow_none=True)
    _check_real("t_final", t_final, what="a positive temperature")
    if t0 is None:
        t0 = ATOMS_INIT_T0 if init == "atoms" else spec.t0
    if t_final > t0:
        raise InputError(f"t_final ({t_final}) must not exceed t0 ({t0}); lower t_final or raise t0")
    _check_real("edge_scale", edge_scale, what="a positive number")
    _check_real("q_max", q_max, what="a number in (0, 1)")
    if not q_max < 1:
        raise InputError(f"q_max must be a number in (0, 1), got {q_max}")
    _check_positive_int("bins", bins, allow_none=True, minimum=2, maximum=MAX_BINS, why=BINS_WHY)
    for nm, val in (("a0", a0), ("a1", a1), ("a2", a2)):
        _check_real(nm, val, what="a non-negative number", allow_none=True, allow_zero=True)
    _check_real("kappa", kappa, what="a non-negative number", allow_zero=True)
    # What the options cost (see below); prior weights are not bounded: an
    # extreme one (a0=1e308) gives results and a warning for the plot.
    check_budget(steps, time_budget)
    check_window_count(window_sizes)
    return RunOptions(spec=spec, sampler=sampler, atoms=atoms, n_atoms=n_atoms, seed=seed, steps=steps,
                      time_budget=time_budget, t0=float(t0), t_final=t_final, init=init,
                      edge_scale=edge_scale, q_max=q_max, bins=bins, a0=a0, a1=a1, a2=a2, kappa=kappa,
                      window_sizes=window_sizes, levels=levels, posterior=posterior,
                      posterior_by_default=model is None and posterior == DEFAULT_MODEL)


def check_options(**options):
    """Validate the options of :func:`segment` (everything but the image).

    :func:`resolve_options`, returning only ``(kernel name, t0)``: it takes
    the same keyword arguments and raises the same errors.
    """
    resolved = resolve_options(**options)
    return resolved.name, resolved.t0


def _raw_hw(image, channel_axis):
    """(H, W) of an image from its shape alone, or None to leave it to prepare_image."""
    shape = getattr(image, "shape", None)
    try:
        shape = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        return None
    if len(shape) == 2:
        return shape
    if (len(shape) == 3 and isinstance(channel_axis, numbers.Integral)
            and not isinstance(channel_axis, bool) and -3 <= channel_axis <= 2):
        return tuple(s for i, s in enumerate(shape) if i != channel_axis % 3)
    return None


def _check_windows_fit(window_sizes, hw):
    h, w = (int(t) for t in hw)
    big = max(window_sizes)
    if big > max(h, w):
        raise InputError(f"window of {big} pixels is larger than the {h}x{w} image; "
                         f"use window sizes up to {max(h, w)}")


def default_steps(sampler_name, n_vertices, *, pixels=False) -> int:
    """The budget in steps of a run without ``steps`` or ``time_budget``:
    :data:`STEPS_PER_ATOM` per vertex, or on pixels (``pixels=True``) for
    the pixel-scale samplers :data:`STEPS_PER_PIXEL` per pixel, at most
    :data:`MAX_PIXEL_STEPS`."""
    return _sampler_spec(sampler_name).default_steps(n_vertices, pixels=pixels)

