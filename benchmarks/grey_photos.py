"""Grey photos: the default segmentation of the grey versions of the BSDS photos.

Usage: python benchmarks/grey_photos.py [--weights 1,0.5] [--halves tune,heldout] [--model NAME]

The 30 development BSDS500 photos (tuning half: even sorted positions,
held-out half: odd, as in ``benchmarks/bsds.py``) are turned grey
(:func:`skimage.color.rgb2gray`) and segmented by default ``segment()``
(seed 0) with the one-channel weight :data:`swcuts.segmentation.image_models.ONE_CHANNEL_WEIGHT`
set to each value of ``--weights`` (1: the colour photos' weights). The
peers' main parameters are tuned on the grey tuning half (best mean
covering). Printed per half: mean PRI, VoI, covering and segments, and the
selection rule of ``benchmarks/photo_sweep.py``: the worst margin over the
best peer on PRI, VoI and covering, in standard errors of the paired
per-image difference (higher is better).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from skimage.color import rgb2gray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bsds import DATA  # noqa: E402

from swcuts.segmentation import image_models
from swcuts import segment  # noqa: F401
from swcuts.evaluation.datasets import open_dataset  # noqa: F401
from swcuts.evaluation.metrics.regions import (
    mean_variation_of_information, probabilistic_rand_index, segmentation_covering)
from swcuts.evaluation.peers import run_peer  # noqa: F401

PEER_GRIDS = {"felzenszwalb": ("scale", (100, 200, 400, 800, 1600)),
              "opencv-graphseg": ("k", (200, 400, 800, 1600, 3200)),
              "slic-ncut": ("thresh", (0.0003, 0.001, 0.003, 0.01, 0.03))}
METRICS = ("PRI", "VoI", "covering")


def grey_photos(half):
    ds = open_dataset(DATA)
    ids = sorted(ds.names, key=int)
    for name in ids[0::2] if half == "tune" else ids[1::2]:
        sample = ds.read(name)
        yield (rgb2gray(sample.image) * 255).astype(np.uint8), sample.truths


def scores(segmenter, half) -> np.ndarray:
    """(images, 4): PRI, VoI, covering, segments of each grey photo."""
    rows = []
    for image, truths in grey_photos(half):
        labels = segmenter(image)
        rows.append((probabilistic_rand_index(labels, truths),
                     mean_variation_of_information(labels, truths),
                     segmentation_covering(labels, truths), labels.max() + 1))
    return np.array(rows, dtype=float)


def rule(ours, peers) -> tuple:
    """Worst z of (ours − best peer) over PRI, VoI (sign flipped), covering."""
    zs = []
    for k, sign in ((0, 1), (1, -1), (2, 1)):
        best = max(peers, key=lambda name: sign * peers[name][:, k].mean())
        d = sign * (ours[:, k] - peers[best][:, k])
        zs.append(d.mean() / (d.std(ddof=1) / np.sqrt(d.size)))
    return min(zs), zs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="1,0.5")
    ap.add_argument("--halves", default="tune,heldout")
    ap.add_argument("--model", default=None, help="segment(model=...); default: the default model")
    args = ap.parse_args(argv)
    tuned = {}
    for name, (param, grid) in PEER_GRIDS.items():
        tuned[name] = max(grid, key=lambda v: scores(
            lambda im: run_peer(name, im, seed=0, **{param: v}), "tune")[:, 2].mean())
    print("peers tuned on the grey tuning half:",
          ", ".join(f"{n} {PEER_GRIDS[n][0]}={v}" for n, v in tuned.items()))
    chosen = image_models.ONE_CHANNEL_WEIGHT
    for half in args.halves.split(","):
        print(f"\n{half} half (15 grey photos)")
        print("| method | PRI | VoI | covering | segments | rule (z) |")
        print("|---|---|---|---|---|---|")
        peers = {n: scores(lambda im: run_peer(n, im, seed=0, **{PEER_GRIDS[n][0]: v}), half)
                 for n, v in tuned.items()}
        for weight in (float(w) for w in args.weights.split(",")):
            image_models.ONE_CHANNEL_WEIGHT = weight
            ours = scores(lambda im: segment(im, seed=0, model=args.model).labels, half)
            worst, _ = rule(ours, peers)
            mark = " (default)" if weight == chosen else ""
            m = ours.mean(0)
            print(f"| swc, one-channel weight {weight:g}{mark} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} | "
                  f"{m[3]:.1f} | {worst:+.2f} |")
        image_models.ONE_CHANNEL_WEIGHT = chosen
        for name, s in peers.items():
            m = s.mean(0)
            print(f"| {name} ({PEER_GRIDS[name][0]} {tuned[name]:g}) | {m[0]:.3f} | {m[1]:.3f} | "
                  f"{m[2]:.3f} | {m[3]:.1f} | |")


if __name__ == "__main__":
    main()
