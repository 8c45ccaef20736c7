"""A first run on two cores: a helper process compiles part of the default
kernel while the main process prepares the image.

The first ``swcuts segment`` after a fresh clone (an empty numba cache)
spends most of its time compiling :func:`~swcuts.samplers.compiled.run_swc`
and its callees, one after the other, in one process. Most callees are
compiled for compiled callers only (:mod:`swcuts._numba.compiled_only`): they have
no cache entries of their own, and ``run_swc``'s entry holds their code. A
second process can still compile some of them ahead: as ordinary cached
libraries (:data:`JOBS`, with the exact signatures ``run_swc`` calls them
with), which the main process loads from the cache when it types
``run_swc`` and reaches them (:data:`swcuts._numba.compiled_only.load_hook`),
instead of compiling them itself. The main process meanwhile builds the
atoms, the graph and the posterior, and compiles the rest. On Linux the
helper is a fork of the main process (swcuts and numba already loaded);
elsewhere, or when the main process runs other threads (fork is not safe
then), a new interpreter.

``swcuts segment`` runs in :func:`helper`'s block (the command line only:
library code may call :func:`swcuts.segment` from pools of processes or
threads, where a helper per call would oversubscribe the cores).
:func:`helper` starts the process only when it can help: the default
sampler's kernel is not in the cache yet, the machine has a second core
that other work does not keep busy (:func:`_idle_cores`), and ``SWCUTS_PREWARM``
is not ``0`` (``1``: whatever the load). A busy second core is no use to
it: Linux schedules the processes of one session as one group (autogroup),
so with another program busy on the other of two cores, this run gets one
core however many processes it starts. Then, for each job the main process
reaches:

* done by the helper: loaded from the cache;
* being compiled by the helper: the main process waits for it (waiting is
  shorter than compiling it again);
* not started yet: the main process compiles it itself and tells the
  helper to skip it, so that no work is done twice (the jobs are ordered
  so that the ones the main process needs last come first).

Nothing depends on the helper for correctness: if it fails, is slow to
start or dies, the main process compiles what it has not received, as
without it; the cache files are written and read under the locks of
:mod:`swcuts._numba.cache`, and stamped with the package's sources. The
helper ends when the run no longer needs it (at the latest when
:func:`helper`'s block ends), and when its input closes (the main process
ended).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from numba import njit
from numba import types as nt

from swcuts._numba import compiled_only as _co

__all__ = ["helper", "Helper", "JOBS", "RUN_SWC_SIGNATURE"]

#: Seconds the main process waits at most for a job the helper is compiling.
WAIT_LIMIT = 60.0

_i8, _f8 = nt.int64, nt.float64
_I, _F, _B, _BOOL = nt.int64[::1], nt.float64[::1], nt.int8[::1], nt.boolean[::1]
_F2 = nt.float64[:, ::1]
_REGIONS = nt.Tuple((_I, _F, _I, _I, _B))          # a region index (new_region_index)
_PWS = nt.Tuple((_I, _I, _I, _I, _F))              # pieces_interleaved's scratch
_VSRC = nt.Tuple((_F2, nt.none, nt.none, nt.none, nt.none))  # vertex statistics, no windows

#: The argument types of ``run_swc`` in a run of the default sampler and
#: model (SWC-2 steps: no edge list).
RUN_SWC_SIGNATURE = (_i8, _F, _F, _I, _I, _I, _I, _F2, _F, _REGIONS, _I, _VSRC, _I, _I, _I, nt.none,
                     _F, _F, _F, _F, _BOOL, _i8, _i8, _F, _I, _B, _B, _I, _F, _F, _I, _I, _I, _F, _F,
                     _I, _F, _F, _PWS, _I, _F)

#: (module, function, argument types) of the helper's jobs, in its order:
#: callees of ``run_swc`` with the types it calls them with, the one the
#: main process reaches last first (it types ``run_swc`` in order:
#: load_regions, grow_into, cut_sums, propose_target, join_delta (its
#: callees sum_stats, label_loglik, touching_regions, boundary_delta),
#: leave_regions, move_regions, store_regions). Not label_loglik: the main
#: process compiles it before ``run_swc``, to set up the state; not
#: join_delta: it calls label_loglik. ``tests/test_prewarm.py`` checks that
#: a cold compile of ``run_swc`` asks for exactly these.
JOBS = (
    ("swcuts.models.image_kernels", "store_regions", (_REGIONS, _I, _F)),
    ("swcuts.models.image_kernels", "move_regions",
     (_I, _i8, _i8, _i8, _I, _I, _I, _I, _F2, _F, _F, _f8, _f8, _REGIONS, _I, _I, _F, _B, _PWS, _I)),
    ("swcuts.models.image_kernels", "leave_regions",
     (_I, _i8, _i8, _I, _I, _I, _F, _f8, _f8, _F, _B, _PWS)),
    ("swcuts.models.boundary", "boundary_delta", (_f8, _I, _i8, _i8, _I, _I, _I, _F, _B)),
    ("swcuts.models.regions", "touching_regions", (_I, _i8, _i8, _I, _I, _I, _I, _F, _B, _B, _I, _f8)),
    ("swcuts.models.vertex_stats", "sum_stats", (_I, _i8, _VSRC, _i8, _i8, _F)),
    ("swcuts.samplers.common", "propose_target",
     (_i8, nt.boolean, _i8, _I, _i8, _F, _I, _I, _i8, _f8, _f8, _f8, _f8, nt.literal(True))),
    ("swcuts.samplers.common", "cut_sums",
     (_I, _i8, _I, _I, _I, _I, _F, _F, _B, _F, _F, _I, _I) + (nt.Omitted(None),) * 3),
    ("swcuts.samplers.common", "grow_into", (_i8, _I, _F, _I, _I, _I, _B, _I) + (nt.Omitted(None),) * 3),
    ("swcuts.models.image_kernels", "load_regions", (_I, _F, _REGIONS)),
)


def _job_function(module, name):
    """The :class:`~swcuts._numba.compiled_only.CompiledOnly` kernel of a job."""
    import importlib

    return getattr(importlib.import_module(module), name)


def _default_kernel_cached() -> bool:
    """Whether the numba cache holds ``run_swc`` for :data:`RUN_SWC_SIGNATURE`
    (True too when that cannot be told: then no helper is started)."""
    try:
        from swcuts.samplers.compiled import run_swc

        cache = run_swc._cache
        key = cache._index_key(RUN_SWC_SIGNATURE, run_swc.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # numba internals changed, no cache locator, ...
        return True


#: Reads of the number of runnable tasks (:func:`_busy_now`), this far apart (s).
BUSY_SAMPLES, BUSY_INTERVAL = 5, 0.01


def _busy_now():
    """Tasks other than this one that kept a core busy just now: the fewest
    runnable tasks (``/proc/loadavg``'s fourth field, this one included) in
    :data:`BUSY_SAMPLES` reads :data:`BUSY_INTERVAL` s apart (a short burst
    of another program's is not counted; a busy loop is), or None where
    that cannot be read (not Linux)."""
    import time

    fewest = None
    try:
        for i in range(BUSY_SAMPLES):
            if i:
                time.sleep(BUSY_INTERVAL)
            with open("/proc/loadavg") as fh:
                running = int(fh.read().split()[3].split("/")[0])
            fewest = running if fewest is None else min(fewest, running)
    except (OSError, ValueError, IndexError):
        return None
    return max(fewest - 1, 0)


def _idle_cores() -> float:
    """Cores free for a helper: this process's cores less the ones other
    tasks keep busy now (:func:`_busy_now`; where that cannot be read, the
    load average of the last minute), and less one core for this process.

    Not the load average where the count can be read: it lags by a minute,
    so a program that started a second ago to keep the other core busy
    did not count (the helper then cost the run ~0.7 s: with autogroup
    this run gets one core however many processes it starts), and a
    minute-old burst that has ended did."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    busy = _busy_now()
    if busy is not None:
        return cores - 1.0 - busy
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        load = 0.0
    return cores - max(load, 1.0)


class Helper:
    """A running helper process and the hook that lets the main process use
    its work (:func:`helper` makes one)."""

    def __init__(self, proc):
        self._proc = proc
        self._jobs = [(_job_function(m, n).py_func, sig) for m, n, sig in JOBS]
        self._state = [None] * len(self._jobs)  # None, "start", "done", "fail" or "skip"
        self._ended = False
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="swcuts-prewarm", daemon=True)
        self._reader.start()

    def _read(self):
        try:
            for line in self._proc.stdout:
                word, _, index = line.strip().partition(" ")
                if word in ("start", "done", "fail") and index.isdigit() and int(index) < len(self._state):
                    with self._cond:
                        if self._state[int(index)] != "skip":  # compiled here, whatever it does
                            self._state[int(index)] = word
                        self._cond.notify_all()
        except (OSError, ValueError):
            pass
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def _tell(self, line):
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except (OSError, ValueError):
            pass

    def load_hook(self, py_func, sig) -> bool:
        """:data:`swcuts._numba.compiled_only.load_hook`: True when the helper has
        compiled ``py_func`` for ``sig`` (after waiting for it if it is
        compiling it now); False, and the helper skips it, when it has not
        started it."""
        index = next((i for i, (f, s) in enumerate(self._jobs) if f is py_func and s == tuple(sig)),
                     None)
        if index is None:
            return False
        with self._cond:
            if self._state[index] is None:
                self._state[index] = "skip"
                self._tell(f"skip {index}")
                return False
            self._cond.wait_for(lambda: self._state[index] != "start" or self._ended, WAIT_LIMIT)
            return self._state[index] == "done"

    def close(self):
        """End the helper (at once, if it is still compiling) and drop the hook."""
        if _co.load_hook == self.load_hook:
            _co.load_hook = None
        with contextlib.suppress(OSError, ValueError):
            self._proc.stdin.close()
        if self._proc.poll() is None:
            self._proc.terminate()
        self._proc.wait()
        self._reader.join()
        self._proc.stdout.close()


class _Forked:
    """A forked helper, with the part of :class:`subprocess.Popen` that
    :class:`Helper` uses (``stdin``, ``stdout``, ``poll``, ``terminate``, ``wait``)."""

    def __init__(self):
        to_helper, from_main = os.pipe()
        to_main, from_helper = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: compile, then leave without running any of the parent's exit code
            try:
                os.close(from_main)
                os.close(to_main)
                null = os.open(os.devnull, os.O_RDWR)  # hold no terminal or pipe of the parent's
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the main process ends us
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                with open(to_helper, "r") as inp, open(from_helper, "w", buffering=1) as out:
                    _work(inp, out)
            finally:
                os._exit(0)
        os.close(to_helper)
        os.close(from_helper)
        self.stdin = open(from_main, "w", buffering=1)
        self.stdout = open(to_main, "r")
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def terminate(self):
        if self.poll() is None:
            os.kill(self.pid, signal.SIGTERM)

    def kill(self):
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    def wait(self):
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


def _launch():
    """The helper process: forked where that is safe (Linux, no other
    thread in this process: the helper starts at once, with swcuts loaded),
    else a new interpreter (it loads numba and the kernels first)."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return _Forked()
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds swcuts/
    code = f"import sys; sys.path.insert(0, {root!r}); from swcuts.cli.prewarm import _helper_main; _helper_main()"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)


def start() -> Helper | None:
    """Start the helper if it can help (module docstring), else None."""
    wanted = os.environ.get("SWCUTS_PREWARM", "")
    if wanted == "0" or _co.load_hook is not None:
        return None
    if _default_kernel_cached():
        return None
    if wanted != "1" and _idle_cores() < 0.5:  # no core free: the helper would only add work
        return None
    try:
        proc = _launch()
    except OSError:
        return None
    h = Helper(proc)
    _co.load_hook = h.load_hook
    return h


@contextlib.contextmanager
def helper(wanted: bool = True):
    """Run the block with a helper compiling :data:`JOBS` when ``wanted``
    and it can help (:func:`start`); end it when the block ends."""
    h = start() if wanted else None
    try:
        yield h
    finally:
        if h is not None:
            h.close()


def _helper_main():
    """The helper in a new interpreter (:func:`_work` on stdin and stdout)."""
    _work(sys.stdin, sys.stdout)


def _work(inp, out):
    """The helper: compile and cache each job not skipped, reporting
    ``start i`` / ``done i`` / ``fail i`` on ``out``; stop when ``inp``
    closes (the main process is done with it, or ended)."""
    skipped = set()
    closed = threading.Event()

    def listen():
        with contextlib.suppress(OSError, ValueError):
            for line in inp:
                word, _, index = line.strip().partition(" ")
                if word == "skip" and index.isdigit():
                    skipped.add(int(index))
        closed.set()

    threading.Thread(target=listen, daemon=True).start()
    for index, (module, name, sig) in enumerate(JOBS):
        if closed.is_set():
            return
        if index in skipped:
            continue
        print(f"start {index}", file=out, flush=True)
        try:
            kernel = _job_function(module, name)
            njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True,
                 **kernel._options)(kernel.py_func).compile(sig)
        except Exception:
            print(f"fail {index}", file=out, flush=True)
        else:
            print(f"done {index}", file=out, flush=True)
