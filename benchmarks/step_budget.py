"""How many steps does the default segmentation of a BSDS photo need?

The default ``segment()`` anneals ``steps_per_atom`` x atoms steps of the
``swc`` kernel (about 120,000 on ~1,000 atoms, 1.6 s of a 2 s run). This
runs it with that budget times each ``--mult`` (the same geometric schedule
from t0 to t_final, compressed), alone or with the convergence stop of
:func:`swcuts.inference.anneal.anneal` (``1+0.05/0.5``: patience 0.05 of the
budget, at temperatures below 0.5), on every photo of a
data set, and prints per setting the mean scores against the annotators
(PRI, VoI, covering, boundary F), the mean −log π above that of the full
budget (units of energy; negative: lower), the steps and the sampling seconds.

Tune on ``bsds500-val``, report held out on ``bsds500-train-rest``.

Run: ``python benchmarks/step_budget.py --data bsds500-val --mult 1,1+0.05/0.5,0.5,0.33``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from pool import run_all  # noqa: E402  (benchmarks/pool.py)
DATA = Path("/work/shared/data")


def _task(args):
    from swcuts.evaluation.metrics.scores import benchmark_scores
    from swcuts.segmentation.segment import segment

    import swcuts.segmentation.segment as segment_module
    from swcuts.inference.anneal import Converged

    name, image, truths, mult, seed = args
    factor, _, stop = mult.partition("+")
    segment_module.DEFAULT_BUDGET = (float(factor), None if not stop else Converged(*map(float, stop.split("/"))),
                                     segment_module.DEFAULT_BUDGET[2])
    seg = segment(image, seed=seed)
    s = benchmark_scores(seg.labels, truths)
    return dict(name=name, mult=mult, energy=float(seg.energy), steps=int(seg.steps),
                sampling=float(seg.phase_seconds.get("sampling", 0.0)),
                **{k: s[k] for k in ("pri", "voi", "covering", "bf", "n_segments")})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="bsds500-val")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--mult", default="1,0.5,0.33,0.25",
                    help="budgets as multiples of the default steps, each with +PATIENCE/BELOW for a "
                         "convergence stop (e.g. 1+0.05/0.5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from swcuts.evaluation.datasets import load

    samples = sorted(load(DATA / args.data), key=lambda s: int(s.name) if s.name.isdigit() else s.name)
    if args.limit:
        samples = samples[:args.limit]
    mults = args.mult.split(",")
    tasks = [(s.name, s.image, s.truths, m, args.seed) for s in samples for m in mults]
    print(f"{len(samples)} photos, {len(tasks)} runs, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    rows = run_all(_task, tasks, args.workers)
    ref = {r["name"]: r["energy"] for r in rows if r["mult"] == mults[0]}
    print(f"{args.data}: {len(samples)} photos, seed {args.seed}, load {os.getloadavg()[0]:.2f}; means")
    print(f"{'budget':<10} {'PRI':>6} {'VoI':>6} {'cover':>6} {'bf':>6} {'segs':>6} {'ΔE vs ' + mults[0]:>10} "
          f"{'steps':>8} {'sampling s':>10}")
    for m in mults:
        g = [r for r in rows if r["mult"] == m]
        mean = lambda k: float(np.mean([r[k] for r in g]))  # noqa: E731
        de = float(np.mean([r["energy"] - ref[r["name"]] for r in g]))
        print(f"{m:<10} {mean('pri'):6.3f} {mean('voi'):6.3f} {mean('covering'):6.3f} {mean('bf'):6.3f} "
              f"{mean('n_segments'):6.1f} {de:10.1f} {mean('steps'):8.0f} {mean('sampling'):10.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
