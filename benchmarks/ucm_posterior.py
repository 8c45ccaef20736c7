"""Does the "learned" posterior keep the UCM's segmentation, or walk away
from it? (issue 34, round 9; the UCM is benchmarks/ucm.py's.)

Usage::

    python benchmarks/ucm_posterior.py --split val --threshold T [--every K] \\
        [--strength p] [--min-size PIXELS] [--hot] [--set KEY=VALUE,...] [--against FILE] [--out benchmarks/out/ucm]

For each photo: the default ``segment()`` (seed 0), the UCM cut at ``T`` on
the same atoms (since round 9 the default's merged atoms; round 9's figures
in docs/real_photos.md were measured before, on the ~970 watershed atoms), and the swc kernel of the same posterior started from the
UCM cut at the cold end of the default schedule (T_final, constant: a
quench that keeps the start unless the posterior prefers a neighbour) with
the default step budget. For each of the three: −log π under the posterior
(and its terms), the scores against every annotator. Rows are cached per
photo; ``--set``: the "learned" posterior's weights changed (as
model_sweep.py's), for the default run and the quench; ``<what>-t<T>.json`` in model_sweep's format for ``--against``.
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
from model_sweep import SPLITS, paired, parse_set
from ucm import SCORES, absorb_small, pair_strength, ucm_cut


def run_one(args):
    image_path, truth_path, strength, threshold, hot, min_size, setting = args
    from scipy.io import loadmat

    import swcuts
    from swcuts.evaluation.metrics import benchmark_scores
    from swcuts.image.boundary_detector import boundary_probability
    from swcuts.inference.anneal import Schedule, anneal
    from swcuts.segmentation.image_models import MODELS, model_temperature
    from swcuts.segmentation.options import resolve_options
    from swcuts.segmentation.segment import _default_budget, _prepare

    MODELS["learned"].update(setting)

    image = swcuts.load_image(image_path)
    gt = loadmat(truth_path)["groundTruth"]
    truths = [gt[0, k]["Segmentation"][0, 0].astype(np.int64) for k in range(gt.shape[1])]
    seg = swcuts.segment(image, seed=0)
    model, q, atoms = seg.model, seg.edge_probabilities, seg.atoms
    options = resolve_options(model="learned", seed=0)
    features, _, _ = _prepare(image, -1, options)
    options = options.on_image(features)
    prob = boundary_probability(features)
    n = seg.graph.n_vertices
    values = pair_strength(prob, strength)
    ucm = ucm_cut(atoms, seg.graph, values, threshold)
    if min_size:
        ucm = absorb_small(ucm, atoms, values, min_size)
    unit = model_temperature("learned")
    steps, stop = _default_budget(options.default_steps(n))
    t = (options.t0 if hot else options.t_final) * unit
    state = model.new_state(ucm.copy())
    kernel = options.spec.kernel(model, q)
    start = time.process_time()
    result = anneal(kernel, state, Schedule(t, options.t_final * unit), rng=np.random.default_rng(0), steps=steps,
                    stop=None if hot else stop)
    quench = state.partition.compact_labels()
    row = {"quench_cpu": time.process_time() - start, "quench_steps": int(result.steps)}
    for what, labels in (("default", seg.vertex_labels), ("ucm", ucm), ("from_ucm", quench)):
        terms = model.log_target_terms(labels)
        row[what] = {k: v for k, v in benchmark_scores(labels[atoms], truths).items() if k in SCORES}
        row[what]["neg_log_pi"] = -sum(terms.values())
        row[what]["terms"] = {k: -v for k, v in terms.items()}
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="val", choices=sorted(SPLITS))
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--strength", default="p", choices=("p", "logodds"))
    ap.add_argument("--threshold", type=float, required=True)
    ap.add_argument("--min-size", type=int, default=0, help="as benchmarks/ucm.py's")
    ap.add_argument("--set", default="", help="the learned posterior's MODELS entry updated, as model_sweep.py")
    ap.add_argument("--hot", action="store_true", help="start at the schedule's t0 (a full anneal) instead")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "ucm"))
    ap.add_argument("--against", default=None)
    args = ap.parse_args()
    base = SPLITS[args.split]
    names = sorted((p.stem for p in (base / "images").glob("*.jpg")), key=int)[args.start::args.every]
    setting = parse_set(args.set)
    tag = ("-".join(f"{k}{v}" for k, v in sorted(setting.items())) + f"posterior-{args.strength}-t{args.threshold}"
           + (f"-min{args.min_size}" if args.min_size else "") + ("-hot" if args.hot else ""))
    cache = Path(args.out) / args.split / f"{tag}.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    rows = json.loads(cache.read_text()) if cache.exists() else {}
    for n in names:
        if n not in rows:
            rows[n] = run_one((str(base / "images" / f"{n}.jpg"), str(base / "groundTruth" / f"{n}.mat"),
                               args.strength, args.threshold, args.hot, args.min_size, setting))
            cache.write_text(json.dumps(rows, indent=1))
    other = json.loads(Path(args.against).read_text()) if args.against else None
    print(f"{tag} on {len(names)} {args.split} photos ({cache})")
    for what in ("default", "ucm", "from_ucm"):
        per = {n: rows[n][what] for n in names}
        (cache.parent / f"{tag}-{what}.json").write_text(json.dumps(per, indent=1))
        line = f"  {what:9s} " + " / ".join(f"{statistics.mean(r[k] for r in per.values()):.3f}" for k in SCORES)
        if other is not None:
            k, d = paired(per, other, names)
            line += f"   paired ({k}): " + " ".join(f"{d[s][0]:+.3f} ({d[s][1]:+.1f})" for s in SCORES)
        print(line)
    for what in ("ucm", "from_ucm"):
        d = [rows[n][what]["neg_log_pi"] - rows[n]["default"]["neg_log_pi"] for n in names]
        lower = sum(x < 0 for x in d)
        rel = [x / abs(rows[n]["default"]["neg_log_pi"]) * 100 for x, n in zip(d, names)]
        print(f"  -log pi({what}) - -log pi(default): median {statistics.median(d):+.1f} nats "
              f"({statistics.median(rel):+.2f} %), lower than the default's on {lower} of {len(d)}")
        terms = rows[names[0]][what]["terms"]
        print("    mean terms difference: " + ", ".join(
            f"{k} {statistics.mean(rows[n][what]['terms'][k] - rows[n]['default']['terms'][k] for n in names):+.1f}"
            for k in terms))
    print(f"  quench: median {statistics.median(rows[n]['quench_cpu'] for n in names):.2f} s CPU, "
          f"{statistics.median(rows[n]['quench_steps'] for n in names):.0f} steps")


if __name__ == "__main__":
    main()
