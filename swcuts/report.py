"""The report of a benchmark: ``report.html``, self-contained.

:func:`build_report` reads the output folder of :func:`swcuts.benchmark`
(``results.csv``, ``traces.csv``, ``summary.json``, ``labels/``,
``images/``) and writes one HTML page with every plot and image embedded:
the score table per method, −log π against seconds per sampler, the time
samplers need to reach an energy, box plots of the scores and a gallery
of overlays. The analysis functions (:func:`method_table`,
:func:`energy_at_times`, :func:`time_to_reach`) are the page's numbers and
are public, so that scripts print the same figures.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from pathlib import Path

import numpy as np

from .imageio import InputError, _show, atomic_write

__all__ = ["load_results", "method_table", "energy_at_times", "time_to_reach", "build_report",
           "compare_page"]

#: Scores shown per method: (column, label, higher is better).
SCORES = (("pri", "PRI", True), ("voi", "VoI", False), ("covering", "Covering", True),
          ("covering_best", "Covering (best annotator)", True), ("bf", "Boundary F", True))
_FLOAT = ("seconds", "sample_seconds", "energy", "sampler_energy", "pri", "voi", "covering",
          "covering_best", "bp", "br", "bf")
_INT = ("seed", "steps", "n_segments", "match_p", "total_p", "match_r", "total_r")
#: Times (s) at which the energy curves are summarised in tables.
CHECK_TIMES = (0.1, 0.3, 1, 3, 5, 10, 30, 60, 100, 300)
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f")


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def _num(v, conv):
    if v in ("", None):
        return math.nan if conv is float else None
    try:
        return conv(float(v)) if conv is int else conv(v)
    except ValueError:
        return math.nan if conv is float else None


def load_results(outdir):
    """``(rows, traces, summary)`` of a benchmark's output folder.

    ``rows``: one dict per run (the last row of a run_id wins), numbers
    converted; ``traces``: ``{run_id: {"seconds", "energy", ...} arrays}``
    for runs that have a row; ``summary``: ``summary.json`` (``{}`` if missing).

    Raises
    ------
    InputError
        If ``results.csv`` is missing or unreadable.
    """
    from .benchmarking.store import read_rows

    outdir = Path(outdir)
    path = outdir / "results.csv"
    if not path.is_file():
        raise InputError(f"'{_show(outdir)}' holds no results.csv; give the output folder of 'swcuts benchmark'")
    rows = []
    for r in read_rows(path):
        r = dict(r)
        for k in _FLOAT:
            r[k] = _num(r.get(k), float)
        for k in _INT:
            r[k] = _num(r.get(k), int)
        rows.append(r)
    known = {r["run_id"] for r in rows}
    traces = {}
    tpath = outdir / "traces.csv"
    if tpath.is_file():
        cols = {}
        with open(tpath, newline="", encoding="utf-8") as fh:
            for t in csv.DictReader(fh):
                if t.get("run_id") in known:
                    c = cols.setdefault(t["run_id"], {"step": [], "seconds": [], "energy": [], "labels": []})
                    for k in c:
                        c[k].append(float(t[k]))
        for rid, c in cols.items():
            traces[rid] = {k: np.asarray(v) for k, v in c.items()}
            # A run retried after a resume appends a second trace: keep the last.
            starts = np.flatnonzero(traces[rid]["step"] == 0)
            if starts.size > 1:
                traces[rid] = {k: v[starts[-1]:] for k, v in traces[rid].items()}
    try:
        summary = json.loads((outdir / "summary.json").read_text())
    except (OSError, ValueError):
        summary = {}
    return rows, traces, summary


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------


def _ok(rows, kind=None):
    return [r for r in rows if r["status"] == "ok" and (kind is None or r["kind"] == kind)]


def _methods(rows) -> list:
    """Method names in order: samplers, peers, then the annotators."""
    order = {"sampler": 0, "peer": 1, "annotator": 2}
    seen = {}
    for r in rows:
        seen.setdefault(r["method"], order.get(r["kind"], 3))
    return sorted(seen, key=lambda m: seen[m])


def _stats(values) -> dict:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return {"mean": math.nan, "std": math.nan, "median": math.nan, "n": 0}
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0,
            "median": float(np.median(v)), "n": int(v.size)}


def method_table(rows) -> list:
    """Per method: the mean, std and median of every score over its runs,
    the data set's boundary F from the summed counts (``bf_dataset``), the
    mean gap of −log π to the image's lowest (``energy_gap``, in % of it,
    over every method and annotator of the image), and ``humans_lower``:
    the fraction of its runs whose image's median annotator has a lower
    −log π than the run."""
    ok = _ok(rows)
    best = {}
    humans = {}
    for r in ok:
        if np.isfinite(r["energy"]):
            best[r["image"]] = min(best.get(r["image"], math.inf), r["energy"])
            if r["kind"] == "annotator":
                humans.setdefault(r["image"], []).append(r["energy"])
    table = []
    for method in _methods(rows):
        runs = [r for r in rows if r["method"] == method]
        good = [r for r in runs if r["status"] == "ok"]
        entry = {"method": method, "kind": runs[0]["kind"], "runs": len(runs),
                 "failed": len(runs) - len(good)}
        for key in ("pri", "voi", "covering", "covering_best", "bp", "br", "bf", "n_segments", "seconds"):
            entry[key] = _stats([r[key] for r in good])
        sums = [sum(r[k] or 0 for r in good if r["match_p"] is not None)
                for k in ("match_p", "total_p", "match_r", "total_r")]
        p = sums[0] / sums[1] if sums[1] else 1.0  # no boundary at all: vacuous precision
        rc = sums[2] / sums[3] if sums[3] else 1.0
        entry["bf_dataset"] = 2 * p * rc / (p + rc) if p + rc > 0 else math.nan
        gaps = [100 * (r["energy"] - best[r["image"]]) / abs(best[r["image"]])
                for r in good if np.isfinite(r["energy"]) and r["image"] in best]
        entry["energy_gap"] = _stats(gaps)
        lower = [float(np.median(humans[r["image"]]) < r["energy"]) for r in good
                 if r["image"] in humans and np.isfinite(r["energy"])]
        entry["humans_lower"] = float(np.mean(lower)) if lower and entry["kind"] != "annotator" else math.nan
        table.append(entry)
    return table


def _best_so_far_at(trace, t) -> float:
    """Lowest trace energy reached by second ``t`` (inf before the first row)."""
    idx = np.searchsorted(trace["seconds"], t, side="right")
    return float(np.min(trace["energy"][:idx])) if idx else math.inf


def energy_at_times(rows, traces, times=CHECK_TIMES) -> dict:
    """The samplers' best −log π by each time, relative to the image's best.

    For every sampler run, the lowest energy its trace reached by second
    ``t`` of sampling, as a gap (%) to the lowest final energy of any
    sampler run on that image. Returns ``{sampler: {t: {"median", "q25",
    "q75", "lowest_on"}}}`` (``lowest_on``: on how many images this
    sampler had the lowest energy by ``t``), and ``{"lowest": {t: sampler
    with the lowest median}}``.
    """
    runs = [r for r in _ok(rows, "sampler") if r["run_id"] in traces]
    best = {}
    for r in runs:
        best[r["image"]] = min(best.get(r["image"], math.inf), float(np.min(traces[r["run_id"]]["energy"])))
    samplers = [m for m in _methods(runs)]
    out = {s: {} for s in samplers}
    lowest = {}
    for t in times:
        at = {}
        for r in runs:
            at[(r["method"], r["image"], r["seed"])] = _best_so_far_at(traces[r["run_id"]], t)
        images = {k[1] for k in at}
        wins = dict.fromkeys(samplers, 0)
        for image in images:
            vals = {s: min((v for k, v in at.items() if k[0] == s and k[1] == image), default=math.inf)
                    for s in samplers}
            winner = min(vals, key=vals.get)
            if np.isfinite(vals[winner]):
                wins[winner] += 1
        for s in samplers:
            gaps = [100 * (v - best[k[1]]) / abs(best[k[1]]) for k, v in at.items() if k[0] == s]
            finite = [g for g in gaps if np.isfinite(g)]
            if len(finite) < len(gaps) / 2:  # most runs have no row yet by t
                out[s][t] = {"median": math.inf, "q25": math.inf, "q75": math.inf, "lowest_on": wins[s]}
            else:
                q = np.percentile(np.asarray(gaps, dtype=float), [25, 50, 75])
                out[s][t] = {"median": float(q[1]), "q25": float(q[0]), "q75": float(q[2]),
                             "lowest_on": wins[s]}
        lowest[t] = min(samplers, key=lambda s: out[s][t]["median"]) if samplers else None
    out["lowest"] = lowest
    return out


def _first_time_at_or_below(trace, level) -> float:
    hit = np.flatnonzero(trace["energy"] <= level + 1e-9 * abs(level))
    return float(trace["seconds"][hit[0]]) if hit.size else math.inf


def time_to_reach(rows, traces, *, reference="gibbs") -> dict:
    """How much faster each sampler reaches the reference sampler's final energy.

    For every image and seed with a run of ``reference``: the level is the
    lowest energy the reference reached, and its time the second it got
    there; every other sampler's time is the first second its trace is at
    or below that level. Returns ``{sampler: {"median_speedup", "runs",
    "reached", "median_seconds", "reference_median_seconds"}}``
    (speed-up = reference's time / sampler's time; runs that never reach
    count as speed-up 0).
    """
    runs = [r for r in _ok(rows, "sampler") if r["run_id"] in traces]
    ref = {(r["image"], r["seed"]): traces[r["run_id"]] for r in runs if r["method"] == reference}
    out = {}
    for s in _methods(runs):
        if s == reference:
            continue
        speedups, times, ref_times = [], [], []
        for r in runs:
            key = (r["image"], r["seed"])
            if r["method"] != s or key not in ref:
                continue
            level = float(np.min(ref[key]["energy"]))
            t_ref = max(_first_time_at_or_below(ref[key], level), 1e-6)
            t = _first_time_at_or_below(traces[r["run_id"]], level)
            times.append(t)
            ref_times.append(t_ref)
            speedups.append(t_ref / max(t, 1e-6) if np.isfinite(t) else 0.0)
        if speedups:
            out[s] = {"median_speedup": float(np.median(speedups)), "runs": len(speedups),
                      "reached": int(np.sum(np.isfinite(times))),
                      "median_seconds": float(np.median(times)),
                      "reference_median_seconds": float(np.median(ref_times))}
    return out


# ---------------------------------------------------------------------------
# Plots (matplotlib's Agg canvas: no pyplot, no display)
# ---------------------------------------------------------------------------


def _figure(w, h):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    return _img_tag(buf.getvalue(), "image/png")


def _img_tag(data: bytes, mime: str, alt: str = "", width=None) -> str:
    w = f' width="{width}"' if width else ""
    return (f'<img src="data:{mime};base64,{base64.b64encode(data).decode()}" alt="{html.escape(alt)}"{w}>')


def _colours(methods) -> dict:
    return {m: COLOURS[i % len(COLOURS)] for i, m in enumerate(methods)}


def _energy_plot(rows, traces, colours) -> str:
    """Gap of the best −log π so far to the image's best, median and IQR over runs."""
    runs = [r for r in _ok(rows, "sampler") if r["run_id"] in traces]
    if not runs:
        return "<p>No sampler traces.</p>"
    t_max = max(float(traces[r["run_id"]]["seconds"][-1]) for r in runs)
    t_min = max(min(float(traces[r["run_id"]]["seconds"][1]) if len(traces[r["run_id"]]["seconds"]) > 1
                    else t_max for r in runs), 1e-3)
    grid = np.geomspace(t_min, max(t_max, t_min * 1.01), 60)
    curves = energy_at_times(rows, traces, grid)
    fig = _figure(8, 4.2)
    ax = fig.add_subplot()
    for s in _methods(runs):
        med = np.array([curves[s][t]["median"] for t in grid])
        lo = np.array([curves[s][t]["q25"] for t in grid])
        hi = np.array([curves[s][t]["q75"] for t in grid])
        ok = np.isfinite(med)
        ax.plot(grid[ok], med[ok], color=colours[s], lw=2, label=s)
        ax.fill_between(grid[ok], lo[ok], np.where(np.isfinite(hi[ok]), hi[ok], np.nan), color=colours[s],
                        alpha=0.18, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds of sampling")
    ax.set_ylabel("−log π above the image's best (%)")
    ax.set_title("Best energy so far: median and interquartile band over images")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    return _png(fig)


def _box_plots(rows, colours) -> str:
    methods = _methods(rows)
    fig = _figure(11, 3.4)
    for i, (key, label, higher) in enumerate((s for s in SCORES if s[0] != "covering_best")):
        ax = fig.add_subplot(1, 4, i + 1)
        data = [[r[key] for r in _ok(rows) if r["method"] == m and np.isfinite(r[key])] for m in methods]
        keep = [j for j, d in enumerate(data) if d]
        box = ax.boxplot([data[j] for j in keep], patch_artist=True, widths=0.6)
        for patch, j in zip(box["boxes"], keep):
            patch.set_facecolor(colours[methods[j]])
            patch.set_alpha(0.5)
        ax.set_xticks(range(1, len(keep) + 1), [methods[j] for j in keep], rotation=35, ha="right",
                      fontsize=8)
        ax.set_title(f"{label} ({'higher' if higher else 'lower'} is better)", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    return _png(fig)


def _overlay(outdir: Path, image: str, labels_file: str, cache: dict, width=220):
    """JPEG bytes of the image with the segment boundaries drawn, or None."""
    from skimage.segmentation import find_boundaries
    from skimage.transform import resize

    import imageio.v3 as iio

    try:
        if image not in cache:
            cache[image] = iio.imread(outdir / "images" / f"{image}.jpg")
        img = cache[image]
        labels = labels_file if isinstance(labels_file, np.ndarray) else iio.imread(outdir / labels_file)
    except (OSError, ValueError):
        return None
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    out = img[..., :3].copy()
    if labels.shape == out.shape[:2]:
        edges = find_boundaries(labels, mode="thick")
        out[edges] = (255, 30, 30)
    scale = width / out.shape[1]
    small = resize(out, (max(1, round(out.shape[0] * scale)), width), order=1, anti_aliasing=True,
                   preserve_range=True).astype(np.uint8)
    return iio.imwrite("<bytes>", small, extension=".jpg", quality=85)


def _gallery(outdir, rows, truths_rows) -> str:
    samplers = [m for m in _methods(rows) if any(r["kind"] == "sampler" for r in rows if r["method"] == m)]
    ref = samplers[0] if samplers else (_methods(_ok(rows, "peer")) or [None])[0]
    if ref is None:
        return "<p>No runs to show.</p>"
    scored = sorted((r for r in _ok(rows) if r["method"] == ref and np.isfinite(r["covering"])),
                    key=lambda r: r["covering"])
    if not scored:
        return "<p>No scored runs to show.</p>"
    picks = {"best": scored[-1], "median": scored[len(scored) // 2], "worst": scored[0]}
    methods = _methods(rows)  # "human": the first annotator's segmentation
    cache = {}
    parts = []
    for tag, pick in picks.items():
        image = pick["image"]
        cells = []
        for m in methods:
            run = min((r for r in rows if r["method"] == m and r["image"] == image and r["labels_file"]),
                      key=lambda r: r["seed"] or 0, default=None)
            if run is None:
                continue
            jpg = _overlay(outdir, image, run["labels_file"], cache)
            if jpg is None:
                continue
            name = "annotator 1" if m == "human" else m
            cells.append(f'<figure>{_img_tag(jpg, "image/jpeg", name)}<figcaption><b>{html.escape(name)}</b><br>'
                         f'covering {_fmt(run["covering"])}, {run["n_segments"]} segments</figcaption></figure>')
        if cells:
            parts.append(f'<h3>{tag.capitalize()} image for {html.escape(ref)}: {html.escape(image)} '
                         f'(covering {pick["covering"]:.3f})</h3><div class="gallery">{"".join(cells)}</div>')
    if not parts:
        return "<p>The images or label files are missing: no overlays.</p>"
    return "".join(parts)


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------


CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;
color:#222;padding:0 16px}
h1{font-size:1.6em;margin-bottom:0}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:0.9em;margin:8px 0}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}tr.annotator td{color:#555;font-style:italic}
.meta{color:#555}.gallery{display:flex;flex-wrap:wrap;gap:8px}
figure{margin:0;font-size:0.8em;text-align:center}img{max-width:100%}
.note{color:#555;font-size:0.9em}
"""


def _fmt(v, digits=3):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    return f"{v:.{digits}f}"


def _score_table(table) -> str:
    cols = [(k, label, higher) for k, label, higher in SCORES] + [("bf_dataset", "Boundary F (data set)", True)]
    best = {}
    for k, _, higher in cols:
        vals = [(e[k]["mean"] if isinstance(e[k], dict) else e[k]) for e in table if e["kind"] != "annotator"]
        vals = [v for v in vals if v is not None and np.isfinite(v)]
        if vals:
            best[k] = max(vals) if higher else min(vals)
    head = "".join(f"<th>{html.escape(label)} {'↑' if higher else '↓'}</th>" for _, label, higher in cols)
    lines = [f'<table><tr><th class="l">method</th><th>runs</th>{head}<th>segments</th><th>seconds</th>'
             f'<th>−log π gap ↓</th><th>humans lower</th></tr>']
    for e in table:
        cells = []
        for k, _, _ in cols:
            v = e[k]
            mean = v["mean"] if isinstance(v, dict) else v
            text = _fmt(mean) + (f" ± {_fmt(v['std'])}" if isinstance(v, dict) and v["n"] > 1 else "")
            bold = e["kind"] != "annotator" and k in best and mean == best[k]
            cells.append(f"<td>{'<b>' + text + '</b>' if bold else text}</td>")
        runs = f"{e['runs']}" + (f" ({e['failed']} failed)" if e["failed"] else "")
        gap = e["energy_gap"]
        lines.append(f'<tr class="{e["kind"]}"><td class="l">{html.escape(e["method"])}</td><td>{runs}</td>'
                     f'{"".join(cells)}<td>{_fmt(e["n_segments"]["mean"], 1)}</td>'
                     f'<td>{_fmt(e["seconds"]["mean"], 2)}</td><td>{_fmt(gap["mean"], 2)} %</td>'
                     f'<td>{_fmt(e["humans_lower"], 2)}</td></tr>')
    lines.append("</table>")
    return "".join(lines)


def _reach_tables(rows, traces) -> str:
    samplers = _methods([r for r in _ok(rows, "sampler") if r["run_id"] in traces])
    if not samplers:
        return "<p>No sampler traces.</p>"
    t_max = max(float(traces[r["run_id"]]["seconds"][-1]) for r in _ok(rows, "sampler") if r["run_id"] in traces)
    times = [t for t in CHECK_TIMES if t <= t_max * 1.0001] or [t_max]
    at = energy_at_times(rows, traces, times)
    head = "".join(f"<th>{t:g} s</th>" for t in times)
    lines = [f'<table><tr><th class="l">sampler</th>{head}</tr>']
    for s in samplers:
        cells = "".join(f"<td>{_fmt(at[s][t]['median'], 2)} % ({at[s][t]['lowest_on']})</td>" for t in times)
        lines.append(f'<tr><td class="l">{html.escape(s)}</td>{cells}</tr>')
    lines.append("</table><p class='note'>Median gap (%) of the best −log π reached by that time to the "
                 "image's best sampler result; in brackets, on how many images the sampler was lowest.</p>")
    for reference in samplers:
        reach = time_to_reach(rows, traces, reference=reference)
        if not reach:
            continue
        lines.append(f"<h3>Time to reach {html.escape(reference)}'s final energy</h3>"
                     f'<table><tr><th class="l">sampler</th><th>runs reaching it</th><th>median seconds</th>'
                     f'<th>{html.escape(reference)} median seconds</th><th>median speed-up</th></tr>')
        for s, v in reach.items():
            lines.append(f'<tr><td class="l">{html.escape(s)}</td><td>{v["reached"]} of {v["runs"]}</td>'
                         f'<td>{_fmt(v["median_seconds"], 2)}</td><td>{_fmt(v["reference_median_seconds"], 2)}</td>'
                         f'<td>{_fmt(v["median_speedup"], 1)}×</td></tr>')
        lines.append("</table>")
    return "".join(lines)


def _header(summary, rows) -> str:
    s = summary
    images = len({r["image"] for r in rows})
    meta = [f"data: <code>{html.escape(str(s.get('data', '?')))}</code>"
            + (f" (split {html.escape(str(s['split']))})" if s.get("split") else ""),
            f"{images} images", f"budget: {html.escape(str(s.get('budget', '?')))} per sampler run",
            f"seeds: {html.escape(str(s.get('seeds', '?')))}",
            f"workers: {html.escape(str(s.get('workers', '?')))}"
            + (f", Dask scheduler {html.escape(str(s['scheduler']))}" if s.get("scheduler") else ""),
            f"swcuts {html.escape(str(s.get('version', '?')))}",
            f"started {html.escape(str(s.get('started', '?')))}, finished {html.escape(str(s.get('finished', '–')))}"]
    peers = []
    for name, p in (s.get("peers") or {}).items():
        how = (f"tuned on <code>{html.escape(str(p['tuned_on']))}</code> ({p.get('n_images', '?')} images, "
               f"best mean covering {_fmt(p.get('tuned_covering'))})" if p.get("tuned_on") else "default, not tuned")
        peers.append(f"<li>{html.escape(name)}: {html.escape(str(p.get('param')))} = "
                     f"{html.escape(str(p.get('value')))} — {how}</li>")
    failed = [r for r in rows if r["status"] != "ok"]
    fail = ""
    if failed:
        items = "".join(f"<li>{html.escape(r['image'])} / {html.escape(r['method'])} / seed {r['seed']}: "
                        f"{html.escape(r['error'] or '')}</li>" for r in failed[:50])
        fail = f"<h3>Failed runs ({len(failed)})</h3><ul>{items}</ul>"
    return (f"<p class='meta'>{' · '.join(meta)}</p>"
            + (f"<p>Peers' parameters:</p><ul>{''.join(peers)}</ul>" if peers else "") + fail)


def build_report(outdir) -> Path:
    """Write ``outdir/report.html`` from a benchmark's output folder; returns its path.

    Examples
    --------
    >>> swcuts.report.build_report("bench")  # doctest: +SKIP
    PosixPath('bench/report.html')
    """
    outdir = Path(outdir)
    rows, traces, summary = load_results(outdir)
    if not rows:
        raise InputError(f"'{_show(outdir / 'results.csv')}' holds no run yet")
    methods = _methods(rows)
    colours = _colours(methods)
    missing = []
    if not (outdir / "traces.csv").is_file():
        missing.append("traces.csv")
    if not (outdir / "images").is_dir():
        missing.append("images/")
    body = [f"<h1>swcuts benchmark</h1>{_header(summary, rows)}",
            "<p class='note'>Missing from the folder: " + ", ".join(missing) + "</p>" if missing else "",
            "<h2>Scores against every annotator</h2>", _score_table(method_table(rows)),
            "<p class='note'>Mean ± standard deviation over runs. PRI: probabilistic Rand index; VoI: "
            "variation of information (nats, mean over annotators); covering: Arbelaez et al. 2011, pooled "
            "over annotators; boundary F with one-to-one matching at 0.75 % of the diagonal, per image and "
            "from the data set's summed counts. −log π gap: above the lowest −log π of any method or "
            "annotator on the image, under swcuts' default posterior; humans lower: share of runs whose "
            "image's median annotator has the lower −log π. <i>human</i>: each annotator against the "
            "others.</p>",
            "<h2>Energy over time</h2>", _energy_plot(rows, traces, colours),
            "<h2>Time to reach an energy</h2>", _reach_tables(rows, traces),
            "<h2>Score distributions</h2>", _box_plots(rows, colours),
            "<h2>Gallery</h2>", _gallery(outdir, rows, None)]
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>swcuts benchmark</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>")
    return atomic_write(outdir / "report.html", lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))


def compare_page(outdir, runs, image) -> Path:
    """``outdir/compare.html`` for ``swcuts compare``: one image, no ground truth.

    ``runs``: list of ``(name, labels, trace dict with "seconds" and
    "energy", energy, n_segments, steps)``; ``image``: the display image
    (float in [0, 1] or uint8). Returns the page's path.
    """
    outdir = Path(outdir)
    img = np.asarray(image)
    if img.dtype != np.uint8:
        img = np.round(np.clip(img, 0, 1) * 255).astype(np.uint8)
    colours = _colours([r[0] for r in runs])
    fig = _figure(8, 4)
    ax = fig.add_subplot()
    for name, _, trace, *_ in runs:
        t = np.maximum(np.asarray(trace["seconds"], dtype=float), 1e-3)
        ax.plot(t, np.minimum.accumulate(np.asarray(trace["energy"], dtype=float)), color=colours[name],
                lw=2, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("seconds of sampling")
    ax.set_ylabel("best −log π so far")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    best = min(r[3] for r in runs)
    table = ['<table><tr><th class="l">sampler</th><th>−log π</th><th>above the best</th><th>segments</th>'
             '<th>steps</th></tr>']
    cells = []
    for name, labels, _, energy, n_segments, steps in runs:
        table.append(f'<tr><td class="l">{html.escape(name)}</td><td>{energy:,.1f}</td>'
                     f'<td>{100 * (energy - best) / abs(best):.2f} %</td><td>{n_segments}</td>'
                     f'<td>{steps:,}</td></tr>')
        jpg = _overlay(outdir, "", labels, {"": img}, width=320)
        cells.append(f'<figure>{_img_tag(jpg, "image/jpeg", name)}<figcaption><b>{html.escape(name)}</b>, '
                     f'{n_segments} segments</figcaption></figure>')
    table.append("</table>")
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>swcuts compare</title>"
            f"<style>{CSS}</style></head><body><h1>swcuts compare</h1>{''.join(table)}{_png(fig)}"
            f"<div class='gallery'>{''.join(cells)}</div></body></html>")
    return atomic_write(outdir / "compare.html", lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
