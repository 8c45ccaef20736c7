"""Section 2 of ``benchmarks/papers.py``: Lee & Choi (seed 004), section 4.1.

1,300 2-D points from 13 Gaussians
(:func:`~swcuts.evaluation.synthetic.clusters.lee_choi_gaussians`; the paper does not
publish its means and covariances, these are documented guesses), the
Normal-Inverse-Wishart likelihood with the paper's base measure
(``preset="lee-choi"``), under both of the paper's priors: DP(alpha = 1)
and the NGGP (alpha = 1, sigma = ``NGGP_SIGMA``; the paper does not give
its NGGP parameters), with the auxiliary u moved exactly
(``MixtureModel.update_auxiliary``) once per iteration.

Every sampler runs for a fixed wall time from a random partition into 36
labels (the paper's tree-insertion start needs IBHC, which swcuts does not
have), with two budgets: (a) the wall time of 218 Gibbs sweeps here, which
is what the paper's Gibbs sampler did in its 10 s (0.0458 s per sweep; a
sweep costs about 0.008 s here, so 10 s here is a much longer run than
the paper's), DP and NGGP, every sampler; (b) the paper's 10 s, DP, the
paper's three samplers.

Iterations (one sample of log pi and of the number of clusters each):

* ``gibbs`` one sweep (n single-site updates, random scan);
* ``split-merge`` one restricted-Gibbs split-merge update (t = 5) + one
  Gibbs sweep (``SplitMerge.iteration``);
* ``tree-guided`` the kernel's ``iteration``: the paper's G = 20 global
  moves + one sweep of local moves; default trees (each label's tree
  induced by one fixed tree of all points);
* ``random-split``, ``triadic`` (beta = 0.5), ``srm`` (one sRM move): one
  kernel step + one Gibbs sweep, like split-merge;
* ``swc`` (no paper row): 100 SWC-2 steps on the 10-NN graph of the data
  (:mod:`papers_swc`) -- about the wall time of two Gibbs sweeps.

Reported, mean (sd) over data sets: the best log pi seen (the paper's
"max log-lik": log p(X, Pi) for the DP, the joint log p(X, Pi, u) for the
NGGP) next to log pi of the true partition (DP; for the NGGP at the u of
the run's last state), "hit" = runs whose best reaches the truth's
log pi - 1, the ESS of the number of clusters over the second half of the
run, the final number of clusters, iterations and seconds per iteration.
"""

from __future__ import annotations

import math
import sys
import time
import traceback

import numpy as np

from swcuts.inference.diagnostics import effective_sample_size
from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
from swcuts.samplers import KERNELS
from swcuts.samplers.common import seed_compiled_rng

from papers_swc import swc_kernel

#: The NGGP's discount in the NGGP rows (the paper does not give it).
NGGP_SIGMA = 0.2
PAPER = {  # Fig. 3: max log-lik, ESS of #clusters, time/iter (mean, sd)
    "dp": {"gibbs": (-1730.4, 10.46, 0.0458), "split-merge": (-1602.3, 7.62, 0.0702),
           "tree-guided": (-1577.7, 35.65, 0.0161)},
    "nggp": {"gibbs": (-1594.7, 15.85, 0.0523), "split-merge": (-1588.5, 36.26, 0.0698),
             "tree-guided": (-1587.9, 149.72, 0.0152)},
}
SAMPLERS = ("gibbs", "split-merge", "tree-guided", "random-split", "triadic", "srm", "swc")
PAPER_SAMPLERS = ("gibbs", "split-merge", "tree-guided")
SWC_STEPS = 100
#: Fractions of the budget at which Fig. 3's curve (log pi over time) is printed.
CURVE = (0.05, 0.1, 0.25, 0.5, 1.0)


def mixture(data, prior):
    if prior == "dp":
        return MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    return MixtureModel(data, "gaussian", alpha=1.0, prior="nggp", sigma=NGGP_SIGMA,
                        preset="lee-choi")


def gibbs_sweep(gk, state, rng, n):
    for _ in range(n):
        gk.step(state, rng, 1.0)


def iteration_fn(name, model, data, state, rng):
    """A function running one iteration of sampler ``name`` on ``state``."""
    n = model.n_vertices
    gk = KERNELS["gibbs"](model)
    if name == "gibbs":
        return lambda: gibbs_sweep(gk, state, rng, n)
    if name == "split-merge":
        k = KERNELS["split-merge"](model, t=5, M=1, R=1)
        return lambda: k.iteration(state, rng, 1.0)
    if name == "tree-guided":
        k = KERNELS["tree-guided"](model)
        return lambda: k.iteration(state, rng, 1.0)
    if name == "swc":
        k = swc_kernel(model, data, "real")

        def it():
            for _ in range(SWC_STEPS):
                k.step(state, rng, 1.0)
        return it
    kw = {"gibbs_sweeps": 0} if name == "srm" else {}
    k = KERNELS[name](model, **kw)

    def it():
        k.step(state, rng, 1.0)
        gibbs_sweep(gk, state, rng, n)
    return it


def run_timed(name, model, data, init, budget, rng):
    """Run a sampler for ``budget`` seconds; per iteration (seconds, log pi, K)."""
    # Untimed warm-up (compilation) with its own kernel, state and generator.
    wstate = model.new_state(init)
    warm = iteration_fn(name, model, data, wstate, np.random.default_rng(0))
    warm()
    state = model.new_state(init)
    it = iteration_fn(name, model, data, state, rng)
    aux = model.prior.has_auxiliary
    seed_compiled_rng(rng)
    rows = [(0.0, state.log_pi, state.partition.n_labels)]
    start = time.perf_counter()
    while True:
        it()
        if aux:
            model.update_auxiliary(state, rng, 1.0)
        now = time.perf_counter() - start
        rows.append((now, state.log_pi, state.partition.n_labels))
        if now >= budget:
            break
    return np.array(rows), state


def gibbs_sweep_seconds(mix, init, rng, sweeps=30):
    """Mean wall time of a Gibbs sweep from ``init`` (the budget unit)."""
    k = KERNELS["gibbs"](mix)
    st = mix.new_state(init)
    gibbs_sweep(k, st, rng, mix.n_vertices)  # compilation
    st = mix.new_state(init)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        gibbs_sweep(k, st, rng, mix.n_vertices)
    return (time.perf_counter() - t0) / sweeps


def tree_start(mix, k=36):
    """The partition into ``k`` clusters of the greedy tree of all points
    (the tree-guided kernel's global tree) cut below its top k - 1 joins:
    every label is a subtree, so every merge of labels is reversible by a
    tree split (the paper's tree-insertion start has that property; a
    random partition has not, see docs/papers.md)."""
    g = KERNELS["tree-guided"](mix).global_tree()
    n = g.n
    top = 2 * n - 1 - (k - 1)  # internal nodes >= top are cut (parents have larger ids)
    labels = np.empty(n, np.int64)
    lab = 0
    for v in range(top, 2 * n - 1):
        for c in g.children(v):
            if c < top:
                labels[g.leaves(c)] = lab  # leaves() gives items; here items = 0..n-1
                lab += 1
    return labels


def runs(prior, samplers, budget_of, reps, seed, short_error, start="random"):
    """Every sampler on ``reps`` data sets for ``budget_of(mix, init, rng)``
    seconds each, from 36 random labels or the tree cut (``start``); per
    sampler the lists of the reported quantities."""
    out = {m: {"best": [], "truth": [], "hit": [], "ess": [], "K": [], "iters": [], "spi": [],
               "budget": [], "curve": [], "err": None} for m in samplers}
    for r in range(reps):
        data_seed = seed * 1000 + 500 + r
        data, truth = lee_choi_gaussians(1300, seed=data_seed)
        if start == "tree":
            init = tree_start(mixture(data, "dp"))
        else:
            init = np.random.default_rng(data_seed).integers(0, 36, size=1300)
        budget = None
        for m, v in out.items():
            if v["err"] is not None:
                continue
            mix = mixture(data, prior)  # fresh per sampler: SWC attaches a graph
            if budget is None:
                budget = budget_of(mix, init, np.random.default_rng(data_seed + 1))
            rng = np.random.default_rng(data_seed * 17 + len(m))
            try:
                rows, state = run_timed(m, mix, data, init, budget, rng)
            except Exception as exc:
                v["err"] = short_error(exc)
                traceback.print_exc(limit=3, file=sys.stderr)
                continue
            truth_lp = mix.log_target(truth, u=getattr(state, "u", None))
            v["best"].append(rows[:, 1].max())
            v["truth"].append(truth_lp)
            v["hit"].append(rows[:, 1].max() >= truth_lp - 1.0)
            half = rows[1 + (len(rows) - 1) // 2:, 2]
            v["ess"].append(effective_sample_size(half) if half.size >= 4 else math.nan)
            v["K"].append(rows[-1, 2])
            v["iters"].append(len(rows) - 1)
            v["spi"].append(rows[-1, 0] / max(len(rows) - 1, 1))
            v["budget"].append(budget)
            # Fig. 3: log pi of the chain's state at fractions of the budget.
            at = np.searchsorted(rows[:, 0], np.asarray(CURVE) * budget, side="right") - 1
            v["curve"].append(rows[np.maximum(at, 0), 1])
    return out


def table(out, prior, ms, fmt):
    print(f"   {'sampler':<13} {'best log pi':>17} {'truth':>9} {'hit':>4} {'paper max':>10} "
          f"{'ESS #clust':>15} {'paper':>6} {'final K':>8} {'iters':>7} {'s/iter':>8} {'paper':>7}")
    for m, v in out.items():
        p = PAPER[prior].get(m, (math.nan, math.nan, math.nan))
        if v["err"] is not None and not v["best"]:
            print(f"   {m:<13} {v['err']:<70} paper: {p[0]}, ESS {p[1]}")
            continue
        n_const = sum(1 for e in v["ess"] if not np.isfinite(e))
        ess = ms(v["ess"], ".1f") + (f" [{n_const}c]" if n_const else "")
        hit = f"{sum(v['hit'])}/{len(v['hit'])}"
        print(f"   {m:<13} {ms(v['best'], '.1f'):>17} {np.mean(v['truth']):>9.1f} {hit:>4} "
              f"{fmt(p[0]):>10} {ess:>15} {fmt(p[1], '.1f'):>6} {np.mean(v['K']):>8.1f} "
              f"{np.mean(v['iters']):>7.0f} {np.mean(v['spi']):>8.4f} {fmt(p[2], '.4f'):>7}")
    print("   Fig. 3 (top row): mean log pi of the current state at a fraction of the budget")
    print(f"   {'sampler':<13}" + "".join(f"{f'{int(100 * f)}%':>10}" for f in CURVE))
    for m, v in out.items():
        if v["curve"]:
            print(f"   {m:<13}" + "".join(f"{x:>10.1f}" for x in np.mean(v["curve"], axis=0)))
    sys.stdout.flush()


def section(cfg, seed, ms, fmt, short_error):
    print("=" * 100)
    print("2. Lee & Choi toy: 1,300 2-D points, 13 Gaussians, NIW base measure; DP(1) and "
          f"NGGP(alpha 1, sigma {NGGP_SIGMA}); start: 36 random labels (paper: 10 s x 10 data sets)")
    print("   best log pi = max over iterations (NGGP: joint with u); truth = log pi of the true "
          "partition; hit = runs reaching truth - 1;")
    print("   ESS of the number of clusters over the second half (one sample per iteration; "
          "[kc] = k runs constant); mean (sd) over data sets")
    sweeps = 10.0 / PAPER["dp"]["gibbs"][2]
    for prior in ("dp", "nggp"):
        print(f"   (a, {prior.upper()}) budget = the time of {sweeps:.0f} Gibbs sweeps here (the "
              f"paper's Gibbs in its 10 s), {cfg['reps_short']} data sets")
        out = runs(prior, SAMPLERS, lambda mix, init, rng: sweeps * gibbs_sweep_seconds(mix, init, rng),
                   cfg["reps_short"], seed, short_error)
        print(f"       budget {ms(out['gibbs']['budget'], '.2f')} s")
        table(out, prior, ms, fmt)
    print(f"   (c, DP) as (a), start: the greedy tree of all points cut into 36 subtrees "
          f"(every label tree-consistent), {cfg['reps_short']} data sets")
    table(runs("dp", PAPER_SAMPLERS,
               lambda mix, init, rng: sweeps * gibbs_sweep_seconds(mix, init, rng),
               cfg["reps_short"], seed, short_error, start="tree"), "dp", ms, fmt)
    print(f"   (b, DP) budget {cfg['budget']:g} s, {cfg['reps']} data sets")
    table(runs("dp", PAPER_SAMPLERS, lambda mix, init, rng: cfg["budget"], cfg["reps"], seed,
               short_error), "dp", ms, fmt)
    print("   (absolute log pi differ from the paper: its means/covariances are not published)")
    print()
