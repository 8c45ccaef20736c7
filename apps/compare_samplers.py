"""Plot −log π over seconds for several samplers on one image.

Usage: python apps/compare_samplers.py IMAGE [--seconds S] [-o plot.png]

Every sampler runs on the same atoms and posterior from the same random
start, with its own default start temperature (SW-cuts 10, Gibbs 100).
Built on the public API only.
"""

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import swcuts  # noqa: E402
from swcuts.io.image_read import load_image  # noqa: F401


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("image")
    ap.add_argument("--samplers", nargs="+", default=["swc", "swc1", "cluster-gibbs", "gibbs"])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", default="samplers.png")
    args = ap.parse_args()
    image = load_image(args.image)
    fig, ax = plt.subplots(figsize=(7, 4))
    for name in args.samplers:
        seg = swcuts.segment(image, sampler=name, seed=args.seed, init="random",
                             time_budget=args.seconds)
        t = np.maximum(np.asarray(seg.trace.seconds), 1e-4)
        ax.plot(t, seg.trace.energy, label=f"{name} ({seg.n_labels} segments)")
        print(f"{name:>14}: energy {seg.energy:,.0f}, {seg.steps:,} steps, {seg.n_labels} segments")
    ax.set_xscale("log")
    ax.set_xlabel("seconds")
    ax.set_ylabel("−log π")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    print(f"plot -> {args.output}")


if __name__ == "__main__":
    main()
