"""Where the time of ``swcuts segment`` goes, phase by phase, from 0.15 to 12 megapixels.

One BSDS500 train photo (481x321) is upscaled with ``cv2.INTER_CUBIC`` to
about 0.15, 1, 4 and 12 megapixels (and 4000x2667, the target of issue 37)
and saved as a JPEG, as a phone would; each size then runs the default
``swcuts segment PHOTO -o OUT --seed 0`` once, in a process of its own
(the numba cache warm: a small run first), which records the seconds of
every phase:

``reading`` (the JPEG), ``preparing`` (checks, scaling and CIELAB features),
``working`` (the reduced working image, when the run makes one), ``atoms``,
``graph``, ``edges`` (edge probabilities q_ij), ``model`` (posterior set-up:
the statistics of every atom, window histograms, boundary weights),
``compiling`` (loading the kernel), ``sampling``, ``full size`` (carrying
the labels back to the full image, when the run was reduced) and
``writing`` (rendering and writing the seven output files), ``other``
(starting Python, the imports, the exit), the wall time of the process
and its peak resident memory.

The table gives seconds per phase, and the growth per pixel: the seconds
per megapixel of each size divided by those at 1 MP (1.0: the cost grows
in proportion to the pixels; below 1: slower than the pixels).

Run: ``python benchmarks/phases.py [--sizes 0.15,1,4,12,4000x2667] [--photo PATH]``
(``--photo``: a photo of your own, resized to each size). Timings on a
shared machine are noisy: the 1-minute load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/work/shared/data/bsds500-train/images")
DEFAULT_PHOTO = DATA / "35091.jpg"
#: Phases in the order of a run (those a run did not have are shown as -).
PHASES = ("starting", "reading", "preparing", "working", "atoms", "graph", "edges", "model", "compiling",
          "sampling", "full size", "writing")
TARGET = {"4000x2667": (10.0, 3.0)}  # wall seconds, peak GB
#: Issue 37: "the cost per pixel flat from 1 to 12 MP": the wall seconds per
#: megapixel at the largest size of about 12 MP over those at about 1 MP
#: (1.0: flat; below 1: the cost grows slower than the pixels).
TARGET_PER_PIXEL = 1.0

_CHILD = r"""
import json, resource, sys, time
t_start = time.perf_counter()
from swcuts.inference.budget import mark_process_start
mark_process_start(t_start)
import numpy as np
from swcuts.cli.app import output_files
from swcuts.cli.common import _load_checked
from swcuts.io.output_set import write_output_set
from swcuts.segmentation.segment import segment
path, out = sys.argv[1], sys.argv[2]
work = {} if sys.argv[3] == "default" else {"work_pixels": None if sys.argv[3] == "none" else int(sys.argv[3])}
t = time.perf_counter()
image, axis = _load_checked(path)
reading = time.perf_counter() - t
seg = segment(image, channel_axis=axis, seed=0, **work)
t = time.perf_counter()
files = output_files(seg, {"image": path})
write_output_set(out, files)
writing = time.perf_counter() - t
phases = {"reading": reading, **seg.phase_seconds, "writing": writing}
print(json.dumps(dict(phases=phases, wall=time.perf_counter() - t_start, atoms=int(seg.graph.n_vertices),
                      segments=int(seg.n_labels), steps=int(seg.steps), shape=list(image.shape[:2]),
                      rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6)))
"""


def make_photo(src: Path, size: str, dest: Path) -> tuple[int, int]:
    """``src`` upscaled (INTER_CUBIC) to ``size`` ("WxH", or megapixels at
    its aspect ratio) as a JPEG at ``dest``; returns (width, height)."""
    import cv2

    img = cv2.imread(str(src), cv2.IMREAD_COLOR)
    h, w = img.shape[:2]
    if "x" in size:
        width, height = (int(v) for v in size.lower().split("x"))
        if (width > height) != (w > h):
            width, height = height, width
    else:
        f = (float(size) * 1e6 / (h * w)) ** 0.5
        width, height = max(2, round(w * f)), max(2, round(h * f))
    if (width, height) != (w, h):
        img = cv2.resize(img, (width, height), interpolation=cv2.INTER_CUBIC)
    cv2.imwrite(str(dest), img, [cv2.IMWRITE_JPEG_QUALITY, 92])
    return width, height


def run_one(photo: Path, out: Path, work="default") -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, str(photo), str(out), str(work)], capture_output=True,
                          text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"run on {photo.name} failed: {done.stderr.strip()[-2000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    r["outside_wall"] = wall
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0.15,1,4,12,4000x2667",
                    help="megapixels or WxH, comma-separated (default 0.15,1,4,12,4000x2667)")
    ap.add_argument("--photo", default=str(DEFAULT_PHOTO), help="the photo to resize")
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    ap.add_argument("--work", default="default",
                    help="segment(work_pixels=...): a number, 'none' (full size) or 'default'")
    args = ap.parse_args(argv)
    sizes = args.sizes.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm = tmp / "warm.jpg"
        make_photo(Path(args.photo), "0.05", warm)
        run_one(warm, tmp / "warm_out")  # the numba cache filled, the page cache warm
        for size in sizes:
            photo = tmp / f"photo_{size}.jpg"
            w, h = make_photo(Path(args.photo), size, photo)
            load = os.getloadavg()[0]
            r = run_one(photo, tmp / f"out_{size}", args.work)
            r.update(size=size, w=w, h=h, mp=w * h / 1e6, load=load)
            rows.append(r)
            print(f"  {size}: {w}x{h} {r['wall']:.1f} s, {r['rss_gb']:.2f} GB (load {load:.2f})",
                  file=sys.stderr, flush=True)
    print_table(rows, Path(args.photo).name, args.work)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def print_table(rows, photo_name, work="default") -> None:
    names = [p for p in PHASES if any(p in r["phases"] for r in rows)]
    head = f"{'phase':<11}" + "".join(f"{r['w']}x{r['h']}".rjust(11) for r in rows)
    print(f"swcuts segment PHOTO -o OUT --seed 0 (default options{'' if work == 'default' else ', work_pixels ' + work}), "
          f"{photo_name} upscaled; seconds per phase")
    print(head)
    print(f"{'MP':<11}" + "".join(f"{r['mp']:11.2f}" for r in rows))
    print(f"{'atoms':<11}" + "".join(f"{r['atoms']:11d}" for r in rows))
    ref = next((r for r in rows if abs(r["mp"] - 1) < 0.3), rows[0])
    for p in names:
        print(f"{p:<11}" + "".join(f"{r['phases'][p]:11.2f}" if p in r["phases"] else f"{'-':>11}"
                                   for r in rows))
    print(f"{'other':<11}" + "".join(f"{r['outside_wall'] - sum(r['phases'].values()):11.2f}" for r in rows))
    print(f"{'wall':<11}" + "".join(f"{r['outside_wall']:11.2f}" for r in rows))
    print(f"{'peak GB':<11}" + "".join(f"{r['rss_gb']:11.2f}" for r in rows))
    print(f"{'load 1-min':<11}" + "".join(f"{r['load']:11.2f}" for r in rows))
    print(f"\ngrowth per pixel: seconds per megapixel / those at {ref['mp']:.2f} MP "
          "(1.0 = in proportion to the pixels)")
    for p in names + ["wall"]:
        def per_mp(r):
            v = r["outside_wall"] if p == "wall" else r["phases"].get(p)
            return None if v is None else v / r["mp"]
        base = per_mp(ref)
        cells = []
        for r in rows:
            v = per_mp(r)
            cells.append(f"{v / base:11.2f}" if v is not None and base else f"{'-':>11}")
        print(f"{p:<11}" + "".join(cells))
    one = [r for r in rows if abs(r["mp"] - 1) < 0.3]
    twelve = [r for r in rows if abs(r["mp"] - 12) < 1.5]
    if one and twelve:
        a, b = one[0], max(twelve, key=lambda r: r["mp"])
        ratio = (b["outside_wall"] / b["mp"]) / (a["outside_wall"] / a["mp"])
        print(f"\ntarget cost per pixel flat from 1 to 12 MP: wall per MP at {b['mp']:.2f} MP / at "
              f"{a['mp']:.2f} MP = {ratio:.2f} (<= {TARGET_PER_PIXEL:g}), load {a['load']:.2f} and "
              f"{b['load']:.2f}: {'MET' if ratio <= TARGET_PER_PIXEL else 'NOT MET'}")
    for r in rows:
        key = f"{max(r['w'], r['h'])}x{min(r['w'], r['h'])}"
        if key in TARGET:
            wall_t, gb_t = TARGET[key]
            ok = r["outside_wall"] <= wall_t and r["rss_gb"] <= gb_t
            print(f"\ntarget {key}: wall {r['outside_wall']:.1f} s (<= {wall_t:g} s), peak "
                  f"{r['rss_gb']:.2f} GB (<= {gb_t:g} GB), load {r['load']:.2f}: {'MET' if ok else 'NOT MET'}")


if __name__ == "__main__":
    sys.exit(main())
