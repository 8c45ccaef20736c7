"""Several chains of one kernel run side by side: one chain (its state,
generator and best state), the pool of threads that runs them, and their
phases in rounds (:func:`swcuts.segmentation.posterior.sample_model`)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from swcuts.models.protocols import is_compiled

__all__ = ["Chain", "ChainPool", "default_workers", "on_chains", "in_rounds"]


class Chain:
    """One chain: its state, the kernel's way of running steps, its best state."""

    def __init__(self, kernel, state, rng):
        self.kernel = kernel
        self.state = state
        self.rng = rng
        self.compiled = is_compiled(kernel)
        self.best_labels = state.partition.labels.copy()
        self.best_log_pi = state.log_pi
        self.accepted = 0
        self.steps = 0

    def advance(self, n_steps, temperature=1.0):
        """Run ``n_steps`` kernel steps at ``temperature``; returns accepted moves."""
        from swcuts.samplers.common import seed_compiled_rng

        if n_steps <= 0:
            return 0
        # The compiled kernels draw from numba's global generator: reseed it
        # from this chain's generator so chains interleave reproducibly.
        seed_compiled_rng(self.rng)
        if self.compiled:
            acc, best, _ = self.kernel.run(self.state, self.rng, np.full(int(n_steps), float(temperature)),
                                           self.best_labels, self.best_log_pi)
            self.best_log_pi = max(self.best_log_pi, best)
        else:
            acc = 0
            for _ in range(int(n_steps)):
                info = self.kernel.step(self.state, self.rng, float(temperature))
                acc += bool(info.accepted and info.moved)
                if self.state.log_pi > self.best_log_pi + 1e-9:
                    self.best_log_pi = self.state.log_pi
                    self.best_labels[:] = self.state.partition.labels
        self.steps += int(n_steps)
        return int(acc)


def default_workers(chains) -> int:
    """Threads that run chains at once: the processors this process may use,
    at most ``chains``."""
    try:
        n_cpu = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n_cpu = os.cpu_count() or 1
    return max(1, min(int(chains), n_cpu))


class ChainPool:
    """Runs a function on every chain, in threads when there is more than one
    worker and every kernel is compiled (the compiled kernels release the
    GIL); a chain's steps depend only on its own state and generator, so the
    result does not depend on the number of workers."""

    def __init__(self, runs, workers):
        parallel = workers > 1 and all(ch.compiled for ch in runs)
        self.executor = ThreadPoolExecutor(max_workers=workers) if parallel else None

    def map(self, fn, items):
        if self.executor is None:
            return [fn(x) for x in items]
        return list(self.executor.map(fn, items))

    def close(self):
        if self.executor is not None:
            self.executor.shutdown()


def on_chains(pool, chains, n_rounds, task, out_of_time=None):
    """Run ``task(c, 0, n_rounds)`` on every chain c at once, or, with a
    clock ``out_of_time``, in rounds (:func:`in_rounds`); returns the rounds run."""
    if out_of_time is None:
        pool.map(lambda c: task(c, 0, n_rounds), range(chains))
        return n_rounds
    return in_rounds(pool, chains, n_rounds, task, out_of_time)


def in_rounds(pool, chains, n_rounds, task, out_of_time):
    """Run ``task(c, i, i + 1)`` on every chain c, round by round
    (i = 0, 1, ...), until ``out_of_time(i)``; returns the rounds run."""
    for i in range(n_rounds):
        if out_of_time(i):
            return i
        pool.map(lambda c: task(c, i, i + 1), range(chains))
    return n_rounds
