"""Targets of the benchmark driver: ``swcuts benchmark`` on the 30 development BSDS500 images.

Usage: python benchmarks/bsds.py [--budgets 1,5,30] [--workers 2] [--out benchmarks/out/bsds]
                                 [--limit N] [--skip-throughput]

1. The 30 images are split by their sorted ids into a tuning half (even
   positions) and a held-out half (odd positions). The peers' main
   parameters are tuned on the tuning half only (best mean covering).
2. swc, multigrid and gibbs run on all 30 images for each time budget
   (one run each per budget; seed 0), the peers once, and every result is
   scored against every annotator. The table is printed for both halves.
3. Equal time: which sampler reaches the lowest −log π at each budget,
   and how many times faster SW cuts reach Gibbs's final energy.
4. Throughput: images per minute with 2 workers against 1 (target 1.8x).

Outputs (results, traces, report.html per budget) stay in ``--out`` and
are resumed if the script is run again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import time
from pathlib import Path

import numpy as np

import swcuts
from swcuts.evaluation.benchmarking.driver import tune_peers

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bsds500-train"
#: The 100 BSDS500 validation photos, a larger tuning set (optional; not in
#: the shared data as delivered: copy ``BSDS500/data/images/val`` and
#: ``BSDS500/data/groundTruth/val`` of GitHub ``BIDS/BSDS500`` to
#: ``images/`` and ``groundTruth/`` here). Never the test split: that is
#: what swcuts is scored on.
VAL = ROOT.parent / "shared" / "data" / "bsds500-val"
#: The other 170 BSDS500 training photos (not among the 30 of ``DATA``), a
#: larger held-out set (optional, likewise: the ``train`` images and
#: ground truth of ``BIDS/BSDS500`` whose ids are not in ``DATA``).
REST = ROOT.parent / "shared" / "data" / "bsds500-train-rest"
SAMPLERS = ("swc", "multigrid", "gibbs")
PEERS = ("felzenszwalb", "slic-ncut", "opencv-graphseg")


def split_halves(data: Path, out: Path) -> tuple:
    """Folders ``tune/`` and ``heldout/`` of symlinks (flat BSDS500 layout).

    Made in place, link by link, so that several benchmark processes may
    start at once on the same ``out``: a link already there is kept when it
    points at the right file, and entries that do not belong are removed.
    """
    ids = sorted((p.stem for p in (data / "images").glob("*.jpg")), key=int)
    halves = {"tune": ids[0::2], "heldout": ids[1::2]}
    for half, names in halves.items():
        for sub, ext in (("images", ".jpg"), ("groundTruth", ".mat")):
            folder = out / half / sub
            folder.mkdir(parents=True, exist_ok=True)
            wanted = {f"{name}{ext}": (data / sub / f"{name}{ext}").resolve() for name in names}
            for entry in folder.iterdir():
                if entry.name not in wanted or not entry.is_symlink() or entry.resolve() != wanted[entry.name]:
                    _remove(entry)
            for link, target in wanted.items():
                try:
                    os.symlink(target, folder / link)
                except FileExistsError:  # already there: kept above, or made by another process
                    pass
    return halves


def _remove(path: Path) -> None:
    """Remove a file, link or folder; one already gone is fine."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def print_table(rows, title):
    from swcuts.evaluation.results import method_table

    table = method_table(rows)
    print(f"\n{title}")
    cols = ("pri", "voi", "covering", "bf", "n_segments", "seconds", "energy_gap")
    print(f"| method | {' | '.join(cols)} | humans lower |")
    print("|---" * (len(cols) + 2) + "|")
    for e in table:
        cells = []
        for c in cols:
            v = e.get(c)
            v = v.get("mean") if isinstance(v, dict) else v
            cells.append("-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}")
        hl = e.get("humans_lower")
        cells.append("-" if hl is None or (isinstance(hl, float) and math.isnan(hl)) else f"{hl:.2f}")
        print(f"| {e['method']} | " + " | ".join(cells) + " |")


def throughput(data: Path, out: Path, limit: int) -> None:
    rates = {}
    for workers in (1, 2):
        folder = out / f"throughput_w{workers}"
        if folder.exists():
            shutil.rmtree(folder)
        start = time.perf_counter()
        swcuts.benchmark(data, output=folder, samplers=["swc"], peers=list(PEERS), limit=limit,
                         workers=workers, report=False)
        minutes = (time.perf_counter() - start) / 60
        rates[workers] = limit / minutes
        print(f"  {workers} worker(s): {limit} images in {minutes * 60:.1f} s -> {rates[workers]:.1f} images/min")
    ratio = rates[2] / rates[1]
    print(f"  2 workers / 1 worker: {ratio:.2f}x (target >= 1.8x: {'MET' if ratio >= 1.8 else 'NOT MET'})")


def gibbs_from_random(out: Path, budget=10.0, limit=10) -> None:
    """From one label Gibbs (T0 = 100) never leaves the start on these
    photos, so its final energy is its first; from random labels it moves.
    swc and gibbs from random labels, ``budget`` seconds, on ``limit``
    tuning images: how many times faster SW cuts reach Gibbs's final energy."""
    from swcuts.evaluation.results import load_results, time_to_reach

    folder = out / "gibbs_random"
    swcuts.benchmark(out / "tune", output=folder, samplers=["swc", "gibbs"], peers=[], grid=["init=random"],
                     time_budget=budget, limit=limit, annotators=False, resume=True, report=False)
    rows, traces, _ = load_results(folder)
    res = time_to_reach(rows, traces, reference="gibbs[init=random]")["swc[init=random]"]
    print(f"\nFrom random labels ({limit} tuning images, {budget:g} s each): SW cuts reach Gibbs's final "
          f"energy {res['median_speedup']:.0f}x faster (median; {res['median_seconds']:.2f} s against "
          f"{res['reference_median_seconds']:.2f} s; reached on {res['reached']}/{res['runs']})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", default="1,5,30")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "bsds"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--throughput-images", type=int, default=20)
    ap.add_argument("--throughput-only", action="store_true")
    ap.add_argument("--run-only", action="store_true", help="run (or resume) the benchmarks, print nothing")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    budgets = [float(b) for b in args.budgets.split(",")]
    if args.throughput_only:
        throughput(DATA, out, args.throughput_images)
        return
    halves = split_halves(DATA, out)

    tuned_file = out / "peers_tuned.json"
    if tuned_file.exists():
        tuned = json.loads(tuned_file.read_text())
    else:
        tuned = tune_peers(out / "tune", PEERS, workers=args.workers, progress=True)
        tuned_file.write_text(json.dumps(tuned, indent=2))
    print("peers tuned on the tuning half (best mean covering):",
          ", ".join(f"{p} {t['param']}={t['value']:g} ({t['tuned_covering']:.3f})" for p, t in tuned.items()))

    for budget in budgets:
        peers = PEERS if budget == max(budgets) else ()
        swcuts.benchmark(DATA, output=out / f"time{budget:g}", samplers=list(SAMPLERS), peers=list(peers),
                         peer_tuning=tuned, time_budget=budget, seeds=[0], limit=args.limit,
                         workers=args.workers, resume=True, progress=True,
                         annotators=budget == max(budgets), report=False)
    if args.run_only:
        return
    from swcuts.evaluation.report import build_report
    from swcuts.evaluation.results import energy_at_times, load_results, time_to_reach

    finals = {}
    for budget in budgets:
        folder = out / f"time{budget:g}"
        build_report(folder)
        rows, traces, _ = load_results(folder)
        finals[budget] = rows
        if budget == max(budgets):
            for half, names in halves.items():
                print_table([r for r in rows if r["image"] in set(names)],
                            f"{half} half ({len(names)} images), {budget:g} s per sampler run")
            print(f"\nreport: {folder / 'report.html'}")
            longest = (rows, traces)

    print("\nEqual time: median gap of −log π to the image's best sampler result at that budget")
    for budget, rows in finals.items():
        ok = [r for r in rows if r["kind"] == "sampler" and r["status"] == "ok"]
        best = {}
        for r in ok:
            best[r["image"]] = min(best.get(r["image"], math.inf), r["energy"])
        gaps = {s: [100 * (r["energy"] - best[r["image"]]) / abs(best[r["image"]])
                    for r in ok if r["method"] == s] for s in SAMPLERS}
        wins = {s: sum(1 for r in ok if r["method"] == s and r["energy"] == best[r["image"]]) for s in SAMPLERS}
        med = {s: float(np.median(g)) if g else math.nan for s, g in gaps.items()}
        winner = min(med, key=lambda s: med[s])
        print(f"  {budget:>4g} s: " + ", ".join(f"{s} {med[s]:.2f} % (lowest on {wins[s]})" for s in SAMPLERS)
              + f" -> lowest: {winner}")

    rows, traces = longest
    print(f"\nWithin the {max(budgets):g} s runs (best −log π reached by t, median gap to the image's best):")
    print(json.dumps(energy_at_times(rows, traces, budgets), indent=1, default=str)[:3000])
    print("\nTime to reach Gibbs's final energy:")
    print(json.dumps(time_to_reach(rows, traces, reference="gibbs"), indent=1, default=str)[:3000])
    gibbs_from_random(out)

    if not args.skip_throughput:
        print(f"\nThroughput (swc default budget + 3 peers, {args.throughput_images} images):")
        throughput(DATA, out, args.throughput_images)


if __name__ == "__main__":
    main()
