"""The wall-time budget of a run, and the progress of its phases.

A run of swcuts goes through phases: ``reading`` the image (the CLI),
``preparing`` it, the ``atoms``, their ``graph``, the ``edges``
(probabilities q_ij), the ``model`` (the posterior's statistics),
``compiling`` (loading) the kernel, ``sampling`` and ``writing`` the
outputs (the CLI). A :class:`Budget` is made when the run starts (on the
CLI: when the process starts, :func:`mark_process_start`) and passed
down; every phase runs under :meth:`Budget.phase`, which records its
seconds and, on a terminal, names it on stderr.

``time_budget`` means the wall time of the whole run: the sampler gets
what is left of it when sampling starts (:meth:`Budget.allot`), less a
reserve for what comes after (writing the outputs, estimated), and never
less than :data:`MIN_SAMPLING_SHARE` of the budget, so that a result
exists; when the phases before sampling leave less than that, a
:class:`BudgetWarning` says so in one line.

Examples
--------
>>> now = [0.0]  # a fake clock
>>> budget = Budget(10, clock=lambda: now[0])
>>> with budget.phase("atoms"):
...     now[0] += 3.0
>>> budget.phases, budget.allot()
({'atoms': 3.0}, 7.0)
"""

from __future__ import annotations

import copy
import math
import numbers
import sys
import time
import warnings
from contextlib import contextmanager, nullcontext

from swcuts.io.errors import InputError
from swcuts.io.memory import _memory_limit, _size

__all__ = ["Budget", "BudgetWarning", "check_budget", "MAX_TIME_BUDGET", "phase_of", "write_reserve", "MIN_SAMPLING_SHARE", "WRITE_SECONDS",
           "WRITE_SECONDS_PER_MEGAPIXEL",
           "PHASE_LINE_SECONDS", "OVERRUN", "mark_process_start", "process_start"]

#: The least share of a time budget the sampler gets, however long the
#: phases before it took (then the run takes longer than the budget).
MIN_SAMPLING_SHARE = 0.1
#: Estimated seconds to render and write the outputs of ``swcuts segment``,
#: kept from the sampler's share: a fixed part (the PNGs of a small photo
#: and the energy plot, drawn with Pillow in ~0.01 s since matplotlib is no
#: longer loaded for it, then the process's exit after the last line with
#: numba loaded: 0.44-0.54 s in all from the sampler's end to the exit of
#: ``swcuts segment`` on the 200x133 sample photo with ``--time-budget 3``,
#: load 7 on 2 cores, issue 37; 0.7 s before, when matplotlib took 0.3 s
#: of it) and a part per megapixel (1.4 s for a 4000x2667 photo since the
#: overlays are drawn with OpenCV and the PNGs encoded at zlib level 1 in
#: threads, against 10 s before; 2 cores shared, benchmarks/phases.py).
WRITE_SECONDS = 0.5
WRITE_SECONDS_PER_MEGAPIXEL = 0.2
#: The same for ``swcuts compare``: a fixed part (two plots and the page,
#: 0.6 s after the last sampler on a 200x133 photo, then the exit) and per
#: sampler and megapixel (its overlay in compare.html).
COMPARE_WRITE_SECONDS = 1.0
COMPARE_WRITE_SECONDS_PER_MEGAPIXEL = 0.1
#: A phase that took at least this long leaves a line on the terminal.
PHASE_LINE_SECONDS = 2.0
#: A run longer than this times its budget (and not already explained by
#: the sampler's minimum) is reported by :meth:`Budget.check_end`.
OVERRUN = 1.2

_PROCESS_START = [None]
#: Length of the status line now on the terminal (one stderr for every budget).
_STATUS = [0]


class BudgetWarning(UserWarning):
    """The phases before sampling took (nearly) all of the time budget."""


def mark_process_start(when=None) -> None:
    """Record the start of the process (:mod:`swcuts.cli` does, first
    thing), from which the CLI counts ``--time-budget``; None forgets it."""
    _PROCESS_START[0] = when


def process_start():
    """The :func:`time.perf_counter` time :func:`mark_process_start`
    recorded, else now."""
    return time.perf_counter() if _PROCESS_START[0] is None else _PROCESS_START[0]


def write_reserve(hw, *, compare=0) -> float:
    """Estimated seconds to render and write the outputs of an image of
    ``hw`` = (height, width) pixels: of ``swcuts segment`` (or ``motion``),
    or with ``compare`` samplers of ``swcuts compare``.

    >>> round(write_reserve((3000, 4000)), 2)
    2.9
    """
    megapixels = int(hw[0]) * int(hw[1]) / 1e6
    if compare:
        return COMPARE_WRITE_SECONDS + COMPARE_WRITE_SECONDS_PER_MEGAPIXEL * megapixels * compare
    return WRITE_SECONDS + WRITE_SECONDS_PER_MEGAPIXEL * megapixels


def phase_of(budget, name, detail=""):
    """``budget.phase(name, detail)``, or a context that does nothing for no budget."""
    return nullcontext() if budget is None else budget.phase(name, detail)


class Budget:
    """The clock of one run: its start, its phases and its time budget.

    Parameters
    ----------
    seconds : float, optional
        Wall seconds for the whole run, from ``start`` to the result; None:
        the run has a budget in steps, and the Budget only records and
        shows the phases.
    start : float, optional
        When the run started, on ``clock`` (default: now); the time since,
        if any, is the phase ``starting``.
    progress : bool
        Name every phase on stderr while it runs, when stderr is a terminal.
    reserve : float
        Seconds kept for the work after sampling (writing the outputs).
    clock : callable
        Seconds, as :func:`time.perf_counter` (the default); tests pass a fake.

    Attributes
    ----------
    phases : dict
        Seconds of every phase so far, by name, in order of first start.
    warned : list of str
        The budget warnings given.
    """

    def __init__(self, seconds=None, *, start=None, progress=False, reserve=0.0, clock=time.perf_counter):
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, numbers.Real)
                                    or not (math.isfinite(seconds) and seconds > 0)):
            raise ValueError(f"time_budget must be a positive number of seconds, got {seconds!r}")
        self.seconds = None if seconds is None else float(seconds)
        self.clock = clock
        self.start = clock() if start is None else float(start)
        self.progress = bool(progress)
        self.reserve = float(reserve)
        self.fraction = 1.0
        self.phases = {}
        self.warned = []
        self.part = False  # a child's: part of a larger budget
        if clock() - self.start >= 0.05:  # a run that started before (the CLI: imports, options)
            self.phases["starting"] = clock() - self.start

    @classmethod
    def of(cls, time_budget=None, *, progress=False, start=None) -> "Budget":
        """``time_budget`` itself if it is a Budget, else a new one of
        ``time_budget`` seconds (or None) from ``start`` (default now)."""
        if isinstance(time_budget, Budget):
            return time_budget
        return cls(time_budget, progress=progress, start=start)

    @staticmethod
    def seconds_of(time_budget):
        """The seconds of ``time_budget``, a Budget or a number (or None),
        for the checks of the options."""
        return time_budget.seconds if isinstance(time_budget, Budget) else time_budget

    @property
    def timed(self) -> bool:
        """Whether the run has a time budget (not steps)."""
        return self.seconds is not None

    def __repr__(self):
        return (f"Budget(seconds={self.seconds}, elapsed={self.elapsed():.3f}, reserve={self.reserve:g}, "
                f"fraction={self.fraction:g})")

    def elapsed(self) -> float:
        """Seconds since the start of the run."""
        return self.clock() - self.start

    def left(self) -> float:
        """Seconds left for sampling now: the budget less the time elapsed
        and the reserve (negative when they exceed it)."""
        return self.seconds - self.elapsed() - self.reserve

    @property
    def minimum(self) -> float:
        """The least sampling time of this share of the budget:
        :data:`MIN_SAMPLING_SHARE` of it."""
        return MIN_SAMPLING_SHARE * self.seconds * self.fraction

    def share(self, fraction) -> "Budget":
        """The same run and clock, of which :meth:`allot` gives ``fraction``
        (e.g. the first of two sampling phases)."""
        view = copy.copy(self)
        view.fraction = self.fraction * float(fraction)
        return view

    def child(self, fraction=1.0, *, progress=None) -> "Budget":
        """A Budget of its own for part of the run that starts now (one of
        several runs in a row): ``fraction`` of what is left, as
        :meth:`allot` gives it (a Budget without seconds if this has none)."""
        seconds = self.share(fraction).allot(warn=False) if self.timed else None
        child = Budget(seconds, progress=self.progress if progress is None else progress, clock=self.clock)
        child.part = True
        return child

    def allot(self, *, warn=True) -> float:
        """Seconds of sampling from now: this share of what is :meth:`left`,
        at least :attr:`minimum`. When the minimum applies a
        :class:`BudgetWarning` names the phases that took the time."""
        left = self.fraction * self.left()
        if left >= self.minimum:
            return left
        if warn:
            self._warn_minimum()
        return self.minimum

    def _warn_minimum(self):
        done = sorted(((s, n) for n, s in self.phases.items() if s >= 0.05 and n != "sampling"), reverse=True)
        what = ", ".join(f"{n} {s:.1f} s" for s, n in done[:4])
        after = f", and writing the outputs needs about {self.reserve:.2g} s more" if self.reserve >= 0.5 else ""
        self.warn(f"the work before sampling{f' ({what})' if what else ''} took {self.elapsed():.1f} s of "
                  f"{self._of()}{after}; sampling got its minimum of {self.minimum:.2g} s "
                  f"({100 * MIN_SAMPLING_SHARE:.0f} % of the budget), so the run takes longer than the budget")

    def warn(self, message) -> None:
        """Give ``message`` as a :class:`BudgetWarning` (once)."""
        if message in self.warned:
            return
        self.warned.append(message)
        self._clear()
        warnings.warn(message, BudgetWarning, stacklevel=3)

    def check_end(self) -> None:
        """At the end of a run: a warning if it took more than :data:`OVERRUN`
        times the budget and the sampler's minimum did not already say why."""
        if not self.timed or self.warned or self.elapsed() <= OVERRUN * self.seconds:
            return
        slow = ", ".join(f"{n} {s:.1f} s" for s, n in sorted(((s, n) for n, s in self.phases.items()),
                                                            reverse=True)[:3])
        self.warn(f"the run took {self.elapsed():.1f} s of {self._of()}"
                  f"{f' ({slow})' if slow else ''}")

    def _of(self) -> str:
        return (f"its {self.seconds:.3g} s part of the time budget" if self.part
                else f"the {self.seconds:g} s time budget")

    # -------------------------------------------------------------- phases
    @contextmanager
    def phase(self, name, detail=""):
        """Run the body as phase ``name`` (``detail``: what it works on):
        add its seconds to :attr:`phases`; on a terminal, show its name
        while it runs, and leave a line when it took over
        :data:`PHASE_LINE_SECONDS`."""
        t0 = self.clock()
        self.phases.setdefault(name, 0.0)
        self._show(f"swcuts: {name}{f' ({detail})' if detail else ''} ..."
                   f"{f' [{self.elapsed():.1f} s of {self.seconds:g} s]' if self.timed else ''}")
        try:
            yield self
        finally:
            seconds = self.clock() - t0
            self.phases[name] += seconds
            if seconds >= PHASE_LINE_SECONDS:
                self._show(f"swcuts: {name}{f' ({detail})' if detail else ''}: {seconds:.1f} s", end="\n")
            else:
                self._clear()

    def shows(self) -> bool:
        """Whether the phases are shown (``progress`` and stderr a terminal)."""
        stream = sys.stderr
        return self.progress and stream is not None and getattr(stream, "isatty", lambda: False)()

    def _show(self, text, end=""):
        if not self.shows():
            return
        pad = " " * max(0, _STATUS[0] - len(text))
        sys.stderr.write(f"\r{text}{pad}{end}")
        sys.stderr.flush()
        _STATUS[0] = 0 if end else len(text)

    def _clear(self):
        if _STATUS[0] and self.shows():
            sys.stderr.write("\r" + " " * _STATUS[0] + "\r")
            sys.stderr.flush()
        _STATUS[0] = 0


#: Longest time budget in seconds (about 11.6 days); longer runs: ``steps``.
MAX_TIME_BUDGET = 1e6
#: Bytes of one trace row (six Python numbers in lists) and the most steps
#: a trace row covers (:func:`~swcuts.inference.anneal.anneal` writes a row per chunk).
TRACE_ROW_BYTES = 240
STEPS_PER_TRACE_ROW = 4096


def check_budget(steps=None, time_budget=None, *, limit_bytes=None) -> None:
    """Refuse a budget whose run could not end or whose trace would not fit.

    ``time_budget`` at most :data:`MAX_TIME_BUDGET` seconds; ``steps`` at
    most what a trace of one row per :data:`STEPS_PER_TRACE_ROW` steps
    holds in the memory available (about 10**11 steps per GB).

    Raises
    ------
    InputError
        One line naming the option, the estimate and what fits.
    """
    if time_budget is not None and isinstance(time_budget, numbers.Real) and time_budget > MAX_TIME_BUDGET:
        raise InputError(f"time_budget={time_budget:g} seconds is {time_budget / 86400:.3g} days; at most "
                         f"{MAX_TIME_BUDGET:g} s (11.6 days) is accepted; for longer runs give steps")
    if steps is not None and isinstance(steps, numbers.Integral):
        need = steps / STEPS_PER_TRACE_ROW * TRACE_ROW_BYTES
        have = _memory_limit(limit_bytes)
        if have is not None and need > have / 2:
            fit = int(have / 2 / TRACE_ROW_BYTES * STEPS_PER_TRACE_ROW)
            raise InputError(f"steps={steps} needs about {_size(need)} for its trace; at most "
                             f"{fit:.3g} steps fit in the {_size(have)} available")
