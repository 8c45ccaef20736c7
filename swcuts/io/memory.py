"""What this machine can hold: the memory a segmentation run needs, and the
memory available to this process (cgroup limits included).

* :func:`estimate_memory` and :func:`check_memory` estimate a run's peak
  memory from the image size and the number of graph vertices, and refuse,
  in one line, a run that would not fit;
* :func:`available_memory` reads what this process may still allocate.
"""

from __future__ import annotations

import math
import os

from swcuts.io.errors import InputError

__all__ = ["check_memory", "estimate_memory", "available_memory", "check_image_fits", "too_large_message", "BYTES_PER_PIXEL", "BYTES_PER_VERTEX",
           "BYTES_PER_PIXEL_VERTEX"]

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
            f"{_size(need)} but only {_size(have)} is available; "
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


def _size(n_bytes: float) -> str:
    """``n_bytes`` in GB for a message: "18 GB", "1.2 GB", "0.00035 GB"."""
    gb = n_bytes / 1e9
    return f"{gb:.0f} GB" if gb >= 10 else f"{gb:.1f} GB" if gb >= 0.1 else f"{gb:.2g} GB"


def _memory_limit(limit_bytes=None):
    """Bytes available to a run: ``limit_bytes``, else what the system has free
    (:func:`~swcuts.io.memory.available_memory`; None when unknown)."""
    if limit_bytes is not None:
        return int(limit_bytes)
    return available_memory()


def too_large_message(h, w, need, have, *, per_pixel, n_vertices=None, name=None) -> str:
    """One line for an image too large for memory: its size, the estimate,
    what is available and how many pixels fit (with a size of the same shape)."""
    fit = max(int(have // per_pixel), 0)
    side = math.sqrt(fit / (h * w)) if h * w else 0.0
    shape = f" (e.g. {int(h * side)}x{int(w * side)})" if int(h * side) >= 2 and int(w * side) >= 2 else ""
    what = (f"'{name}' is an image of {h}x{w} pixels, too large: segmenting it" if name
            else f"image of {h}x{w} pixels with {n_vertices} atoms")
    return (f"{what} needs about {_size(need)} but only {_size(have)} is available; at most about "
            f"{fit / 1e6:.3g} megapixels{shape} fit; downscale the image or use fewer atoms")


def check_image_fits(h, w, name=None, *, limit_bytes=None) -> None:
    """Refuse, before decoding it, an image too large for any run (the
    image's own cost, with the fewest atoms: what ``swcuts.segmentation.costs.run_cost``
    gives for two atoms; used by :func:`~swcuts.io.image_read.load_image` for
    images above Pillow's decompression-bomb limit)."""
    need = estimate_memory((h, w), 2)  # the image itself, whatever the atoms
    have = _memory_limit(limit_bytes)
    if have is not None and need > have:
        raise InputError(too_large_message(h, w, need, have, per_pixel=need / max(h * w, 1), name=name))
