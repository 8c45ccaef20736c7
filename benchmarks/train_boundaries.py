"""Train the boundary detector (swcuts/image/boundary_detector.npz) from the
shared BSDS500 photos, and print its validation figures.

Usage: python benchmarks/train_boundaries.py [--out PATH] [--hidden 16] [--global-hidden N] [--per-photo 4000]
                                             [--skip-heldout] [--heldout-only] [--edges]
                                             [--select --out SCRATCH] [--modes colour,grey] [--set KEY=VALUE]

Each network fit is cached in benchmarks/out/train_boundaries by its data and
arguments, so a change to the second stage refits only the second network.

Training photos: BSDS500 ``bsds500-train`` (30) and ``bsds500-val`` (100),
every annotator. ``bsds500-train-rest`` (170) is held out: it is only read
to print the figures below, never to fit or choose anything. The test
split is never read.

Target of a pixel: the share of the photo's annotators with a boundary
pixel (:func:`swcuts.evaluation.metrics.boundary_map` of their
segmentation) within one pixel of it (3x3 neighbourhood): the detector
estimates P(an annotator draws a boundary within 1 px).

Pixels: from each photo ``--per-photo`` pixels with a positive target and
as many with target 0 (Pb's balancing), each weighted by its stratum's
size over the number sampled, so that the weighted loss is that of every
pixel and the output stays calibrated. Classifier: a network with one
hidden layer of ``--hidden`` tanh units on the standardised features,
soft-label cross-entropy plus a small L2 penalty, L-BFGS (scipy). Two
detectors: "colour" on CIELAB features and "grey" on the grey photos
(:func:`skimage.color.rgb2gray`), both through
:func:`swcuts.image.prepare.prepare_image` as ``segment()`` sees them.

Printed: the weighted log-loss (nats per pixel) and a reliability table
(predicted vs observed share, in bins of the prediction) on training
pixels and on held-out train-rest pixels, beside the log-loss of the
constant prediction. The convolutional stage of round 10 is not fitted here:
``benchmarks/train_boundary_conv.py`` fits it on this file's networks and
writes both into one file. ``--edges`` also trains the learned edge
probabilities (:mod:`swcuts.graph.learned_edges`; see that module).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swcuts.evaluation.datasets import open_dataset  # noqa: E402
from swcuts.evaluation.metrics.boundaries import boundary_map  # noqa: E402
from swcuts.image import boundary_context as bc  # noqa: E402
from swcuts.image import boundary_detector as bd  # noqa: E402
from swcuts.image.prepare import prepare_image  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
TRAIN = ("bsds500-train", "bsds500-val")
HELDOUT = ("bsds500-train-rest",)
SETTINGS = {"n_bins": 12, "sigma": 2.0, "levels": 4, "texton_from": 1, "fine": 0,
            "spectral": 8, "spectral_factor": 4, "spectral_rho": 0.1, "context": 8}
#: The per-pixel networks only: the convolutional stage (round 10) is fitted on their outputs by
#: benchmarks/train_boundary_conv.py (``cache``, then ``ship``), which writes it into the same file.
NO_CONV = {"conv": 0, "conv_orientation": 0}
#: ``--select``: fit on these, choose on SELECT (a held-back fifth of val), never on train-rest.
SELECT_FIT = ("bsds500-train", "bsds500-val:0:80")
SELECT = ("bsds500-val:80:100",)
#: The photos each shipped detector is fitted on. The colour detector's design (levels, spectral)
#: was chosen on SELECT, so its shipped weights are those of the selection run (SELECT_FIT);
#: the grey detector was not chosen on anything and is fitted on all of TRAIN.
FIT = {"colour": SELECT_FIT, "grey": TRAIN}
N_TEXTONS = 24
SEED = 0
#: Each mode's random generator (bin ranges, textons) is seeded SEED + this.
MODE_SEED = {"colour": 0, "grey": 1}


def photos(splits):
    """Every photo of each split; ``split:a:b`` is the a-th to b-th photo (sorted by number)."""
    for spec in splits:
        split, *rng = spec.split(":")
        ds = open_dataset(DATA / split)
        names = sorted(ds.names, key=int)
        if rng:
            names = names[int(rng[0]):int(rng[1])]
        for name in names:
            yield split, ds.read(name)


def as_features(image, mode):
    from skimage.color import rgb2gray

    img = np.asarray(image)
    if mode == "grey":
        img = rgb2gray(img[..., :3]) if img.ndim == 3 else img
    return prepare_image(img)[0]


def target(truths):
    from scipy import ndimage as ndi

    share = np.zeros(truths[0].shape)
    for t in truths:
        share += ndi.binary_dilation(boundary_map(t), np.ones((3, 3), bool))
    return share / len(truths)


def sample_pixels(t, per_photo, rng):
    """Indices and weights of a stratified sample of the pixels of target ``t``."""
    flat = t.ravel()
    idx, wts = [], []
    for stratum in (np.flatnonzero(flat > 0), np.flatnonzero(flat == 0)):
        if stratum.size == 0:
            continue
        k = min(per_photo, stratum.size)
        pick = np.sort(rng.choice(stratum, k, replace=False))
        idx.append(pick)
        wts.append(np.full(k, stratum.size / k))
    return np.concatenate(idx), np.concatenate(wts)


def bin_ranges(mode, rng):
    vals = []
    for _, s in photos(TRAIN):
        z = as_features(s.image, mode).reshape(-1, 1 if mode == "grey" else 3)
        vals.append(z[rng.choice(len(z), 2000, replace=False)])
    v = np.concatenate(vals)
    lo, hi = np.percentile(v, 0.5, axis=0), np.percentile(v, 99.5, axis=0)
    if mode == "colour":
        lo[0], hi[0] = 0.0, 1.0
    return lo, hi


def textons(mode, rng):
    from scipy.cluster.vq import kmeans2

    resp = []
    for _, s in photos(TRAIN):
        z = as_features(s.image, mode)
        f = bd.texton_responses(z[..., 0]).reshape(-1, 10)
        resp.append(f[rng.choice(len(f), 1500, replace=False)])
    data = np.concatenate(resp).astype(np.float64)
    centres, _ = kmeans2(data, N_TEXTONS, iter=30, minit="++", seed=np.random.default_rng(SEED))
    return centres


def _sampled_pixels(prefix, det, mode, splits, per_photo, seed, arrays, rows_of):
    """Rows ``rows_of(photo)`` (an (h, w, k) array) of the pixels sampled from every
    photo of ``splits``, their targets and weights; cached in benchmarks/out/train_boundaries,
    keyed by everything they depend on (``det``'s ``arrays`` and the detector's source)."""
    import hashlib

    key = hashlib.sha1(repr((mode, splits, per_photo, seed, det["settings"],
                             [np.asarray(det[mode][k]).tobytes() for k in arrays],
                             Path(bd.__file__).read_bytes(), Path(bc.__file__).read_bytes())
                       ).encode()).hexdigest()[:16]
    cache = ROOT / "benchmarks" / "out" / "train_boundaries" / f"{prefix}{mode}-{'+'.join(splits)}-{key}.npz"
    if cache.exists():
        with np.load(cache) as z:
            return z["x"].astype(np.float64), z["y"], z["w"]
    rng = np.random.default_rng(seed)
    xs, ys, ws = [], [], []
    t0 = time.perf_counter()
    for _, s in photos(splits):
        rows = rows_of(s)
        t = target(s.truths)
        idx, w = sample_pixels(t, per_photo, rng)
        xs.append(rows.reshape(-1, rows.shape[2])[idx])
        ys.append(t.ravel()[idx])
        ws.append(w)
    print(f"  {mode}: {prefix.rstrip('-') or 'local'} features of {len(xs)} photos ({', '.join(splits)}) in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    x, y, w = np.concatenate(xs).astype(np.float64), np.concatenate(ys), np.concatenate(ws)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, x=x.astype(np.float32), y=y, w=w)
    return x, y, w


def collect(det, mode, splits, per_photo, seed):
    """Features, targets and weights of sampled pixels (:func:`_sampled_pixels`)."""
    return _sampled_pixels("", det, mode, splits, per_photo, seed, ("lo", "hi", "centres"),
                           lambda s: bd.boundary_features(as_features(s.image, mode), det))


def collect_global(det, mode, splits, per_photo, seed):
    """As :func:`collect`, the global network's inputs (the local network of ``det`` applied to
    the whole photo, then :func:`bd.spectral_features`) at the same sampled pixels."""

    def rows_of(s):
        f = bd.boundary_features(as_features(s.image, mode), det)
        h, w, n = f.shape
        p = bd._network(f.reshape(-1, n), det[mode])
        return bd._global_inputs(f, p, det["settings"]).reshape(h, w, -1)

    return _sampled_pixels("global-", det, mode, splits, per_photo, seed,
                           ("lo", "hi", "centres", "mean", "std", "w1", "b1", "w2", "b2"), rows_of)


def fit_network(x, y, w, hidden, seed, l2=1e-4, maxiter=500):
    """Weights of a one-hidden-layer tanh network minimising the weighted
    soft-label cross-entropy (L-BFGS); cached in benchmarks/out/train_boundaries, keyed by the
    data and every argument (so a design change of the second stage reuses the first's fit)."""
    import hashlib
    import inspect

    key = hashlib.sha1(b"".join([np.ascontiguousarray(a).tobytes() for a in (x, y, w)] + [
        repr((hidden, seed, l2, maxiter, inspect.getsource(_fit_network))).encode()])).hexdigest()[:16]
    cache = ROOT / "benchmarks" / "out" / "train_boundaries" / f"net-{key}.npz"
    if cache.exists():
        with np.load(cache) as z:
            return ({k: z[k] for k in ("w1", "b1", "w2", "b2")},
                    SimpleNamespace(nit=int(z["nit"]), message=f"cached {cache.name}: {z['message']}"))
    net, res = _fit_network(x, y, w, hidden, seed, l2, maxiter)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **net, nit=np.int64(res.nit), message=np.str_(res.message))
    return net, res


def _fit_network(x, y, w, hidden, seed, l2, maxiter):
    from scipy.optimize import minimize

    n, d = x.shape
    x = np.ascontiguousarray(x, dtype=np.float32)          # float32 products: half the time, same optimum
    y = np.asarray(y, dtype=np.float64)
    w = w / w.sum()
    rng = np.random.default_rng(seed)
    shapes = [(d, hidden), (hidden,), (hidden,), ()]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(theta):
        out, k = [], 0
        for s, m in zip(shapes, sizes):
            out.append(theta[k:k + m].reshape(s))
            k += m
        return out

    def loss(theta):
        w1, b1, w2, b2 = unpack(theta)
        hdn = np.tanh(x @ w1.astype(np.float32) + b1.astype(np.float32))
        logit = hdn.astype(np.float64) @ w2 + b2
        # cross-entropy of soft labels: softplus(logit) - y logit
        sp = np.logaddexp(0.0, logit)
        val = float(np.dot(w, sp - y * logit)) + 0.5 * l2 * (float((w1 ** 2).sum()) + float((w2 ** 2).sum()))
        g = w * (1.0 / (1.0 + np.exp(-logit)) - y)                  # dL/dlogit
        gw2 = hdn.T @ g + l2 * w2
        gb2 = g.sum()
        gh = np.outer(g.astype(np.float32), w2.astype(np.float32)) * (1.0 - hdn * hdn)
        gw1 = (x.T @ gh).astype(np.float64) + l2 * w1
        gw2 = gw2.astype(np.float64)
        gb1 = gh.sum(0, dtype=np.float64)
        return val, np.concatenate([gw1.ravel(), gb1, gw2, [gb2]])

    theta0 = np.concatenate([rng.normal(0, 1 / np.sqrt(d), d * hidden), np.zeros(hidden),
                             rng.normal(0, 1 / np.sqrt(hidden), hidden), [0.0]])
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter})
    w1, b1, w2, b2 = unpack(res.x)
    return {"w1": w1, "b1": b1, "w2": w2, "b2": np.asarray(b2)}, res


def figures(label, p, y, w, unit="pixel"):
    """Weighted log-loss and reliability table."""
    eps = 1e-12
    w = w / w.sum()
    ll = -float(np.dot(w, y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
    base = float(np.dot(w, y))
    ll0 = -(base * np.log(base) + (1 - base) * np.log(1 - base))
    print(f"  {label}: log-loss {ll:.4f} nats/{unit} (constant {base:.3f}: {ll0:.4f})")
    edges = np.array([0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0])
    print(f"    {'predicted':>12} {'share':>11} {'mean pred':>9} {'observed':>8}")
    k = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, len(edges) - 2)
    for b in range(len(edges) - 1):
        m = k == b
        if not m.any():
            continue
        wb = w[m].sum()
        print(f"    {edges[b]:5.2f}-{edges[b + 1]:<5.2f} {wb:11.4f} {np.dot(w[m], p[m]) / wb:9.3f} "
              f"{np.dot(w[m], y[m]) / wb:8.3f}")
    return ll


def train_mode(mode, args, rng, fit=TRAIN):
    print(f"\n{mode} detector", flush=True)
    lo, hi = bin_ranges(mode, rng)
    centres = textons(mode, rng)
    arrays = {"lo": lo, "hi": hi, "centres": centres}
    det = {"settings": dict(SETTINGS), mode: arrays}
    x, y, w = collect(det, mode, fit, args.per_photo, SEED)
    mean, std = x.mean(0), x.std(0) + 1e-6
    t0 = time.perf_counter()
    net, res = fit_network((x - mean) / std, y, w, args.hidden, SEED, maxiter=args.maxiter)
    print(f"  local network {x.shape[1]}-{args.hidden}-1 on {len(y)} pixels: {res.nit} L-BFGS iterations, "
          f"{time.perf_counter() - t0:.0f} s ({res.message})")
    arrays.update(mean=mean, std=std, **net)
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
    p = bd._network(x.astype(np.float32), arrays)
    figures("training pixels, local network", p, y, w)
    if SETTINGS["spectral"] > 0:
        x, y, w = collect_global(det, mode, fit, args.per_photo, SEED)
        mean, std = x.mean(0), x.std(0) + 1e-6
        t0 = time.perf_counter()
        net, res = fit_network((x - mean) / std, y, w, args.global_hidden, SEED + 1, maxiter=args.maxiter)
        print(f"  global network {x.shape[1]}-{args.global_hidden}-1: {res.nit} L-BFGS iterations, "
              f"{time.perf_counter() - t0:.0f} s ({res.message})")
        arrays.update({"g_" + k: np.asarray(v, dtype=np.float64) for k, v in dict(mean=mean, std=std, **net).items()})
        p = bd._network(x.astype(np.float32), arrays, "g_")
        figures("training pixels, global network", p, y, w)
    return arrays


def trained_cache(mode, args) -> Path:
    """Where :func:`trained_mode` keeps ``mode``'s detector, keyed by everything it depends on."""
    import hashlib
    import inspect

    key = hashlib.sha1(repr((mode, FIT[mode], SETTINGS, N_TEXTONS, SEED, args.hidden, args.per_photo, args.maxiter,
                             args.global_hidden, Path(bd.__file__).read_bytes(), Path(bc.__file__).read_bytes(),
                             [inspect.getsource(f) for f in (train_mode, collect, collect_global, fit_network, _fit_network,
                                                            bin_ranges, textons, target, sample_pixels)])
                        ).encode()).hexdigest()[:16]
    return ROOT / "benchmarks" / "out" / "train_boundaries" / f"trained-{mode}-{key}.npz"


def trained_mode(mode, args):
    """:func:`train_mode` on ``FIT[mode]``, cached (so the two modes can be trained by separate
    runs, ``--modes grey`` and ``--modes colour``, and joined by a third)."""
    cache = trained_cache(mode, args)
    if cache.exists():
        print(f"\n{mode} detector: {cache.name} (cached)")
        with np.load(cache) as z:
            return {k: z[k] for k in z.files}
    arrays = train_mode(mode, args, np.random.default_rng(SEED + MODE_SEED[mode]), FIT[mode])
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **arrays)
    return arrays


def heldout(det, mode, args, splits=HELDOUT, label="HELD-OUT pixels (train-rest, 170 photos)"):
    if det["settings"]["spectral"] > 0:
        x, y, w = collect_global(det, mode, splits, args.per_photo, SEED + 1)
        p = bd._network(x.astype(np.float32), det[mode], "g_")
    else:
        x, y, w = collect(det, mode, splits, args.per_photo, SEED + 1)
        p = bd._network(x.astype(np.float32), det[mode])
    return figures(label, p, y, w)


def select_ods(det, mode, splits):
    """ODS / OIS F and AP of ``det`` on the photos of ``splits`` (as benchmarks/boundary_detector.py)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from soft_boundaries import counts, scores
    from swcuts.evaluation.metrics.boundaries import BSDS_MAX_DIST

    thr = np.array([0.01, 0.02, 0.03, 0.045, 0.06, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6])
    res = []
    for _, s in photos(splits):
        z = as_features(s.image, mode)
        soft = bd.nonmax_suppress(bd.boundary_probability(z, detector=det))
        h, w = soft.shape
        res.append(counts(soft, [boundary_map(t) for t in s.truths], BSDS_MAX_DIST * float(np.hypot(h, w)), thr))
    return scores(res, thr)


# ---------------------------------------------------------------- learned edge probabilities

def edge_labels(atoms, truths, n):
    """Per annotator, each atom's majority segment; per edge, the share of
    annotators for whom both ends share it."""
    from swcuts.image.atoms import majority_labels

    return np.stack([majority_labels(np.asarray(t, dtype=np.int64), atoms) for t in truths])


def edge_data(splits, mode, merged=False):
    """Edge features, labels and eq.-53 q of every edge of every photo (watershed atoms flooded on
    the detector's map, as the default "learned" model's; ``merged``: then merged along their weakest
    boundaries, as the default model samples them)."""
    from swcuts.graph.edge_probabilities import kl_edge_probabilities, vertex_histograms
    from swcuts.graph.learned_edges import edge_features
    from swcuts.graph.region_graph import RegionGraph
    from swcuts.image.atoms import compute_atoms
    from swcuts.segmentation.build import merge_atoms
    from swcuts.segmentation.image_models import DEFAULT_MODEL, model_atom_merge

    cache = ROOT / "benchmarks" / "out" / "train_boundaries" / (
        f"edges-relief{'-merged' if merged else ''}-{mode}-{'+'.join(splits)}-{detector_key(mode)}.npz")
    if cache.exists():
        with np.load(cache) as z:
            return z["x"], z["y"], z["q53"], z["photo"]
    xs, ys, qs, ph = [], [], [], []
    t0 = time.perf_counter()
    for k, (_, s) in enumerate(photos(splits)):
        z = as_features(s.image, mode)
        bmap = bd.boundary_probability(z)
        atoms = compute_atoms(z, "watershed", 1000, seed=0, relief=bmap)     # as the default model's atoms
        graph = RegionGraph.from_labels(atoms)
        if merged:
            atoms, graph = merge_atoms(atoms, graph, bmap, *model_atom_merge(DEFAULT_MODEL))
        xs.append(edge_features(z, atoms, graph, bmap))
        maj = edge_labels(atoms, s.truths, graph.n_vertices)
        ys.append((maj[:, graph.edges[:, 0]] == maj[:, graph.edges[:, 1]]).mean(0))
        hist = vertex_histograms(z, atoms, graph.n_vertices, bins=15)
        qs.append(np.minimum(kl_edge_probabilities(hist, graph.edges, scale=1.0), 0.95))
        ph.append(np.full(graph.n_edges, k))
    print(f"  {mode}: edges of {k + 1} photos ({', '.join(splits)}) in {time.perf_counter() - t0:.0f} s", flush=True)
    out = [np.concatenate(a) for a in (xs, ys, qs, ph)]
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, x=out[0], y=out[1], q53=out[2], photo=out[3])
    return out


def detector_key(mode):
    """A hash of the shipped detector's ``mode`` (its arrays and settings) and of its code."""
    import hashlib

    det = bd.load_detector()
    h = hashlib.sha1(repr(sorted(det["settings"].items())).encode())
    for k in sorted(det[mode]):
        h.update(np.asarray(det[mode][k]).tobytes())
    h.update(Path(bd.__file__).read_bytes())
    return h.hexdigest()[:12]


def hash_of(*paths):
    import hashlib

    h = hashlib.sha1()
    for p in paths:
        if Path(p).exists():
            h.update(Path(p).read_bytes())
    return h.hexdigest()[:12]


def auc(score, cut):
    """P(score of a kept edge > score of a cut edge)."""
    from scipy.stats import rankdata

    r = rankdata(score)
    n1, n0 = int((~cut).sum()), int(cut.sum())
    return float((r[~cut].sum() - n1 * (n1 + 1) / 2) / max(n1 * n0, 1))


def train_edges(args):
    from swcuts.graph import learned_edges as le

    modes = {}
    for mode in ([] if args.heldout_only else args.modes.split(",")):
        print(f"\n{mode} edge probabilities (watershed atoms on the detector's map, 1000)", flush=True)
        x, y, _, _ = edge_data(TRAIN, mode, args.merged)
        mean, std = x.mean(0), x.std(0) + 1e-9
        net, res = fit_network((x - mean) / std, y, np.ones(len(y)), args.edge_hidden, SEED, maxiter=400)
        print(f"  network {x.shape[1]}-{args.edge_hidden}-1 on {len(y)} edges: {res.nit} iterations ({res.message})")
        modes[mode] = dict(mean=mean, std=std, **net)
        figures("training edges (train + val): learned q", le.network(x, modes[mode]), y, np.ones(len(y)), "edge")
    path = Path(le.DEFAULT_PATH if args.edges_out is None else args.edges_out)
    if args.heldout_only:
        pass
    elif sorted(modes) != ["colour", "grey"]:          # --modes: the other mode's weights kept as they are
        old = le.load_edge_model(path)
        modes = {m: modes.get(m, {k: old[m][k] for k in ("mean", "std", "w1", "b1", "w2", "b2")})
                 for m in ("colour", "grey")}
    if not args.heldout_only:
        le.save_edge_model(path, modes, f"BSDS500 train (30) + val (100), every annotator, watershed atoms (1000"
                                        f"{', merged as the default model merges them' if args.merged else ''}) on "
                                        f"the detector's map; label: share of annotators whose majority segments of "
                                        f"the two atoms agree; network {args.edge_hidden} tanh units; detector "
                                        f"{bd.DEFAULT_PATH.name} {hash_of(bd.DEFAULT_PATH)}; "
                                        f"benchmarks/train_boundaries.py --edges")
        print(f"\nwrote {path} ({path.stat().st_size / 1024:.1f} KiB)")
    if args.skip_heldout:
        return
    for mode in args.modes.split(","):
        print(f"\n{mode} edge probabilities, HELD OUT (train-rest, 170 photos)")
        x, y, q53, photo = edge_data(HELDOUT, mode, args.merged)
        ones = np.ones(len(y))
        q = le.network(x, le.load_edge_model(path)[mode])
        q = np.clip(q, 1e-6, le.Q_MAX)
        l1 = figures("learned q", q, y, ones, "edge")
        l0 = figures("eq. 53 q (KL, scale 1, clipped to q_max 0.95 as segment() does)", np.maximum(q53, 1e-6), y, ones, "edge")
        per = [(-np.mean(y[m] * np.log(q[m]) + (1 - y[m]) * np.log(1 - q[m])),
                -np.mean(y[m] * np.log(np.maximum(q53[m], 1e-6)) + (1 - y[m]) * np.log(1 - q53[m])))
               for m in (photo == k for k in np.unique(photo))]
        d = np.array([b - a for a, b in per])
        print(f"  log-loss per edge: learned {l1:.4f}, eq. 53 {l0:.4f}; per photo eq.53 - learned: mean "
              f"{d.mean():.4f} +- {d.std(ddof=1) / np.sqrt(len(d)):.4f} (SE), learned better on {int((d > 0).sum())}"
              f"/{len(d)} photos")
        cut = y < 0.5
        print(f"  AUC, edges most annotators keep vs cut: learned {auc(q, cut):.3f}, eq. 53 {auc(q53, cut):.3f}, "
              f"mean boundary probability alone {auc(-x[:, 0], cut):.3f}")
        print(f"  mean q on edges most annotators cut (y < 0.5, {cut.mean():.1%} of edges): learned "
              f"{q[cut].mean():.3f}, eq. 53 {q53[cut].mean():.3f}; on the others: learned {q[~cut].mean():.3f}, "
              f"eq. 53 {q53[~cut].mean():.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(bd.DEFAULT_PATH))
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--global-hidden", type=int, default=None, help="hidden units of the global network "
                                                                    "(default: --hidden)")
    ap.add_argument("--per-photo", type=int, default=4000)
    ap.add_argument("--skip-heldout", action="store_true")
    ap.add_argument("--heldout-only", action="store_true", help="print the held-out figures of --out, no training")
    ap.add_argument("--edges", action="store_true", help="train the learned edge probabilities only")
    ap.add_argument("--edge-hidden", type=int, default=8)
    ap.add_argument("--edges-out", default=None)
    ap.add_argument("--merged", action="store_true",
                    help="with --edges: train on the merged atoms' edges (the edges posterior's evidence)")
    ap.add_argument("--modes", default="colour,grey",
                    help="the detectors fitted (each cached; the weights file is written when both are)")
    ap.add_argument("--maxiter", type=int, default=500, help="L-BFGS iterations of each detector network")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a detector setting (see SETTINGS), e.g. levels=4, spectral=8")
    ap.add_argument("--select", action="store_true",
                    help="model selection: fit on train + the first 80 val photos, print log-loss and ODS F on "
                         "the last 20 val photos; writes --out (give a scratch path), never reads train-rest")
    args = ap.parse_args()
    if args.global_hidden is None:
        args.global_hidden = args.hidden
    for kv in args.set:
        k, v = kv.split("=")
        if k not in SETTINGS:
            sys.exit(f"unknown setting {k!r}: one of {', '.join(SETTINGS)}")
        SETTINGS[k] = float(v) if "." in v else int(v)
    if args.select:
        if Path(args.out).resolve() == bd.DEFAULT_PATH.resolve():
            sys.exit("--select writes a scratch detector: give --out PATH")
        modes = {m: train_mode(m, args, np.random.default_rng(SEED + MODE_SEED[m]), SELECT_FIT)
                 for m in args.modes.split(",")}
        bd.save_detector(args.out, {**modes, **{m: modes[next(iter(modes))] for m in ("colour", "grey")
                                                 if m not in modes}}, {**SETTINGS, **NO_CONV}, "selection run")
        det = bd.load_detector(args.out)
        for m in modes:
            ll = heldout(det, m, args, SELECT, f"SELECTION pixels ({SELECT[0]})")
            t = time.perf_counter()
            sc = select_ods(det, m, SELECT)
            print(f"SELECT {m} {SETTINGS} hidden {args.hidden}/{args.global_hidden} per-photo {args.per_photo}: log-loss {ll:.4f}, "
                  f"ODS {sc['ods']:.4f} OIS {sc['ois']:.4f} AP {sc['ap']:.4f} ({time.perf_counter() - t:.0f} s)",
                  flush=True)
        return
    if args.edges:
        train_edges(args)
        return
    if args.heldout_only:
        det = bd.load_detector(args.out)
        for m in ("colour", "grey"):
            print(f"\n{m} detector ({Path(args.out).name}), held out")
            heldout(det, m, args)
        return
    modes = {m: trained_mode(m, args) for m in args.modes.split(",")}
    if sorted(modes) != ["colour", "grey"]:
        print(f"\ntrained {', '.join(modes)} (cached); run without --modes to write {args.out}")
        return
    training = (f"BSDS500, every annotator; colour fitted on {' + '.join(FIT['colour'])} (the other 20 val photos "
                f"chose its design), grey on {' + '.join(FIT['grey'])}; target: share of annotators with a boundary "
                f"within 1 px; {args.per_photo}+{args.per_photo} weighted pixels per photo; local and global networks "
                f"of {args.hidden} and {args.global_hidden} tanh units; settings {SETTINGS}, {N_TEXTONS} textons; benchmarks/train_boundaries.py")
    bd.save_detector(args.out, modes, {**SETTINGS, **NO_CONV}, training)
    print(f"\nwrote {args.out} ({Path(args.out).stat().st_size / 1024:.1f} KiB)")
    if not args.skip_heldout:
        det = bd.load_detector(args.out)
        for m in modes:
            print(f"\n{m} detector, held out")
            heldout(det, m, args)


if __name__ == "__main__":
    main()
