"""Warping a frame by a flow, and a frame's gradients: the image operations
that the motion posterior, the flow refinement and the motion scores share."""

from __future__ import annotations

import numpy as np

__all__ = ["warp_frame1", "frame_gradient"]


def warp_frame1(frame1, flow, *, with_inside=False):
    """Frame 1 sampled at ``x - flow(x)``: the prediction of frame 2.

    Bilinear interpolation (OpenCV ``remap``, positions to 1/32 pixel);
    points outside frame 1 take the nearest border value; NaN flow gives
    NaN. The one warp of swcuts: the motion posterior's data term and the
    flow refinement use it too.

    Parameters
    ----------
    frame1 : array_like, shape (H, W) or (H, W, C)
    flow : array_like, shape (H, W, 2)
        ``(u, v)`` on the grid of frame 2.
    with_inside : bool
        Also return where ``x - flow(x)`` lies inside frame 1.

    Returns
    -------
    numpy.ndarray
        The shape of ``frame1``; float32 for a float32 frame, else float64.
    inside : (H, W) bool array
        With ``with_inside``.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.image.warp import warp_frame1
    >>> f1 = np.arange(5.0)[None, :].repeat(3, 0)
    >>> warp_frame1(f1, np.full((3, 5, 2), [1.0, 0.0]))[1].tolist()
    [0.0, 0.0, 1.0, 2.0, 3.0]
    """
    import cv2

    img = np.asarray(frame1)
    img = img if img.dtype == np.float32 else img.astype(np.float64)
    f = np.asarray(flow, dtype=np.float32)
    h, w = img.shape[:2]
    if f.shape != (h, w, 2):
        raise ValueError(f"flow must have shape {(h, w, 2)}, got {f.shape}")
    bad = ~(np.isfinite(f[..., 0]) & np.isfinite(f[..., 1]))
    any_bad = bool(bad.any())
    if any_bad:
        f = np.where(bad[..., None], np.float32(0.0), f)
    mx = np.arange(w, dtype=np.float32)[None, :] - f[..., 0]
    my = np.arange(h, dtype=np.float32)[:, None] - f[..., 1]
    out = cv2.remap(img, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    if img.ndim == 3 and out.ndim == 2:  # OpenCV drops a single channel
        out = out[..., None]
    if any_bad:
        out[bad] = np.nan
    if not with_inside:
        return out
    return out, ~bad & (mx >= 0) & (mx <= w - 1) & (my >= 0) & (my <= h - 1)


def frame_gradient(frame):
    """(∂x, ∂y) of every channel of an (H, W, C) float32 frame (3x3 Sobel / 8):
    two (H, W, C) float32 arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.image.warp import frame_gradient
    >>> gx, gy = frame_gradient(np.tile(np.arange(6, dtype=np.float32), (4, 1))[..., None])
    >>> float(gx[2, 2, 0]), float(gy[2, 2, 0])
    (1.0, 0.0)
    """
    import cv2

    gx = np.stack([cv2.Sobel(frame[..., c], cv2.CV_32F, 1, 0, ksize=3) / 8.0
                   for c in range(frame.shape[2])], axis=2)
    gy = np.stack([cv2.Sobel(frame[..., c], cv2.CV_32F, 0, 1, ksize=3) / 8.0
                   for c in range(frame.shape[2])], axis=2)
    return gx, gy
