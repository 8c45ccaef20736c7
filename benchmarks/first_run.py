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

With ``--compiled`` it also lists the numba functions the first run
compiled (from ``NUMBA_DEBUG_CACHE``), slowest module first, so that one
can see which kernels the default path pays for.

Run: ``python benchmarks/first_run.py [--repeat N] [--compiled]``. Timings
on a shared machine are noisy; compare medians of several calls.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ROOT / "sample_images" / "coffee.png"
TARGET_FIRST = 5.0


def run_segment(cache_dir: str, out_dir: str, debug_cache: bool = False) -> tuple[float, str]:
    """Seconds of one ``swcuts segment IMAGE -o out_dir`` in a new process
    with the given numba cache, and its standard error."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(ROOT))
    if debug_cache:
        env["NUMBA_DEBUG_CACHE"] = "1"
    cmd = [sys.executable, "-m", "swcuts", "segment", str(IMAGE), "-o", out_dir, "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"swcuts segment failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, done.stdout + done.stderr


def compiled_functions(log: str) -> collections.Counter:
    """Functions saved to the cache per module, from NUMBA_DEBUG_CACHE's lines
    ``[cache] data saved to '.../module.function-LINE.pyXY.N.nbc'``."""
    saved = re.findall(r"data saved to '([^']+)\.nbc'", log)
    names = [Path(p).name.rsplit(".py", 1)[0] for p in saved]
    return collections.Counter(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="warm runs (median)")
    ap.add_argument("--compiled", action="store_true", help="list the functions the first run compiled")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        first, log = run_segment(cache, str(Path(out) / "first"), debug_cache=args.compiled)
        warm = [run_segment(cache, str(Path(out) / f"warm{i}"))[0] for i in range(args.repeat)]
    print(f"swcuts segment {IMAGE.relative_to(ROOT)} -o OUT (default options), {os.cpu_count()} cores")
    print(f"{'measure':<44} {'seconds':>8} {'target':>8}")
    print(f"{'first run (empty numba cache)':<44} {first:>8.2f} {'<= ' + str(TARGET_FIRST):>8}  "
          f"{'MET' if first <= TARGET_FIRST else 'NOT MET'}")
    print(f"{'warm run (median of ' + str(args.repeat) + ')':<44} {statistics.median(warm):>8.2f}")
    print(f"{'compile and cache-write cost (first - warm)':<44} {first - statistics.median(warm):>8.2f}")
    if args.compiled:
        counts = compiled_functions(log)
        print(f"\n{sum(counts.values())} compiled signatures saved to the cache:")
        for name, n in sorted(counts.items()):
            print(f"  {name}" + (f"  x{n}" if n > 1 else ""))


if __name__ == "__main__":
    main()
