"""Depth of the tree-guided sampler's trees on the Lee & Choi toy, as n grows.

Usage::

    python benchmarks/tree_depth.py [--sizes 1000,10000,100000] [--builds greedy,balanced,matching]

The StocInsert walk of a split, the replay of a merge's reverse split and
any update of a label's tree after a single-item move cost O(depth) (see
``docs/algorithms/tree_guided.md``, "What still grows with the labels'
sizes"). This prints, per n: the leaf depths of the fixed global tree
(mean, max), and those of the tree induced on the largest true cluster
(the tree of that label), with the time to build it, for each global
tree build (``TreeGuided(tree_build=...)``) and the time to build the
global tree.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
from swcuts.samplers.tree_guided.kernel import TreeGuided


def leaf_depths(tree):
    """Depth of every leaf (the root has depth 0)."""
    depth = np.zeros(2 * tree.n - 1, np.int64)
    for v in range(2 * tree.n - 3, -1, -1):  # parents have larger ids
        depth[v] = depth[tree.parent[v]] + 1
    return depth[:tree.n]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--builds", default="greedy,balanced,matching")
    args = ap.parse_args(argv)
    print(f"{'build':>9} {'n':>8} {'global s':>9} {'global mean':>12} {'max':>7} {'label m':>8} "
          f"{'label mean':>11} {'max':>7} {'build ms':>9}")
    for n, build in ((int(x), b) for x in args.sizes.split(",") for b in args.builds.split(",")):
        data, truth = lee_choi_gaussians(n, seed=0)
        kernel = TreeGuided(MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi"),
                            tree_build=build)
        t0 = time.perf_counter()
        g = leaf_depths(kernel.global_tree())
        gs = time.perf_counter() - t0
        items = np.flatnonzero(truth == np.bincount(truth).argmax()).astype(np.int64)
        kernel.tree(items[:2])  # the lookup tables, outside the timing
        t0 = time.perf_counter()
        tree = kernel.tree(items)
        ms = 1e3 * (time.perf_counter() - t0)
        d = leaf_depths(tree)
        print(f"{build:>9} {n:>8,} {gs:>9.2f} {g.mean():>12.1f} {g.max():>7,} {items.size:>8,} {d.mean():>11.1f} "
              f"{d.max():>7,} {ms:>9.2f}")


if __name__ == "__main__":
    main()
