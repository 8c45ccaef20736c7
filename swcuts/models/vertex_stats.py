"""Per-vertex sufficient statistics of the image model, and their sums.

A statistics row has the layout of :func:`swcuts.models.image.label_loglik`:
``[n, hist (C*B), M (36), Σφ·I (6C), Σ I² (C)]`` with φ = (1, x, y, x², xy,
y²). On a graph of atoms every vertex keeps its row (N × D numbers). On a
pixel graph the row of a pixel is a function of its position (x, y), its C
channel values and their histogram bins, so only those are kept (2 + 2C
numbers instead of D = 1 + C·B + 36 + 7C; at a megapixel with C = 3 and
B = 32, 64 MB instead of 1.2 GB) and the sums are formed from them.

Both forms travel to compiled code as one tuple, the *vertex source*
``(rows, x, y, value, bin)``: on atoms ``rows`` is the (N, D) array and the
other four are None; on pixels ``rows`` is empty (0, D). The Nones let
numba compile only the branch of the form in use (a first run on atoms
does not compile the pixel sums).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only

__all__ = ["pixel_source", "row_source", "sum_stats", "add_vertex", "label_sums", "vertex_rows",
           "window_histograms"]


def window_histograms(features, atoms, n, bins, radius):
    """Histogram counts of every atom, each pixel counted through the
    histogram of the (2 radius + 1)² window around it.

    Parameters
    ----------
    features : (H, W, C) float array in [0, 1]
        The model's features (binned as the model bins them).
    atoms : (H, W) int array
        Atom labels 0..n-1.
    n, bins, radius : int
        Number of atoms, bins per channel, window radius in pixels (the
        window is mirrored at the image border).

    Returns
    -------
    (n, C * bins) float array
        Row a, block c: Σ over the pixels p of atom a of the fraction of
        p's window whose channel c falls in each bin; every block of row a
        sums to the atom's pixel count, as its own histogram does.

    Examples
    --------
    >>> f = np.zeros((1, 4, 1)); f[0, 2:, 0] = 0.9       # values 0, 0, 0.9, 0.9
    >>> window_histograms(f, np.array([[0, 0, 1, 1]]), 2, bins=2, radius=1)
    array([[1.66666667, 0.33333333],
           [0.33333333, 1.66666667]])
    """
    from scipy import ndimage as ndi

    features = np.asarray(features, dtype=np.float64)
    features = features[..., None] if features.ndim == 2 else features
    lab = np.asarray(atoms, dtype=np.int64).ravel()
    C = features.shape[-1]
    out = np.empty((int(n), C * bins))
    # One bin plane at a time (an (H, W, bins) stack is 1 GB per channel at 4 MP).
    plane = np.empty(features.shape[:2])
    local = np.empty_like(plane)
    for c in range(C):
        idx = np.clip((features[..., c] * bins).astype(np.int64), 0, bins - 1)
        for b in range(bins):
            np.equal(idx, b, out=plane, casting="unsafe")
            ndi.uniform_filter(plane, 2 * int(radius) + 1, output=local, mode="reflect")
            out[:, c * bins + b] = np.bincount(lab, weights=local.ravel(), minlength=n)
    return out


# Exponents (a, b) of the basis φ = (1, x, y, x², xy, y²) of the surface fits.
_PHI_A = np.array([0, 1, 0, 2, 1, 0], dtype=np.int64)
_PHI_B = np.array([0, 0, 1, 0, 1, 2], dtype=np.int64)


@njit(cache=True, inline="always")
def row_offsets(n_channels, n_bins):
    """Where the parts of a statistics row start: (M, Σφ·I, Σ I²).

    A row is [n, hist (C*B), M (36: Σ φφᵀ), Σφ·I (6C), Σ I² (C)], φ the
    surface basis (1, x, y, x², xy, y²) of the linear and quadratic fits.
    """
    off_m = 1 + n_channels * n_bins
    off_b = off_m + 36
    return off_m, off_b, off_b + 6 * n_channels


def n_stats(n_channels, n_bins):
    """Length D of a statistics row (:func:`row_offsets`)."""
    return row_offsets.py_func(n_channels, n_bins)[2] + n_channels  # py_func: nothing to compile


def row_source(rows, n_channels):
    """The vertex source of a graph whose vertices keep their full rows
    (``n_channels`` is not needed: the rows hold everything)."""
    return (np.ascontiguousarray(rows, dtype=np.float64), None, None, None, None)


def pixel_source(x, y, value, bins, n_stats_row):
    """The vertex source of a pixel graph: position, channel values and bins."""
    return (np.empty((0, int(n_stats_row))), np.ascontiguousarray(x, dtype=np.float64),
            np.ascontiguousarray(y, dtype=np.float64),
            np.ascontiguousarray(value, dtype=np.float64),
            np.ascontiguousarray(bins, dtype=np.int32))


@compiled_only
def sum_stats(R, n_r, vsrc, n_channels, n_bins, out):
    """Σ over the first ``n_r`` vertices of R of their statistics rows, into
    ``out`` (layout of :func:`swcuts.models.image.label_loglik`)."""
    vstats, px, py, pv, pb = vsrc
    _sum_stats(R, n_r, vstats, px, py, pv, pb, n_channels, n_bins, out)


@compiled_only
def _sum_stats(R, n_r, vstats, px, py, pv, pb, n_channels, n_bins, out):
    out[:] = 0.0
    if px is None:  # rows (numba compiles one branch: px is an argument)
        # Rows added in place (a loop the compiler vectorises; calling
        # add_vertex per vertex was 4-5x slower on clusters of hundreds).
        d = out.size
        for t in range(n_r):
            row = vstats[R[t]]
            for k in range(d):
                out[k] += row[k]
        return
    C = n_channels
    B = n_bins
    off_m, off_b, off_s = row_offsets(C, B)
    # Σ x^a y^b for a + b <= 4, at mono[5a + b].
    mono = np.zeros(25)
    for t in range(n_r):
        v = R[t]
        x = px[v]
        y = py[v]
        x2 = x * x
        xy = x * y
        y2 = y * y
        mono[0] += 1.0
        mono[5] += x
        mono[1] += y
        mono[10] += x2
        mono[6] += xy
        mono[2] += y2
        mono[15] += x2 * x
        mono[11] += x2 * y
        mono[7] += x * y2
        mono[3] += y2 * y
        mono[20] += x2 * x2
        mono[16] += x2 * xy
        mono[12] += x2 * y2
        mono[8] += xy * y2
        mono[4] += y2 * y2
        for c in range(C):
            val = pv[v, c]
            o = off_b + 6 * c
            out[o] += val
            out[o + 1] += x * val
            out[o + 2] += y * val
            out[o + 3] += x2 * val
            out[o + 4] += xy * val
            out[o + 5] += y2 * val
            out[off_s + c] += val * val
            out[1 + c * B + pb[v, c]] += 1.0
    out[0] = mono[0]
    for i in range(6):
        for j in range(6):
            out[off_m + 6 * i + j] = mono[5 * (_PHI_A[i] + _PHI_A[j]) + _PHI_B[i] + _PHI_B[j]]


@njit(cache=True)
def add_vertex(vsrc, v, sign, n_channels, n_bins, out):
    """``out += sign * row(v)``: one vertex's row, added or (sign −1) removed."""
    vstats, px, py, pv, pb = vsrc
    _add_vertex(vstats, px, py, pv, pb, v, sign, n_channels, n_bins, out)


@compiled_only
def _add_vertex(vstats, px, py, pv, pb, v, sign, n_channels, n_bins, out):
    if px is None:  # rows (one branch compiled, as in _sum_stats)
        row = vstats[v]
        for k in range(out.size):
            out[k] += sign * row[k]
        return
    C = n_channels
    B = n_bins
    off_m, off_b, off_s = row_offsets(C, B)
    x = px[v]
    y = py[v]
    phi = np.empty(6)
    phi[0] = 1.0
    phi[1] = x
    phi[2] = y
    phi[3] = x * x
    phi[4] = x * y
    phi[5] = y * y
    out[0] += sign
    for i in range(6):
        for j in range(6):
            out[off_m + 6 * i + j] += sign * (phi[i] * phi[j])
    for c in range(C):
        val = pv[v, c]
        for i in range(6):
            out[off_b + 6 * c + i] += sign * (phi[i] * val)
        out[off_s + c] += sign * (val * val)
        out[1 + c * B + pb[v, c]] += sign


@njit(cache=True)
def _label_sums(order, bounds, labs, vsrc, n_channels, n_bins, out):
    for t in range(labs.size):
        a, b = bounds[t], bounds[t + 1]
        sum_stats(order[a:b], b - a, vsrc, n_channels, n_bins, out[labs[t]])


def label_sums(labels, vsrc, n_channels, n_bins, n_rows):
    """Statistics of every label: an (n_rows, D) array whose row ``k`` sums
    the rows of the vertices labelled k (labels must be < n_rows)."""
    labels = np.asarray(labels, dtype=np.int64)
    D = n_stats(n_channels, n_bins)
    out = np.zeros((int(n_rows), D))
    if vsrc[1] is None:
        # Rows: the sums of sum_stats (each label's rows added in vertex
        # order), in numpy, which saves compiling _label_sums on atoms.
        np.add.at(out, labels, vsrc[0])
        return out
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    labs, starts = np.unique(sorted_labels, return_index=True)
    bounds = np.append(starts, labels.size).astype(np.int64)
    _label_sums(order, bounds, labs.astype(np.int64), vsrc, n_channels, n_bins, out)
    return out


@njit(cache=True)
def _rows(vsrc, n_channels, n_bins, out):
    for v in range(out.shape[0]):
        add_vertex(vsrc, v, 1.0, n_channels, n_bins, out[v])


def vertex_rows(vsrc, n_vertices, n_channels, n_bins):
    """The (N, D) rows of every vertex (materialised from a pixel source)."""
    if vsrc[1] is None:
        return vsrc[0]
    out = np.zeros((int(n_vertices), n_stats(n_channels, n_bins)))
    _rows(vsrc, n_channels, n_bins, out)
    return out
