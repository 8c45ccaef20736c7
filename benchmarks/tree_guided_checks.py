"""Two checks behind docs/papers.md ("Lee & Choi"): why tree-guided MCMC
does not lead from a random partition.

Usage::

    python benchmarks/tree_guided_checks.py [--iterations 15]

On Lee & Choi's toy (1,300 points, data seed 500, DP alpha = 1):

1. **Reversible merges.** With trees that are functions of each label's
   vertex set (exactness), a merge of labels A and B can be undone only if
   the tree of A u B can split back into exactly A and B; otherwise
   log q(X | X*) = -inf and the merge is always rejected. Printed: the
   share of reversible merges among pairs of 36 random labels, of true
   clusters, of labels near the mode, and for a true cluster cut into
   random halves.
2. **Cost of an iteration.** Time in the G = 20 global moves and in the
   local moves (about n items) of ``TreeGuided.iteration``, against a
   single-site Gibbs sweep, from 36 random labels and from the truth; the
   state and the move acceptance after ``--iterations`` iterations.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
from swcuts.samplers import KERNELS
from swcuts.samplers.common import seed_compiled_rng


def reversible(kernel, labels, pairs):
    """(reversible, total) merges of the label pairs."""
    ok = 0
    for a, b in pairs:
        A = np.flatnonzero(labels == a)
        B = np.flatnonzero(labels == b)
        lq = kernel._split_tree_logsum(kernel.tree(np.union1d(A, B)), [A, B], 1.0)
        ok += bool(np.isfinite(lq))
    return ok, len(pairs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=15)
    args = ap.parse_args(argv)
    data, truth = lee_choi_gaussians(1300, seed=500)
    mix = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    k = KERNELS["tree-guided"](mix)
    r36 = np.random.default_rng(500).integers(0, 36, 1300)
    print("1. reversible merges (the tree of the union can split back into the two labels)")
    print("   two of 36 random labels:   %d / %d" % reversible(k, r36, list(itertools.combinations(range(36), 2))[:80]))
    print("   two true clusters:         %d / %d" % reversible(k, truth, list(itertools.combinations(range(13), 2))))
    rng = np.random.default_rng(3)
    lab = truth.copy()
    moved = rng.random(1300) < 0.02
    lab[moved] = (lab[moved] + rng.integers(1, 13, moved.sum())) % 13
    st = mix.new_state(lab)
    for _ in range(3):
        mix.gibbs_sweep(st, rng)
    lab = st.partition.compact_labels()
    K = int(lab.max()) + 1
    print("   near the mode (K = %d):     %d / %d" % ((K,) + reversible(k, lab, list(itertools.combinations(range(K), 2)))))
    c = np.flatnonzero(truth == 0)
    halves = truth.copy()
    halves[c[rng.random(c.size) < 0.5]] = 13
    print("   a true cluster in random halves: %d / %d" % reversible(k, halves, [(0, 13)]))
    print(f"2. one iteration (G = 20 global moves + local moves over ~n items) vs a Gibbs sweep; "
          f"{args.iterations} iterations")
    for start, init in (("random 36", r36), ("truth", truth)):
        kern = KERNELS["tree-guided"](mix)
        gk = KERNELS["gibbs"](mix)
        rng = np.random.default_rng(1)
        seed_compiled_rng(rng)
        kern.iteration(mix.new_state(init), rng)  # compilation, global tree
        kern.counts = {key: [0, 0] for key in kern.counts}
        st = mix.new_state(init)
        t_glob = t_loc = 0.0
        for _ in range(args.iterations):
            a = time.perf_counter()
            for _ in range(kern.G):
                kern.global_move(st, rng, 1.0)
            b = time.perf_counter()
            done = 0
            while done < mix.n_vertices:
                kern.local_move(st, rng, 1.0)
                done += max(1, kern._last_local_size)
            t_glob += b - a
            t_loc += time.perf_counter() - b
        st2 = mix.new_state(init)
        a = time.perf_counter()
        for _ in range(args.iterations):
            for _ in range(mix.n_vertices):
                gk.step(st2, rng, 1.0)
        t_g = time.perf_counter() - a
        acc = {key: round(v, 3) for key, v in kern.acceptance_rates().items()}
        print(f"   from {start}: global {1e3 * t_glob / args.iterations:.1f} ms + local "
              f"{1e3 * t_loc / args.iterations:.1f} ms per iteration, Gibbs sweep "
              f"{1e3 * t_g / args.iterations:.1f} ms; then tree-guided log pi {st.log_pi:.1f} "
              f"(K {st.partition.n_labels}), Gibbs {st2.log_pi:.1f} (K {st2.partition.n_labels}), "
              f"truth {mix.log_target(truth):.1f}; acceptance {acc}")


if __name__ == "__main__":
    main()
