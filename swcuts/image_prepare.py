"""Validating a user's image array and converting it to the models'
features and a display image (:func:`prepare_image`)."""

from __future__ import annotations

import os

import numpy as np

from .errors import InputError, InputTypeError, _one_line, describe, is_integer

__all__ = ["prepare_image"]


def prepare_image(image, *, channel_axis=-1) -> tuple[np.ndarray, np.ndarray]:
    """Validate a user image and convert it to model features and a display image.

    Parameters
    ----------
    image : array_like
        Any numeric array (``bool``, signed/unsigned integer or float dtype),
        either 2-D ``(H, W)`` greyscale or 3-D with the channels on
        `channel_axis`, following scikit-image conventions.  Channel counts:
        1 = grey, 2 = grey + alpha, 3 = RGB, 4 = RGBA.  Alpha channels are
        dropped (not composited): grey+alpha is treated as grey, RGBA as RGB.
        RGB(A) whose three colour channels are equal is treated as grey.
    channel_axis : int or None, optional
        Axis of a 3-D `image` holding the channels (default last).  A 2-D
        image is always greyscale whatever this is.  ``None`` means the image
        must be 2-D greyscale.

    Returns
    -------
    features : ndarray of float64, shape (H, W, C)
        C-contiguous features in ``[0, 1]``.  ``C = 1`` for grey images (the
        grey values); ``C = 3`` for colour images: CIELAB from
        :func:`skimage.color.rgb2lab` scaled as ``L/100``, ``(a+128)/256``,
        ``(b+128)/256`` and clipped to ``[0, 1]``.
    display : ndarray of float64, shape (H, W) or (H, W, 3)
        C-contiguous grey or RGB image in ``[0, 1]`` for drawing overlays
        (grey when the features are).

    Raises
    ------
    TypeError
        If `image` is not convertible to a numeric (bool/int/float) array.
    InputError
        If the image is not 2-D or 3-D, is smaller than 2x2 pixels, has more
        than 4 channels, or contains NaN or infinite values.

    Notes
    -----
    Intensity scaling to ``[0, 1]``:

    * ``bool``: False -> 0, True -> 1.
    * ``uint8``/``uint16`` (and ``int8``/``int16``): by the dtype's range,
      as :func:`skimage.util.img_as_float` does for unsigned types, so a
      16-bit white pixel becomes 1.0.  Signed types map ``min..max`` of the
      dtype to ``0..1``.
    * Wider integers (32/64 bit): the dtype range would squash any
      realistic image to ~0, so these are rescaled linearly from the
      image's own min..max to ``0..1``, like out-of-range floats.
    * Floats: kept if all values lie in ``[0, 1]``, otherwise rescaled
      linearly from min..max to ``0..1`` (a constant image becomes all 0).

    For colour images the min..max rescale is taken jointly over the colour
    channels (after dropping alpha), so hues are preserved.
    """
    if channel_axis is not None and not is_integer(channel_axis):  # for a grey image too
        raise InputTypeError(f"channel_axis must be an int or None, got {describe(channel_axis)}")
    arr = _as_numeric_array(image)

    if arr.ndim not in (2, 3):
        raise InputError(
            f"image has {arr.ndim} dimensions (shape {arr.shape}); swcuts needs a 2-D greyscale "
            f"(H, W) or 3-D colour (H, W, C) image"
        )
    if arr.ndim == 3:
        if channel_axis is None:
            raise InputError(
                f"image has shape {arr.shape} but channel_axis=None requires a 2-D greyscale image; "
                f"pass channel_axis=<axis of the channels> for a colour image"
            )
        axis = int(channel_axis)
        if not -3 <= axis <= 2:
            raise InputError(f"channel_axis={axis} is out of range for a 3-D image of shape {arr.shape}; use 0, 1, 2 or -1")
        arr = np.moveaxis(arr, axis, -1)

    h, w = arr.shape[:2]
    if h < 2 or w < 2:
        raise InputError(f"image is {h}x{w}; swcuts needs at least 2x2 pixels")
    n_channels = arr.shape[2] if arr.ndim == 3 else 1
    if arr.ndim == 3 and not 1 <= n_channels <= 4:
        hint = ""
        if channel_axis is not None and any(1 <= s <= 4 for s in arr.shape[:2]):
            hint = " (if the channels are on another axis, pass channel_axis=)"
        raise InputError(
            f"image has {n_channels} channels; swcuts takes grey, grey+alpha, RGB or RGBA (at most 4){hint}"
        )
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise InputError("image contains NaN or infinite values; replace or mask them (e.g. np.nan_to_num) before segmenting")

    # Drop alpha, squeeze grey (also RGB with three equal channels, a grey
    # photo saved as colour: as colour its constant chroma would still pay
    # the likelihood's complexity cost, and its segmentation would differ).
    if arr.ndim == 3:
        if n_channels in (1, 2):
            arr = arr[..., 0]
        elif n_channels == 4:
            arr = arr[..., :3]
    if arr.ndim == 3 and np.array_equal(arr[..., 0], arr[..., 1]) and np.array_equal(arr[..., 0], arr[..., 2]):
        arr = arr[..., 0]

    scaled = _to_unit_float(arr)

    display = np.ascontiguousarray(scaled, dtype=np.float64)
    if display.ndim == 2:
        features = np.ascontiguousarray(display[..., np.newaxis])
    else:
        from skimage.color import rgb2lab

        lab = rgb2lab(display)
        features = np.empty(lab.shape, dtype=np.float64)
        features[..., 0] = lab[..., 0] / 100.0
        features[..., 1] = (lab[..., 1] + 128.0) / 256.0
        features[..., 2] = (lab[..., 2] + 128.0) / 256.0
        np.clip(features, 0.0, 1.0, out=features)
    return features, display


def _as_numeric_array(image) -> np.ndarray:
    if isinstance(image, (str, bytes, os.PathLike)):
        raise TypeError(
            f"image must be a numeric array, got a {type(image).__name__}; "
            f"to read a file, call swcuts.imageio.load_image(path) first"
        )
    try:
        arr = np.asarray(image)
    except Exception as exc:
        raise TypeError(f"image must be a numeric array; could not convert {type(image).__name__} ({_one_line(exc)})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"image must have a bool, integer or float dtype, got {arr.dtype} "
            f"from {type(image).__name__}; convert it to a numeric array first"
        )
    return arr


def _to_unit_float(arr: np.ndarray) -> np.ndarray:
    """Scale a bool/int/float array to float64 in [0, 1] (see prepare_image)."""
    kind = arr.dtype.kind
    if kind == "b":
        return arr.astype(np.float64)
    if kind == "u" and arr.dtype.itemsize <= 2:
        from skimage.util import img_as_float

        return img_as_float(arr).astype(np.float64, copy=False)
    if kind == "i" and arr.dtype.itemsize <= 2:
        info = np.iinfo(arr.dtype)
        return (arr.astype(np.float64) - info.min) / (float(info.max) - float(info.min))
    out = arr.astype(np.float64)
    if kind == "f" and out.size and out.min() >= 0.0 and out.max() <= 1.0:
        return out
    return _minmax(out)


def _minmax(x: np.ndarray) -> np.ndarray:
    lo = x.min()
    hi = x.max()
    if not hi > lo:
        return np.zeros_like(x)
    out = (x - lo) / (hi - lo)
    np.clip(out, 0.0, 1.0, out=out)
    return out
