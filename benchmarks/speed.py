"""Speed of swcuts on a 481x321 photo with about 1,000 atoms.

Prints each measured figure next to its target:

* SWC-2 steps per second >= 20,000; SWC-1 >= 5,000;
* annealing to within 1% of the best energy of five long runs in <= 0.5 s;
* SW-cuts reach the final energy of a 60-second Gibbs run >= 50x sooner;
* the whole ``swcuts segment`` command, warm, <= 3 s wall.

Run: ``python benchmarks/speed.py [--quick]`` (--quick: a 10 s Gibbs run
instead of 60 s, fewer long runs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import skimage.data
import skimage.io
import skimage.transform

import swcuts


def photo():
    img = skimage.data.coffee()
    return (skimage.transform.resize(img, (321, 481), anti_aliasing=True) * 255).astype(np.uint8)


def first_time_below(trace, level):
    e = np.asarray(trace.energy)
    s = np.asarray(trace.seconds)
    hit = np.flatnonzero(e <= level)
    return float(s[hit[0]]) if hit.size else float("inf")


def row(name, value, target, ok):
    print(f"{name:<58} {value:>14} {target:>12}  {'MET' if ok else 'NOT MET'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    img = photo()
    kw = dict(n_atoms=1000)
    swcuts.segment(img, steps=2000, **kw)  # compile / warm caches
    for name in ("swc1", "cluster-gibbs", "gibbs"):
        swcuts.segment(img, sampler=name, steps=200, **kw)

    print(f"swcuts {swcuts.__version__}: 481x321 photo (skimage.data.coffee resized)")
    print(f"{'measure':<58} {'value':>14} {'target':>12}")
    rates = {}
    for name in ("swc2", "swc1", "cluster-gibbs", "gibbs"):
        seg = swcuts.segment(img, sampler=name, seed=0, steps=200_000 if name != "swc1" else 40_000, **kw)
        rates[name] = seg.steps / seg.seconds
    n_atoms = seg.graph.n_vertices
    row(f"SWC-2 steps per second ({n_atoms} atoms)", f"{rates['swc2']:,.0f}", ">= 20,000", rates["swc2"] >= 20000)
    row("SWC-1 steps per second", f"{rates['swc1']:,.0f}", ">= 5,000", rates["swc1"] >= 5000)
    print(f"{'  (cluster Gibbs steps per second)':<58} {rates['cluster-gibbs']:>14,.0f}")
    print(f"{'  (single-site Gibbs steps per second)':<58} {rates['gibbs']:>14,.0f}")

    # Best energy of five long runs.
    n_long = 3 if args.quick else 5
    long_steps = 2_000_000
    best = min(swcuts.segment(img, seed=100 + s, steps=long_steps, **kw).energy for s in range(n_long))
    print(f"{'  best energy of %d long runs, default kernel (%d steps each)' % (n_long, long_steps):<58} {best:>14,.0f}")
    for budget in (0.25, 0.5, 1.0):
        es = [swcuts.segment(img, seed=s, time_budget=budget, **kw).energy for s in range(5)]
        gap = (np.median(es) - best) / abs(best)
        label = f"energy gap to best after {budget} s of sampling (median of 5)"
        if budget == 0.5:
            row(label, f"{100 * gap:.2f} %", "<= 1 %", gap <= 0.01)
        else:
            print(f"{'  ' + label:<58} {100 * gap:>12.2f} %")
    seg = swcuts.segment(img, seed=0, **kw)
    gap = (seg.energy - best) / abs(best)
    print(f"{'  default segment(): %d steps, %.2f s, gap' % (seg.steps, seg.seconds):<58} {100 * gap:>12.2f} %")

    # SW-cuts against a 60 s Gibbs run, same posterior, same random start.
    g_budget = 10.0 if args.quick else 60.0
    gibbs = swcuts.segment(img, sampler="gibbs", seed=1, init="random", time_budget=g_budget, **kw)
    e_g = gibbs.trace.energy[-1]
    t_g = first_time_below(gibbs.trace, e_g)
    swc = swcuts.segment(img, sampler="swc", seed=1, init="random", time_budget=min(g_budget, 5.0), **kw)
    t_s = first_time_below(swc.trace, e_g)
    ratio = t_g / t_s if t_s > 0 else float("inf")
    print(f"{'  Gibbs %.0f s run: final energy' % g_budget:<58} {e_g:>14,.0f}")
    print(f"{'  time Gibbs first reached it / time SWC-2 reached it':<58} {t_g:>8.2f} s / {t_s:.4f} s")
    row("SW-cuts speed-up over Gibbs to Gibbs's final energy", f"{ratio:,.0f}x", ">= 50x", ratio >= 50)

    # The whole command, warm.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "photo.png")
        skimage.io.imsave(path, img, check_contrast=False)
        cmd = [sys.executable, "-m", "swcuts", "segment", path, "-o", os.path.join(tmp, "out"), "--seed", "0"]
        subprocess.run(cmd, check=True, capture_output=True)
        walls = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            walls.append(time.perf_counter() - t)
    row("`swcuts segment` wall time, warm (median of 3)", f"{np.median(walls):.2f} s", "<= 3 s",
        np.median(walls) <= 3.0)


if __name__ == "__main__":
    main()
