"""Segment every image of a folder in parallel, one overlay and label file each.

Usage:
    python apps/segment_folder.py PHOTOS -o OUT [--workers N] [--sampler swc]
                                  [--seconds S | --steps N] [--seed 0]

For every image in PHOTOS (PNG, JPEG or TIFF; sub-folders are not searched)
OUT gets NAME_overlay.png, the segment boundaries drawn in red on the photo,
and NAME_labels.npy, the segment of every pixel (int, the image's height and
width); OUT/segments.csv has one row per image: image, segments, seconds,
energy (−log π of the result; comparable between runs on the same image
only). An image that fails is reported and the others go on. Exit status:
0 if at least one image was segmented, 1 if none was, 2 for bad arguments.

Each image runs in its own process (--workers, default: one per core); the
same --seed and --steps give the same labels wherever an image runs
(--seconds is a time budget, so its result depends on the machine's speed).
Built on the public API only: swcuts.load_image, swcuts.segment.
"""

import argparse
import csv
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

import swcuts

EXTENSIONS = {".png", ".jpg", ".jpeg", ".tif", ".tiff"}


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def segment_one(path, outdir, sampler, seconds, steps, seed):
    """Segment one image and write its two files; runs in a worker process."""
    import imageio.v3 as iio
    from skimage.segmentation import mark_boundaries
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # one core per worker: N workers use N cores
        start = time.perf_counter()
        image = swcuts.load_image(path)
        seg = swcuts.segment(image, sampler=sampler, time_budget=seconds, steps=steps, seed=seed)
        seconds_taken = time.perf_counter() - start
    overlay = mark_boundaries(seg.image, seg.labels, color=(1, 0.1, 0.1))  # seg.image: in [0, 1]
    iio.imwrite(outdir / f"{path.stem}_overlay.png", np.round(overlay * 255).astype(np.uint8))
    np.save(outdir / f"{path.stem}_labels.npy", seg.labels)
    return {"image": path.name, "segments": seg.n_labels, "seconds": round(seconds_taken, 3),
            "energy": round(float(seg.energy), 3)}


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="folder of images")
    ap.add_argument("-o", "--output", type=Path, required=True, help="output folder (created)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="processes (default: one per core)")
    ap.add_argument("--sampler", default="swc", help=f"one of {', '.join(swcuts.SAMPLERS)}")
    budget = ap.add_mutually_exclusive_group()
    budget.add_argument("--seconds", type=float, help="seconds of sampling per image")
    budget.add_argument("--steps", type=int, help="sampler steps per image (repeatable results)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if not args.folder.is_dir():
        ap.error(f"'{args.folder}' is not a folder")
    images = sorted(p for p in args.folder.iterdir() if p.suffix.lower() in EXTENSIONS and p.is_file())
    if not images:
        ap.error(f"no images ({', '.join(sorted(EXTENSIONS))}) in '{args.folder}'")
    stems = [p.stem for p in images]
    clash = sorted({s for s in stems if stems.count(s) > 1})
    if clash:
        ap.error(f"several images are named {clash[0]}.*: their output files would overwrite each other")
    if args.workers < 1:
        ap.error(f"--workers must be at least 1, got {args.workers}")
    if args.sampler not in swcuts.SAMPLERS:
        ap.error(f"unknown sampler '{args.sampler}'; choose one of {', '.join(swcuts.SAMPLERS)}")
    if args.seconds is not None and not 0 < args.seconds < float("inf"):
        ap.error(f"--seconds must be a positive number, got {args.seconds}")
    if args.steps is not None and args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    if args.output.exists() and not args.output.is_dir():
        ap.error(f"'{args.output}' exists and is not a folder")
    args.output.mkdir(parents=True, exist_ok=True)

    rows, failed = [], 0
    workers = min(args.workers, len(images))
    print(f"{len(images)} images, {workers} worker(s), sampler {args.sampler}")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        jobs = {pool.submit(segment_one, p, args.output, args.sampler, args.seconds, args.steps,
                            args.seed): p for p in images}
        for job in as_completed(jobs):
            path = jobs[job]
            try:
                row = job.result()
            except Exception as exc:  # one image's failure does not stop the others
                failed += 1
                message = " ".join(str(exc).split()) or type(exc).__name__
                print(f"  {path.name}: FAILED ({message})", file=sys.stderr)
                continue
            rows.append(row)
            print(f"  {row['image']}: {row['segments']} segments in {row['seconds']:.1f} s")

    rows.sort(key=lambda r: r["image"])
    with open(args.output / "segments.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, ["image", "segments", "seconds", "energy"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} segmented, {failed} failed -> {args.output}")
    return 0 if rows else 1


if __name__ == "__main__":  # needed by ProcessPoolExecutor where workers start by "spawn"
    sys.exit(main())
