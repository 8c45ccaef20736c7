"""Real-photo quality of swcuts' default segmentation: does its posterior
win on real photos?

Usage::

    python benchmarks/real_photos.py [--out DIR] [--workers N] [--skip-scales]
                                     [--parts speed,quality,scales]

1. The 30 development BSDS500 images (``../shared/data/bsds500-train``)
   are split by sorted id into a tuning half (even positions) and a
   held-out half (odd positions), as in ``benchmarks/bsds.py``. The peers'
   main parameters are tuned on the tuning half (best mean covering);
   default ``segment()`` (default budget, seed 0) and the tuned peers run
   on both halves, and the table is printed for each, with the share of
   images on which the median annotator's −log π is below the method's
   ("humans lower": a posterior right for photos ranks the humans first).
2. Scales: three photos resized to 0.25, 1 and 4 megapixels; the default
   segmentation at each, compared with the one at 1 MP (segments, VoI and
   covering after resizing the labels to 1 MP).
3. Speed: default ``segment()`` on ten 481x321 photos, warm, one run
   each, median and slowest, with the default model on atoms ("learned";
   target: median <= SPEED_TARGET s), "window", "contrast" and "paper". ``--model`` sets the model of
   the scales part.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import swcuts  # noqa: E402
from swcuts.evaluation.benchmarking.driver import tune_peers  # noqa: F401
from swcuts.evaluation.results import load_results  # noqa: F401

from bsds import DATA, PEERS, REST, VAL, print_table, split_halves  # noqa: E402

SCALE_IMAGES = ("2092", "65132", "163062")
MEGAPIXELS = (0.25, 1.0, 4.0)
SPEED_TARGET = 2.0
#: Issue 37's warm median per 481x321 photo (seconds).
FAST_TARGET = 1.0


def quality(out: Path, workers: int) -> None:
    split_halves(DATA, out)
    tuned_file = out / "peers_tuned.json"
    if tuned_file.exists():
        tuned = json.loads(tuned_file.read_text())
    else:
        tuned = tune_peers(out / "tune", PEERS, workers=workers, progress=True)
        tuned_file.write_text(json.dumps(tuned, indent=2))
    print("peers tuned on the tuning half (best mean covering):",
          ", ".join(f"{p} {t['param']}={t['value']:g}" for p, t in tuned.items()))
    for half in ("tune", "heldout"):
        folder = out / f"defaults_{half}"
        swcuts.benchmark(out / half, output=folder, samplers=["swc"], peers=list(PEERS), peer_tuning=tuned,
                         seeds=[0], workers=workers, resume=True, progress=True)
        rows, _, _ = load_results(folder)
        print_table(rows, f"default segment() and tuned peers, {half} half (15 images)")


def validation(out: Path, workers: int) -> None:
    """The 100 BSDS500 validation photos (``bsds.VAL``), a larger tuning set:
    the peers tuned on them (best mean covering), then default ``segment()``
    and the tuned peers on every one (``defaults_val/``) and, when
    ``bsds.REST`` holds them, on the other 170 training photos
    (``defaults_rest/``, a larger held-out set)."""
    if not (VAL / "images").is_dir():
        raise SystemExit(f"no validation photos in {VAL} (see benchmarks/bsds.py's VAL)")
    tuned_file = out / "peers_tuned_val.json"
    if tuned_file.exists():
        tuned = json.loads(tuned_file.read_text())
    else:
        tuned = tune_peers(VAL, PEERS, workers=workers, progress=True)
        tuned_file.write_text(json.dumps(tuned, indent=2))
    print("peers tuned on the validation photos (best mean covering):",
          ", ".join(f"{p} {t['param']}={t['value']:g}" for p, t in tuned.items()))
    for half, data in (("val", VAL), ("rest", REST)):
        if not (data / "images").is_dir():
            continue
        folder = out / f"defaults_{half}"
        swcuts.benchmark(data, output=folder, samplers=["swc"], peers=list(PEERS), peer_tuning=tuned,
                         seeds=[0], workers=workers, resume=True, progress=True)
        rows, _, _ = load_results(folder)
        print_table(rows, f"default segment() and the peers tuned on the validation photos, {data.name}")


def _resize(image, shape, order):
    from skimage.transform import resize

    return resize(image, shape, order=order, preserve_range=True, anti_aliasing=order > 0)


def scales(model=None) -> None:
    from swcuts.evaluation.datasets import open_dataset
    from swcuts.evaluation.metrics.regions import (
        mean_variation_of_information, probabilistic_rand_index, segmentation_covering)

    ds = open_dataset(DATA)
    print(f"\nscales: the {model or 'default'} segmentation of the same photo at 0.25, 1 and 4 MP")
    print("| image | MP | segments | seconds | PRI vs 1 MP | VoI vs 1 MP | covering of 1 MP |")
    print("|---|---|---|---|---|---|---|")
    for name in SCALE_IMAGES:
        image = ds.read(name).image
        h, w = image.shape[:2]
        results = {}
        for mp in MEGAPIXELS:
            f = math.sqrt(mp * 1e6 / (h * w))
            shape = (round(h * f), round(w * f))
            scaled = np.clip(_resize(image.astype(float), shape, 1), 0, 255).astype(np.uint8)
            start = time.perf_counter()
            seg = swcuts.segment(scaled, seed=0, model=model)
            results[mp] = (seg.labels, time.perf_counter() - start)
        ref = results[1.0][0]
        for mp, (labels, seconds) in results.items():
            at_ref = _resize(labels, ref.shape, 0).astype(np.int64)
            print(f"| {name} | {mp:g} | {int(labels.max()) + 1} | {seconds:.1f} | "
                  f"{probabilistic_rand_index(at_ref, [ref]):.3f} | "
                  f"{mean_variation_of_information(at_ref, [ref]):.3f} | "
                  f"{segmentation_covering(at_ref, [ref]):.3f} |")


def speed(n_photos=10, repeats=1) -> None:
    from swcuts.evaluation.datasets import open_dataset

    ds = open_dataset(DATA)
    names = sorted(ds.names, key=int)[:n_photos]
    swcuts.segment(ds.read(names[0]).image[:60, :80], seed=0)  # compile / load the kernels
    print(f"\nspeed: default segment() on {len(names)} 481x321 BSDS photos, warm, "
          f"median of {repeats} run(s) each")
    print("| model | median s | mean s | slowest s (image) | median CPU s |")
    print("|---|---|---|---|---|")
    models = dict.fromkeys((swcuts.segmentation.options.DEFAULT_MODEL, "window", "contrast", "paper"))
    for model in models:
        times, cpu = {}, {}
        for name in names:
            image = ds.read(name).image
            runs, cpus = [], []
            for _ in range(repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                swcuts.segment(image, seed=0, model=model)
                runs.append(time.perf_counter() - start)
                cpus.append(time.process_time() - start_cpu)
            times[name] = statistics.median(runs)
            cpu[name] = statistics.median(cpus)
        slow = max(times, key=times.get)
        t = statistics.median(times.values())
        print(f"| {model} | {t:.2f} | {statistics.mean(times.values()):.2f} | {times[slow]:.2f} ({slow}) | "
              f"{statistics.median(cpu.values()):.2f} |")
        if model == swcuts.segmentation.options.DEFAULT_MODEL:
            for target, issue in ((SPEED_TARGET, 34), (FAST_TARGET, 37)):
                print(f"target (issue {issue}): median <= {target:g} s: {'MET' if t <= target else 'NOT MET'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "real_photos"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-scales", action="store_true")
    ap.add_argument("--repeats", type=int, default=1, help="speed: runs per photo (median)")
    ap.add_argument("--parts", default="speed,quality,scales", help="which parts to run (comma list; also val: the "
                         "validation photos of bsds.VAL)")
    ap.add_argument("--model", default=None, help="scales: segment(model=...) (default: the default)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = args.parts.split(",")
    if "speed" in parts:
        speed(repeats=args.repeats)
    if "quality" in parts:
        quality(out, args.workers)
    if "val" in parts:
        validation(out, args.workers)
    if "scales" in parts and not args.skip_scales:
        scales(args.model)


if __name__ == "__main__":
    main()
