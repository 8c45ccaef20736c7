"""Optical-flow files and pictures: the Middlebury ``.flo`` format and the
Middlebury colour-wheel coding.

Flow fields here are ``(H, W, 2)`` float arrays of ``(u, v)`` in pixels
(``u`` horizontal, to the right; ``v`` vertical, downwards), NaN where the
flow is unknown (e.g. half-occluded pixels).

``.flo`` format (Baker et al., the Middlebury optical-flow benchmark), all
little-endian: float32 magic ``202021.25``, int32 width, int32 height, then
``width * height`` pairs of float32 ``(u, v)``, row-major, interleaved per
pixel. A component whose absolute value exceeds ``1e9`` is *unknown*; it is
read as NaN, and NaN is written as ``1e10`` (the Middlebury ``UNKNOWN_FLOW``).

References
----------
.. [1] S. Baker, D. Scharstein, J. P. Lewis, S. Roth, M. J. Black,
   R. Szeliski, "A database and evaluation methodology for optical flow",
   IJCV 92(1), 2011.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import numpy as np

from swcuts.io.errors import check_number, InputError, show_path

__all__ = ["FLO_MAGIC", "UNKNOWN_FLOW", "UNKNOWN_FLOW_THRESH", "read_flo", "write_flo",
           "flow_to_color", "colour_wheel"]

FLO_MAGIC = 202021.25
#: The value written for an unknown component.
UNKNOWN_FLOW = 1e10
#: Components with an absolute value above this are unknown on read.
UNKNOWN_FLOW_THRESH = 1e9
_MAX_SIDE = 1 << 20  # a sanity bound on width and height in a header
_HEADER = 12
#: Bytes per pixel of reading a flow: its two float32 components, their
#: absolute values and the mask of unknown values.
_FLO_BYTES_PER_PIXEL = 8 + 8 + 2


def read_flo(path, *, limit_bytes=None) -> np.ndarray:
    """Read a Middlebury ``.flo`` optical-flow file.

    The header is checked before anything else is read: the magic number,
    then width and height (each 1 .. 2**20), then the file's size against
    them, then whether the flow fits in memory; only then is the flow read,
    straight into its array. A file that is not a ``.flo`` file, or whose
    header lies about its size, is refused after reading 12 bytes, whatever
    its size.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    limit_bytes : int, optional
        Memory the flow may take, instead of the memory available
        (:func:`swcuts.io.memory.available_memory`).

    Returns
    -------
    numpy.ndarray
        ``(H, W, 2)`` float32 ``(u, v)``; components with ``|value| > 1e9``
        (unknown) are NaN.

    Raises
    ------
    ValueError
        (:class:`~swcuts.io.errors.InputError`) If the file is not a regular
        file or not a ``.flo`` file (wrong magic number), its header is
        invalid, its size does not match ``width * height``, or its flow
        does not fit in memory.
    OSError
        If the file cannot be opened.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from swcuts.io.flow import read_flo, write_flo
    >>> f = np.zeros((2, 3, 2), np.float32); f[0, 0] = np.nan
    >>> p = os.path.join(tempfile.mkdtemp(), "f.flo")
    >>> write_flo(p, f)
    >>> g = read_flo(p)
    >>> g.shape, bool(np.isnan(g[0, 0]).all())
    ((2, 3, 2), True)
    """
    check_number("limit_bytes", limit_bytes, integer=True, minimum=1, allow_none=True)
    p = Path(path)
    if not stat.S_ISREG(p.stat().st_mode):  # a pipe would block, a device never end
        raise InputError(f"{show_path(p)}: not a .flo file (not a regular file)")
    with open(p, "rb", buffering=0) as fh:  # no read-ahead: 12 bytes, then the flow
        size = os.fstat(fh.fileno()).st_size
        header = fh.read(_HEADER)
        width, height = _check_header(p, header, size)
        _check_fits(p, width, height, limit_bytes)
        n = 2 * width * height
        flow = np.fromfile(fh, dtype="<f4", count=n)
    if flow.size != n:  # the file shrank after its size was read
        raise InputError(f"{show_path(p)}: .flo file truncated while reading: {flow.size} of {n} values")
    flow = flow.reshape(height, width, 2).astype(np.float32, copy=False)  # native byte order
    flow[np.abs(flow) > UNKNOWN_FLOW_THRESH] = np.nan  # (NaN stays NaN)
    return flow


def _check_header(p, header, size):
    """(width, height) of a ``.flo`` file's 12-byte ``header``, checked
    against the file's ``size`` in bytes; an InputError otherwise."""
    if len(header) < _HEADER:
        raise InputError(f"{show_path(p)}: not a .flo file (only {len(header)} bytes, the header needs {_HEADER})")
    magic = np.frombuffer(header, "<f4", 1, 0)[0]
    if magic != np.float32(FLO_MAGIC):
        raise InputError(f"{show_path(p)}: not a .flo file (magic number {magic!r}, expected {FLO_MAGIC})")
    width, height = (int(x) for x in np.frombuffer(header, "<i4", 2, 4))
    if not (0 < width <= _MAX_SIDE and 0 < height <= _MAX_SIDE):
        raise InputError(f"{show_path(p)}: invalid .flo header (width {width}, height {height}; "
                         f"each must be 1 to {_MAX_SIDE})")
    expected = _HEADER + 8 * width * height
    if size != expected:
        what = "truncated" if size < expected else "too long"
        raise InputError(f"{show_path(p)}: .flo file {what}: {size} bytes, expected {expected} "
                         f"for {width}x{height}")
    return width, height


def _check_fits(p, width, height, limit_bytes):
    """Refuse a flow whose array (and the temporary of the unknown-value
    test) would not fit in memory."""
    from swcuts.io.memory import available_memory

    need = _FLO_BYTES_PER_PIXEL * width * height
    have = available_memory() if limit_bytes is None else int(limit_bytes)
    if have is not None and need > have:
        raise InputError(f"{show_path(p)}: a {width}x{height} flow needs about {_size(need)} to read but "
                         f"only {_size(have)} is available")


def _size(n_bytes) -> str:
    """``n_bytes`` for a message: "3 GB", "0.1 GB", "45 MB", "630 bytes"."""
    if n_bytes >= 1e8:
        return f"{n_bytes / 1e9:.2g} GB"
    return f"{n_bytes / 1e6:.2g} MB" if n_bytes >= 1e5 else f"{n_bytes:.0f} bytes"


def write_flo(path, flow) -> None:
    """Write a flow field as a Middlebury ``.flo`` file, atomically.

    The data go to a temporary file in the same folder, which then replaces
    ``path`` (:func:`os.replace`), so a reader never sees a partial file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    flow : array_like, shape (H, W, 2)
        ``(u, v)`` in pixels. NaN (unknown) is written as ``1e10``; values
        are stored as float32.

    Raises
    ------
    ValueError
        If ``flow`` is not ``(H, W, 2)`` with ``H, W >= 1`` or not numeric.
    FileNotFoundError
        If the folder of ``path`` does not exist.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from swcuts.io.flow import read_flo, write_flo
    >>> p = os.path.join(tempfile.mkdtemp(), "f.flo")
    >>> write_flo(p, np.ones((4, 5, 2)))
    >>> os.path.getsize(p) == 12 + 8 * 4 * 5
    True
    """
    arr = np.asarray(flow)
    if arr.ndim != 3 or arr.shape[2] != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"flow must have shape (H, W, 2) with H, W >= 1, got {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"flow must be numeric, got dtype {arr.dtype}")
    height, width = arr.shape[:2]
    body = arr.astype("<f4")
    body[np.isnan(body)] = UNKNOWN_FLOW
    header = np.array([FLO_MAGIC], "<f4").tobytes() + np.array([width, height], "<i4").tobytes()
    p = Path(path)
    if not p.parent.is_dir():
        raise FileNotFoundError(f"cannot write {p}: folder {p.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(header)
            fh.write(np.ascontiguousarray(body).tobytes())
        os.chmod(tmp, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0600
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    """The process umask, read without changing it where /proc allows."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------------------
# colour coding
# ---------------------------------------------------------------------------

#: Lengths of the six hue transitions of the Middlebury wheel (red-yellow,
#: yellow-green, green-cyan, cyan-blue, blue-magenta, magenta-red).
WHEEL_SEGMENTS = (15, 6, 4, 11, 13, 6)


def colour_wheel() -> np.ndarray:
    """The 55-colour Middlebury wheel.

    Returns
    -------
    numpy.ndarray
        ``(55, 3)`` int RGB in 0..255. Within each transition of ``n``
        colours the changing channel takes ``floor(255 i / n)`` (rising) or
        ``255 - floor(255 i / n)`` (falling), ``i = 0..n-1``; colour 0 is
        pure red, the start of red-yellow.

    Examples
    --------
    >>> from swcuts.io.flow import colour_wheel
    >>> w = colour_wheel()
    >>> w.shape, w[0].tolist(), w[15].tolist(), w[21].tolist()
    ((55, 3), [255, 0, 0], [255, 255, 0], [0, 255, 0])
    """
    # (channel that changes, rising?) per transition; the others are fixed.
    # R->Y: G rises; Y->G: R falls; G->C: B rises; C->B: G falls;
    # B->M: R rises; M->R: B falls.
    plan = [((255, None, 0), 1, True), ((None, 255, 0), 0, False), ((0, 255, None), 2, True),
            ((0, None, 255), 1, False), ((None, 0, 255), 0, True), ((255, 0, None), 2, False)]
    blocks = []
    for n, (fixed, ch, rising) in zip(WHEEL_SEGMENTS, plan):
        ramp = (255 * np.arange(n)) // n
        block = np.empty((n, 3), np.int64)
        for c in range(3):
            if c == ch:
                block[:, c] = ramp if rising else 255 - ramp
            else:
                block[:, c] = fixed[c]
        blocks.append(block)
    return np.concatenate(blocks)


def flow_to_color(flow, max_flow=None) -> np.ndarray:
    """Colour-code a flow field with the Middlebury colour wheel.

    Hue gives the direction and saturation the magnitude, as in the
    reference ``flowToColor`` / ``computeColor`` code of the Middlebury
    benchmark [1]_: the flow is divided by ``max_flow`` (by default the
    largest magnitude among the known pixels); the angle
    ``atan2(-v, -u)`` picks a position between two of the 55 wheel colours,
    interpolated linearly; a vector of normalised length ``r <= 1`` gets
    ``1 - r (1 - colour)`` (white at zero), longer ones (only possible with
    an explicit ``max_flow``) are darkened to ``0.75 colour``. Unknown
    pixels (NaN, or ``|component| > 1e9``) are black.

    Parameters
    ----------
    flow : array_like, shape (H, W, 2)
        ``(u, v)`` in pixels.
    max_flow : float, optional
        The magnitude that maps to full saturation.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` uint8 RGB.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.io.flow import flow_to_color
    >>> f = np.array([[[0.0, 0.0], [1.0, 0.0], [np.nan, np.nan]]])
    >>> flow_to_color(f, max_flow=1).tolist()
    [[[255, 255, 255], [255, 0, 0], [0, 0, 0]]]
    """
    arr = np.asarray(flow, dtype=np.float64)
    if arr.ndim != 3 or arr.shape[2] != 2:
        raise ValueError(f"flow must have shape (H, W, 2), got {arr.shape}")
    u, v = arr[..., 0].copy(), arr[..., 1].copy()
    unknown = ~((np.abs(u) <= UNKNOWN_FLOW_THRESH) & (np.abs(v) <= UNKNOWN_FLOW_THRESH))
    u[unknown] = 0.0
    v[unknown] = 0.0
    if max_flow is None:
        rad = np.hypot(u, v)
        scale = float(rad.max()) if rad.size else 0.0
    else:
        scale = float(max_flow)
        if not scale > 0:
            raise ValueError(f"max_flow must be > 0, got {max_flow!r}")
    if scale <= 0:
        scale = 1.0
    u /= scale
    v /= scale
    wheel = colour_wheel().astype(np.float64) / 255.0
    ncols = len(wheel)
    rad = np.hypot(u, v)
    a = np.arctan2(-v, -u) / np.pi  # in [-1, 1]
    fk = (a + 1.0) / 2.0 * (ncols - 1)
    k0 = np.floor(fk).astype(np.int64)
    f = (fk - k0)[..., None]
    k0 = np.clip(k0, 0, ncols - 1)
    k1 = (k0 + 1) % ncols
    col = (1 - f) * wheel[k0] + f * wheel[k1]
    inside = (rad <= 1)[..., None]
    col = np.where(inside, 1 - rad[..., None] * (1 - col), col * 0.75)
    out = np.floor(255.0 * col).astype(np.uint8)
    out[unknown] = 0
    return out
