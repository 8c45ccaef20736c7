"""Is a large photo segmented as well on its reduced working image as a
small one is at its own size?

BSDS500 photos (481x321) are upscaled x2 and x4 (``cv2.INTER_CUBIC``, 0.6
and 2.5 megapixels) and segmented with the default options, on a working
image of ``--work`` pixels (``segment(work_pixels=...)``; the atoms are
carried back to full size along the image's edges). Each full-size result
is brought back to 481x321 (nearest neighbour) and scored against the
photo's human annotations (PRI, VoI, covering, boundary F), beside the
default segmentation of the photo at its own size ("native"); "cov. vs
native" is the covering of the native segmentation by the full-size one.

Tune ``--work`` on ``bsds500-val``; report held out on
``bsds500-train-rest``.

Run: ``python benchmarks/full_size_quality.py --data bsds500-val --limit 40 --scales 4 --work 150000,250000,500000``
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
from pool import run_all  # noqa: E402  (benchmarks/pool.py)
DATA = Path("/work/shared/data")


def _task(args):
    import cv2
    from swcuts.evaluation.metrics.regions import segmentation_covering
    from swcuts.evaluation.metrics.scores import benchmark_scores
    from swcuts.segmentation.segment import segment

    name, image, truths, scale, work, seed = args
    h, w = image.shape[:2]
    big = image if scale == 1 else cv2.resize(image, (w * scale, h * scale), interpolation=cv2.INTER_CUBIC)
    t = time.perf_counter()
    seg = segment(big, seed=seed, work_pixels=work)
    seconds = time.perf_counter() - t
    labels = seg.labels
    if scale != 1:
        labels = cv2.resize(labels.astype(np.int32), (w, h), interpolation=cv2.INTER_NEAREST)
    s = benchmark_scores(labels, truths)
    return dict(name=name, scale=scale, work=work, seconds=seconds, labels=labels,
                work_shape=seg.work_shape, **{k: s[k] for k in ("pri", "voi", "covering", "bf", "n_segments")})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="bsds500-val")
    ap.add_argument("--limit", type=int, default=None, help="the first N photos by sorted id")
    ap.add_argument("--scales", default="2,4")
    ap.add_argument("--work", default="250000", help="working pixels, comma-separated")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from swcuts.evaluation.datasets import load
    from swcuts.evaluation.metrics.regions import segmentation_covering

    samples = list(load(DATA / args.data))
    samples.sort(key=lambda s: int(s.name) if s.name.isdigit() else s.name)
    if args.limit:
        samples = samples[:args.limit]
    scales = [int(v) for v in args.scales.split(",")]
    works = [int(v) for v in args.work.split(",")]
    tasks = [(s.name, s.image, s.truths, 1, None, args.seed) for s in samples]
    tasks += [(s.name, s.image, s.truths, k, wk, args.seed) for s in samples for k in scales for wk in works]
    print(f"{len(samples)} photos of {args.data}, {len(tasks)} runs, {args.workers} workers, "
          f"load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    rows = run_all(_task, tasks, args.workers)
    native = {r["name"]: r["labels"] for r in rows if r["scale"] == 1}
    for r in rows:
        r["cov_native"] = float(segmentation_covering(r["labels"], native[r["name"]])) if r["scale"] != 1 else 1.0
    print(f"{args.data}: {len(samples)} photos, seed {args.seed}; full-size results brought back to the "
          f"photo's size and scored against its annotators (means)")
    print(f"{'run':<22} {'PRI':>6} {'VoI':>6} {'cover':>6} {'bf':>6} {'segs':>6} {'cov. vs native':>14} {'s/photo':>8}")
    groups = [(1, None)] + [(k, wk) for k in scales for wk in works]
    for k, wk in groups:
        g = [r for r in rows if r["scale"] == k and r["work"] == wk]
        label = "native 481x321" if k == 1 else f"x{k}, work {wk / 1e3:.0f}k px"
        m = {key: float(np.mean([r[key] for r in g])) for key in ("pri", "voi", "covering", "bf", "n_segments",
                                                                   "cov_native", "seconds")}
        print(f"{label:<22} {m['pri']:6.3f} {m['voi']:6.3f} {m['covering']:6.3f} {m['bf']:6.3f} "
              f"{m['n_segments']:6.1f} {m['cov_native']:14.3f} {m['seconds']:8.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps([{k: v for k, v in r.items() if k != "labels"} for r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
