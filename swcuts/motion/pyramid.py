"""The coarse-to-fine pyramid of the motion segmentation: its range chosen
from the frames (:func:`auto_range`), resampling between levels, and the
check that a level's labels are not clipped at the border of their range
(:func:`_clipped`, :func:`_recentre`)."""

from __future__ import annotations

import math

import cv2
import numpy as np
from skimage.measure import label as connected_label

from swcuts.models.motion import velocity_grid

__all__ = ["auto_range", "default_pyramid_levels", "MOTION_LIMITS"]

#: Largest velocity label set (labels per axis) and label table (bytes) accepted.
MOTION_LIMITS = dict(max_labels_per_axis=41, max_label_table_bytes=4 * 2**30)
#: With no ``max_displacement``, the range is chosen from the frames: the
#: coarsest pyramid level covers motion up to this fraction of the frame's
#: width, with a shorter side of at least MIN_COARSE_SIDE pixels and at
#: least AUTO_MIN_RANGE pixels of label range (see :func:`auto_range`).
AUTO_RANGE_FRACTION, MIN_COARSE_SIDE, AUTO_MIN_RANGE = 0.1, 24, 3.0
#: The same for stereo (``vertical=False``: one label per u value, so a
#: wider range is cheap; disparities of 15 % of the width are common).
STEREO_RANGE_FRACTION = 0.2
#: The most negative disparity label of the coarsest level (its pixels).
STEREO_NEGATIVE = 1.0

def default_pyramid_levels(shape):
    """Levels so that the coarsest image has at least ~40 pixels on its
    shorter side, at most 4: motion up to 3·2^(levels−1) label ranges."""
    return int(max(1, min(4, 1 + math.floor(math.log2(max(min(shape) / 40.0, 1.0))))))


def auto_range(shape, precision, pyramid_levels=None, fraction=None):
    """Pyramid levels and coarsest label range chosen from the frame size.

    The coarsest level covers motion up to ``AUTO_RANGE_FRACTION`` of the
    frame's width: the fewest levels for which ``AUTO_MIN_RANGE`` pixels at
    the coarsest level reach that far, as long as the coarsest level keeps
    ``MIN_COARSE_SIDE`` pixels on its shorter side; the label range of the
    coarsest level makes up the rest (a multiple of ``precision``, at most
    ``MOTION_LIMITS['max_labels_per_axis']`` labels per axis).

    ``fraction`` replaces ``AUTO_RANGE_FRACTION``.

    Returns
    -------
    levels : int
    max_displacement : float
        Label range (pixels per axis) of the coarsest level, in its own pixels.

    Examples
    --------
    >>> auto_range((480, 640), 0.5)
    (5, 4.0)
    >>> auto_range((40, 48), 0.5)
    (1, 5.0)
    """
    h, w = shape
    need = (AUTO_RANGE_FRACTION if fraction is None else fraction) * w
    if pyramid_levels is None:
        levels = 1
        while AUTO_MIN_RANGE * 2 ** (levels - 1) < need and min(h, w) >> levels >= MIN_COARSE_SIDE \
                and levels < 8:
            levels += 1
    else:
        levels = int(pyramid_levels)
    m = max(AUTO_MIN_RANGE, need / 2 ** (levels - 1))
    m = math.ceil(m / precision - 1e-9) * precision
    cap = (MOTION_LIMITS["max_labels_per_axis"] - 1) // 2 * precision
    return levels, float(min(m, cap))


def _check_options(max_displacement, precision, pyramid_levels, shape, fraction=None):
    """The options of :func:`segment_motion` that depend on the frames' ``shape``
    (``max_displacement`` None: the range of :func:`auto_range`)."""
    if pyramid_levels is not None and min(shape) >> (pyramid_levels - 1) < 8:
        raise ValueError(f"pyramid_levels={pyramid_levels} shrinks a {shape[1]}x{shape[0]} "
                         "pair below 8 pixels")
    if max_displacement is None:
        max_displacement = auto_range(shape, float(precision), pyramid_levels, fraction)[1]
    per_axis = 2 * max_displacement / precision + 1
    if abs(per_axis - round(per_axis)) > 1e-6:
        raise ValueError(f"max_displacement ({max_displacement}) must be a multiple of precision "
                         f"({precision})")
    per_axis = int(round(per_axis))
    if per_axis > MOTION_LIMITS["max_labels_per_axis"]:
        raise ValueError(f"max_displacement / precision gives {per_axis} labels per axis "
                         f"({per_axis ** 2} velocities); at most "
                         f"{MOTION_LIMITS['max_labels_per_axis']} per axis are supported: use "
                         "pyramid_levels for larger motion")
    table = shape[0] * shape[1] * (per_axis ** 2 + 1) * 4
    if table > MOTION_LIMITS["max_label_table_bytes"]:
        gb = table / 2**30
        raise ValueError(f"a {shape[1]}x{shape[0]} pair with {per_axis ** 2} velocity labels needs "
                         f"about {gb:.1f} GB for its data costs (limit "
                         f"{MOTION_LIMITS['max_label_table_bytes'] / 2**30:.0f} GB): use fewer "
                         "labels (larger precision, smaller max_displacement) or smaller frames")
    return per_axis


def _coarse_grid(coarse_range, precision, vertical):
    """Labels per axis of the coarsest level: −m..m, or for a rectified
    pair (frame 2 the left image, disparities ≥ 0) −STEREO_NEGATIVE..2m,
    as many."""
    grid = velocity_grid(coarse_range, precision)
    return grid if vertical else grid + coarse_range - min(STEREO_NEGATIVE, coarse_range)


def _wider(coarse_range, precision):
    """The coarsest range doubled, within the label cap."""
    cap = (MOTION_LIMITS["max_labels_per_axis"] - 1) // 2 * float(precision)
    return float(min(2 * coarse_range, max(cap, coarse_range)))


def _downsample(a, factor):
    if factor == 1:
        return a
    h, w = a.shape[:2]
    out = cv2.resize(a, (max(w // factor, 1), max(h // factor, 1)), interpolation=cv2.INTER_AREA)
    return out if out.ndim == 3 else out[..., None]


def _regions_at(regions, shape):
    """Region labels resampled (nearest) to ``shape``, split into connected
    pieces, labels 0..R-1."""
    h, w = shape
    ys = np.minimum((np.arange(h) + 0.5) * regions.shape[0] / h, regions.shape[0] - 1).astype(int)
    xs = np.minimum((np.arange(w) + 0.5) * regions.shape[1] / w, regions.shape[1] - 1).astype(int)
    small = regions[np.ix_(ys, xs)]
    return connected_label(small + 1, connectivity=1, background=0) - 1


def _upsample_flow(flow, shape):
    """Flow of a coarser level at ``shape``, scaled; nil filled from the
    nearest non-nil pixel (so that the base flow is defined everywhere)."""
    from scipy import ndimage as ndi
    nil = np.isnan(flow[..., 0])
    if nil.all():
        flow = np.zeros_like(flow)
    elif nil.any():
        idx = ndi.distance_transform_edt(nil, return_distances=False, return_indices=True)
        flow = flow[idx[0], idx[1]]
    h, w = shape
    sy, sx = h / flow.shape[0], w / flow.shape[1]
    up = cv2.resize(flow.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
    return np.stack([up[..., 0] * sx, up[..., 1] * sy], axis=2).astype(np.float64)


def _nearest(a, shape):
    """``a`` (H', W'[, C]) resampled to ``shape`` by nearest neighbour."""
    h, w = shape
    ys = np.minimum((np.arange(h) + 0.5) * a.shape[0] / h, a.shape[0] - 1).astype(int)
    xs = np.minimum((np.arange(w) + 0.5) * a.shape[1] / w, a.shape[1] - 1).astype(int)
    return a[np.ix_(ys, xs)]


def _snap_base(base, step):
    """Base flow rounded to the label step, so that labels of neighbours in
    the same object mean the same velocity."""
    return np.round(base / step) * step


def _objects_from_coarser(object_map, regions):
    """The object of each region of ``regions`` (labels 0..R-1): the most
    common object under it of ``object_map`` (a coarser level's objects per
    pixel, resampled), relabelled 0..K-1 (K ≤ R)."""
    up = _nearest(object_map, regions.shape)
    n_reg = int(regions.max()) + 1
    n_obj = int(up.max()) + 1
    counts = np.bincount(regions.ravel() * n_obj + up.ravel(), minlength=n_reg * n_obj)
    best = counts.reshape(n_reg, n_obj).argmax(axis=1)
    return np.unique(best, return_inverse=True)[1].astype(np.int64)


def _clipped(post, x0):
    """The pixels whose label lies on the border of the label range (a
    non-nil label with |d_u| or |d_v| at the grid's end)."""
    x0 = np.asarray(x0)
    ok = x0 != post.nil
    k = np.where(ok, x0, 0)
    top = float(post.grid[-1]) - 1e-9
    border = (np.abs(post.du[k]) >= top) | (np.abs(post.dv[k]) >= top) if top > 0 else np.zeros_like(ok)
    return ok & border


def _recentre(post, x0):
    """(new base flow, labels): the clipped pixels' base moved to their
    flow and their label to the centre of the grid; others unchanged."""
    h, w = post.shape
    clip = _clipped(post, x0)
    k = np.where(clip, x0, 0)
    base = np.stack([post.wu + np.where(clip, post.du[k], 0.0),
                     post.wv + np.where(clip, post.dv[k], 0.0)], axis=1).reshape(h, w, 2)
    centre = int(np.argmin(post.du ** 2 + post.dv ** 2))
    return base, np.where(clip, centre, x0)
