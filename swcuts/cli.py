"""The ``swcuts`` command line.

``swcuts segment IMAGE -o OUTDIR`` writes labels.png (16-bit), labels.npy,
overlay.png, atoms.png, trace.csv, energy.png and summary.json. Bad input
exits with code 2 and one line on stderr; every file is written to a
temporary name and renamed, so no half-written output is ever left.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

import numpy as np

from . import __version__
from .api import DEFAULTS, SAMPLERS, segment
from .atoms import ATOM_METHODS
from .imageio import InputError, atomic_write, load_image, save_label_png, save_npy, save_rgb_png

__all__ = ["main"]


class UsageError(Exception):
    """A user error to report in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump
        raise UsageError(message)


def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'") from None
    if not (np.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="swcuts", description="Image segmentation by Swendsen-Wang cuts.")
    p.add_argument("--version", action="version", version=f"swcuts {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = sub.add_parser("segment", help="segment an image")
    s.add_argument("image", help="image file (PNG, JPEG, TIFF or .npy)")
    s.add_argument("-o", "--output", required=True, help="output directory (created if missing)")
    s.add_argument("--sampler", default="swc", choices=SAMPLERS, metavar="NAME",
                   help=f"one of {', '.join(SAMPLERS)} (default swc)")
    s.add_argument("--atoms", default="slic", choices=ATOM_METHODS, metavar="METHOD",
                   help=f"one of {', '.join(ATOM_METHODS)} (default slic)")
    s.add_argument("--n-atoms", type=_positive_int, default=DEFAULTS["n_atoms"])
    s.add_argument("--seed", type=int, default=None)
    budget = s.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=_positive_int, default=None)
    budget.add_argument("--time-budget", type=_positive_float, default=None, metavar="SECONDS")
    s.add_argument("--t0", type=_positive_float, default=None, help="start temperature")
    s.add_argument("--t-final", type=_positive_float, default=DEFAULTS["t_final"])
    s.add_argument("--init", choices=("uniform", "random"), default="uniform")
    s.add_argument("--edge-scale", type=_positive_float, default=DEFAULTS["edge_scale"])
    s.add_argument("--a0", type=float, default=DEFAULTS["a0"], help="prior weight per label")
    s.add_argument("--a1", type=float, default=DEFAULTS["a1"], help="prior weight per region")
    s.add_argument("--a2", type=float, default=DEFAULTS["a2"], help="prior weight on sum of area^0.9")
    s.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    return p


def _energy_plot(trace):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(trace.seconds, trace.energy, lw=1.2)
    ax.set_xlabel("seconds")
    ax.set_ylabel("−log π (energy)")
    ax.set_title("annealing")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _write_bytes(path, data: bytes):
    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(data)

    atomic_write(path, write)


def write_outputs(seg, outdir: Path) -> None:
    """Write every output file of ``swcuts segment`` into ``outdir``."""
    from skimage.segmentation import mark_boundaries

    # Render everything in memory first; then each file goes in atomically.
    overlay = mark_boundaries(seg.image, seg.labels, color=(1, 0.1, 0.1))
    atoms_img = mark_boundaries(seg.image, seg.atoms, color=(0.1, 0.8, 1.0))
    csv_buf = io.StringIO()
    seg.trace.write_csv(csv_buf)
    plot = _energy_plot(seg.trace)
    summary = json.dumps(seg.summary(), indent=2) + "\n"

    save_label_png(outdir / "labels.png", seg.labels.astype(np.uint16))
    save_npy(outdir / "labels.npy", seg.labels.astype(np.int32))
    save_rgb_png(outdir / "overlay.png", overlay)
    save_rgb_png(outdir / "atoms.png", atoms_img)
    _write_bytes(outdir / "trace.csv", csv_buf.getvalue().encode())
    _write_bytes(outdir / "energy.png", plot)
    _write_bytes(outdir / "summary.json", summary.encode())


def _cmd_segment(args) -> int:
    outdir = Path(args.output)
    if outdir.exists() and not outdir.is_dir():
        raise InputError(f"output '{outdir}' exists and is not a directory; choose another -o")
    image = load_image(args.image)
    if image.ndim == 3 and image.shape[-1] > 4 and image.shape[0] <= 4:
        channel_axis = 0
    else:
        channel_axis = -1
    seg = segment(image, sampler=args.sampler, atoms=args.atoms, n_atoms=args.n_atoms,
                  seed=args.seed, steps=args.steps, time_budget=args.time_budget, t0=args.t0,
                  t_final=args.t_final, init=args.init, channel_axis=channel_axis,
                  edge_scale=args.edge_scale, a0=args.a0, a1=args.a1, a2=args.a2,
                  progress=not args.no_progress)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create output directory '{outdir}': {exc.strerror}") from None
    write_outputs(seg, outdir)
    print(f"{seg.n_labels} segments, energy {seg.energy:.1f}, {seg.steps} steps in "
          f"{seg.seconds:.2f} s -> {outdir}")
    return 0


def main(argv=None) -> int:
    """Entry point of the ``swcuts`` console script."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "segment":
            return _cmd_segment(args)
    except UsageError as exc:
        print(f"swcuts: error: {exc}", file=sys.stderr)
        return 2
    except InputError as exc:
        # User errors from validation carry a one-line message.
        msg = " ".join(str(exc).split("\n"))
        print(f"swcuts: error: {msg}", file=sys.stderr)
        return 2
    except MemoryError:
        print("swcuts: error: out of memory; downscale the image or use fewer atoms", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("swcuts: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
