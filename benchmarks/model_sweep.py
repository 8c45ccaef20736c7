"""Sweep the weights of a named image posterior on BSDS500 photos: scores,
segments, seconds, and whether the posterior ranks the humans first.

Usage::

    python benchmarks/model_sweep.py --model learned --set a0=5,boundary=1 \\
        [--split val|rest|train] [--every K] [--workers N] [--out benchmarks/out/sweep]

For each photo of the split (``--every K``: every K-th by sorted id), default
``segment(model=...)`` (seed 0) runs with the model's :data:`MODELS` entry
updated by ``--set`` (a0, a1, a2 and boundary per 10^5 pixels, window, bins;
``kappa``, the complexity weight, is passed to ``segment`` and ``energy``),
and its result is scored against every annotator
(:func:`swcuts.evaluation.metrics.benchmark_scores`). "humans lower": the
share of photos on which the median annotator's −log π (every annotator
scored by :func:`swcuts.energy` under the same posterior) is below that of
swcuts' answer; "gap": the median over photos of (median annotator − swcuts)
/ |swcuts| in per cent (negative: the humans are more probable). Results
are cached per setting and photo in ``--out`` (a rerun resumes); the
mean ± standard error over photos is printed.

Splits: ``val`` (100 BSDS500 validation photos: choose there), ``rest``
(the 170 training photos outside the 30 development ones: report there),
``train`` (the 30 development photos; ``--start``: the first position taken
with ``--every``). Never the test split. ``--grey``: the
photos made grey (:func:`skimage.color.rgb2gray`), cached apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")
SPLITS = {"val": SHARED / "bsds500-val", "rest": SHARED / "bsds500-train-rest",
          "train": SHARED / "bsds500-train"}
SCORES = ("pri", "voi", "covering_best", "bf", "n_segments", "seconds")


def parse_set(text: str) -> dict:
    out = {}
    for item in filter(None, (text or "").split(",")):
        key, value = item.split("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            out[key.strip()] = value.strip()
    return out


def paired(rows, other, names, keys=("pri", "voi", "covering_best", "bf", "n_segments")):
    """(number of photos in both, {key: (mean of this − that, mean / its standard error)})
    over the ``names`` that ``other`` has too (0.0 for the ratio when identical)."""
    both = [n for n in names if n in other]
    out = {}
    for key in keys:
        d = [rows[n][key] - other[n][key] for n in both]
        se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
        out[key] = (statistics.mean(d), statistics.mean(d) / se if se > 0 else 0.0)
    return len(both), out


def run_one(args) -> dict:
    model, setting, image_path, truth_path, humans, grey = args
    import swcuts
    from swcuts.evaluation.datasets import open_dataset  # noqa: F401
    from swcuts.evaluation.metrics import benchmark_scores
    from swcuts.segmentation.image_models import MODELS
    from scipy.io import loadmat

    setting = dict(setting)
    kappa = float(setting.pop("kappa", 1.0))  # a segment() option, not a MODELS entry
    MODELS[model].update(setting)
    image = swcuts.load_image(image_path)
    if grey:
        from skimage.color import rgb2gray

        image = rgb2gray(np.asarray(image)[..., :3])
    gt = loadmat(truth_path)["groundTruth"]
    truths = [gt[0, k]["Segmentation"][0, 0].astype(np.int64) for k in range(gt.shape[1])]
    start = time.perf_counter()
    seg = swcuts.segment(image, seed=0, model=model, kappa=kappa)
    seconds = time.perf_counter() - start
    row = {k: v for k, v in benchmark_scores(seg.labels, truths).items() if k in SCORES}
    row["seconds"] = seconds
    if humans:
        ours = swcuts.energy(image, seg.labels, model=model, kappa=kappa)
        theirs = sorted(swcuts.energy(image, t, model=model, kappa=kappa) for t in truths)
        median = float(np.median(theirs))
        row["humans_lower"] = float(median < ours)
        row["gap"] = 100.0 * (median - ours) / abs(ours)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="learned")
    ap.add_argument("--set", default="", help="comma list key=value of the model's MODELS entry")
    ap.add_argument("--split", default="val", choices=sorted(SPLITS))
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="with --every K: start at the photo of this position")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-humans", action="store_true", help="skip scoring the annotators")
    ap.add_argument("--grey", action="store_true", help="the grey versions of the photos (rgb2gray)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "sweep"))
    ap.add_argument("--against", default=None,
                    help="a cache file of another setting on the same split: paired differences")
    args = ap.parse_args()
    setting = parse_set(args.set)
    base = SPLITS[args.split]
    names = sorted((p.stem for p in (base / "images").glob("*.jpg")), key=int)[args.start::args.every]
    tag = f"{args.model}-" + "-".join(f"{k}{v}" for k, v in sorted(setting.items()))
    cache = Path(args.out) / (args.split + ("-grey" if args.grey else "")) / f"{tag}.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    rows = json.loads(cache.read_text()) if cache.exists() else {}
    todo = [n for n in names if n not in rows]
    jobs = [(args.model, setting, str(base / "images" / f"{n}.jpg"), str(base / "groundTruth" / f"{n}.mat"),
             not args.no_humans, args.grey) for n in todo]
    with ProcessPoolExecutor(args.workers) as pool:
        for name, row in zip(todo, pool.map(run_one, jobs)):
            rows[name] = row
            cache.write_text(json.dumps(rows, indent=1))
    got = [rows[n] for n in names]
    print(f"{args.model} {setting or '(defaults)'} on {len(got)} {args.split}{' grey' if args.grey else ''} "
          f"photos ({cache}):")
    for key in (*SCORES, "humans_lower"):
        values = [r[key] for r in got if key in r]
        if values:
            se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
            print(f"  {key:14s} {statistics.mean(values):8.4f} ± {se:.4f}")
    print("  row:", " / ".join(f"{statistics.mean([r[k] for r in got]):.3f}" for k in SCORES[:4]))
    gaps = [r["gap"] for r in got if "gap" in r]
    if gaps:
        print(f"  {'gap (median %)':14s} {statistics.median(gaps):8.2f}")
    if args.against:
        k, diffs = paired(rows, json.loads(Path(args.against).read_text()), names)
        print(f"  paired against {Path(args.against).stem} on {k} photos (this − that, "
              "in paired standard errors):")
        for key, (mean, z) in diffs.items():
            print(f"    {key:14s} {mean:+8.4f}  ({f'{z:+.1f} SE' if z else 'identical'})")


if __name__ == "__main__":
    main()
