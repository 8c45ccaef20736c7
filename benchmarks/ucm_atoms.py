"""The default "learned" posterior on coarser atoms: the default's watershed
atoms merged by the mean-strength hierarchy (benchmarks/ucm.py's UCM) up to a
fine threshold, so that every atom boundary the sampler can cut is one whose
mean log-odds is at least that (issue 34, round 9; a screen, not a library
option).

Usage::

    python benchmarks/ucm_atoms.py --split val --level L [--min-size PIXELS] [--every K] \\
        [--against FILE] [--out benchmarks/out/ucm]

Per photo: the default atoms, graph and detector map (seed 0), the atoms
merged by :func:`swcuts.graph.superatoms.merge_weakest` (``min_size`` first,
then the weakest mean log-odds boundary while below ``level``), the default
"learned" posterior built on them (the same weights, window, evidence and
learned q to the power 8, as :func:`swcuts.segmentation.build.build_posterior`)
and annealed as ``segment()`` does (its swc budget and stop rule for the new
vertex count). Scored as model_sweep.py; rows in its format.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from model_sweep import SPLITS
from ucm import SCORES, pair_strength, paired, photo_graph


def run_one(args):
    image_path, truth_path, level, min_size = args
    from scipy.io import loadmat

    import swcuts
    from swcuts.evaluation.metrics import benchmark_scores
    from swcuts.graph.learned_edges import learned_edge_probabilities
    from swcuts.graph.superatoms import merge_weakest
    from swcuts.inference.budget import Budget
    from swcuts.models.image import ImageModel
    from swcuts.segmentation.segment import _run_sampler

    image = swcuts.load_image(image_path)
    gt = loadmat(truth_path)["groundTruth"]
    truths = [gt[0, k]["Segmentation"][0, 0].astype(np.int64) for k in range(gt.shape[1])]
    start = time.process_time()
    features, atoms, graph, _, prob, options = photo_graph(image)
    sa = merge_weakest(atoms, graph, pair_strength(prob, "logodds"), max_level=level, min_size=min_size)
    p = options.posterior_params()
    q = np.minimum(learned_edge_probabilities(features, sa.labels, sa.graph, prob) ** p["edge_power"], p["q_max"])
    model = ImageModel(features, sa.labels, sa.graph, bins=p["bins"], a0=p["a0"], a1=p["a1"], a2=p["a2"],
                       kappa=p["kappa"], boundary=p["boundary"], evidence=p["evidence"], window=p["window"],
                       likelihood_weight=p["likelihood_weight"], boundary_map=prob,
                       evidence_offset=p["evidence_offset"])
    run = _run_sampler(options, features, (sa.labels, sa.graph, q, model), np.random.default_rng(0), False,
                       Budget.of(None))
    row = {k: v for k, v in benchmark_scores(run.vertex_labels[run.atoms], truths).items() if k in SCORES}
    row["cpu"] = time.process_time() - start
    row["n_atoms"] = int(sa.graph.n_vertices)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="val", choices=sorted(SPLITS))
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--level", type=float, required=True)
    ap.add_argument("--min-size", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "ucm"))
    ap.add_argument("--against", default=None)
    args = ap.parse_args()
    base = SPLITS[args.split]
    names = sorted((p.stem for p in (base / "images").glob("*.jpg")), key=int)[args.start::args.every]
    cache = Path(args.out) / args.split / f"atoms-level{args.level}-min{args.min_size}.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    rows = json.loads(cache.read_text()) if cache.exists() else {}
    for n in names:
        if n not in rows:
            rows[n] = run_one((str(base / "images" / f"{n}.jpg"), str(base / "groundTruth" / f"{n}.mat"),
                               args.level, args.min_size))
            cache.write_text(json.dumps(rows, indent=1))
    got = [rows[n] for n in names]
    print(f"learned posterior on UCM atoms (level {args.level}, min {args.min_size}) on {len(got)} {args.split} "
          f"photos ({cache}): {statistics.mean(r['n_atoms'] for r in got):.0f} atoms, median "
          f"{statistics.median(r['cpu'] for r in got):.2f} s CPU")
    line = "  " + " / ".join(f"{statistics.mean(r[k] for r in got):.3f}" for k in SCORES)
    if args.against:
        k, d = paired(rows, json.loads(Path(args.against).read_text()), names)
        line += f"   paired ({k}): " + " ".join(f"{d[s][0]:+.3f} ({d[s][1]:+.1f})" for s in SCORES)
    print(line)


if __name__ == "__main__":
    main()
