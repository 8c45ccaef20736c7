"""The report of a benchmark: ``report.html``, self-contained.

:func:`build_report` reads the output folder of :func:`swcuts.benchmark`
(``results.csv``, ``traces.csv``, ``summary.json``, ``labels/``,
``images/``) and writes one HTML page with every plot and image embedded:
the score table per method, −log π against seconds per sampler, the time
samplers need to reach an energy, box plots of the scores and a gallery
of overlays. The page's numbers come from :mod:`swcuts.evaluation.results`; its
drawing from :mod:`swcuts.evaluation.report_html`.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np

from swcuts.evaluation.report_html import (
    CSS, box_plots, energy_plot, energy_table, gallery, header, img_tag, method_colours, overlay, png,
    reach_tables, score_table)
from swcuts.evaluation.results import load_results, method_table, methods_of
from swcuts.io.errors import InputError, show_path
from swcuts.io.figures import figure
from swcuts.io.image_write import atomic_write
from swcuts.io.output_set import refuse_inputs
from swcuts.io.figures import plottable

__all__ = ["build_report", "compare_page"]


# ---------------------------------------------------------------------------
# Pages (drawn by :mod:`swcuts.evaluation.report_html`)
# ---------------------------------------------------------------------------


def build_report(outdir, *more) -> Path:
    """Write ``outdir/report.html`` from a benchmark's output folder; returns its path.

    With ``more`` folders, their runs are merged in (a run_id found again
    replaces the earlier one), e.g. the same data set run on two machines.

    Examples
    --------
    >>> swcuts.evaluation.report.build_report("bench")  # doctest: +SKIP
    PosixPath('bench/report.html')
    """
    outdir = Path(outdir)
    refuse_inputs(outdir, ["report.html"], [Path(f) / name for f in (outdir, *more)
                                            for name in ("results.csv", "traces.csv", "summary.json")])
    rows, traces, summary = load_results(outdir, *more)
    if not rows:
        raise InputError(f"'{show_path(outdir / 'results.csv')}' holds no run yet")
    methods = methods_of(rows)
    colours = method_colours(methods)
    missing = []
    if not (outdir / "traces.csv").is_file():
        missing.append("traces.csv")
    if not (outdir / "images").is_dir():
        missing.append("images/")
    body = [f"<h1>swcuts benchmark</h1>{header(summary, rows)}",
            "<p class='note'>Missing from the folder: " + ", ".join(missing) + "</p>" if missing else "",
            "<h2>Scores against every annotator</h2>", score_table(method_table(rows)),
            "<p class='note'>Mean ± standard deviation over runs. PRI: probabilistic Rand index; VoI: "
            "variation of information (nats, mean over annotators); covering: Arbelaez et al. 2011, pooled "
            "over annotators; boundary F with one-to-one matching at 0.75 % of the diagonal, per image and "
            "from the data set's summed counts. −log π gap: above the lowest −log π of any method or "
            "annotator on the image, under swcuts' default posterior; humans lower: share of runs whose "
            "image's median annotator has the lower −log π. <i>human</i>: each annotator against the "
            "others.</p>",
            "<h2>Energy over time</h2>", energy_plot(rows, traces, colours),
            "<h2>Time to reach an energy</h2>", reach_tables(rows, traces),
            "<h2>Score distributions</h2>", box_plots(rows, colours),
            "<h2>Gallery</h2>", gallery(rows),
            "<h2>−log π of each method against the annotators', per image</h2>",
            "<p class='note'>(method − median annotator) / median annotator, under swcuts' default posterior; "
            "red: the method's segmentation is more probable than the humans' under this posterior.</p>",
            energy_table(rows)]
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>swcuts benchmark</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>")
    return atomic_write(outdir / "report.html", lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))


def compare_page(runs, image) -> str:
    """The HTML of ``compare.html`` (``swcuts compare``): one image, no ground truth.

    ``runs``: list of ``(name, labels, trace dict with "seconds" and
    "energy", energy, n_segments, steps)``; ``image``: the display image
    (float in [0, 1] or uint8). Returns the page (the caller writes it with
    the command's other outputs).
    """
    img = np.asarray(image)
    if img.dtype != np.uint8:
        img = np.round(np.clip(img, 0, 1) * 255).astype(np.uint8)
    colours = method_colours([r[0] for r in runs])
    fig = figure(8, 4)
    ax = fig.add_subplot()
    # Any energies drawn (huge ones scaled, infinite ones left out: swcuts.io.figures).
    best_so_far, unit, note = plottable(*(np.fmin.accumulate(np.asarray(trace["energy"], dtype=float))
                                          for _, _, trace, *_ in runs))
    for (name, _, trace, *_), energy in zip(runs, best_so_far):
        t = np.maximum(np.asarray(trace["seconds"], dtype=float), 1e-3)
        ax.plot(t, energy, color=colours[name], lw=2, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("seconds of sampling")
    ax.set_ylabel(f"best −log π so far{unit}")
    if note:
        ax.set_title(note, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    best = min(r[3] for r in runs)
    table = ['<table><tr><th class="l">sampler</th><th>−log π</th><th>above the best</th><th>segments</th>'
             '<th>steps</th></tr>']
    cells = []
    for name, labels, _, energy, n_segments, steps in runs:
        above = (energy - best) / abs(best) if math.isfinite(energy - best) and best else math.nan
        above = f"{100 * above:.2f} %" if math.isfinite(above) else "–"
        table.append(f'<tr><td class="l">{html.escape(name)}</td><td>{energy:,.1f}</td>'
                     f'<td>{above}</td><td>{n_segments}</td><td>{steps:,}</td></tr>')
        jpg = overlay(None, "", labels, {"": img}, width=320)
        cells.append(f'<figure>{img_tag(jpg, "image/jpeg", name)}<figcaption><b>{html.escape(name)}</b>, '
                     f'{n_segments} segments</figcaption></figure>')
    table.append("</table>")
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>swcuts compare</title>"
            f"<style>{CSS}</style></head><body><h1>swcuts compare</h1>{''.join(table)}{png(fig)}"
            f"<div class='gallery'>{''.join(cells)}</div></body></html>")
    return page
