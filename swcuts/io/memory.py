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

The work is done in modules with one job each, whose names are all
importable from here: :mod:`swcuts.io.errors` (:class:`InputError`),
:mod:`swcuts.io.image_read` (:func:`load_image`), :mod:`swcuts.image.prepare`
(:func:`prepare_image`), :mod:`swcuts.io.image_write` (:func:`atomic_write`,
``save_*``); the memory estimate is here.
"""

from __future__ import annotations

import os

import numpy as np  # noqa: F401 - tests patch swcuts.io.memory.np

from swcuts.io.errors import InputError, InputTypeError, _one_line, _show  # noqa: F401
from swcuts.image.prepare import (
    prepare_image)
from swcuts.io.image_read import _NPY_MAGIC, _PNG_MAGIC, _READABLE, load_image  # noqa: F401
from swcuts.io.image_write import (
    _fsync, _short_write, atomic_write, save_label_png, save_npy, save_rgb_png)  # noqa: F401


__all__ = [
    "InputError",
    "InputTypeError",
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
