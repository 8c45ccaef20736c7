"""swc against tuned peers on scenes from the second synthetic generator.

Usage: python benchmarks/synthetic_scenes.py [--out benchmarks/out/scenes] [--n 12] [--workers 2]

1. Writes two data sets of :func:`swcuts.evaluation.synthetic.scenes.make_scene_set`
   scenes (240 x 320; every layout x family mix, grey and colour, every
   noise level and kind) in the plain-folder layout of
   :mod:`swcuts.evaluation.datasets`: ``NAME.png`` (8 bit) and ``NAME_gt.png`` (16-bit
   labels), ``tune/`` (seed 1) and ``test/`` (seed 2).
2. Tunes the peers' main parameter on ``tune/`` (best mean covering;
   cached in ``peers_tuned.json``).
3. Runs swc (default budget, seed 0) and the tuned peers on ``test/``,
   writes ``results/`` (with report.html; resumed if run again) and prints
   the table of PRI, VoI, covering, boundary F and segments per method,
   the target, and swc's and opencv-graphseg's PRI per layout, family mix
   and noise kind.

The generator's images were not used to tune swcuts' defaults, unlike
:mod:`swcuts.evaluation.synthetic.images` (benchmarks/quality.py).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PEERS = ["opencv-graphseg", "felzenszwalb", "slic-ncut"]
COLS = ("pri", "voi", "covering", "bf", "n_segments", "seconds")
SEEDS = {"tune": 1, "test": 2}


def write_set(folder: Path, n: int, seed: int) -> list:
    """Write ``n`` scenes to ``folder`` (stale files of other names removed)."""
    import skimage.io

    from swcuts.evaluation.synthetic.scenes import make_scene_set

    folder.mkdir(parents=True, exist_ok=True)
    scenes = make_scene_set(n, seed=seed)
    keep = set()
    for name, image, labels, _ in scenes:
        img = np.round(image * 255).astype(np.uint8)
        skimage.io.imsave(folder / f"{name}.png", img, check_contrast=False)
        skimage.io.imsave(folder / f"{name}_gt.png", labels.astype(np.uint16), check_contrast=False)
        keep |= {f"{name}.png", f"{name}_gt.png"}
    for p in folder.glob("*.png"):
        if p.name not in keep:
            p.unlink()
    return scenes


def _mean(v):
    v = v.get("mean") if isinstance(v, dict) else v
    return math.nan if v is None else float(v)


def print_table(rows, title):
    from swcuts.evaluation.results import method_table

    table = method_table(rows)
    print(f"\n{title}")
    print(f"| method | {' | '.join(COLS)} |")
    print("|---" * (len(COLS) + 1) + "|")
    for e in table:
        cells = ["-" if math.isnan(_mean(e.get(c))) else f"{_mean(e.get(c)):.3f}" for c in COLS]
        if e["method"] == "human":  # one ground truth per scene: no leave-one-out scores, its K only
            e, cells = dict(e, method="ground truth"), ["-"] * 4 + [cells[4], "-"]
        print(f"| {e['method']} | " + " | ".join(cells) + " |")
    return {e["method"]: e for e in table}


def breakdown(rows, scenes, methods=("swc", "opencv-graphseg")):
    """Mean PRI of ``methods`` per layout, family mix, colour, noise level and kind."""
    meta = {name: m for name, _, _, m in scenes}
    ok = [r for r in rows if r["status"] == "ok" and r["image"] in meta and r["method"] in methods]
    print(f"\nMean PRI by scene option ({' / '.join(methods)}):")
    print("| option | value | images | " + " | ".join(methods) + " |")
    print("|---" * (3 + len(methods)) + "|")
    for key in ("layout", "family", "colour", "noise", "noise_kind"):
        for value in sorted({m[key] for m in meta.values()}, key=str):
            names = {n for n, m in meta.items() if m[key] == value}
            cells = []
            for method in methods:
                v = [r["pri"] for r in ok if r["method"] == method and r["image"] in names]
                cells.append(f"{np.mean(v):.3f}" if v else "-")
            print(f"| {key} | {value} | {len(names)} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "scenes"))
    ap.add_argument("--n", type=int, default=12, help="scenes per data set (default 12)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    import swcuts
    from swcuts.evaluation.benchmarking.driver import tune_peers
    from swcuts.evaluation.results import load_results

    out = Path(args.out)
    start = time.perf_counter()
    sets = {half: write_set(out / half, args.n, seed) for half, seed in SEEDS.items()}
    print(f"wrote {args.n} tune and {args.n} test scenes to {out}")

    tuned_file = out / "peers_tuned.json"
    tuned = json.loads(tuned_file.read_text()) if tuned_file.exists() else None
    if tuned is None or tuned.get(PEERS[0], {}).get("n_images") != args.n or set(tuned) != set(PEERS):
        t0 = time.perf_counter()
        tuned = tune_peers(out / "tune", PEERS, workers=args.workers, progress=True)
        tuned_file.write_text(json.dumps(tuned, indent=2))
        print(f"peer tuning: {time.perf_counter() - t0:.0f} s")
    print("peers tuned on tune/ (best mean covering): "
          + ", ".join(f"{p} {t['param']}={t['value']:g} ({t['tuned_covering']:.3f})" for p, t in tuned.items()))

    t0 = time.perf_counter()
    results = out / "results"
    swcuts.benchmark(out / "test", output=results, samplers=["swc"], peers=PEERS, peer_tuning=tuned,
                     workers=args.workers, report=True, resume=True, progress=True)
    print(f"benchmark on test/: {time.perf_counter() - t0:.0f} s")

    rows, _, _ = load_results(results)
    names = {name for name, *_ in sets["test"]}
    rows = [r for r in rows if r["image"] in names]
    table = print_table(rows, f"test set ({len(names)} scenes, seed {SEEDS['test']}), swc default budget, "
                              "peers tuned on the tune set")
    swc = _mean(table.get("swc", {}).get("pri"))
    ocv = _mean(table.get("opencv-graphseg", {}).get("pri"))
    met = swc >= 0.90 and swc > ocv
    print(f"\ntarget: swc PRI >= 0.90 and ahead of opencv-graphseg (tuned): swc {swc:.3f}, "
          f"opencv-graphseg {ocv:.3f} -> {'MET' if met else 'NOT MET'}")
    breakdown(rows, sets["test"])
    print(f"\nreport: {results / 'report.html'}; total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
