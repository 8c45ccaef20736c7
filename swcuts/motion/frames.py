"""The two frames of a motion pair, validated and scaled together
(:func:`_as_frames`, used by :func:`swcuts.motion.segment.segment_motion`
and the ``swcuts motion`` command)."""

from __future__ import annotations

import numpy as np

from swcuts.io.errors import check_number

__all__ = ["UNLIKE_MEDIAN", "UNLIKE_SPREAD"]


def _as_frames(frame1, frame2, channel_axis):
    """Both frames as (H, W, C) float32 on the 0..255 scale, C = 1 or 3.

    Validated and scaled as :func:`~swcuts.image.prepare.prepare_image` does
    (its display image: grey or RGB, alpha dropped). Frames of one type
    are scaled together, with the two side by side, so that a rescale by
    the values (the min..max of floats outside [0, 1] or of wide integers,
    the sample depth of 16-bit frames) is the same for both and their
    intensities stay comparable. Frames of different types (uint8 with
    uint16, uint8 with floats in [0, 1], floats in [0, 1] with floats on
    another scale) are each scaled by their own type, except that a frame
    scaled by its own min..max whose values lie in the other frame's fixed
    range (e.g. uint8 data as int64 or as floats 0..255, beside uint8) is
    scaled by that range. A warning (one line) says when the scaled
    frames still differ a lot in brightness (:func:`_warn_if_unlike`)."""
    from swcuts.image.prepare import image_scale, prepare_image, refuse_path, validate_image

    refuse_path(frame1, "segment_motion", "frame1")
    refuse_path(frame2, "segment_motion", "frame2")
    a1, a2 = np.asarray(frame1), np.asarray(frame2)
    if a1.ndim == 3 and a2.ndim == 3 and channel_axis is not None:
        check_number("channel_axis", channel_axis, integer=True)
        if not -3 <= channel_axis <= 2:
            raise ValueError(f"channel_axis {channel_axis} is out of range for 3-D frames")
        a1, a2 = np.moveaxis(a1, channel_axis, -1), np.moveaxis(a2, channel_axis, -1)
    if a1.shape != a2.shape:
        raise ValueError(f"the frames differ in size or channels: {a1.shape} and {a2.shape}")
    if a1.ndim not in (2, 3):
        raise ValueError(f"the frames must be (H, W) or (H, W, C) images, got shape {a1.shape}")
    if min(a1.shape[:2]) < 2:
        raise ValueError(f"the frames are {a1.shape[0]}x{a1.shape[1]}; at least 2x2 pixels are needed")
    v1, v2 = validate_image(a1, channel_axis=-1), validate_image(a2, channel_axis=-1)
    s1, s2 = image_scale(v1), image_scale(v2)
    if v1.dtype == v2.dtype and s1.rule == s2.rule or s1.rule == s2.rule == "minmax":
        # One type: scaled together, as one image (its depth or min..max).
        _, display = prepare_image(np.concatenate([a1, a2], axis=1), channel_axis=-1)
        w = a1.shape[1]
        d1, d2 = display[:, :w], display[:, w:]
    else:
        s1, s2 = _within(s1, s2), _within(s2, s1)
        s1.say()
        s2.say()
        d1, d2 = s1.apply(v1), s2.apply(v2)
        if d1.ndim != d2.ndim:  # one frame grey, the other colour
            d1, d2 = (np.dstack([d] * 3) if d.ndim == 2 else d for d in (d1, d2))
    _warn_if_unlike(d1, d2)
    d1, d2 = (d if d.ndim == 3 else d[..., None] for d in (d1, d2))
    return tuple(np.ascontiguousarray((d * 255.0).astype(np.float32)) for d in (d1, d2))


def _within(scale, other):
    """``other``'s fixed scale for a frame whose own is its min..max and
    whose values lie in ``other``'s range (``scale`` otherwise)."""
    if scale.rule == "minmax" and other.fixed and other.lo <= scale.lo and scale.hi <= other.hi:
        return other._replace(note=None)
    return scale


#: The scaled frames differ "a lot" (:func:`_warn_if_unlike`): their median
#: intensities by more than this (on 0..1), or the spreads of their 1st to
#: 99th percentiles by more than this factor.
UNLIKE_MEDIAN, UNLIKE_SPREAD = 0.25, 3.0


def _warn_if_unlike(d1, d2) -> None:
    """One warning line when two frames scaled to [0, 1] differ a lot in
    brightness or contrast: the flow's data term compares their intensities."""
    import warnings

    stats = [np.percentile(d, [1, 50, 99]) for d in (d1, d2)]
    spreads = [max(hi - lo, 1e-3) for lo, _, hi in stats]
    if abs(stats[0][1] - stats[1][1]) <= UNLIKE_MEDIAN and max(spreads) / min(spreads) <= UNLIKE_SPREAD:
        return
    shown = "; ".join(f"frame {i + 1}: median {m:.2f}, 1-99 % range {lo:.2f}..{hi:.2f}"
                      for i, (lo, m, hi) in enumerate(stats))
    warnings.warn(f"the frames differ a lot in brightness after scaling ({shown}); the flow assumes "
                  f"the same brightness in both: check that they are the same kind of image",
                  UserWarning, stacklevel=3)
