"""Run several samplers on your own images for the same time and plot −log π over seconds.

Usage:
    python apps/compare_on_my_images.py IMAGE [IMAGE ...] [-o compare.png]
        [--samplers swc,gibbs,split-merge] [--seconds 5 | --steps N] [--seed 0]
        [--atoms METHOD] [--model NAME] [--init uniform|random]

Every sampler segments every image with the same seed, hence the same atoms
and posterior, for --seconds of sampling each; the plot has one panel per
image with −log π (the energy: lower is more probable) of each sampler's
annealing run over seconds, and the legend gives each run's segment count.
A table of the final energies is printed. --steps gives every sampler the
same number of steps instead: a repeatable quick check, not a fair race
(a step of one sampler costs more than a step of another).

Energies are comparable only between runs on the same posterior: samplers
that run on pixels (multigrid, multilevel) use other atoms and another
default model than those on atoms; pass --atoms and --model to put every
sampler on the same ones (the script warns when they differ).
Built on the public API only: swcuts.load_image, swcuts.segment, swcuts.SAMPLERS.
"""

import argparse
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import swcuts  # noqa: E402


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("images", nargs="+", type=Path, help="image files (PNG, JPEG, TIFF or .npy)")
    ap.add_argument("-o", "--output", type=Path, default=Path("compare.png"), help="the plot (PNG)")
    ap.add_argument("--samplers", default="swc,gibbs,split-merge",
                    help=f"comma-separated, any of {', '.join(swcuts.SAMPLERS)}")
    budget = ap.add_mutually_exclusive_group()
    budget.add_argument("--seconds", type=float, default=5.0, help="seconds of sampling per run (default 5)")
    budget.add_argument("--steps", type=int, help="steps per run instead of --seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--atoms", help="atoms of every sampler (default: each sampler's own)")
    ap.add_argument("--model", help="posterior of every sampler (default: each sampler's own)")
    ap.add_argument("--init", choices=("uniform", "random"), help="start (default: one label)")
    args = ap.parse_args()

    samplers = list(dict.fromkeys(s.strip() for s in args.samplers.split(",") if s.strip()))
    unknown = [s for s in samplers if s not in swcuts.SAMPLERS]
    if not samplers or unknown:
        ap.error(f"unknown sampler '{unknown[0] if unknown else args.samplers}'; "
                 f"choose from {', '.join(swcuts.SAMPLERS)}")
    if args.steps is not None:
        budget = dict(steps=args.steps)
        if args.steps < 1:
            ap.error(f"--steps must be at least 1, got {args.steps}")
    else:
        budget = dict(time_budget=args.seconds)
        if not 0 < args.seconds < math.inf:
            ap.error(f"--seconds must be a positive number, got {args.seconds}")
    if args.output.suffix.lower() != ".png" or not args.output.parent.is_dir():
        ap.error(f"-o must be a .png file in an existing folder, got '{args.output}'")
    try:  # read every image before the first run: a bad file stops nothing half-way
        images = {path: swcuts.load_image(path) for path in args.images}
    except swcuts.InputError as exc:
        ap.error(str(exc))

    results = {}  # path -> [(sampler, Segmentation)]
    for path, image in images.items():
        for name in samplers:
            try:
                seg = swcuts.segment(image, sampler=name, seed=args.seed, atoms=args.atoms,
                                     model=args.model, init=args.init, **budget)
            except swcuts.InputError as exc:  # e.g. an option this sampler refuses
                ap.error(f"{path.name}, {name}: {exc}")
            results.setdefault(path, []).append((name, seg))
            print(f"{path.name}: {name} done ({seg.energy:,.1f}, {seg.n_labels} segments)", file=sys.stderr)

    ncols = min(len(results), 3)
    nrows = math.ceil(len(results) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.8 * nrows), squeeze=False)
    print(f"\n{'image':<24} {'sampler':<16} {'−log π':>14} {'above best':>10} {'segments':>8} {'steps':>10}")
    for ax, (path, runs) in zip(axes.flat, results.items()):
        best = min(seg.energy for _, seg in runs)
        for name, seg in runs:
            seconds = np.maximum(np.asarray(seg.trace.seconds), 1e-3)  # the start is at 0 s
            ax.plot(seconds, seg.trace.energy, lw=1.3, label=f"{name} ({seg.n_labels} segments)")
            gap = 100 * (seg.energy - best) / abs(best)
            print(f"{path.name:<24} {name:<16} {seg.energy:>14,.1f} {gap:>9.2f}% {seg.n_labels:>8} "
                  f"{seg.steps:>10,}")
        posteriors = {(seg.atom_method, seg.posterior, seg.graph.n_vertices) for _, seg in runs}
        if len(posteriors) > 1:
            print(f"warning: on {path.name} the samplers ran on different atoms or models "
                  f"({', '.join(f'{a}/{m}' for a, m, _ in sorted(posteriors))}): their energies are not "
                  "comparable; pass --atoms and --model", file=sys.stderr)
        ax.set_xscale("log")
        ax.set_title(path.name + ("\n(different atoms or models: energies not comparable)"
                                  if len(posteriors) > 1 else ""), fontsize=10)
        ax.set_xlabel("seconds")
        ax.set_ylabel("−log π")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(results):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    print(f"\nplot -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
