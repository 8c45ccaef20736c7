"""Writing output files so that none is ever left half-written:
:func:`atomic_write` and the ``save_*`` helpers built on it."""

from __future__ import annotations

import errno
import os
import re
import secrets
from pathlib import Path
from typing import Callable

import numpy as np

from swcuts.io.errors import InputError, show_path

__all__ = ["atomic_write", "save_label_png", "save_rgb_png", "save_npy", "boundary_overlay", "png_bytes_of",
           "label_png_data", "rgb_png_data", "encode_pngs"]


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
        raise InputError(f"output directory '{show_path(parent)}' does not exist; create it or choose another output path")
    if dest.is_dir():
        raise InputError(f"output path '{show_path(dest)}' is a directory; give a file name instead")
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


#: zlib level of the PNGs written (0-9), with zlib's run-length strategy:
#: on a 12-megapixel photo's overlay 0.8 s and 10 MB, against 3.7 s and
#: 11 MB for imageio's default (level 6); label images compress 4x better
#: than at level 1 with the default strategy.
PNG_COMPRESSION = 1


def png_bytes_of(data: np.ndarray) -> bytes:
    """The PNG encoding of ``data``: an (H, W) uint8 or uint16 image, or
    (H, W, 3) / (H, W, 4) uint8 in RGB(A) order (``cv2.imencode`` at
    :data:`PNG_COMPRESSION`)."""
    import cv2

    if data.ndim == 3:
        data = cv2.cvtColor(data, cv2.COLOR_RGB2BGR if data.shape[2] == 3 else cv2.COLOR_RGBA2BGRA)
    ok, buf = cv2.imencode(".png", data, [cv2.IMWRITE_PNG_COMPRESSION, PNG_COMPRESSION,
                                          cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE])
    if not ok:  # pragma: no cover - cv2 encodes every uint8/uint16 image
        raise OSError(f"PNG encoding of a {data.dtype} image of shape {data.shape} failed")
    return buf.tobytes()


def _write_png(path, data: np.ndarray) -> Path:
    """Write ``data`` (a contiguous uint8 or uint16 image, or the bytes of
    its PNG encoding) to `path` as a PNG, atomically."""
    encoded = bytes(data) if isinstance(data, (bytes, bytearray)) else png_bytes_of(data)

    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(encoded)

    return atomic_write(path, write)


def boundary_overlay(image, labels, color) -> np.ndarray:
    """``image`` with the boundaries of ``labels`` drawn in ``color``, as
    8-bit RGB: the pixels :func:`skimage.segmentation.mark_boundaries`
    marks on int64 labels (every pixel with another label among its four
    neighbours: its ``mode="outer"`` keeps them all there, as the int64
    erosion it uses to find the background overflows), computed with
    OpenCV's grey morphology (about 30x faster on a 12-megapixel photo).

    Parameters
    ----------
    image : (H, W) or (H, W, 3) float array in [0, 1], or uint8
    labels : (H, W) int array
    color : 3 floats in [0, 1]

    Returns
    -------
    (H, W, 3) uint8 array

    Examples
    --------
    >>> lab = np.zeros((4, 6), int); lab[:, 3:] = 1
    >>> boundary_overlay(np.zeros((4, 6)), lab, (1, 0, 0))[0, :, 0]
    array([  0,   0, 255, 255,   0,   0], dtype=uint8)
    """
    import cv2

    labels = np.asarray(labels)
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= 65535:
        from skimage.segmentation import mark_boundaries

        marked = mark_boundaries(image, labels, color=color)
        return np.round(np.clip(marked, 0, 1) * 255).astype(np.uint8)
    lab = labels.astype(np.uint16)
    cross = cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3))
    boundaries = cv2.dilate(lab, cross) != cv2.erode(lab, cross)
    img = np.asarray(image)
    if img.dtype == np.uint8:
        out = img.copy()
    else:
        out = cv2.convertScaleAbs(np.ascontiguousarray(img, dtype=np.float64), alpha=255.0)
    if out.ndim == 2:
        out = cv2.merge([out, out, out])
    out[boundaries] = np.round(np.clip(np.asarray(color, dtype=np.float64), 0, 1) * 255).astype(np.uint8)
    return out


def label_png_data(labels) -> np.ndarray:
    """``labels`` checked and as the uint16 image :func:`save_label_png`
    writes (its errors, raised here)."""
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
    return np.ascontiguousarray(arr, dtype=np.uint16)


def save_label_png(path, labels) -> Path:
    """Save a label image as a 16-bit greyscale PNG, atomically; returns `path`
    as a :class:`pathlib.Path`.

    Parameters
    ----------
    path : str or os.PathLike
        Destination, as for :func:`atomic_write` (its directory must exist);
        PNG format is written whatever the suffix.
    labels : array_like of int or bool, shape (H, W), or bytes
        Non-negative labels no larger than 65535; or their PNG, encoded
        ahead (:func:`encode_pngs` of :func:`label_png_data`), written as it is.

    Raises
    ------
    TypeError
        If `labels` is not an integer (or bool) array.
    InputError
        If `labels` is not 2-D, is empty, or has values outside 0..65535, or
        `path` is one :func:`atomic_write` refuses.
    """
    return _write_png(path, labels if _is_png(labels) else label_png_data(labels))


def _is_png(data) -> bool:
    """Whether ``data`` is the bytes of a PNG file."""
    return isinstance(data, (bytes, bytearray)) and bytes(data[:8]) == b"\x89PNG\r\n\x1a\n"


def rgb_png_data(rgb_float01) -> np.ndarray:
    """``rgb_float01`` checked and as the uint8 image :func:`save_rgb_png`
    writes (its errors, raised here)."""
    arr = np.asarray(rgb_float01)
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4))) or arr.size == 0:
        raise InputError(f"RGB image must have shape (H, W), (H, W, 3) or (H, W, 4), got {arr.shape}")
    if arr.dtype == np.uint8:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind in "biuf":
        f = np.nan_to_num(arr.astype(np.float64), nan=0.0, posinf=1.0, neginf=0.0)
        return np.ascontiguousarray(np.round(np.clip(f, 0.0, 1.0) * 255.0).astype(np.uint8))
    raise TypeError(f"RGB image must be a numeric array, got dtype {arr.dtype}")


def save_rgb_png(path, rgb_float01) -> Path:
    """Save an RGB (or grey/RGBA) image as an 8-bit PNG, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        As for :func:`save_label_png`, which this returns likewise.
    rgb_float01 : array_like, shape (H, W), (H, W, 3) or (H, W, 4), or bytes
        Float values in ``[0, 1]`` (clipped; NaN -> 0), or ``uint8`` values
        written unchanged; or their PNG, encoded ahead (:func:`encode_pngs`
        of :func:`rgb_png_data`), written as it is.

    Raises
    ------
    InputError
        If the array has the wrong shape.
    """
    return _write_png(path, rgb_float01 if _is_png(rgb_float01) else rgb_png_data(rgb_float01))


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


def encode_pngs(images) -> list:
    """The PNG encodings (:func:`png_bytes_of`) of several uint8/uint16
    images, in threads (OpenCV releases the GIL while it encodes)."""
    images = list(images)
    if len(images) < 2:
        return [png_bytes_of(im) for im in images]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(len(images), os.cpu_count() or 1)) as pool:
        return list(pool.map(png_bytes_of, images))
