"""Two-frame motion: swcuts against OpenCV's DIS and Farneback (issue 17).

Usage: python benchmarks/motion.py [--methods dis,farneback,swcuts] [--pairs 6]
                                   [--cases synthetic,nonrigid,rectangles,middlebury,stereo]
                                   [--weights tau=0.05,alpha=0.2]
                                   [--middlebury DIR] [--csv FILE]

Cases (frame 2 is the reference everywhere, ``frame2(x) = frame1(x - flow)``):

* ``synthetic``: ``--pairs`` layered pairs of
  :func:`swcuts.evaluation.synthetic.motion.layered_pair`, 160 x 120, 2 objects, speeds
  up to 3 px (continuous, sub-pixel), seeds 0, 1, ...; odd seeds in colour;
* ``nonrigid``: ``--pairs`` pairs of
  :func:`swcuts.evaluation.synthetic.nonrigid.nonrigid_pair`, same size, objects and
  seeds, but every layer moves by an affine map (objects rotating by 2-6 degrees or
  deforming by up to 3 %, the background by up to 1.5 %): the rigid set does not
  reward a method for assuming one translation per object here;
* ``rectangles``: :func:`swcuts.evaluation.synthetic.motion.rectangles_pair`, the
  paper's aperture-problem case;
* ``stereo``: rectified pairs with ground-truth disparity
  (:func:`swcuts.evaluation.motion_datasets.load_stereo`; fetch them with
  ``python benchmarks/stereo_data.py``): frame 2 = left, frame 1 = right,
  truth = (disparity, 0); swcuts runs with ``vertical=False``, the peers
  as for any pair;
* ``middlebury``: Dimetrodon, Grove3, Urban3, Venus
  (:func:`swcuts.evaluation.motion_datasets.load_middlebury`: frame 1 = frame11,
  frame 2 = frame10, truth = -flow10), RGB.

A method is a callable ``method(frame1, frame2) -> (flow, objects)``; the
peers' objects come from k-means on their flow
(:func:`swcuts.evaluation.motion_peers.flow_objects`). swcuts is included when
``swcuts.segment_motion`` exists (called with ``seed=0``).

``--weights`` passes motion weights to swcuts (e.g. ``tau=0`` for one
translation per object).

Printed: per case, EPE (mean end-point error over the pixels with known
truth, occluded ones included), object VoI (synthetic only), seconds, and
peak memory (the largest resident-set growth during the call, sampled
every 5 ms from /proc, so it includes OpenCV's and numba's buffers, but
misses memory the process already held; and the tracemalloc peak of Python
and numpy allocations during the call); then a
summary per method with the issue's targets beside it.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHAPE = (120, 160)
TARGETS = {
    "synthetic_epe": "<= 1/2 of DIS",
    "voi": "<= 0.3",
    "rectangles": "solved",
    "synthetic_seconds": "<= 20 s",
    "middlebury_epe": "< DIS on each",
    "middlebury_seconds": "<= 60 s",
}


# ---------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------


def _peer(name):
    from swcuts.evaluation.motion_peers import run_motion_peer

    def method(frame1, frame2):
        return run_motion_peer(name, frame1, frame2)

    method.__name__ = name
    return method


def _swcuts_method(weights=None):
    import swcuts

    weights = dict(weights or {})

    def method(frame1, frame2):
        result = swcuts.segment_motion(frame1, frame2, seed=0, **weights)
        method.phases = getattr(result, "phases", None)
        return result.dense_flow(), result.objects

    def stereo(frame1, frame2):
        result = swcuts.segment_motion(frame1, frame2, seed=0, vertical=False, **weights)
        method.phases = getattr(result, "phases", None)
        return result.dense_flow(), result.objects

    method.stereo = stereo
    method.phases = None
    return method


def default_methods(weights=None) -> dict:
    """``{name: method}``: DIS, Farneback and, if it exists, swcuts (with
    the motion ``weights``)."""
    import swcuts

    methods = {"dis": _peer("dis"), "farneback": _peer("farneback")}
    if hasattr(swcuts, "segment_motion"):
        methods["swcuts"] = _swcuts_method(weights)
    return methods


# ---------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------


def cases(kinds=("synthetic", "nonrigid", "rectangles", "middlebury"), n_pairs=6, middlebury_root=None):
    """Yield ``(kind, name, MotionPair)``."""
    from swcuts.evaluation.synthetic.motion import layered_pair, rectangles_pair
    from swcuts.evaluation.synthetic.nonrigid import nonrigid_pair

    if "synthetic" in kinds:
        for seed in range(n_pairs):
            colour = seed % 2 == 1
            yield "synthetic", f"layered-{seed}{'-rgb' if colour else ''}", layered_pair(
                SHAPE, n_objects=2, max_speed=3.0, seed=seed, colour=colour)
    if "nonrigid" in kinds:
        for seed in range(n_pairs):
            colour = seed % 2 == 1
            yield "nonrigid", f"affine-{seed}{'-rgb' if colour else ''}", nonrigid_pair(
                SHAPE, n_objects=2, max_speed=3.0, seed=seed, colour=colour)
    if "rectangles" in kinds:
        yield "rectangles", "rectangles", rectangles_pair(SHAPE, seed=0)
    if "middlebury" in kinds:
        from swcuts.evaluation.motion_datasets import MIDDLEBURY_SEQUENCES, load_middlebury

        for name in MIDDLEBURY_SEQUENCES:
            try:
                yield "middlebury", name, load_middlebury(name, middlebury_root)
            except FileNotFoundError as exc:
                print(f"skipping {name}: {exc}", file=sys.stderr)
    if "stereo" in kinds:
        from swcuts.evaluation.motion_datasets import STEREO_PAIRS, load_stereo

        for name in STEREO_PAIRS:
            try:
                yield "stereo", name, load_stereo(name)
            except FileNotFoundError as exc:
                print(f"skipping stereo {name}: {exc}", file=sys.stderr)


# ---------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _PeakRSS:
    """Largest resident-set growth while the ``with`` block runs (bytes)."""

    def __enter__(self):
        self.base = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())
        self.growth = self.peak - self.base
        return False


def rectangles_solved(flow, objects, pair, *, purity=0.9, centre_tol=0.5, half=2):
    """Is the aperture problem solved? ``(solved, detail)``.

    Each rectangle must be one object: its most common predicted label
    covers >= ``purity`` of it, and that label differs from the other
    rectangle's and from the background's; and the flow at its centre (the
    ``(2 half + 1)^2`` pixels there) is within ``centre_tol`` px of the truth.
    """
    truth = pair.objects
    modes, worst = [], 0.0
    ok = True
    for k in range(int(truth.max()) + 1):
        lab = objects[truth == k]
        values, counts = np.unique(lab, return_counts=True)
        modes.append(values[counts.argmax()])
        if k > 0 and counts.max() < purity * lab.size:
            ok = False
        if k > 0:
            ys, xs = np.nonzero(truth == k)
            cy, cx = int(round(ys.mean())), int(round(xs.mean()))
            win = np.s_[cy - half:cy + half + 1, cx - half:cx + half + 1]
            f = np.where(np.isfinite(flow[win]), flow[win], 0.0)
            err = np.hypot(*(f - pair.flow[win]).reshape(-1, 2).T).max()
            worst = max(worst, float(err))
    if len(set(modes)) < len(modes) or worst > centre_tol:
        ok = False
    return ok, f"centre EPE max {worst:.2f}"


def run(methods: dict, kinds, n_pairs, middlebury_root=None, trace=True) -> list:
    """Run every method on every case; return rows (dicts).

    With ``trace``, :mod:`tracemalloc` records the peak of Python and numpy
    allocations during each call (``traced_mb``; not OpenCV's own buffers)
    beside the resident-set growth (``peak_mb``); it adds a little time to
    code that allocates many small Python objects.
    """
    from swcuts.evaluation.motion_metrics import endpoint_error, object_voi

    rows = []
    for kind, name, pair in cases(kinds, n_pairs, middlebury_root):
        for mname, method in methods.items():
            if trace:
                tracemalloc.start()
            with _PeakRSS() as mem:
                t0 = time.perf_counter()
                try:
                    call = getattr(method, "stereo", method) if kind == "stereo" else method
                    flow, objects = call(pair.frame1, pair.frame2)
                    error = None
                except Exception as exc:  # a failing method is a row, not a crash
                    flow = objects = None
                    error = f"{type(exc).__name__}: {exc}"
                seconds = time.perf_counter() - t0
            traced = math.nan
            if trace:
                traced = tracemalloc.get_traced_memory()[1] / 2 ** 20
                tracemalloc.stop()
            row = {"kind": kind, "case": name, "method": mname, "seconds": seconds,
                   "peak_mb": mem.growth / 2 ** 20, "traced_mb": traced, "epe": math.nan, "voi": math.nan, "solved": "",
                   "size": f"{pair.frame2.shape[1]}x{pair.frame2.shape[0]}", "error": error or "",
                   "phases": dict(getattr(method, "phases", None) or {})}
            if flow is not None:
                flow = np.asarray(flow, dtype=np.float64)
                row["epe"] = endpoint_error(flow, pair.flow)
                if pair.objects is not None and objects is not None:
                    row["voi"] = object_voi(np.asarray(objects), pair.objects)
                if kind == "rectangles" and objects is not None:
                    solved, detail = rectangles_solved(flow, np.asarray(objects), pair)
                    row["solved"] = ("yes, " if solved else "no, ") + detail
            rows.append(row)
            print(f"  {name:16s} {mname:10s} EPE {row['epe']:.3f}  VoI {row['voi']:.3f}  "
                  f"{seconds:6.2f} s  {row['peak_mb']:6.1f} MB rss {row['traced_mb']:6.1f} MB traced "
                  f"{row['solved']} {row['error']}",
                  file=sys.stderr, flush=True)
    return rows


# ---------------------------------------------------------------------------
# printing
# ---------------------------------------------------------------------------


def _f(x, fmt=".3f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _verdict(ok, *values):
    """"yes"/"no", or "-" when a value is missing (NaN)."""
    if any(isinstance(v, float) and math.isnan(v) for v in values):
        return "-"
    return "yes" if ok else "no"


def print_tables(rows, methods):
    print("\nPer pair (EPE in px over pixels with known truth; VoI in nats; rss MB = resident-set growth,"
          " traced MB = tracemalloc peak)")
    print(f"{'case':18s} {'size':8s} {'method':10s} {'EPE':>7s} {'VoI':>7s} {'s':>7s} {'rss MB':>7s} "
          f"{'traced MB':>9s}  note")
    for r in rows:
        print(f"{r['case']:18s} {r['size']:8s} {r['method']:10s} {_f(r['epe']):>7s} {_f(r['voi']):>7s} "
              f"{_f(r['seconds'], '.2f'):>7s} {_f(r['peak_mb'], '.1f'):>7s} {_f(r['traced_mb'], '.1f'):>9s}  "
              f"{r['solved']}{r['error']}")

    def sel(kind, method, key):
        return [r[key] for r in rows if r["kind"] == kind and r["method"] == method]

    def mean(v):
        v = [x for x in v if not math.isnan(x)]
        return float(np.mean(v)) if v else math.nan

    dis_syn = mean(sel("synthetic", "dis", "epe"))
    dis_nr = mean(sel("nonrigid", "dis", "epe"))
    mb_names = list(dict.fromkeys(r["case"] for r in rows if r["kind"] == "middlebury"))
    dis_mb = {n: next((r["epe"] for r in rows if r["case"] == n and r["method"] == "dis"), math.nan)
              for n in mb_names}

    print("\nSummary (targets of issue 17 in brackets; 'vs DIS' targets apply to swcuts)")
    print(f"{'method':10s} {'syn EPE':>8s} {'[<=DIS/2]':>9s} {'syn VoI':>8s} {'[<=0.3]':>7s} "
          f"{'rectangles':>12s} {'syn s':>6s} {'[<=20]':>6s} {'MB EPE ' + '/'.join(n[:4] for n in mb_names):>30s} "
          f"{'[<DIS each]':>11s} {'MB s':>6s} {'[<=60]':>6s} {'peak MB':>8s}")
    for m in methods:
        syn_epe = mean(sel("synthetic", m, "epe"))
        syn_voi = mean(sel("synthetic", m, "voi"))
        syn_s = max(sel("synthetic", m, "seconds"), default=math.nan)
        rect = sel("rectangles", m, "solved")
        rect = rect[0].split(",")[0] if rect else "-"
        mb = {r["case"]: r["epe"] for r in rows if r["kind"] == "middlebury" and r["method"] == m}
        mb_s = max(sel("middlebury", m, "seconds"), default=math.nan)
        peak = max((max(r["peak_mb"], r["traced_mb"] if not math.isnan(r["traced_mb"]) else 0.0)
                    for r in rows if r["method"] == m), default=math.nan)
        ok_syn = _verdict(syn_epe <= dis_syn / 2, syn_epe, dis_syn) if m != "dis" else "-"
        ok_voi = _verdict(syn_voi <= 0.3, syn_voi)
        ok_s = _verdict(syn_s <= 20, syn_s)
        ok_mb = ("yes" if all(mb[n] < dis_mb[n] for n in mb) else "no") if mb and m != "dis" else "-"
        ok_mbs = _verdict(mb_s <= 60, mb_s)
        mb_txt = "/".join(_f(mb.get(n, math.nan), ".2f") for n in mb_names)
        print(f"{m:10s} {_f(syn_epe):>8s} {ok_syn:>9s} {_f(syn_voi):>8s} {ok_voi:>7s} "
              f"{rect:>12s} {_f(syn_s, '.2f'):>6s} {ok_s:>6s} {mb_txt:>30s} {ok_mb:>11s} "
              f"{_f(mb_s, '.2f'):>6s} {ok_mbs:>6s} {_f(peak, '.0f'):>8s}")
    if not math.isnan(dis_syn):
        print(f"\nDIS reference: synthetic EPE {dis_syn:.3f} (so the swcuts target is <= {dis_syn / 2:.3f})")
    if any(r["kind"] == "nonrigid" for r in rows):
        print(f"\nNon-rigid synthetic set (affine layers): mean EPE [target <= DIS/2 = {_f(dis_nr / 2)}], "
              "mean object VoI [target <= 0.3]")
        for m in methods:
            nr_epe, nr_voi = mean(sel("nonrigid", m, "epe")), mean(sel("nonrigid", m, "voi"))
            ok = _verdict(nr_epe <= dis_nr / 2, nr_epe, dis_nr) if m != "dis" else "-"
            print(f"  {m:10s} EPE {_f(nr_epe)} [{ok}]  VoI {_f(nr_voi)} [{_verdict(nr_voi <= 0.3, nr_voi)}]")
    if mb_names:
        print("DIS reference: Middlebury EPE " + ", ".join(f"{n} {_f(dis_mb[n])}" for n in mb_names))
    print("syn s / MB s: the slowest pair; peak MB: the largest of rss and traced MB over all pairs "
          "(640x480 pairs: Grove3, Urban3).")
    print_phases(rows)


PHASES = ("regions", "data terms", "level 0", "level 2", "refining")


def print_phases(rows):
    """Seconds per phase of every swcuts call (``MotionSegmentation.phases``),
    with the issue-36 target of 10 s per 640x480 pair beside the total."""
    timed = [r for r in rows if r.get("phases")]
    if not timed:
        return
    print(f"\nswcuts phases (s; 'data terms', 'level 0' and 'level 2' are inside sampling), "
          f"1-min load average now {os.getloadavg()[0]:.1f}")
    print(f"{'case':18s} {'size':8s} " + " ".join(f"{p:>10s}" for p in PHASES)
          + f" {'total':>7s} {'[<=10 s at 640x480]':>20s}")
    for r in timed:
        ph = r["phases"]
        big = r["size"] == "640x480"
        verdict = ("yes" if r["seconds"] <= 10 else "no") if big else "-"
        print(f"{r['case']:18s} {r['size']:8s} " + " ".join(f"{ph.get(p, 0.0):10.2f}" for p in PHASES)
              + f" {r['seconds']:7.2f} {verdict:>20s}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=None, help="comma-separated subset of dis,farneback,swcuts")
    ap.add_argument("--cases", default="synthetic,nonrigid,rectangles,middlebury,stereo")
    ap.add_argument("--weights", default="", help="motion weights of swcuts, e.g. tau=0.05,alpha=0.2")
    ap.add_argument("--pairs", type=int, default=6, help="layered synthetic pairs")
    ap.add_argument("--middlebury", default=None, help="folder of the Middlebury sequences")
    ap.add_argument("--csv", default=None, help="also write the per-pair rows here")
    ap.add_argument("--no-tracemalloc", action="store_true", help="time without tracemalloc running")
    args = ap.parse_args(argv)
    weights = {}
    for item in filter(None, (t.strip() for t in args.weights.split(","))):
        name, _, value = item.partition("=")
        weights[name.strip()] = float(value)
    methods = default_methods(weights)
    if args.methods:
        wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in methods]
        if unknown:
            ap.error(f"unknown or unavailable method(s): {', '.join(unknown)}; available: {', '.join(methods)}")
        methods = {m: methods[m] for m in wanted}
    kinds = tuple(k.strip() for k in args.cases.split(","))
    rows = run(methods, kinds, args.pairs, args.middlebury, trace=not args.no_tracemalloc)
    print_tables(rows, methods)
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
