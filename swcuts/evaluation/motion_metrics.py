"""Scores of a motion segmentation against ground truth.

* :func:`endpoint_error`: mean end-point error (EPE), the Euclidean
  distance between estimated and true flow vectors, in pixels [1]_;
* :func:`angular_error`: mean angular error (AE) between the space-time
  vectors ``(u, v, 1)``, in degrees [1]_;
* :func:`object_voi`: variation of information between object label
  images (:func:`swcuts.evaluation.metrics.variation_of_information`);
* :func:`warp_frame1` (the one warp of swcuts), :func:`frame_gradient` and :func:`warp_residual`: frame 1 brought onto the
  grid of frame 2 by a flow (bilinear), and the photometric residual, to
  check a flow and its convention: ``frame2(x) ~ frame1(x - flow(x))``.

Pixels where the truth is unknown (NaN, or a component above ``1e9`` in
absolute value, the Middlebury convention) are left out. Where the
*estimate* is NaN (e.g. pixels labelled nil / half-occluded) it is scored
as zero flow, so a method cannot lower its error by abstaining; pass a
``mask`` to score a subset only.

References
----------
.. [1] S. Baker, D. Scharstein, J. P. Lewis, S. Roth, M. J. Black,
   R. Szeliski, "A database and evaluation methodology for optical flow",
   IJCV 92(1), 2011.
"""

from __future__ import annotations

import numpy as np

from swcuts.io.flow import UNKNOWN_FLOW_THRESH
from swcuts.evaluation.metrics.regions import variation_of_information
from swcuts.image.warp import warp_frame1

__all__ = ["endpoint_error", "angular_error", "object_voi", "flow_scores", "warp_residual"]


def _pair(flow, truth, mask):
    f = np.asarray(flow, dtype=np.float64)
    t = np.asarray(truth, dtype=np.float64)
    if f.ndim != 3 or f.shape[2] != 2:
        raise ValueError(f"flow must have shape (H, W, 2), got {f.shape}")
    if t.shape != f.shape:
        raise ValueError(f"flow and truth differ in shape: {f.shape} vs {t.shape}")
    known = np.all(np.abs(t) <= UNKNOWN_FLOW_THRESH, axis=-1)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != f.shape[:2]:
            raise ValueError(f"mask must have shape {f.shape[:2]}, got {m.shape}")
        known &= m
    f = np.where(np.isfinite(f), f, 0.0)
    return f[known], t[known]


def endpoint_error(flow, truth, mask=None) -> float:
    """Mean end-point error ``mean ||flow - truth||`` in pixels.

    Parameters
    ----------
    flow, truth : array_like, shape (H, W, 2)
        Estimated and true ``(u, v)``. Unknown truth (NaN or
        ``|component| > 1e9``) is left out; NaN in ``flow`` counts as 0.
    mask : array_like of bool, shape (H, W), optional
        Score only these pixels.

    Returns
    -------
    float
        The mean EPE, NaN if no pixel is scored.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.evaluation.motion_metrics import endpoint_error
    >>> t = np.zeros((2, 2, 2)); t[0, 0] = np.nan
    >>> f = np.full((2, 2, 2), [3.0, 4.0])
    >>> endpoint_error(f, t)
    5.0
    """
    f, t = _pair(flow, truth, mask)
    if len(f) == 0:
        return float("nan")
    return float(np.mean(np.hypot(f[:, 0] - t[:, 0], f[:, 1] - t[:, 1])))


def angular_error(flow, truth, mask=None) -> float:
    """Mean angular error between ``(u, v, 1)`` and ``(u_t, v_t, 1)``, degrees.

    Parameters
    ----------
    flow, truth : array_like, shape (H, W, 2)
        Estimated and true ``(u, v)``; unknown truth is left out, NaN in
        ``flow`` counts as 0.
    mask : array_like of bool, shape (H, W), optional
        Score only these pixels.

    Returns
    -------
    float
        Mean angle in degrees, NaN if no pixel is scored.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.evaluation.motion_metrics import angular_error
    >>> round(angular_error(np.ones((1, 1, 2)), np.zeros((1, 1, 2))), 3)
    54.736
    """
    f, t = _pair(flow, truth, mask)
    if len(f) == 0:
        return float("nan")
    num = 1.0 + f[:, 0] * t[:, 0] + f[:, 1] * t[:, 1]
    den = np.sqrt((1.0 + (f ** 2).sum(1)) * (1.0 + (t ** 2).sum(1)))
    return float(np.degrees(np.mean(np.arccos(np.clip(num / den, -1.0, 1.0)))))


def object_voi(objects, truth) -> float:
    """Variation of information between object label images (nats).

    A thin wrapper of :func:`swcuts.evaluation.metrics.variation_of_information`:
    0 iff the two partitions coincide up to renaming; lower is better.

    Parameters
    ----------
    objects, truth : array_like of int, shape (H, W)

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.evaluation.motion_metrics import object_voi
    >>> a = np.array([[0, 0, 1, 1]])
    >>> object_voi(a, 5 - a)
    0.0
    """
    return variation_of_information(objects, truth)


def flow_scores(flow, truth, mask=None) -> dict:
    """EPE and AE in one dict (``{"epe": ..., "ae": ...}``).

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.evaluation.motion_metrics import flow_scores
    >>> flow_scores(np.zeros((1, 1, 2)), np.zeros((1, 1, 2)))
    {'epe': 0.0, 'ae': 0.0}
    """
    return {"epe": endpoint_error(flow, truth, mask), "ae": angular_error(flow, truth, mask)}


def warp_residual(frame1, frame2, flow, mask=None) -> float:
    """Mean absolute difference between frame 2 and frame 1 warped by ``flow``.

    Averaged over channels and over the pixels where the flow is known (and
    ``mask``, if given).

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.evaluation.motion_metrics import warp_residual
    >>> f1 = np.arange(5.0)[None, :].repeat(3, 0)
    >>> warp_residual(f1, f1 + 1, np.full((3, 5, 2), [-1.0, 0.0]), mask=np.s_[:, :4])
    0.0
    """
    pred = warp_frame1(frame1, flow)
    diff = np.abs(pred - np.asarray(frame2, dtype=np.float64))
    if diff.ndim == 3:
        diff = diff.mean(-1)
    keep = np.isfinite(diff)
    if mask is not None:
        m = np.zeros(diff.shape, bool)
        m[mask] = True
        keep &= m
    return float(diff[keep].mean()) if keep.any() else float("nan")
