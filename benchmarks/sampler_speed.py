"""Moves per second of every mixture sampler, and how the cost of a move scales with n.

Usage::

    python benchmarks/sampler_speed.py [--quick] [--seconds S]

Data: :func:`swcuts.models.mixture.lee_choi_gaussians` (13 Gaussian clusters
in 2-D) with n = 10,000 and n = 1,000 items, Normal-Inverse-Wishart
likelihood (``preset="lee-choi"``), CRP alpha = 1.

Start state: the true partition with 2 % of the items moved to a random other
true cluster, then three Gibbs sweeps (3n single-site updates), which put
nearly all of the displaced items back (about 13 labels, close to the posterior mode);
the same for every sampler, each starting from a fresh copy. (Without the
sweeps the displaced items act as outliers and random splits that separate
them are accepted, so the state drifts far from the mode.)

A *move* is one call of the kernel's ``step(state, rng, T=1)``: one
single-site update for ``gibbs``; one Metropolis-Hastings split or merge for
``split-merge`` (t = 5 restricted scans), ``random-split`` and ``triadic``
(beta = 0.5, the kernel's default); one reconfiguration move for
``reconfiguration`` (S = 2 chains, history from two untimed iterations,
then ``move`` without the Gibbs sweep that ``step`` adds) and ``srm``
(``gibbs_sweeps=0``); for ``tree-guided`` one ``step`` (a global split/merge
or a local move, as the kernel chooses). After at least 0.3 s of warm-up
(compilation, member indices) each sampler runs for a fixed wall time
(default 3 s; --quick 1 s); a step that is still running at the deadline
is finished and counted.

Columns:

* ``moves/s`` -- kernel steps per second;
* ``no-op`` -- fraction of steps that proposed nothing (triadic: anchors
  with c_i = c_j != c_k; reconfiguration: no past state joins and no past
  state separates the anchors);
* ``real/s`` -- steps that proposed something, per second spent in them
  (equal to moves/s when there are no no-ops); the scaling table uses it;
* ``acc`` -- fraction of steps accepted that moved at least one item;
* ``items/real`` -- mean number of items passed to ``model.delta`` per
  real (not no-op) step
  (counted in a separate instrumented run of the same length): the work
  the move does. For Gibbs about (number of labels) per step; for the split
  and merge moves a multiple of the sizes of the labels touched;
* ``us/item`` -- microseconds per item evaluated = 1e6 / (real/s x
  items/real): the cost of a unit of work. (Work that does not go through
  ``model.delta``, e.g. the tree building of ``tree-guided``, is not
  counted in items/real, so its us/item is not a per-item cost.)

Scaling check: the same at n = 1,000. With 13 clusters the labels grow with
n, so a split or merge move touches about 10x more items at n = 10,000 and
its moves/s fall about 10x; what must stay roughly flat is ``us/item``
(cost linear in the labels touched, not in n). For Gibbs the work per move
(one item, ~13 labels) does not depend on n, so its moves/s should be flat.
Without a graph, ``reconfiguration`` and ``srm`` visit every item outside
the two labels in each move (the paper's algorithm), so their items/real
grows like n by design.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import time
import traceback

import numpy as np

import swcuts
from swcuts.models.mixture import MixtureModel, lee_choi_gaussians
from swcuts.samplers import KERNELS, seed_compiled_rng

SAMPLERS = ("gibbs", "split-merge", "random-split", "triadic", "reconfiguration", "srm", "tree-guided")
_MODULES = {
    "triadic": "swcuts.samplers.triadic",
    "reconfiguration": "swcuts.samplers.reconfiguration",
    "tree-guided": "swcuts.samplers.tree_guided",
    "srm": "swcuts.samplers.reconfiguration",
}


def kernel_class(name):
    """(class, note) or (None, reason); falls back to an unregistered module."""
    cls = KERNELS.get(name)
    if cls is not None:
        return cls, ""
    modname = _MODULES.get(name)
    if modname is not None:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            mod = None
        if mod is not None:
            for obj in vars(mod).values():
                if isinstance(obj, type) and getattr(obj, "name", None) == name and hasattr(obj, "step"):
                    return obj, " *"
    return None, "n/a (not available)"


def start_labels(model, truth, rng, frac=0.02, k=13):
    labels = truth.copy()
    m = rng.random(labels.size) < frac
    labels[m] = (labels[m] + rng.integers(1, k, size=int(m.sum()))) % k
    state = model.new_state(labels)
    gibbs = KERNELS["gibbs"](model)
    for _ in range(3 * model.n_vertices):
        gibbs.step(state, rng, 1.0)
    return state.partition.compact_labels()


class _Counter:
    """Counts the items passed to model.delta (instance-level wrapper)."""

    def __init__(self, model):
        self.model = model
        self.items = 0
        self.calls = 0
        self._orig = model.delta

    def __enter__(self):
        orig = self._orig

        def delta(state, R, new_label):
            self.calls += 1
            self.items += int(np.size(R))
            return orig(state, R, new_label)

        self.model.delta = delta
        return self

    def __exit__(self, *exc):
        del self.model.delta


def make_stepper(name, cls, model, init, rng):
    """(step function(state, rng, T) -> StepInfo, description).

    ``reconfiguration`` and ``srm`` are built without their Gibbs sweeps so
    that one step is one move: ARM gets a pooled history from two chains
    started at the start state and run for two iterations (move + Gibbs
    sweep, untimed); the timed moves then draw from that history
    (``Reconfiguration.move``), which does not change while timing.
    """
    if name == "reconfiguration":
        kernel = cls(model, n_chains=2, gibbs_sweeps=1)
        chains = [model.new_state(init), model.new_state(init)]
        kernel.init_chains(chains)
        for _ in range(2):
            kernel.step_all(chains, rng, 1.0)
        return (lambda st, r, t: kernel.move(st, 0, r, t)), kernel
    if name == "srm":
        kernel = cls(model, gibbs_sweeps=0)
        return kernel.step, kernel
    kernel = cls(model)
    return kernel.step, kernel


def run(name, cls, model, init, seconds, seed, count=False):
    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    step, _ = make_stepper(name, cls, model, init, rng)
    state = model.new_state(init)
    # Warm-up (compilation, caches), not timed: at least one step, 0.3 s.
    t0 = time.perf_counter()
    while True:
        step(state, rng, 1.0)
        if time.perf_counter() - t0 >= 0.3:
            break
    state = model.new_state(init)
    moves = acc = noop = 0
    ctx = _Counter(model) if count else None
    if ctx is not None:
        ctx.__enter__()
    try:
        t0 = time.perf_counter()
        deadline = t0 + seconds
        t_real = 0.0
        now = t0
        while True:
            info = step(state, rng, 1.0)
            after = time.perf_counter()
            moves += 1
            if info.accepted and info.moved:
                acc += 1
            if getattr(info, "move", "") in ("none", "noop"):
                noop += 1
            else:
                t_real += after - now
            now = after
            if now >= deadline:
                break
        elapsed = now - t0
    finally:
        if ctx is not None:
            ctx.__exit__()
    real = moves - noop
    return dict(moves=moves, seconds=elapsed, rate=moves / elapsed, acc=acc / moves,
                noop=noop / moves, real=real, real_rate=(real / t_real if t_real > 0 else math.nan),
                items=(ctx.items / real if ctx is not None and real else math.nan),
                K=state.partition.n_labels)


def measure(n, seconds, names):
    data, truth = lee_choi_gaussians(n, seed=0)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    init = start_labels(model, truth, np.random.default_rng(1))
    out = {"_K0": int(init.max()) + 1}
    for name in names:
        cls, note = kernel_class(name)
        if cls is None:
            out[name] = note
            continue
        try:
            r = run(name, cls, model, init, seconds, seed=2)
            rc = run(name, cls, model, init, seconds, seed=2, count=True)
            r["items"] = rc["items"]
            r["us_item"] = (1e6 / (r["real_rate"] * r["items"]) if r["items"] and r["items"] > 0
                            else math.nan)
            r["note"] = note
            out[name] = r
        except Exception as exc:
            msg = str(exc).splitlines()[0] if str(exc) else ""
            out[name] = f"error: {type(exc).__name__}: {msg}"[:80]
            traceback.print_exc(limit=4, file=sys.stderr)
        sys.stdout.flush()
    return out


def fmt(x, spec):
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 s per measurement")
    ap.add_argument("--seconds", type=float, default=None, help="wall time per measurement")
    args = ap.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (1.0 if args.quick else 3.0)
    t_start = time.perf_counter()
    print(f"swcuts {swcuts.__version__}: moves per second on lee_choi_gaussians(n), NIW likelihood, "
          f"start = truth with 2% noise + 3 Gibbs sweeps, {seconds:g} s per measurement")
    res = {}
    for n in (10_000, 1_000):
        res[n] = measure(n, seconds, SAMPLERS)
    hdr = (f"{'sampler':<18} {'moves/s':>10} {'no-op':>6} {'real/s':>10} {'acc':>6} {'items/real':>11} "
           f"{'us/item':>8} {'K end':>6}")
    print()
    print(f"n = 10,000 (start: {res[10_000]['_K0']} labels; n = 1,000: {res[1_000]['_K0']})")
    print(hdr)
    for name in SAMPLERS:
        r = res[10_000][name]
        if isinstance(r, str):
            print(f"{name:<18} {r}")
            continue
        print(f"{name + r['note']:<18} {r['rate']:>10.1f} {r['noop']:>6.3f} {fmt(r['real_rate'], '.1f'):>10} "
              f"{r['acc']:>6.3f} {fmt(r['items'], '.1f'):>11} "
              f"{fmt(r['us_item'], '.2f'):>8} {r['K']:>6d}")
    print()
    print("Scaling, n = 1,000 vs n = 10,000 (ratios 10k / 1k)")
    print(f"{'sampler':<18} {'real/s 1k':>11} {'real/s 10k':>12} {'ratio':>7} {'items/mv 1k':>12} "
          f"{'items/mv 10k':>13} {'us/item 1k':>11} {'us/item 10k':>12} {'ratio':>7}")
    for name in SAMPLERS:
        a, b = res[1_000][name], res[10_000][name]
        if isinstance(a, str) or isinstance(b, str):
            print(f"{name:<18} {a if isinstance(a, str) else b}")
            continue
        ui = b["us_item"] / a["us_item"] if a["us_item"] and not math.isnan(a["us_item"]) else math.nan
        print(f"{name + b['note']:<18} {a['real_rate']:>11.1f} {b['real_rate']:>12.1f} "
              f"{b['real_rate'] / a['real_rate']:>7.2f} "
              f"{fmt(a['items'], '.1f'):>12} {fmt(b['items'], '.1f'):>13} {fmt(a['us_item'], '.2f'):>11} "
              f"{fmt(b['us_item'], '.2f'):>12} {fmt(ui, '.2f'):>7}")
    if any(isinstance(r, dict) and r["note"] for r in res[10_000].values()):
        print("* kernel class found in its module but not registered in swcuts.samplers.KERNELS")
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
