"""An ultrametric contour map (UCM) read from swcuts' own atoms and learned
detector map, as gPb-owt-ucm reads its segmentations from its boundaries: a
baseline for the "learned" posterior (issue 34, round 9).

Usage::

    python benchmarks/ucm.py --split val [--every K] [--thresholds 0.1,0.2,...] \\
        [--strength p|logodds] [--min-size PIXELS] [--against FILE] [--out benchmarks/out/ucm]

For each photo of the split, the atoms, their graph and the detector map of
the default ``segment()`` (model "learned", seed 0:
:func:`swcuts.segmentation.build.build_graph`) are built; then adjacent
regions are merged greedily, always the pair whose shared boundary has the
lowest MEAN strength (``p``: the pixel pair's max(P(p), P(q)) as the
boundary term reads the map, averaged over the pixel pairs of the shared
boundary; ``logodds``: the mean of its clipped log-odds), with the merged
region's boundaries the unions of its parts' (Arbelaez et al. 2011,
section 4.2: the UCM's greedy graph-based merging;
:func:`swcuts.graph.superatoms.merge_weakest`, whose merge levels never
decrease); the segmentation at threshold t is the regions after every merge
below t. ``--min-size``: then each region of fewer pixels, smallest first, is
merged into the neighbour across its weakest shared boundary (the raw cut
keeps atom-sized fragments ringed by strong boundaries). Each threshold's segmentation is scored against every annotator as
in benchmarks/model_sweep.py (PRI, VoI, best-annotator covering, boundary
F), cached per photo; the mean ± SE per threshold is printed, and paired
differences against ``--against`` (a model_sweep cache of the same split,
e.g. the default's) in paired standard errors. Each threshold's rows are
also written in model_sweep's format (``<strength>-t<T>.json``) so that
model_sweep's ``--against`` can take them.

Seconds: "build" is the preparation, detector, atoms and graph (what
``segment()`` spends before it samples); "ucm" the merging (to the largest threshold) alone. Splits as
model_sweep.py (``val`` to choose, ``rest`` held out; never the test split).
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
from model_sweep import SPLITS, paired

SCORES = ("pri", "voi", "covering_best", "bf", "n_segments")
THRESHOLDS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def photo_graph(image, seed=0, model="learned"):
    """(features, atoms, graph, q, detector map, options) of ``image`` as
    the default ``segment(model=model, seed=seed)`` builds them."""
    from swcuts.segmentation.build import build_graph
    from swcuts.segmentation.options import resolve_options
    from swcuts.segmentation.segment import _prepare

    options = resolve_options(model=model, seed=seed)
    features, _, _ = _prepare(image, -1, options)
    options = options.on_image(features)
    p = options.posterior_params()
    atoms, graph, q, prob = build_graph(features, options.atoms, options.n_atoms, seed=seed, edges=p["edges"],
                                        edge_scale=p["edge_scale"], q_max=p["q_max"],
                                        edge_power=p["edge_power"], atom_relief=p["atom_relief"],
                                        boundary_map=True)
    return features, atoms, graph, q, prob, options


def pair_strength(prob, strength="p"):
    """Per pixel pair (in :func:`swcuts.graph.region_graph.pixel_pairs`'
    order) the boundary strength: max(P(p), P(q)), or its clipped log-odds."""
    from swcuts.models.boundary import learned_pair_weights

    if strength == "logodds":
        return -learned_pair_weights(np.zeros(prob.shape), probability=prob, offset=0.0)
    from swcuts.graph.superatoms import pair_strengths

    return pair_strengths(prob)


def ucm_cut(atoms, graph, strength, threshold):
    """Atom labels 0..K-1 of the UCM cut at ``threshold``: the atoms merged
    weakest mean boundary first while it is below ``threshold``
    (:func:`swcuts.graph.superatoms.merge_weakest`, whose merge levels never
    decrease, so this is the ultrametric's cut)."""
    from swcuts.graph.superatoms import merge_weakest

    return merge_weakest(atoms, graph, strength, max_level=threshold).of_atom


def absorb_small(regions, atoms, strength, min_size):
    """The region of every atom (``regions``, 0..K-1, of the label image
    ``atoms``) after each region of fewer than ``min_size`` pixels, smallest
    first, is merged into the neighbour across its weakest shared boundary
    (lowest mean ``strength``): the first phase of
    :func:`swcuts.graph.superatoms.merge_weakest` alone."""
    from swcuts.graph.region_graph import RegionGraph
    from swcuts.graph.superatoms import merge_weakest

    image = np.asarray(regions)[atoms]
    merged = merge_weakest(image, RegionGraph.from_labels(image), strength, max_level=-np.inf, min_size=min_size)
    return merged.of_atom[regions]


def run_one(args):
    image_path, truth_path, strength, thresholds, min_size = args
    from scipy.io import loadmat

    import swcuts
    from swcuts.evaluation.metrics import benchmark_scores

    image = swcuts.load_image(image_path)
    gt = loadmat(truth_path)["groundTruth"]
    truths = [gt[0, k]["Segmentation"][0, 0].astype(np.int64) for k in range(gt.shape[1])]
    start = time.perf_counter(), time.process_time()
    _, atoms, graph, _, prob, _ = photo_graph(image)
    built = time.perf_counter(), time.process_time()
    values = pair_strength(prob, strength)
    ucm_cut(atoms, graph, values, max(thresholds))  # timed: one cut (each threshold's is cut below)
    done = time.perf_counter(), time.process_time()
    out = {"n_atoms": int(graph.n_vertices), "build_seconds": built[0] - start[0], "build_cpu": built[1] - start[1],
           "ucm_seconds": done[0] - built[0], "ucm_cpu": done[1] - built[1], "by_t": {}}
    for t in thresholds:
        labels = ucm_cut(atoms, graph, values, t)
        if min_size:
            labels = absorb_small(labels, atoms, values, min_size)
        labels = labels[atoms]
        out["by_t"][str(t)] = {k: v for k, v in benchmark_scores(labels, truths).items() if k in SCORES}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="val", choices=sorted(SPLITS))
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--strength", default="p", choices=("p", "logodds"))
    ap.add_argument("--thresholds", default=",".join(map(str, THRESHOLDS)))
    ap.add_argument("--min-size", type=int, default=0,
                    help="then merge each region of fewer pixels into its weakest-bounded neighbour")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "ucm"))
    ap.add_argument("--against", default=None, help="a model_sweep cache of the same split: paired differences")
    args = ap.parse_args()
    thresholds = [float(t) for t in args.thresholds.split(",")]
    base = SPLITS[args.split]
    names = sorted((p.stem for p in (base / "images").glob("*.jpg")), key=int)[args.start::args.every]
    tag = args.strength + (f"-min{args.min_size}" if args.min_size else "")
    cache = Path(args.out) / args.split / f"{tag}.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    rows = json.loads(cache.read_text()) if cache.exists() else {}
    for n in names:
        have = rows.get(n, {}).get("by_t", {})
        todo = [t for t in thresholds if str(t) not in have]
        if not todo:
            continue
        row = run_one((str(base / "images" / f"{n}.jpg"), str(base / "groundTruth" / f"{n}.mat"),
                       args.strength, todo, args.min_size))
        row["by_t"] = {**have, **row["by_t"]}
        rows[n] = row
        cache.write_text(json.dumps(rows, indent=1))
    got = [rows[n] for n in names]
    other = json.loads(Path(args.against).read_text()) if args.against else None
    print(f"UCM ({tag}) on {len(got)} {args.split} photos ({cache}); "
          f"median build {statistics.median(r['build_seconds'] for r in got):.2f} s wall / "
          f"{statistics.median(r['build_cpu'] for r in got):.2f} s CPU, merging "
          f"{statistics.median(r['ucm_seconds'] for r in got):.3f} s wall / "
          f"{statistics.median(r['ucm_cpu'] for r in got):.3f} s CPU, "
          f"{statistics.mean(r['n_atoms'] for r in got):.0f} atoms")
    for t in thresholds:
        per = {n: rows[n]["by_t"][str(t)] for n in names}
        (cache.parent / f"{tag}-t{t}.json").write_text(json.dumps(per, indent=1))
        means = " / ".join(f"{statistics.mean(r[k] for r in per.values()):.3f}" for k in SCORES)
        line = f"  t {t:5.3f}: {means}"
        if other is not None:
            n_both, d = paired(per, other, names)
            line += f"   paired ({n_both}): " + " ".join(f"{d[k][0]:+.3f} ({d[k][1]:+.1f})" for k in SCORES)
        print(line)


if __name__ == "__main__":
    main()
