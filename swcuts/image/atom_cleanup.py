"""Input handling and the clean-up every atom method of :mod:`swcuts.image.atoms`
shares: every region made 4-connected, fragments smaller than a quarter of
the mean atom area merged into the adjacent region of most similar mean
colour, labels renumbered ``0..N-1``; and the colour gradient the
gradient-based methods grow on.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

# Fragments smaller than this fraction of the mean atom area are merged.
MIN_FRAGMENT_FRACTION = 0.25


def _as_image(image) -> np.ndarray:
    """Return ``image`` as float64 HxWxC (a 2-D input gets C = 1)."""
    img = np.asarray(image, dtype=np.float64)
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3 or img.shape[0] == 0 or img.shape[1] == 0:
        raise ValueError(f"image must be HxW or HxWxC, got shape {np.shape(image)}")
    return img


def _check_n_atoms(n_atoms) -> int:
    if int(n_atoms) != n_atoms or n_atoms < 1:
        raise ValueError(f"n_atoms must be a positive integer, got {n_atoms!r}")
    return int(n_atoms)


def _sequential(labels: np.ndarray) -> np.ndarray:
    """Renumber the used values of a non-negative int image to ``0..N-1``
    (order of the old values is kept)."""
    lab = labels.astype(np.int64, copy=False)
    used = np.bincount(lab.ravel()) > 0
    lut = np.cumsum(used) - 1
    return lut[lab]


def _connected(labels: np.ndarray) -> np.ndarray:
    """Split every region into its 4-connected components; labels ``0..M-1``."""
    from skimage.measure import label

    # background=-1 never occurs, so every pixel gets a component label 1..M.
    out = label(labels, background=-1, connectivity=1)
    return out.astype(np.int64, copy=False) - 1


def _adjacent_pairs(labels: np.ndarray):
    """Labels on either side of every 4-adjacent pixel pair that differ."""
    a = np.concatenate([labels[:, :-1].ravel(), labels[:-1, :].ravel()])
    b = np.concatenate([labels[:, 1:].ravel(), labels[1:, :].ravel()])
    diff = a != b
    return a[diff], b[diff]


def _region_means(labels: np.ndarray, image: np.ndarray, n: int, sizes: np.ndarray):
    flat = labels.ravel()
    means = np.empty((n, image.shape[2]))
    for c in range(image.shape[2]):  # loop over channels only
        means[:, c] = np.bincount(flat, weights=image[:, :, c].ravel(), minlength=n)
    return means / np.maximum(sizes, 1)[:, None]


def _merge_small(labels: np.ndarray, image: np.ndarray, min_size: int,
                 max_rounds: int = 30) -> np.ndarray:
    """Merge regions smaller than ``min_size`` pixels into a neighbour.

    ``labels`` must be ``0..M-1`` with 4-connected regions. Each small region
    joins the adjacent region with the closest mean colour (ties: longest
    shared boundary). All merges of a round are done at once: the "joins"
    relation is a forest whose trees each hold one large region (or a cycle
    of small ones), so its connected components are the merged regions,
    which stay 4-connected. Rounds repeat until no small region is left.
    """
    for _ in range(max_rounds):
        n = int(labels.max()) + 1
        if n <= 1:
            break
        sizes = np.bincount(labels.ravel(), minlength=n)
        small = sizes < min_size
        if not small.any():
            break
        a, b = _adjacent_pairs(labels)
        src = np.concatenate([a, b])
        dst = np.concatenate([b, a])
        keep = small[src]
        src, dst = src[keep], dst[keep]
        if src.size == 0:
            break
        keys, counts = np.unique(src * n + dst, return_counts=True)
        s, t = keys // n, keys % n
        means = _region_means(labels, image, n, sizes)
        dist = np.sqrt(((means[s] - means[t]) ** 2).sum(axis=1))
        order = np.lexsort((-counts, dist, s))
        s, t = s[order], t[order]
        first = np.ones(s.size, dtype=bool)
        first[1:] = s[1:] != s[:-1]
        s, t = s[first], t[first]
        graph = coo_matrix((np.ones(s.size), (s, t)), shape=(n, n))
        _, comp = connected_components(graph, directed=False)
        labels = comp[labels]
    return _sequential(labels)


def _finalize(labels: np.ndarray, image: np.ndarray, n_atoms: int) -> np.ndarray:
    """4-connected regions, tiny fragments merged, labels ``0..N-1``."""
    labels = _connected(np.asarray(labels))
    h, w = labels.shape
    min_size = int(MIN_FRAGMENT_FRACTION * h * w / n_atoms)
    if min_size > 1:
        labels = _merge_small(labels, image, min_size)
    return labels.astype(np.int64, copy=False)


def _grid_labels(shape, n_cells: int) -> np.ndarray:
    """Label image of a regular grid of about ``n_cells`` rectangular cells."""
    h, w = shape
    n_cells = max(1, min(int(n_cells), h * w))
    rows = int(np.clip(round(np.sqrt(n_cells * h / w)), 1, h))
    cols = int(np.clip(round(n_cells / rows), 1, w))
    r = (np.arange(h) * rows) // h
    c = (np.arange(w) * cols) // w
    return r[:, None] * cols + c[None, :]


def _gradient(image: np.ndarray, channels=None) -> np.ndarray:
    """Sobel gradient magnitude, Euclidean norm over the chosen channels."""
    from skimage.filters import sobel

    chans = range(image.shape[2]) if channels is None else channels
    g2 = np.zeros(image.shape[:2])
    for c in chans:
        g2 += sobel(image[:, :, c]) ** 2
    return np.sqrt(g2)
