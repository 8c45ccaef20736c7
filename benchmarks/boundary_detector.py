"""The learned boundary detector (swcuts.image.boundary_detector) on
held-out BSDS500 photos: ODS F, OIS F and AP beside Canny's, colour and
grey, and its time per photo beside the 0.4 s target.

Usage: python benchmarks/boundary_detector.py [--limit N] [--out benchmarks/out/boundary_detector]
                                              [--canny-tune 20] [--skip-speed] [--weights PATH]

Held out: the 170 photos of ``bsds500-train-rest``, which the detector's
training (``benchmarks/train_boundaries.py``: train 30 + val 100) never
read. Scoring (``benchmarks/soft_boundaries.py``, as
``benchmarks/posterior.py``): each map is cut at thresholds, thinned, and
matched one-to-one to every annotator's boundaries within 0.0075 x the
diagonal. The detector's map is first thinned to its ridges
(:func:`swcuts.image.boundary_detector.nonmax_suppress`), as Pb's is.

* ``pb-colour``: :func:`boundary_probability` of the CIELAB features;
* ``pb-grey``: the same photo made grey (:func:`skimage.color.rgb2gray`),
  scored with the grey detector;
* ``pb-colour-ms``: the colour detector at the scales :data:`MULTISCALE`
  (``boundary_probability(scales=...)``), maps averaged;
* ``pb-colour-file``, ``pb-grey-file`` (with ``--weights PATH``): the
  detector of another weights file (e.g. a scratch one written by
  ``benchmarks/train_boundary_conv.py select``), beside the shipped one;
* ``canny``: soft Canny (``skimage.feature.canny``, 25 high thresholds),
  its sigma (1, 2 or 3) chosen by ODS F on the first ``--canny-tune``
  val photos.

``--posterior N --models window,learned``: also, on every N-th held-out photo,
the posterior boundary map of each model
(:meth:`swcuts.inference.posterior_samples.PosteriorSamples.boundary_probability`,
thin mode; ``sample_posterior`` defaults, seed 0, ``--posterior-budget`` s),
scored as ``benchmarks/posterior.py`` does (12 thresholds), with the detector
and Canny on the same photos.

Speed: the warm median time of :func:`boundary_probability` on the first
photos (481x321), with the 1-minute load average.

Counts are cached in ``--out`` (a rerun resumes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from soft_boundaries import THRESHOLDS, canny_map, counts, scores  # noqa: E402
from swcuts.evaluation.datasets import open_dataset  # noqa: E402
from swcuts.evaluation.metrics.boundaries import BSDS_MAX_DIST, boundary_map  # noqa: E402
from swcuts.image.boundary_detector import boundary_probability, nonmax_suppress  # noqa: E402
from swcuts.image.prepare import prepare_image  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
PB_THRESHOLDS = np.array([0.01, 0.02, 0.03, 0.045, 0.06, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6])
CANNY_THRESHOLDS = np.linspace(0.04, 1.0, 13)
CANNY_SIGMAS = (1.0, 2.0, 3.0)
TARGET_SECONDS = 0.4
#: The scales of the ``pb-colour-ms`` row (``boundary_probability(scales=...)``).
MULTISCALE = (1.0, 2.0)
PUBLISHED = {"Canny": 0.60, "Pb (2004)": 0.67, "gPb": 0.71, "human": 0.79}


def features(image, grey=False):
    from skimage.color import rgb2gray

    img = np.asarray(image)
    if grey and img.ndim == 3:
        img = rgb2gray(img[..., :3])
    return prepare_image(img)[0]


def pb_map(image, grey=False, scales=None, detector=None):
    return nonmax_suppress(boundary_probability(features(image, grey), scales=scales, detector=detector))


def evaluate(split, names, detectors, cache):
    ds = open_dataset(DATA / split)
    cache.mkdir(parents=True, exist_ok=True)
    results = {d: [] for d in detectors}
    t0 = time.perf_counter()
    for i, name in enumerate(names):
        sample = None
        for d, (fn, thr) in detectors.items():
            f = cache / f"{split}-{name}-{d}.npy"
            if not f.exists():
                if sample is None:
                    sample = ds.read(name)
                    h, w = sample.image.shape[:2]
                    radius = BSDS_MAX_DIST * float(np.hypot(h, w))
                    truth_b = [boundary_map(t) for t in sample.truths]
                np.save(f, counts(fn(sample.image), truth_b, radius, thr))
            results[d].append(np.load(f))
        if (i + 1) % 10 == 0:
            print(f"  {split}: {i + 1}/{len(names)} photos, {time.perf_counter() - t0:.0f} s", flush=True)
    return results


def speed(n):
    from swcuts.io.image_read import load_image

    ds = open_dataset(DATA / "bsds500-train-rest")
    names = sorted(ds.names, key=int)[:n]
    rows = []
    for grey in (False, True):
        times = []
        for name in names:
            z = features(load_image(ds.image_path(name)), grey)
            boundary_probability(z)                      # warm: weights loaded, numba compiled
            t = time.perf_counter()
            boundary_probability(z)
            times.append(time.perf_counter() - t)
        med = float(np.median(times))
        load = os.getloadavg()[0]
        rows.append({"mode": "grey" if grey else "colour", "median_s": med, "max_s": float(max(times)), "load": load})
        print(f"  {'grey' if grey else 'colour':<7} median {med:.3f} s, max {max(times):.3f} s per photo "
              f"({len(times)} photos, load average {load:.1f}); target <= {TARGET_SECONDS} s: "
              f"{'MET' if med <= TARGET_SECONDS else 'MISSED'}")
    return rows


def posterior_map(image, model, budget):
    from swcuts.segmentation.posterior import sample_posterior

    return sample_posterior(image, seed=0, time_budget=budget, model=model).boundary_probability(mode="thin")


def posterior_maps(names, detectors, models, budget, out):
    """The posterior boundary maps of ``models`` beside ``detectors`` on ``names``."""
    both = dict(detectors)
    for m in models:
        both[f"posterior-{m}"] = ((lambda im, m=m: posterior_map(im, m, budget)), THRESHOLDS)
    t, cpu = time.perf_counter(), time.process_time()
    res = evaluate("bsds500-train-rest", names, both, out / "counts")
    print(f"\nPosterior boundary maps ({budget:g} s of sample_posterior each) on {len(names)} held-out photos "
          f"({time.perf_counter() - t:.0f} s wall, {time.process_time() - cpu:.0f} s CPU, load average "
          f"{os.getloadavg()[0]:.1f})")
    print(f"{'map':<18} {'ODS F':>6} {'OIS F':>6} {'AP':>6} {'thr':>5}")
    table = {}
    for d, (_, thr) in both.items():
        table[d] = scores(res[d], thr)
        print(f"{d:<18} {table[d]['ods']:6.3f} {table[d]['ois']:6.3f} {table[d]['ap']:6.3f} "
              f"{table[d]['threshold']:5.2f}")
    return {"photos": list(names), "budget": budget, "table": table}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="held-out photos scored (0: all 170)")
    ap.add_argument("--canny-tune", type=int, default=20, help="val photos that choose Canny's sigma")
    ap.add_argument("--speed-photos", type=int, default=10)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "boundary_detector"))
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--only", default="", help="comma list of the held-out maps scored (pb-colour, pb-grey, pb-colour-ms, canny)")
    ap.add_argument("--weights", default=None, help="also score the detector of this weights file "
                                                    "(pb-colour-file, pb-grey-file)")
    ap.add_argument("--posterior", type=int, default=0,
                    help="also score posterior boundary maps on every N-th held-out photo (0: no)")
    ap.add_argument("--models", default="window,learned", help="the posteriors of --posterior")
    ap.add_argument("--posterior-budget", type=float, default=5.0, help="seconds of sample_posterior per photo")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    if not args.skip_speed:
        print("Speed of boundary_probability (warm), 481x321 photos")
        report["speed"] = speed(args.speed_photos)

    val = sorted(open_dataset(DATA / "bsds500-val").names, key=int)[:args.canny_tune]
    cannys = {f"canny-s{s:g}": ((lambda im, s=s: canny_map(im, s)), CANNY_THRESHOLDS) for s in CANNY_SIGMAS}
    tune = evaluate("bsds500-val", val, cannys, out / "counts")
    tuned = {d: scores(c, CANNY_THRESHOLDS)["ods"] for d, c in tune.items()}
    canny = max(tuned, key=tuned.get)
    print(f"Canny sigma by ODS F on {len(val)} val photos: " + ", ".join(f"{d} {v:.3f}" for d, v in tuned.items())
          + f" -> {canny}")

    held = sorted(open_dataset(DATA / "bsds500-train-rest").names, key=int)
    if args.limit:
        held = held[:args.limit]
    detectors = {"pb-colour": (pb_map, PB_THRESHOLDS),
                 "pb-grey": ((lambda im: pb_map(im, grey=True)), PB_THRESHOLDS),
                 "pb-colour-ms": ((lambda im: pb_map(im, scales=MULTISCALE)), PB_THRESHOLDS),
                 canny: cannys[canny]}
    if args.weights:
        detectors["pb-colour-file"] = ((lambda im: pb_map(im, detector=args.weights)), PB_THRESHOLDS)
        detectors["pb-grey-file"] = ((lambda im: pb_map(im, grey=True, detector=args.weights)), PB_THRESHOLDS)
    if args.only:
        keep = args.only.split(",")
        detectors = {d: v for d, v in detectors.items() if d in keep or d.split("-s")[0] in keep}
    res = evaluate("bsds500-train-rest", held, detectors, out / "counts")
    print(f"\nHeld-out soft boundaries: {len(held)} photos of bsds500-train-rest (never trained or tuned on)")
    print(f"{'detector':<14} {'ODS F':>6} {'OIS F':>6} {'AP':>6} {'thr':>5}")
    table = {}
    for d, (_, thr) in detectors.items():
        s = scores(res[d], thr)
        table[d] = s
        print(f"{d:<14} {s['ods']:6.3f} {s['ois']:6.3f} {s['ap']:6.3f} {s['threshold']:5.2f}")
    if "pb-colour" in table and canny in table:
        ods = table["pb-colour"]["ods"]
        print(f"Aim: pb-colour ODS F >= 0.67: {'MET' if ods >= 0.67 else 'MISSED'} ({ods:.3f}); "
              f"above Canny ({table[canny]['ods']:.3f}): {'MET' if ods > table[canny]['ods'] else 'MISSED'}")
    print("Published BSDS500 test-set ODS F for scale: " + ", ".join(f"{k} {v}" for k, v in PUBLISHED.items()))
    report.update(table=table, canny_tuning=tuned, n_heldout=len(held))
    if args.posterior:
        report["posterior"] = posterior_maps(held[::args.posterior], detectors, args.models.split(","),
                                             args.posterior_budget, out)
    (out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
