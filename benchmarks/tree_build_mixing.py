"""Mixing of the tree-guided sampler with each global tree build, on the toy.

Usage::

    python benchmarks/tree_build_mixing.py [--sizes 1000,10000] [--seeds 3]
        [--seconds 1000:6,10000:15] [--builds balanced,matching,greedy]

For each n, build (``TreeGuided(tree_build=...)``) and seed: the chain of
``step`` calls (global and local moves, the default mix) from one cluster
holding every item, for a fixed wall time (after compiling the helpers
on a small model and building the global tree, both untimed); printed
are the acceptance rates of splits and merges, the log posterior and the
number of clusters reached, and the adjusted Rand index to the truth.
The data are Lee & Choi's 13 Gaussian clusters
(:func:`swcuts.evaluation.synthetic.clusters.lee_choi_gaussians`, seed 0), NIW
``preset="lee-choi"``, DP alpha = 1, as in ``benchmarks/sampler_speed.py``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from swcuts.evaluation.metrics.regions import adjusted_rand_index
from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
from swcuts.samplers.tree_guided.kernel import TreeGuided
from swcuts.samplers.common import seed_compiled_rng


def chain(model, build, seed, seconds):
    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    kernel = TreeGuided(model, tree_build=build)
    kernel.global_tree()
    kernel._lifting()
    state = model.new_state(np.zeros(model.n_vertices, np.int64))
    steps = 0
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        kernel.step(state, rng, 1.0)
        steps += 1
    return kernel, state, steps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seconds", default="1000:6,10000:15", help="n:seconds,...")
    ap.add_argument("--builds", default="balanced,matching,greedy")
    args = ap.parse_args(argv)
    secs = {int(a): float(b) for a, b in (x.split(":") for x in args.seconds.split(","))}
    warm = MixtureModel(lee_choi_gaussians(200, seed=0)[0], "gaussian", preset="lee-choi")
    for build in args.builds.split(","):
        chain(warm, build, 0, 0.5)
    print(f"{'n':>7} {'build':>9} {'seed':>4} {'s':>4} {'steps':>7} {'split acc':>9} "
          f"{'merge acc':>9} {'log pi':>12} {'K':>4} {'ARI':>5}")
    for n in (int(x) for x in args.sizes.split(",")):
        data, truth = lee_choi_gaussians(n, seed=0)
        model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
        for build in args.builds.split(","):
            for seed in range(args.seeds):
                kernel, state, steps = chain(model, build, seed, secs[n])
                r = kernel.acceptance_rates()
                print(f"{n:>7,} {build:>9} {seed:>4} {secs[n]:>4g} {steps:>7} {r['split']:>9.4f} "
                      f"{r['merge']:>9.4f} {state.log_pi:>12.1f} {state.partition.n_labels:>4} "
                      f"{adjusted_rand_index(state.labels, truth):>5.3f}", flush=True)


if __name__ == "__main__":
    main()
