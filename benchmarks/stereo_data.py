"""Fetch the public stereo pairs scored by ``benchmarks/motion.py --cases stereo``.

Usage: python benchmarks/stereo_data.py [--dest benchmarks/data/stereo] [--git-dir DIR]

``--git-dir``: read the same files from a local clone (or bare git directory)
of the source repository instead of the web (``git show HEAD:tests/...``),
for a machine without internet access.

Puts every pair in a git-ignored folder (``benchmarks/data/`` is in
.gitignore), one folder per pair holding ``left.png``, ``right.png`` and
``disp.npy`` (float32 disparity of the left image, 0 where unknown):

* ``cones``: Middlebury 2003 "Cones" (Scharstein & Szeliski, CVPR 2003),
  450x375 grey, disparities 0..55 px, as held in the test data of CNES's
  public repository https://github.com/CNES/Pandora_plugin_arnn
  (tests/inputs/left.png, tests/inputs/right.png,
  tests/outputs/gt_disp_left.tif; raw files from raw.githubusercontent.com
  at the commit below). The Middlebury licence asks to cite the paper.
* ``cones-right``: the same pair seen from the right image (its ground truth
  ``outputs/gt_disp_right.tif``), both images mirrored left-right so that the
  right view becomes the reference of a pair with positive disparities: other
  occlusions and another out-of-view border than ``cones`` (the same scene).

Not fetched, never to be used for tuning: the Middlebury 2014 Motorcycle pair
(held back for judging).
"""

from __future__ import annotations

import argparse
import io
import sys
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PANDORA = "https://raw.githubusercontent.com/CNES/Pandora_plugin_arnn/{ref}/tests/{path}"
PAIRS = {
    "cones": dict(ref="master", left="inputs/left.png", right="inputs/right.png",
                  disp="outputs/gt_disp_left.tif"),
    "cones-right": dict(ref="master", left="inputs/right.png", right="inputs/left.png",
                        disp="outputs/gt_disp_right.tif", mirror=True),
}


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 (a fixed https URL)
        return r.read()


def _git_show(git_dir, path: str, folder: str = "tests") -> bytes:
    """The file ``folder/path`` at HEAD of the local clone ``git_dir``."""
    import subprocess

    return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{folder}/{path}"],
                          check=True, capture_output=True).stdout


def fetch(dest: Path, git_dir=None) -> None:
    import cv2

    for name, spec in PAIRS.items():
        folder = dest / name
        if (folder / "disp.npy").is_file():
            print(f"{name}: already in {folder}")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        def read(path):
            if git_dir is not None:
                return _git_show(git_dir, path)
            return _get(PANDORA.format(ref=spec["ref"], path=path))

        mirror = spec.get("mirror", False)
        for key in ("left", "right"):
            data = read(spec[key])
            if mirror:  # decoded, mirrored left-right, encoded again (lossless PNG)
                img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
                data = cv2.imencode(".png", np.ascontiguousarray(img[:, ::-1]))[1].tobytes()
            (folder / f"{key}.png").write_bytes(data)
        raw = np.frombuffer(read(spec["disp"]), np.uint8)
        disp = cv2.imdecode(raw, cv2.IMREAD_UNCHANGED).astype(np.float32)
        if mirror:
            disp = np.ascontiguousarray(disp[:, ::-1])
        np.save(folder / "disp.npy", disp)
        print(f"{name}: {disp.shape[1]}x{disp.shape[0]}, disparity up to {disp.max():g} px -> {folder}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", default=str(ROOT / "benchmarks" / "data" / "stereo"))
    ap.add_argument("--git-dir", default=None,
                    help="a local git directory of CNES/Pandora_plugin_arnn instead of the web")
    args = ap.parse_args(argv)
    fetch(Path(args.dest), args.git_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
