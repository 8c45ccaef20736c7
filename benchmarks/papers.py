"""The seed papers' experiments, rerun with swcuts, printed beside the papers' numbers.

Usage::

    python benchmarks/papers.py [--quick] [--only 1,2,3,4] [--seed S]

Four tables (``--quick`` about 5 minutes, the full run about 25 minutes on a
machine shared with six other jobs; ``--out FILE`` also writes the output
to FILE, e.g. ``docs/papers_output.txt``). Every mixture table has an
SW-cut row (no paper has one): SWC-2 on a 10-nearest-neighbour graph of
the data with distance- or KL-based edge probabilities, the same
posterior (:mod:`papers_swc`); in table 1 an SW-cut iteration is 10
SWC-2 steps + one Gibbs sweep, in table 3 a kernel step is one SWC-2
step.

1. **Herlau et al. (seed 001) Table 2** -- Jain & Neal's Bernoulli data
   (:func:`~swcuts.evaluation.synthetic.clusters.jain_neal_bernoulli`: n = 100, five
   planted clusters of 20, d = 6, 8, 10 = their Examples 1-3), Beta-Bernoulli
   likelihood a = b = 1, CRP alpha = 1.

   * *The trace statistic* is, as in the paper (section 3.1, Fig. 4 and the
     caption of Table 2), "the first element of the trace plot": the
     fraction of the items in the largest cluster.
     (:func:`swcuts.inference.diagnostics.largest_label_fraction`). Not the number of
     clusters and not the log-likelihood.
   * *The indicator statistic*: 3 items drawn at random from each of the 5
     planted clusters (15 items, 105 pairs); per chain the autocorrelation
     time of each co-assignment indicator [z_i = z_j]
     (:func:`swcuts.inference.diagnostics.coassignment`), then the *maximum* over the
     pairs (pairs that never change are skipped), averaged over chains and
     data sets -- the paper's "average of the maximum".
   * *Autocorrelation time* ``1 + 2 sum rho`` by
     :func:`swcuts.inference.diagnostics.integrated_autocorrelation_time` (Geyer's
     initial monotone sequence; the paper truncates "where the
     autocorrelation is close to zero", after Neal 1993).
   * *Iterations.* Gibbs: one sweep (n single-site updates of the library's
     :class:`~swcuts.samplers.Gibbs` kernel, random scan). SM: one
     restricted-Gibbs split-merge update (t = 5 intermediate scans, the
     paper's L = 5) followed by one Gibbs sweep. ARM: one reconfiguration
     move followed by one Gibbs sweep, with S chains sharing their history,
     and the paper's own rule for φ (``anchors="disagree"``: two distinct
     past states first, then (i, j) uniform over the pairs on which they
     disagree; never a no-op once the history holds two different states).
     ARM-pair (no paper numbers) is the same with the state-independent
     uniform pair first and (z^a, z^b) drawn among the past states that
     join / separate it, a no-op when there are none -- most of the time
     once the chains agree; shown for comparison.
     All chains start from the same state: all items in one cluster, then 50
     Gibbs sweeps (the paper's initialisation, used for every method).
   * *Standardisation* (paper section 3.4): like the paper, autocorrelation
     times are per iteration and the cost is reported as *normalised
     iterations* = T x (total time) / (time spent in Gibbs sweeps), i.e. the
     run length in Gibbs-sweep equivalents (Gibbs = T by definition; the
     paper's SM and ARM came out at about 3.4 T). The column ``tau*cost``
     is the trace autocorrelation time in Gibbs-sweep units, tau x
     (normalised iterations / T): the cost-equalised comparison.
   * Paper: 20 data sets x S = 8 chains x T = 2000 iterations. Here (CPU
     budget): full 2 data sets x S = 4 x T = 800; --quick 1 x 2 x 200.
     Expect the paper's ordering Gibbs > SM > ARM, with large spread.

2. **Lee & Choi (seed 004) section 4.1** -- the toy data under the DP and
   the NGGP, every mixture sampler and an SW-cut row, from 36 random
   labels and (DP) from a tree-consistent start; see
   :mod:`papers_lee_choi` for the set-up.

3. **van Rossum et al. (seed 000) Table 1** -- line extraction data
   (:func:`~swcuts.evaluation.synthetic.clusters.rossum_lines`: 5 lines x 20 points, the
   sizes are guesses), the ``lines`` likelihood, alpha = 1. Dyadic =
   restricted-Gibbs split-merge (the paper's dyadic sampler used SAMS
   allocation), triadic with beta = 0.1 (the paper's setting), and the
   random-split dyadic baseline. Every run: the same number of kernel steps
   (no Gibbs sweeps in between) from one cluster; purity, Rand index and
   adjusted Rand index of the final state against the true lines, averaged
   over data sets (full 10, --quick 4).

4. **Images** -- -log pi over time for every sampler of ``swcuts.SAMPLERS``
   with ``swcuts.segment`` on the same image (sample_images/coffee.png),
   same atoms (SLIC, default count), same posterior, same seed,
   ``init="random"``, each sampler with its default annealing schedule and
   a time budget (full 5 s, --quick 1 s). The energy printed at time t is
   that of the chain's state at the last trace row at or before t.

A sampler that is not (yet) in ``swcuts.samplers.KERNELS`` but whose module
defines it is used from the module and marked "*"; one that does not exist
is printed as "n/a (not available)"; an error inside a sampler is printed in its row and
the script continues.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import time
import traceback

import numpy as np

import swcuts
from swcuts.inference.diagnostics import integrated_autocorrelation_time
from swcuts.evaluation.metrics.regions import adjusted_rand_index, rand_index
from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import jain_neal_bernoulli, rossum_lines
from swcuts.samplers import KERNELS

import papers_lee_choi
from papers_lee_choi import gibbs_sweep
from papers_swc import attach_knn_graph, swc_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Kernel classes that may live in a module before they are registered in
# KERNELS. Used only as a fallback, and reported as such.
_MODULES = {
    "triadic": "swcuts.samplers.triadic",
    "reconfiguration": "swcuts.samplers.reconfiguration",
    "tree-guided": "swcuts.samplers.tree_guided",
}


def kernel_class(name):
    """(class, note) for a sampler name, or (None, reason)."""
    cls = KERNELS.get(name)
    if cls is not None:
        return cls, ""
    modname = _MODULES.get(name)
    if modname is None:
        return None, "n/a (not available)"
    try:
        mod = importlib.import_module(modname)
    except ImportError:
        return None, "n/a (not available)"
    for obj in vars(mod).values():
        if isinstance(obj, type) and getattr(obj, "name", None) == name and hasattr(obj, "step"):
            return obj, "*"
    return None, "n/a (not available)"


def fmt(x, spec=".1f"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    return format(x, spec)


def mean_sd(values):
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def ms(values, spec=".1f"):
    m, s = mean_sd(values)
    if math.isnan(m):
        return "nan"
    return f"{format(m, spec)} ({format(s, spec)})"


def short_error(exc):
    msg = str(exc).splitlines()[0] if str(exc) else ""
    return f"error: {type(exc).__name__}: {msg}"[:90]


# ---------------------------------------------------------------------------
# Clustering metrics
# ---------------------------------------------------------------------------


def contingency(a, b):
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1), dtype=np.int64)
    np.add.at(table, (ai, bi), 1)
    return table


def purity(pred, truth):
    """(1/n) sum over predicted clusters of their largest overlap with a true cluster."""
    t = contingency(pred, truth)
    return float(t.max(axis=1).sum() / t.sum())


# ---------------------------------------------------------------------------
# Multi-chain runner for section 1 (Gibbs, SM, ARM)
# ---------------------------------------------------------------------------


class ChainMethod:
    """One iteration of a method on S chains, with the time split into the
    Gibbs sweeps and the rest (for the paper's normalised iterations)."""

    def __init__(self, name, model, n_chains, rng):
        self.name = name
        self.model = model
        self.n = model.n_vertices
        self.gibbs = KERNELS["gibbs"](model)
        self.t_gibbs = 0.0
        self.t_total = 0.0
        self.kernel = None
        self.arm = False
        self.note = ""
        if name == "gibbs":
            return
        if name == "split-merge":
            self.kernel = KERNELS["split-merge"](model, t=5, M=1, R=1)
            return
        if name == "swc":  # model: a MixtureModel with a k-NN graph (papers_swc)
            self.kernel = KERNELS["swc2"](model, model.swc_q, compiled=False)
            self.steps = HERLAU_SWC_STEPS
            return
        anchors = "pair" if name == "reconfiguration-pair" else "disagree"
        cls, note = kernel_class("reconfiguration")
        if cls is None:
            raise LookupError(note)
        self.note = note
        # Reconfiguration: S chains sharing one pooled history; one
        # iteration of every chain = a move, then one Gibbs sweep
        # (``step_all``). Its Gibbs sweeps are timed through a wrapper.
        self.kernel = cls(model, n_chains=n_chains, gibbs_sweeps=1, anchors=anchors)
        self.arm = True
        inner = self.kernel.gibbs_sweep

        def timed_sweep(state, rng, temperature=1.0):
            a = time.perf_counter()
            inner(state, rng, temperature)
            self.t_gibbs += time.perf_counter() - a

        self.kernel.gibbs_sweep = timed_sweep

    def setup(self, states, rng):
        if self.arm:
            self.kernel.init_chains(states)

    def iterate(self, states, rng):
        t0 = time.perf_counter()
        if self.arm:
            self.kernel.step_all(states, rng, 1.0)
        else:
            tg = 0.0
            for st in states:
                for _ in range(getattr(self, "steps", 1) if self.kernel is not None else 0):
                    self.kernel.step(st, rng, 1.0)
                a = time.perf_counter()
                gibbs_sweep(self.gibbs, st, rng, self.n)
                tg += time.perf_counter() - a
            self.t_gibbs += tg
        self.t_total += time.perf_counter() - t0


HERLAU_PAPER = {  # Table 2: (trace tau, indicator tau, normalised iterations)
    6: {"gibbs": (116.5, 91.6, 2000), "split-merge": (27.8, 23.2, 6741), "reconfiguration": (14.9, 13.6, 6712)},
    8: {"gibbs": (165.4, 131.3, 2000), "split-merge": (27.9, 26.4, 6855), "reconfiguration": (8.5, 9.2, 6731)},
    10: {"gibbs": (88.9, 99.3, 2000), "split-merge": (19.3, 30.4, 7503), "reconfiguration": (10.8, 14.7, 6705)},
}
HERLAU_LABEL = {"gibbs": "Gibbs", "split-merge": "SM", "reconfiguration": "ARM",
                "reconfiguration-pair": "ARM-pair", "swc": "SW-cut"}
HERLAU_METHODS = ("gibbs", "split-merge", "reconfiguration", "reconfiguration-pair", "swc")
#: SWC-2 steps per iteration of the SW-cut row (then one Gibbs sweep).
HERLAU_SWC_STEPS = 10


def section_herlau(cfg, seed):
    print("=" * 100)
    print("1. Herlau et al. Table 2: Jain & Neal Bernoulli data, n = 100 (5 x 20); "
          f"{cfg['n_data']} data set(s) x S = {cfg['chains']} chains x T = {cfg['T']} iterations "
          f"(paper: 20 x 8 x 2000)")
    print("   trace = fraction of items in the largest cluster; indicator = max over 105 pairs "
          "of 15 items (3 per planted cluster)")
    print("   tau per iteration (mean (sd) over chains); norm. iters = T x total time / Gibbs-sweep "
          "time; tau*cost = trace tau x norm. iters / T;")
    print("   acc = acceptance rate of the split/merge (SM) or reconfiguration (ARM) proposals")
    hdr = (f"   {'d':>3} {'method':<8} {'tau trace':>13} {'paper':>7} {'tau indic.':>14} {'paper':>7} "
           f"{'norm. iters':>12} {'paper':>6} {'tau*cost':>9} {'mean K':>7} {'acc':>6} {'sec':>6}")
    print(hdr)
    n = 100
    for d in cfg["dims"]:
        res = {m: {"tt": [], "ti": [], "norm": [], "K": [], "sec": 0.0, "err": None, "prop": 0, "acc": 0}
               for m in cfg.get("methods", HERLAU_METHODS)}
        for r in range(cfg["n_data"]):
            data_seed = seed * 1000 + d * 10 + r
            data, truth = jain_neal_bernoulli(n, d, seed=data_seed)
            mix = MixtureModel(data, "beta-bernoulli", alpha=1.0)
            # The SW-cut row: the same posterior, its own model with a k-NN graph.
            mix_swc = MixtureModel(data, "beta-bernoulli", alpha=1.0)
            mix_swc.swc_q = attach_knn_graph(mix_swc, data, "binary")
            rng = np.random.default_rng(data_seed + 7)
            items = np.concatenate([rng.choice(np.flatnonzero(truth == k), 3, replace=False)
                                    for k in range(5)])
            pairs = np.array([(a, b) for x, a in enumerate(items) for b in items[x + 1:]])
            # Shared start: one cluster, then 50 Gibbs sweeps, per chain.
            gk = KERNELS["gibbs"](mix)
            starts = []
            for s in range(cfg["chains"]):
                st = mix.new_state(np.zeros(n, dtype=np.int64))
                for _ in range(cfg["init_sweeps"]):
                    gibbs_sweep(gk, st, rng, n)
                starts.append(st.partition.labels.copy())
            for m in res:
                if res[m]["err"] is not None:
                    continue
                mrng = np.random.default_rng(data_seed * 31 + list(res).index(m))
                mm = mix_swc if m == "swc" else mix
                try:
                    # Untimed warm-up on throwaway copies (compilation).
                    wrng = np.random.default_rng(0)
                    warm = ChainMethod(m, mm, cfg["chains"], wrng)
                    wstates = [mm.new_state(lab) for lab in starts]
                    warm.setup(wstates, wrng)
                    warm.iterate(wstates, wrng)
                    meth = ChainMethod(m, mm, cfg["chains"], mrng)
                    states = [mm.new_state(lab) for lab in starts]
                    meth.setup(states, mrng)
                    T = cfg["T"]
                    big = np.empty((cfg["chains"], T))
                    ind = np.empty((cfg["chains"], T, len(pairs)), dtype=np.uint8)
                    K = np.empty((cfg["chains"], T))
                    t0 = time.perf_counter()
                    for it in range(T):
                        meth.iterate(states, mrng)
                        for s, st in enumerate(states):
                            lab = st.partition.labels
                            big[s, it] = st.partition.size.max() / n
                            ind[s, it] = lab[pairs[:, 0]] == lab[pairs[:, 1]]
                            K[s, it] = st.partition.n_labels
                    res[m]["sec"] += time.perf_counter() - t0
                except LookupError as exc:
                    res[m]["err"] = str(exc)
                    continue
                except Exception as exc:  # a sampler bug: report it, go on
                    res[m]["err"] = short_error(exc)
                    traceback.print_exc(limit=3, file=sys.stderr)
                    continue
                for s in range(cfg["chains"]):
                    res[m]["tt"].append(integrated_autocorrelation_time(big[s]))
                    taus = [integrated_autocorrelation_time(ind[s, :, p].astype(float))
                            for p in range(len(pairs)) if ind[s, :, p].min() != ind[s, :, p].max()]
                    res[m]["ti"].append(max(taus) if taus else math.nan)
                    res[m]["K"].append(K[s].mean())
                res[m]["norm"].append(T * meth.t_total / max(meth.t_gibbs, 1e-12))
                counts = getattr(meth.kernel, "counts", {})
                for kind in ("split", "merge"):
                    if kind in counts:
                        res[m]["prop"] += counts[kind][0]
                        res[m]["acc"] += counts[kind][1]
        for m, v in res.items():
            paper = HERLAU_PAPER[d].get(m, (math.nan, math.nan, 0))
            label = HERLAU_LABEL[m]
            if v["err"] is not None and not v["tt"]:
                print(f"   {d:>3} {label:<7} {v['err']:<60} {'':>9} paper: trace {paper[0]}, "
                      f"indicator {paper[1]}")
                continue
            norm = float(np.mean(v["norm"]))
            acc = f"{v['acc'] / v['prop']:.3f}" if v["prop"] else "-"
            tt = mean_sd(v["tt"])[0]
            print(f"   {d:>3} {label:<8} {ms(v['tt']):>13} {fmt(paper[0]):>7} {ms(v['ti']):>14} "
                  f"{fmt(paper[1]):>7} {norm:>12.0f} {paper[2] or '-':>6} {fmt(tt * norm / cfg['T']):>9} "
                  f"{np.mean(v['K']):>7.2f} {acc:>6} {v['sec']:>6.1f}")
        sys.stdout.flush()
    print()


# ---------------------------------------------------------------------------
# Section 3: van Rossum et al. line extraction
# ---------------------------------------------------------------------------

ROSSUM_PAPER = {"split-merge": (0.80960, 0.80580, 0.56382), "triadic": (0.86405, 0.87188, 0.71067),
                "random-split": None, "swc": None}


def section_rossum(cfg, seed):
    print("=" * 100)
    print(f"3. van Rossum et al. line extraction: 5 lines x 20 points; {cfg['steps']} kernel steps per "
          f"run from one cluster, {cfg['n_data']} data sets; final state vs true lines")
    print(f"   {'sampler':<28} {'purity':>14} {'Rand':>14} {'ARI':>14} {'K (true 5)':>11} {'s/run':>6}   "
          f"paper purity / RI / ARI")
    specs = [("split-merge", "dyadic (split-merge)", {"t": 5}),
             ("triadic", "triadic (beta = 0.1)", {"beta": 0.1}),
             ("random-split", "dyadic random-split", {}),
             ("swc", "SW-cut (SWC-2, 10-NN graph)", {})]
    for name, label, kw in specs:
        if name == "swc":
            cls, note = (lambda mix, _d: swc_kernel(mix, _d, "real")), ""
        else:
            cls, note = (KERNELS[name], "") if name in KERNELS else kernel_class(name)
        paper = ROSSUM_PAPER[name]
        ptxt = " / ".join(f"{x:.3f}" for x in paper) if paper else "-"
        if cls is None:
            print(f"   {label:<28} {note:<60} {ptxt}")
            continue
        pur, ri, ari, K, secs = [], [], [], [], []
        err = None
        for r in range(cfg["n_data"]):
            data_seed = seed * 1000 + 700 + r
            data, truth = rossum_lines(seed=data_seed)
            mix = MixtureModel(data, "lines", alpha=1.0)
            rng = np.random.default_rng(data_seed + 3)
            try:
                k = cls(mix, data) if name == "swc" else cls(mix, **kw)
                st = mix.new_state(np.zeros(mix.n_vertices, dtype=np.int64))
                t0 = time.perf_counter()
                for _ in range(cfg["steps"]):
                    k.step(st, rng, 1.0)
                secs.append(time.perf_counter() - t0)
            except Exception as exc:
                err = short_error(exc)
                traceback.print_exc(limit=3, file=sys.stderr)
                break
            lab = st.partition.compact_labels()
            pur.append(purity(lab, truth))
            ri.append(rand_index(lab, truth))
            ari.append(adjusted_rand_index(lab, truth))
            K.append(lab.max() + 1)
        if err is not None:
            print(f"   {label:<28} {err:<60} {ptxt}")
            continue
        print(f"   {label + note:<28} {ms(pur, '.3f'):>14} {ms(ri, '.3f'):>14} {ms(ari, '.3f'):>14} "
              f"{np.mean(K):>11.1f} {np.mean(secs):>6.2f}   {ptxt}")
    print("   (paper: dyadic and triadic both with SAMS allocation, unknown data sizes; "
          "its ARI 0.564 vs 0.711)")
    print()


# ---------------------------------------------------------------------------
# Section 4: images
# ---------------------------------------------------------------------------


def energy_at(trace, t):
    s = np.asarray(trace.seconds)
    e = np.asarray(trace.energy)
    i = np.searchsorted(s, t, side="right") - 1
    return float(e[max(i, 0)])


def section_images(cfg, seed):
    import skimage.io

    print("=" * 100)
    path = os.path.join(ROOT, "sample_images", "coffee.png")
    img = skimage.io.imread(path)
    budget = cfg["image_budget"]
    times = [t for t in (0.1, 0.5, 1.0, 2.0, 5.0) if t <= budget + 1e-9]
    print(f"4. Images: -log pi over seconds, sample_images/coffee.png {img.shape[1]}x{img.shape[0]}, "
          f"SLIC atoms (default count), seed {seed}, init='random', {budget:g} s per sampler")
    names = list(swcuts.SAMPLERS)
    for extra in ("triadic", "reconfiguration", "tree-guided"):
        if extra not in names:
            names.append(extra)
    # Warm up compiled code so that compilation is not timed.
    for name in names:
        if name in swcuts.SAMPLERS:
            try:
                swcuts.segment(img, sampler=name, seed=seed, steps=50, init="random")
            except Exception:
                pass
    cols = "".join(f"{f'E@{t:g}s':>12}" for t in [0.0] + times)
    print(f"   {'sampler':<16}{cols}{'best E':>12}{'steps':>10}{'steps/s':>10}{'K':>5}{'vs swc2':>10}")
    results = {}
    for name in names:
        if name not in swcuts.SAMPLERS:
            results[name] = "n/a (not available)"
            continue
        try:
            results[name] = swcuts.segment(img, sampler=name, seed=seed, time_budget=budget, init="random")
        except Exception as exc:
            results[name] = short_error(exc)
            traceback.print_exc(limit=3, file=sys.stderr)
    ref = results.get("swc2")
    ref_e = ref.energy if not isinstance(ref, str) and ref is not None else math.nan
    order = ["swc2"] + [n for n in names if n != "swc2"]
    for name in order:
        r = results.get(name)
        if isinstance(r, str):
            print(f"   {name:<16}{r}")
            continue
        vals = "".join(f"{energy_at(r.trace, t):>12.1f}" for t in [0.0] + times)
        flag = "!" if min(r.trace.energy) < r.energy - 1e-6 * abs(r.energy) else " "
        print(f"   {name:<16}{vals}{r.energy:>11.1f}{flag}{r.steps:>10d}{r.steps / r.seconds:>10.0f}"
              f"{r.n_labels:>5d}{r.energy - ref_e:>+10.1f}")
    print("   (E = -log pi of the current state at the last trace row before t; best E = "
          "Segmentation.energy; vs swc2 = best E minus SWC-2's;")
    print("    ! = the trace went lower than best E: the driver's best-state tracking missed "
          "states reached by the kernel)")
    print()


# ---------------------------------------------------------------------------


FULL = dict(dims=(6, 8, 10), n_data=2, chains=4, T=800, init_sweeps=50,
            budget=10.0, reps=2, reps_short=3, steps=2000, image_budget=5.0)
QUICK = dict(dims=(6, 8, 10), n_data=1, chains=2, T=200, init_sweeps=50,
             budget=3.0, reps=1, reps_short=1, steps=1000, image_budget=1.0)


class _Tee:
    """Write to the terminal and to a file."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for st in self.streams:
            st.write(text)

    def flush(self):
        for st in self.streams:
            st.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small budgets (under ~3 minutes)")
    ap.add_argument("--only", default="1,2,3,4", help="comma-separated sections to run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--herlau", default=None, metavar="D:DATA:CHAINS:T[:METHODS]",
                    help="section 1 with other dims/budget, e.g. 8:8:2:2000:gibbs,split-merge "
                    "(docs/papers.md, the d = 8 check)")
    ap.add_argument("--out", default=None, help="also write the output to this file "
                    "(e.g. docs/papers_output.txt)")
    args = ap.parse_args(argv)
    if args.out:
        sys.stdout = _Tee(sys.stdout, open(args.out, "w"))
    cfg = QUICK if args.quick else FULL
    if args.quick:
        cfg = dict(cfg, n_data_lines=4)
    cfg_lines = dict(cfg, n_data=cfg.get("n_data_lines", 10))
    cfg_herlau = dict(cfg)
    if args.herlau:
        f = args.herlau.split(":")
        cfg_herlau.update(dims=tuple(int(x) for x in f[0].split(",")), n_data=int(f[1]),
                          chains=int(f[2]), T=int(f[3]))
        if len(f) > 4:
            cfg_herlau["methods"] = tuple(f[4].split(","))
    only = {s.strip() for s in args.only.split(",")}
    avail = sorted(set(KERNELS) | {n for n in _MODULES if kernel_class(n)[0] is not None})
    print(f"swcuts {swcuts.__version__}; samplers: {', '.join(avail)}; "
          f"{'--quick' if args.quick else 'full'} run")
    t0 = time.perf_counter()

    def section_lee_choi(c, seed):
        papers_lee_choi.section(c, seed, ms, fmt, short_error)

    sections = [("1", section_herlau, cfg_herlau), ("2", section_lee_choi, cfg),
                ("3", section_rossum, cfg_lines), ("4", section_images, cfg)]
    for key, fn, c in sections:
        if key in only:
            ts = time.perf_counter()
            fn(c, args.seed)
            print(f"   [section {key}: {time.perf_counter() - ts:.0f} s]")
            sys.stdout.flush()
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
