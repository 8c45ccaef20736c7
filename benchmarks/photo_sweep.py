"""Sweep of the image posterior's weights and model choices on the BSDS halves.

Usage::

    python benchmarks/photo_sweep.py "lam=10,a0=50,a1=0" "lam=15,a0=100" ...
        [--halves tune,heldout] [--workers 2] [--out benchmarks/out/photo_sweep]

Every configuration runs default ``segment()`` (SW cuts, default atoms,
budget and schedule, seed 0) on every image of the chosen halves of the
30 development BSDS500 photos (tuning half: even sorted positions,
held-out half: odd; ``benchmarks/bsds.split_halves``; ``val``: the 100
BSDS500 validation photos, ``rest``: the other 170 training photos, when
``benchmarks/bsds.VAL`` and ``REST`` hold them) and is scored
against every annotator. A configuration is a comma list of ``key=value``:
``model`` (a name of ``segment(model=...)``), ``lam``, ``a0``, ``a1`` (the
named model's boundary weight and prior weights per 10^5 pixels, as in
:data:`swcuts.segmentation.options.MODELS`) and any other keyword of ``segment``
(``edge_scale``, ``bins``, ``kappa``, ``a2``, ``n_atoms``, ...; ``seed``, default 0); ``bw``
(experiment): boundary weights ``tex`` (half-window histogram gradient,
``brad``, ``bbins``, ``bmix``), ``texmax`` (max of that, at scale ``btk``,
and the contrast weight; at the defaults brad=5, bbins=8, btk=2 it is
model "texture") or ``atomkl`` (atoms' histogram KL, ``bmix``); ``lmean``, ``lstd``
(experiment): texture channels for the likelihood; ``whist`` (experiment,
now model "window"): window histograms of radius whist; ``smooth``
(experiment): Gaussian smoothing of the features, σ in pixels; ``scomp``,
``wcomp`` (experiment): the compactness of the SLIC or watershed atoms;
``wrefine`` (0 or 1): the watershed atoms' boundary snapping; ``aexp``
(experiment): the area prior's exponent (0.9 in eq. 59); ``qearly``
(experiment): the SW-cut kernels use q^qearly in the first half of the anneal;
``spa`` (experiment): swc's default budget in steps per atom; ``qbins``,
``qwin`` (experiment): q's histograms with qbins bins, counted through
windows of radius qwin; ``chains`` (experiment): the best of that many
independent anneals, each with its share of the budget; ``tag``: a name
that only keeps apart the results of modified code run from another tree;
``ocw`` (experiment): the weight factor of one-channel images. Results
are appended to ``results.jsonl`` in ``--out`` and reused when the same
configuration and image come again; the table of means is printed per half.
With ``--scenes DIR`` (the ``--out`` folder of
``benchmarks/synthetic_scenes.py``) it runs on those synthetic scenes
(``--halves tune,test``) instead. With ``--peers DIR`` (the ``--out`` folder of ``benchmarks/real_photos.py``,
which holds the tuned peers' results per half) it also prints the selection
rule: each configuration's worst margin over the best peer on PRI, VoI and
covering, in standard errors of the paired per-image difference.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bsds import DATA, REST, VAL, split_halves  # noqa: E402

MODEL_KEYS = {"lam": "boundary", "a0": "a0", "a1": "a1"}


def parse(config: str) -> dict:
    out = {}
    for item in filter(None, config.split(",")):
        key, value = item.split("=")
        try:
            out[key] = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            out[key] = value
    return out


_ORIGINAL = {}


def _restore_patches():
    """Undo the experiments' patches of an earlier task in this worker (a pool
    worker runs many tasks)."""
    from swcuts.segmentation import segment as api, image_models
    from swcuts.image import atoms
    from swcuts.graph import edge_probabilities as edges
    from swcuts.image.prepare import prepare_image
    from swcuts.models import boundary, image

    atoms._METHODS.update(slic=atoms.slic_atoms, watershed=atoms.watershed_atoms)
    from swcuts.samplers import swc

    _ORIGINAL.setdefault("run", swc.CompiledRunMixin.run)
    swc.CompiledRunMixin.run = _ORIGINAL["run"]
    from swcuts.samplers.registry import sampler_spec

    _ORIGINAL.setdefault("spa", sampler_spec("swc").steps_per_atom)
    object.__setattr__(sampler_spec("swc"), "steps_per_atom", _ORIGINAL["spa"])
    api.prepare_image = prepare_image
    _ORIGINAL.setdefault("ocw", image_models.ONE_CHANNEL_WEIGHT)
    image_models.ONE_CHANNEL_WEIGHT = _ORIGINAL["ocw"]
    api.vertex_histograms = edges.vertex_histograms
    api.ImageModel = image.ImageModel
    image.contrast_weights = boundary.contrast_weights


def run(task):
    folder, name, config, store_key = task
    import swcuts
    from swcuts.segmentation import image_models, options

    _restore_patches()
    from swcuts.evaluation.benchmarking.runs import one_core
    from swcuts.evaluation.datasets import open_dataset
    from swcuts.evaluation.metrics.scores import benchmark_scores

    kw = parse(config)
    model = kw.pop("model", "contrast")
    seed = int(kw.pop("seed", 0))
    kw.pop("tag", None)   # a name for runs of modified code (another worktree)
    weights = dict(options.MODELS[model])
    for key, field in MODEL_KEYS.items():
        if key in kw:
            weights[field] = float(kw.pop(key))
    options.MODELS["sweep"] = weights
    smooth = float(kw.pop("smooth", 0.0))
    if smooth:
        # Experiment: the features Gaussian-smoothed (sigma in pixels) before
        # atoms, boundary weights and likelihood are made from them.
        from scipy import ndimage as ndi

        from swcuts.segmentation import segment as api
        from swcuts.image.prepare import prepare_image

        def smoothed(image, channel_axis=-1):
            features, display = prepare_image(image, channel_axis=channel_axis)
            sig = (smooth, smooth) + (0,) * (features.ndim - 2)
            return np.clip(ndi.gaussian_filter(features, sig, mode="nearest"), 0, 1), display

        api.prepare_image = smoothed
    chroma, stretch = float(kw.pop("chroma", 1.0)), int(kw.pop("stretch", 0))
    if chroma != 1.0 or stretch:
        # Experiment: the colour features rescaled before atoms, q, boundary
        # weights and likelihood: a* and b* stretched by ``chroma`` about
        # their centre (clipped to [0, 1]; prepare_image maps 256 a*/b* units
        # to 1, against 100 L* units), or, with ``stretch=1``, every channel
        # stretched to the image's own 0.5 and 99.5 percentiles.
        from swcuts.segmentation import segment as api
        from swcuts.image.prepare import prepare_image

        def rescaled(image, channel_axis=-1):
            features, display = prepare_image(image, channel_axis=channel_axis)
            f = features.copy()
            if f.ndim == 3 and f.shape[-1] == 3 and chroma != 1.0:
                f[..., 1:] = 0.5 + chroma * (f[..., 1:] - 0.5)
            if stretch:
                flat = f.reshape(-1, f.shape[-1] if f.ndim == 3 else 1)
                lo, hi = np.percentile(flat, [0.5, 99.5], axis=0)
                flat[:] = (flat - lo) / np.maximum(hi - lo, 1e-6)
            return np.ascontiguousarray(np.clip(f, 0.0, 1.0)), display

        api.prepare_image = rescaled
    bsigma = kw.pop("bsigma", None)
    if bsigma is not None:
        # Experiment: boundary evidence from features smoothed at other scales;
        # "bsigma=1+3" is the geometric mean of the normalised squared
        # differences at sigma 1 and 3 (an edge must persist across scales).
        from swcuts.models import boundary, image

        scales = [float(s) for s in str(bsigma).split("+")]

        def multiscale_weights(features, atoms, graph, sigma=None, evidence=None):
            from scipy import ndimage as ndi
            z0 = np.asarray(features, dtype=np.float64)
            z0 = z0[..., None] if z0.ndim == 2 else z0
            logs = 0.0
            for s in scales:
                z = ndi.gaussian_filter(z0, sigma=(s, s, 0), mode="nearest") if s > 0 else z0
                d = np.concatenate([((z[:, 1:] - z[:, :-1]) ** 2).sum(-1).ravel(),
                                    ((z[1:, :] - z[:-1, :]) ** 2).sum(-1).ravel()])
                logs = logs + np.log(d / d.mean() + 1e-12)
            g = np.exp(logs / len(scales))
            pairs = np.exp(-g / (2.0 * g.mean()))
            return boundary.edge_weights(pairs, atoms, graph)

        image.contrast_weights = multiscale_weights
    bw = kw.pop("bw", None)
    brad, bbins, bmix = int(kw.pop("brad", 5)), int(kw.pop("bbins", 8)), float(kw.pop("bmix", 1.0))
    btk = float(kw.pop("btk", 2.0))   # texmax: w_t = exp(-g / (btk <g>))
    if bw == "tex":
        # Experiment: pixel-pair weights from the chi-square distance of the
        # half-window colour histograms (radius brad, bbins bins per channel),
        # mixed in the exponent with the pixel contrast (bmix = 1: histograms only).
        from swcuts.models import boundary, image

        def texture_weights(features, atoms, graph, sigma=None, evidence=None):
            g = boundary.histogram_gradient(features, brad, bbins)
            logs = bmix * g / g.mean()
            if bmix < 1.0:
                logs = logs + (1.0 - bmix) * -2.0 * np.log(np.maximum(boundary.pair_weights(features), 1e-300))
            pairs = np.exp(-0.5 * logs)
            return boundary.edge_weights(pairs, atoms, graph)

        image.contrast_weights = texture_weights
    elif bw == "texmax":
        # Experiment: max of the histogram-gradient and the contrast pixel-pair
        # weights: a cut is cheap only where both say edge.
        from swcuts.models import boundary, image

        def texmax_weights(features, atoms, graph, sigma=None, evidence=None):
            g = boundary.histogram_gradient(features, brad, bbins)
            wt = np.exp(-g / (btk * g.mean()))
            pairs = np.maximum(wt, boundary.pair_weights(features))
            return boundary.edge_weights(pairs, atoms, graph)

        image.contrast_weights = texmax_weights
    elif bw == "atomkl":
        # Experiment: per-edge weights from the atoms' own histograms:
        # len_ij exp(-D_ij / (2 <D>)), D the symmetric KL of edges.py, mixed
        # geometrically with the contrast weights (bmix = 1: histograms only).
        from swcuts.graph.edge_probabilities import _symmetric_kl, vertex_histograms
        from swcuts.models import boundary, image

        def atom_weights(features, atoms, graph, sigma=None, evidence=None):
            hist = vertex_histograms(features, atoms, graph.n_vertices, bins=15)
            d = np.empty(graph.n_edges)
            _symmetric_kl(hist, np.ascontiguousarray(graph.edges, dtype=np.int64), 1e-2, d)
            length = graph.boundary_length.astype(np.float64)
            wa = length * np.exp(-d / (2.0 * d.mean()))
            wc = boundary.contrast_weights(features, atoms, graph)
            return wa ** bmix * np.maximum(wc, 1e-300) ** (1.0 - bmix)

        image.contrast_weights = atom_weights
    btau = float(kw.pop("btau", 0.0))
    if btau:
        # Experiment: a boundary term that also rewards cuts along strong
        # edges: each pixel pair across a cut costs lam (w_pq - btau), so a
        # pair with w_pq < btau (a strong edge) lowers the energy.
        from swcuts.models import image

        weights_before = image.contrast_weights

        def rewarding_weights(features, atoms, graph, sigma=None, evidence=None):
            kws = {} if evidence is None else {"evidence": evidence}
            w = weights_before(features, atoms, graph, **kws)
            return w - btau * graph.boundary_length.astype(np.float64)

        image.contrast_weights = rewarding_weights
    whist = int(kw.pop("whist", 0))
    if whist:
        # Experiment (it became model "window"): the histogram likelihood
        # counts each pixel through its (2 whist + 1)^2 window (ImageModel's
        # window), at a fixed radius, with any weights.
        from swcuts.segmentation import segment as api
        from swcuts.models import image

        base = image.ImageModel

        class FixedWindow(base):
            def __init__(self, *args, **kws):
                kws["window"] = whist
                super().__init__(*args, **kws)

        api.ImageModel = FixedWindow
    for key, method, arg in (("scomp", "slic", "compactness"), ("wcomp", "watershed", "compactness"),
                             ("wrefine", "watershed", "refine")):
        if key in kw:
            # Experiment: the compactness of the SLIC or watershed atoms, or
            # the watershed's boundary snapping (wrefine=0: off).
            import functools

            from swcuts.image import atoms

            value = kw.pop(key)
            value = bool(value) if arg == "refine" else float(value)
            atoms._METHODS[method] = functools.partial(atoms._METHODS[method], **{arg: value})
    spa = kw.pop("spa", None)
    if spa is not None:
        # Experiment: swc's default budget in steps per atom (130).
        from swcuts.samplers.registry import sampler_spec

        object.__setattr__(sampler_spec("swc"), "steps_per_atom", int(spa))
    qearly = float(kw.pop("qearly", 0.0))
    if qearly:
        # Experiment: while the temperature is above Tmid = sqrt(t0 t_final)
        # (the first half of the anneal) the SW-cut kernels use q^qearly
        # (edge scale 1/qearly); every kernel leaves pi_T invariant for its
        # own q, so only the path of the anneal changes.
        from swcuts.samplers import swc
        from swcuts.samplers.common import edge_arrays

        base_run = swc.CompiledRunMixin.run

        def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-np.inf):
            if not hasattr(self, "_q_pair"):
                self._q_pair = ((self.q, self.log1mq), edge_arrays(self.graph, self.q ** qearly)
                                if hasattr(self, "graph") else (self.q, self.log1mq))
            early = len(temperatures) and temperatures[0] > 0.7
            self.q, self.log1mq = self._q_pair[1] if early else self._q_pair[0]
            return base_run(self, state, rng, temperatures, best_labels, best_log_pi)

        swc.CompiledRunMixin.run = run
    aexp = kw.pop("aexp", None)
    if aexp is not None:
        # Experiment: the area prior's exponent (a2 Σ area^aexp, eq. 59; 0.9
        # in the paper). A lower exponent makes small fragments dearer
        # against balanced splits of large regions.
        from swcuts.segmentation import segment as api

        base = api.ImageModel

        class AreaExponent(base):
            def __init__(self, *args, **kws):
                kws["exponent"] = float(aexp)
                super().__init__(*args, **kws)

        api.ImageModel = AreaExponent
    lsmooth = float(kw.pop("lsmooth", 0.0))
    if lsmooth:
        # Experiment: the region likelihood on features Gaussian-smoothed
        # (sigma in pixels); atoms, q and the boundary weights from the image.
        from scipy import ndimage as ndi

        from swcuts.segmentation import segment as api
        from swcuts.models import image

        base = image.ImageModel
        weights_of = image.contrast_weights

        class LikelihoodSmoothed(base):
            def __init__(self, features, atoms, graph, boundary=0.0, **kws):
                f = np.asarray(features, dtype=np.float64)
                sig = (lsmooth, lsmooth) + (0,) * (f.ndim - 2)
                super().__init__(ndi.gaussian_filter(f, sig, mode="nearest"), atoms, graph,
                                 boundary=0.0, **kws)
                if boundary:
                    self.set_boundary(boundary, weights_of(f, atoms, graph))

        api.ImageModel = LikelihoodSmoothed
    lmean, lstd = float(kw.pop("lmean", 0.0)), float(kw.pop("lstd", 0.0))
    if lmean or lstd:
        # Experiment: texture channels for the region likelihood only (atoms,
        # q and boundary weights from the image): the features smoothed at
        # sigma lmean (the local mean colour, 3 channels) and/or the local
        # standard deviation of the first channel at sigma lstd (1 channel,
        # divided by its 99th percentile).
        from scipy import ndimage as ndi

        from swcuts.segmentation import segment as api
        from swcuts.models import image

        base = image.ImageModel
        weights_of = image.contrast_weights

        def texture_channels(f):
            extra = []
            if lmean:
                extra.append(ndi.gaussian_filter(f, (lmean, lmean, 0), mode="nearest"))
            if lstd:
                l0 = f[..., 0]
                m = ndi.gaussian_filter(l0, lstd, mode="nearest")
                sd = np.sqrt(np.maximum(ndi.gaussian_filter(l0 * l0, lstd, mode="nearest") - m * m, 0))
                extra.append((sd / max(np.percentile(sd, 99), 1e-9))[..., None])
            return np.clip(np.concatenate([f] + extra, axis=-1), 0, 1)

        class TextureChannels(base):
            def __init__(self, features, atoms, graph, boundary=0.0, **kws):
                f = np.asarray(features, dtype=np.float64)
                f = f[..., None] if f.ndim == 2 else f
                super().__init__(texture_channels(f), atoms, graph, boundary=0.0, **kws)
                if boundary:
                    self.set_boundary(boundary, weights_of(f, atoms, graph))

        api.ImageModel = TextureChannels
    qwin, qbins = int(kw.pop("qwin", 0)), int(kw.pop("qbins", 15))
    if qwin or qbins != 15:
        # Experiment: the edge probabilities q from histograms closer to the
        # likelihood's: ``qbins`` bins per channel (15 in eq. 53's default,
        # 32 in the likelihood) and, with ``qwin`` = r > 0, each pixel counted
        # through its (2r + 1)^2 window, as model "window" counts it.
        from swcuts.segmentation import segment as api
        from swcuts.models.vertex_stats import window_histograms

        def q_histograms(features, atoms, n_vertices=None, bins=15):
            f = np.asarray(features, dtype=np.float64)
            f = f[..., None] if f.ndim == 2 else f
            n = int(atoms.max()) + 1 if n_vertices is None else int(n_vertices)
            if qwin:
                return window_histograms(f, atoms, n, qbins, qwin).reshape(n, f.shape[-1], qbins)
            from swcuts.graph.edge_probabilities import vertex_histograms
            return vertex_histograms(f, atoms, n, bins=qbins)

        api.vertex_histograms = q_histograms
    sample = open_dataset(folder).read(name)
    qnoise = float(kw.pop("qnoise", 0.0))
    if qnoise:
        # Experiment (now the library's rule, at NOISE_REF): the edge scale
        # times min(1, qnoise / sigma), sigma Immerkaer's noise estimate,
        # against the library's own factor.
        from swcuts.graph.edge_probabilities import noise_edge_scale
        from swcuts.image.prepare import prepare_image

        f, _ = prepare_image(sample.image)
        kw["edge_scale"] = noise_edge_scale(f, ref=qnoise) / noise_edge_scale(f)
    if "ocw" in kw:
        # Experiment: the weight factor of images with one varying channel
        # (swcuts.segmentation.image_models.ONE_CHANNEL_WEIGHT, 0.5).
        image_models.ONE_CHANNEL_WEIGHT = float(kw.pop("ocw"))
    chains = int(kw.pop("chains", 1))
    if chains > 1:
        # Experiment: ``chains`` independent anneals (seeds seed + 1000 i),
        # each with 1/chains of swc's budget; the lowest -log pi is kept.
        from swcuts.samplers.registry import sampler_spec

        spec = sampler_spec("swc")
        object.__setattr__(spec, "steps_per_atom", max(1, round(spec.steps_per_atom / chains)))
    with one_core():
        start = time.perf_counter()
        seg = min((swcuts.segment(sample.image, seed=seed + 1000 * i, model="sweep", **kw)
                   for i in range(chains)), key=lambda s: s.energy)
        seconds = time.perf_counter() - start
    scores = benchmark_scores(seg.labels, sample.truths)
    return dict(config=config, image=store_key, seconds=seconds, energy=seg.energy,
                **{k: scores[k] for k in ("pri", "voi", "covering", "bf", "n_segments")})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--halves", default="tune")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "photo_sweep"))
    ap.add_argument("--peers", default=None, metavar="DIR",
                    help="real_photos.py's --out folder (defaults_tune/, defaults_heldout/): print the "
                         "selection rule's margins over the tuned peers")
    ap.add_argument("--scenes", default=None, metavar="DIR",
                    help="benchmarks/synthetic_scenes.py's --out folder: run on its tune/ and test/ "
                         "scenes (--halves tune,test) instead of the BSDS halves")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.scenes:
        # The synthetic scenes of benchmarks/synthetic_scenes.py (its --out:
        # tune/, test/ in the plain-folder layout) instead of the BSDS halves.
        from swcuts.evaluation.datasets import open_dataset

        # Both sets name their scenes alike: the store keys them "half/name".
        halves = {half: [f"{half}/{n}" for n in open_dataset(Path(args.scenes) / half).names]
                  for half in ("tune", "test")}
        halves["_folders"] = {half: str(Path(args.scenes) / half) for half in ("tune", "test")}
        out = out / "scenes"
        out.mkdir(parents=True, exist_ok=True)
    else:
        halves = split_halves(DATA, out / "halves")
        halves["_folders"] = {half: str(out / "halves" / half) for half in halves}
        # The 100 BSDS500 validation photos and the other 170 training
        # photos, when copied there (bsds.VAL, bsds.REST).
        for half, folder in (("val", VAL), ("rest", REST)):
            if (folder / "images").is_dir():
                halves[half] = sorted((p.stem for p in (folder / "images").glob("*.jpg")), key=int)
                halves["_folders"][half] = str(folder)
    missing = [h for h in args.halves.split(",") if h not in halves]
    if missing:
        raise SystemExit(f"no photos for --halves {','.join(missing)} (val, rest: copy them to "
                         f"benchmarks/bsds.py's VAL, REST; scenes: tune, test)")
    store = out / "results.jsonl"
    done = {}
    if store.exists():
        for line in store.read_text().splitlines():
            r = json.loads(line)
            done[(r["config"], r["image"])] = r
    tasks = [(halves["_folders"][half], name.split("/")[-1], config, name) for half in args.halves.split(",")
             for config in args.configs for name in halves[half] if (config, name) not in done]
    if tasks:
        with get_context("forkserver").Pool(args.workers) as pool, store.open("a") as fh:
            for r in pool.imap_unordered(run, tasks):
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                done[(r["config"], r["image"])] = r
    for half in args.halves.split(","):
        print(f"\n{half} half ({len(halves[half])} images)")
        print("| config | PRI | VoI | covering | bF | segments | median s |")
        print("|---|---|---|---|---|---|---|")
        for config in args.configs:
            rows = [done[(config, n)] for n in halves[half]]
            m = collections.defaultdict(float)
            for c in ("pri", "voi", "covering", "bf", "n_segments"):
                m[c] = float(np.mean([r[c] for r in rows]))
            t = float(np.median([r["seconds"] for r in rows]))
            print(f"| {config} | {m['pri']:.3f} | {m['voi']:.3f} | {m['covering']:.3f} | {m['bf']:.3f} | "
                  f"{m['n_segments']:.1f} | {t:.2f} |")
        if args.peers:
            print_margins(done, args.configs, halves[half], Path(args.peers) / f"defaults_{half}")


#: The selection rule's metrics, with the sign that makes larger better.
RULE_METRICS = {"pri": 1, "voi": -1, "covering": 1}


def print_margins(done, configs, names, peer_folder):
    """The selection rule: a configuration's margin over the best peer on each
    of PRI, VoI and covering, in standard errors of the paired per-image
    difference (mean / (sd / sqrt(n))), and its score, the worst of the three
    (the target is to be ahead of every peer on all three); best first."""
    from swcuts.evaluation.results import load_results

    rows, _, _ = load_results(peer_folder)
    peer = {(r["method"], r["image"]): r for r in rows if r["kind"] == "peer"}
    methods = sorted({m for m, _ in peer})
    ranked = []
    for config in configs:
        margins = {}
        for key, sign in RULE_METRICS.items():
            z = []
            for method in methods:
                d = np.array([sign * (done[(config, n)][key] - peer[(method, n)][key]) for n in names])
                z.append((d.mean() / (d.std(ddof=1) / np.sqrt(d.size)), method))
            margins[key] = min(z)
        ranked.append((min(v[0] for v in margins.values()), config, margins))
    print(f"\nselection rule vs {', '.join(methods)} ({peer_folder.name}): worst margin in standard errors")
    for score, config, margins in sorted(ranked, reverse=True):
        print(f"{score:+6.2f}  {config:<36} " + "  ".join(f"{k} {z:+.2f} ({m})" for k, (z, m) in margins.items()))


if __name__ == "__main__":
    main()
