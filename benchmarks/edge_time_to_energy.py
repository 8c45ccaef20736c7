"""Time to reach an energy with eq. 53's SW-cut edge probabilities against the
learned ones (``swcuts.graph.learned_edges``), on the same posterior.

Usage: ``python benchmarks/edge_time_to_energy.py``

Every 10th BSDS500 validation photo (10), model "learned", seed 0, a 4 s time
budget each, once with ``edges`` "kl" (eq. 53) and once "learned". The edge
probabilities change the proposals, not the posterior, so the energies
compare. Per photo: the seconds each run takes to reach the common level (the
higher of the two runs' best energies), each run's best energy above that level
at 0.5, 1 and 2 s, and both segment counts; then the medians. Warm (one run of
each first); the 1-minute load average is printed.
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
EDGES = ("kl", "learned")
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


def run(image, edges, **kwargs):
    MODELS["learned"]["edges"] = edges
    return swcuts.segment(image, seed=0, model="learned", **kwargs)


def main():
    images = [swcuts.load_image(p) for p in sorted(glob.glob(str(VAL / "*.jpg")))[1::10]]
    for edges in EDGES:
        run(images[0], edges, steps=2000)  # compile
    rows = []
    print("seconds to the level (eq.53, learned) | above the level at 0.5/1/2 s, eq.53 then learned | segments")
    for image in images:
        runs = {e: run(image, e, time_budget=4.0) for e in EDGES}
        level = max(min(r.trace.energy) for r in runs.values())
        row = [time_to(runs[e].trace, level) for e in EDGES]
        row += [best_at(runs[e].trace, t) - level for e in EDGES for t in TIMES]
        row += [int(runs[e].labels.max()) + 1 for e in EDGES]
        rows.append(row)
        print(" ".join(f"{x:.1f}" for x in row), flush=True)
    r = np.array(rows)
    print(f"median seconds to the common level: eq. 53 {np.median(r[:, 0]):.2f}, learned {np.median(r[:, 1]):.2f}; "
          f"learned faster on {(r[:, 1] < r[:, 0]).sum()} of {len(r)}")
    print("median energy above the level at 0.5 / 1 / 2 s: eq. 53", np.median(r[:, 2:5], axis=0).round(0),
          "learned", np.median(r[:, 5:8], axis=0).round(0))
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
