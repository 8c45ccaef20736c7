"""Growing the trees of a structured edge forest (:mod:`swcuts.image.edge_forest`)
the way Dollár's ``edgesTrain`` / ``forestTrain`` does (read, not copied).

A training sample is a window of a photo's feature channels
(:func:`patch_features`) and the 16x16 segmentation patch at its centre
(one annotator's). At each node the structured labels are mapped to two
classes (:func:`discretize`: 256 random pixel pairs "same segment?", centred,
the sign of their leading principal component), and the node is split on
the feature and threshold of least Gini impurity among a random subset of
features (:func:`_best_split`, compiled). A leaf keeps the most typical
segmentation patch of its samples, whose boundary pixels
(:func:`patch_boundaries`) are its vote.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.image.edge_forest import BORDER, OPTIONS, feature_table, forest_channels, pad_image

__all__ = ["patch_features", "discretize", "patch_boundaries", "patch_segments", "train_tree", "sample_windows", "half_keys",
           "key_values"]


def sample_windows(segmentations, n_pos, n_neg, rng, shape=None):
    """Random training windows of a photo: the top-left image pixels of 16x16
    label patches (even, inside the photo), half near a boundary of their
    annotator, and each patch, as Dollár's ``trainTree`` samples them.

    Parameters
    ----------
    segmentations : list of (H, W) int arrays
        The annotators' label images.
    n_pos, n_neg : int
        Windows per annotator within 8 pixels of one of its boundaries, and
        elsewhere (fewer when there are fewer).
    rng : numpy.random.Generator

    Returns
    -------
    rows, cols : int arrays
    labels : (n, 256) uint8 array
        Each patch, column-major (``col * 16 + row``), its segments numbered
        from 0 in order of first appearance.

    Examples
    --------
    >>> seg = np.zeros((40, 40), int); seg[:, 20:] = 1
    >>> r, c, lab = sample_windows([seg], 5, 5, np.random.default_rng(0))
    >>> len(r), lab.shape, int(lab.max())
    (10, (10, 256), 1)
    """
    from scipy import ndimage as ndi

    g = OPTIONS["patchInnerSize"]
    h, w = segmentations[0].shape
    rr, cc = np.mgrid[0:h - g + 1:2, 0:w - g + 1:2]
    rr, cc = rr.ravel(), cc.ravel()
    rows, cols, labs = [], [], []
    for seg in segmentations:
        seg = np.asarray(seg)
        edge = np.zeros(seg.shape, bool)
        edge[:, 1:] |= seg[:, 1:] != seg[:, :-1]
        edge[1:, :] |= seg[1:, :] != seg[:-1, :]
        near = ndi.distance_transform_edt(~edge) < g // 2
        pos = near[rr + g // 2, cc + g // 2]
        for mask, n in ((pos, n_pos), (~pos, n_neg)):
            idx = np.flatnonzero(mask)
            idx = rng.choice(idx, min(n, idx.size), replace=False)
            for r, c in zip(rr[idx], cc[idx]):
                p = seg[r:r + g, c:c + g].T.ravel()
                _, first, inv = np.unique(p, return_index=True, return_inverse=True)
                rank = np.empty(first.size, np.int64)
                rank[np.argsort(first)] = np.arange(first.size)
                labs.append(rank[inv].astype(np.uint8))
            rows.append(rr[idx])
            cols.append(cc[idx])
    if not labs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, g * g), np.uint8)
    return np.concatenate(rows), np.concatenate(cols), np.stack(labs)


def patch_features(image, rows, cols, fids, channels=None):
    """The features ``fids`` of the forest's windows of ``image`` whose 16x16
    label patches start at image pixels ``(rows, cols)`` (even).

    ``channels``, if given, is ``forest_channels(pad_image(image))``
    computed before (``image`` is then not read).

    Returns
    -------
    (len(fids), n) float32 array (feature-major, as :func:`train_tree` reads)

    Examples
    --------
    >>> x = patch_features(np.zeros((40, 40, 3)), np.array([0, 2]), np.array([4, 8]), np.arange(5))
    >>> x.shape
    (5, 2)
    """
    reg, sim = forest_channels(pad_image(image)) if channels is None else channels
    t = feature_table()[np.asarray(fids)]
    s = OPTIONS["shrinkNumber"]
    r0 = (np.asarray(rows) + BORDER) // s
    c0 = (np.asarray(cols) + BORDER) // s
    out = np.empty((len(t), len(r0)), np.float32)
    single = t[:, 5] == 0
    a = t[single]
    out[single] = reg[r0[None, :] + a[:, 0:1], c0[None, :] + a[:, 1:2], a[:, 4:5]]
    b = t[~single]
    out[~single] = (sim[r0[None, :] + b[:, 0:1], c0[None, :] + b[:, 1:2], b[:, 4:5]]
                    - sim[r0[None, :] + b[:, 2:3], c0[None, :] + b[:, 3:4], b[:, 4:5]])
    return out


def discretize(labels, rng, n_pairs=256, n_fit=1024, n_iter=20):
    """Two classes of structured labels (Dollár's ``discretize``, PCA).

    Parameters
    ----------
    labels : (n, 256) uint8 array
    rng : numpy.random.Generator
    n_pairs : int
        Random pixel pairs compared ("same segment?").
    n_fit : int
        At most this many samples fit the principal direction (all are
        projected on it).
    n_iter : int
        Power iterations that find it.

    Returns
    -------
    classes : (n,) bool array
        All False when every sample has the same pairs.
    typical : int
        The sample closest to the mean code (the node's patch).

    Examples
    --------
    >>> lab = np.zeros((6, 256), np.uint8); lab[3:, 128:] = 1
    >>> cls, typ = discretize(lab, np.random.default_rng(0))
    >>> sorted(np.unique(cls[:3] != cls[3:]).tolist())
    [True]
    """
    n, m = labels.shape
    i = rng.integers(0, m, n_pairs)
    j = rng.integers(0, m - 1, n_pairs)
    j = j + (j >= i)
    z = (labels[:, i] == labels[:, j]).astype(np.float32)
    z -= z.mean(axis=0)
    z = z[:, np.abs(z).max(axis=0) > 1e-6]
    if z.shape[1] == 0:
        return np.zeros(n, bool), 0
    typical = int(np.argmin((z * z).sum(axis=1)))
    fit = z if n <= n_fit else z[rng.choice(n, n_fit, replace=False)]
    # The leading principal direction by power iteration (its sign pattern is all that is used).
    v = fit[int(np.argmax((fit * fit).sum(axis=1)))].astype(np.float64)
    for _ in range(n_iter):
        v = fit.T @ (fit @ v)
        v /= max(np.linalg.norm(v), 1e-300)
    return z @ v < 0, typical


def patch_segments(patch) -> np.ndarray:
    """A 16x16 segmentation patch (column-major) as a leaf keeps it: segments
    of at most 5 pixels joined to their most common neighbour (Dollár's
    ``mergeTrees``), renumbered from 0 in order of first appearance.

    Examples
    --------
    >>> p = np.zeros(256, np.uint8); p[0] = 7; p[128:] = 3
    >>> s = patch_segments(p)
    >>> s.dtype.name, int(s[0]), int(s[1]), int(s[-1])
    ('uint8', 0, 0, 1)
    """
    s = _merged(patch)
    _, first, inv = np.unique(s.T.ravel(), return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inv].astype(np.uint8)


def _merged(patch) -> np.ndarray:
    """The patch as (row, col) ids, small segments merged (:func:`patch_segments`)."""
    from scipy import ndimage as ndi

    g = int(round(np.sqrt(patch.size)))
    s = np.asarray(patch).reshape(g, g).T.astype(np.int64)   # (row, col)
    ids, sizes = np.unique(s, return_counts=True)
    if ids.size > 1:
        for k in ids[sizes <= 5]:
            ring = ndi.binary_dilation(s == k, np.ones((3, 3), bool)) & (s != k)
            if ring.any():
                s[s == k] = np.bincount(s[ring]).argmax()
    return s


def patch_boundaries(patch) -> np.ndarray:
    """The boundary pixels of a 16x16 segmentation patch (given column-major)
    as the forest stores them (``col * 16 + row``): pixels whose central
    difference (one-sided at the border) is not zero, as Dollár's
    ``gradientMag(segs) > .01``, after segments of at most 5 pixels join
    their most common neighbour (his ``mergeTrees``; :func:`patch_segments`).

    Examples
    --------
    >>> p = np.zeros((16, 16), np.uint8); p[8:, :] = 1   # columns 8.. differ
    >>> patch_boundaries(p.ravel()).tolist()[:3]
    [112, 113, 114]
    """
    from swcuts.image.edge_forest_votes import patch_edges

    return np.flatnonzero(patch_edges(_merged(patch)[None])[0].T.ravel())


@njit(cache=True)
def _best_split(x, idx, cls, feats, vals):
    """The feature (row of ``x``) among ``feats`` of least Gini impurity of
    the two classes ``cls`` of the samples ``idx``, and the two neighbouring
    values of that feature between which it splits (``vals``: a buffer of
    ``x``'s dtype, at least ``idx.size`` long)."""
    n = idx.size
    tot1 = 0
    for k in range(n):
        tot1 += cls[k]
    tot0 = n - tot1
    g0 = 1.0 - (tot0 / n) ** 2 - (tot1 / n) ** 2
    best_gain, best_f, best_lo, best_hi = 0.0, -1, vals[0], vals[0]
    for f in feats:
        for k in range(n):
            vals[k] = x[f, idx[k]]
        order = np.argsort(vals[:n])
        l1 = 0
        for k in range(n - 1):
            o = order[k]
            l1 += cls[o]
            v, vn = vals[o], vals[order[k + 1]]
            if vn <= v:
                continue
            nl, nr = k + 1, n - k - 1
            l0, r1 = nl - l1, tot1 - l1
            r0 = nr - r1
            gl = 1.0 - (l0 / nl) ** 2 - (l1 / nl) ** 2
            gr = 1.0 - (r0 / nr) ** 2 - (r1 / nr) ** 2
            gain = g0 - (nl * gl + nr * gr) / n
            if gain > best_gain:
                best_gain, best_f, best_lo, best_hi = gain, f, v, vn
    return best_f, best_lo, best_hi, best_gain


def _given_split(given, k, fids, dtype):
    """The row of ``x`` and the threshold of node ``k`` of a replayed tree."""
    f = int(np.searchsorted(fids, given["fid"][k]))
    if f >= fids.size or fids[f] != given["fid"][k]:
        raise ValueError(f"node {k} of the given tree splits on a feature this training did not draw")
    return f, float(given["thr"][k])


def half_keys(x) -> np.ndarray:
    """Features held in 2 bytes: each float32 value rounded *down* to a
    float16, coded as a uint16 whose order is the values' order.

    Rounding down makes the forest's splits exact at inference, where
    OpenCV compares the float32 feature ``a`` with a float32 threshold
    ``t``: :func:`train_tree` only chooses thresholds ``t`` that are float16
    values, and for those ``a < t`` exactly when ``floor16(a) < t``.

    Examples
    --------
    >>> k = half_keys(np.array([-1.0, -0.0, 0.0, 1e-9, 0.1, 2.0], np.float32))
    >>> bool(np.all(np.diff(k.astype(int)) >= 0)), int(k[1]) == int(k[2]) == int(k[3])
    (True, True)
    >>> key_values(k).tolist()[-2:]
    [0.0999755859375, 2.0]
    """
    x = np.asarray(x, np.float32)
    h = x.astype(np.float16)
    down = h.astype(np.float32) > x
    h[down] = np.nextafter(h[down], np.float16(-np.inf))
    h += np.float16(0.0)   # -0 -> +0: one key for zero
    u = h.view(np.uint16)
    return np.where(u & 0x8000, ~u, u | 0x8000).astype(np.uint16)


def key_values(keys) -> np.ndarray:
    """The float32 values of :func:`half_keys` codes."""
    k = np.asarray(keys, np.uint16)
    u = np.where(k & 0x8000, k & 0x7FFF, ~k).astype(np.uint16)
    return u.view(np.float16).astype(np.float32)


def _threshold(lo, hi, dtype):
    """A threshold ``t`` with ``lo < t <= hi`` (the samples go left when
    ``x < t``), as OpenCV compares it: a float32 (float16 for
    :func:`half_keys` features); returned as (value, the same in ``x``'s
    coding)."""
    if dtype == np.uint16:
        v, vn = key_values(np.array([lo, hi]))
        mid = (float(v) + float(vn)) / 2
        c = np.float16(mid)
        if float(c) < mid:
            c = np.nextafter(c, np.float16(np.inf))
        t = half_keys(np.array([c], np.float32))[0]
        return float(key_values(np.array([t]))[0]), t
    v, vn = np.float32(lo), np.float32(hi)
    t = np.float32(v + (vn - v) / np.float32(2.0))
    if t <= v or t > vn:
        t = vn
    return float(t), t


def train_tree(x, fids, labels, rng, min_child=8, max_depth=64, n_split=None, given=None):
    """One tree of the forest.

    Parameters
    ----------
    x : (F, n) float32 or uint16 array
        The features ``fids`` of the ``n`` samples (:func:`patch_features`),
        or their 2-byte codes (:func:`half_keys`: half the memory).
    fids : (F,) int array
        Their ids in the forest's feature numbering.
    labels : (n, 256) uint8 array
        The samples' segmentation patches (:func:`sample_windows`).
    rng : numpy.random.Generator
    min_child : int
        Fewest samples in a child of a split.
    max_depth : int
    n_split : int, optional
        Features tried at each node (default ``round(sqrt(F))``).
    given : dict, optional
        Replay a tree grown before from the same samples and ``rng`` state
        (its ``child``, ``fid``, ``thr``): its splits are taken instead of
        searched (the same random numbers are drawn), to recompute what its
        leaves keep (e.g. ``segs`` of a forest written without them).

    Returns
    -------
    dict
        ``child``, ``fid``, ``thr``, ``bins``, ``segs`` (a leaf's
        :func:`patch_segments`, 256 ids column-major; empty at inner
        nodes) as :func:`~swcuts.image.edge_forest.write_forest` takes them,
        and ``count``, ``depth`` per node.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> lab = np.zeros((40, 256), np.uint8); lab[20:, 128:] = 1
    >>> x = np.vstack([np.r_[np.zeros(20), np.ones(20)], rng.random(40)]).astype(np.float32)
    >>> t = train_tree(x, np.array([7, 9]), lab, rng, n_split=2)
    >>> t["child"], t["fid"][0], len(t["bins"][2])
    ([2, 0, 0], 7, 32)
    """
    if x.dtype != np.uint16:
        x = np.ascontiguousarray(x, dtype=np.float32)
    vals = np.empty(x.shape[1], x.dtype)
    n_feat = x.shape[0]
    n_split = int(round(np.sqrt(n_feat))) if n_split is None else int(n_split)
    fids = np.asarray(fids, np.int64)
    nodes = [np.arange(x.shape[1], dtype=np.int64)]
    depth = [0]
    child, fid, thr, bins, segs, count = [], [], [], [], [], []
    k = 0
    while k < len(nodes):
        idx = nodes[k]
        cls, typical = discretize(labels[idx], rng)
        f, t, tx = -1, 0.0, None
        if depth[k] < max_depth and idx.size >= 2 * min_child and cls.any() and not cls.all():
            feats = rng.choice(n_feat, min(n_split, n_feat), replace=False).astype(np.int64)
            if given is None:
                f, lo, hi, gain = _best_split(x, idx, cls.astype(np.int64), feats, vals)
                if f >= 0:
                    t, tx = _threshold(lo, hi, x.dtype)
                    left = x[f, idx] < tx
                    if gain <= 1e-10 or left.sum() < min_child or (~left).sum() < min_child:
                        f = -1
            elif given["child"][k] != 0:
                f, t = _given_split(given, k, fids, x.dtype)
                left = x[f, idx] < (np.float32(t) if x.dtype != np.uint16 else half_keys(np.float32([t]))[0])
        elif given is not None and given["child"][k] != 0:
            raise ValueError(f"node {k} of the given tree splits where this training cannot")
        count.append(idx.size)
        if f < 0:
            child.append(0)
            fid.append(0)
            thr.append(0.0)
            bins.append(patch_boundaries(labels[idx[typical]]).tolist())
            segs.append(patch_segments(labels[idx[typical]]).tolist())
        else:
            child.append(len(nodes) + 1)
            fid.append(int(fids[f]))
            thr.append(float(t))
            bins.append([])
            segs.append([])
            nodes.extend([idx[left], idx[~left]])
            depth.extend([depth[k] + 1, depth[k] + 1])
        nodes[k] = None
        k += 1
    return {"child": child, "fid": fid, "thr": thr, "bins": bins, "segs": segs, "count": count, "depth": depth}
