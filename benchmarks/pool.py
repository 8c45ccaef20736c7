"""The worker pool of the photo benchmarks: results as they come, with a
progress line (and the load average) on stderr every 20 runs."""

from __future__ import annotations

import os
import sys
from multiprocessing import Pool


def run_all(task, tasks, workers) -> list:
    """``task`` of every item of ``tasks`` in ``workers`` processes, in the
    order they finish."""
    rows = []
    with Pool(workers) as pool:
        for r in pool.imap_unordered(task, tasks):
            rows.append(r)
            if len(rows) % 20 == 0:
                print(f"  {len(rows)}/{len(tasks)} runs, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    return rows
