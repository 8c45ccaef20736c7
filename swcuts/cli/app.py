"""The ``swcuts`` command line.

``swcuts segment IMAGE -o OUTDIR`` writes labels.png (16-bit), labels.npy,
overlay.png, atoms.png, trace.csv, energy.png and summary.json, and with
``--sampler multilevel`` the labels of every level (labels_level0.npy, ...,
level 0 being the atoms it sampled). ``swcuts compare IMAGE -o OUTDIR
--samplers swc,gibbs,...`` runs several samplers on the same image and
posterior for the same time and writes comparison.csv, comparison.png,
compare.html and summary.json. ``swcuts benchmark DATA -o OUTDIR`` runs
samplers and classical segmenters on a data set (:mod:`swcuts.cli.benchmark`); ``swcuts
motion FRAME1 FRAME2 -o OUTDIR`` segments the motion of two frames
(:mod:`swcuts.cli.motion`); ``segment --posterior-samples N`` adds the
posterior maps (:mod:`swcuts.cli.posterior_outputs`). Bad input
exits with code 2 and one line on stderr, before any work starts and
without creating anything. Every file is written to a temporary name and
renamed, and if writing fails the files already written are removed again,
so no half-written output is ever left.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import threading
import warnings
from pathlib import Path

import numpy as np

from swcuts import __version__
from swcuts.cli import prewarm
from swcuts.segmentation.segment import segment
from swcuts.inference.budget import Budget, process_start, write_reserve
from swcuts.segmentation.options import DEFAULTS, SAMPLERS, check_options, common_model
from swcuts.image.atoms import ATOM_METHODS, DEFAULT_ATOMS
from swcuts.graph.edge_probabilities import NOISE_REF
from swcuts.cli.benchmark import add_parsers as add_benchmark_parsers
from swcuts.cli.benchmark import cmd_benchmark, cmd_report
from swcuts.cli.motion import add_parser as add_motion_parser
from swcuts.cli.motion import cmd_motion
from swcuts.io.output_set import json_text, missing_dirs, signals_deferred, write_output_set
from swcuts.io.figures import figure, plottable, png_bytes
from swcuts.evaluation.report import compare_page
from swcuts.io.errors import InputError, one_line, show_path
from swcuts.io.image_write import (
    boundary_overlay, encode_pngs, label_png_data, rgb_png_data, save_label_png, save_npy, save_rgb_png)
from swcuts.cli.common import _check_posterior_samples, counted, _drawn, _energy_plot, _load_checked, _write_bytes

__all__ = ["main"]

#: Samplers ``swcuts compare`` runs by default: the SW-cut default, its
#: single-site baseline and two split-merge samplers.
COMPARE_DEFAULT = ("swc", "gibbs", "split-merge", "triadic")
#: The files of ``swcuts segment`` (and, with multilevel, labels_level<k>.npy)
#: and of ``swcuts compare``.
SEGMENT_OUTPUTS = ("labels.png", "labels.npy", "overlay.png", "atoms.png", "trace.csv", "energy.png",
                   "summary.json")
COMPARE_OUTPUTS = ("comparison.csv", "comparison.png", "compare.html", "summary.json")
#: ``swcuts compare`` without --time-budget: this many seconds per sampler.
COMPARE_SECONDS = 5.0


class UsageError(Exception):
    """A user error to report in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump
        raise UsageError(message)


# Option values are only parsed here; their ranges are checked by
# swcuts.segmentation.options.check_options, so the CLI and the API report the same message.
def _int(text):
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None


def _sizes(text):
    try:
        return [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got '{text}'") from None


def _floats(text):
    try:
        return [float(t) for t in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got '{text}'") from None


def _names(text):
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected sampler names separated by commas")
    return names


def _outdir(text):
    if not text.strip():
        raise argparse.ArgumentTypeError("the output folder is empty; give a folder name, e.g. -o out")
    return text


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="swcuts", description="Image segmentation by Swendsen-Wang cuts.")
    p.add_argument("--version", action="version", version=f"swcuts {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = sub.add_parser("segment", help="segment an image")
    s.add_argument("image", help="image file (PNG, JPEG, TIFF or .npy)")
    s.add_argument("-o", "--output", required=True, type=_outdir, help="output directory (created if missing)")
    s.add_argument("--sampler", default="swc", metavar="NAME",
                   help=f"one of {', '.join(SAMPLERS)} (default swc)")
    s.add_argument("--atoms", default=None, metavar="METHOD",
                   help=f"one of {', '.join(ATOM_METHODS)} (default: pixels for multigrid and "
                        f"multilevel, {DEFAULT_ATOMS} otherwise)")
    s.add_argument("--n-atoms", type=_int, default=DEFAULTS["n_atoms"], metavar="N",
                   help="approximate number of atoms (the learned model merges weakly bounded ones)")
    s.add_argument("--seed", type=_int, default=None, metavar="N",
                   help="non-negative integer; the same seed with --steps gives the same result "
                        "(a --time-budget run depends on the machine's speed)")
    s.add_argument("--steps", type=_int, default=None, metavar="N", help="budget in sampler steps")
    s.add_argument("--time-budget", type=_float, default=None, metavar="SECONDS",
                   help="wall time of the whole run, instead of --steps: from the start of swcuts, reading "
                        "the image, atoms and posterior, to the files written; the sampler gets what is left "
                        "(writing estimated), at least 10%% of it, and a warning says when that made the run "
                        "longer")
    s.add_argument("--t0", type=_float, default=None, metavar="T", help="start temperature")
    s.add_argument("--t-final", type=_float, default=DEFAULTS["t_final"], metavar="T", help="final temperature")
    s.add_argument("--init", default=None, metavar="{atoms,uniform,random}",
                   help="start from one label (uniform), random labels, or for multigrid on pixels "
                        "from SW cuts on SLIC atoms (atoms; its default); default uniform otherwise")
    s.add_argument("--edge-scale", type=_float, default=DEFAULTS["edge_scale"],
                   help=f"scale of the KL divergence in the edge probabilities (eq. 53); on noisy "
                        f"images it is multiplied by min(1, {NOISE_REF:g} / noise)")
    s.add_argument("--model", default=None, metavar="{contrast,texture,window,paper}",
                   help="image posterior: with a contrast-sensitive boundary term (contrast; the "
                        "default on pixels), the same with window histograms in the likelihood "
                        "(window; on atoms only, and their default) or with texture-robust "
                        "boundary evidence (texture), or the paper's (section 5)")
    s.add_argument("--a0", type=_float, default=DEFAULTS["a0"], help="prior weight per label")
    s.add_argument("--a1", type=_float, default=DEFAULTS["a1"], help="prior weight per region")
    s.add_argument("--a2", type=_float, default=DEFAULTS["a2"],
                   help="prior weight on sum of area^0.9 (default: the model's; lower on grey images)")
    s.add_argument("--window-sizes", type=_sizes, default=None, metavar="S1,S2,...",
                   help="multigrid/multilevel: sides of the attention windows (default 8,16,32,... "
                        "up to the image size; 2,4,8,... for multigrid from atoms)")
    s.add_argument("--levels", type=_int, default=None, metavar="N",
                   help="multilevel: number of levels above the pixels (default 2: atoms, segments)")
    s.add_argument("--posterior-samples", type=_int, default=None, metavar="N",
                   help="also draw N samples of the posterior at T = 1 (swcuts.sample_posterior) and "
                        "write boundary_prob.png/.npy, stability.png, segments_hist.png and "
                        "posterior_summary.json (atom samplers only)")
    s.add_argument("--granularity", type=_floats, default=None, metavar="G1,G2,...",
                   help="with --posterior-samples: the target numbers of segments of the edges posterior "
                        "(default 4,8,16); with --posterior-model image, multipliers of the prior weights "
                        "per label and per region sampled in equal shares (default 1,3,10; 1: the posterior "
                        "alone)")
    s.add_argument("--posterior-model", default=None, metavar="{edges,image}",
                   help="with --posterior-samples: the posterior sampled, the learned edge evidence alone at "
                        "4, 8 and 16 segments, calibrated (edges, the default), or the segmentation's own "
                        "(image)")
    s.add_argument("--no-progress", action="store_true",
                   help="never show the phases (reading, atoms, ..., sampling, writing) or a progress bar")

    c = sub.add_parser("compare", help="run several samplers on one image and plot -log π over seconds")
    c.add_argument("image", help="image file (PNG, JPEG, TIFF or .npy)")
    c.add_argument("-o", "--output", required=True, type=_outdir, help="output directory (created if missing)")
    c.add_argument("--samplers", type=_names, default=list(COMPARE_DEFAULT), metavar="A,B,...",
                   help=f"samplers to compare (default {','.join(COMPARE_DEFAULT)}); "
                        f"any of {', '.join(SAMPLERS)}")
    c.add_argument("--time-budget", type=_float, default=None, metavar="SECONDS",
                   help="wall time of the whole command, from the start of swcuts to the files written, "
                        "shared equally by the samplers (each: its atoms, posterior and sampling) "
                        f"(default {COMPARE_SECONDS:g} per sampler)")
    c.add_argument("--no-progress", action="store_true", help="never show the phases or a progress bar")
    c.add_argument("--atoms", default=None, metavar="METHOD",
                   help="atoms for every sampler (default: each sampler's own default)")
    c.add_argument("--n-atoms", type=_int, default=DEFAULTS["n_atoms"], metavar="N")
    c.add_argument("--seed", type=_int, default=0, metavar="N", help="non-negative integer (default 0)")
    add_benchmark_parsers(sub, int_type=_int, float_type=_float, dir_type=_outdir)
    add_motion_parser(sub, int_type=_int, float_type=_float, dir_type=_outdir)
    return p


def output_files(seg, options=None) -> list:
    """The output files of ``swcuts segment``, as ``(name, writer)`` pairs
    for :func:`~swcuts.io.output_set.write_output_set` (everything is rendered
    here, in memory; the writers only write). ``options``: the options of
    the run, recorded in summary.json (with the seed and ``steps``, what
    repeats it)."""
    import cv2

    shown = cv2.convertScaleAbs(np.ascontiguousarray(seg.image, dtype=np.float64), alpha=255.0)
    overlay = boundary_overlay(shown, seg.labels, (1, 0.1, 0.1))
    atoms = seg.atoms
    if atoms.max() + 1 == atoms.size:
        # Every pixel its own atom: boundaries everywhere would hide the image.
        atoms = np.zeros_like(atoms)
    atoms_img = boundary_overlay(shown, atoms, (0.1, 0.8, 1.0))
    csv_buf = io.StringIO()
    seg.trace.write_csv(csv_buf)
    plot = _drawn(_energy_plot, seg.trace, name="energy.png")
    summary = json_text({**seg.summary(), **({"options": options} if options is not None else {})})

    # The three PNGs encoded at once (the encoding, not the disk, is what takes time).
    pngs = encode_pngs([label_png_data(seg.labels), rgb_png_data(overlay), rgb_png_data(atoms_img)])
    outputs = list(zip(SEGMENT_OUTPUTS,
                       (save_label_png, save_npy, save_rgb_png, save_rgb_png, _write_bytes, _write_bytes,
                        _write_bytes),
                       (pngs[0], seg.labels.astype(np.int32), pngs[1], pngs[2],
                        csv_buf.getvalue().encode(), plot, summary.encode())))
    # multilevel: the labels of every level (level 0 = the sampled atoms).
    for s, level in enumerate(seg.levels or ()):
        outputs.append((level_file(s), save_npy, np.asarray(level).astype(np.int32)))
    return [(name, lambda path, save=save, data=data: save(path, data)) for name, save, data in outputs]


def level_file(level: int) -> str:
    """The output file of the labels of a multilevel run's ``level``."""
    return f"labels_level{level}.npy"


def segment_outputs(options, posterior_samples=None) -> list:
    """The names of the files ``swcuts segment`` writes with ``options``
    (the keyword arguments of :func:`swcuts.segment`), known before the run."""
    from swcuts.segmentation.options import resolve_options
    from swcuts.cli.posterior_outputs import POSTERIOR_FILES

    names = list(SEGMENT_OUTPUTS)
    run = resolve_options(**options)
    if run.name == "multilevel":
        names += [level_file(s) for s in range(run.levels)]
    if posterior_samples:
        names += POSTERIOR_FILES
    return names


def _cmd_segment(args) -> int:
    started = process_start()  # --time-budget: the whole run, from the start of the process
    # Cheap checks first: options, then the output path, then the image.
    options = dict(sampler=args.sampler, atoms=args.atoms, n_atoms=args.n_atoms, seed=args.seed,
                   steps=args.steps, time_budget=args.time_budget, t0=args.t0, t_final=args.t_final,
                   init=args.init, edge_scale=args.edge_scale, a0=args.a0, a1=args.a1, a2=args.a2,
                   window_sizes=args.window_sizes, model=args.model,
                   levels=DEFAULTS["levels"] if args.levels is None else args.levels)
    if args.levels is not None and args.sampler != "multilevel":
        print(f"swcuts: warning: --levels applies to the multilevel sampler only; ignored by '{args.sampler}'",
              file=sys.stderr)
    check_options(**options)
    _check_posterior_samples(args)
    outdir = Path(args.output)
    # Every file the run will write, so that none replaces the image (refused before any work).
    missing_dirs(outdir, segment_outputs(options, args.posterior_samples), inputs=[args.image])
    budget = Budget(args.time_budget, start=started, progress=not args.no_progress)
    with budget.phase("reading", show_path(args.image)):
        image, channel_axis = _load_checked(args.image)
    if budget.timed:  # kept from the sampler's share
        budget.reserve = write_reserve(image.shape[1:3] if channel_axis == 0 else image.shape[:2])
    # A first run (the default kernel not in the numba cache yet) hands part
    # of the compiling to a helper process on a second core (swcuts.cli.prewarm).
    with prewarm.helper(_default_kernel_run(options)):
        seg = segment(image, channel_axis=channel_axis, progress=not args.no_progress,
                      posterior_samples=args.posterior_samples, granularity=args.granularity,
                      posterior_model=args.posterior_model,
                      **{**options, "time_budget": budget})
    with signals_deferred(), budget.phase("writing", f"{len(SEGMENT_OUTPUTS)} files"):
        files = output_files(seg, {**options, "image": str(args.image)})
        if seg.samples is not None:
            from swcuts.cli.posterior_outputs import posterior_output_files

            files += posterior_output_files(seg.samples)
            for line in seg.samples.warnings:
                print(f"swcuts: warning: {line}", file=sys.stderr)
        write_output_set(outdir, files)
    budget.check_end()
    energy = f"{seg.energy:.1f}" if abs(seg.energy) < 1e12 else f"{seg.energy:.6g}"
    # The sampler's own seconds can be a small part of the run (the boundary
    # detector, the atoms): say both.
    run = (f" (the whole run {budget.elapsed():.1f} s of the {budget.seconds:g} s budget)" if budget.timed
           else f" ({budget.elapsed():.1f} s in all)")
    print(f"{counted(seg.n_labels, 'segment')}, energy {energy}, {seg.steps} steps in "
          f"{seg.seconds:.2f} s of sampling{run} -> {outdir}")
    return 0


def _default_kernel_run(options) -> bool:
    """Whether ``segment(**options)`` runs the kernel that
    :mod:`swcuts.cli.prewarm` compiles ahead: the default sampler (``swc``) and
    model, on atoms."""
    from swcuts.segmentation.image_models import DEFAULT_MODEL
    from swcuts.segmentation.options import resolve_options

    run = resolve_options(**options)
    return run.name == "swc" and run.posterior == DEFAULT_MODEL and run.init != "atoms"


def _comparison_plot(runs) -> bytes:
    """comparison.png: −log π over seconds, one line per sampler."""
    fig = figure(7, 4)
    ax = fig.add_subplot()
    energies, unit, note = plottable(*(seg.trace.energy for _, seg in runs))
    for (name, seg), energy in zip(runs, energies):
        t = np.maximum(np.asarray(seg.trace.seconds, dtype=np.float64), 1e-3)
        ax.plot(t, energy, lw=1.2, label=f"{name} ({seg.n_labels} segments)")
    ax.set_xscale("log")
    ax.set_xlabel("seconds")
    ax.set_ylabel(f"−log π (energy){unit}")
    if note:
        ax.set_title(note, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return png_bytes(fig)


def _cmd_compare(args) -> int:
    started = process_start()  # --time-budget: the whole command, from the start of the process
    # Every sampler's options are checked before the image is read.
    names = list(dict.fromkeys(args.samplers))
    common = dict(atoms=args.atoms, n_atoms=args.n_atoms, seed=args.seed, time_budget=args.time_budget)
    for name in names:
        check_options(sampler=name, **common)
    common["model"] = common_model(names, args.atoms)  # one posterior for every sampler
    outdir = Path(args.output)
    missing_dirs(outdir, COMPARE_OUTPUTS, inputs=[args.image])
    seconds = COMPARE_SECONDS * len(names) if args.time_budget is None else args.time_budget
    budget = Budget(seconds, start=started, progress=not args.no_progress)
    with budget.phase("reading", show_path(args.image)):
        image, channel_axis = _load_checked(args.image)
    budget.reserve = write_reserve(image.shape[1:3] if channel_axis == 0 else image.shape[:2], compare=len(names))
    runs = []
    for i, name in enumerate(names):  # each sampler an equal part of what is left
        seg = segment(image, sampler=name, channel_axis=channel_axis, progress=not args.no_progress,
                      **{**common, "time_budget": budget.child(1 / (len(names) - i))})
        runs.append((name, seg))
        print(f"{name:>16}: energy {seg.energy:,.1f}, {counted(seg.n_labels, 'segment')}, "
              f"{seg.steps:,} steps, {seg.graph.n_vertices:,} {seg.atom_method} atoms")
    rows = io.StringIO()
    rows.write("sampler,step,seconds,temperature,energy,labels,accepted\n")
    for name, seg in runs:
        tr = seg.trace
        for r in zip(tr.step, tr.seconds, tr.temperature, tr.energy, tr.labels, tr.accepted):
            rows.write(f"{name},{r[0]},{r[1]:.6f},{r[2]:.6g},{r[3]:.6f},{r[4]},{r[5]}\n")
    summary = json_text({name: seg.summary() for name, seg in runs})
    with signals_deferred():  # rendered and written whole, or not at all
        plot = _drawn(_comparison_plot, runs, name="comparison.png")
        page = _drawn(compare_page, [(name, seg.labels, seg.trace.as_arrays(), seg.energy, seg.n_labels,
                                      seg.steps) for name, seg in runs], runs[0][1].image, name="compare.html")
        files = [(fname, lambda path, data=data: _write_bytes(path, data))
                 for fname, data in zip(COMPARE_OUTPUTS, (rows.getvalue().encode(), plot, page.encode(),
                                                          summary.encode()))]
        with budget.phase("writing"):
            write_output_set(outdir, files)
    budget.check_end()
    best = min(runs, key=lambda r: r[1].energy)[0]
    print(f"lowest energy: {best} -> {outdir}")
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like SIGINT: nothing half-written is left (exit 143)."""


#: The warning lines said in this run of :func:`main` (each is said once,
#: e.g. an image's scale, although ``compare`` prepares it per sampler).
_SAID: set = set()


def _warning_line(message, category, filename, lineno, file=None, line=None):
    """Warnings (e.g. a multi-page image) as one line on stderr, once each."""
    text = f"swcuts: warning: {' '.join(str(message).split())}"
    if text not in _SAID:
        _SAID.add(text)
        print(text, file=sys.stderr)


def _in_finaliser(frame) -> bool:
    """Whether ``frame`` runs inside a ``__del__`` (at any depth)."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _terminate(signum, frame):
    """Raise :class:`Terminated`, or, inside a finaliser, signal again.

    Python prints and drops an exception raised in a ``__del__``
    ("Exception ignored in ..."): a SIGTERM that came while one ran (llvmlite
    frees compiler objects in ``__del__`` while numba compiles) would be
    lost and the run would go on. There the signal is sent again 50 ms
    later, when the finaliser has returned.
    """
    if _in_finaliser(frame):
        again = threading.Timer(0.05, os.kill, (os.getpid(), signum))
        again.daemon = True
        again.start()
        return
    raise Terminated


def main(argv=None) -> int:
    """Entry point of the ``swcuts`` console script."""
    parser = build_parser()
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    shown, warnings.showwarning = warnings.showwarning, _warning_line
    _SAID.clear()
    try:
        args = parser.parse_args(argv)
        if args.command == "segment":
            return _cmd_segment(args)
        if args.command == "compare":
            return _cmd_compare(args)
        if args.command == "motion":
            return cmd_motion(args)
        if args.command == "benchmark":
            return cmd_benchmark(args)
        if args.command == "report":
            return cmd_report(args)
    except UsageError as exc:
        hint = ""
        if "required" in str(exc) and any(a.startswith("-") and Path(a).exists() for a in (argv or sys.argv[1:])):
            hint = "; for a file whose name starts with '-', write ./NAME"
        print(f"swcuts: error: {exc}{hint}", file=sys.stderr)
        return 2
    except InputError as exc:
        # User errors from validation carry a one-line message.
        msg = " ".join(str(exc).splitlines())
        print(f"swcuts: error: {msg}", file=sys.stderr)
        return 2
    except MemoryError:
        print("swcuts: error: out of memory; downscale the image or use fewer atoms", file=sys.stderr)
        return 2
    except OSError as exc:
        # A path the system refuses (a name too long, a folder without
        # permission, ...): the system's reason and the path, in one line.
        where = f": '{show_path(exc.filename)}'" if exc.filename else ""
        print(f"swcuts: error: {exc.strerror or one_line(exc)}{where}", file=sys.stderr)
        return 2
    except Terminated:
        print("swcuts: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("swcuts: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.showwarning = shown
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
