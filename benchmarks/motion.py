"""Two-frame motion: swcuts against OpenCV's DIS and Farneback (issue 17).

Usage: python benchmarks/motion.py [--methods dis,farneback,swcuts] [--pairs 6]
                                   [--cases synthetic,nonrigid,rectangles,middlebury,stereo,sintel]
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
* ``sintel``: six MPI-Sintel training pairs, 1024x436 (alley_1, cave_2 and
  market_5 in the clean and the final pass; motion up to 10, 46 and 132 px;
  fetch them with ``python benchmarks/sintel_data.py``), held out: never used
  to set a default (not in the default ``--cases``);
* ``middlebury``: Dimetrodon, Grove3, Urban3, Venus
  (:func:`swcuts.evaluation.motion_datasets.load_middlebury`: frame 1 = frame11,
  frame 2 = frame10, truth = -flow10), RGB.

A method is a callable ``method(frame1, frame2) -> (flow, objects)``; the
peers' objects come from k-means on their flow
(:func:`swcuts.evaluation.motion_peers.flow_objects`). swcuts is included when
``swcuts.segment_motion`` exists (called with ``seed=0``). ``dis+vr`` is DIS
followed by OpenCV's variational refinement at swcuts' iterations, two
components of swcuts' own refinement (:func:`_dis_vr_method`): the baseline
that says how much of swcuts' lead they give alone. ``--refine-set
BOTTOM_UP=False`` (any constant of :mod:`swcuts.motion.flow_refine`, repeatable)
runs the ablations of docs/algorithms/motion.md.

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
import resource
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

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


def _swcuts_method(weights=None, seed=0):
    import swcuts
    from swcuts.inference.budget import Budget

    weights = dict(weights or {})

    # The phases are timed in CPU seconds of this process (a Budget on
    # time.process_time, no time limit): on the shared machine wall time
    # depends on the load.
    def method(frame1, frame2):
        result = swcuts.segment_motion(frame1, frame2, seed=seed, **weights,
                                       time_budget=Budget(None, clock=time.process_time))
        method.phases = getattr(result, "phases", None)
        return result.dense_flow(), result.objects

    def stereo(frame1, frame2):
        result = swcuts.segment_motion(frame1, frame2, seed=seed, vertical=False, **weights,
                                       time_budget=Budget(None, clock=time.process_time))
        method.phases = getattr(result, "phases", None)
        return result.dense_flow(), result.objects

    method.stereo = stereo
    method.phases = None
    return method


def _dis_vr_method():
    """A stronger baseline than DIS's preset: DIS (medium) followed by the same
    OpenCV variational refinement, at the same iterations, that swcuts'
    refinement runs (:data:`swcuts.motion.flow_refine.VARIATIONAL_ITERATIONS`),
    on the frames as swcuts scales them. On a stereo pair (``method.stereo``)
    v is set to 0, as swcuts' ``vertical=False`` does. Both components are
    part of swcuts' refinement (DIS as one candidate per region): this row
    says how much of swcuts' lead over DIS they give alone."""
    from swcuts.motion.flow_refine import _dis, _variational
    from swcuts.motion.frames import _as_frames
    from swcuts.evaluation.motion_peers import flow_objects

    def method(frame1, frame2, vertical=True):
        f1, f2 = _as_frames(frame1, frame2, -1)
        flow = _dis(f1, f2)
        if not vertical:
            flow[..., 1] = 0.0
        flow = _variational(f1, f2, flow)
        if not vertical:
            flow[..., 1] = 0.0
        flow = np.asarray(flow, np.float64)
        return flow, flow_objects(flow)

    method.stereo = lambda frame1, frame2: method(frame1, frame2, vertical=False)
    return method


def default_methods(weights=None, seed=0) -> dict:
    """``{name: method}``: DIS, Farneback, DIS followed by the variational
    refinement (``dis+vr``) and, if it exists, swcuts (with the motion
    ``weights``)."""
    import swcuts

    methods = {"dis": _peer("dis"), "farneback": _peer("farneback"), "dis+vr": _dis_vr_method()}
    if hasattr(swcuts, "segment_motion"):
        methods["swcuts"] = _swcuts_method(weights, seed)
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
    if "sintel" in kinds:
        from sintel_data import load_sintel, pair_names

        for name in pair_names():
            try:
                yield "sintel", name, load_sintel(name)
            except FileNotFoundError as exc:
                print(f"skipping sintel {name}: {exc}", file=sys.stderr)
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
                t0, c0 = time.perf_counter(), time.process_time()
                try:
                    call = getattr(method, "stereo", method) if kind == "stereo" else method
                    flow, objects = call(pair.frame1, pair.frame2)
                    error = None
                except Exception as exc:  # a failing method is a row, not a crash
                    flow = objects = None
                    error = f"{type(exc).__name__}: {exc}"
                seconds = time.perf_counter() - t0
                cpu = time.process_time() - c0
            traced = math.nan
            if trace:
                traced = tracemalloc.get_traced_memory()[1] / 2 ** 20
                tracemalloc.stop()
            row = {"kind": kind, "case": name, "method": mname, "seconds": seconds, "cpu": cpu,
                   "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
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
                  f"{seconds:6.2f} s ({cpu:6.2f} CPU s)  {row['peak_mb']:6.1f} MB rss {row['traced_mb']:6.1f} MB traced "
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
    """CPU seconds per phase of every swcuts call (``MotionSegmentation.phases``
    timed on :func:`time.process_time`), with the issue-36 target of 10 s per
    640x480 pair beside the total, the wall seconds and the load beside it,
    and the EPE beside DIS's."""
    timed = [r for r in rows if r.get("phases")]
    if not timed:
        return
    dis = {r["case"]: r["epe"] for r in rows if r["method"] == "dis"}
    print(f"\nswcuts phases (CPU s of this process; 'data terms', 'level 0' and 'level 2' are inside "
          f"sampling), 1-min load average now {os.getloadavg()[0]:.1f}")
    print(f"{'case':18s} {'size':8s} " + " ".join(f"{p:>10s}" for p in PHASES)
          + f" {'CPU s':>7s} {'[<=10 s at 640x480]':>20s} {'wall s':>7s} {'EPE':>6s} {'DIS':>6s}"
          f" {'maxrss MB':>9s}")
    for r in timed:
        ph = r["phases"]
        big = r["size"] == "640x480"
        verdict = ("yes" if r["cpu"] <= 10 else "no") if big else "-"
        print(f"{r['case']:18s} {r['size']:8s} " + " ".join(f"{ph.get(p, 0.0):10.2f}" for p in PHASES)
              + f" {r['cpu']:7.2f} {verdict:>20s} {r['seconds']:7.2f} {_f(r['epe']):>6s}"
              f" {_f(dis.get(r['case'], math.nan)):>6s} {r['maxrss_mb']:9.0f}")
    print("maxrss MB: the peak resident set of the benchmark process so far (ru_maxrss), "
          "imports and earlier pairs included.")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=None, help="comma-separated subset of dis,farneback,dis+vr,swcuts")
    ap.add_argument("--cases", default="synthetic,nonrigid,rectangles,middlebury,stereo")
    ap.add_argument("--weights", default="", help="motion weights of swcuts, e.g. tau=0.05,alpha=0.2")
    ap.add_argument("--pairs", type=int, default=6, help="layered synthetic pairs")
    ap.add_argument("--middlebury", default=None, help="folder of the Middlebury sequences")
    ap.add_argument("--csv", default=None, help="also write the per-pair rows here")
    ap.add_argument("--no-tracemalloc", action="store_true", help="time without tracemalloc running")
    ap.add_argument("--seed", type=int, default=0, help="seed of swcuts (default 0)")
    ap.add_argument("--refine-set", action="append", default=[], metavar="NAME=VALUE",
                    help="set a constant of swcuts.motion.flow_refine (a Python literal), e.g. "
                         "BOTTOM_UP=False or 'VARIATIONAL_STARTS=((4, 2),)'")
    args = ap.parse_args(argv)
    if args.refine_set:
        import ast

        import swcuts.motion.flow_refine as flow_refine

        for item in args.refine_set:
            name, _, value = item.partition("=")
            if not hasattr(flow_refine, name):
                ap.error(f"swcuts.motion.flow_refine has no constant {name!r}")
            setattr(flow_refine, name, ast.literal_eval(value))
    weights = {}
    for item in filter(None, (t.strip() for t in args.weights.split(","))):
        name, _, value = item.partition("=")
        weights[name.strip()] = float(value)
    methods = default_methods(weights, args.seed)
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
