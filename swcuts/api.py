"""The segmentation API: ``swcuts.segment(image, ...) -> Segmentation``."""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from . import __version__
from .anneal import Schedule, Trace, anneal
from .atoms import ATOM_METHODS, compute_atoms
from .edges import kl_edge_probabilities, vertex_histograms
from .graph import RegionGraph
from .imageio import InputError, check_memory, prepare_image
from .models.image import ImageModel
from .samplers import ALIASES, KERNELS

__all__ = ["segment", "Segmentation", "SAMPLERS", "DEFAULTS"]

#: Sampler names accepted by ``segment(sampler=...)``.
SAMPLERS = tuple(sorted(set(KERNELS) | set(ALIASES)))

#: Defaults of :func:`segment`; see the issue note for what they were tuned on.
DEFAULTS = dict(
    n_atoms=600,
    t_final=0.05,
    edge_scale=1.0,
    q_max=0.95,
    bins=32,
    a0=50.0,
    a1=50.0,
    a2=1.0,
    kappa=1.0,
)
#: Start temperatures (section 5: SW-cuts T0 <= 15, Gibbs T0 >= 100).
DEFAULT_T0 = {"gibbs": 100.0}
DEFAULT_T0_SWC = 10.0
#: Default budget in steps per atom.
STEPS_PER_ATOM = {"swc1": 40, "swc2": 100, "cluster-gibbs": 40, "gibbs": 200}


@dataclass
class Segmentation:
    """Result of :func:`segment`.

    Attributes
    ----------
    labels : (H, W) int array
        Segment of every pixel, 0..K-1.
    atoms : (H, W) int array
        Atom of every pixel, 0..N-1.
    graph : RegionGraph
        Adjacency graph of the atoms.
    vertex_labels : (N,) int array
        Segment of every atom.
    trace : Trace
        Record of the annealing run.
    energy : float
        −log π of the result (unnormalised).
    """

    labels: np.ndarray
    atoms: np.ndarray
    graph: RegionGraph
    vertex_labels: np.ndarray
    trace: Trace
    energy: float
    sampler: str
    atom_method: str
    steps: int
    seconds: float
    accepted: int
    seed: object
    image: np.ndarray = field(repr=False, default=None)
    edge_probabilities: np.ndarray = field(repr=False, default=None)
    model: object = field(repr=False, default=None)

    @property
    def n_labels(self) -> int:
        """Number of segments K."""
        return int(self.vertex_labels.max()) + 1

    @property
    def acceptance_rate(self) -> float:
        """Accepted moves per step."""
        return self.accepted / self.steps if self.steps else 0.0

    def summary(self) -> dict:
        """The fields of ``summary.json``."""
        return {
            "sampler": self.sampler,
            "atoms": self.atom_method,
            "n_atoms": int(self.graph.n_vertices),
            "steps": int(self.steps),
            "seconds": round(float(self.seconds), 4),
            "energy": float(self.energy),
            "labels": int(self.n_labels),
            "acceptance_rate": float(self.acceptance_rate),
            "seed": self.seed if isinstance(self.seed, (int, type(None))) else str(self.seed),
            "version": __version__,
        }


def _resolve_sampler(sampler) -> str:
    if not isinstance(sampler, str):
        raise TypeError(f"sampler must be a string, one of {', '.join(SAMPLERS)}")
    name = ALIASES.get(sampler, sampler)
    if name not in KERNELS:
        raise InputError(f"unknown sampler '{sampler}'; choose one of {', '.join(SAMPLERS)}")
    return name


def _check_positive_int(name, value, allow_none=True):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise InputError(f"{name} must be a positive integer, got {value}")


def _check_options(sampler, atoms, n_atoms, steps, time_budget, t0, t_final, init):
    name = _resolve_sampler(sampler)
    if atoms not in ATOM_METHODS:
        raise InputError(f"unknown atoms '{atoms}'; choose one of {', '.join(ATOM_METHODS)}")
    _check_positive_int("n_atoms", n_atoms, allow_none=False)
    _check_positive_int("steps", steps)
    if steps is not None and time_budget is not None:
        raise InputError("give either steps or time_budget, not both")
    if time_budget is not None and not (isinstance(time_budget, numbers.Real) and np.isfinite(time_budget)
                                        and time_budget > 0):
        raise InputError(f"time_budget must be a positive number of seconds, got {time_budget}")
    for nm, val in (("t0", t0), ("t_final", t_final)):
        if val is not None and not (isinstance(val, numbers.Real) and np.isfinite(val) and val > 0):
            raise InputError(f"{nm} must be a positive temperature, got {val}")
    t0 = t0 if t0 is not None else DEFAULT_T0.get(name, DEFAULT_T0_SWC)
    if t_final > t0:
        raise InputError(f"t_final ({t_final}) must not exceed t0 ({t0}); lower t_final or raise t0")
    if init not in ("uniform", "random"):
        raise InputError(f"unknown init '{init}'; choose 'uniform' or 'random'")
    return name, float(t0)


def segment(image, *, sampler="swc", atoms="slic", n_atoms=DEFAULTS["n_atoms"], seed=None,
            steps=None, time_budget=None, t0=None, t_final=DEFAULTS["t_final"], init="uniform",
            channel_axis=-1, edge_scale=DEFAULTS["edge_scale"], q_max=DEFAULTS["q_max"],
            bins=DEFAULTS["bins"], a0=DEFAULTS["a0"], a1=DEFAULTS["a1"], a2=DEFAULTS["a2"],
            kappa=DEFAULTS["kappa"], progress=False) -> Segmentation:
    """Segment an image by annealing its posterior with a partition sampler.

    Parameters
    ----------
    image : (H, W) or (H, W, C) array
        Grey, grey+alpha, RGB or RGBA image of any integer or float dtype.
    sampler : str
        One of :data:`SAMPLERS`; ``"swc"`` is the default SW-cut kernel (SWC-2).
    atoms : str
        Over-segmentation method: ``slic``, ``felzenszwalb``, ``watershed``,
        ``edges`` or ``pixels``.
    n_atoms : int
        Approximate number of atoms.
    seed : int or numpy.random.Generator, optional
        The same seed gives the same result.
    steps : int, optional
        Budget in kernel steps (default: a sampler-specific number per atom).
    time_budget : float, optional
        Budget in seconds of sampling, instead of ``steps``.
    t0, t_final : float
        Start and final temperature of the geometric schedule (default t0:
        10 for SW-cut kernels, 100 for Gibbs).
    init : {"uniform", "random"}
        Start from one label, or from a random labelling of the atoms.
    channel_axis : int or None
        Axis of the channels, as in scikit-image.
    edge_scale, q_max : float
        Scale of the KL divergence in the edge probabilities (eq. 53), and
        the ceiling of q that keeps every partition reachable.
    bins, a0, a1, a2, kappa : float
        Posterior parameters: likelihood histogram bins, prior weights of
        eq. 59 and the weight of the complexity prior.
    progress : bool
        Show a progress bar on a terminal.

    Returns
    -------
    Segmentation

    Raises
    ------
    ValueError
        For a bad image or bad options (the message says how to fix it).
    TypeError
        For arguments of the wrong type.
    """
    name, t0 = _check_options(sampler, atoms, n_atoms, steps, time_budget, t0, t_final, init)
    if not (np.isfinite(edge_scale) and edge_scale > 0):
        raise InputError(f"edge_scale must be positive, got {edge_scale}")
    if not 0 < q_max < 1:
        raise InputError(f"q_max must lie in (0, 1), got {q_max}")
    features, display = prepare_image(image, channel_axis=channel_axis)
    h, w = features.shape[:2]
    n_vertices = h * w if atoms == "pixels" else min(n_atoms, h * w)
    check_memory((h, w), n_vertices)
    rng = np.random.default_rng(seed)

    atom_labels = compute_atoms(features, atoms, n_atoms, seed=seed)
    graph = RegionGraph.from_labels(atom_labels)
    hist = vertex_histograms(features, atom_labels, graph.n_vertices, bins=15)
    q = np.minimum(kl_edge_probabilities(hist, graph.edges, scale=edge_scale), q_max)
    model = ImageModel(features, atom_labels, graph, bins=bins, a0=a0, a1=a1, a2=a2, kappa=kappa)
    n = graph.n_vertices
    if init == "uniform":
        init_labels = np.zeros(n, dtype=np.int64)
    else:
        k = max(2, int(round(np.sqrt(n))))
        init_labels = rng.integers(0, min(k, n), size=n)
    state = model.new_state(init_labels)
    kernel = KERNELS[name](model, q)
    if steps is None and time_budget is None:
        steps = STEPS_PER_ATOM[name] * n
    result = anneal(kernel, state, Schedule(t0, t_final), rng=rng, steps=steps,
                    time_budget=time_budget, progress=progress)
    vertex_labels = state.partition.compact_labels()
    return Segmentation(
        labels=vertex_labels[atom_labels],
        atoms=atom_labels,
        graph=graph,
        vertex_labels=vertex_labels,
        trace=result.trace,
        energy=result.best_energy,
        sampler=sampler,
        atom_method=atoms,
        steps=result.steps,
        seconds=result.seconds,
        accepted=result.accepted,
        seed=seed,
        image=display,
        edge_probabilities=q,
        model=model,
    )
