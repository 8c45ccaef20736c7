"""Does ``--time-budget`` hold for the whole run on a large photo?

``swcuts segment PHOTO -o OUT --time-budget B`` means the wall time of the
whole run, from the start of the process to the files written
(:mod:`swcuts.inference.budget`). The sampler gets what reading, preparing, the
atoms, graph, edges and model (and an estimate for writing the outputs)
leave, at least ``MIN_SAMPLING_SHARE`` of B. So the run should take at
most 20 % more than its *stated minimum*

    max(B, fixed phases + MIN_SAMPLING_SHARE * B + estimated writing)

where the fixed phases are those before sampling (``phase_seconds`` of
summary.json, ``starting`` being the imports) and writing is swcuts' own
estimate (:func:`swcuts.inference.budget.write_reserve`), as the warning line states
them. The writing measured (the wall time less the phases in
summary.json) is shown beside it. When the fixed phases alone exceed B,
the run says so in one warning line; the script prints it.

The photo: ``sample_images/coffee.png`` upscaled (bicubic, plus a little
noise so that the atoms have texture to follow) to ``--size`` (default
4000x3000) and saved as a JPEG in a temporary folder, as a phone photo
would come. Each budget runs once in a subprocess (``python -m swcuts``),
timed from the outside, with its peak memory.

Run: ``python benchmarks/time_budget.py [--budgets 2,10] [--size 4000x3000] [--image PATH]``.
Timings on a shared machine are noisy.
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
sys.path.insert(0, str(ROOT))

from swcuts.inference.budget import MIN_SAMPLING_SHARE, OVERRUN, write_reserve  # noqa: F401


def make_photo(path: Path, size) -> None:
    """coffee.png upscaled to ``size`` = (width, height), as a JPEG."""
    import cv2
    import imageio.v3 as iio
    import numpy as np

    small = iio.imread(ROOT / "sample_images" / "coffee.png")
    big = cv2.resize(small, size, interpolation=cv2.INTER_CUBIC).astype(np.float64)
    big += np.random.default_rng(0).normal(0, 4, big.shape)
    iio.imwrite(path, np.clip(big, 0, 255).astype(np.uint8), quality=90)


def run(image: Path, out: Path, budget: float) -> dict:
    """One ``swcuts segment`` run: wall seconds, peak RSS, stdout, stderr, summary."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "swcuts", "segment", str(image), "-o", str(out),
                           "--time-budget", f"{budget:g}", "--seed", "0"],
                          capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"swcuts failed ({proc.returncode}): {proc.stderr.strip()}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    summary = json.loads((out / "summary.json").read_text())
    return dict(wall=wall, rss_gb=max(rss, before) / 1e6, stdout=proc.stdout.strip(),
                stderr=proc.stderr.strip(), summary=summary)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budgets", default="2,10", help="seconds, comma-separated (default 2,10)")
    p.add_argument("--size", default="4000x3000", help="width x height of the upscaled photo")
    p.add_argument("--image", default=None, help="a photo of your own instead of the upscaled one")
    args = p.parse_args(argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.image:
            image = Path(args.image)
        else:
            width, height = (int(v) for v in args.size.lower().split("x"))
            image = tmp / "photo.jpg"
            make_photo(image, (width, height))
        import imageio.v3 as iio

        h, w = iio.improps(image).shape[:2]
        print(f"photo {w}x{h} ({image.name}); writing estimated at {write_reserve((h, w)):.1f} s; "
              f"the sampler's minimum is {100 * MIN_SAMPLING_SHARE:.0f} % of the budget\n")
        header = (f"{'budget s':>8} {'wall s':>7} {'fixed s':>8} {'sampling s':>10} {'writing s':>9} "
                  f"{'stated min s':>12} {'wall/stated':>11} {'ok':>3} {'peak GB*':>8}")
        print(header)
        rows = []
        for budget in budgets:
            r = run(image, tmp / f"out{budget:g}", budget)
            phases = r["summary"].get("phase_seconds", {})
            sampling = phases.get("sampling", 0.0)
            fixed = sum(v for k, v in phases.items() if k != "sampling")
            writing = max(r["wall"] - fixed - sampling, 0.0)
            stated = max(budget, fixed + MIN_SAMPLING_SHARE * budget + write_reserve((h, w)))
            ok = r["wall"] <= OVERRUN * stated
            rows.append((budget, r, phases))
            print(f"{budget:8g} {r['wall']:7.1f} {fixed:8.1f} {sampling:10.2f} {writing:9.1f} {stated:12.1f} "
                  f"{r['wall'] / stated:11.2f} {'yes' if ok else 'NO':>3} {r['rss_gb']:8.2f}")
        print("* peak resident memory of the runs so far (getrusage of the children)\n")
        for budget, r, phases in rows:
            print(f"--time-budget {budget:g}: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
            print(f"  stdout: {r['stdout']}")
            for line in r["stderr"].splitlines():
                print(f"  stderr: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
