"""``swcuts motion FRAME1 FRAME2 -o OUTDIR``: two-frame motion segmentation.

Writes flow.flo (Middlebury format), flow.npy, flow.png (Middlebury colour
coding), regions.png, objects.png, overlay.png (object boundaries over
frame 2), trace.csv, energy.png and summary.json, as one unit (see
:func:`swcuts.io.output_set.write_output_set`); with ``--posterior-samples N``
also flow_spread.png, flow_spread.npy and nil_probability.npy
(:data:`SPREAD_OUTPUTS`). Bad frames and options are one
line and exit code 2, checked before any sampling.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np

from swcuts.cli.common import counted, _drawn, _energy_plot, _load_checked, _write_bytes
from swcuts.io.errors import InputError
from swcuts.io.figures import figure, png_bytes
from swcuts.io.image_write import save_npy, save_rgb_png
from swcuts.io.output_set import (
    check_signals, json_text, missing_dirs, signals_deferred, write_output_set)

__all__ = ["add_parser", "cmd_motion", "MOTION_OUTPUTS", "SPREAD_OUTPUTS"]

MOTION_OUTPUTS = ("flow.flo", "flow.npy", "flow.png", "regions.png", "objects.png", "overlay.png",
                  "trace.csv", "energy.png", "summary.json")
#: The extra files of ``--posterior-samples N``.
SPREAD_OUTPUTS = ("flow_spread.png", "flow_spread.npy", "nil_probability.npy")


def add_parser(sub, *, int_type, float_type, dir_type) -> None:
    """Add the ``motion`` sub-command to ``sub``."""
    m = sub.add_parser("motion", help="flow, intensity regions and moving objects of two frames")
    m.add_argument("frame1", help="first frame (PNG, JPEG, TIFF or .npy)")
    m.add_argument("frame2", help="second frame, the reference: the flow is defined on its pixels")
    m.add_argument("-o", "--output", required=True, type=dir_type, help="output directory (created if missing)")
    m.add_argument("--seed", type=int_type, default=None, metavar="N", help="non-negative integer")
    m.add_argument("--max-displacement", type=float_type, default=None, metavar="PIXELS",
                   help="override: velocity labels -m..m per axis at the coarsest pyramid level "
                        "(default: chosen from the frames, motion up to 10%% of their width)")
    m.add_argument("--stereo", action="store_true",
                   help="a rectified stereo pair (FRAME1 the right image, FRAME2 the left one): "
                        "horizontal velocities only; the flow's u is the disparity")
    m.add_argument("--precision", type=float_type, default=0.5, metavar="PIXELS",
                   help="label step (default 0.5: with -m 3 the paper's 169 velocities)")
    m.add_argument("--pyramid-levels", type=int_type, default=None, metavar="N",
                   help="coarse-to-fine levels (default: by image size)")
    m.add_argument("--rounds", type=int_type, default=None, metavar="N",
                   help="annealing rounds per pyramid level")
    m.add_argument("--time-budget", type=float_type, default=None, metavar="SECONDS",
                   help="wall time of the whole run, from the start of swcuts to the files written: "
                        "reading, the level-1 segments and writing (estimated) come out of it and the "
                        "annealing of the flow gets what is left, at least 10%% of it (the sub-label "
                        "refinement and --posterior-samples come on top)")
    m.add_argument("--no-progress", action="store_true", help="never show the phases on a terminal")
    m.add_argument("--no-refine", action="store_true", help="keep the discrete flow (no sub-label fit)")
    m.add_argument("--posterior-samples", type=int_type, default=0, metavar="N",
                   help="after annealing, draw N samples of the velocity labels at T = 1 (the nil "
                        "probability) and write the expected end-point error of the flow and the nil "
                        "probability: flow_spread.png/.npy, nil_probability.npy (default 0: off)")


def _spread_plot(res) -> bytes:
    """flow_spread.png: the expected end-point error of the flow (pixels) and the nil
    probability, each with a colour bar."""
    h, w = res.flow_spread.shape
    panel_h = min(4.0 * h / w, 6.0)  # 4-inch panels, whatever the frame size
    fig = figure(2 * 4.0 + 2.2, panel_h + 1.0)
    finite = res.flow_spread[np.isfinite(res.flow_spread)]
    top = max(float(finite.max()), 1e-6) if finite.size else 1.0
    panels = ((res.flow_spread, "expected flow error", "RMS end-point error (px)", "viridis", top),
              (res.nil_probability, "P(nil: occluded)", "P(nil)", "magma", 1.0))
    for i, (values, title, label, cmap, vmax) in enumerate(panels):
        ax = fig.add_subplot(1, 2, i + 1)
        im = ax.imshow(values, cmap=cmap, vmin=0, vmax=vmax, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.set_axis_off()
        cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
        cb.set_label(label)
    fig.suptitle(f"{res.posterior_samples} posterior samples at T = 1", fontsize=10)
    return png_bytes(fig)


def output_files(res, frame2) -> list:
    """The files of ``swcuts motion`` as ``(name, writer)`` pairs, rendered
    in memory first. ``frame2``: grey or RGB, in [0, 1] or on 0..255."""
    from skimage.color import label2rgb
    from skimage.segmentation import mark_boundaries

    from swcuts.io.flow import flow_to_color, write_flo

    grey = frame2 if frame2.ndim == 2 else frame2[..., :3]
    base = grey.astype(np.float64)
    base = base / 255.0 if base.max() > 1.0 else base
    overlay = mark_boundaries(base, res.objects, color=(1, 0.1, 0.1))
    objects_rgb = label2rgb(res.objects, bg_label=-1)
    regions_rgb = label2rgb(res.regions, bg_label=-1)
    csv_buf = io.StringIO()
    res.trace.write_csv(csv_buf)
    plot = _drawn(_energy_plot, res.trace, name="energy.png")
    known = ~res.occluded
    summary = dict(command="motion", shape=list(res.flow.shape[:2]), n_objects=res.n_objects,
                   n_regions=int(res.regions.max()) + 1, occluded_fraction=float(res.occluded.mean()),
                   object_velocity=res.object_velocity.tolist(), energy=res.energy,
                   seconds=res.seconds,
                   mean_speed=float(np.hypot(*res.flow[known].T).mean()) if known.any() else None)
    spread_plot = None
    if res.flow_spread is not None:
        spread_plot = _drawn(_spread_plot, res, name="flow_spread.png")
        summary["posterior"] = dict(
            samples=res.posterior_samples, temperature=1.0,
            mean_flow_spread=float(res.flow_spread.mean()),
            max_flow_spread=float(res.flow_spread.max()),
            mean_nil_probability=float(res.nil_probability.mean()),
            files=list(SPREAD_OUTPUTS),
            note="spread of the discrete velocity labels of the finest pyramid level, levels 1 "
                 "and 2 held fixed; the sub-label refinement is not sampled")
    files = [
        ("flow.flo", lambda p: write_flo(p, res.flow)),
        ("flow.npy", lambda p: save_npy(p, res.flow.astype(np.float32))),
        ("flow.png", lambda p: save_rgb_png(p, flow_to_color(res.flow))),
        ("regions.png", lambda p: save_rgb_png(p, regions_rgb)),
        ("objects.png", lambda p: save_rgb_png(p, objects_rgb)),
        ("overlay.png", lambda p: save_rgb_png(p, overlay)),
        ("trace.csv", lambda p: _write_bytes(p, csv_buf.getvalue().encode())),
        ("energy.png", lambda p: _write_bytes(p, plot)),
        ("summary.json", lambda p: _write_bytes(p, json_text(summary).encode())),
    ]
    if res.flow_spread is not None:
        files += [("flow_spread.npy", lambda p: save_npy(p, res.flow_spread.astype(np.float32))),
                  ("nil_probability.npy", lambda p: save_npy(p, res.nil_probability.astype(np.float32))),
                  ("flow_spread.png", lambda p: _write_bytes(p, spread_plot))]
    return files


def cmd_motion(args) -> int:
    """Run ``swcuts motion``."""
    from swcuts.inference.budget import Budget, process_start, write_reserve
    from swcuts.motion.segment import ROUNDS, _as_frames, _check_options, segment_motion

    from swcuts.motion.segment import _check_posterior_samples

    started = process_start()  # --time-budget: the whole run, from the start of the process
    try:  # before the frames are read
        _check_posterior_samples(args.posterior_samples)
    except ValueError as exc:
        raise InputError(str(exc).replace("posterior_samples", "--posterior-samples", 1)) from None
    outdir = Path(args.output)
    inputs = [args.frame1, args.frame2]
    missing_dirs(outdir, MOTION_OUTPUTS + (SPREAD_OUTPUTS if args.posterior_samples else ()), inputs=inputs)
    progress = not getattr(args, "no_progress", False)
    budget = Budget(None, start=started, progress=progress)
    # One line for a file of non-pixel values (text, complex), as for segment;
    # an interrupt ends the run after a read, not inside the reader.
    with signals_deferred(), budget.phase("reading"):
        f1 = np.asarray(_load_checked(args.frame1)[0])
        check_signals()
        f2 = np.asarray(_load_checked(args.frame2)[0])
    options = dict(max_displacement=args.max_displacement, precision=args.precision,
                   pyramid_levels=args.pyramid_levels,
                   rounds=ROUNDS if args.rounds is None else args.rounds,
                   time_budget=args.time_budget, vertical=not getattr(args, "stereo", False))
    try:  # every check of segment_motion that needs no sampling, first
        with warnings.catch_warnings():  # said once, by segment_motion
            warnings.simplefilter("ignore")
            a, b = _as_frames(f1, f2, -1)
        _check_options(options["max_displacement"], options["precision"], options["pyramid_levels"],
                       a.shape[:2])
        if not 1 <= options["rounds"] <= 10**4:
            raise ValueError(f"--rounds must be from 1 to 10000, got {options['rounds']}")
        if options["time_budget"] is not None and not 0 < options["time_budget"] <= 1e6:
            raise ValueError(f"--time-budget must be positive and at most 1e6 seconds, got "
                             f"{options['time_budget']}")
    except ValueError as exc:
        message = str(exc).replace("max_displacement", "--max-displacement").replace(
            "pyramid_levels", "--pyramid-levels").replace("precision (", "--precision (")
        raise InputError(message) from None
    if options["time_budget"] is not None:
        budget.seconds, budget.reserve = float(options["time_budget"]), write_reserve(a.shape[:2])
    res = segment_motion(f1, f2, seed=args.seed, refine=not args.no_refine, progress=progress,
                         posterior_samples=args.posterior_samples, **{**options, "time_budget": budget})
    # The overlay on frame 2 as scaled for the flow (any dtype, depth, alpha),
    # rendered and written whole, or not at all.
    with signals_deferred(), budget.phase("writing"):
        write_output_set(outdir, output_files(res, b[..., 0] / 255.0 if b.shape[2] == 1 else b / 255.0))
    budget.check_end()
    print(f"{counted(res.n_objects, 'object')}, {counted(int(res.regions.max()) + 1, 'region')}, "
          f"{100 * res.occluded.mean():.1f}% occluded, {res.seconds:.1f} s -> {outdir}")
    return 0
