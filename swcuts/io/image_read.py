"""Reading image files: PNG (8 and 16 bit), JPEG, TIFF and ``.npy``.

:func:`load_image` decides a file's format by its content before its
name, and reports every file it cannot read as one line
(:class:`~swcuts.io.errors.InputError`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from swcuts.io.errors import InputError, one_line, show_path

__all__ = ["load_image"]

_NPY_MAGIC = b"\x93NUMPY"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_READABLE = "PNG, JPEG, TIFF or .npy"


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
        images are expanded to RGB(A).  For animated or multi-page files
        (a stack) only the first frame/page is returned, with a warning
        (one line) that says how many there are.  A TIFF that holds one
        ``(H, W, C)`` array as H pages of W x C pixels (tifffile writes
        arrays with C other than 3 or 4 so) is read as that one image, as
        scikit-image reads it (see :func:`_image_in_pages`); two channels
        not marked as grey + alpha are returned with a warning that swcuts
        segments the first, and more than 4 channels are refused by
        :func:`prepare_image`.  JPEG EXIF orientation is applied,
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
        raise InputError(f"image file '{show_path(p)}' does not exist; check the path and spelling")
    if p.is_dir():
        raise InputError(f"'{show_path(p)}' is a directory, not an image file; pass the path of a single image file")
    if not stat.S_ISREG(p.stat().st_mode):
        # A pipe would block (or be read once by one reader, not the next).
        raise InputError(f"'{show_path(p)}' is not a regular file (a pipe, socket or device); save the image "
                         f"to a file and pass its path")
    not_image = InputError(f"'{show_path(p)}' is not an image file that swcuts can read ({_READABLE})")
    try:
        with open(p, "rb") as fh:
            head = fh.read(32)
    except PermissionError:
        raise InputError(f"image file '{show_path(p)}' cannot be read (permission denied); fix its permissions or copy it somewhere readable") from None
    except OSError as exc:
        raise InputError(f"image file '{show_path(p)}' cannot be read ({one_line(exc)})") from None
    if not head:
        raise InputError(f"image file '{show_path(p)}' is empty; re-export or re-download the image")

    suffix = p.suffix.lower()
    tiff = head[:4] in (b"II*\x00", b"MM\x00*")
    try:
        # The content decides before the name: a PNG saved as x.npy is a PNG.
        if head.startswith(_NPY_MAGIC):
            _check_npy_fits(p)
            image = np.load(p, allow_pickle=False)
        elif tiff:
            image = _read_tiff(p)
        elif head.startswith(_PNG_MAGIC):
            image = _read_png(p, head)
        elif suffix == ".npy":
            raise InputError(f"'{show_path(p)}' is named .npy but is not a NumPy .npy file (no .npy "
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
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # _check_fits says it better
        limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
        try:
            with Image.open(p) as im:
                mode, frames, (w, h) = im.mode, getattr(im, "n_frames", 1), im.size
            # Pillow refuses very large images as "decompression bombs" (with
            # two warning lines first): say instead, before decoding, whether
            # it fits in memory (one line, with what does).
            _check_fits(p, h, w)
            # CMYK (some JPEGs) is converted by Pillow, not read as inverted RGBA.
            kwargs = {"mode": "RGB"} if mode == "CMYK" else {}
            image = np.asarray(iio.imread(p, index=0, plugin="pillow", rotate=exif_rotate, **kwargs))
        finally:
            Image.MAX_IMAGE_PIXELS = limit
    if frames > 1:
        _warn_pages(p, frames)
    return image


def _check_npy_fits(p: Path) -> None:
    """Refuse, before loading it, a ``.npy`` image too large for memory (its
    shape is in its header)."""
    fmt = np.lib.format
    try:
        with open(p, "rb") as fh:
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape = tuple(int(s) for s in read(fh)[0])
    except Exception:
        return  # np.load says what is wrong
    if len(shape) == 3 and shape[-1] > 4 and shape[0] <= 4:
        shape = shape[1:]  # channels first
    if len(shape) in (2, 3):
        _check_fits(p, shape[0], shape[1])


def _check_fits(p: Path, h: int, w: int) -> None:
    """Refuse, before decoding it, an image of ``h`` x ``w`` pixels too large
    to segment in the memory available (:func:`swcuts.io.memory.check_image_fits`)."""
    from swcuts.io.memory import check_image_fits

    check_image_fits(int(h), int(w), name=show_path(p))


def _warn_pages(p: Path, pages: int) -> None:
    import warnings

    warnings.warn(f"'{show_path(p)}' holds {pages} pages or frames; swcuts uses the first", UserWarning,
                  stacklevel=3)


def _read_png(p: Path, head: bytes) -> np.ndarray:
    # Pillow silently reduces 16-bit colour PNGs to 8 bits; OpenCV does not.
    bit_depth, colour_type = head[24], head[25]
    if bit_depth == 16 and colour_type in (2, 4, 6):
        _check_fits(p, int.from_bytes(head[20:24], "big"), int.from_bytes(head[16:20], "big"))
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
            rows = _image_in_pages(tf)
            if rows is not None:
                return _read_page_rows(p, tf, *rows)
            if len(tf.pages) > 1:
                _warn_pages(p, len(tf.pages))
            page = tf.pages[0]
            shape = page.shape[1:] if int(page.planarconfig) == 2 and len(page.shape) == 3 else page.shape
            _check_fits(p, *shape[:2])
            if int(page.photometric) == 3:  # palette: let Pillow apply the colormap
                raise ValueError("palette TIFF")
            arr = page.asarray()
            if int(page.planarconfig) == 2 and arr.ndim == 3:  # channels first
                arr = np.moveaxis(arr, 0, -1)
            if arr.ndim == 3 and arr.shape[2] == 2 and not any(int(e) in (1, 2) for e in page.extrasamples):
                _warn_grey_alpha(p)
            return np.ascontiguousarray(arr)
    except (InputError, MemoryError):
        raise
    except Exception:
        # Palette TIFFs and codecs tifffile lacks: Pillow expands palettes to RGB(A).
        return _read_generic(p, exif_rotate=False)


#: The most channels an (H, W, C) array stored as H pages of W x C may have
#: (:func:`_image_in_pages`); a last axis longer than this is a stack's width.
MAX_PAGE_CHANNELS = 32


def _image_in_pages(tf):
    """``(H, W, C, images)`` when the file's first series is an (H, W, C)
    array that tifffile stored as H pages of W x C pixels (it does so
    for C other than 3 and 4, e.g. grey + alpha or many channels), or a
    stack of ``images`` such arrays; None for a single image or a stack
    of images.

    The pages are rows of one image when their last axis is short (C at
    most :data:`MAX_PAGE_CHANNELS` and shorter than both H and W): the
    shape scikit-image reads, ``(H, W, C)``, is then an image with C
    channels. The same shape ``(N, H, W)`` is a stack of N frames of
    H x W pixels when W > 32 or W >= min(N, H), as every stack of
    frames of a usable size is."""
    if not tf.series:
        return None
    series, page = tf.series[0], tf.pages[0]
    shape, rows = tuple(int(s) for s in series.shape), tuple(int(s) for s in page.shape)
    if len(shape) < 3 or len(rows) != 2 or shape[-2:] != rows:
        return None
    h, w, c = shape[-3:]
    images = int(np.prod(shape[:-3], dtype=np.int64))
    if not (c <= MAX_PAGE_CHANNELS and c < min(h, w)) or len(tf.pages) < h * images:
        return None
    return h, w, c, images


def _read_page_rows(p: Path, tf, h: int, w: int, c: int, images: int) -> np.ndarray:
    """The first (H, W, C) image of :func:`_image_in_pages`, read as one
    image, as scikit-image reads it (more than 4 channels are refused by
    :func:`~swcuts.image.prepare.prepare_image`, in one line)."""
    _check_fits(p, h, w)
    if images > 1:
        _warn_pages(p, images)
    arr = np.asarray(tf.asarray(key=range(h), series=0)).reshape(h, w, c)
    if c == 2:
        _warn_grey_alpha(p)
    return np.ascontiguousarray(arr)


def _warn_grey_alpha(p: Path) -> None:
    import warnings

    # Two channels are grey + alpha for swcuts (and PNG); a file that does
    # not say so may hold two measurements: say which one is segmented.
    warnings.warn(f"'{show_path(p)}' has 2 channels, not marked as grey + alpha; swcuts reads them as "
                  f"grey + alpha and segments the first channel only", UserWarning, stacklevel=4)
