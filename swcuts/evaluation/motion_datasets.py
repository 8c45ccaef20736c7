"""Real motion pairs with ground truth: the Middlebury optical-flow sequences.

A sequence folder holds ``frame10.png``, ``frame11.png`` and ``flow10.flo``
(Baker et al. 2011). ``flow10`` lives on the grid of frame 10 and maps it
*forward*: ``frame10(x) ~ frame11(x + flow10(x))``.

swcuts takes frame 2 as the reference, ``frame2(x) = frame1(x - flow(x))``
(section 7 of Barbu & Zhu). :func:`load_middlebury` therefore returns
``frame1 = frame11`` and ``frame2 = frame10`` and the truth converted as
``flow = -flow10``: then ``frame2(x) = frame10(x) ~ frame11(x + flow10(x))
= frame1(x - flow(x))``, on the same grid, so no resampling is needed.
Unknown truth (``|component| > 1e9``) is NaN.

The data folder is taken from ``root``, else the environment variable
``SWCUTS_MIDDLEBURY``, else ``shared/data/middlebury`` next to the
repository (the team's development copy).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from swcuts.io.flow import read_flo
from swcuts.evaluation.synthetic.motion import MotionPair

__all__ = ["MIDDLEBURY_SEQUENCES", "STEREO_PAIRS", "middlebury_root", "load_middlebury", "stereo_root",
           "load_stereo"]

#: The sequences with ground truth in the development copy.
MIDDLEBURY_SEQUENCES = ("Dimetrodon", "Grove3", "Urban3", "Venus")


def middlebury_root(root=None) -> Path:
    """The folder of the Middlebury sequences (see the module docstring).

    Raises
    ------
    FileNotFoundError
        If no folder is found.
    """
    candidates = []
    if root is not None:
        candidates.append(Path(root))
    elif os.environ.get("SWCUTS_MIDDLEBURY"):
        candidates.append(Path(os.environ["SWCUTS_MIDDLEBURY"]))
    else:
        here = Path(__file__).resolve().parents[2]  # the repository / worktree
        candidates += [here.parent / "shared" / "data" / "middlebury", here / "data" / "middlebury"]
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError("Middlebury data not found (tried " + ", ".join(map(str, candidates))
                            + "); pass root= or set SWCUTS_MIDDLEBURY")


def load_middlebury(name: str, root=None, *, grey: bool = False) -> MotionPair:
    """Load a Middlebury sequence in swcuts' convention.

    Parameters
    ----------
    name : str
        Sequence folder name, e.g. ``"Venus"``.
    root : str or os.PathLike, optional
        The folder holding the sequences.
    grey : bool
        Return grey frames (ITU-R 601 luma) instead of RGB.

    Returns
    -------
    MotionPair
        ``frame1`` = frame11, ``frame2`` = frame10 (the reference), float64
        in [0, 1], ``(H, W, 3)`` (or ``(H, W)`` if ``grey``); ``flow`` =
        ``-flow10``, ``(H, W, 2)``, NaN where unknown; ``occluded`` = the
        unknown pixels; ``objects`` is None (no object ground truth).

    Raises
    ------
    FileNotFoundError
        If the folder or one of its files is missing.
    ValueError
        If the flow file is invalid or its size differs from the frames'.

    Examples
    --------
    >>> from swcuts.evaluation.motion_datasets import load_middlebury
    >>> p = load_middlebury("Venus")  # doctest: +SKIP
    >>> p.frame2.shape, p.flow.shape  # doctest: +SKIP
    ((380, 420, 3), (380, 420, 2))
    """
    from swcuts.io.image_read import load_image

    folder = middlebury_root(root) / name
    if not folder.is_dir():
        raise FileNotFoundError(f"no Middlebury sequence {name!r} in {folder.parent}")
    frames = []
    for fname in ("frame11.png", "frame10.png"):
        img = np.asarray(load_image(folder / fname))
        if img.ndim == 3 and img.shape[2] == 4:
            img = img[..., :3]
        scale = 255.0 if img.dtype == np.uint8 else 65535.0 if img.dtype == np.uint16 else 1.0
        img = img.astype(np.float64) / scale
        if grey and img.ndim == 3:
            img = img @ np.array([0.299, 0.587, 0.114])
        frames.append(img)
    flow10 = read_flo(folder / "flow10.flo")
    if flow10.shape[:2] != frames[1].shape[:2]:
        raise ValueError(f"{folder / 'flow10.flo'}: size {flow10.shape[1]}x{flow10.shape[0]} differs from "
                         f"frame10's {frames[1].shape[1]}x{frames[1].shape[0]}")
    flow = -flow10.astype(np.float64)
    unknown = np.isnan(flow).any(-1)
    flow[unknown] = np.nan
    return MotionPair(frame1=frames[0], frame2=frames[1], flow=flow, occluded=unknown, objects=None,
                      velocities=np.zeros((0, 2)))


#: Rectified stereo pairs with ground-truth disparity that
#: ``benchmarks/stereo_data.py`` puts in ``benchmarks/data/stereo`` (each a
#: folder with left.png, right.png and disp.png or gt_disp_left.tif).
STEREO_PAIRS = ("cones", "cones-right")


def stereo_root(root=None) -> Path:
    """The folder of the stereo pairs: ``root``, else ``SWCUTS_STEREO``, else
    ``benchmarks/data/stereo`` in the repository.

    Raises
    ------
    FileNotFoundError
        If no folder is found.
    """
    if root is not None:
        c = Path(root)
    elif os.environ.get("SWCUTS_STEREO"):
        c = Path(os.environ["SWCUTS_STEREO"])
    else:
        c = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "stereo"
    if not c.is_dir():
        raise FileNotFoundError(f"stereo data not found in {c}: run benchmarks/stereo_data.py, "
                                "pass root= or set SWCUTS_STEREO")
    return c


def load_stereo(name: str, root=None) -> MotionPair:
    """Load a rectified stereo pair as a motion pair in swcuts' convention.

    The left image is the reference (frame 2) and the right one frame 1:
    with disparity d, left(x) = right(x − d), so the flow is (d, 0).

    Parameters
    ----------
    name : str
        Folder name under :func:`stereo_root`, e.g. ``"cones"``.
    root : str or os.PathLike, optional

    Returns
    -------
    MotionPair
        frames in [0, 1] (grey or RGB as stored), ``flow`` (H, W, 2) =
        (d, 0), NaN where the disparity is unknown (stored as 0).

    Raises
    ------
    FileNotFoundError
        If the folder or one of its files is missing.

    Examples
    --------
    >>> from swcuts.evaluation.motion_datasets import load_stereo
    >>> p = load_stereo("cones")  # doctest: +SKIP
    >>> p.frame2.shape, p.flow.shape  # doctest: +SKIP
    ((375, 450), (375, 450, 2))
    """
    import cv2

    folder = stereo_root(root) / name
    if not folder.is_dir():
        raise FileNotFoundError(f"no stereo pair {name!r} in {folder.parent}")
    frames = []
    for fname in ("right.png", "left.png"):
        img = cv2.imread(str(folder / fname), cv2.IMREAD_UNCHANGED)
        if img is None:
            raise FileNotFoundError(f"{folder / fname} is missing or unreadable")
        if img.ndim == 3:
            img = img[..., :3][..., ::-1]
        frames.append(img.astype(np.float64) / 255.0)
    disp_file = folder / "disp.npy"
    if not disp_file.is_file():
        raise FileNotFoundError(f"{disp_file} is missing (run benchmarks/stereo_data.py)")
    d = np.load(disp_file).astype(np.float64)
    unknown = ~(d > 0)
    flow = np.stack([d, np.zeros_like(d)], axis=2)
    flow[unknown] = np.nan
    return MotionPair(frame1=frames[0], frame2=frames[1], flow=flow, occluded=unknown, objects=None,
                      velocities=np.zeros((0, 2)))
