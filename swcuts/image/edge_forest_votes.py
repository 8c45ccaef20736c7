"""The structured edge forest run by our own (compiled) inference, with
Dollár & Zitnick's *sharpening* (TPAMI 2015, "Fast edge detection using
structured forests", read, not copied).

Without sharpening, :func:`forest_probability` computes what OpenCV's
``StructuredEdgeDetection.detectEdges`` computes from the same file (the
test checks it to float tolerance): at every location (stride 2) the leaf
of each of ``numberOfTreesToEvaluate`` trees (those OpenCV picks there),
found by reading the features where :func:`feature_table`
says; each leaf's boundary pixels vote ``2 stride^2 / (16^2 n_eval)``; the
votes are smoothed by the triangle filter of radius 1.

With ``sharpen = s`` (1 or 2) each leaf's 16x16 *segmentation* patch (the
file's ``segments``, :func:`leaf_segments`) is first re-aligned to the
photo's colours: the mean colour of each segment is taken over every other
pixel of the patch (the photo's CIE Luv, smoothed by the triangle filter of
radius 1); then the pixels within ``s - 1`` of the patch's boundaries (the
boundary pixels, then the ring around them), in that order, each take the
segment, among its own and its 4 neighbours', whose mean is nearest its
colour. The vote is the re-aligned patch's boundary pixels (within ``s`` of
the old boundaries: no other pixel can change).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.io.errors import InputError

__all__ = ["forest_probability", "feature_table", "patch_edges", "leaf_segments", "leaf_leaves", "encode_segments", "parse_segments",
           "SHARPEN", "DIGITS"]

#: The largest sharpening: rings 0..SHARPEN of each leaf's boundaries are kept.
SHARPEN = 2
#: The characters of a leaf's segment ids in the file (one a pixel, column-major).
DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_G = 16   # the patch's side (``patchInnerSize``)


def _counts(opts):
    """(channels, window in channel pixels, regular features, all features)."""
    n_chn = 2 * (opts["numberOfGradientOrientations"] + 1) + 3
    w = opts["patchSize"] // opts["shrinkNumber"]
    cells = opts["selfsimilarityGridSize"] ** 2
    n_reg = w * w * n_chn
    return n_chn, w, n_reg, n_reg + cells * (cells - 1) // 2 * n_chn


def feature_table(opts=None) -> np.ndarray:
    """Where each feature id of the forest reads: ``(n_features, 6)`` ints
    ``(row_a, col_a, row_b, col_b, channel, pair)``; feature ``f`` of the
    window whose top-left channel pixel is ``(r, c)`` is ``reg[r + row_a, c +
    col_a, channel]`` when ``pair`` is 0, else ``sim[r + row_a, c + col_a,
    channel] - sim[r + row_b, c + col_b, channel]`` (the order of OpenCV's
    ``predictEdges`` and Dollár's ``stComputeSimFtrs``).

    Examples
    --------
    >>> t = feature_table()
    >>> t.shape, t[1].tolist(), t[16].tolist()
    ((7228, 6), [1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0])
    """
    from swcuts.image.edge_forest import OPTIONS

    o = OPTIONS if opts is None else opts
    n_chn, w, n_reg, n_all = _counts(o)
    t = np.zeros((n_all, 6), np.int64)
    f = np.arange(n_reg)
    t[:n_reg, 0], t[:n_reg, 1], t[:n_reg, 4] = f % w, (f % (w * w)) // w, f // (w * w)
    g = o["selfsimilarityGridSize"]
    hc = int(round(w / (2.0 * g)))
    pos = [int((i + 1) * (w + 2 * hc - 1) / (g + 1.0) - hc + 0.5) for i in range(g)]
    n = n_reg
    for z in range(n_chn):
        for a in range(g * g):
            for b in range(a + 1, g * g):
                t[n] = (pos[a % g], pos[a // g], pos[b % g], pos[b // g], z, 1)
                n += 1
    return t


def encode_segments(segs) -> str:
    """A leaf's 256 segment ids (column-major) as the file holds them.

    Examples
    --------
    >>> encode_segments(np.r_[np.zeros(128, int), np.ones(128, int)])[126:130]
    '0011'
    """
    s = np.asarray(segs, np.int64)
    if s.shape != (_G * _G,) or s.min() < 0 or s.max() >= len(DIGITS):
        raise ValueError(f"a leaf's segments must be {_G * _G} ids in 0..{len(DIGITS) - 1}")
    return np.frombuffer(DIGITS.encode(), np.uint8)[s].tobytes().decode()


def parse_segments(text) -> list:
    """The ``segments`` section of a forest file: per tree (``- [ ... ]``),
    its leaves' ids as one uint8 array (256 a leaf); a character that is
    not an id is a ValueError.

    Examples
    --------
    >>> parse_segments('  - [ "0011", "0101" ] - [ "2" ]')[0].tolist()
    [0, 0, 1, 1, 0, 1, 0, 1]
    """
    import re

    lut = np.full(256, 255, np.uint8)
    lut[np.frombuffer(DIGITS.encode(), np.uint8)] = np.arange(len(DIGITS))
    out = []
    for tree in text.split("- [")[1:]:
        ids = lut[np.frombuffer("".join(re.findall(r'"([^"]*)"', tree)).encode(), np.uint8)]
        if (ids == 255).any():
            raise ValueError("a segment id that is not one of " + DIGITS)
        out.append(ids)
    return out


def patch_edges(s) -> np.ndarray:
    """Boundary pixels of (n, g, g) segmentation patches: pixels whose
    central difference (one-sided at the border) is not zero along either
    axis, as Dollár's ``gradientMag(segs) > .01`` (the rule the trainer's
    :func:`~swcuts.image.edge_forest_train.patch_boundaries` and the file's
    check use).

    Examples
    --------
    >>> p = np.zeros((1, 4, 4), int); p[0, :, 2:] = 1
    >>> patch_edges(p)[0].astype(int)
    array([[0, 1, 1, 0],
           [0, 1, 1, 0],
           [0, 1, 1, 0],
           [0, 1, 1, 0]])
    """
    e = np.zeros(s.shape, bool)
    for axis in (1, 2):
        a = np.moveaxis(s, axis, 1)
        d = np.moveaxis(e, axis, 1)
        d[:, 1:-1] |= a[:, 2:] != a[:, :-2]
        d[:, 0] |= a[:, 1] != a[:, 0]
        d[:, -1] |= a[:, -1] != a[:, -2]
    return e


def leaf_segments(forest, path="the forest file") -> dict:
    """The leaves' segmentation patches of a forest read by
    :func:`~swcuts.image.edge_forest.read_forest`, checked against their
    ``edgeBins`` (cached in ``forest``).

    Returns
    -------
    dict
        ``segs`` (n_leaves, 256) uint8 (column-major), ``row`` (the row of
        ``segs`` of each node, ``tree * n_nodes + node``; -1 at inner
        nodes), ``nseg`` (segments a leaf); after sharpening, also
        ``ring_bnds`` (n_leaves, SHARPEN + 2) offsets into ``ring_bins`` (the
        patch pixels at distance 0, 1, ... from the boundary, column-major
        order within each ring).

    Raises
    ------
    InputError
        The file has no ``segments``, or they do not fit its trees (one line
        naming the file and how to rebuild it).
    """
    from swcuts.image.edge_forest import _FILE

    got = forest.get("_leafSegments")
    if got is not None:
        return got
    raw = forest.get("segments")
    child = forest["childs"]
    if raw is None:
        _FILE.refuse(forest.get("path", path), "no segments (the leaves' patches sharpening needs)")
    leaf = child.ravel() == 0
    if len(raw) != child.shape[0] or any(r.size != (child[k] == 0).sum() * _G * _G for k, r in enumerate(raw)):
        _FILE.refuse(forest.get("path", path), "segments do not hold one patch a leaf")
    segs = np.concatenate([np.asarray(r, np.uint8).reshape(-1, _G * _G) for r in raw])
    b0 = patch_edges(segs.reshape(-1, _G, _G).transpose(0, 2, 1))   # (leaf, row, col)
    bnds, bins = forest["edgeBoundaries"], forest["edgeBins"]
    row = np.full(child.size, -1, np.int64)
    row[leaf] = np.arange(leaf.sum())
    node = np.repeat(np.arange(child.size), np.diff(bnds))
    stored = np.zeros(b0.shape, bool)
    if (row[node] < 0).any():
        _FILE.refuse(forest.get("path", path), "an inner node has edgeBins")
    stored[row[node], bins % _G, bins // _G] = True
    if (b0 != stored).any():
        _FILE.refuse(forest.get("path", path), "segments do not match the leaves' edgeBins")
    got = {"segs": segs, "row": row, "nseg": segs.max(axis=1).astype(np.int64) + 1}
    forest["_leafSegments"] = got
    return got


def _with_rings(forest):
    """:func:`leaf_segments` with the rings (computed on first use: only
    sharpening reads them)."""
    g = leaf_segments(forest)
    if "ring_bnds" not in g:
        g["ring_bnds"], g["ring_bins"] = _rings(g["segs"], SHARPEN)
    return g


@njit(cache=True)
def _around(p):
    """The pixels above, below, left and right of pixel ``p`` of a 16x16
    patch (column-major), the pixel itself beyond the patch's border (the
    central difference one-sided there)."""
    r, c = p % 16, p // 16
    return (p - 1 if r > 0 else p), (p + 1 if r < 15 else p), (p - 16 if c > 0 else p), (p + 16 if c < 15 else p)


@njit(cache=True)
def _levels(s, n_levels, lv):
    """Each pixel's distance (Chebyshev, up to ``n_levels``, else 255) from
    the boundary pixels of the patch ``s`` (256 ids, column-major)."""
    for p in range(256):
        lo_r, hi_r, lo_c, hi_c = _around(p)
        lv[p] = 0 if s[lo_r] != s[hi_r] or s[lo_c] != s[hi_c] else 255
    for k in range(1, n_levels + 1):
        for p in range(256):
            if lv[p] != k - 1:
                continue
            r, c = p % 16, p // 16
            for rr in range(max(r - 1, 0), min(r + 2, 16)):
                for cc in range(max(c - 1, 0), min(c + 2, 16)):
                    if lv[cc * 16 + rr] == 255:
                        lv[cc * 16 + rr] = k


@njit(cache=True)
def _rings(segs, n_levels):
    """The pixels of each patch at distance 0, 1, ..., ``n_levels`` from its
    boundaries (column-major within a ring), as offsets ``(n, n_levels +
    2)`` into one array."""
    n = segs.shape[0]
    bnds = np.zeros((n, n_levels + 2), np.int64)
    lv = np.empty(256, np.uint8)
    at = 0
    for i in range(n):
        _levels(segs[i], n_levels, lv)
        bnds[i, 0] = at
        for k in range(n_levels + 1):
            for p in range(256):
                at += lv[p] == k
            bnds[i, k + 1] = at
    bins = np.empty(at, np.int64)
    at = 0
    for i in range(n):
        _levels(segs[i], n_levels, lv)
        for k in range(n_levels + 1):
            for p in range(256):
                if lv[p] == k:
                    bins[at] = p
                    at += 1
    return bnds, bins


@njit(cache=True)
def _leaves(reg, sim, child, fid, thr, off_a, off_b, n_reg, row_len, n_chn, stride, shrink, n_eval, height, width):
    """The leaf (``tree * n_nodes + node``) of each evaluated tree at each
    location, the trees OpenCV picks there: ``((i + j) % (2 n_eval) + k) %
    n_trees``; ``reg``, ``sim`` flattened, a feature read at offsets
    ``off_a`` (and ``off_b``) from its window's corner."""
    n_trees, m = child.shape
    out = np.empty((height, width, n_eval), np.int64)
    for i in range(height):
        for j in range(width):
            base = (i * stride // shrink) * row_len + (j * stride // shrink) * n_chn
            for k in range(n_eval):
                t = ((i + j) % (2 * n_eval) + k) % n_trees
                node = 0
                while child[t, node] != 0:
                    f = fid[t, node]
                    if f < n_reg:
                        x = reg[base + off_a[f]]
                    else:
                        x = sim[base + off_a[f]] - sim[base + off_b[f]]
                    if x < thr[t, node]:
                        node = child[t, node] - 1
                    else:
                        node = child[t, node]
                out[i, j, k] = t * m + node
    return out


@njit(cache=True)
def _vote(leaves, bnds, bins, step, stride, out):
    """OpenCV's votes: each leaf's stored boundary pixels (``col * 16 + row``)."""
    height, width, n_eval = leaves.shape
    for i in range(height):
        for j in range(width):
            for k in range(n_eval):
                node = leaves[i, j, k]
                for p in range(bnds[node], bnds[node + 1]):
                    b = bins[p]
                    out[i * stride + b % 16, j * stride + b // 16] += step


@njit(cache=True)
def _vote_sharp(leaves, row_of, segs, nseg, ring_bnds, ring_bins, luv, sharpen, step, stride, out):
    """The votes of the leaves' segmentation patches re-aligned to ``luv``
    (module docstring)."""
    height, width, n_eval = leaves.shape
    n_chn = luv.shape[2]
    s = np.empty(256, np.int64)
    ns = np.zeros(256, np.float64)
    mu = np.zeros((256, n_chn), np.float64)
    cand = np.empty(5, np.int64)
    for i in range(height):
        y0 = i * stride
        for j in range(width):
            x0 = j * stride
            for k in range(n_eval):
                node = row_of[leaves[i, j, k]]
                ns_node = nseg[node]
                if ns_node < 2:
                    continue
                for p in range(256):
                    s[p] = segs[node, p]
                for q in range(ns_node):
                    ns[q] = 0.0
                    for z in range(n_chn):
                        mu[q, z] = 0.0
                for col in range(0, 16, 2):
                    for row in range(0, 16, 2):
                        q = s[col * 16 + row]
                        ns[q] += 1.0
                        for z in range(n_chn):
                            mu[q, z] += luv[y0 + row, x0 + col, z]
                for q in range(ns_node):
                    if ns[q] > 0:
                        for z in range(n_chn):
                            mu[q, z] /= ns[q]
                for p in ring_bins[ring_bnds[node, 0]:ring_bnds[node, sharpen]]:
                    row, col = p % 16, p // 16
                    lo_r, hi_r, lo_c, hi_c = _around(p)
                    cand[0], cand[1], cand[2], cand[3], cand[4] = s[p], s[lo_r], s[hi_r], s[lo_c], s[hi_c]
                    best, best_e = s[p], np.inf
                    for q in cand:
                        if ns[q] == 0:
                            continue
                        e = 0.0
                        for z in range(n_chn):
                            d = mu[q, z] - luv[y0 + row, x0 + col, z]
                            e += d * d
                        if e < best_e:
                            best, best_e = q, e
                    s[p] = best
                for p in ring_bins[ring_bnds[node, 0]:ring_bnds[node, sharpen + 1]]:
                    lo_r, hi_r, lo_c, hi_c = _around(p)
                    if s[lo_r] != s[hi_r] or s[lo_c] != s[hi_c]:
                        out[y0 + p % 16, x0 + p // 16] += step


def leaf_leaves(image, forest=None):
    """The padded image and the leaf of each evaluated tree at each location
    (stride 2) of a photo: what the votes are made of.

    Parameters
    ----------
    image : (H, W, 3) or (H, W) array
    forest : str or path-like, optional
        Default the shipped forest.

    Returns
    -------
    padded : (H', W', 3) float32 array
        :func:`~swcuts.image.edge_forest.pad_image` of the image.
    leaves : (h, w, n_eval) int64 array
        ``tree * n_nodes + node`` at location ``(i, j)``, whose patch covers
        padded pixels ``2i .. 2i + 15``, ``2j .. 2j + 15``.

    Examples
    --------
    >>> padded, leaves = leaf_leaves(np.zeros((20, 24, 3)))
    >>> padded.shape, leaves.shape
    ((28, 32, 3), (6, 8, 4))
    """
    from swcuts.image.edge_forest import forest_channels, pad_image, read_forest

    f = read_forest(forest)
    o = f["options"]
    padded = pad_image(image)
    reg, sim = forest_channels(padded, o)
    s, stride = o["shrinkNumber"], o["stride"]
    height = -(-(reg.shape[0] * s - o["patchSize"]) // stride)
    width = -(-(reg.shape[1] * s - o["patchSize"]) // stride)
    table = f.get("_table")
    if table is None:
        t = feature_table(o)
        n_chn = _counts(o)[0]
        table = f["_table"] = (t[:, 0], t[:, 1], t[:, 2], t[:, 3], t[:, 4], n_chn)
    ra, ca, rb, cb, ch, n_chn = table
    row_len = reg.shape[1] * n_chn
    off_a, off_b = ra * row_len + ca * n_chn + ch, rb * row_len + cb * n_chn + ch
    leaves = _leaves(reg.ravel(), sim.ravel(), f["childs"], f["featureIds"], f["thresholds"], off_a, off_b,
                     _counts(o)[2], row_len, n_chn, stride, s, o["numberOfTreesToEvaluate"], height, width)
    return padded, leaves


def forest_probability(image, *, forest=None, sharpen=0) -> np.ndarray:
    """The structured edge forest's boundary map of a photo by our own
    inference, sharpened (module docstring).

    Parameters
    ----------
    image : (H, W, 3) or (H, W) array
        RGB (uint8, uint16 or float in [0, 1]); grey as three equal channels.
    forest : str or path-like, optional
        Default the shipped forest. ``sharpen > 0`` needs its ``segments``.
    sharpen : int
        0 (OpenCV's map), 1 or 2 (:data:`SHARPEN`): how far from each leaf's
        boundaries its patch is re-aligned to the photo's colours.

    Returns
    -------
    (H, W) float64 array in [0, 1]

    Examples
    --------
    A forest of one leaf, whose patch has a boundary between its columns 7
    and 8:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from swcuts.image.edge_forest import OPTIONS, write_forest
    >>> seg = np.repeat([0, 1], 128)
    >>> leaf = {"child": [0], "fid": [0], "thr": [0.0], "bins": [list(range(112, 144))], "segs": [seg]}
    >>> p = Path(tempfile.mkdtemp()) / "one.yml.gz"
    >>> write_forest(p, [leaf], {**OPTIONS, "numberOfTreesToEvaluate": 1})
    >>> e = forest_probability(np.zeros((30, 40, 3)), forest=p, sharpen=1)
    >>> e.shape, bool(0 < e.max() <= 1)
    ((30, 40), True)
    """
    from swcuts.image.edge_forest import BORDER, _smooth, read_forest

    if isinstance(sharpen, bool) or not isinstance(sharpen, (int, np.integer)) or not 0 <= sharpen <= SHARPEN:
        raise InputError(f"sharpen must be 0, 1 or {SHARPEN}, got {sharpen!r}")
    f = read_forest(forest)
    o = f["options"]
    padded, leaves = leaf_leaves(image, forest)
    out = np.zeros(padded.shape[:2], np.float32)
    step = np.float32(2.0 * o["stride"] ** 2 / o["patchInnerSize"] ** 2 / o["numberOfTreesToEvaluate"])
    if sharpen == 0:
        _vote(leaves, f["edgeBoundaries"], f["edgeBins"], step, o["stride"], out)
    else:
        import cv2

        g = _with_rings(f)
        luv = _smooth(cv2.cvtColor(padded, cv2.COLOR_RGB2Luv), 1)
        _vote_sharp(leaves, g["row"], g["segs"], g["nseg"], g["ring_bnds"], g["ring_bins"], np.ascontiguousarray(luv),
                    int(sharpen), step, o["stride"], out)
    img = np.asarray(image)
    h, w = img.shape[:2]
    e = _smooth(out, 1)[BORDER:BORDER + h, BORDER:BORDER + w]
    return np.clip(e.astype(np.float64), 0.0, 1.0)
