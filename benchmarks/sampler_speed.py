"""Moves per second of every mixture sampler, and how the cost of a move scales with n.

Usage::

    python benchmarks/sampler_speed.py [--quick] [--seconds S] [--samplers a,b,...]
        [--sizes 1000,10000[,100000]] [--datasets toy,tiles] [--no-baseline]

(``--sizes 1000,10000,100000 --datasets toy --samplers tree-guided`` is the
tree-guided scaling check of issue 19; its tiles at 100,000 take minutes
to set up: the start state's Gibbs sweeps visit 1,300 labels per item.)

The target: the cost of a move is linear in the size of the
labels it touches, not in the number of items n. Two data sets show it:

* **toy** -- :func:`swcuts.evaluation.synthetic.clusters.lee_choi_gaussians` (13 Gaussian
  clusters in 2-D) with n = 1,000 and n = 10,000, Normal-Inverse-Wishart
  likelihood (``preset="lee-choi"``), CRP alpha = 1. The 13 labels grow
  with n, so a split or merge touches about 10x more items at n = 10,000:
  the check is the cost per unit of work, ``us/eval`` (below), which must
  stay flat (ratio 10k / 1k within 2x).
* **tiles** -- the same cluster sizes at both n: n / 1,000 copies of the
  1,000-point toy (each drawn with its own seed) on a square grid 40 apart,
  so that n = 10,000 has 130 clusters of about 77 items, like n = 1,000's
  13. NIW with fixed hyperparameters for both n (Psi0 of the single-tile
  Lee-Choi preset, nu0 = 8, mu0 = data mean, kappa0 = 1e-3 so that the
  distance of a tile to mu0 hardly matters). The check is the time per
  move itself (ratio 10k / 1k within 2x). Moves that visit every label
  (a Gibbs update, the merge probabilities of a tree-guided global move)
  cost O(L) by their definition and grow with the number of labels
  (13 -> 130), not with n; moves that visit every item (reconfiguration
  and sRM without a graph, the paper's algorithm) grow with n.

Start state: the true partition with 2 % of the items moved to a random
other true cluster, then three compiled Gibbs sweeps (3n single-site
updates), which put nearly all of the displaced items back (close to the
posterior mode); the same for every sampler, each from a fresh copy.

A *move* is one call of the kernel's ``step(state, rng, T=1)``: one
single-site update for ``gibbs``; one Metropolis-Hastings split or merge for
``split-merge`` (t = 5 restricted scans), ``random-split`` and ``triadic``
(beta = 0.5, the kernel's default); one reconfiguration move for
``reconfiguration`` (S = 2 chains, history from two untimed iterations,
then ``move`` without the Gibbs sweep that ``step`` adds; anchors
"disagree", the paper's rule and the default without a graph, and "pair",
``reconf-pair``) and ``srm``
(``gibbs_sweeps=0``), both also with ``outside="knn"`` (``reconf-knn``,
``srm-knn``: the graph variant on a 10-nearest-neighbour graph of the data,
O(k (|labels touched| + frontier)) per move instead of the paper's O(N)); for ``tree-guided`` one ``step`` (a global split/merge
or a local move, as the kernel chooses). After at least 0.3 s and 20 steps of warm-up
(compilation, member indices, trees) each sampler runs for a fixed wall
time (default 3 s; --quick 1 s); a step still running at the deadline is
finished and counted. Timings on a shared machine are noisy: repeat runs
and compare medians before reading much into a 20 % difference.

Columns:

* ``moves/s`` -- kernel steps per second;
* ``no-op`` -- fraction of steps that proposed nothing (triadic: anchors
  with c_i = c_j != c_k; reconfiguration: no past state joins and no past
  state separates the anchors);
* ``us/move`` -- CPU microseconds (``time.process_time``, so that other
  processes on a shared machine count less) per step that proposed
  something;
* ``acc`` -- fraction of steps accepted that moved at least one item;
* ``evals/move`` -- model evaluations per real step, from
  ``model.evaluations``: |R| per ``model.delta`` call and one per
  (item, candidate label) in the compiled paths; the work of the move
  (Gibbs: one per label; split and merge moves: a multiple of the sizes of
  the labels touched). The tree building and the merge probabilities of
  ``tree-guided``, and the moves themselves (parking, relabelling) of the
  reconfiguration moves, are not counted, so their ``us/eval`` is not a
  per-item cost (with the knn rows' few candidates the moves dominate);
* ``us/eval`` -- us/move / evals/move: the cost of a unit of work.

*Memory baseline.* When tree-guided rows are asked for with ``--samplers``
and ``gibbs`` is not among them, the ``gibbs`` row is measured too
(``--no-baseline`` leaves it out): a single-site Gibbs update does the same
work at every n (one item, every label) but reads its item's row of
n-sized arrays at random, so its ratio n = hi / n = lo is what the caches
alone add to a move of constant work. The scaling table then prints each
tree-guided ratio beside it (``vs baseline``: the ratio over gibbs's).

The scaling table ends with a verdict per sampler: on the toy, the cost
must not grow faster than the work (the smaller of the us/move and the
us/eval ratios within 2x); on the tiles, the time per move must stay within
2x, per label for the moves that visit every label by definition (O(L):
a Gibbs update, the merge set of a tree-guided global move); "O(N)" marks
the paper's reconfiguration moves, whose outside phase visits every item
(T(z|z*) multiplies the probability that each outside item stays), and
which the knn rows avoid.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import traceback

import numpy as np

import swcuts
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.mixture.likelihoods import NormalInverseWishart
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
from swcuts.samplers import KERNELS
from swcuts.samplers.common import seed_compiled_rng

#: Rows of the tables: (row name, kernel name, keyword arguments).
SAMPLERS = (
    ("gibbs", "gibbs", {}),
    ("split-merge", "split-merge", {}),
    ("random-split", "random-split", {}),
    ("triadic", "triadic", {}),
    ("reconfiguration", "reconfiguration", {}),
    ("reconf-pair", "reconfiguration", {"anchors": "pair"}),
    ("reconf-knn", "reconfiguration", {"outside": "knn"}),
    ("srm", "srm", {}),
    ("srm-knn", "srm", {"outside": "knn"}),
    ("tree-guided", "tree-guided", {}),
    ("tree-guided-balanced", "tree-guided", {"tree_build": "balanced"}),
    ("tree-guided-matching", "tree-guided", {"tree_build": "matching"}),
)
TARGET_RATIO = 2.0
#: The row whose move does the same work at every n (module docstring,
#: "Memory baseline").
BASELINE = "gibbs"
#: Warm-up steps before timing (with at least 0.3 s): one-off set-up such as
#: tree-guided's global tree and its lookup tables happens at the first
#: steps that need it (a local move, a global move), not in the timed window.
WARMUP_STEPS = 20
#: Samplers whose move visits every label (cost O(L) by definition) or
#: every item (O(N): the paper's outside phase of reconfiguration moves).
COST_OF = {"gibbs": "L", "tree-guided": "L", "tree-guided-balanced": "L",
           "tree-guided-matching": "L", "reconfiguration": "N", "reconf-pair": "N",
           "srm": "N"}


def toy(n):
    """Lee & Choi's toy with n items (13 clusters)."""
    data, truth = lee_choi_gaussians(n, seed=0)
    return MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi"), truth


def tiles(n, spacing=40.0):
    """n // 1000 copies of the 1,000-point toy on a grid (clusters of ~77)."""
    k = n // 1000
    side = math.ceil(math.sqrt(k))
    parts, truth = [], []
    for t in range(k):
        x, lab = lee_choi_gaussians(1000, seed=t)
        parts.append(x + spacing * np.array([t % side, t // side]))
        truth.append(lab + 13 * t)
    data = np.concatenate(parts)
    psi0 = NormalInverseWishart(preset="lee-choi").bind(lee_choi_gaussians(1000, seed=0)[0]).Psi0
    model = MixtureModel(data, "gaussian", alpha=1.0, kappa0=1e-3, nu0=8.0, Psi0=psi0)
    return model, np.concatenate(truth)


DATASETS = {"toy": toy, "tiles": tiles}


def start_labels(model, truth, rng, frac=0.02):
    """Truth with ``frac`` of the items moved to another true cluster, then
    three compiled Gibbs sweeps."""
    k = int(truth.max()) + 1
    labels = truth.copy()
    m = rng.random(labels.size) < frac
    labels[m] = (labels[m] + rng.integers(1, k, size=int(m.sum()))) % k
    state = model.new_state(labels)
    for _ in range(3):
        model.gibbs_sweep(state, rng)
    return state.partition.compact_labels()


def make_stepper(kernel, kwargs, model, init, rng):
    """A step function(state, rng, T) -> StepInfo.

    ``reconfiguration`` and ``srm`` are built without their Gibbs sweeps so
    that one step is one move: ARM gets a pooled history from two chains
    started at the start state and run for two iterations (move + Gibbs
    sweep, untimed); the timed moves then draw from that history
    (``Reconfiguration.move``), which does not change while timing.
    """
    cls = KERNELS[kernel]
    if kernel == "reconfiguration":
        k = cls(model, n_chains=2, gibbs_sweeps=1, **kwargs)
        chains = [model.new_state(init), model.new_state(init)]
        k.init_chains(chains)
        for _ in range(2):
            k.step_all(chains, rng, 1.0)
        return lambda st, r, t: k.move(st, 0, r, t)
    if kernel == "srm":
        return cls(model, gibbs_sweeps=0, **kwargs).step
    return cls(model, **kwargs).step


def run(kernel, kwargs, model, init, seconds, seed):
    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    step = make_stepper(kernel, kwargs, model, init, rng)
    state = model.new_state(init)
    t0 = time.perf_counter()
    for i in range(1, 10 ** 9):  # warm-up: compilation, caches; 0.3 s and WARMUP_STEPS
        step(state, rng, 1.0)
        if i >= WARMUP_STEPS and time.perf_counter() - t0 >= 0.3:
            break
    state = model.new_state(init)
    moves = acc = noop = 0
    ev0 = model.evaluations
    t_real = 0.0
    t0 = now = time.perf_counter()
    cpu = time.process_time()
    deadline = t0 + seconds
    while True:
        info = step(state, rng, 1.0)
        after = time.perf_counter()
        cpu_after = time.process_time()
        moves += 1
        if info.accepted and info.moved:
            acc += 1
        if getattr(info, "move", "") in ("none", "noop"):
            noop += 1
        else:
            t_real += cpu_after - cpu  # CPU time: the machine is shared
        now, cpu = after, cpu_after
        if now >= deadline:
            break
    real = moves - noop
    evals = (model.evaluations - ev0) / real if real else math.nan
    us_move = 1e6 * t_real / real if real else math.nan
    return dict(rate=moves / (now - t0), noop=noop / moves, us_move=us_move, acc=acc / moves,
                evals=evals, us_eval=us_move / evals if evals else math.nan,
                K=state.partition.n_labels)


def measure(dataset, n, seconds, rows):
    model, truth = DATASETS[dataset](n)
    init = start_labels(model, truth, np.random.default_rng(1))
    out = {"_K0": int(init.max()) + 1}
    for row, kernel, kwargs in rows:
        try:
            out[row] = run(kernel, kwargs, model, init, seconds, seed=2)
        except Exception as exc:  # report and go on with the other samplers
            msg = str(exc).splitlines()[0] if str(exc) else ""
            out[row] = f"error: {type(exc).__name__}: {msg}"[:80]
            traceback.print_exc(limit=4, file=sys.stderr)
        sys.stdout.flush()
    return out


def fmt(x, spec):
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def print_table(title, res, rows):
    print(f"\n{title} (start: {res['_K0']} labels)")
    print(f"{'sampler':<17} {'moves/s':>10} {'no-op':>6} {'us/move':>10} {'acc':>6} "
          f"{'evals/move':>11} {'us/eval':>8} {'K end':>6}")
    for row, _, _ in rows:
        r = res[row]
        if isinstance(r, str):
            print(f"{row:<17} {r}")
            continue
        print(f"{row:<17} {r['rate']:>10.1f} {r['noop']:>6.3f} {fmt(r['us_move'], '.1f'):>10} "
              f"{r['acc']:>6.3f} {fmt(r['evals'], '.1f'):>11} {fmt(r['us_eval'], '.3f'):>8} "
              f"{r['K']:>6d}")


def ratio(a, b, key):
    if isinstance(a, str) or isinstance(b, str):
        return math.nan
    return b[key] / a[key] if a[key] and not math.isnan(a[key]) else math.nan


def verdict(x):
    return "" if math.isnan(x) else ("ok" if x <= TARGET_RATIO else "GROWS")


def toy_ratio(a, b):
    """Cost growth on the toy, beyond the growth of the work: the smaller
    of the ratios of us/move and us/eval (a move whose work does not grow
    with the labels, Gibbs or a local move, must keep its us/move; a split
    or merge its us/eval)."""
    return min(ratio(a, b, "us_move"), ratio(a, b, "us_eval"))


def print_scaling(res, datasets, lo, hi, rows):
    """Ratios n = hi / n = lo of the costs, with a verdict per sampler."""
    print(f"\nScaling, ratios n = {hi:,} / n = {lo:,} (target: cost independent of n, "
          f"ratio <= {TARGET_RATIO:g})")
    print("toy: verdict on min(us/move, us/eval ratio); tiles: on the us/move ratio, per label "
          "for the O(L) moves; O(N) = reconfiguration's outside phase (every item, the paper's)")
    for dataset in datasets:
        print(f"{dataset:<17} {'us/move ' + format(lo, ',') :>12} {format(hi, ','):>9} {'ratio':>6} "
              f"{'evals ratio':>11} {'us/eval ratio':>13} {'per L':>6} {'':>8}")
        for row, _, _ in rows:
            a, b = res[dataset, lo][row], res[dataset, hi][row]
            if isinstance(a, str) or isinstance(b, str):
                print(f"{row:<17} " + (a if isinstance(a, str) else b))
                continue
            r_move = ratio(a, b, "us_move")
            if dataset == "toy":
                r_label = math.nan
                v = verdict(toy_ratio(a, b))
            else:
                r_label = r_move * res[dataset, lo]["_K0"] / res[dataset, hi]["_K0"]
                cost = COST_OF.get(row, "")
                v = ("O(N)" if cost == "N" else verdict(r_label) + " O(L)" if cost == "L"
                     else verdict(r_move))
            print(f"{row:<17} {fmt(a['us_move'], '.1f'):>12} {fmt(b['us_move'], '.1f'):>9} "
                  f"{fmt(r_move, '.2f'):>6} {fmt(ratio(a, b, 'evals'), '.2f'):>11} "
                  f"{fmt(ratio(a, b, 'us_eval'), '.2f'):>13} {fmt(r_label, '.2f'):>6} {v:>8}")
        print_baseline(res, dataset, lo, hi, rows)


def print_baseline(res, dataset, lo, hi, rows):
    """Each tree-guided row's us/move ratio beside the memory baseline's
    (gibbs: the same work per move at every n, module docstring)."""
    names = [row for row, _, _ in rows]
    if BASELINE not in names:
        return
    base = res[dataset, lo][BASELINE], res[dataset, hi][BASELINE]
    if isinstance(base[0], str) or isinstance(base[1], str):
        return
    r_base = ratio(base[0], base[1], "us_move")
    for row in names:
        a, b = res[dataset, lo][row], res[dataset, hi][row]
        if not row.startswith("tree-guided") or isinstance(a, str) or isinstance(b, str):
            continue
        r = ratio(a, b, "us_move")
        print(f"  {row}: us/move ratio {fmt(r, '.2f')}, memory baseline ({BASELINE}) "
              f"{fmt(r_base, '.2f')}, vs baseline {fmt(r / r_base, '.2f')} (target: "
              f"independent of n, ratio <= {TARGET_RATIO:g})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 s per measurement")
    ap.add_argument("--seconds", type=float, default=None, help="wall time per measurement")
    ap.add_argument("--samplers", default=None, help="comma-separated row names")
    ap.add_argument("--sizes", default="1000,10000",
                    help="comma-separated n (multiples of 1000; e.g. 1000,10000,100000)")
    ap.add_argument("--datasets", default="toy,tiles", help="toy and/or tiles")
    ap.add_argument("--no-baseline", action="store_true",
                    help="do not add the gibbs row beside tree-guided rows")
    args = ap.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (1.0 if args.quick else 3.0)
    rows = SAMPLERS
    if args.samplers:
        want = args.samplers.split(",")
        if (not args.no_baseline and BASELINE not in want
                and any(w.startswith("tree-guided") for w in want)):
            want = [BASELINE] + want
        rows = tuple(r for r in SAMPLERS if r[0] in want)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    datasets = args.datasets.split(",")
    if sizes[0] < 1000 or any(n % 1000 for n in sizes) or len(sizes) < 2:
        ap.error("--sizes: at least two multiples of 1000, e.g. 1000,10000")
    if any(d not in DATASETS for d in datasets):
        ap.error(f"--datasets: choose from {', '.join(DATASETS)}")
    t_start = time.perf_counter()
    print(f"swcuts {swcuts.__version__}: mixture samplers, moves per second, "
          f"{seconds:g} s per measurement")
    res = {}
    for dataset in datasets:
        for n in sizes[::-1]:
            res[dataset, n] = measure(dataset, n, seconds, rows)
            what = "" if dataset == "toy" else f" ({n // 1000 * 13} clusters of ~77)"
            print_table(f"{dataset}, n = {n:,}{what}", res[dataset, n], rows)
    lo = sizes[0]
    for hi in sizes[1:]:
        print_scaling(res, datasets, lo, hi, rows)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
