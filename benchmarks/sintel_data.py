"""Fetch the MPI-Sintel samples scored by ``benchmarks/motion.py --cases sintel``.

Usage: python benchmarks/sintel_data.py [--dest benchmarks/data/sintel] [--git-dir DIR]

Three MPI-Sintel training sequences (Butler et al., ECCV 2012), each in the
clean and the final pass, 1024x436 RGB, as held in the example data of the
public FALDOI repository https://github.com/fperezgamonal/faldoi-ipol
(``example_data/{clean,final}/{easy,medium,hard}/``: frames 1-4 of alley_1,
cave_2 and market_5, and the ground-truth flow of frame 2, ``gt/frame_0002.flo``
with its ``gt/invalid/frame_0002.png`` mask; raw files from
raw.githubusercontent.com at the commit below). The Sintel licence asks to
cite the paper.

Each pair goes into a git-ignored folder (``benchmarks/data/`` is in
.gitignore), ``<pass>-<scene>`` (e.g. ``final-market_5``), holding
``frame1.png`` (frame 3), ``frame2.png`` (frame 2, the reference) and
``flow.npy``: the flow in swcuts' convention (frame2(x) = frame1(x − flow),
i.e. minus Sintel's frame-2 flow), float32, NaN where Sintel marks it invalid.
``--git-dir`` reads the same files from a local clone (or bare git directory)
instead of the web, for a machine without internet access.

Nothing here was used to tune swcuts' defaults (fetched in round 3 of issue
36, after the defaults were set): a held-out set.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from stereo_data import _get, _git_show  # one fetcher for both data sets

ROOT = Path(__file__).resolve().parents[1]
REPO = "fperezgamonal/faldoi-ipol"
COMMIT = "561809fa0f8b65d65c42c102aef0fbf2e27b35d8"  # the snapshot read when this script was written
RAW = "https://raw.githubusercontent.com/" + REPO + "/{ref}/example_data/{path}"
SCENES = {"easy": "alley_1", "medium": "cave_2", "hard": "market_5"}
PASSES = ("clean", "final")


def pair_names():
    """The folder names of the pairs, ``<pass>-<scene>``."""
    return [f"{p}-{s}" for p in PASSES for s in SCENES.values()]


def _flo(data: bytes) -> np.ndarray:
    """A Middlebury/Sintel .flo file's (H, W, 2) float32 flow."""
    if np.frombuffer(data[:4], "<f4")[0] != np.float32(202021.25):
        raise ValueError("not a .flo file")
    w, h = (int(x) for x in np.frombuffer(data[4:12], "<i4"))
    return np.frombuffer(data[12:12 + 8 * w * h], "<f4").reshape(h, w, 2).copy()


def fetch(dest: Path, git_dir=None) -> None:
    import cv2

    for difficulty, scene in SCENES.items():
        for pas in PASSES:
            folder = dest / f"{pas}-{scene}"
            if (folder / "flow.npy").is_file():
                print(f"{folder.name}: already in {folder}")
                continue
            folder.mkdir(parents=True, exist_ok=True)

            def read(name):
                path = f"{pas}/{difficulty}/{name}"
                return _git_show(git_dir, path, "example_data") if git_dir is not None else _get(
                    RAW.format(ref=COMMIT, path=path))

            (folder / "frame2.png").write_bytes(read("frame_0002.png"))
            (folder / "frame1.png").write_bytes(read("frame_0003.png"))
            flow = -_flo(read("gt/frame_0002.flo"))
            invalid = cv2.imdecode(np.frombuffer(read("gt/invalid/frame_0002.png"), np.uint8),
                                   cv2.IMREAD_GRAYSCALE)
            flow[invalid > 0] = np.nan
            np.save(folder / "flow.npy", flow.astype(np.float32))
            mag = np.hypot(*np.nan_to_num(flow).transpose(2, 0, 1))
            print(f"{folder.name}: {flow.shape[1]}x{flow.shape[0]}, motion up to {mag.max():.1f} px "
                  f"(99th percentile {np.percentile(mag, 99):.1f}) -> {folder}")


def load_sintel(name: str, root=None):
    """A fetched pair as a :class:`~swcuts.evaluation.synthetic.motion.MotionPair`
    (frames in [0, 1], RGB; ``flow`` NaN where invalid)."""
    import cv2

    from swcuts.evaluation.synthetic.motion import MotionPair

    folder = Path(root or ROOT / "benchmarks" / "data" / "sintel") / name
    if not (folder / "flow.npy").is_file():
        raise FileNotFoundError(f"{folder} has no flow.npy: run benchmarks/sintel_data.py")
    frames = [cv2.imread(str(folder / f), cv2.IMREAD_COLOR)[..., ::-1].astype(np.float64) / 255.0
              for f in ("frame1.png", "frame2.png")]
    flow = np.load(folder / "flow.npy").astype(np.float64)
    return MotionPair(frame1=frames[0], frame2=frames[1], flow=flow, occluded=np.isnan(flow[..., 0]),
                      objects=None, velocities=np.zeros((0, 2)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", default=str(ROOT / "benchmarks" / "data" / "sintel"))
    ap.add_argument("--git-dir", default=None, help=f"a local git directory of {REPO} instead of the web")
    args = ap.parse_args(argv)
    fetch(Path(args.dest), args.git_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
