"""Which term of the image posterior prefers swcuts' answer to the humans'?

Usage::

    python benchmarks/energy_terms.py [--images 2092,23084,...] [--half tune|heldout|all]
                                      [--model contrast] [--seed 0]
                                      [--split train|val|rest] [--every K] [--set key=value,...]

For each BSDS development photo (default: the tuning half, as split by
``benchmarks/bsds.split_halves``), default ``segment()`` runs once, and
its segmentation and every annotator's are scored on the pixel graph by
:func:`swcuts.segmentation.energy.energy_terms`. The table gives, per image,
the number of segments and each term of −log π of the median annotator
(the one with the median total) minus swcuts' answer: a positive entry
is a term that prefers swcuts' answer. A posterior right for photos
would rank the humans' segmentations first (a negative total). The last
column scores the median annotator snapped to swcuts' atoms (each atom its
majority segment, :func:`swcuts.evaluation.metrics.snap_to_atoms`): the part
of the gap that hand-drawn boundaries off the image's edges make.

``--split val`` or ``rest`` (with ``--every K``: every K-th photo by sorted
id) takes the BSDS500 validation or held-out training photos instead of the
development ones; ``--set`` updates the model's MODELS entry as in
``benchmarks/model_sweep.py``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bsds import DATA  # noqa: E402

import swcuts  # noqa: E402
from swcuts.evaluation.datasets import open_dataset  # noqa: F401
from swcuts.evaluation.metrics import snap_to_atoms  # noqa: E402
from swcuts.segmentation.energy import energy_terms  # noqa: F401

TERMS = ("likelihood", "labels", "regions", "areas", "boundary")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", default=None, help="comma list of image ids (default: --half)")
    ap.add_argument("--half", default="tune", choices=("tune", "heldout", "all"))
    ap.add_argument("--model", default="contrast")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="train", choices=("train", "val", "rest"))
    ap.add_argument("--every", type=int, default=1, help="with --split val or rest: every K-th photo")
    ap.add_argument("--set", default="", help="comma list key=value of the model's MODELS entry")
    args = ap.parse_args()
    from model_sweep import SPLITS, parse_set

    from swcuts.segmentation.image_models import MODELS

    MODELS[args.model].update(parse_set(args.set))
    ds = open_dataset(DATA if args.split == "train" else SPLITS[args.split])
    ids = sorted(ds.names, key=int)
    names = (args.images.split(",") if args.images else ids[::args.every] if args.split != "train" else
             {"tune": ids[0::2], "heldout": ids[1::2], "all": ids}[args.half])
    print(f"−log π terms, median annotator minus swcuts' answer (model {args.model!r} {args.set}; "
          "positive: the term prefers swcuts')")
    print("| image | segments swcuts / human | " + " | ".join(TERMS) + " | total | total % | snapped total % |")
    print("|---" * (len(TERMS) + 5) + "|")
    totals, snapped = [], []
    for name in names:
        sample = ds.read(name)
        seg = swcuts.segment(sample.image, seed=args.seed, model=args.model)
        ours = energy_terms(sample.image, seg.labels, model=args.model)
        humans = [energy_terms(sample.image, t, model=args.model) for t in sample.truths]
        order = np.argsort([sum(h.values()) for h in humans])
        k = int(order[len(order) // 2])
        median = humans[k]
        diff = {t: median[t] - ours[t] for t in TERMS}
        total = sum(diff.values())
        share = 100 * total / sum(ours.values())
        totals.append((diff, share))
        # The same annotator on swcuts' atoms (each atom its majority
        # segment): what a sampler on those atoms could reach of it.
        on_atoms = energy_terms(sample.image, snap_to_atoms(sample.truths[k], seg.atoms), model=args.model)
        snapped.append(100 * (sum(on_atoms.values()) - sum(ours.values())) / sum(ours.values()))
        print(f"| {name} | {int(seg.labels.max()) + 1} / {np.unique(sample.truths[k]).size} | "
              + " | ".join(f"{diff[t]:+,.0f}" for t in TERMS) + f" | {total:+,.0f} | {share:+.1f} | "
              f"{snapped[-1]:+.1f} |")
    print(f"| mean of {len(totals)} | | "
          + " | ".join(f"{statistics.mean(d[t] for d, _ in totals):+,.0f}" for t in TERMS)
          + f" | {statistics.mean(sum(d.values()) for d, _ in totals):+,.0f} | "
          f"{statistics.mean(s for _, s in totals):+.1f} | {statistics.mean(snapped):+.1f} |")
    lower = sum(sum(d.values()) < 0 for d, _ in totals)
    print(f"humans lower (the median annotator more probable than swcuts' answer) on {lower} of {len(totals)}; "
          f"snapped to swcuts' atoms on {sum(s < 0 for s in snapped)}")


if __name__ == "__main__":
    main()
