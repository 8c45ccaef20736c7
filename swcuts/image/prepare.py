"""Validating a user's image array and converting it to the models'
features and a display image (:func:`prepare_image`)."""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import numpy as np

from swcuts.io.errors import InputError, InputTypeError, one_line, show_path, describe, is_integer

__all__ = ["prepare_image", "refuse_path", "image_scale", "ImageScale", "ImageScaleWarning"]


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
    Intensity scaling to ``[0, 1]`` (:func:`image_scale`), by the type of
    the image (a dark 8- or 16-bit photo is not stretched):

    * ``bool``: False -> 0, True -> 1.
    * ``uint8``, ``int8`` and ``int16`` with negative values: by the
      dtype's range, as :func:`skimage.util.img_as_float` does for
      unsigned types.  Signed types map ``min..max`` of the dtype to ``0..1``.
    * ``uint16`` (and ``int16`` without negative values): by the range its
      samples use.  Cameras and scientific formats store 10-, 12- and
      14-bit samples in 16-bit files, which by the 16-bit range would be
      near black (and one segment).  So the image is taken as k-bit data
      when its brightest value is at most ``2**k - 1`` for k = 8, 10, 12 or
      14 (the smallest such k), and scaled by ``0..2**k - 1``, with a
      warning (one line, :class:`ImageScaleWarning`) that says so;
      otherwise by ``0..65535`` (``0..32767`` for ``int16``).  Black stays 0 and the gain is a power
      of two, so the image's own contrast is kept.  The exception is 8-bit
      data expanded to 16 bits (every value a multiple of 257, as
      ``img_as_uint`` and PNG's scaling make it, or of 256, ``<< 8``): it
      keeps the 16-bit range, so a dark photo segments as its 8-bit
      original does.  A genuinely 16-bit photo whose brightest pixel is
      below a quarter of white cannot be told from 14-bit data by its
      values, and is brightened (the warning says by how much); to keep the
      16-bit range, pass ``image / 65535`` (floats in ``[0, 1]`` are used as
      they are).
    * Wider integers (32/64 bit): the dtype range would squash any
      realistic image to ~0, so these are rescaled linearly from the
      image's own min..max to ``0..1``, like out-of-range floats.
    * Floats: kept if all values lie in ``[0, 1]``, otherwise rescaled
      linearly from min..max to ``0..1`` (a constant image becomes all 0).

    For colour images the scale is taken jointly over the colour channels
    (after dropping alpha), so hues are preserved.
    """
    arr = validate_image(image, channel_axis=channel_axis)
    scale = image_scale(arr)
    scale.say()
    return unit_features(scale.apply(arr))


def validate_image(image, *, channel_axis=-1) -> np.ndarray:
    """The checks and channels of :func:`prepare_image`, before scaling.

    Parameters
    ----------
    image : array_like
        As for :func:`prepare_image`.
    channel_axis : int or None, optional
        As for :func:`prepare_image`.

    Returns
    -------
    ndarray, shape (H, W) or (H, W, 3)
        The image in its own dtype: grey, or colour with the channels
        last; alpha dropped, RGB with three equal channels squeezed to grey.

    Raises
    ------
    TypeError, InputError
        As :func:`prepare_image`.
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
    return arr


def unit_features(scaled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The features and display image of :func:`prepare_image`.

    Parameters
    ----------
    scaled : ndarray, shape (H, W) or (H, W, 3)
        The validated image scaled to ``[0, 1]`` (:meth:`ImageScale.apply`).

    Returns
    -------
    features, display : ndarray of float64
        As :func:`prepare_image` returns them.
    """
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


def refuse_path(value, caller: str, what: str = "the image") -> None:
    """Refuse a file name given where an image array belongs, saying what
    to call (one line, :class:`TypeError`).

    Parameters
    ----------
    value : object
        What the user passed.
    caller : str
        The public function, e.g. ``"segment"``.
    what : str
        The argument in words, e.g. ``"the image"`` or ``"frame1"``.

    Raises
    ------
    TypeError
        If `value` is a ``str``, ``bytes`` or ``os.PathLike``: swcuts'
        functions take arrays (scikit-image's convention); files are read
        with :func:`swcuts.load_image`.
    """
    if not isinstance(value, (str, bytes, os.PathLike)):
        return
    try:
        shown = show_path(os.fsdecode(value))
    except (TypeError, ValueError):
        shown = ""
    if isinstance(value, bytes) and (len(value) > 200 or not shown.isprintable()):
        raise TypeError(f"{caller}() takes {what} as an array, got bytes; decode the image first, e.g. "
                        f"swcuts.load_image(path) or skimage.io.imread")
    shown = shown if len(shown) <= 120 else shown[:60] + "..." + shown[-57:]
    raise TypeError(f"{caller}() takes {what} as an array, got the path '{shown}'; read the file "
                    f"first: swcuts.load_image('{shown}') (or skimage.io.imread)")


def _as_numeric_array(image) -> np.ndarray:
    refuse_path(image, "prepare_image")
    try:
        arr = np.asarray(image)
    except Exception as exc:
        raise TypeError(f"image must be a numeric array; could not convert {type(image).__name__} ({one_line(exc)})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"image must have a bool, integer or float dtype, got {arr.dtype} "
            f"from {type(image).__name__}; convert it to a numeric array first"
        )
    return arr


#: Sample depths (bits) that a 16-bit image may hold (:func:`image_scale`).
DEPTHS = (8, 10, 12, 14)


class ImageScaleWarning(UserWarning):
    """An image is scaled by a sample depth detected from its values (the
    Notes of :func:`prepare_image`); filter it to silence the line."""


class ImageScale(NamedTuple):
    """How an image's values map to ``[0, 1]``: ``lo`` to 0, ``hi`` to 1.

    ``rule`` is ``"bool"``, ``"dtype"`` (the dtype's range), ``"depth"``
    (``0..2**bits - 1`` of k-bit samples in a 16-bit image), ``"unit"``
    (floats already in ``[0, 1]``) or ``"minmax"`` (the image's own range);
    ``note`` is the line that says a detected depth, or None.
    """

    rule: str
    lo: float
    hi: float
    bits: int = 0
    note: str | None = None

    @property
    def fixed(self) -> bool:
        """Whether the scale follows from the type (not from min..max)."""
        return self.rule != "minmax"

    def say(self) -> None:
        """Warn, one line, when the scale is a detected sample depth."""
        if self.note:
            warnings.warn(self.note, ImageScaleWarning, stacklevel=2)

    def apply(self, arr: np.ndarray) -> np.ndarray:
        """``arr`` as float64 in ``[0, 1]``."""
        kind = arr.dtype.kind
        if self.rule == "bool" or self.rule == "unit":  # lo 0, hi 1
            return arr.astype(np.float64)
        if self.rule == "dtype" and kind == "u" and self.hi == np.iinfo(arr.dtype).max:
            from skimage.util import img_as_float

            return img_as_float(arr).astype(np.float64, copy=False)
        if self.rule == "dtype" or self.rule == "depth":
            return (arr.astype(np.float64) - self.lo) / (self.hi - self.lo)
        out = arr.astype(np.float64)
        if not self.hi > self.lo:
            return np.zeros_like(out)
        out = (out - self.lo) / (self.hi - self.lo)
        np.clip(out, 0.0, 1.0, out=out)
        return out


def image_scale(arr: np.ndarray) -> ImageScale:
    """How :func:`prepare_image` scales an image to ``[0, 1]``.

    Parameters
    ----------
    arr : ndarray
        A validated image (:func:`validate_image`).

    Returns
    -------
    ImageScale
        The rule of the Notes of :func:`prepare_image` for ``arr``, with
        the line to say when it is a detected sample depth.

    Examples
    --------
    >>> import numpy as np
    >>> image_scale(np.array([[0, 4000], [17, 2]], np.uint16))[:4]
    ('depth', 0.0, 4095.0, 12)
    >>> image_scale(np.array([[0, 4000], [17, 2]], np.uint16) * 16).rule  # 16-bit data
    'dtype'
    >>> image_scale(np.array([[0, 10], [3, 2]], np.uint16) * 257).rule  # 8-bit data as 16-bit
    'dtype'
    """
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind == "b":
        return ImageScale("bool", 0.0, 1.0)
    if kind in "iu" and size <= 2:
        info = np.iinfo(arr.dtype)
        if size == 2 and arr.size and (kind == "u" or int(arr.min()) >= 0):
            return _depth_scale(arr)
        return ImageScale("dtype", float(info.min), float(info.max))
    if kind == "f" and arr.size and arr.min() >= 0.0 and arr.max() <= 1.0:
        return ImageScale("unit", 0.0, 1.0)
    return ImageScale("minmax", float(arr.min()), float(arr.max()))


def _depth_scale(arr: np.ndarray) -> ImageScale:
    """The scale of a 16-bit image without negative values (Notes of
    :func:`prepare_image`)."""
    top = int(arr.max())
    full = int(np.iinfo(arr.dtype).max)
    bits = next((k for k in DEPTHS if top <= 2**k - 1), None) if top else None
    if bits is not None and (not (arr % 257).any() or not (arr % 256).any()):
        bits = None  # 8-bit data expanded to 16 bits (x 257, << 8): its range is 16-bit
    if bits is None:
        if arr.dtype.kind == "u":
            return ImageScale("dtype", 0.0, float(full))
        return ImageScale("depth", 0.0, float(full), 15)
    hi = 2**bits - 1
    note = (f"image is {arr.dtype} with values up to {top}: taken as {bits}-bit data, scaled by "
            f"0..{hi} ({(full + 1) // (hi + 1)}x brighter than by the {arr.dtype} range 0..{full}); "
            f"to keep the {arr.dtype} range, pass image / {full}")
    return ImageScale("depth", 0.0, float(hi), bits, note)


def _to_unit_float(arr: np.ndarray) -> np.ndarray:
    """Scale a bool/int/float array to float64 in [0, 1] (see prepare_image)."""
    return image_scale(arr).apply(arr)


def _minmax(x: np.ndarray) -> np.ndarray:
    return ImageScale("minmax", float(x.min()), float(x.max())).apply(x)
