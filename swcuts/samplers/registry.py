"""The sampler registry: one record per sampler of ``segment(sampler=...)``.

A :class:`SamplerSpec` says how to build the sampler (its kernel factory),
how long and how hot it runs by default (start temperature, budget per
atom and per pixel), what it runs on (atoms, pixels, or a hierarchy it
forms itself), what the posterior and the state must offer it (every
vertex's statistics row, a graph) and which options apply to it (attention windows, a start from
SLIC atoms). Every table of :mod:`swcuts.segmentation.options` (``STEPS_PER_ATOM``,
``DEFAULT_T0``, ``PIXEL_SAMPLERS``, ...) and :data:`~swcuts.samplers.KERNELS`
is read off :data:`REGISTRY`, so a new sampler is one record here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from swcuts.image.atoms import DEFAULT_ATOMS
from swcuts.samplers.swc import SWC, SWC1, SWC2, ClusterGibbs

__all__ = ["SamplerSpec", "REGISTRY", "sampler_spec", "find_spec", "RUNS_ON", "LazyKernel", "kernel_class",
           "steps_for", "REFERENCE_SAMPLER"]

#: What a sampler runs on: the atoms of ``segment(atoms=...)``
#: (:data:`~swcuts.image.atoms.DEFAULT_ATOMS` by default), the pixels (by default;
#: it also runs on atoms), or a hierarchy of groupings of the pixels that it
#: forms itself by cluster sampling.
RUNS_ON = ("atoms", "pixels", "hierarchy")


class LazyKernel:
    """A sampler's kernel class, imported on first use (called, or
    :func:`kernel_class`): a run of the default sampler (``swc``) does not
    load the modules of the others (tree-guided, reconfiguration, triadic,
    multiflip, ... with their numba dispatchers: ~0.1 s of every run,
    issue 37).

    Examples
    --------
    >>> kernel_class(LazyKernel("swcuts.samplers.gibbs", "Gibbs")).__name__
    'Gibbs'
    """

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name
        self._cls = None

    def resolve(self):
        """The class (its module imported on the first call)."""
        if self._cls is None:
            import importlib

            self._cls = getattr(importlib.import_module(self.module), self.name)
        return self._cls

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self):
        return f"LazyKernel({self.module}.{self.name})"


def kernel_class(kernel):
    """The kernel factory itself: a :class:`LazyKernel`'s class, any other as it is."""
    return kernel.resolve() if isinstance(kernel, LazyKernel) else kernel


_S = "swcuts.samplers."
Gibbs = LazyKernel(_S + "gibbs", "Gibbs")
Multiflip = LazyKernel(_S + "multiflip", "Multiflip")
Multigrid = LazyKernel(_S + "multigrid", "Multigrid")
SRM = LazyKernel(_S + "reconfiguration.kernel", "SRM")
Reconfiguration = LazyKernel(_S + "reconfiguration.kernel", "Reconfiguration")
RandomSplit = LazyKernel(_S + "split_merge", "RandomSplit")
SplitMerge = LazyKernel(_S + "split_merge", "SplitMerge")
TreeGuided = LazyKernel(_S + "tree_guided.kernel", "TreeGuided")
Triadic = LazyKernel(_S + "triadic.kernel", "Triadic")


def _multilevel(model, q, features, **options):
    """:class:`swcuts.samplers.multilevel.MultiLevel` (imported on first use: it
    builds on the kernels of this package)."""
    from swcuts.samplers.multilevel import MultiLevel

    return MultiLevel(model, q, features, **options)


@dataclass(frozen=True)
class SamplerSpec:
    """What swcuts knows about one sampler.

    Attributes
    ----------
    name : str
        The name users type (``segment(sampler=name)``).
    kernel : callable
        The factory (a :class:`LazyKernel` for samplers other than SW cuts':
        the class imported when first called; :func:`kernel_class`): ``kernel(model, q, **options)`` returns the kernel
        (``step(state, rng, temperature)``, :class:`swcuts.models.protocols.Kernel`);
        for a hierarchical sampler ``kernel(model, q, features, **options)``
        returns the :class:`~swcuts.samplers.multilevel.MultiLevel` driver.
    steps_per_atom : int
        Default budget in steps per vertex, on atoms.
    t0 : float
        Default start temperature of the annealing schedule.
    runs_on : {"atoms", "pixels", "hierarchy"}
        See :data:`RUNS_ON`: "pixels" and "hierarchy" run on the pixels
        when ``atoms`` is not given; "hierarchy" only on the pixels.
    steps_per_pixel, max_pixel_steps : int or None
        Default budget on pixels: steps per pixel, and at most this many
        steps whatever the image size (None: ``steps_per_atom`` per pixel).
    needs_rows : bool
        It reads every vertex's full statistics row (``model.vstats``),
        which a pixel graph makes only on demand (~1.2 KB per pixel).
    needs_graph : bool
        It needs the graph of the atoms (False: it also samples mixture
        data, :func:`swcuts.cluster`).
    windows : bool
        It takes ``window_sizes`` (square attention windows).
    starts_from_atoms : bool
        On pixels it may start from a segmentation of SLIC atoms
        (``init="atoms"``, then its default start).
    aliases : tuple of str
        Other names for it.
    """

    name: str
    kernel: Callable
    steps_per_atom: int
    t0: float = 10.0
    runs_on: str = "atoms"
    steps_per_pixel: Optional[int] = None
    max_pixel_steps: Optional[int] = None
    needs_rows: bool = False
    needs_graph: bool = True
    windows: bool = False
    starts_from_atoms: bool = False
    aliases: tuple = ()

    def __post_init__(self):
        if self.runs_on not in RUNS_ON:
            raise ValueError(f"runs_on must be one of {', '.join(RUNS_ON)}, got {self.runs_on!r}")

    @property
    def hierarchical(self) -> bool:
        """A schedule over a hierarchy of graphs, not a single kernel."""
        return self.runs_on == "hierarchy"

    @property
    def default_atoms(self) -> str:
        """The atom method of a run without ``atoms``."""
        return DEFAULT_ATOMS if self.runs_on == "atoms" else "pixels"

    def default_steps(self, n_vertices: int, *, pixels: bool = False) -> int:
        """The budget of a run without ``steps`` or ``time_budget`` on
        ``n_vertices`` vertices (pixels with ``pixels=True``)."""
        if pixels and self.steps_per_pixel is not None:
            return int(min(self.steps_per_pixel * n_vertices, self.max_pixel_steps))
        return int(self.steps_per_atom * n_vertices)


# Start temperatures: section 5 (SW cuts T0 <= 15, Gibbs T0 >= 100).
#
# Budgets on atoms are steps per atom; reconfiguration and srm count one
# move and one Gibbs sweep as a step.
#
# Budgets on pixels (multigrid, multilevel): steps per pixel, and at most
# ``max_pixel_steps`` whatever the image size. Multigrid from atoms
# (``init="atoms"``) gets these after the atoms' own default (``swc``, 130
# steps per atom, 1-3 s). Measured on six 481x321 photos (skimage.data) on a
# shared 2-core machine, refining SW cuts' result on ~1,000 SLIC atoms: 5,
# 10, 20 steps per pixel lowered −log π by 2.1-5.4 %, 2.4-5.9 %, 2.5-6.1 % at
# ~10, ~20, ~40 s CPU (most photos ~12 µs a step; coins ~27 µs): 10 per pixel
# takes most of the gain for half the time of 20. The cap of 5 M steps (~1
# min at 12 µs; reached at 500,000 pixels, 800x625) keeps a 1-megapixel image
# to a few minutes instead of tens of minutes at a fixed per-pixel rate; pass
# ``steps`` or ``time_budget`` for longer runs. (From one label,
# ``init="uniform"``, a step costs ~50 µs in the larger windows: 10 per pixel
# took 78 s CPU on coffee.) Multilevel (100 steps per pixel before: 15 M
# steps, most of an hour): 4 and 10 steps per pixel took 10-15 s and 21-31 s
# CPU on coffee, astronaut, rocket, camera, with no consistent gain from 10
# (−log π within ±1.1 % of 4's; 4's within −3.7..+0.5 % of swc's default);
# its steps cost ~20 µs, so 4 per pixel and a 2 M cap keep it under a minute.
# (Measured with the multilevel of cde9275: level 0 from SLIC atoms.)
#
# The order of the records is the order of the lists derived from them
# (cluster's MIXTURE_SAMPLERS).
#
# Every sampler's moves include the boundary term of the "contrast"
# posterior (swcuts.models.boundary), and every sampler on atoms the
# fractional window counts of the "window" posterior (multigrid also on
# single-pixel atoms), proved by exact enumeration (the window settings of
# tests/test_enumeration_kernels.py; multilevel keeps "contrast").

#: Every sampler of ``segment(sampler=...)``, one record each.
REGISTRY = (
    SamplerSpec("swc", SWC, 130),
    SamplerSpec("swc1", SWC1, 40),
    SamplerSpec("swc2", SWC2, 100),
    SamplerSpec("cluster-gibbs", ClusterGibbs, 40),
    SamplerSpec("gibbs", Gibbs, 200, t0=100.0, needs_graph=False),
    SamplerSpec("multiflip", Multiflip, 40),
    SamplerSpec("multigrid", Multigrid, 100, runs_on="pixels", steps_per_pixel=10,
                max_pixel_steps=5_000_000, windows=True, starts_from_atoms=True),
    SamplerSpec("split-merge", SplitMerge, 10, needs_rows=True, needs_graph=False),
    SamplerSpec("random-split", RandomSplit, 10, needs_rows=True, needs_graph=False),
    SamplerSpec("triadic", Triadic, 10, needs_rows=True, needs_graph=False),
    SamplerSpec("reconfiguration", Reconfiguration, 1, needs_rows=True, needs_graph=False),
    SamplerSpec("srm", SRM, 1, needs_rows=True, needs_graph=False),
    SamplerSpec("tree-guided", TreeGuided, 10, needs_rows=True, needs_graph=False),
    SamplerSpec("multilevel", _multilevel, 100, runs_on="hierarchy", steps_per_pixel=4,
                max_pixel_steps=2_000_000, windows=True),
)

_BY_NAME = {spec.name: spec for spec in REGISTRY}
_BY_NAME.update({alias: spec for spec in REGISTRY for alias in spec.aliases})


def find_spec(name) -> Optional[SamplerSpec]:
    """The record of sampler ``name`` (or of an alias of it), None if unknown."""
    return _BY_NAME.get(name) if isinstance(name, str) else None


def sampler_spec(name) -> SamplerSpec:
    """The record of sampler ``name`` (or of an alias of it).

    Raises
    ------
    KeyError
        For an unknown name (:func:`swcuts.segmentation.options.check_options` says
        which names there are).
    """
    spec = find_spec(name)
    if spec is None:
        raise KeyError(f"unknown sampler {name!r}")
    return spec


#: The sampler whose steps the step counts of posterior sampling are given
#: in (steps per atom of annealing, pilot, thinning and fits).
REFERENCE_SAMPLER = "swc"


def steps_for(sampler, per_atom, n_atoms) -> int:
    """Steps of ``sampler`` worth ``per_atom`` steps per atom of
    :data:`REFERENCE_SAMPLER`'s on ``n_atoms`` atoms (at least 1).

    The exchange rate is the ratio of the two samplers' default budgets
    (:attr:`SamplerSpec.steps_per_atom`): a step of "srm" (a sweep of
    reconfiguration moves, budget 1 per atom) is worth 130 of "swc" (budget
    130), a step of "gibbs" (one atom, 200) 0.65. A kernel factory or a
    name the registry does not know is taken at par.

    Examples
    --------
    >>> steps_for("swc", 45, 100), steps_for("gibbs", 45, 100), steps_for("srm", 45, 100)
    (4500, 6923, 35)
    """
    spec = find_spec(sampler)
    rate = 1.0 if spec is None else spec.steps_per_atom / sampler_spec(REFERENCE_SAMPLER).steps_per_atom
    return max(1, round(per_atom * n_atoms * rate))
