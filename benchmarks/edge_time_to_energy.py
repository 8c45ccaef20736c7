"""Time to reach an energy with eq. 53's SW-cut edge probabilities against the
learned ones (``swcuts.graph.learned_edges``), raised to powers τ (q ↦ q^τ,
``edge_power`` of MODELS), on the same posterior.

Usage: ``python benchmarks/edge_time_to_energy.py [--powers 1,0.5,0.25] [--seconds 4]``

Every 10th BSDS500 validation photo (10), model "learned", seed 0, a time
budget each (4 s), once with ``edges`` "kl" (eq. 53) and once "learned" per
power. The edge probabilities change the proposals, not the posterior, so the
energies compare. Per photo: the seconds each run takes to reach the common
level (the highest of the runs' best energies), each run's best energy above
that level at 0.5, 1 and 2 s, and the segment counts; then the medians. Warm
(one run of each first); the CPU seconds of the runs and the 1-minute load
average are printed (the budget is wall time).
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import swcuts  # noqa: E402
from swcuts.segmentation.image_models import MODELS  # noqa: E402

VAL = ROOT.parent / "shared" / "data" / "bsds500-val" / "images"
TIMES = (0.5, 1.0, 2.0)


def best_at(trace, t):
    """The best energy a run had reached by ``t`` seconds."""
    seconds, best = np.array(trace.seconds), np.minimum.accumulate(np.array(trace.energy))
    return best[max(np.searchsorted(seconds, t, side="right") - 1, 0)]


def time_to(trace, level):
    """The seconds a run took to reach ``level`` (inf: never)."""
    seconds, best = np.array(trace.seconds), np.minimum.accumulate(np.array(trace.energy))
    hit = np.flatnonzero(best <= level)
    return seconds[hit[0]] if hit.size else np.inf


def run(image, variant, **kwargs):
    edges, power = variant
    MODELS["learned"]["edges"] = edges
    MODELS["learned"]["edge_power"] = power
    return swcuts.segment(image, seed=0, model="learned", **kwargs)


def main():
    import argparse
    import time

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--powers", default="1", help="comma list of powers τ on the learned q")
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    variants = [("kl", 1.0)] + [("learned", float(p)) for p in args.powers.split(",")]
    names = ["eq.53"] + [f"learned^{p:g}" for _, p in variants[1:]]
    images = [swcuts.load_image(p) for p in sorted(glob.glob(str(VAL / "*.jpg")))[1::10]]
    for v in variants:
        run(images[0], v, steps=2000)  # compile
    rows, segments = [], []
    cpu = time.process_time()
    print("per photo, per variant (" + ", ".join(names) + "): seconds to the common level | segments")
    for image in images:
        runs = [run(image, v, time_budget=args.seconds) for v in variants]
        level = max(min(r.trace.energy) for r in runs)
        rows.append([[time_to(r.trace, level)] + [best_at(r.trace, t) - level for t in TIMES] for r in runs])
        segments.append([int(r.labels.max()) + 1 for r in runs])
        print(" ".join(f"{row[0]:.2f}" for row in rows[-1]), "|", *segments[-1], flush=True)
    r = np.array(rows)  # photo, variant, (time, above at TIMES)
    fastest = np.argmin(r[:, :, 0], axis=1)
    for k, name in enumerate(names):
        print(f"{name:13s} median seconds to the level {np.median(r[:, k, 0]):6.2f}; fastest on "
              f"{(fastest == k).sum():2d} of {len(r)}; median energy above the level at 0.5 / 1 / 2 s "
              f"{np.median(r[:, k, 1:], axis=0).round(0)}; segments {np.median(np.array(segments)[:, k]):.0f}")
    print(f"CPU seconds of the timed runs {time.process_time() - cpu:.0f}; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
