"""Do the annotators lie in the typical set of the sampling posterior?

Usage: python benchmarks/typical_set.py [--data bsds500-train-rest] [--images 18]
                                        [--out benchmarks/out/typical_set]

"The median annotator more probable than swcuts' answer" (issue 34) compares a
mode with a draw: for a right posterior and a good optimiser it fails on every
photo (docs/real_photos.md, "What this measure can and cannot say"). What a
right posterior does satisfy is that the humans' segmentations lie in its
*typical set*: their −log π within the spread of −log π of its samples at
T = 1. This script checks that for the default sampling posterior
(``sample_posterior``'s "edges" posterior on merged atoms, 100 samples, seed 0):

* each annotator's segmentation is snapped to the sampled atoms (each atom
  takes the segment of most of its pixels,
  :meth:`~swcuts.inference.posterior_samples.PosteriorSamples.refer_to`);
* the posterior is a mixture of levels with their own offsets b (and their own
  normalising constants), so an annotator is compared with the level whose
  target number of segments is nearest its own (in log K): its −log π under
  that level's model, and that level's samples' −log π;
* per annotator: the percentile of its −log π among the level's samples, and
  z = (its −log π − the samples' mean) / their standard deviation.

Printed per photo (the median annotator by z) and pooled over every annotator:
the share of annotators inside the central 95 % of the samples' −log π, above it
(less probable than 97.5 % of the samples: outside the typical set on the
improbable side) and below it. A posterior that the annotators' segmentations
could have been drawn from gives ~95 % inside. Cached per photo in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def photo_rows(image, truths, seed=0):
    """One dict per annotator: its snapped K, the level compared, −log π, percentile and z."""
    from swcuts.image.atoms import DEFAULT_ATOMS
    from swcuts.image.prepare import prepare_image
    from swcuts.segmentation import edge_posterior as ep
    from swcuts.segmentation.build import build_graph
    from swcuts.segmentation.image_models import DEFAULT_MODEL, model_atom_merge
    from swcuts.segmentation.options import default_n_atoms

    # As sample_edge_posterior builds them (its defaults), kept here for the levels' models.
    features, _ = prepare_image(image)
    h, w = features.shape[:2]
    targets = ep.TARGET_SEGMENTS
    atoms, graph, q, _ = build_graph(features, DEFAULT_ATOMS, default_n_atoms(h * w), seed=seed, edges="learned",
                                     atom_relief="learned", atom_merge=model_atom_merge(DEFAULT_MODEL),
                                     min_merged=max(targets), detector_scales=ep.DETECTOR_SCALES,
                                     detector_forest=ep.DETECTOR_FOREST)
    ps = ep.sample_edges(atoms, graph, q, n_samples=100, seed=np.random.default_rng(seed), workers=1)
    level_of_chain = np.repeat(np.arange(len(ps.levels)), [lv["chains"] for lv in ps.levels])
    rows = []
    for truth in truths:
        labels = ps.refer_to(truth).reference
        k = int(labels.max()) + 1
        i = int(np.argmin([abs(np.log(k / lv["target"])) for lv in ps.levels]))
        lv = ps.levels[i]
        model = ep.edge_model(atoms, graph, ep.edge_weights(q, lv["offset"], lv["power"]))
        energy = -float(model.log_target(labels))
        samples = ps.energies[level_of_chain == i].ravel()
        rows.append({"k": k, "target": lv["target"], "energy": energy,
                     "percentile": float((samples < energy).mean() + 0.5 * (samples == energy).mean()),
                     "z": float((energy - samples.mean()) / max(samples.std(), 1e-9)),
                     "samples_mean": float(samples.mean()), "samples_sd": float(samples.std())})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="bsds500-train-rest")
    ap.add_argument("--images", type=int, default=18)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "typical_set"))
    args = ap.parse_args()
    from swcuts.evaluation.datasets import open_dataset

    ds = open_dataset(DATA / args.data)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ids = sorted(ds.names, key=int)[: args.images]
    print(f"Annotators in the typical set of the edges posterior, {args.data} ({len(ids)} photos)")
    print(f"{'image':>8} {'annot.':>6} {'K':>4} {'level':>5} {'−log π':>9} {'samples':>15} {'pct':>5} {'z':>7}"
          f" {'inside':>6} {'above':>5} {'s':>5}")
    pooled = []
    for name in ids:
        cache = out / f"{name}.json"
        t = time.process_time()
        if cache.exists():
            rows = json.loads(cache.read_text())
        else:
            sample = ds.read(name)
            rows = photo_rows(sample.image, sample.truths)
            cache.write_text(json.dumps(rows))
        pooled += rows
        med = sorted(rows, key=lambda r: r["z"])[len(rows) // 2]
        pct = np.array([r["percentile"] for r in rows])
        print(f"{name:>8} {len(rows):>6} {med['k']:>4} {med['target']:>5g} {med['energy']:>9.1f} "
              f"{med['samples_mean']:>8.1f} ± {med['samples_sd']:<5.1f} {med['percentile']:>5.2f} {med['z']:>7.1f}"
              f" {np.mean((pct >= 0.025) & (pct <= 0.975)):>6.2f} {np.mean(pct > 0.975):>5.2f}"
              f" {time.process_time() - t:>5.1f}", flush=True)
    pct = np.array([r["percentile"] for r in pooled])
    z = np.array([r["z"] for r in pooled])
    print(f"\nevery annotator ({len(pooled)}): inside the central 95 % of the samples' −log π "
          f"{np.mean((pct >= 0.025) & (pct <= 0.975)):.2f} (a posterior they were drawn from: ~0.95), "
          f"above (less probable) {np.mean(pct > 0.975):.2f}, below {np.mean(pct < 0.025):.2f}; "
          f"z median {np.median(z):.1f}, quartiles {np.percentile(z, 25):.1f} / {np.percentile(z, 75):.1f}")


if __name__ == "__main__":
    main()
