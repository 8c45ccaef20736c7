"""CPU seconds per phase of ``segment_motion`` with its defaults (issue 36).

Usage: python benchmarks/motion_phases.py [PAIR ...] [--stereo] [--repeat N]

PAIR: Middlebury names (Dimetrodon, Grove3, Urban3, Venus) or ``cones``
(stereo, ``vertical=False``; fetched by ``benchmarks/stereo_data.py``).
Default: Grove3 and Urban3 (the 640x480 pairs).

Every phase of :attr:`MotionSegmentation.phases` is timed with the CPU
time of this process (:func:`time.process_time`: the honest figure on a
shared machine, where wall time depends on the load), beside the wall
time of the call, the EPE of the dense flow and DIS's, the peak resident
set of the process (``ru_maxrss``) and the 1-minute load average. The
target, <= 10 s per 640x480 pair, is printed beside the total. The first
call of a process also compiles (or loads from numba's cache) the
kernels: a warm-up call on a small pair runs first.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGET_SECONDS = 10.0


def _pair(name):
    from swcuts.evaluation.motion_datasets import MIDDLEBURY_SEQUENCES, load_middlebury, load_stereo

    if name in MIDDLEBURY_SEQUENCES:
        return load_middlebury(name), True
    return load_stereo(name), False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="*", default=["Grove3", "Urban3"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import swcuts
    from swcuts.evaluation.motion_metrics import endpoint_error
    from swcuts.evaluation.motion_peers import run_motion_peer
    from swcuts.evaluation.synthetic.motion import layered_pair
    from swcuts.inference.budget import Budget

    warm = layered_pair((60, 80), n_objects=2, seed=0)
    swcuts.segment_motion(warm.frame1, warm.frame2, seed=0)
    order = ("regions", "data terms", "level 0", "level 2", "refining")
    print(f"{'pair':12s} {'size':8s} " + " ".join(f"{p:>10s}" for p in order)
          + f" {'CPU s':>7s} {'[<=10]':>6s} {'wall s':>7s} {'load':>5s} {'EPE':>6s} {'DIS':>6s} {'maxrss MB':>9s}")
    for name in args.pairs:
        pair, vertical = _pair(name)
        flow_dis, _ = run_motion_peer("dis", pair.frame1, pair.frame2)
        if not vertical:
            flow_dis = flow_dis.copy()
        dis_epe = endpoint_error(np.asarray(flow_dis, np.float64), pair.flow)
        for _ in range(args.repeat):
            budget = Budget(None, clock=time.process_time)
            c0, t0 = time.process_time(), time.perf_counter()
            res = swcuts.segment_motion(pair.frame1, pair.frame2, seed=args.seed, vertical=vertical,
                                        time_budget=budget)
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            epe = endpoint_error(res.dense_flow(), pair.flow)
            h, w = pair.frame2.shape[:2]
            big = (h, w) == (480, 640)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{name:12s} {w}x{h:<4d} " + " ".join(f"{res.phases.get(p, 0.0):10.2f}" for p in order)
                  + f" {cpu:7.2f} {('yes' if cpu <= TARGET_SECONDS else 'no') if big else '-':>6s}"
                  f" {wall:7.2f} {os.getloadavg()[0]:5.1f} {epe:6.3f} {dis_epe:6.3f} {rss:9.0f}",
                  flush=True)
            other = {k: round(v, 2) for k, v in res.phases.items() if k not in order}
            if other:
                print(f"{'':12s} other phases: {other}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
