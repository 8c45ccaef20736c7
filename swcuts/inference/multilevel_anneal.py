"""Multi-level annealing under the one driver, :func:`swcuts.inference.anneal.anneal`.

:class:`MultiLevelKernel` makes a :class:`~swcuts.samplers.multilevel.MultiLevel`
sampler a kernel whose steps are the level steps of section 6.3's rounds;
:func:`anneal_multilevel` anneals it.
"""

from __future__ import annotations

import numbers

import numpy as np

from swcuts.inference.anneal import AnnealResult, anneal
from swcuts.inference.budget import Budget
from swcuts.samplers.multilevel import ATOM_T_MAX, MultiLevel, compact
from swcuts.samplers.common import StepInfo

__all__ = ["MultiLevelKernel", "anneal_multilevel", "TIME_BUDGET_RECORDS"]

#: Most trace rows of :func:`anneal_multilevel` under a time budget.
TIME_BUDGET_RECORDS = 100


def anneal_multilevel(sampler: MultiLevel, schedule, *, rng, steps=None, time_budget=None,
                      n_records=1000, level_steps=None, atom_t_max=ATOM_T_MAX,
                      progress=False) -> AnnealResult:
    """Anneal a :class:`MultiLevel` sampler, visiting the levels in increasing
    order every round (section 6.3).

    Parameters
    ----------
    sampler : MultiLevel
    schedule : Schedule
        Temperatures, applied to every level's conditional.
    rng : numpy.random.Generator
    steps : int, optional
        Budget in kernel steps, summed over the levels.
    time_budget : float or Budget, optional
        Budget in seconds (used when ``steps`` is None); a
        :class:`~swcuts.inference.budget.Budget`: what the whole run has left (see
        :func:`~swcuts.inference.anneal.anneal`).
    n_records : int
        Most trace rows (fewer: about one per round of the levels, at most
        ``TIME_BUDGET_RECORDS`` under a time budget).
    level_steps : sequence of int, optional
        Steps of every level per round (default :meth:`MultiLevel.default_steps`).
    atom_t_max : float
        The levels below the top run at min(T, ``atom_t_max``), the top at
        the schedule's T. Only π_img is optimised; π_s of the atoms is a
        means to it. Flattened by a high T, π_s breaks the atoms into
        fragments that follow no edge of the image (its per-label prior
        a0 is small), and the segments on them stop moving (one run each,
        30 s on coffee from blocks: −log π 0.93e6 capped at 1, 1.00e6
        uncapped). ``np.inf``: one temperature for every level.
    progress : bool
        Show a progress bar (only when stderr is a terminal).

    Returns
    -------
    AnnealResult
        ``best_energy`` = −log π_img of the best segmentation, recomputed on
        the pixel graph; ``best_labels`` its segment of every pixel (flat,
        0..K-1). ``sampler.best_levels`` holds the label images of every
        level there. The sampler is left at its last state.
    """
    seconds = time_budget.seconds if isinstance(time_budget, Budget) else time_budget
    if steps is None and seconds is None:
        raise ValueError("give a budget: steps or time_budget")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, numbers.Integral)
                              or steps < 1):
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if steps is None and not seconds > 0:
        raise ValueError(f"time_budget must be positive, got {time_budget}")
    if not atom_t_max > 0:
        raise ValueError(f"atom_t_max must be positive, got {atom_t_max}")
    if level_steps is not None:
        level_steps = [int(k) for k in level_steps]
        if len(level_steps) != sampler.n_levels or min(level_steps) < 1:
            raise ValueError(f"level_steps needs {sampler.n_levels} positive step counts")
    sampler.best_levels = sampler.levels()
    kernel = MultiLevelKernel(sampler, level_steps=level_steps, atom_t_max=atom_t_max)
    # About a trace row per round at most (as many as rounds fit a step
    # budget; 100 for a time budget): the driver's chunks, one kernel call
    # each with a fixed cost per level visited, are then as long as it makes them.
    if steps is not None:
        per_round = sum(kernel.turn(s) for s in range(sampler.n_levels))
        n_records = max(1, min(n_records, steps // per_round))
    else:
        n_records = min(n_records, TIME_BUDGET_RECORDS)
    result = anneal(kernel, kernel.chain_state(), schedule, rng=rng, steps=steps,
                    time_budget=time_budget, n_records=n_records, progress=progress, keep_best=False)
    kernel.flush_best()
    result.best_labels = compact(result.best_labels)
    result.best_energy = -sampler.model.log_target(result.best_labels)
    return result


class _Segments:
    """The chain state :func:`~swcuts.inference.anneal.anneal` sees: the segments of
    a :class:`MultiLevel` sampler on the pixels, and their log π_img."""

    def __init__(self, sampler):
        self._sampler = sampler
        self.partition = self

    @property
    def log_pi(self) -> float:
        return self._sampler.log_pi

    @property
    def labels(self) -> np.ndarray:
        return self._sampler.segments

    @property
    def n_labels(self) -> int:
        return self._sampler.n_segments


class MultiLevelKernel:
    """A :class:`MultiLevel` sampler as a kernel of :func:`swcuts.inference.anneal.anneal`.

    Its steps are the steps of the levels in the order of section 6.3:
    ``level_steps[0]`` steps of level 0, then of level 1, ..., then level 0
    again; a call of :meth:`run` continues where the previous one stopped.
    The levels below the top run at min(T, ``atom_t_max``).

    Parameters
    ----------
    sampler : MultiLevel
    level_steps : sequence of int, optional
        Steps of every level per round (default :meth:`MultiLevel.default_steps`,
        taken when the level's turn comes).
    atom_t_max : float
        Highest temperature of the levels below the top.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.inference.anneal import Schedule, anneal
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> from swcuts.models import ImageModel
    >>> from swcuts.samplers.multilevel import MultiLevel
    >>> img = np.zeros((12, 16)); img[:, 8:] = 1.0
    >>> img += np.random.default_rng(0).normal(0, 0.05, img.shape)
    >>> atoms = np.arange(img.size).reshape(img.shape)
    >>> model = ImageModel(img, atoms, RegionGraph.from_labels(atoms), bins=8, a0=20, a1=20)
    >>> ml = MultiLevel(model, np.full(model.graph.n_edges, 0.5), img, n_levels=2, atom_a0=5.0)
    >>> kernel = MultiLevelKernel(ml, level_steps=[300, 100])
    >>> res = anneal(kernel, kernel.chain_state(), Schedule(3.0), rng=np.random.default_rng(0),
    ...              steps=4000, keep_best=False)
    >>> len(np.unique(res.best_labels[atoms[:, :8]])), len(np.unique(res.best_labels))
    (1, 2)
    """

    compiled = True

    def __init__(self, sampler, *, level_steps=None, atom_t_max=ATOM_T_MAX):
        self.sampler = sampler
        self.model = sampler.model
        self.level_steps = level_steps
        self.atom_t_max = float(atom_t_max)
        self._s, self._left = 0, None
        self._found = None

    def flush_best(self):
        """Set ``sampler.best_levels`` from the best segments the top found in
        its current turn (the levels below do not move during it)."""
        if self._found is not None:
            self.sampler.best_levels = self.sampler.levels(self._found)
            self._found = None

    def chain_state(self):
        """The state :func:`~swcuts.inference.anneal.anneal` reads: the sampler's
        segments of the pixels (``partition.labels``) and log π_img."""
        return _Segments(self.sampler)

    def turn(self, s) -> int:
        """Steps of level s in its turn."""
        ls = self.level_steps
        return ls[s] if ls is not None else self.sampler.default_steps(s)

    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-np.inf):
        """Run one level step per temperature; ``best_labels`` (segments of
        the pixels) is overwritten by better segmentations. Returns
        (accepted, best log π_img, best_labels)."""
        ml = self.sampler
        if best_labels is None:
            best_labels = ml.segments.copy()
        temperatures = np.asarray(temperatures, dtype=np.float64)
        if temperatures.size == 0:  # compile (or load) every level's kernel
            for lv in ml.hierarchy:
                lv.kernel.run(lv.state, rng, temperatures)
            return 0, best_log_pi, best_labels
        acc, pos = 0, 0
        while pos < temperatures.size:
            if self._left is None:
                self._left = self.turn(self._s)
            k = min(self._left, temperatures.size - pos)
            temps = temperatures[pos:pos + k]
            if self._s < ml.top:
                temps = np.minimum(temps, self.atom_t_max)
            a, best_seen, found = ml.run_level(self._s, rng, temps, best_log_pi)
            acc += a
            pos += k
            if found is not None:
                best_log_pi = best_seen
                best_labels[:] = found
                self._found = found
            self._left -= k
            if self._left == 0:
                if self._s == ml.top:
                    self.flush_best()
                self._s, self._left = (self._s + 1) % ml.n_levels, None
        return acc, best_log_pi, best_labels

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        """One level step at ``temperature``."""
        before = self.sampler.log_pi
        acc = self.run(state, rng, np.array([float(temperature)]))[0]
        return StepInfo(accepted=bool(acc), moved=int(acc), delta=self.sampler.log_pi - before)
