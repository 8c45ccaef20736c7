"""Train the structured edge forest (swcuts.image.edge_forest) on the shared
BSDS500 photos, and score it beside the shipped boundary detector.

Usage:
  python benchmarks/train_edge_forest.py train [--trees 8] [--samples 400000] [--half] [--fit-extra SPLIT:A:B] [--out swcuts/image/edge_forest.yml.gz]
  python benchmarks/train_edge_forest.py score [--forest PATH] [--split select|heldout] [--heldout SPLIT:A:B] [--maps se,pb,...]
  python benchmarks/train_edge_forest.py merge --forest NEW --fill-from OLD [--trees 8] --out PATH
  python benchmarks/train_edge_forest.py fit-mix [--forest PATH] [--inputs se|se,se-ms|se-ms] [--grey] [--grey-inputs I] [--out-mix PATH]
  python benchmarks/train_edge_forest.py sharpen --forest PATH --level 0|1|2 --out PATH

Training (Dollár & Zitnick 2013, ``edgesTrain``; the trees are grown by
:mod:`swcuts.image.edge_forest_train`): each tree draws its own quarter of
the 7,228 features and ``--samples`` windows, half near a boundary, of the
photos FIT (bsds500-train 30 + bsds500-val[0:80]); a window's label is one
annotator's 16x16 segmentation patch. Trees are cached in ``--work`` (a
rerun resumes). ``--half`` holds the features as float16 (rounded down;
thresholds are float16 values, so OpenCV's float32 comparisons split as
training did): 1M windows a tree in 3.6 GB. The model file is written in OpenCV's format and run by
OpenCV's ``StructuredEdgeDetection``. ``--fit-extra`` adds photos to FIT
(``train`` and ``fit-mix``; round 15 trained on FIT + train-rest[85:170] and
scored on ``--heldout bsds500-train-rest:0:85``).

Scoring (as ``benchmarks/boundary_detector.py``: its ``evaluate``, the
counts of ``benchmarks/soft_boundaries.py``, maps thinned by
``nonmax_suppress``): ``select`` is bsds500-val[80:100] (choices are made
there), ``heldout`` the 170 photos of bsds500-train-rest (read once, at the
end). Maps: ``se`` (the forest), ``se-cv`` (the forest thinned by OpenCV's
``edgesNms``, Dollár's own NMS), ``se-ms`` (the forest's maps of the
photo at 0.5, 1 and 2 times its size, averaged), ``pb`` (the shipped detector), and
``pb-grey`` and ``mix-grey`` (the photo made grey), ``mix`` (a logistic combination of the maps' log-odds, fitted on FIT
pixels by ``fit-mix``: the detector's and the forest's single-scale and/or
multiscale map, ``--inputs``; ``--grey`` also fits the grey photos' weights;
written into the forest file: what ``boundary_probability(..., forest=True)``
computes). ``sharpen`` writes a copy of a forest whose maps are sharpened
(option ``sharpen``: our own inference, :mod:`swcuts.image.edge_forest_votes`;
round 16).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from swcuts.evaluation.datasets import open_dataset  # noqa: E402
from swcuts.image.edge_forest import (DEFAULT_PATH, MULTISCALE, OPTIONS, _maps, edge_probability,  # noqa: E402
                                      feature_table, forest_channels, forest_trees, log_odds, pad_image,
                                      read_forest, write_forest)
from swcuts.image.edge_forest_train import half_keys, patch_features, sample_windows, train_tree  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
FIT = ("bsds500-train", "bsds500-val:0:80")
SELECT = ("bsds500-val:80:100",)
HELDOUT = ("bsds500-train-rest",)
SEED = 13
SE_THRESHOLDS = np.array([0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
                          0.55, 0.6, 0.7, 0.8, 0.9])


def names_of(splits):
    for spec in splits:
        split, *rng = spec.split(":")
        names = sorted(open_dataset(DATA / split).names, key=int)
        if rng:
            names = names[int(rng[0]):int(rng[1])]
        for n in names:
            yield split, n


def fit_splits(args) -> tuple:
    """FIT, and the photos ``--fit-extra`` adds to it (e.g. ``bsds500-train-rest:85:170``)."""
    return FIT + tuple(args.fit_extra or ())


def load_fit(splits=FIT):
    """Every photo of ``splits`` (default FIT): (channels, annotators' label images)."""
    out = []
    for split, name in names_of(splits):
        s = open_dataset(DATA / split).read(name)
        out.append((forest_channels(pad_image(s.image)), [np.asarray(t) for t in s.truths]))
    return out


def train(args):
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    photos = load_fit(fit_splits(args))
    print(f"{len(photos)} FIT photos' channels: {time.process_time() - c0:.0f} CPU s", flush=True)
    n_all = len(feature_table())
    trees, given = [], forest_trees(read_forest(args.replay)) if args.replay else None
    for k in range(args.trees):
        f = work / f"tree{k:02d}-{args.samples}{'-half' if args.half else ''}.json"
        if f.exists():
            trees.append(json.loads(f.read_text()))
            continue
        c1 = time.process_time()
        rng = np.random.default_rng(SEED + 1000 * k)
        fids = np.sort(rng.choice(n_all, int(round(n_all * args.frac)), replace=False))
        windows = []
        for chans, truths in photos:
            per = math.ceil(args.samples / 2 / len(photos) / len(truths))
            windows.append(sample_windows(truths, per, per, rng))
        lab = np.vstack([w[2] for w in windows])
        # filled in place (no second copy); --half: 2-byte codes, half the memory
        x = np.empty((len(fids), lab.shape[0]), np.uint16 if args.half else np.float32)
        at = 0
        for (chans, _), (r, c, _) in zip(photos, windows):
            xf = patch_features(None, r, c, fids, channels=chans)
            x[:, at:at + r.size] = half_keys(xf) if args.half else xf
            at += r.size
        del windows
        c2 = time.process_time()
        tree = train_tree(x, fids, lab, rng, min_child=args.min_child, given=given and given[k])
        del x
        if given and given[k]["bins"][:len(tree["bins"])] != tree["bins"]:
            sys.exit(f"tree {k} replayed on {args.replay}: its leaves' boundary pixels differ; not the same recipe")
        leaves = sum(1 for ch in tree["child"] if ch == 0)
        print(f"tree {k}: {lab.shape[0]} windows ({c2 - c1:.0f} CPU s of features), {len(tree['child'])} nodes, "
              f"{leaves} leaves, depth {max(tree['depth'])}: {time.process_time() - c2:.0f} CPU s", flush=True)
        f.write_text(json.dumps(tree))
        trees.append(tree)
    opts = {**OPTIONS, "numberOfTrees": len(trees), "numberOfTreesToEvaluate": min(4, len(trees))}
    weights = {}
    if args.replay:   # the same trees: the replayed file's options and weights stand
        f = read_forest(args.replay)
        opts, weights = f["options"], {"combination": f.get("combination"), "grey_combination": f.get("greyCombination")}
    write_forest(args.out, trees, opts, **weights)
    print(f"wrote {args.out}: {os.path.getsize(args.out) / 1e6:.2f} MB; {time.perf_counter() - t0:.0f} s wall, "
          f"{time.process_time() - c0:.0f} CPU s")


def sharpen(args):
    """A copy of ``--forest`` (trees, segments, weights) whose maps are
    sharpened by ``--level`` (its option ``sharpen``)."""
    f = read_forest(args.forest)
    write_forest(args.out, forest_trees(f), {**f["options"], "sharpen": args.level},
                 combination=f.get("combination"), grey_combination=f.get("greyCombination"))
    print(f"wrote {args.out}: sharpen {args.level}, {os.path.getsize(args.out) / 1e6:.2f} MB")


def merge(args):
    """A forest of the trees of ``--forest`` followed by those of
    ``--fill-from`` beyond their number, up to ``--trees`` (the newer trees
    replacing the first ones of an older forest), without weights."""
    new, old = forest_trees(read_forest(args.forest)), forest_trees(read_forest(args.fill_from))
    trees = (new + old[len(new):])[:args.trees]
    opts = {**OPTIONS, "numberOfTrees": len(trees), "numberOfTreesToEvaluate": min(4, len(trees))}
    write_forest(args.out, trees, opts)
    print(f"wrote {args.out}: {len(new)} trees of {args.forest} and {len(trees) - len(new)} of {args.fill_from}, "
          f"{os.path.getsize(args.out) / 1e6:.2f} MB")


# ---------------------------------------------------------------- scoring

def se_map(image, forest, nms="ours"):
    from swcuts.image.boundary_detector import nonmax_suppress

    e = edge_probability(image, forest=forest)
    if nms == "ours":
        return nonmax_suppress(e)
    from swcuts.image.edge_forest import _detector

    det = _detector(forest)
    e32 = e.astype(np.float32)
    return det.edgesNms(e32, det.computeOrientation(e32), r=2, s=0, m=1.0).astype(np.float64)


_LAST = {}


def se_multiscale(image, forest):
    """The forest's map averaged over the photo at 0.5, 1 and 2 times its size (Dollár's ``multiscale``)."""
    return edge_probability(image, forest=forest, scales=MULTISCALE)


def pb_prob(image, grey=False):
    """The shipped detector's map and its features (of the photo made grey),
    the last photo's kept: the maps of one photo share them."""
    from boundary_detector import features

    from swcuts.image.boundary_detector import boundary_probability

    if _LAST.get("image") is not image:
        _LAST.clear()
        _LAST["image"] = image
    if grey not in _LAST:
        z = features(image, grey)
        _LAST[grey] = (boundary_probability(z), z)
    return _LAST[grey][0]


def mix_prob(image, forest, grey=False):
    """``boundary_probability(..., forest=forest)``: the combination whose
    weights ``fit-mix`` wrote into the forest file (of the photo made grey),
    from the detector's map computed once a photo (the same numbers:
    ``boundary_probability`` combines, then clips)."""
    from swcuts.image.edge_forest import combine_with_forest

    p = pb_prob(image, grey)
    return np.clip(combine_with_forest(p, _LAST[grey][1], forest), 1e-6, 1.0 - 1e-6)


INPUTS = {"se": (1, 0), "se,se-ms": (1, 1), "se-ms": (0, 1)}


def fit_inputs(forest, cache, splits=FIT):
    """The log-odds of the maps at sampled FIT pixels (2,000 boundary and
    2,000 other pixels a photo, weighted by their strata's sizes), colour
    and grey: the detector's (cached once) and the forest's single and
    multiscale maps (cached per forest file)."""
    from boundary_detector import features
    from train_boundaries import sample_pixels, target

    from swcuts.image.boundary_detector import boundary_probability

    cache.mkdir(parents=True, exist_ok=True)
    tag = "" if splits == FIT else "-" + "-".join(x.replace(":", "_") for x in splits[len(FIT):])
    pb_file = cache / f"fit{tag}-pb.npz"
    se_file = cache / f"fit{tag}-{Path(forest).name.replace('.yml.gz', '')}.npz"
    if pb_file.exists() and se_file.exists():
        return {**np.load(pb_file), **np.load(se_file)}
    rng = np.random.default_rng(SEED)
    cols = {k: [] for k in ("pb", "pb-grey", "y", "w", "se", "se-ms", "se-grey", "se-ms-grey")}
    c0 = time.process_time()
    for split, name in names_of(splits):
        s = open_dataset(DATA / split).read(name)
        t = target(s.truths)
        idx, wt = sample_pixels(t, 2000, rng)
        cols["y"].append(t.ravel()[idx])
        cols["w"].append(wt)
        grey = features(s.image, True)
        if not pb_file.exists():
            cols["pb"].append(log_odds(boundary_probability(features(s.image))).ravel()[idx])
            cols["pb-grey"].append(log_odds(boundary_probability(grey)).ravel()[idx])
        for key, im in (("se", s.image), ("se-grey", grey[..., 0])):
            e = _maps(im, forest, MULTISCALE)
            cols[key].append(log_odds(e[1.0]).ravel()[idx])
            cols[key.replace("se", "se-ms")].append(log_odds(np.mean(list(e.values()), axis=0)).ravel()[idx])
    out = {k: np.concatenate(v) for k, v in cols.items() if v}
    if not pb_file.exists():
        np.savez(pb_file, **{k: out[k] for k in ("pb", "pb-grey", "y", "w")})
    np.savez(se_file, **{k: out[k] for k in ("se", "se-ms", "se-grey", "se-ms-grey")})
    print(f"fit inputs of {forest}: {time.process_time() - c0:.0f} CPU s", flush=True)
    return {**np.load(pb_file), **np.load(se_file)}


def logistic_fit(x, y, w):
    """Weighted logistic regression of the share ``y`` on the columns ``x``."""
    from scipy.optimize import minimize

    w = w / w.mean()

    def loss(beta):
        z = x @ beta
        p = 1 / (1 + np.exp(-z))
        ll = -np.sum(w * (y * np.logaddexp(0, -z) + (1 - y) * np.logaddexp(0, z)))
        return -ll / len(y), -(x.T @ (w * (y - p))) / len(y)

    return minimize(loss, np.r_[np.ones(x.shape[1] - 1), 0.0], jac=True, method="L-BFGS-B").x


def fit_mix(args):
    """A logistic regression of the share of annotators' (dilated) boundaries
    on the maps' log-odds, on sampled FIT pixels: the detector's and the
    forest's (``--inputs``: single-scale, multiscale or both), for colour
    photos and (``--grey``) for grey ones; the weights are written into the
    forest file (``--out``, default the forest file itself)."""
    d = fit_inputs(args.forest, Path(args.cache).parent / "fit", fit_splits(args))
    betas = {}
    for mode, sfx in (("colour", ""), ("grey", "-grey")):
        if mode == "grey" and not args.grey:
            continue
        use = INPUTS[args.grey_inputs if mode == "grey" and args.grey_inputs else args.inputs]
        keep = [k for k, u in zip(("se", "se-ms"), use) if u]
        beta = logistic_fit(np.column_stack([d["pb" + sfx]] + [d[k + sfx] for k in keep] + [np.ones(d["y"].size)]),
                            d["y"], d["w"])
        full = [beta[0], 0.0, 0.0, beta[-1]]
        for i, k in enumerate(keep):
            full[1 if k == "se" else 2] = beta[1 + i]
        betas[mode] = [float(b) for b in full]
        print(f"{mode} weights (pb, se, se-ms log-odds, bias): {np.round(full, 4).tolist()}")
    f = read_forest(args.forest)
    grey = betas.get("grey", f.get("greyCombination"))
    out = args.out_mix or args.forest
    write_forest(out, forest_trees(f), f["options"], combination=betas["colour"],
                 grey_combination=None if grey is None else [float(b) for b in grey])
    print(f"wrote the combination weights into {out}")


def score(args):
    from boundary_detector import PB_THRESHOLDS, evaluate
    from soft_boundaries import scores

    from swcuts.image.boundary_detector import nonmax_suppress

    splits = SELECT if args.split == "select" else (args.heldout,) if args.heldout else HELDOUT
    spec = splits[0].split(":")
    names = [n for _, n in names_of(splits)]
    want = args.maps.split(",")
    maps = {"pb": ((lambda im: nonmax_suppress(pb_prob(im))), PB_THRESHOLDS),
            "pb-grey": ((lambda im: nonmax_suppress(pb_prob(im, grey=True))), PB_THRESHOLDS)}
    maps = {k: v for k, v in maps.items() if k in want}
    for fp in args.forest.split(","):   # several forests: each its maps, named by its file
        tag = Path(fp).name.replace(".yml.gz", "")
        mine = {"se": ((lambda im, fp=fp: se_map(im, fp)), SE_THRESHOLDS),
                "se-cv": ((lambda im, fp=fp: se_map(im, fp, nms="opencv")), SE_THRESHOLDS),
                "se-ms": ((lambda im, fp=fp: nonmax_suppress(se_multiscale(im, fp))), SE_THRESHOLDS)}
        if read_forest(fp).get("combination") is not None:
            mine["mix"] = ((lambda im, fp=fp: nonmax_suppress(mix_prob(im, fp))), SE_THRESHOLDS)
            mine["mix-grey"] = ((lambda im, fp=fp: nonmax_suppress(mix_prob(im, fp, grey=True))), SE_THRESHOLDS)
        maps.update({f"{k}-{tag}": v for k, v in mine.items() if k in want})
    c0 = time.process_time()
    res = evaluate(spec[0], names, maps, Path(args.cache))
    print(f"\n{args.split}: {len(names)} photos of {splits[0]} ({time.process_time() - c0:.0f} CPU s)")
    print(f"{'map':<24} {'ODS F':>6} {'OIS F':>6} {'AP':>6} {'thr':>5}  ODS F per-photo SE")
    out = {}
    for d, (_, thr) in maps.items():
        sc = scores(res[d], thr)
        out[d] = sc
        print(f"{d:<24} {sc['ods']:6.3f} {sc['ois']:6.3f} {sc['ap']:6.3f} {sc['threshold']:5.2f}")
    if len(maps) > 1:
        paired(res, maps, args.base)
    return out


def paired(res, maps, against=None):
    """Paired SE of the ODS F difference of each map against ``pb`` (and
    ``against``, the name of another map): the per-photo F at each map's ODS
    threshold."""
    from soft_boundaries import f_of

    keys = list(maps)
    if "pb" not in keys:
        return
    base = {d: ("pb-grey" if "grey" in d and "pb-grey" in keys else "pb") for d in keys}
    per = {}
    for d in keys:
        k = int(np.argmax(f_of(np.sum(res[d], axis=0))[2]))
        per[d] = np.array([f_of(c[k])[2] for c in res[d]])
    for d in keys:
        if d.startswith("pb"):
            continue
        for b in (base[d], against):
            if b is None or b == d or b not in per:
                continue
            diff = per[d] - per[b]
            print(f"  {d} - {b}: per-photo F at the ODS threshold {diff.mean():+.4f} +- "
                  f"{diff.std(ddof=1) / np.sqrt(len(diff)):.4f} (paired SE, {len(diff)} photos)")


def speed(args):
    """Warm CPU and wall seconds a photo of the forest (single- and
    multi-scale) and the shipped detector, on 10 held-out photos."""
    from boundary_detector import features

    from swcuts.image.boundary_detector import boundary_probability
    from swcuts.io.image_read import load_image

    ds = open_dataset(DATA / "bsds500-train-rest")
    names = sorted(ds.names, key=int)[:10]
    fns = {"se": lambda im: edge_probability(im, forest=args.forest),
           "se-ms": lambda im: se_multiscale(im, args.forest),
           "pb": lambda im: boundary_probability(features(im))}
    for key, fn in fns.items():
        cpu, wall = [], []
        for name in names:
            im = load_image(ds.image_path(name))
            fn(im)
            c, t = time.process_time(), time.perf_counter()
            fn(im)
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - t)
        print(f"{key:<6} warm: median {np.median(cpu):.3f} CPU s ({np.median(wall):.3f} s wall) a photo, "
              f"10 photos, load average {os.getloadavg()[0]:.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("train", "score", "fit-mix", "speed", "merge", "sharpen"))
    ap.add_argument("--trees", type=int, default=8)
    ap.add_argument("--samples", type=int, default=400000, help="windows per tree")
    ap.add_argument("--half", action="store_true",
                    help="hold the features as float16 (rounded down: the splits stay exact in OpenCV's float32)")
    ap.add_argument("--replay", help="train: the splits of this forest's trees instead of searching them (its "
                    "leaves' segments recomputed; the recipe must be the one that grew it)")
    ap.add_argument("--frac", type=float, default=0.25, help="share of the features each tree draws")
    ap.add_argument("--min-child", type=int, default=8)
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / "out" / "edge_forest" / "trees"))
    ap.add_argument("--out", default=str(DEFAULT_PATH))
    ap.add_argument("--forest", default=str(DEFAULT_PATH), help="(score: comma-separated forests)")
    ap.add_argument("--split", choices=("select", "heldout"), default="select")
    ap.add_argument("--maps", default="se,pb")
    ap.add_argument("--base", help="score: also pair every map against this one (e.g. mix-edge_forest)")
    ap.add_argument("--inputs", choices=tuple(INPUTS), default="se", help="fit-mix: the forest's maps combined")
    ap.add_argument("--grey", action="store_true", help="fit-mix: also the grey combination")
    ap.add_argument("--grey-inputs", choices=tuple(INPUTS), help="fit-mix --grey: the grey photos' inputs (default --inputs)")
    ap.add_argument("--level", type=int, default=0, help="sharpen: 0 (OpenCV's inference), 1 or 2")
    ap.add_argument("--fill-from", help="merge: the older forest whose later trees fill up --trees")
    ap.add_argument("--out-mix", help="fit-mix: write the forest with its weights here (default: --forest)")
    ap.add_argument("--fit-extra", action="append",
                    help="train, fit-mix: photos added to FIT (repeatable; e.g. bsds500-train-rest:85:170)")
    ap.add_argument("--heldout", help="score --split heldout: these photos instead (e.g. bsds500-train-rest:0:85)")
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / "out" / "edge_forest" / "counts"))
    args = ap.parse_args()
    {"train": train, "score": score, "fit-mix": fit_mix, "speed": speed, "merge": merge,
     "sharpen": sharpen}[args.command](args)


if __name__ == "__main__":
    main()
