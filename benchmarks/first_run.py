"""Wall time of the first ``swcuts segment`` on a fresh checkout, against a warm run.

The first run of the default command compiles swcuts' numba kernels
(``@njit(cache=True)``) and writes them to the numba cache; every later
run loads them from there. This script measures both from the outside, as
a user sees them::

    swcuts segment sample_images/coffee.png -o OUT

* **first run**: ``NUMBA_CACHE_DIR`` pointed at a new, empty folder (as on
  a fresh clone, where no ``__pycache__`` holds compiled kernels); target
  <= 5 s;
* **warm run**: the same command again with that cache, the median of
  ``--repeat`` runs.

Each is reported as wall seconds and as CPU seconds of the child process
(user + system, from ``getrusage``; with the helper process of
:mod:`swcuts.cli.prewarm`, which compiles part of the kernel on a second core
during a first run, its CPU seconds too): on a shared machine the wall
time grows with the load, the CPU time much less. ``--prewarm on|off``
forces that helper on or off (``SWCUTS_PREWARM``); by default it runs
when another core is free now (``swcuts.cli.prewarm._idle_cores``: the
runnable tasks, not the load average).

With ``--compiled`` it also lists the numba functions the first run
compiled (from ``NUMBA_DEBUG_CACHE``; the main process's, not the
helper's), so that one can see which kernels the default path pays for;
with ``--profile N`` it runs the command once more from another empty
cache, in a process that records numba's compile events (the main
process's: what the helper compiled is not there), and prints the N functions with the longest compile time (each
function's own time, its callees' compilation subtracted; numba's own
overloads such as ``ol_np_empty`` show up too).

With ``--busy`` another process keeps a core busy during the runs (the
issue's "also with the other core busy").

With ``--model NAME`` the command runs with ``--model NAME``.

Run: ``python benchmarks/first_run.py [--repeat N] [--compiled] [--profile N] [--prewarm on|off] [--busy] [--model NAME]``.
Timings on a shared machine are noisy; compare medians of several calls.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / "sample_images" / "coffee.png"
TARGET_FIRST = 5.0
#: SWCUTS_PREWARM for the runs ("1", "0"), or None: as in the environment.
PREWARM = [None]
#: Extra arguments of the command (``--model learned``).
EXTRA = []


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_segment(cache_dir: str, out_dir: str, debug_cache: bool = False) -> tuple[float, float, str]:
    """Wall and CPU seconds of one ``swcuts segment IMAGE -o out_dir`` in a
    new process with the given numba cache, and its output."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(ROOT))
    if PREWARM[0] is not None:
        env["SWCUTS_PREWARM"] = PREWARM[0]
    if debug_cache:
        env["NUMBA_DEBUG_CACHE"] = "1"
    cmd = [sys.executable, "-m", "swcuts", "segment", str(IMAGE), "-o", out_dir, "--no-progress", *EXTRA]
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"swcuts segment failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, cpu, done.stdout + done.stderr


def compiled_functions(log: str) -> collections.Counter:
    """Functions saved to the cache per module, from NUMBA_DEBUG_CACHE's lines
    ``[cache] data saved to '.../module.function-LINE.pyXY.N.nbc'``."""
    saved = re.findall(r"data saved to '([^']+)\.nbc'", log)
    names = [Path(p).name.rsplit(".py", 1)[0] for p in saved]
    return collections.Counter(names)


#: Runs ``swcuts segment`` (argv[1:]) in this process and prints, to stderr,
#: the exclusive compile seconds of every numba function it compiled.
_PROFILER = """
import collections, sys, time
from numba.core import event
own = collections.Counter()
stack = []

class Compiles(event.Listener):
    def on_start(self, e):
        stack.append((e.data["dispatcher"].py_func.__qualname__, time.process_time()))

    def on_end(self, e):
        name, start = stack.pop()
        dt = time.process_time() - start
        own[name] += dt
        if stack:
            own[stack[-1][0]] -= dt

event.register("numba:compile", Compiles())
from swcuts.cli import main
sys.argv = ["swcuts"] + sys.argv[1:]
try:
    main()
except SystemExit:
    pass
for name, seconds in own.most_common():
    print(f"PROFILE {seconds:.3f} {name}", file=sys.stderr)
"""


def profile_compiles(out_dir: str) -> list:
    """(seconds, function) of every compile of one first run, longest first."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        if PREWARM[0] is not None:
            env["SWCUTS_PREWARM"] = PREWARM[0]
        cmd = [sys.executable, "-c", _PROFILER, "segment", str(IMAGE), "-o", out_dir, "--no-progress", *EXTRA]
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"profiled run failed ({done.returncode}): {done.stderr.strip()}")
    rows = [line.split(" ", 2)[1:] for line in done.stderr.splitlines() if line.startswith("PROFILE ")]
    return [(float(s), name) for s, name in rows]


def busy_core():
    """A process that keeps one core busy (a busy loop) until it is killed: in
    a session of its own, as another program of the user's would be (Linux
    schedules each session as one group, so a busy loop of this session
    would take turns with the run's processes instead)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="warm runs (median)")
    ap.add_argument("--compiled", action="store_true", help="list the functions the first run compiled")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print the N functions with the longest compile time")
    ap.add_argument("--prewarm", choices=("on", "off"),
                    help="force the first run's helper process on or off (default: by the free cores)")
    ap.add_argument("--busy", action="store_true",
                    help="keep another core busy (a busy loop in another process) during the runs")
    ap.add_argument("--model", help="run with --model MODEL (default: the command's default)")
    args = ap.parse_args()
    if args.model:
        EXTRA[:] = ["--model", args.model]
    load_before = os.getloadavg()[0]
    if args.prewarm:
        PREWARM[0] = "1" if args.prewarm == "on" else "0"
    busy = busy_core() if args.busy else None
    try:
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            time.sleep(0.5 if busy else 0.0)
            first, first_cpu, log = run_segment(cache, str(Path(out) / "first"), debug_cache=args.compiled)
            warm = [run_segment(cache, str(Path(out) / f"warm{i}"))[:2] for i in range(args.repeat)]
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    warm_wall = statistics.median(w for w, _ in warm)
    warm_cpu = statistics.median(c for _, c in warm)
    prewarm = {None: "by the free cores", "1": "on", "0": "off"}[PREWARM[0]]
    print(f"swcuts segment {IMAGE.relative_to(ROOT)} -o OUT (default options), {os.cpu_count()} cores, "
          f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, helper process {prewarm}"
          + (f", {' '.join(EXTRA)}" if EXTRA else "")
          + (", another core kept busy" if args.busy else ""))
    print(f"{'measure':<44} {'wall s':>8} {'CPU s':>8} {'target':>8}")
    print(f"{'first run (empty numba cache)':<44} {first:>8.2f} {first_cpu:>8.2f} "
          f"{'<= ' + str(TARGET_FIRST):>8}  {'MET' if first <= TARGET_FIRST else 'NOT MET'}")
    print(f"{'warm run (median of ' + str(args.repeat) + ')':<44} {warm_wall:>8.2f} {warm_cpu:>8.2f}")
    print(f"{'compile and cache-write cost (first - warm)':<44} {first - warm_wall:>8.2f} "
          f"{first_cpu - warm_cpu:>8.2f}")
    if args.compiled:
        counts = compiled_functions(log)
        print(f"\n{sum(counts.values())} compiled signatures saved to the cache:")
        for name, n in sorted(counts.items()):
            print(f"  {name}" + (f"  x{n}" if n > 1 else ""))
    if args.profile:
        with tempfile.TemporaryDirectory() as out:
            rows = profile_compiles(str(Path(out) / "profiled"))
        print(f"\ncompile CPU seconds of the first run, by function (own time; {len(rows)} functions, "
              f"{sum(s for s, _ in rows):.1f} s in all):")
        for seconds, name in rows[:args.profile]:
            print(f"  {seconds:6.2f}  {name}")


if __name__ == "__main__":
    main()
