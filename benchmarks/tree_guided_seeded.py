"""Seeded results of the tree-guided kernel, to compare before and after a change.

Usage::

    python benchmarks/tree_guided_seeded.py [--segment]

Prints, for ``swcuts.cluster`` on Lee & Choi's toy (n = 1,000 and 5,000,
data seed 0, seed 0, 20,000 steps) with ``sampler="tree-guided"`` and
``tree_build`` greedy and balanced, a hash of the final labels, the number
of labels, the log posterior and the accepted count; with ``--segment``
also the energy of ``swcuts.segment`` with ``sampler="tree-guided"`` on
``skimage.data.coffee()[::4, ::4]``, seed 3, 20,000 steps, model
"contrast" (97811.39562149861 when this script was written; the default
model on atoms has been "window" since, 99553.52169225403, and the default
atoms watershed's, 99220.12578089532). A change that keeps the order of
random draws must print the same lines.
"""

from __future__ import annotations

import argparse
import hashlib

import numpy as np

import swcuts
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians


def _hash(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(a, np.int64).tobytes()).hexdigest()[:12]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segment", action="store_true", help="also the seeded segment() energy")
    args = ap.parse_args(argv)
    for n in (1000, 5000):
        data, _ = lee_choi_gaussians(n, seed=0)
        for build in ("greedy", "balanced"):
            r = swcuts.cluster(data, sampler="tree-guided", seed=0, steps=20000,
                               sampler_options={"tree_build": build})
            print(f"cluster n={n} {build}: labels {_hash(r.labels)} K={r.labels.max() + 1} "
                  f"log_posterior {r.log_posterior!r} accepted {r.accepted}")
    if args.segment:
        import skimage

        s = swcuts.segment(skimage.data.coffee()[::4, ::4], sampler="tree-guided", seed=3,
                           steps=20000, model="contrast")
        print("segment energy", repr(s.energy))


if __name__ == "__main__":
    main()
