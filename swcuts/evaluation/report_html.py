"""The drawing half of :mod:`swcuts.evaluation.report`: plots, tables and overlays as HTML.

Plots use matplotlib's Agg canvas (no pyplot, no display) and are embedded
as base64 PNG; overlays as JPEGs; so a page is one self-contained file. The
gallery's overlays enlarge on a click with CSS alone (``:target``): no script.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np

from swcuts.io.figures import figure, png_bytes
from swcuts.evaluation.results import (
    CHECK_TIMES, COLOURS, SCORES, methods_of, ok_runs, energy_at_times, time_to_reach)

# ---------------------------------------------------------------------------
# Plots (matplotlib's Agg canvas: no pyplot, no display)
# ---------------------------------------------------------------------------


def png(fig) -> str:
    """``fig`` as an embedded PNG ``<img>`` tag."""
    return img_tag(png_bytes(fig), "image/png")


def img_tag(data: bytes, mime: str, alt: str = "", width=None) -> str:
    w = f' width="{width}"' if width else ""
    return (f'<img src="data:{mime};base64,{base64.b64encode(data).decode()}" alt="{html.escape(alt)}"{w}>')


def method_colours(methods) -> dict:
    return {m: COLOURS[i % len(COLOURS)] for i, m in enumerate(methods)}


def energy_plot(rows, traces, colours) -> str:
    """Gap of the best −log π so far to the image's best, median and IQR over runs."""
    runs = [r for r in ok_runs(rows, "sampler") if r["run_id"] in traces]
    if not runs:
        return "<p>No sampler traces.</p>"
    t_max = max(float(traces[r["run_id"]]["seconds"][-1]) for r in runs)
    t_min = max(min(float(traces[r["run_id"]]["seconds"][1]) if len(traces[r["run_id"]]["seconds"]) > 1
                    else t_max for r in runs), 1e-3)
    grid = np.geomspace(t_min, max(t_max, t_min * 1.01), 60)
    curves = energy_at_times(rows, traces, grid)
    fig = figure(8, 4.2)
    ax = fig.add_subplot()
    for s in methods_of(runs):
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
    return png(fig)


def box_plots(rows, colours) -> str:
    methods = methods_of(rows)
    fig = figure(11, 3.4)
    for i, (key, label, higher) in enumerate((s for s in SCORES if s[0] != "covering_best")):
        ax = fig.add_subplot(1, 4, i + 1)
        data = [[r[key] for r in ok_runs(rows) if r["method"] == m and np.isfinite(r[key])] for m in methods]
        keep = [j for j, d in enumerate(data) if d]
        box = ax.boxplot([data[j] for j in keep], patch_artist=True, widths=0.6)
        for patch, j in zip(box["boxes"], keep):
            patch.set_facecolor(colours[methods[j]])
            patch.set_alpha(0.5)
        ax.set_xticks(range(1, len(keep) + 1), [methods[j] for j in keep], rotation=35, ha="right",
                      fontsize=8)
        ax.set_title(f"{label} ({'higher' if higher else 'lower'} is better)", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    return png(fig)


def overlay(outdir: Path, image: str, labels_file: str, cache: dict, width=220):
    """JPEG bytes of the image with the segment boundaries drawn, or None.

    ``width``: of the JPEG in pixels (resized), or None for the image's own
    size, at most :data:`OVERLAY_MAX_WIDTH`."""
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
    if width is None:
        width = min(out.shape[1], OVERLAY_MAX_WIDTH)
    if width != out.shape[1]:
        scale = width / out.shape[1]
        out = resize(out, (max(1, round(out.shape[0] * scale)), width), order=1, anti_aliasing=True,
                     preserve_range=True).astype(np.uint8)
    return iio.imwrite("<bytes>", out, extension=".jpg", quality=90)


#: Widest overlay embedded in the gallery (its own size below that: enlarged, it shows every pixel).
OVERLAY_MAX_WIDTH = 1000


def gallery(rows) -> str:
    """Overlays of every method on the best, median and worst image of the
    first sampler (by covering). Each shows at :data:`CSS`'s thumbnail width;
    a click enlarges it to the window (the figure becomes the ``:target``),
    a second click or Back closes it."""
    samplers = [m for m in methods_of(rows) if any(r["kind"] == "sampler" for r in rows if r["method"] == m)]
    ref = samplers[0] if samplers else (methods_of(ok_runs(rows, "peer")) or [None])[0]
    if ref is None:
        return "<p>No runs to show.</p>"
    scored = sorted((r for r in ok_runs(rows) if r["method"] == ref and np.isfinite(r["covering"])),
                    key=lambda r: r["covering"])
    if not scored:
        return "<p>No scored runs to show.</p>"
    picks = {}
    for tag, pick in (("best", scored[-1]), ("median", scored[len(scored) // 2]), ("worst", scored[0])):
        if all(pick["image"] != p["image"] for p in picks.values()):  # each image once (few images)
            picks[tag] = pick
    methods = methods_of(rows)  # "human": the first annotator's segmentation
    cache = {}
    parts = []
    n = 0
    for tag, pick in picks.items():
        image = pick["image"]
        cells = []
        for m in methods:
            run = min((r for r in rows if r["method"] == m and r["image"] == image and r["labels_file"]),
                      key=lambda r: r["seed"] or 0, default=None)
            if run is None:
                continue
            jpg = overlay(run["folder"], image, run["labels_file"], cache, width=None)
            if jpg is None:
                continue
            name = "annotator 1" if m == "human" else m
            n += 1
            h, w = cache[image].shape[:2]  # --r: the aspect ratio the enlarged image keeps
            cells.append(f'<figure class="zoom" id="overlay-{n}"><a href="#overlay-{n}" title="enlarge" '
                         f'style="--r:{w / h:.4f}">'
                         f'{img_tag(jpg, "image/jpeg", f"{name} on {image}")}</a>'
                         f'<a class="close" href="#gallery-{tag}" title="close"></a>'
                         f'<figcaption><b>{html.escape(name)}</b> on {html.escape(image)}<br>'
                         f'covering {fmt(run["covering"])}, {run["n_segments"]} segments</figcaption></figure>')
        if cells:
            parts.append(f'<h3 id="gallery-{tag}">{tag.capitalize()} image for {html.escape(ref)}: '
                         f'{html.escape(image)} (covering {pick["covering"]:.3f})</h3>'
                         f'<div class="gallery">{"".join(cells)}</div>')
    if not parts:
        return "<p>The images or label files are missing: no overlays.</p>"
    return ("<p class='note'>Segment boundaries in red. Click an image to enlarge it; click again "
            "(or go back) to close it.</p>" + "".join(parts))


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
figure.zoom{width:376px}figure.zoom img{width:100%;height:auto;display:block;cursor:zoom-in}
figure.zoom .close{display:none}
figure.zoom:target{position:fixed;inset:0;z-index:10;width:auto;margin:0;background:rgba(0,0,0,.88);
color:#fff;display:flex;flex-direction:column;align-items:center;justify-content:center;font-size:1em}
figure.zoom:target img{width:min(96vw,calc(86vh * var(--r)));height:auto;image-rendering:pixelated}
figure.zoom:target .close{display:block;position:absolute;inset:0;cursor:zoom-out}
"""


def fmt(v, digits=3):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    return f"{v:.{digits}f}"


def _sig(v, digits=2) -> str:
    """``v`` to ``digits`` significant digits, without an exponent: 0.0049, 1, 120."""
    return f"{float(f'{v:.{digits}g}'):g}" if abs(v) < 1e5 else f"{v:,.0f}"


def _seconds(v) -> str:
    """Seconds for a table: two decimals, or two significant digits below 0.1 s (not "0.00")."""
    if v is None or not np.isfinite(v):
        return "–"
    return _sig(v) if abs(v) < 0.1 else f"{v:.2f}"


def _times(v) -> str:
    """A speed-up factor: 286×, 1.5×, 0.013× (a small factor keeps its digits, not "0.0×")."""
    if v is None or not np.isfinite(v):
        return "–"
    return f"{v:.0f}×" if v >= 100 else f"{v:.1f}×" if v >= 1 else f"{_sig(v)}×"


def score_table(table) -> str:
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
            text = fmt(mean) + (f" ± {fmt(v['std'])}" if isinstance(v, dict) and v["n"] > 1 else "")
            bold = e["kind"] != "annotator" and k in best and mean == best[k]
            cells.append(f"<td>{'<b>' + text + '</b>' if bold else text}</td>")
        runs = f"{e['runs']}" + (f" ({e['failed']} failed)" if e["failed"] else "")
        gap = e["energy_gap"]
        lines.append(f'<tr class="{e["kind"]}"><td class="l">{html.escape(e["method"])}</td><td>{runs}</td>'
                     f'{"".join(cells)}<td>{fmt(e["n_segments"]["mean"], 1)}</td>'
                     f'<td>{fmt(e["seconds"]["mean"], 2)}</td><td>{fmt(gap["mean"], 2)} %</td>'
                     f'<td>{fmt(e["humans_lower"], 2)}</td></tr>')
    lines.append("</table>")
    return "".join(lines)


def reach_tables(rows, traces) -> str:
    samplers = methods_of([r for r in ok_runs(rows, "sampler") if r["run_id"] in traces])
    if not samplers:
        return "<p>No sampler traces.</p>"
    t_max = max(float(traces[r["run_id"]]["seconds"][-1]) for r in ok_runs(rows, "sampler") if r["run_id"] in traces)
    times = [t for t in CHECK_TIMES if t <= t_max * 1.0001] or [t_max]
    at = energy_at_times(rows, traces, times)
    head = "".join(f"<th>{t:g} s</th>" for t in times)
    lines = [f'<table><tr><th class="l">sampler</th>{head}</tr>']
    for s in samplers:
        cells = "".join(f"<td>{fmt(at[s][t]['median'], 2)} % ({at[s][t]['lowest_on']})</td>" for t in times)
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
            if v["runs"] and v["median_speedup"] == 0:  # the median run never got there
                lo, hi = v["never_seconds"]
                bound = f"{_sig(lo)} s" if _sig(lo) == _sig(hi) else f"{_sig(lo)}–{_sig(hi)} s"
                seconds, speedup = f"&gt; {bound}", f"never within its budget of {bound}"
            else:
                seconds, speedup = _seconds(v["median_seconds"]), _times(v["median_speedup"])
            lines.append(f'<tr><td class="l">{html.escape(s)}</td><td>{v["reached"]} of {v["runs"]}</td>'
                         f'<td>{seconds}</td><td>{_seconds(v["reference_median_seconds"])}</td>'
                         f'<td>{speedup}</td></tr>')
        lines.append("</table>")
        stuck = max(v["reference_stuck"] for v in reach.values())
        if stuck:
            lines.append(f"<p class='note'>{stuck} run(s) of {html.escape(reference)} never went below "
                         f"their start and are left out of this table.</p>")
    return "".join(lines)


def header(summary, rows) -> str:
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
    if s.get("merged"):
        meta.append("merged with " + ", ".join(f"<code>{html.escape(m)}</code>" for m in s["merged"]))
    peers = []
    for name, p in (s.get("peers") or {}).items():
        how = (f"tuned on <code>{html.escape(str(p['tuned_on']))}</code> ({p.get('n_images', '?')} images, "
               f"best mean covering {fmt(p.get('tuned_covering'))})" if p.get("tuned_on") else "default, not tuned")
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




def energy_table(rows) -> str:
    """−log π of every method per image, relative to the image's median
    annotator: a posterior right for the images ranks the humans'
    segmentations at least as well as any method's (no negative cells)."""
    ok = ok_runs(rows)
    humans = {}
    for r in ok:
        if r["kind"] == "annotator" and np.isfinite(r["energy"]):
            humans.setdefault(r["image"], []).append(r["energy"])
    if not humans:
        return "<p>No annotator rows: run the benchmark with the annotators to see this table.</p>"
    methods = [m for m in methods_of(ok) if m != "human"]
    head = "".join(f"<th>{html.escape(m)}</th>" for m in methods)
    lines = [f'<table><tr><th class="l">image</th><th>median annotator −log π</th>{head}</tr>']
    for image in sorted(humans):
        ref = float(np.median(humans[image]))
        cells = []
        for m in methods:
            vals = [r["energy"] for r in ok if r["method"] == m and r["image"] == image and np.isfinite(r["energy"])]
            if not vals:
                cells.append("<td>–</td>")
                continue
            gap = 100 * (float(np.median(vals)) - ref) / abs(ref)
            style = ' style="color:#b00"' if gap < 0 else ""
            cells.append(f"<td{style}>{gap:+.1f} %</td>")
        lines.append(f'<tr><td class="l">{html.escape(image)}</td><td>{ref:,.0f}</td>{"".join(cells)}</tr>')
    lines.append("</table>")
    return "".join(lines)
