"""The result of :func:`swcuts.segment`: :class:`Segmentation`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from swcuts import __version__
from swcuts.graph.region_graph import RegionGraph
from swcuts.inference.anneal import Trace

__all__ = ["Segmentation"]


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
    init : str
        The start: ``"atoms"`` (multigrid on pixels from SW cuts on SLIC
        atoms, the trace covering both), ``"uniform"`` or ``"random"``.
    levels : list of (H, W) int arrays or None
        ``multilevel`` only: the label image of every level, level 0 (the
        atoms it formed) first and the segments last; each level's labels
        are unions of the previous level's.
    posterior : str
        The image posterior sampled (``segment(model=...)``, :data:`MODELS`).
    samples : PosteriorSamples or None
        With ``segment(posterior_samples=N)``: N samples at T = 1 of the
        posterior at three granularities (:func:`swcuts.sample_posterior`'s
        default), with the boundary probability and segment stability maps.
    phase_seconds : dict
        Wall seconds of every phase of the run (preparing, atoms, graph,
        edges, model, compiling, sampling, full size; from the CLI also
        reading), by name (:class:`~swcuts.inference.budget.Budget`).
    work_shape : (int, int) or None
        A large image is segmented on a reduced working image of this
        (height, width) (``segment(work_pixels=...)``): ``graph``,
        ``model`` and ``edge_probabilities`` are those of its atoms, and
        ``atoms`` and ``labels`` are at full size, carried back along the
        image's edges (:func:`swcuts.image.full_size.carry_atoms`). None: the
        image was segmented at its own size.

    Examples
    --------
    >>> import numpy as np, swcuts
    >>> image = np.zeros((24, 32)); image[:, 16:] = 1.0
    >>> seg = swcuts.segment(image, seed=0, steps=100, n_atoms=20)
    >>> seg.sampler, seg.steps, seg.n_labels
    ('swc', 100, 2)
    >>> sorted(seg.summary())[:4]
    ['acceptance_rate', 'atoms', 'energy', 'init']
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
    levels: list = field(repr=False, default=None)
    init: str = None
    posterior: str = None
    samples: object = field(repr=False, default=None)
    phase_seconds: dict = field(repr=False, default_factory=dict)
    work_shape: tuple = None

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
            **({"model": self.posterior} if self.posterior is not None else {}),
            "atoms": self.atom_method,
            "n_atoms": int(self.graph.n_vertices),
            "steps": int(self.steps),
            "seconds": round(float(self.seconds), 4),
            "energy": float(self.energy),
            "labels": int(self.n_labels),
            "acceptance_rate": float(self.acceptance_rate),
            **({"init": self.init} if self.init is not None else {}),
            "seed": self.seed if isinstance(self.seed, (int, type(None))) else str(self.seed),
            "version": __version__,
            **({"level_labels": [int(lv.max()) + 1 for lv in self.levels]}
               if self.levels is not None else {}),
            **({"phase_seconds": {k: round(float(v), 3) for k, v in self.phase_seconds.items()}}
               if self.phase_seconds else {}),
            **({"work_shape": [int(v) for v in self.work_shape]} if self.work_shape is not None else {}),
        }
