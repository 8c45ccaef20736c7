"""Sweep of the boundary term's weight and the prior on real photos.

Usage::

    python benchmarks/boundary_term.py [--lambdas 0,10,25] [--a1 2500,300,0] [--a0 250,50]
                                       [--data benchmarks/out/bsds/tune] [--workers 2]

The image posterior with the boundary term of :mod:`swcuts.models.boundary`
(log π −= λ·sqrt(pixels/1e5) Σ_{cut edges} w_ij) is run with SW cuts on
the default atoms, budget and schedule, for every combination of λ and the
prior weights per 10^5 pixels (a0, a1), and the mean scores against every
annotator are printed. This is how ``segment``'s model "contrast" was
chosen (λ 10, a1 0 on the tuning half; its a0 was then raised from 50 to
200 with ``benchmarks/photo_sweep.py``). Run ``benchmarks/bsds.py``
(or ``real_photos.py``) first: it makes the tuning and held-out halves
under ``benchmarks/out/bsds``.
"""

from __future__ import annotations

import argparse
import collections
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from swcuts.inference.anneal import Schedule, anneal
from swcuts.segmentation.options import DEFAULT_T0_SWC, DEFAULTS, default_n_atoms, default_steps
from swcuts.segmentation.image_models import MODELS
from swcuts.segmentation.build import build_posterior
from swcuts.evaluation.datasets import open_dataset
from swcuts.segmentation.image_models import BINS
from swcuts.image.prepare import prepare_image
from swcuts.evaluation.metrics.scores import benchmark_scores
from swcuts.samplers import KERNELS

ROOT = Path(__file__).resolve().parents[1]


def run(task):
    data, name, lam, a0, a1 = task
    sample = open_dataset(data).read(name)
    features, _ = prepare_image(sample.image)
    h, w = features.shape[:2]
    scale = h * w / 1e5
    posterior = dict(bins=BINS, a0=a0 * scale, a1=a1 * scale, a2=MODELS["contrast"]["a2"],
                     kappa=DEFAULTS["kappa"], edge_scale=DEFAULTS["edge_scale"], q_max=DEFAULTS["q_max"],
                     boundary=lam * np.sqrt(scale))
    atoms, graph, q, model = build_posterior(features, "slic", default_n_atoms(h * w), seed=0, **posterior)
    state = model.new_state(np.zeros(graph.n_vertices, np.int64))
    start = time.perf_counter()
    anneal(KERNELS["swc"](model, q), state, Schedule(DEFAULT_T0_SWC, DEFAULTS["t_final"]),
           rng=np.random.default_rng(0), steps=default_steps("swc", graph.n_vertices))
    labels = state.partition.compact_labels()[atoms]
    scores = benchmark_scores(labels, sample.truths)
    scores.update(n_segments=int(labels.max()) + 1, seconds=time.perf_counter() - start)
    return (lam, a0, a1), scores


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lambdas", default="0,10,25")
    ap.add_argument("--a0", default="250")
    ap.add_argument("--a1", default="2500,300,0")
    ap.add_argument("--data", default=str(ROOT / "benchmarks" / "out" / "bsds" / "tune"))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    floats = lambda text: [float(x) for x in text.split(",")]  # noqa: E731
    names = list(open_dataset(args.data).names)
    tasks = [(args.data, n, lam, a0, a1) for lam in floats(args.lambdas) for a0 in floats(args.a0)
             for a1 in floats(args.a1) for n in names]
    results = collections.defaultdict(list)
    with Pool(args.workers) as pool:
        for key, scores in pool.imap_unordered(run, tasks):
            results[key].append(scores)
    print(f"{len(names)} images of {args.data}; λ per boundary pixel, a0 and a1 per 10^5 pixels")
    print("| λ | a0 | a1 | PRI | VoI | covering | boundary F | segments |")
    print("|---|---|---|---|---|---|---|---|")
    for (lam, a0, a1), rows in sorted(results.items()):
        m = lambda c: np.mean([r[c] for r in rows])  # noqa: E731
        print(f"| {lam:g} | {a0:g} | {a1:g} | {m('pri'):.3f} | {m('voi'):.3f} | {m('covering'):.3f} | "
              f"{m('bf'):.3f} | {m('n_segments'):.1f} |")


if __name__ == "__main__":
    main()
