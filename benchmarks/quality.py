"""Segmentation quality of swcuts' defaults against tuned classical peers.

Usage::

    python benchmarks/quality.py [--quick] [--n-images N] [--seed S] [--json PATH]

Data
----
Synthetic images with a known partition from
:func:`swcuts.evaluation.synthetic.images.make_synthetic`: for grey and colour, and for each
noise level ``low``/``medium``/``high``, ``N`` images (default 4, ``--quick``
1) of shape (120, 160) (``--quick``: (72, 96)). Two disjoint splits are drawn,
every image with its own seed:

* ``tune``: used only to choose the one main parameter of every peer;
* ``test``: every method is scored on these same images.

Seed of an image: ``S*100000 + split*10000 + colour*1000 + noise*100 + i``
(split 0 = tune, 1 = test; colour 0 = grey, 1 = RGB; noise 0/1/2 =
low/medium/high; i < 100), so no seed is shared between splits or cells.

Methods
-------
``swcuts (defaults)``
    ``swcuts.segment(image, seed=<image seed>)`` and nothing else: its
    defaults are what is being judged. It is never tuned here. A warm-up
    call on a small image runs first so that numba compilation is not
    counted in its time.
``felzenszwalb``
    ``skimage.segmentation.felzenszwalb(image, scale, sigma=0.8 (default),
    min_size)``; tuned parameter: ``scale``. Grey images are passed 2-D with
    ``channel_axis=None``, colour images with ``channel_axis=-1``.
``slic+ncut``
    ``skimage.segmentation.slic(rgb, n_segments~H*W/48 (400 at 120x160),
    compactness=30, start_label=0)`` (SLIC works in Lab), then
    ``skimage.graph.rag_mean_color(255*rgb, sp, mode='similarity')``
    (default sigma=255, i.e. the uint8 scale of the scikit-image example)
    and ``skimage.graph.cut_normalized(sp, rag, thresh, rng=<image seed>)``;
    tuned parameter: the normalized-cut ``thresh``. Grey images are turned
    into RGB by ``skimage.color.gray2rgb`` for this pipeline (SLIC's Lab
    conversion needs three channels).
``opencv-graphseg``
    ``cv2.ximgproc.segmentation.createGraphSegmentation(sigma=0.5 (default),
    k, min_size).processImage(uint8 image)``; tuned parameter: ``k``. Grey
    images are passed as a 2-D uint8 array, colour as (H, W, 3) uint8.

``min_size`` of both graph methods is 50 pixels at 120 x 160, scaled with the
image area (regions of the truth cover at least 2 % of the image, 384 px).

Tuning
------
For every peer, one value of its main parameter is chosen on the whole tune
split (grey and colour, all noise levels together; swcuts also uses one set
of defaults for all of them): the grid value with the highest mean PRI,
PRI compared to 4 decimals, ties broken by the lower mean VoI, then by the
smaller grid index.

Scores (:func:`swcuts.evaluation.metrics.segmentation_scores`, one ground truth per
image): PRI (higher is better), VoI in nats (lower), GCE (lower), boundary
F-measure with a 2-pixel tolerance (higher), and wall-clock seconds per
image (``time.perf_counter``, whole pipeline of the method).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field

import numpy as np

NOISE_LEVELS = ("low", "medium", "high")
METRICS = ("pri", "voi", "gce", "bf")
FULL_SHAPE = (120, 160)
QUICK_SHAPE = (72, 96)

# Tuning grids (log-spaced).
GRID_FELZENSZWALB = np.geomspace(50, 2000, 12)
GRID_NCUT_THRESH = np.geomspace(1e-4, 0.2, 12)
GRID_OPENCV_K = np.geomspace(50, 5000, 12)


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


@dataclass
class Sample:
    image: np.ndarray
    truth: np.ndarray
    colour: bool
    noise: str
    seed: int
    _cache: dict = field(default_factory=dict, repr=False)


def image_seed(base, split, colour, noise_index, i) -> int:
    if not 0 <= i < 100:
        raise ValueError("at most 99 images per cell")
    return int(base) * 100000 + split * 10000 + int(colour) * 1000 + noise_index * 100 + i


def build_split(split, n_images, shape, base_seed):
    from swcuts.evaluation.synthetic.images import make_synthetic

    samples = []
    for colour in (False, True):
        for ni, noise in enumerate(NOISE_LEVELS):
            for i in range(n_images):
                seed = image_seed(base_seed, split, colour, ni, i)
                image, truth = make_synthetic(shape, colour=colour, noise=noise, seed=seed)
                samples.append(Sample(image, truth, colour, noise, seed))
    return samples


def min_size_for(shape) -> int:
    return max(5, int(round(50 * shape[0] * shape[1] / (FULL_SHAPE[0] * FULL_SHAPE[1]))))


# ---------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------


def run_swcuts(sample, _param=None):
    import swcuts

    return swcuts.segment(sample.image, seed=sample.seed).labels


def run_felzenszwalb(sample, scale):
    from skimage.segmentation import felzenszwalb

    axis = -1 if sample.colour else None
    return felzenszwalb(sample.image, scale=float(scale), min_size=min_size_for(sample.truth.shape),
                        channel_axis=axis)


def _slic_rag(sample):
    """SLIC superpixels and their similarity RAG (shared by all thresholds)."""
    from skimage.color import gray2rgb
    from skimage.graph import rag_mean_color
    from skimage.segmentation import slic

    rgb = sample.image if sample.colour else gray2rgb(sample.image)
    h, w = sample.truth.shape
    n_segments = max(50, int(round(h * w / 48)))
    sp = slic(rgb, n_segments=n_segments, compactness=30, start_label=0)
    rag = rag_mean_color(rgb * 255.0, sp, mode="similarity")
    return sp, rag


def run_slic_ncut(sample, thresh, cache=False):
    from skimage.graph import cut_normalized

    if cache:
        if "slic_rag" not in sample._cache:
            sample._cache["slic_rag"] = _slic_rag(sample)
        sp, rag = sample._cache["slic_rag"]
    else:
        sp, rag = _slic_rag(sample)
    return cut_normalized(sp, rag, thresh=float(thresh), in_place=False, rng=sample.seed)


def run_opencv(sample, k):
    import cv2

    u8 = np.clip(np.round(sample.image * 255.0), 0, 255).astype(np.uint8)
    gs = cv2.ximgproc.segmentation.createGraphSegmentation(0.5, float(k),
                                                           min_size_for(sample.truth.shape))
    return gs.processImage(np.ascontiguousarray(u8))


@dataclass
class Method:
    name: str
    run: callable
    param_name: str | None = None
    grid: np.ndarray | None = None
    tune_kwargs: dict = field(default_factory=dict)
    value: float | None = None


def methods():
    return [
        Method("swcuts (defaults)", run_swcuts),
        Method("felzenszwalb", run_felzenszwalb, "scale", GRID_FELZENSZWALB),
        Method("slic+ncut", run_slic_ncut, "thresh", GRID_NCUT_THRESH, {"cache": True}),
        Method("opencv-graphseg", run_opencv, "k", GRID_OPENCV_K),
    ]


# ---------------------------------------------------------------------------
# scoring and tuning
# ---------------------------------------------------------------------------


def score(labels, truth) -> dict:
    from swcuts.evaluation.metrics.scores import segmentation_scores

    labels = np.asarray(labels)
    if labels.shape != truth.shape:
        raise RuntimeError(f"method returned labels of shape {labels.shape}, expected {truth.shape}")
    return segmentation_scores(labels.astype(np.int64, copy=False), truth)


def tune(method, samples, log):
    t0 = time.perf_counter()
    rows = []
    for gi, value in enumerate(method.grid):
        s = [score(method.run(x, value, **method.tune_kwargs), x.truth) for x in samples]
        pri = float(np.mean([d["pri"] for d in s]))
        voi = float(np.mean([d["voi"] for d in s]))
        rows.append((round(pri, 4), voi, gi, float(value), pri))
    best = min(rows, key=lambda r: (-r[0], r[1], r[2]))
    method.value = best[3]
    curve = "  ".join(f"{v:.4g}:{p:.3f}/{q:.2f}" for _, q, _, v, p in rows)
    edge = " (at the edge of the grid)" if best[2] in (0, len(rows) - 1) else ""
    log(f"  {method.name:<18s} {method.param_name} = {method.value:.4g}{edge}; "
        f"tune PRI {best[4]:.4f}, VoI {best[1]:.3f}  [{time.perf_counter() - t0:.1f}s]")
    log(f"    grid value:PRI/VoI  {curve}")


def evaluate(method, samples):
    out = []
    for x in samples:
        t0 = time.perf_counter()
        labels = method.run(x, method.value)
        dt = time.perf_counter() - t0
        d = score(labels, x.truth)
        d.update(seconds=dt, colour=x.colour, noise=x.noise, seed=x.seed,
                 n_segments=int(len(np.unique(labels))), n_truth=int(x.truth.max()) + 1)
        out.append(d)
    return out


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------


def _mean(rows, key, **where):
    vals = [r[key] for r in rows if all(r[k] == v for k, v in where.items())]
    return float(np.mean(vals)) if vals else float("nan")


def report(results, log):
    names = list(results)
    w = max(len(n) for n in names) + 2
    log("")
    log("Test split, mean over all images (PRI, BF: higher is better; VoI, GCE: lower is better)")
    log(f"{'method':<{w}s}{'PRI':>8s}{'VoI':>8s}{'GCE':>8s}{'BF':>8s}{'segs':>7s}{'s/img':>9s}")
    for n in names:
        r = results[n]
        log(f"{n:<{w}s}{_mean(r, 'pri'):8.4f}{_mean(r, 'voi'):8.3f}{_mean(r, 'gce'):8.4f}"
            f"{_mean(r, 'bf'):8.4f}{_mean(r, 'n_segments'):7.1f}{_mean(r, 'seconds'):9.3f}")
    n_truth = _mean(next(iter(results.values())), "n_truth")
    log(f"(segs: mean number of segments; the truth has {n_truth:.1f} regions on average)")

    log("")
    log("Per noise level (grey and colour together): PRI / VoI")
    head = "".join(f"{lvl:>16s}" for lvl in NOISE_LEVELS)
    log(f"{'method':<{w}s}{head}")
    for n in names:
        r = results[n]
        cells = "".join(f"{_mean(r, 'pri', noise=lvl):9.4f}/{_mean(r, 'voi', noise=lvl):6.3f}"
                        for lvl in NOISE_LEVELS)
        log(f"{n:<{w}s}{cells}")

    log("")
    log("Per image type (all noise levels together): PRI / VoI")
    log(f"{'method':<{w}s}{'grey':>16s}{'colour':>16s}")
    for n in names:
        r = results[n]
        cells = "".join(f"{_mean(r, 'pri', colour=c):9.4f}/{_mean(r, 'voi', colour=c):6.3f}"
                        for c in (False, True))
        log(f"{n:<{w}s}{cells}")

    ours = results[names[0]]
    peers = names[1:]
    pri_ok = all(_mean(ours, "pri") > _mean(results[p], "pri") for p in peers)
    voi_ok = all(_mean(ours, "voi") < _mean(results[p], "voi") for p in peers)
    log("")
    log(f"PRI: swcuts ahead of every peer: {'yes' if pri_ok else 'no'}; "
        f"VoI: swcuts ahead of every peer: {'yes' if voi_ok else 'no'}")
    log(f"Target: swcuts ahead of every peer on PRI and VoI: {'MET' if pri_ok and voi_ok else 'NOT MET'}")
    return pri_ok and voi_ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 image per cell, smaller images")
    ap.add_argument("--n-images", type=int, default=None,
                    help="images per (grey/colour, noise level) cell and split (default 4; --quick 1)")
    ap.add_argument("--seed", type=int, default=0, help="base seed of the data set")
    ap.add_argument("--json", default=None, help="write per-image scores to this file")
    args = ap.parse_args(argv)
    n = args.n_images if args.n_images is not None else (1 if args.quick else 4)
    if not 1 <= n < 100:
        ap.error("--n-images must be in 1..99")
    shape = QUICK_SHAPE if args.quick else FULL_SHAPE

    def log(msg=""):
        print(msg, flush=True)

    t_start = time.perf_counter()
    import swcuts

    log(f"swcuts {swcuts.__version__}; shape {shape}; {n} image(s) per cell; base seed {args.seed}")
    tune_set = build_split(0, n, shape, args.seed)
    test_set = build_split(1, n, shape, args.seed)
    log(f"tune split: {len(tune_set)} images, test split: {len(test_set)} images "
        f"(grey/colour x {'/'.join(NOISE_LEVELS)} noise)")

    all_methods = methods()
    log("")
    log("Tuning peers on the tune split (max mean PRI, tie-break min mean VoI):")
    for m in all_methods:
        if m.grid is not None:
            tune(m, tune_set, log)
    for x in tune_set:  # free the cached superpixels / RAGs
        x._cache.clear()

    # Warm-up (numba compilation) so that it is not counted in swcuts' time.
    from swcuts.evaluation.synthetic.images import make_synthetic

    warm, _ = make_synthetic((40, 48), noise="low", seed=12345)
    swcuts.segment(warm, seed=0)

    log("")
    log("Evaluating on the test split:")
    results = {}
    for m in all_methods:
        t0 = time.perf_counter()
        results[m.name] = evaluate(m, test_set)
        setting = "defaults" if m.param_name is None else f"{m.param_name}={m.value:.4g}"
        log(f"  {m.name:<18s} {setting:<16s} {time.perf_counter() - t0:7.1f}s")

    report(results, log)
    log(f"Total runtime: {time.perf_counter() - t_start:.1f}s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"shape": shape, "n_images": n, "seed": args.seed,
                       "params": {m.name: m.value for m in all_methods},
                       "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
