"""The results of a benchmark, read back and summarised: the numbers of
its report (:mod:`swcuts.evaluation.report`), public so that scripts print
the same figures.

:func:`load_results` reads one or more output folders of
:func:`swcuts.benchmark`; :func:`method_table` gives the score table per
method, :func:`energy_at_times` the best −log π each sampler had reached
at fixed times, and :func:`time_to_reach` the time samplers need to reach
an energy.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from swcuts.io.errors import InputError, show_path

__all__ = ["load_results", "method_table", "energy_at_times", "time_to_reach", "ok_runs", "methods_of",
           "SCORES", "CHECK_TIMES", "COLOURS"]

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


def load_results(outdir, *more):
    """``(rows, traces, summary)`` of a benchmark's output folder (or several).

    ``rows``: one dict per run, numbers converted, ``folder`` set to the
    folder it came from (the last row of a run_id wins, and with several
    folders the later folder's); ``traces``: ``{run_id: {"step",
    "seconds", "energy", "labels"} arrays}`` of the runs that have a row;
    ``summary``: the first folder's ``summary.json`` (``{}`` if missing),
    with ``merged`` listing the other folders.

    Raises
    ------
    InputError
        If a folder has no readable ``results.csv``.
    """
    rows, traces = {}, {}
    for folder in (Path(outdir), *map(Path, more)):
        folder_rows, folder_traces = _load_folder(folder)
        for r in folder_rows:
            rows[r["run_id"]] = r
            if r["run_id"] in folder_traces:
                traces[r["run_id"]] = folder_traces[r["run_id"]]
            else:
                traces.pop(r["run_id"], None)
    try:
        summary = json.loads((Path(outdir) / "summary.json").read_text())
    except (OSError, ValueError):
        summary = {}
    if more:
        summary["merged"] = [str(m) for m in more]
    return list(rows.values()), traces, summary


def _load_folder(folder: Path):
    from swcuts.evaluation.benchmarking.store import read_rows

    path = folder / "results.csv"
    if not path.is_file():
        raise InputError(f"'{show_path(folder)}' holds no results.csv; give the output folder of 'swcuts benchmark'")
    rows = []
    for r in read_rows(path):
        r = dict(r, folder=folder)
        for k in _FLOAT:
            r[k] = _num(r.get(k), float)
        for k in _INT:
            r[k] = _num(r.get(k), int)
        rows.append(r)
    known = {r["run_id"] for r in rows}
    cols = {}
    if (folder / "traces.csv").is_file():
        with open(folder / "traces.csv", newline="", encoding="utf-8") as fh:
            for t in csv.DictReader(fh):
                if t.get("run_id") in known:
                    c = cols.setdefault(t["run_id"], {"step": [], "seconds": [], "energy": [], "labels": []})
                    for k in c:
                        c[k].append(float(t[k]))
    traces = {}
    for rid, c in cols.items():
        arrays = {k: np.asarray(v) for k, v in c.items()}
        # A run retried after a resume appends a second trace: keep the last.
        start = np.flatnonzero(arrays["step"] == 0)
        traces[rid] = {k: v[start[-1]:] for k, v in arrays.items()} if start.size else arrays
    return rows, traces


# ---------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------


def ok_runs(rows, kind=None):
    return [r for r in rows if r["status"] == "ok" and (kind is None or r["kind"] == kind)]


def methods_of(rows) -> list:
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
    ok = ok_runs(rows)
    best = {}
    humans = {}
    for r in ok:
        if np.isfinite(r["energy"]):
            best[r["image"]] = min(best.get(r["image"], math.inf), r["energy"])
            if r["kind"] == "annotator":
                humans.setdefault(r["image"], []).append(r["energy"])
    table = []
    for method in methods_of(rows):
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
    runs = [r for r in ok_runs(rows, "sampler") if r["run_id"] in traces]
    best = {}
    for r in runs:
        best[r["image"]] = min(best.get(r["image"], math.inf), float(np.min(traces[r["run_id"]]["energy"])))
    samplers = [m for m in methods_of(runs)]
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
    or below that level. A reference run that never went below its start
    has no time to compare with (any sampler "reaches" its start at 0 s):
    it is counted in ``reference_stuck`` and left out. Returns
    ``{sampler: {"median_speedup", "runs", "reached", "median_seconds",
    "reference_median_seconds", "reference_stuck", "never_seconds"}}``
    (speed-up = reference's time / sampler's time). A run that never
    reaches the level ranks below every run that does (speed-up 0, time
    inf); when at least half the runs never reach it, the median run is one
    of them and ``median_speedup`` is 0 and ``median_seconds`` inf: "never"
    (the mean of a 0 and a real speed-up would mean nothing).
    ``never_seconds``: ``(shortest, longest)`` time the runs that never
    reached it ran (their traces' last second: the bound of "never"), or
    None when every run reached it.
    """
    runs = [r for r in ok_runs(rows, "sampler") if r["run_id"] in traces]
    ref = {(r["image"], r["seed"]): traces[r["run_id"]] for r in runs if r["method"] == reference}
    out = {}
    for s in methods_of(runs):
        if s == reference:
            continue
        speedups, times, ref_times, never, stuck = [], [], [], [], 0
        for r in runs:
            key = (r["image"], r["seed"])
            if r["method"] != s or key not in ref:
                continue
            level = float(np.min(ref[key]["energy"]))
            if level >= ref[key]["energy"][0]:
                stuck += 1
                continue
            t_ref = max(_first_time_at_or_below(ref[key], level), 1e-6)
            trace = traces[r["run_id"]]
            t = _first_time_at_or_below(trace, level)
            times.append(t)
            ref_times.append(t_ref)
            speedups.append(t_ref / max(t, 1e-6) if np.isfinite(t) else 0.0)
            if not np.isfinite(t):
                never.append(float(trace["seconds"][-1]))
        if speedups or stuck:
            median_never = 2 * len(never) >= len(speedups) > 0
            out[s] = {"median_speedup": (0.0 if median_never else float(np.median(speedups))) if speedups
                      else math.nan,
                      "runs": len(speedups), "reached": len(speedups) - len(never),
                      "median_seconds": (math.inf if median_never else float(np.median(times))) if times
                      else math.nan,
                      "reference_median_seconds": float(np.median(ref_times)) if ref_times else math.nan,
                      "reference_stuck": stuck,
                      "never_seconds": (min(never), max(never)) if never else None}
    return out
