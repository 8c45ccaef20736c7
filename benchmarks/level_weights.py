"""Re-weight the granularity levels of saved samples, and compare settings by pooled ECE.

Usage: python benchmarks/level_weights.py DIR [DIR ...] [--weights 2,1,1 1,1,1 ...] [--base DIR]

Each DIR holds ``levels_<id>.npz`` from ``benchmarks/calibration.py
--save-levels`` (per level, the probability of a sampled boundary within
2 px of each pixel, and the annotators' share); the directories of one
setting on several data sets are pooled by giving them joined with a comma.
For every setting and weight vector h, the mixture's proximity is
Σ_l h_l p_l / Σ h (the levels' samples re-weighted, no new sampling), and
the pooled ECE (:func:`swcuts.evaluation.calibration.pooled_reliability`)
over all photos. ``--base``: also the difference of the pooled ECE from that
setting's (at the same weights), with a paired bootstrap standard error over
photos (200 resamples, seed 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swcuts.evaluation.calibration import pooled_reliability, reliability  # noqa: E402


def load(spec):
    """{photo id: (levels' p, truth)} of the comma-joined directories ``spec``."""
    out = {}
    for d in spec.split(","):
        for f in sorted(Path(d).glob("levels_*.npz")):
            z = np.load(f)
            out[f.stem[7:]] = (z["p"], z["truth"])
    return out


def mixed(levels, h):
    """The proximity of the mixture with weights ``h`` (truncated to the levels present)."""
    h = np.asarray(h[: len(levels)], dtype=float)
    return np.tensordot(h / h.sum(), levels, axes=1)


def pooled_ece(photos, h, ids=None):
    ids = sorted(photos) if ids is None else ids
    pairs = [(mixed(photos[i][0], h), photos[i][1]) for i in ids]
    return pooled_reliability([(p[p >= 0.05], t[p >= 0.05]) for p, t in pairs])["ece"]  # smaller to resample


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--weights", nargs="+", default=["2,1,1"])
    ap.add_argument("--base")
    ap.add_argument("--per-photo", action="store_true")
    args = ap.parse_args()
    weights = [[float(x) for x in w.split(",")] for w in args.weights]
    base = load(args.base) if args.base else None
    rng = np.random.default_rng(0)
    for spec in args.dirs:
        photos = load(spec)
        ids = sorted(photos)
        boot = [rng.choice(ids, len(ids)) for _ in range(200)] if base else []
        for h in weights:
            e = pooled_ece(photos, h)
            line = f"{spec}  h={','.join(f'{x:g}' for x in h)}: pooled ECE {e:.3f} ({len(ids)} photos)"
            if base:
                d = e - pooled_ece(base, h, ids)
                se = np.std([pooled_ece(photos, h, b) - pooled_ece(base, h, b) for b in boot])
                line += f", minus base {d:+.3f} (paired bootstrap SE {se:.3f})"
            if args.per_photo:
                line += "; per photo " + " ".join(
                    f"{reliability(mixed(photos[i][0], h), photos[i][1])['ece']:.3f}" for i in ids)
            print(line, flush=True)


if __name__ == "__main__":
    main()
