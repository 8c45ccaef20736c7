"""Learn the weights of the "learned" posterior from the annotators: the
weights under which the humans' segmentations are more probable than
swcuts' own answers (a cutting-plane ranking fit, as in structured
max-margin learning; Tsochantaridis et al. 2005, Szummer et al. 2008).

Usage::

    python benchmarks/learn_weights.py [--split val] [--every 3] [--rounds 3] [--workers 2]

−log π of the model is linear in its weights once the image is fixed:

    E(X) = −L(X) + κ P(X) + a0 K + a1 m + a2 S + λ B(X) + μ N(X)

with L the coarsened region log-likelihood of the best fits (eqs. 55-58
with ζ), P their complexity penalty Σ dim/2 log n (κ = 1: BIC), K the
labels, m the connected regions, S = Σ area^0.9 (eq. 59), B the cut pixel
pairs' −logit of the learned detector and N the number of cut pixel pairs
(μ = λ c, c the evidence offset). Each round anneals every training photo
under the current weights (``segment(model="learned")``), adds the answer
to that photo's set of rivals, and fits θ = (κ, a0, a1, a2, λ, μ) to make
every annotator's E lower than every rival's: minimise
Σ log(1 + exp((E_human − E_rival) / τ)) over annotators and rivals, with
κ, a0, a1, a2, λ ≥ 0 (L-BFGS-B), τ = 1 % of the rival's |E| (a relative
margin). The printed weights are in :data:`MODELS`' units (a0, a1 per
10^5 pixels, λ per sqrt(10^5 pixels), offset c = μ / λ).

Training photos: every ``--every``-th BSDS500 validation photo. Check the
result with ``benchmarks/model_sweep.py`` on the other validation photos
and report on ``--split rest``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from model_sweep import SPLITS  # noqa: E402

NAMES = ("kappa", "a0", "a1", "a2", "boundary", "length")


def unit_terms(image, labels) -> np.ndarray:
    """(−L, P, K, m, S, B, N) of a labelling under model "learned" (offset
    0): P is the complexity penalty Σ dim/2 log n of the best families
    (−L at κ = 1 minus −L at κ = 0; the best family can differ, so this is
    the penalty of κ = 1's choice to first order)."""
    from swcuts.models.boundary import cut_weight
    from swcuts.segmentation.energy import _pixel_posterior

    post, vl = _pixel_posterior(image, labels, channel_axis=-1, bins=None, a0=1.0, a1=1.0, a2=1.0,
                                kappa=1.0, model="learned", caller="learn_weights")
    t = post.log_target_terms(vl)
    post.kappa = 0.0
    fit_only = post.log_target_terms(vl)["likelihood"]
    edges = post.graph.edges
    return np.array([-fit_only, fit_only - t["likelihood"], -t["labels"], -t["regions"], -t["areas"],
                     cut_weight(vl, edges, post.boundary_weights),
                     cut_weight(vl, edges, post.graph.boundary_length.astype(np.float64))])


def set_model(theta, n_pixels):
    from swcuts.segmentation.image_models import MODELS

    scale = n_pixels / 1e5
    kappa, a0, a1, a2, lam, mu = theta
    MODELS["learned"].update(a0=a0 / scale, a1=a1 / scale, a2=a2, boundary=lam / math.sqrt(scale),
                             offset=mu / lam if lam > 0 else 0.0)


def photo_job(args):
    name, base, theta, humans = args
    import swcuts
    from scipy.io import loadmat
    from swcuts.evaluation.metrics import benchmark_scores
    from swcuts.segmentation.image_models import MODELS

    image = swcuts.load_image(str(base / "images" / f"{name}.jpg"))
    gt = loadmat(str(base / "groundTruth" / f"{name}.mat"))["groundTruth"]
    truths = [gt[0, k]["Segmentation"][0, 0].astype(np.int64) for k in range(gt.shape[1])]
    n = image.shape[0] * image.shape[1]
    set_model(theta, n)
    seg = swcuts.segment(image, seed=0, model="learned", kappa=float(theta[0]))
    scores = benchmark_scores(seg.labels, truths)
    MODELS["learned"]["offset"] = 0.0
    out = {"rival": unit_terms(image, seg.labels).tolist(),
           "scores": [scores["pri"], scores["voi"], scores["covering_best"], scores["bf"], scores["n_segments"]]}
    if humans:
        out["humans"] = [unit_terms(image, t).tolist() for t in truths]
    return name, out


def energies(theta, T):
    return T @ np.concatenate([[1.0], theta])


def fit(theta0, data):
    from scipy.optimize import minimize

    pairs = []  # (human terms, rival terms, tau)
    for d in data.values():
        for r in d["rivals"]:
            r = np.asarray(r)
            for h in d["humans"]:
                pairs.append((np.asarray(h) - r, r))
    D = np.array([p[0] for p in pairs])
    R = np.array([p[1] for p in pairs])
    tau = 0.01 * np.abs(energies(theta0, R))

    def loss(theta):
        z = energies(theta, D) / tau
        # log(1 + e^z) and its gradient, stably
        val = np.logaddexp(0.0, z).sum()
        sig = 0.5 * (1.0 + np.tanh(0.5 * z))
        grad = (sig / tau) @ D[:, 1:]
        return val, grad

    bounds = [(0.0, None)] * 5 + [(None, None)]
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B", bounds=bounds)
    return res.x, res.fun / len(pairs)


def ranked(theta, data):
    """Share of photos whose median annotator is below every rival's E."""
    wins = []
    for d in data.values():
        hum = np.median(energies(theta, np.asarray(d["humans"])))
        wins.append(hum < energies(theta, np.asarray(d["rivals"][-1:])).min())
    return float(np.mean(wins))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="val", choices=sorted(SPLITS))
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--start", default="1,5,5,0.25,0.5,-1.5",
                    help="kappa,a0,a1,a2,boundary,offset in MODELS units")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "learn_weights.json"))
    args = ap.parse_args()
    base = SPLITS[args.split]
    names = sorted((p.stem for p in (base / "images").glob("*.jpg")), key=int)[::args.every]
    n_pixels = 481 * 321
    scale = n_pixels / 1e5
    kappa, a0, a1, a2, lam, off = (float(x) for x in args.start.split(","))
    theta = np.array([kappa, a0 * scale, a1 * scale, a2, lam * math.sqrt(scale), lam * math.sqrt(scale) * off])
    data = {}
    for rnd in range(args.rounds):
        jobs = [(n, base, theta, n not in data) for n in names]
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(photo_job, jobs))
        sc = np.array([r["scores"] for _, r in results])
        for name, r in results:
            d = data.setdefault(name, {"humans": r.get("humans"), "rivals": []})
            d["rivals"].append(r["rival"])
        print(f"round {rnd}: weights {describe(theta)}")
        print(f"  answers: PRI {sc[:, 0].mean():.3f}  VoI {sc[:, 1].mean():.3f}  covering {sc[:, 2].mean():.3f}  "
              f"bf {sc[:, 3].mean():.3f}  segments {sc[:, 4].mean():.1f}; humans ranked first on "
              f"{ranked(theta, data):.2f} of {len(names)} photos")
        theta, loss = fit(theta, data)
        print(f"  fitted: {describe(theta)} (mean loss {loss:.3f}); humans first under it: {ranked(theta, data):.2f}")
        Path(args.out).write_text(json.dumps({"theta": theta.tolist(), "data": data}, indent=0))


def describe(theta) -> str:
    scale = 481 * 321 / 1e5
    kappa, a0, a1, a2, lam, mu = theta
    return (f"kappa={kappa:.3g}, a0={a0 / scale:.3g}, a1={a1 / scale:.3g}, a2={a2:.3g}, boundary={lam / math.sqrt(scale):.3g}, "
            f"offset={mu / lam if lam > 0 else 0.0:.3g}")


if __name__ == "__main__":
    main()
