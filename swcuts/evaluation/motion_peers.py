"""Classical optical-flow methods that swcuts' motion segmentation is
compared against, in swcuts' convention.

================  =====================================================
peer              method
================  =====================================================
``dis``           OpenCV DIS optical flow (Kroeger et al. 2016), preset
                  ``MEDIUM``
``farneback``     OpenCV Farneback polynomial-expansion flow (2003), the
                  common settings of the OpenCV samples
================  =====================================================

**Convention.** swcuts takes frame 2 as the reference: ``flow[y, x] =
(u, v)`` means ``frame2(x, y) = frame1(x - u, y - v)``. OpenCV's
``calc(prev, next)`` returns ``F`` on the grid of ``prev`` with
``prev(x) = next(x + F(x))``. So each peer is run with ``prev = frame2``
and ``next = frame1`` and the result negated: ``flow = -F``.

Colour frames are converted to grey (OpenCV's flows take one 8-bit
channel). Float frames are taken to be in [0, 1]; both frames are scaled
by the same factor.

**Objects** for a peer come from clustering its flow
(:func:`flow_objects`): the flow is median-filtered, k-means is run on
``(u, v)`` for ``k = 1, 2, ...`` and the smallest ``k`` whose
root-mean-square distance to the cluster centres is at most ``tol``
(0.5 px by default) is kept (at most ``max_objects``); clusters whose
centres are closer than ``tol`` are merged; the label image is then
smoothed by a majority (mode) filter.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from scipy.cluster.vq import kmeans2

__all__ = ["MOTION_PEERS", "dis_flow", "farneback_flow", "flow_objects", "run_motion_peer"]


def _grey8(frame) -> np.ndarray:
    a = np.asarray(frame)
    if a.ndim == 3:
        if a.shape[2] == 1:
            a = a[..., 0]
        elif a.shape[2] in (3, 4):
            a = a[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])
            if np.asarray(frame).dtype == np.uint8:
                return np.clip(np.round(a), 0, 255).astype(np.uint8)
        else:
            raise ValueError(f"a frame must be (H, W), (H, W, 1), (H, W, 3) or (H, W, 4), got {a.shape}")
    elif a.ndim != 2:
        raise ValueError(f"a frame must be (H, W) or (H, W, C), got {a.shape}")
    if a.dtype == np.uint8:
        return a
    a = a.astype(np.float64)
    if a.size and np.nanmax(a) > 1.0 + 1e-6:
        a = a / 255.0
    return np.clip(np.round(a * 255.0), 0, 255).astype(np.uint8)


def _pair8(frame1, frame2):
    g1, g2 = _grey8(frame1), _grey8(frame2)
    if g1.shape != g2.shape:
        raise ValueError(f"frames differ in size: {g1.shape} vs {g2.shape}")
    return g1, g2


def dis_flow(frame1, frame2, *, preset: str = "medium") -> np.ndarray:
    """OpenCV DIS optical flow, in swcuts' convention (frame 2 the reference).

    Parameters
    ----------
    frame1, frame2 : array_like, shape (H, W) or (H, W, 3)
        uint8, or float in [0, 1].
    preset : {"ultrafast", "fast", "medium"}
        DIS preset.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 2)`` float32 ``(u, v)`` with ``frame2(x) = frame1(x - flow(x))``.

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.motion import layered_pair
    >>> from swcuts.evaluation.motion_peers import dis_flow
    >>> p = layered_pair(seed=0)
    >>> dis_flow(p.frame1, p.frame2).shape
    (120, 160, 2)
    """
    import cv2

    presets = {"ultrafast": cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST,
               "fast": cv2.DISOPTICAL_FLOW_PRESET_FAST,
               "medium": cv2.DISOPTICAL_FLOW_PRESET_MEDIUM}
    if preset not in presets:
        raise ValueError(f"unknown DIS preset {preset!r}; choose one of {', '.join(presets)}")
    g1, g2 = _pair8(frame1, frame2)
    dis = cv2.DISOpticalFlow_create(presets[preset])
    f = dis.calc(g2, g1, None)  # on frame 2's grid: frame2(x) = frame1(x + f)
    return -f


def farneback_flow(frame1, frame2) -> np.ndarray:
    """OpenCV Farneback optical flow, in swcuts' convention.

    Settings: pyramid scale 0.5, 4 levels, window 15, 3 iterations,
    polynomial neighbourhood 5 with sigma 1.2 (as in the OpenCV samples).

    The frames and the flow returned are as for :func:`dis_flow`.

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.motion import layered_pair
    >>> from swcuts.evaluation.motion_peers import farneback_flow
    >>> farneback_flow(*(lambda p: (p.frame1, p.frame2))(layered_pair(seed=0))).dtype
    dtype('float32')
    """
    import cv2

    g1, g2 = _pair8(frame1, frame2)
    f = cv2.calcOpticalFlowFarneback(g2, g1, None, 0.5, 4, 15, 3, 5, 1.2, 0)
    return -f


def _mode_filter(labels, n, size):
    """Majority label in a ``size`` x ``size`` window (ties: lowest label)."""
    votes = np.stack([ndimage.uniform_filter((labels == k).astype(np.float32), size, mode="nearest")
                      for k in range(n)])
    return votes.argmax(0)


def flow_objects(flow, *, tol: float = 0.5, max_objects: int = 6, smooth: int = 5, seed=0,
                 sample: int = 20000) -> np.ndarray:
    """Moving objects from a flow field, by k-means on the velocities.

    The flow is median-filtered (``smooth`` x ``smooth``); k-means on
    ``(u, v)`` (on at most ``sample`` random pixels, then every pixel goes
    to its nearest centre) is run for ``k = 1 .. max_objects`` and the
    smallest ``k`` whose RMS distance of the velocities to their centre is
    at most ``tol`` pixels is kept (``max_objects`` if none is); centres
    closer than ``tol`` are merged; the labels are then smoothed by a
    majority filter of the same size.

    Parameters
    ----------
    flow : array_like, shape (H, W, 2)
        ``(u, v)``; NaN pixels are treated as zero flow.
    tol : float
        Velocity tolerance, pixels.
    max_objects : int
        Largest number of objects.
    smooth : int
        Window of the median and majority filters (odd, >= 1).
    seed : int
        Seed of the k-means initialisation and sampling.
    sample : int
        Pixels used to fit the centres.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int64 labels ``0..K-1``, the largest object 0.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.evaluation.motion_peers import flow_objects
    >>> f = np.zeros((20, 20, 2)); f[5:15, 5:15] = (2.0, -1.0)
    >>> lab = flow_objects(f)
    >>> int(lab.max()), int(lab[10, 10]), int(lab[0, 0])
    (1, 1, 0)
    """
    f = np.asarray(flow, dtype=np.float64)
    if f.ndim != 3 or f.shape[2] != 2:
        raise ValueError(f"flow must have shape (H, W, 2), got {f.shape}")
    h, w = f.shape[:2]
    f = np.where(np.isfinite(f), f, 0.0)
    if smooth > 1:
        f = np.stack([ndimage.median_filter(f[..., c], size=smooth, mode="nearest") for c in range(2)], -1)
    x = f.reshape(-1, 2)
    rng = np.random.default_rng(seed)
    fit = x[rng.choice(len(x), sample, replace=False)] if len(x) > sample else x
    centres = fit.mean(0, keepdims=True)
    for k in range(1, max_objects + 1):
        if k > 1:
            centres, _ = kmeans2(fit, k, minit="++", seed=rng, iter=20)
        d2 = ((fit[:, None, :] - centres[None]) ** 2).sum(-1)
        if np.sqrt(d2.min(1).mean()) <= tol:
            break
    centres = _merge_close(centres, tol)
    d2 = ((x[:, None, :] - centres[None]) ** 2).sum(-1)
    labels = d2.argmin(1).reshape(h, w)
    n = len(centres)
    if smooth > 1 and n > 1:
        labels = _mode_filter(labels, n, smooth)
    # consecutive labels, the largest object first
    counts = np.bincount(labels.ravel(), minlength=n)
    order = np.argsort(-counts, kind="stable")
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    labels = rank[labels]
    used = np.unique(labels)
    remap = np.zeros(n, np.int64)
    remap[used] = np.arange(len(used))
    return remap[labels]


def _merge_close(centres, tol):
    """Greedily merge centres closer than ``tol`` (keep the first)."""
    kept = []
    for c in np.asarray(centres):
        if all(np.hypot(*(c - k)) >= tol for k in kept):
            kept.append(c)
    return np.array(kept)


#: Peer name -> flow function ``(frame1, frame2) -> flow``.
MOTION_PEERS = {"dis": dis_flow, "farneback": farneback_flow}


def run_motion_peer(name: str, frame1, frame2, **objects_params):
    """Flow and objects of a peer: ``(flow, objects)``.

    Parameters
    ----------
    name : {"dis", "farneback"}
    frame1, frame2 : array_like
        The frames (frame 2 the reference).
    **objects_params
        Passed to :func:`flow_objects`.

    Returns
    -------
    flow : ndarray, shape (H, W, 2)
    objects : ndarray of int64, shape (H, W)

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.motion import layered_pair
    >>> from swcuts.evaluation.motion_peers import run_motion_peer
    >>> p = layered_pair(seed=0)
    >>> flow, objects = run_motion_peer("dis", p.frame1, p.frame2)
    >>> flow.shape, objects.shape
    ((120, 160, 2), (120, 160))
    """
    if name not in MOTION_PEERS:
        raise ValueError(f"unknown motion peer {name!r}; choose one of {', '.join(MOTION_PEERS)}")
    flow = MOTION_PEERS[name](frame1, frame2)
    return flow, flow_objects(flow, **objects_params)
