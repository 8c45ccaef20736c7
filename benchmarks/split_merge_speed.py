"""Updates per second of split-merge (and random split, triadic, tree-guided) on BSDS photos' atom graphs.

Usage::

    python benchmarks/split_merge_speed.py [--photos N] [--steps S] [--data DIR]
                                           [--samplers NAME ...]

For each of the first N development photos (``bsds500-train``, default 3):
the default pipeline (``swcuts.segment``: atoms, graph, the default image
model) with 2,000 SW-cut steps, whose segmentation is the start state (a
state the samplers meet mid-run); then S updates (default 3,000) of each
sampler at T = 1 from a copy of it, timed in CPU seconds
(``time.process_time``), after a 20-update warm-up that compiles. A kernel
with a compiled ``run`` (``kernel.compiled``) makes them in one call, else
its ``step`` is called S times; ``--steps-only`` times ``step`` always (the
Python path of a compiled kernel). Prints one row per photo and sampler:
atoms, labels at the start, updates/s, acceptance. ``--samplers`` picks
some of split-merge, random-split, triadic, tree-guided (its default
moves, "both") and tree-guided-global (global moves only).
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

import swcuts
from swcuts.samplers.common import seed_compiled_rng


def _kernels():
    from swcuts.samplers.split_merge import RandomSplit, SplitMerge

    out = {"split-merge": SplitMerge, "random-split": RandomSplit}
    try:
        from swcuts.samplers.triadic import Triadic

        out["triadic"] = Triadic
    except ImportError:
        pass
    from functools import partial

    from swcuts.samplers.tree_guided import TreeGuided

    out["tree-guided"] = TreeGuided
    out["tree-guided-global"] = partial(TreeGuided, moves="global")
    return out


def _time(kernel, state, rng, steps, steps_only):
    temps = np.ones(steps)
    use_run = getattr(kernel, "compiled", False) and not steps_only
    if use_run:
        kernel.run(state, rng, temps[:20])
    else:
        for _ in range(20):
            kernel.step(state, rng, 1.0)
    t0 = time.process_time()
    if use_run:
        acc = kernel.run(state, rng, temps)[0]
    else:
        acc = 0
        for _ in range(steps):
            info = kernel.step(state, rng, 1.0)
            acc += bool(info.accepted and info.moved)
    return time.process_time() - t0, acc, use_run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--photos", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--data", default="/work/shared/data/bsds500-train")
    ap.add_argument("--steps-only", action="store_true")
    ap.add_argument("--samplers", nargs="+", default=["split-merge", "random-split", "triadic"])
    args = ap.parse_args(argv)
    from skimage.io import imread

    paths = sorted(pathlib.Path(args.data, "images").glob("*.jpg"))[:args.photos]
    print("| photo | atoms | labels | sampler | path | updates/s | accepted |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for p in paths:
        seg = swcuts.segment(imread(p), sampler="swc", steps=2000, seed=0)
        model = seg.model
        for name, cls in _kernels().items():
            if name not in args.samplers:
                continue
            kernel = cls(model)
            rng = np.random.default_rng(0)
            seed_compiled_rng(rng)
            state = model.new_state(seg.vertex_labels)
            cpu, acc, use_run = _time(kernel, state, rng, args.steps, args.steps_only)
            print(f"| {p.stem} | {model.n_vertices} | {np.unique(seg.vertex_labels).size} | {name} | "
                  f"{'run' if use_run else 'step'} | {args.steps / cpu:,.0f} | {acc / args.steps:.3f} |",
                  flush=True)


if __name__ == "__main__":
    main()
