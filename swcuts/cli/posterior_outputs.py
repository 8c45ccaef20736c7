"""Files of a posterior-sampling run (:func:`write_posterior_outputs`):
boundary probability map, segment stability, the posterior of the number
of segments and the diagnostics, written as one unit
(:func:`swcuts.io.output_set.write_output_set`). Independent of the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from swcuts.io.figures import figure, png_bytes
from swcuts.io.output_set import json_text, write_output_set

__all__ = ["write_posterior_outputs", "posterior_output_files", "POSTERIOR_FILES"]

#: The files :func:`write_posterior_outputs` writes.
POSTERIOR_FILES = ("boundary_prob.png", "boundary_prob.npy", "stability.png", "segments_hist.png",
                   "posterior_summary.json")


def _figure(w_px, h_px, extra_w=1.4):
    """A figure for a map of ``w_px`` x ``h_px`` pixels (4 to 9 inches wide: a small image is
    enlarged so that the title fits) and its colour bar."""
    w_in = max(w_px / 100, 1e-9)
    scale = min(max(1.0, 4.0 / w_in), 9.0 / w_in)
    return figure(w_px / 100 * scale + extra_w, h_px / 100 * scale + 0.6)


def _map_plot(values, title, label, cmap, background=None) -> bytes:
    """A [0, 1] map with a colour bar (over a faint grey image if given)."""
    h, w = values.shape
    fig = _figure(w, h)
    ax = fig.add_subplot()
    if background is not None:
        g = background if background.ndim == 2 else background[..., :3].mean(axis=2)
        ax.imshow(g, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        shown = np.ma.masked_where(values <= 0, values)
        im = ax.imshow(shown, cmap=cmap, vmin=0, vmax=1, interpolation="nearest", alpha=0.9)
    else:
        im = ax.imshow(values, cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
    ax.set_title(title, fontsize=10)
    ax.set_axis_off()
    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    cb.set_label(label)
    return png_bytes(fig)


def _stability_plot(samples) -> bytes:
    """Segments of the reference (the segmentation, else the best state) coloured by stability, boundaries in black."""
    from swcuts.evaluation.metrics.boundaries import boundary_map

    stab = samples.stability_map()
    seg = samples.reference_segmentation
    h, w = seg.shape
    fig = _figure(w, h)
    ax = fig.add_subplot()
    im = ax.imshow(stab, cmap="RdYlGn", vmin=0, vmax=1, interpolation="nearest")
    edges = boundary_map(seg)
    ax.imshow(np.ma.masked_where(~edges, edges), cmap="gray_r", vmin=0, vmax=1, interpolation="nearest")
    which = "best state" if samples.reference is None else "segmentation"
    ax.set_title(f"stability of the {which}'s segments\n(mean best-match IoU over {samples.n_samples} samples)",
                 fontsize=10)
    ax.set_axis_off()
    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    cb.set_label("stability")
    return png_bytes(fig)


def _hist_plot(samples) -> bytes:
    from matplotlib.ticker import MaxNLocator

    k, p = samples.n_segments_distribution()
    fig = figure(6, 3.5)
    ax = fig.add_subplot()
    ax.bar(k, p, width=0.8, color="#4477aa")
    best_k = int(samples.reference_labels.max()) + 1
    which = "best state" if samples.reference is None else "segmentation"
    ax.axvline(best_k, color="#cc3311", lw=1.5, ls="--", label=f"{which} ({best_k})")
    ax.set_xlabel("number of segments")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no ticks at 24.5
    ax.set_ylabel("posterior probability")
    rh = samples.r_hat.get("n_segments", float("nan"))
    flag = " (not mixed)" if rh > 1.1 else ""
    levels = len(getattr(samples, "granularity", (1.0,)))
    mix = f" over {levels} granularities" if levels > 1 else ""
    worst = "worst " if levels > 1 else ""
    ax.set_title(f"{samples.n_samples} samples{mix}, {samples.n_chains} chains, {worst}split R-hat "
                 f"{rh:.2f}{flag}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return png_bytes(fig)


def posterior_output_files(samples) -> list:
    """The files of :func:`write_posterior_outputs` as ``(name, writer)``
    pairs for :func:`~swcuts.io.output_set.write_output_set` (so that a command
    can write them in one unit with its own files)."""
    bp = samples.boundary_probability()
    return [
        ("boundary_prob.png", lambda p: Path(p).write_bytes(_map_plot(
            bp, f"boundary probability ({samples.n_samples} posterior samples)", "P(boundary)",
            "magma", None))),
        ("boundary_prob.npy", lambda p: np.save(p, bp.astype(np.float32))),
        ("stability.png", lambda p: Path(p).write_bytes(_stability_plot(samples))),
        ("segments_hist.png", lambda p: Path(p).write_bytes(_hist_plot(samples))),
        ("posterior_summary.json", lambda p: Path(p).write_text(json_text(samples.summary()))),
    ]


def write_posterior_outputs(samples, outdir) -> list:
    """Write the maps and summaries of posterior samples into ``outdir``.

    Files (:data:`POSTERIOR_FILES`), written as one unit (none if any
    fails): ``boundary_prob.png`` (the boundary probability map with a
    colour bar), ``boundary_prob.npy`` (the map, float32 H x W),
    ``stability.png`` (segments of the segmentation the samples refer to,
    :meth:`~swcuts.inference.posterior_samples.PosteriorSamples.refer_to`, else
    of the best state, coloured by stability),
    ``segments_hist.png`` (the posterior of the number of segments) and
    ``posterior_summary.json`` (:meth:`PosteriorSamples.summary`:
    diagnostics and warnings).

    Parameters
    ----------
    samples : PosteriorSamples
    outdir : str or Path
        Created (with its parents) if missing.

    Returns
    -------
    list of Path
        The files written.

    Examples
    --------
    >>> import tempfile
    >>> from swcuts.segmentation.posterior import _demo
    >>> paths = write_posterior_outputs(_demo(), tempfile.mkdtemp())
    >>> sorted(p.name for p in paths)[:2]
    ['boundary_prob.npy', 'boundary_prob.png']
    """
    return write_output_set(outdir, posterior_output_files(samples))
