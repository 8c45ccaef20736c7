"""What the commands of the ``swcuts`` command line share: reading an image
file, the energy plot, rendering a plot before anything is written, and
``--posterior-samples`` checked before the image is read."""

from __future__ import annotations

import warnings

import numpy as np

from swcuts.io.errors import InputError, one_line, show_path
from swcuts.io.figures import plottable
from swcuts.io.line_plot import line_png
from swcuts.io.image_read import load_image
from swcuts.io.image_write import atomic_write
from swcuts.io.output_set import signals_deferred

__all__ = ["counted", "_energy_plot", "_drawn", "_write_bytes", "_check_posterior_samples", "_load_checked"]


def counted(n, noun) -> str:
    """``n`` and the noun, plural unless ``n`` is 1.

    Examples
    --------
    >>> counted(1, "segment"), counted(3, "object")
    ('1 segment', '3 objects')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _energy_plot(trace) -> bytes:
    """energy.png: −log π over seconds (drawn with Pillow,
    :func:`swcuts.io.line_plot.line_png`: importing matplotlib cost every run
    ~0.3 CPU s)."""
    (energy,), unit, note = plottable(trace.energy)
    return line_png(np.asarray(trace.seconds, dtype=np.float64), energy, xlabel="seconds",
                    ylabel=f"−log π (energy){unit}", title=f"annealing ({note})" if note else "annealing",
                    title_size=14 if note else 15)


def _drawn(draw, *args, name):
    """``draw(*args)``, rendered before anything is written.

    Plots draw any energies (:func:`swcuts.io.figures.plottable`: scaled
    when huge, infinite values left out and said so in the title); if one
    still cannot be drawn, the run fails in one line rather than leave a
    set without it.

    Raises
    ------
    InputError
        If the plot ``name`` cannot be drawn.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return draw(*args)
    except (ValueError, OverflowError, ArithmeticError) as exc:
        raise InputError(f"{name} cannot be drawn ({one_line(exc)[:120]}); no output written") from None


def _write_bytes(path, data: bytes):
    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(data)

    atomic_write(path, write)


def _check_posterior_samples(args):
    """``--posterior-samples`` and ``--granularity``, checked before the image
    is read (the message names the flags; :func:`segment` checks them again)."""
    from swcuts.segmentation.granularity import check_segment_samples
    from swcuts.segmentation.options import resolve_options

    if args.posterior_samples is None and args.granularity is None and args.posterior_model is None:
        return
    options = resolve_options(sampler=args.sampler, atoms=args.atoms, n_atoms=args.n_atoms,
                              init=args.init, model=args.model)
    try:
        check_segment_samples(args.posterior_samples, options, args.granularity, args.posterior_model)
    except InputError as exc:
        message = str(exc).replace("posterior_samples", "--posterior-samples")
        message = message.replace("posterior_model", "--posterior-model").replace(
            "unknown posterior model", "unknown --posterior-model")
        raise InputError(message.replace("granularity", "--granularity", 1)) from None


def _load_checked(path):
    """The image of ``path`` and its channel axis (one-line errors for bad files).
    An interrupt ends the run after the read, not inside the image reader."""
    with signals_deferred():
        image = load_image(path)
    if image.dtype.kind not in "biuf":
        raise InputError(f"'{show_path(path)}' holds {image.dtype} values, not pixel values; "
                         f"swcuts needs a numeric (bool, integer or float) image")
    if image.ndim == 3 and image.shape[-1] > 4 and image.shape[0] <= 4:
        return image, 0
    return image, -1
