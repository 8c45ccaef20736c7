"""Annealing driver: run any kernel under a temperature schedule and a budget.

The target is sampled at temperature T as π^(1/T). Barbu & Zhu anneal the
SW-cut kernels from T0 ≤ 15 and the Gibbs sampler from T0 ≥ 100, down to
0.05 (section 5); the schedule here is geometric in the fraction of the
budget (steps or seconds) spent.
"""

from __future__ import annotations

import csv
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from swcuts.inference.budget import Budget, phase_of
from swcuts.models.protocols import is_compiled
from swcuts.samplers.common import seed_compiled_rng

__all__ = ["Schedule", "Trace", "AnnealResult", "Converged", "anneal", "join_results"]

TRACE_COLUMNS = ("step", "seconds", "temperature", "energy", "labels", "accepted")


@dataclass(frozen=True)
class Schedule:
    """Geometric temperature schedule T(f) = t0 (t_final / t0)^f, f in [0, 1].

    Parameters
    ----------
    t0 : float
        Start temperature (> 0).
    t_final : float
        Final temperature, 0 < t_final <= t0.
    """

    t0: float
    t_final: float = 0.05

    def __post_init__(self):
        if not (self.t0 > 0 and self.t_final > 0):
            raise ValueError(f"temperatures must be positive, got t0={self.t0}, t_final={self.t_final}")
        if self.t_final > self.t0:
            raise ValueError(f"t_final ({self.t_final}) must not exceed t0 ({self.t0}); lower --t-final or raise --t0")

    def temperature(self, fraction: float) -> float:
        f = min(max(fraction, 0.0), 1.0)
        return self.t0 * (self.t_final / self.t0) ** f


@dataclass
class Trace:
    """The record of a run: one row every few steps.

    ``energy`` is −log π of the current state; ``accepted`` counts the
    accepted moves since the previous row.
    """

    step: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    temperature: list = field(default_factory=list)
    energy: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    accepted: list = field(default_factory=list)

    def append(self, step, seconds, temperature, energy, labels, accepted):
        self.step.append(int(step))
        self.seconds.append(float(seconds))
        self.temperature.append(float(temperature))
        self.energy.append(float(energy))
        self.labels.append(int(labels))
        self.accepted.append(int(accepted))

    def __len__(self):
        return len(self.step)

    def as_arrays(self) -> dict:
        """Columns as numpy arrays."""
        return {c: np.asarray(getattr(self, c)) for c in TRACE_COLUMNS}

    def write_csv(self, fh) -> None:
        """Write the header ``step,seconds,temperature,energy,labels,accepted`` and the rows."""
        w = csv.writer(fh)
        w.writerow(TRACE_COLUMNS)
        for row in zip(*(getattr(self, c) for c in TRACE_COLUMNS)):
            w.writerow([row[0], f"{row[1]:.6f}", f"{row[2]:.6g}", f"{row[3]:.6f}", row[4], row[5]])


@dataclass(frozen=True)
class Converged:
    """A convergence stop for :func:`anneal`: end the run once the chain is
    cold and its best energy has stopped falling.

    The rule is checked after every chunk of steps, once the temperature
    is at most ``below``: the run ends when the best −log π has not fallen
    by more than ``tol`` during the last ``patience`` of the budget (a
    fraction of the steps, or of the seconds). Under a step budget the
    stopped run is a prefix of the full one (the schedule is that of the
    whole budget), so its result is the full run's best state at the step
    it stopped.

    Parameters
    ----------
    patience : float
        Share of the budget without improvement that ends the run.
    below : float
        The rule applies only at temperatures at most this.
    tol : float
        An improvement of the best energy smaller than this does not count.

    Examples
    --------
    >>> rule = Converged(patience=0.1, below=0.5)
    >>> rule.done(steps_done=900, budget=1000, last_improved=790, temperature=0.3)
    True
    >>> rule.done(steps_done=900, budget=1000, last_improved=810, temperature=0.3)
    False
    >>> rule.done(steps_done=900, budget=1000, last_improved=0, temperature=0.8)
    False
    """

    patience: float = 0.1
    below: float = 0.5
    tol: float = 1e-6

    def __post_init__(self):
        if not (0 < self.patience <= 1 and self.below > 0 and self.tol >= 0):
            raise ValueError(f"Converged needs 0 < patience <= 1, below > 0 and tol >= 0, got {self}")

    def done(self, *, steps_done, budget, last_improved, temperature) -> bool:
        """Whether a run at ``steps_done`` of ``budget`` (steps or seconds),
        whose best energy last fell at ``last_improved``, now at
        ``temperature``, has converged."""
        return temperature <= self.below and steps_done - last_improved >= self.patience * budget


@dataclass
class AnnealResult:
    """Outcome of :func:`anneal`."""

    best_energy: float
    trace: Trace
    steps: int
    seconds: float
    accepted: int
    best_labels: np.ndarray = None


def anneal(kernel, state, schedule: Schedule, *, rng, steps=None, time_budget=None,
           n_records=1000, progress=False, keep_best=True, stop=None) -> AnnealResult:
    """Anneal ``state`` with ``kernel`` and keep the lowest-energy state.

    Parameters
    ----------
    kernel : object with ``step(state, rng, temperature)``
    state : ModelState
        Mutated in place; on return it holds the best state found.
    schedule : Schedule
    rng : numpy.random.Generator
    steps : int, optional
        Budget in kernel steps.
    time_budget : float or Budget, optional
        Budget in seconds of sampling (used when ``steps`` is None). A
        :class:`~swcuts.inference.budget.Budget` (the clock of a whole run) gives the
        sampling what the run has left after compiling the kernel
        (:meth:`~swcuts.inference.budget.Budget.allot`), and records the
        ``compiling`` and ``sampling`` phases; one without seconds, beside
        ``steps``, only records them.
    n_records : int
        Approximate number of trace rows.
    progress : bool
        Show a progress bar (only when stderr is a terminal).
    keep_best : bool
        Leave ``state`` at the best labelling found (annealing); with False
        it stays at the last state of the chain (sampling).
    stop : Converged, optional
        End the run before its budget once it has converged (the result's
        ``steps`` and ``seconds`` say where it stopped); None: run the
        whole budget.
    """
    budget = time_budget if isinstance(time_budget, Budget) else None
    if budget is not None:
        time_budget = budget.seconds
    if steps is None and time_budget is None:
        raise ValueError("give a budget: steps or time_budget")
    if steps is not None and steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps}")
    if steps is None and not time_budget > 0:
        raise ValueError(f"time_budget must be positive, got {time_budget}")
    seed_compiled_rng(rng)
    model = kernel.model
    trace = Trace()
    best_energy = -state.log_pi
    best_labels = state.partition.labels.copy()
    compiled = is_compiled(kernel)
    if compiled:
        # A run of zero steps compiles (or loads) the kernel before the clock starts.
        with phase_of(budget, "compiling"):
            kernel.run(state, rng, np.empty(0), best_labels, -best_energy)
    if budget is not None and steps is None:
        time_budget = budget.allot()  # what the run's earlier phases left
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=steps if steps is not None else round(float(time_budget), 2), unit="step" if steps else "s",
                   desc="sampling", leave=False, dynamic_ncols=True)
    with phase_of(budget, "sampling"):
        start = time.perf_counter()
        trace.append(0, 0.0, schedule.t0, -state.log_pi, state.partition.n_labels, 0)
        log_ratio = math.log(schedule.t_final / schedule.t0)
        accepted_total = 0
        i = 0
        # Steps run in chunks (one compiled call each where the kernel has
        # ``run``); a trace row is written after every chunk.
        if steps is not None:
            chunk = max(1, min(steps // max(n_records, 1), 4096))
        else:
            chunk = 64
        temperature = schedule.t0
        last_improved = 0.0  # step (or second) at which the best energy last fell by more than stop.tol
        improved_from = best_energy
        while True:
            if steps is not None:
                if i >= steps:
                    break
                k = min(chunk, steps - i)
                temps = schedule.t0 * np.exp(log_ratio * (i + np.arange(k)) / steps)
            else:
                elapsed = time.perf_counter() - start
                if elapsed >= time_budget:
                    break
                k = chunk
                temps = np.full(k, schedule.t0 * math.exp(log_ratio * elapsed / time_budget))
            temperature = float(temps[-1])
            if compiled:
                acc, best_seen, _ = kernel.run(state, rng, temps, best_labels, -best_energy)
                if -best_seen < best_energy - 1e-9:
                    best_energy = -best_seen
            else:
                acc = 0
                for t in temps:
                    info = kernel.step(state, rng, float(t))
                    if info.accepted and info.moved:
                        acc += 1
                    # Checked after every step: a composite step (a move plus a
                    # Gibbs sweep) can change the state whatever ``info`` says.
                    if -state.log_pi < best_energy - 1e-9:
                        best_energy = -state.log_pi
                        best_labels[:] = state.partition.labels
            i += k
            accepted_total += acc
            now = time.perf_counter() - start
            trace.append(i, now, temperature, -state.log_pi, state.partition.n_labels, acc)
            if steps is None:
                # Aim at about n_records rows over the budget.
                rate = i / max(now, 1e-9)
                chunk = int(min(max(rate * time_budget / max(n_records, 1), 16), 4096))
            if stop is not None:
                if best_energy < improved_from - stop.tol:
                    improved_from = best_energy
                    last_improved = i if steps is not None else now
                if stop.done(steps_done=i if steps is not None else now,
                             budget=steps if steps is not None else time_budget,
                             last_improved=last_improved, temperature=temperature):
                    break
            if bar is not None:
                bar.n = i if steps is not None else round(min(now, time_budget), 2)
                bar.set_postfix(E=f"{-state.log_pi:.1f}", L=state.partition.n_labels, refresh=False)
                bar.refresh()
        seconds = time.perf_counter() - start
        if bar is not None:
            bar.close()
    if keep_best:
        # Leave the chain at the best state, with exact caches and energy.
        if not np.array_equal(best_labels, state.partition.labels):
            state.__dict__.update(model.new_state(best_labels).__dict__)
        elif getattr(state, "u", None) is not None:  # an NGGP mixture: log π of (labels, u)
            state.log_pi = model.log_target(state.partition.labels, state.u)
        else:
            state.log_pi = model.log_target(state.partition.labels)
        best_energy = -state.log_pi
    else:
        best_energy = -model.log_target(best_labels)
    return AnnealResult(best_energy, trace, i, seconds, accepted_total, best_labels)


def join_results(first, second) -> AnnealResult:
    """One AnnealResult for two runs in a row: the second's steps and
    seconds follow the first's; its first trace row (its start, the first
    run's best state) is left out. ``best_energy`` and ``best_labels`` are
    the second's (it starts from the first's best state and keeps the best)."""
    if first is None:
        return second
    trace = Trace()
    for row in zip(*(getattr(first.trace, c) for c in TRACE_COLUMNS)):
        trace.append(*row)
    for step, sec, temp, energy, labels, acc in list(zip(*(getattr(second.trace, c)
                                                             for c in TRACE_COLUMNS)))[1:]:
        trace.append(first.steps + step, first.seconds + sec, temp, energy, labels, acc)
    return AnnealResult(second.best_energy, trace, first.steps + second.steps,
                        first.seconds + second.seconds, first.accepted + second.accepted,
                        second.best_labels)
