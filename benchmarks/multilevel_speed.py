"""Speed and depth of the multi-level sampler (``segment(sampler="multilevel")``).

For every photo (skimage.data, resized to 481x321 as in pixel_scale.py):

* −log π of the best segmentation after a budget of B seconds of CPU time
  of this process (one run per budget, seed 0) for ``multilevel`` (two
  levels: atoms sampled on the pixels, segments on the atoms) and, with
  ``--swc``, for ``swc`` on deterministic SLIC atoms (Fig. 16 (a));
* level-0 steps per CPU second and their acceptance during the multilevel
  run.

The machine may be shared: budgets count CPU time of this process (as in
pixel_scale.py), not wall-clock.

Run: ``python benchmarks/multilevel_speed.py [--budgets 30,60] [--photos a,b]
[--swc]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import swcuts  # noqa: E402
from swcuts.samplers import multilevel as ML
from pixel_scale import budget_clock, photo  # noqa: E402

PHOTOS = ("coffee", "chelsea", "astronaut", "camera", "rocket")


class LevelTimer:
    """Counts steps, accepted moves and CPU seconds of every level's runs."""

    def __init__(self):
        self.steps, self.acc, self.cpu = {}, {}, {}
        self._orig = ML.MultiLevel.run_level

    def __enter__(self):
        orig, me = self._orig, self

        def run_level(ml, s, rng, temperatures, best_log_pi=-np.inf):
            ml._level(s)  # rebuilds are not the kernel's time
            t = time.process_time()
            out = orig(ml, s, rng, temperatures, best_log_pi)
            me.cpu[s] = me.cpu.get(s, 0.0) + time.process_time() - t
            me.steps[s] = me.steps.get(s, 0) + len(temperatures)
            me.acc[s] = me.acc.get(s, 0) + out[0]
            return out

        ML.MultiLevel.run_level = run_level
        return self

    def __exit__(self, *exc):
        ML.MultiLevel.run_level = self._orig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budgets", default="30,60")
    ap.add_argument("--photos", default=",".join(PHOTOS[:4]))
    ap.add_argument("--swc", action="store_true", help="also SW cuts on SLIC atoms")
    ap.add_argument("--no-ml", action="store_true", help="skip the multilevel runs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]
    rows = []
    for name in args.photos.split(","):
        img = photo(name)
        for b in budgets:
            if not args.no_ml:
                with budget_clock("cpu"), LevelTimer() as lt:
                    seg = swcuts.segment(img, sampler="multilevel", time_budget=b, seed=args.seed)
                l0 = lt.steps.get(0, 0)
                rows.append((name, "multilevel", b, seg.energy, l0 / max(lt.cpu.get(0, 1e-9), 1e-9),
                             lt.acc.get(0, 0) / max(l0, 1), lt.cpu.get(0, 0.0), lt.cpu.get(1, 0.0),
                             int(seg.labels.max()) + 1))
                print(*_fmt(rows[-1]), flush=True)
            if args.swc:
                with budget_clock("cpu"):
                    seg = swcuts.segment(img, sampler="swc", time_budget=b, seed=args.seed)
                rows.append((name, "swc", b, seg.energy, float("nan"), float("nan"), float("nan"),
                             float("nan"), int(seg.labels.max()) + 1))
                print(*_fmt(rows[-1]), flush=True)
    print()
    print(f"{'photo':<10} {'sampler':<11} {'budget':>6} {'-log pi':>11} {'L0 steps/s':>11} "
          f"{'L0 acc':>7} {'L0 cpu':>7} {'L1 cpu':>7} {'K':>4}")
    for r in rows:
        print(*_fmt(r))


def _fmt(r):
    name, sampler, b, e, sps, acc, c0, c1, k = r
    return (f"{name:<10} {sampler:<11} {b:>6.0f} {e:>11,.0f} {sps:>11,.0f} {acc:>7.2%} "
            f"{c0:>7.1f} {c1:>7.1f} {k:>4d}",)


if __name__ == "__main__":
    main()
