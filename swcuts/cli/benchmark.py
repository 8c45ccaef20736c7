"""``swcuts benchmark DATA -o OUTDIR`` and ``swcuts report OUTDIR``.

Part of the command line (:mod:`swcuts.cli.app`); options are parsed here and
checked by :func:`swcuts.benchmark` before any image is read.

Failed runs are said on stderr: how many, and each distinct reason once
with the number of runs it stopped (:mod:`swcuts.evaluation.benchmarking.failures`).
Exit code 0 when some run succeeded (failures or not), 1 when no run of a
sampler or peer did, 2 on bad options or a data set that cannot be opened.
"""

from __future__ import annotations

import argparse
import sys

from swcuts.evaluation.benchmarking.runs import DEFAULT_PEERS, DEFAULT_SAMPLERS

__all__ = ["add_parsers", "cmd_benchmark", "cmd_report"]


def _names(text):
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names and text.strip() not in ("", "none"):
        raise argparse.ArgumentTypeError("expected names separated by commas")
    return [] if text.strip() == "none" else names


def _seeds(text):
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got '{text}'") from None


def add_parsers(sub, *, int_type, float_type, dir_type) -> None:
    """Add the ``benchmark`` and ``report`` sub-commands to ``sub``."""
    b = sub.add_parser("benchmark", help="run samplers and classical segmenters on a data set and score them")
    b.add_argument("data", help="data set folder: BSDS500 (images/, groundTruth/), BSDS300, or images with "
                                "NAME_gt*.png / .npy ground truths")
    b.add_argument("-o", "--output", required=True, type=dir_type, help="output folder (results.csv, traces.csv, report.html, ...)")
    b.add_argument("--samplers", type=_names, default=list(DEFAULT_SAMPLERS), metavar="A,B,...",
                   help=f"swcuts samplers (default {','.join(DEFAULT_SAMPLERS)}; 'none' for none)")
    b.add_argument("--peers", type=_names, default=list(DEFAULT_PEERS), metavar="A,B,...",
                   help=f"classical segmenters (default {','.join(DEFAULT_PEERS)}; 'none' for none)")
    b.add_argument("--seeds", type=_seeds, default=[0], metavar="0,1,...", help="seeds of every method (default 0)")
    b.add_argument("--time-budget", type=float_type, default=None, metavar="SECONDS",
                   help="wall seconds per sampler run, its atoms and posterior included (as "
                        "swcuts.segment(time_budget=...); default: each sampler's default budget)")
    b.add_argument("--steps", type=int_type, default=None, metavar="N",
                   help="steps per sampler run, instead of --time-budget (repeatable rows)")
    b.add_argument("--split", default=None, help="the data set's split (train, val, test; default all)")
    b.add_argument("--limit", type=int_type, default=None, metavar="N", help="only the first N images")
    b.add_argument("--grid", nargs="+", default=None, metavar="NAME=V1,V2",
                   help="sweep swcuts options: every sampler runs with every combination, e.g. "
                        "--grid a2=1,2,4 edge_scale=0.5,1")
    b.add_argument("--tune-peers", default=None, metavar="TRAIN_DATA",
                   help="choose each peer's main parameter by the best mean covering on this data set first")
    b.add_argument("--tune-split", default=None, help="the split of --tune-peers' data set")
    b.add_argument("--workers", type=int_type, default=None, metavar="N",
                   help="local worker processes (default: one per available core; 1: in this process)")
    b.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run on a Dask cluster (e.g. tcp://host:8786) instead of local processes")
    b.add_argument("--resume", action="store_true", help="continue the benchmark in OUTDIR, skipping finished runs")
    b.add_argument("--no-annotators", action="store_true",
                   help="leave out the annotators' rows (their −log π and leave-one-out scores)")
    b.add_argument("--no-progress", action="store_true", help="never show a progress bar")

    r = sub.add_parser("report", help="rebuild report.html of a benchmark's output folder")
    r.add_argument("outdir", help="output folder of 'swcuts benchmark'; report.html is written here")
    r.add_argument("more", nargs="*", metavar="OTHER",
                   help="more output folders whose runs are merged in (a run found again replaces the earlier)")


def cmd_benchmark(args) -> int:
    import warnings

    from swcuts.evaluation.benchmarking.failures import (
        RunsFailed, RunsFailedWarning, failure_reasons, reason_lines)
    from swcuts.evaluation.results import method_table

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunsFailedWarning)  # said below, a reason a line
            rows = _run(args)
    except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM (cli.Terminated)
        what = "terminated" if type(exc).__name__ == "Terminated" else "interrupted"
        print(f"swcuts: {what}; the finished runs are in {args.output}: continue with --resume",
              file=sys.stderr)
        return 143 if what == "terminated" else 130
    except RunsFailed as exc:
        what = "all" if exc.n_failed == exc.n_runs else f"{exc.n_failed} of"
        _say([f"swcuts: error: no run succeeded ({what} {exc.n_runs} runs failed; their rows are in "
              f"{args.output}):", *reason_lines(exc.reasons)])
        return 1
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    _print_table(method_table(rows))
    reasons = failure_reasons(rows)
    failed = sum(count for _, count in reasons)
    print(f"{len(rows)} runs ({failed} failed) -> {args.output}/report.html")
    if reasons:
        _say([f"swcuts: warning: {failed} of {len(rows)} runs failed:", *reason_lines(reasons)])
    return 0


def _say(lines) -> None:
    """Lines on stderr, each prefixed like the command's other messages."""
    for line in lines:
        print(line if line.startswith("swcuts: ") else f"swcuts: {line}", file=sys.stderr)


def _run(args):
    from swcuts.evaluation.benchmarking.driver import benchmark

    return benchmark(args.data, output=args.output, samplers=args.samplers, peers=args.peers,
                     seeds=args.seeds, steps=args.steps, time_budget=args.time_budget, split=args.split,
                     limit=args.limit, grid=args.grid, tune_peers_on=args.tune_peers,
                     tune_split=args.tune_split, annotators=not args.no_annotators, workers=args.workers,
                     scheduler=args.scheduler, resume=args.resume, progress=not args.no_progress)


def _print_table(table) -> None:
    cols = ("pri", "voi", "covering", "bf", "n_segments", "seconds")
    print(f"{'method':>24} " + " ".join(f"{c:>10}" for c in cols))
    for entry in table:
        vals = []
        for c in cols:
            v = entry.get(c, {})
            v = v.get("mean") if isinstance(v, dict) else v
            vals.append(f"{v:>10.3f}" if isinstance(v, (int, float)) and v == v else f"{'-':>10}")
        print(f"{entry['method']:>24} " + " ".join(vals))


def cmd_report(args) -> int:
    from swcuts.evaluation.report import build_report

    path = build_report(args.outdir, *args.more)
    print(f"report -> {path}")
    return 0
