"""Reading, validating and writing images for swcuts.

This module is the boundary between user files/arrays and the rest of the
package.  Everything a user can get wrong is checked here, before any
expensive work starts, and reported as an :class:`InputError` whose message
is a single line saying what is wrong and how to fix it.

* :func:`load_image` reads PNG (8 and 16 bit), JPEG, TIFF and ``.npy`` files.
* :func:`prepare_image` turns any numeric array into the float64 ``features``
  the models use and a ``display`` image for drawing overlays.
* :func:`check_memory` refuses jobs that would not fit in memory.
* :func:`atomic_write` and the ``save_*`` helpers never leave a partial
  output file behind.
"""

from __future__ import annotations

import errno
import numbers
import os
import re
import secrets
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = [
    "InputError",
    "load_image",
    "prepare_image",
    "check_memory",
    "estimate_memory",
    "available_memory",
    "atomic_write",
    "save_label_png",
    "save_rgb_png",
    "save_npy",
]

#: Default estimate of the memory segmentation needs per image pixel (bytes).
BYTES_PER_PIXEL = 200
#: Default estimate of the memory segmentation needs per graph vertex (bytes).
BYTES_PER_VERTEX = 2048
#: Per vertex of a pixel graph, for the samplers that read the pixels'
#: statistics from position, values and bins (not rows of ~1.2 KB each):
#: graph, patch histograms, edge probabilities and sampler bookkeeping.
#: Measured: a 1-megapixel multigrid run peaks at 0.67-0.89 GB.
BYTES_PER_PIXEL_VERTEX = 1024

_NPY_MAGIC = b"\x93NUMPY"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_READABLE = "PNG, JPEG, TIFF or .npy"


class InputError(ValueError):
    """A user's input is unusable.

    The message is a single line that says what is wrong and how to fix it,
    suitable for printing directly to a terminal without a traceback.
    """


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def load_image(path) -> np.ndarray:
    """Read an image file into a numpy array.

    Parameters
    ----------
    path : str or os.PathLike
        A PNG (8 or 16 bit, grey, grey+alpha, palette, RGB or RGBA), JPEG,
        TIFF or ``.npy`` file.  A ``.npy`` file is recognised by its suffix or
        by its magic bytes and is read with ``np.load(allow_pickle=False)``.

    Returns
    -------
    image : ndarray
        The pixel array in the file's own dtype (e.g. ``uint8``, ``uint16``,
        ``bool``, ``float32``), shape ``(H, W)`` or ``(H, W, C)``.  Palette
        images are expanded to RGB(A).  For animated or multi-page files only
        the first frame/page is returned.  JPEG EXIF orientation is applied,
        so the array looks like the image does in a viewer.  No validation of
        the array itself is done here; pass it to :func:`prepare_image`.

    Raises
    ------
    InputError
        If the file does not exist, is a directory, cannot be read, or is not
        an image file swcuts can read.
    """
    p = Path(os.fspath(path))
    if not p.exists():
        raise InputError(f"image file '{_show(p)}' does not exist; check the path and spelling")
    if p.is_dir():
        raise InputError(f"'{_show(p)}' is a directory, not an image file; pass the path of a single image file")
    not_image = InputError(f"'{_show(p)}' is not an image file that swcuts can read ({_READABLE})")
    try:
        with open(p, "rb") as fh:
            head = fh.read(32)
    except PermissionError:
        raise InputError(f"image file '{_show(p)}' cannot be read (permission denied); fix its permissions or copy it somewhere readable") from None
    except OSError as exc:
        raise InputError(f"image file '{_show(p)}' cannot be read ({_one_line(exc)})") from None
    if not head:
        raise InputError(f"image file '{_show(p)}' is empty; re-export or re-download the image")

    suffix = p.suffix.lower()
    tiff = head[:4] in (b"II*\x00", b"MM\x00*")
    try:
        # The content decides before the name: a PNG saved as x.npy is a PNG.
        if head.startswith(_NPY_MAGIC):
            image = np.load(p, allow_pickle=False)
        elif tiff:
            image = _read_tiff(p)
        elif head.startswith(_PNG_MAGIC):
            image = _read_png(p, head)
        elif suffix == ".npy":
            raise InputError(f"'{_show(p)}' is named .npy but is not a NumPy .npy file (no .npy "
                             f"header); save it with numpy.save, or pass the image file itself")
        elif suffix in (".tif", ".tiff"):
            image = _read_tiff(p)
        else:
            image = _read_generic(p, exif_rotate=suffix in (".jpg", ".jpeg") or head[:3] == b"\xff\xd8\xff")
    except (MemoryError, InputError):
        raise
    except Exception:
        raise not_image from None
    if not isinstance(image, np.ndarray) or image.dtype == object:
        raise not_image
    # Video-like arrays (frames, H, W[, C]) from odd plugins: keep frame 0.
    while image.ndim > 3 and image.shape[0] >= 1 and not head.startswith(_NPY_MAGIC):
        image = image[0]
    return image


def _read_generic(p: Path, exif_rotate: bool) -> np.ndarray:
    import warnings

    import imageio.v3 as iio

    from PIL import Image

    # Always Pillow (PNG, JPEG, GIF, BMP, WebP, TIFF, ...): letting imageio
    # probe every plugin on a non-image file is slow, warns and leaks handles.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # check_memory says it better
        limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
        try:
            with Image.open(p) as im:
                mode, frames, (w, h) = im.mode, getattr(im, "n_frames", 1), im.size
            # Pillow refuses very large images as "decompression bombs": say
            # instead whether it fits in memory (one line, with what does).
            if limit is not None and h * w > limit:
                check_memory((h, w), min(h * w, 1000))
            # CMYK (some JPEGs) is converted by Pillow, not read as inverted RGBA.
            kwargs = {"mode": "RGB"} if mode == "CMYK" else {}
            image = np.asarray(iio.imread(p, index=0, plugin="pillow", rotate=exif_rotate, **kwargs))
        finally:
            Image.MAX_IMAGE_PIXELS = limit
    if frames > 1:
        _warn_pages(p, frames)
    return image


def _warn_pages(p: Path, pages: int) -> None:
    import warnings

    warnings.warn(f"'{_show(p)}' holds {pages} pages or frames; swcuts uses the first", UserWarning,
                  stacklevel=3)


def _read_png(p: Path, head: bytes) -> np.ndarray:
    # Pillow silently reduces 16-bit colour PNGs to 8 bits; OpenCV does not.
    bit_depth, colour_type = head[24], head[25]
    if bit_depth == 16 and colour_type in (2, 4, 6):
        import cv2

        data = np.fromfile(p, dtype=np.uint8)  # avoids cv2's path-encoding issues
        arr = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
        if arr is None:
            raise ValueError("OpenCV could not decode the PNG")
        if arr.ndim == 3 and arr.shape[2] == 3:
            arr = arr[..., ::-1]  # BGR -> RGB
        elif arr.ndim == 3 and arr.shape[2] == 4:
            if colour_type == 4:  # grey+alpha was expanded to BGRA
                arr = arr[..., [0, 3]]
            else:
                arr = arr[..., [2, 1, 0, 3]]  # BGRA -> RGBA
        return np.ascontiguousarray(arr)
    return _read_generic(p, exif_rotate=False)


def _read_tiff(p: Path) -> np.ndarray:
    try:
        import tifffile
    except ImportError:  # pragma: no cover - tifffile ships with scikit-image
        return _read_generic(p, exif_rotate=False)
    try:
        with tifffile.TiffFile(p) as tf:
            if len(tf.pages) > 1:
                _warn_pages(p, len(tf.pages))
            page = tf.pages[0]
            if int(page.photometric) == 3:  # palette: let Pillow apply the colormap
                raise ValueError("palette TIFF")
            arr = page.asarray()
            if int(page.planarconfig) == 2 and arr.ndim == 3:  # channels first
                arr = np.moveaxis(arr, 0, -1)
            return np.ascontiguousarray(arr)
    except Exception:
        # Palette TIFFs and codecs tifffile lacks: Pillow expands palettes to RGB(A).
        return _read_generic(p, exif_rotate=False)


# ---------------------------------------------------------------------------
# Validation and conversion
# ---------------------------------------------------------------------------


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
        C-contiguous grey or RGB image in ``[0, 1]`` for drawing overlays.

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
        if isinstance(channel_axis, bool) or not isinstance(channel_axis, numbers.Integral):
            raise InputError(f"channel_axis must be an int or None, got {channel_axis!r}")
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

    # Drop alpha, squeeze grey.
    if arr.ndim == 3:
        if n_channels in (1, 2):
            arr = arr[..., 0]
        elif n_channels == 4:
            arr = arr[..., :3]

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


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------


def estimate_memory(shape, n_atoms_or_pixels, *, bytes_per_pixel=BYTES_PER_PIXEL,
                    bytes_per_vertex=BYTES_PER_VERTEX) -> int:
    """Estimate the peak memory (bytes) a segmentation run needs.

    Parameters
    ----------
    shape : tuple of int
        Image shape ``(H, W)`` or ``(H, W, C)``; only ``H * W`` is used.
    n_atoms_or_pixels : int
        Number of vertices of the graph being partitioned: the number of
        atoms (superpixels), or ``H * W`` for a pixel-level graph.
    bytes_per_pixel : float, optional
        Per-pixel cost (default 200 B: features, display, label maps and
        the per-pixel temporaries of edge and likelihood computation).
    bytes_per_vertex : float, optional
        Per-vertex cost (default 2 KiB: adjacency lists, edge weights,
        per-region statistics and sampler bookkeeping).

    Returns
    -------
    int
        ``H * W * bytes_per_pixel + n_atoms_or_pixels * bytes_per_vertex``.
    """
    h, w = _hw(shape)
    n = int(n_atoms_or_pixels)
    if n < 0:
        raise InputError(f"number of atoms must be >= 0, got {n}")
    return int(h * w * float(bytes_per_pixel) + n * float(bytes_per_vertex))


def available_memory() -> int | None:
    """Return the memory available to this process in bytes, or None if unknown.

    Uses ``MemAvailable`` from ``/proc/meminfo``, falling back to
    ``os.sysconf`` (available physical pages x page size), and is further
    limited by a cgroup (container) memory limit when one is set.
    """
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        avail = None
    if avail is None:
        try:
            avail = int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
            if avail <= 0:
                avail = None
        except (AttributeError, ValueError, OSError):
            avail = None
    cg = _cgroup_headroom()
    if cg is not None:
        avail = cg if avail is None else min(avail, cg)
    return avail


def _cgroup_headroom() -> int | None:
    pairs = [
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),  # cgroup v2
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),  # v1
    ]
    for limit_file, usage_file in pairs:
        try:
            with open(limit_file) as fh:
                raw = fh.read().strip()
            if raw == "max":
                return None
            limit = int(raw)
            if limit >= 1 << 60:  # v1 "unlimited"
                return None
            with open(usage_file) as fh:
                usage = int(fh.read().strip())
            return max(limit - usage, 0)
        except (OSError, ValueError):
            continue
    return None


def check_memory(shape, n_atoms_or_pixels, *, bytes_per_pixel=BYTES_PER_PIXEL,
                 bytes_per_vertex=BYTES_PER_VERTEX, limit_bytes=None) -> int:
    """Refuse, before any work starts, a job that would not fit in memory.

    The estimate is ``H * W * bytes_per_pixel + N * bytes_per_vertex``
    (about 200 bytes per pixel plus about 2 KB per graph vertex), see
    :func:`estimate_memory`.  It is deliberately rough and errs on the large
    side.

    Parameters
    ----------
    shape : tuple of int
        Image shape ``(H, W)`` or ``(H, W, C)``.
    n_atoms_or_pixels : int
        Number of graph vertices (atoms, or pixels for a pixel-level graph).
    bytes_per_pixel, bytes_per_vertex : float, optional
        Cost model, see :func:`estimate_memory`.
    limit_bytes : int, optional
        Memory budget to compare against instead of the memory actually
        available (see :func:`available_memory`); mainly for tests.

    Returns
    -------
    int
        The estimated number of bytes needed.  If the available memory
        cannot be determined, no check is done.

    Raises
    ------
    InputError
        If the estimate exceeds the available memory (or `limit_bytes`).
    """
    need = estimate_memory(shape, n_atoms_or_pixels, bytes_per_pixel=bytes_per_pixel,
                           bytes_per_vertex=bytes_per_vertex)
    have = available_memory() if limit_bytes is None else int(limit_bytes)
    if have is not None and need > have:
        h, w = _hw(shape)
        raise InputError(
            f"image of {h}x{w} pixels with {int(n_atoms_or_pixels)} atoms needs about "
            f"{_gb(need)} GB but only {_gb(have)} GB is available; "
            f"downscale the image or use fewer atoms"
        )
    return need


def _hw(shape) -> tuple[int, int]:
    try:
        dims = tuple(int(s) for s in shape)
    except TypeError:
        raise InputError(f"shape must be a tuple like (H, W) or (H, W, C), got {shape!r}") from None
    if len(dims) < 2 or min(dims[:2]) < 0:
        raise InputError(f"shape must be a tuple like (H, W) or (H, W, C), got {shape!r}")
    return dims[0], dims[1]


def _gb(n_bytes: float) -> str:
    gb = n_bytes / 1e9
    if gb >= 10:
        return f"{gb:.0f}"
    if gb >= 0.1:
        return f"{gb:.1f}"
    return f"{gb:.2g}"


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def atomic_write(path, write_fn: Callable[[str], object]) -> Path:
    """Write a file so that `path` is either untouched or completely written.

    `write_fn` is called with a temporary path in the same directory as
    `path`, named ``.<name>.tmp-<random><suffix>`` (e.g.
    ``.labels.png.tmp-3f9a1c0b2d4e6f70.png``) so that writers which infer
    the format from the suffix still work.  When it returns, the temporary
    file is flushed to disk and moved onto `path` with :func:`os.replace`
    (atomic on POSIX and Windows).  On any exception the temporary file is
    removed and the exception re-raised; `path` is left as it was.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination.  Its directory must exist.
    write_fn : callable
        ``write_fn(tmp_path: str)`` must create the file at ``tmp_path``.

    Returns
    -------
    pathlib.Path
        `path`.

    Raises
    ------
    InputError
        If the destination directory does not exist or `path` is a directory.
    """
    dest = Path(os.fspath(path))
    parent = dest.parent
    if not parent.is_dir():
        raise InputError(f"output directory '{_show(parent)}' does not exist; create it or choose another output path")
    if dest.is_dir():
        raise InputError(f"output path '{_show(dest)}' is a directory; give a file name instead")
    tmp = parent / f".{dest.name}.tmp-{secrets.token_hex(8)}{dest.suffix}"
    try:
        write_fn(str(tmp))
        _fsync(tmp)
        os.replace(tmp, dest)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if _short_write(exc):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dest)) from None
        raise
    return dest


def _short_write(exc: BaseException) -> bool:
    """numpy's "N requested and M written" (no errno): the disk is full."""
    return (isinstance(exc, OSError) and exc.errno is None
            and re.fullmatch(r"\d+ requested and \d+ written", str(exc)) is not None)


def _fsync(p: Path) -> None:
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save_label_png(path, labels) -> Path:
    """Save a label image as a 16-bit greyscale PNG, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination; PNG format is written whatever the suffix.
    labels : array_like of int or bool, shape (H, W)
        Non-negative labels no larger than 65535.

    Returns
    -------
    pathlib.Path
        `path`.

    Raises
    ------
    TypeError
        If `labels` is not an integer (or bool) array.
    InputError
        If `labels` is not 2-D, is empty, or has values outside 0..65535.
    """
    arr = np.asarray(labels)
    if arr.dtype.kind not in "biu":
        raise TypeError(f"labels must be an integer array, got dtype {arr.dtype}; convert with labels.astype(int)")
    if arr.ndim != 2 or arr.size == 0:
        raise InputError(f"labels must be a non-empty 2-D (H, W) array, got shape {arr.shape}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi > 65535:
        raise InputError(
            f"labels range {lo}..{hi} does not fit in a 16-bit PNG (0..65535); "
            f"relabel consecutively or save with save_npy instead"
        )
    data = np.ascontiguousarray(arr, dtype=np.uint16)

    def write(tmp):
        import imageio.v3 as iio

        iio.imwrite(tmp, data, extension=".png")

    return atomic_write(path, write)


def save_rgb_png(path, rgb_float01) -> Path:
    """Save an RGB (or grey/RGBA) image as an 8-bit PNG, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination; PNG format is written whatever the suffix.
    rgb_float01 : array_like, shape (H, W), (H, W, 3) or (H, W, 4)
        Float values in ``[0, 1]`` (clipped; NaN -> 0), or ``uint8`` values
        written unchanged.

    Returns
    -------
    pathlib.Path
        `path`.

    Raises
    ------
    InputError
        If the array has the wrong shape.
    """
    arr = np.asarray(rgb_float01)
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4))) or arr.size == 0:
        raise InputError(f"RGB image must have shape (H, W), (H, W, 3) or (H, W, 4), got {arr.shape}")
    if arr.dtype == np.uint8:
        data = np.ascontiguousarray(arr)
    elif arr.dtype.kind in "biuf":
        f = np.nan_to_num(arr.astype(np.float64), nan=0.0, posinf=1.0, neginf=0.0)
        data = np.ascontiguousarray(np.round(np.clip(f, 0.0, 1.0) * 255.0).astype(np.uint8))
    else:
        raise TypeError(f"RGB image must be a numeric array, got dtype {arr.dtype}")

    def write(tmp):
        import imageio.v3 as iio

        iio.imwrite(tmp, data, extension=".png")

    return atomic_write(path, write)


def save_npy(path, array) -> Path:
    """Save an array in ``.npy`` format, atomically.

    Unlike :func:`numpy.save`, no ``.npy`` suffix is appended to `path`.

    Parameters
    ----------
    path : str or os.PathLike
        Destination.
    array : array_like
        Array to save (object arrays are refused, as pickling is disabled).

    Returns
    -------
    pathlib.Path
        `path`.
    """
    arr = np.asarray(array)

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.save(fh, arr, allow_pickle=False)

    return atomic_write(path, write)


def _show(p) -> str:
    """Render a path for a one-line message (control characters escaped)."""
    return "".join(repr(c)[1:-1] if ord(c) < 32 else c for c in str(p))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
