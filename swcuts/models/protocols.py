"""The interfaces between posteriors, kernels and the annealing driver.

A *model* is a posterior over partitions of ``n_vertices`` items: it makes
chain states and scores moves (:class:`Model`). A *kernel* is a Markov
kernel that leaves π^(1/T) invariant: one ``step`` at a time
(:class:`Kernel`), or whole runs of steps in compiled code
(:class:`CompiledKernel`). :func:`swcuts.inference.anneal.anneal` drives any kernel;
:mod:`swcuts.samplers.registry` says which kernel each sampler name builds.

Kernels ask a model what it offers through the attributes of
:class:`Model` rather than by its class: ``graph`` (None for mixture
data), ``boundary`` (the weight of the "contrast" posterior's boundary
term), ``compiled`` (its arithmetic exists as compiled functions,
:mod:`swcuts.models.image_kernels`), ``compiled_likelihood`` (its
per-label arrays for compiled kernels, ``kernel_arrays``),
``cluster_score()`` (the score of a set as one cluster). Drivers ask
:func:`is_compiled` whether a kernel runs compiled. A kernel keeps
its scratch space in the state (:meth:`swcuts.models.base.ModelState.workspace`)
or in itself, never in attributes it sets on the model or the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Protocol, Tuple, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # annotations only: this module imports nothing of swcuts
    from swcuts.models.base import ModelState
    from swcuts.samplers.common import StepInfo

__all__ = ["Model", "Kernel", "CompiledKernel", "is_compiled"]


@runtime_checkable
class Model(Protocol):
    """A posterior π over partitions of ``n_vertices`` items.

    Attributes
    ----------
    n_vertices : int
        Number of items (graph vertices: atoms or pixels).
    graph : RegionGraph or None
        The adjacency graph of the items (absent or None for mixture data).
    boundary : float
        Optional. Weight λ of the boundary term (0 or absent: none); every
        kernel's Δ log π includes it.
    compiled : bool
        Optional. True when kernels may run the model's compiled arithmetic.
    compiled_likelihood : bool
        Optional. True when the model offers ``kernel_arrays(state)`` for
        compiled mixture kernels.
    vstats : (n_vertices, D) float array
        Optional. Per-item sufficient statistics, summed over a set to
        score it (tree-guided kernels).

    Notes
    -----
    Optional method ``cluster_score() -> (params, score)``: the log
    potential of an item set taken as one cluster, from its summed
    ``vstats`` and size, for kernels that score sets before they are labels
    (tree-guided). ``score`` is None when ``params`` is the parameter
    vector of the compiled score (``params[0]``: ``SCORE_IMAGE`` or
    ``SCORE_MIXTURE`` of :mod:`swcuts.models.base`), else a Python callable
    ``score(stats, n, params) -> float``.

    Optional method ``delta_regroup(state, labels, stats, counts) -> float``:
    the exact Δ log π when the items of the whole labels ``labels`` become
    labels with the summed ``stats`` (rows) and sizes ``counts``, without
    their items (a model whose π depends on the labels only through their
    statistics and sizes, e.g. the mixtures); tree-guided kernels then
    price a split or merge without touching the state.
    """

    n_vertices: int

    def new_state(self, labels) -> ModelState:
        """A chain state for ``labels`` (one label per item).

        Parameters
        ----------
        labels : (n_vertices,) int array
            Any non-negative labels below ``n_vertices``.

        Returns
        -------
        ModelState
            With its caches and ``log_pi`` exact.
        """

    def log_target(self, labels) -> float:
        """log π of a labelling, unnormalised, computed from scratch.

        Parameters
        ----------
        labels : (n_vertices,) int array

        Returns
        -------
        float
        """

    def delta(self, state: ModelState, R, new_label: int) -> float:
        """Change of log π when the items ``R`` get ``new_label``.

        Parameters
        ----------
        state : ModelState
            Not modified.
        R : int array
            Items to relabel.
        new_label : int
            An existing label or an unused slot (a new label).

        Returns
        -------
        float
            log π(X') − log π(X).
        """

    def apply(self, state: ModelState, R, new_label: int, delta: float) -> None:
        """Relabel ``R`` to ``new_label`` and update the state's caches.

        Parameters
        ----------
        state : ModelState
            Changed in place; ``state.log_pi`` grows by ``delta``.
        R : int array
        new_label : int
        delta : float
            What :meth:`delta` returned for this move.
        """


@runtime_checkable
class Kernel(Protocol):
    """A Markov kernel on the states of ``model`` that leaves π^(1/T) invariant.

    Attributes
    ----------
    model : Model
        The posterior it samples.
    """

    model: Model

    def step(self, state: ModelState, rng: np.random.Generator, temperature: float = 1.0) -> StepInfo:
        """One step at ``temperature``, in place.

        Parameters
        ----------
        state : ModelState
            A state of ``model``; changed in place.
        rng : numpy.random.Generator
            The random draws of the step (compiled kernels draw from the
            compiled generator, seeded by :func:`~swcuts.samplers.seed_compiled_rng`).
        temperature : float
            T > 0: the step leaves π^(1/T) invariant.

        Returns
        -------
        StepInfo
            Whether it moved, and by how much log π changed.
        """


@runtime_checkable
class CompiledKernel(Kernel, Protocol):
    """A kernel that runs many steps in one compiled call.

    Attributes
    ----------
    compiled : bool
        True when :meth:`run` may be used (the model has a compiled path
        and the kernel was not asked to avoid it).
    """

    compiled: bool

    def run(self, state: ModelState, rng: np.random.Generator, temperatures,
            best_labels: Optional[np.ndarray] = None,
            best_log_pi: float = -np.inf) -> Tuple[int, float, np.ndarray]:
        """One step per temperature, in compiled code.

        Parameters
        ----------
        state : ModelState
            Changed in place.
        rng : numpy.random.Generator
            Unused by the compiled steps (they draw from the compiled generator).
        temperatures : (n,) float array
            The temperature of each step.
        best_labels : int array, optional
            Overwritten by states better than both ``best_log_pi`` and the
            state at the start (default: a copy of the state's labels).
        best_log_pi : float
            log π of ``best_labels``.

        Returns
        -------
        (accepted, best log π, best labels)
        """


def is_compiled(kernel) -> bool:
    """Whether a driver may run ``kernel`` through its compiled :meth:`~CompiledKernel.run`.

    True when the kernel has a ``run`` method and its ``compiled`` flag is
    set. ``isinstance(kernel, CompiledKernel)`` cannot say this: it checks
    that the attribute exists, not that it is True (a kernel whose model
    has no compiled arithmetic keeps ``run`` but sets ``compiled = False``).

    Parameters
    ----------
    kernel : Kernel

    Returns
    -------
    bool

    Examples
    --------
    >>> from swcuts.models.protocols import is_compiled
    >>> class Python:
    ...     compiled = False
    ...     def step(self, state, rng, temperature=1.0): ...
    >>> class Fast(Python):
    ...     compiled = True
    ...     def run(self, state, rng, temperatures, best_labels=None, best_log_pi=float("-inf")): ...
    >>> is_compiled(Python()), is_compiled(Fast())
    (False, True)
    """
    return bool(getattr(kernel, "compiled", False)) and callable(getattr(kernel, "run", None))
