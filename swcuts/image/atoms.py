"""Over-segmentation of an image into atomic regions ("atoms").

The Swendsen-Wang cuts sampler works on a graph whose vertices are small
image regions rather than pixels (Barbu & Zhu, 2005). This module produces
those regions with one of several over-segmentation methods:

``"slic"``
    SLIC superpixels (k-means in colour + position).
``"felzenszwalb"``
    Felzenszwalb-Huttenlocher graph segmentation, with ``scale`` searched so
    that the number of regions is close to the request.
``"watershed"``
    Compact watershed of the gradient magnitude from a grid of seeds (the
    default, :data:`DEFAULT_ATOMS`).
``"edges"``
    The paper's own method: Canny edges of the lightness, gaps closed by
    linking edge end points, non-edge regions labelled and grown over the
    edge pixels by a watershed of the gradient.
``"pixels"``
    Every pixel its own atom.

Whatever the method, the result goes through the same clean-up: every
region is made 4-connected, fragments smaller than a quarter of the mean
atom area are merged into the adjacent region of most similar mean colour,
and labels are renumbered ``0..N-1``.

All methods are deterministic; the ``seed`` arguments exist so that every
stage of the pipeline has the same call signature.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from swcuts.image.atom_cleanup import (
    _as_image, _check_n_atoms, _connected, _finalize, _gradient, _grid_labels, _region_means,
    _sequential)

__all__ = [
    "ATOM_METHODS",
    "DEFAULT_ATOMS",
    "compute_atoms",
    "slic_atoms",
    "felzenszwalb_atoms",
    "watershed_atoms",
    "edge_atoms",
    "pixel_atoms",
    "majority_labels",
]

ATOM_METHODS = ("slic", "felzenszwalb", "watershed", "edges", "pixels")

#: The atoms of a sampler on atoms without ``atoms``. Chosen on the tuning
#: half of the development BSDS photos (``benchmarks/photo_sweep.py``): under
#: the default posterior the watershed atoms, which follow the image's
#: gradient, beat SLIC's by the selection rule at seeds 0, 1 and 2 with
#: fewer segments (README, "Atoms").
DEFAULT_ATOMS = "watershed"

# Default SLIC compactness for channels scaled to [0, 1]. skimage's usual
# value of 10 is meant for CIELAB with L in 0..100; the data here is about
# 100 times smaller, so the equivalent weight is 0.1. On natural photos this
# keeps atoms compact while they follow the edges (0.05 gives ragged atoms,
# 0.2 an almost regular grid).
SLIC_COMPACTNESS = 0.1

# Compactness of the seeded watershed on the gradient magnitude (gradient of
# [0, 1] data; distances in pixels). 0.0005 was the best of 0.0001, 0.0005,
# 0.001, 0.002, 0.005 and 0.02 on the tuning photos (0.0005-0.002 tie, the
# larger ones lose PRI and boundary F, 0.0001 loses PRI).
WATERSHED_COMPACTNESS = 0.0005

# Compactness of the cells that cut over-large felzenszwalb or edge regions
# (:func:`_subdivide`): the watershed atoms' value before it was tuned, kept
# so that those methods' atoms did not change with it.
SUBDIVIDE_COMPACTNESS = 0.002


def _subdivide(labels: np.ndarray, image: np.ndarray, n_atoms: int,
               max_area_factor: float | None = None) -> np.ndarray:
    """Cut over-large regions into cells of about the mean atom area.

    If there are fewer than ``n_atoms / 4`` regions, every region larger
    than the mean atom area ``A = H * W / n_atoms`` is cut; otherwise only
    regions larger than ``max_area_factor * A`` (none if it is None). The
    cells are those of :func:`watershed_atoms` (a grid of about ``n_atoms``
    seeds grown by a compact watershed of the gradient), so cuts inside a
    region follow whatever weak edges it has. ``labels`` must be ``0..N-1``.
    """
    n = int(labels.max()) + 1
    mean_area = _mean_area(labels.shape, n_atoms)
    sizes = np.bincount(labels.ravel(), minlength=n)
    if n < n_atoms / 4:
        big = sizes > mean_area
    elif max_area_factor is not None:
        big = sizes > max_area_factor * mean_area
    else:
        return labels
    if not big.any():
        return labels
    cells = _watershed_cells(image, n_atoms, SUBDIVIDE_COMPACTNESS)
    m = int(cells.max()) + 1
    cut = np.where(big[labels], labels * m + cells, labels * m)
    return _finalize(_sequential(cut), image, n_atoms)


def _mean_area(shape, n_atoms) -> float:
    """The mean atom area ``A = H * W / n_atoms`` of an image of ``shape``."""
    return shape[0] * shape[1] / n_atoms


def _checked(image, n_atoms):
    """``(image as float64 HxWxC, n_atoms as int)``, each checked: the
    inputs of every method that reads the image's values."""
    return _as_image(image), _check_n_atoms(n_atoms)


# ---------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------


def pixel_atoms(image, n_atoms: int | None = None, *, seed=None) -> np.ndarray:
    """Every pixel its own atom.

    Parameters
    ----------
    image : ndarray, shape (H, W, C) or (H, W)
        Input image (only its shape is used).
    n_atoms : int, optional
        Ignored; present for a uniform signature.
    seed : optional
        Ignored (the method is deterministic).

    Returns
    -------
    labels : ndarray of int64, shape (H, W)
        ``labels[r, c] == r * W + c``.
    """
    img = np.asarray(image)
    if img.ndim not in (2, 3):
        raise ValueError(f"image must be HxW or HxWxC, got shape {img.shape}")
    h, w = img.shape[:2]
    return np.arange(h * w, dtype=np.int64).reshape(h, w)


def slic_atoms(image, n_atoms: int = 1000, *, compactness: float = SLIC_COMPACTNESS,
               sigma: float = 0.0, seed=None) -> np.ndarray:
    """SLIC superpixels.

    Calls :func:`skimage.segmentation.slic` directly on the given channels
    (no colour conversion: the caller already passes scaled CIELAB or grey).
    slic's own connectivity enforcement is switched off: on noisy images it
    can merge everything into one segment. The common clean-up (split into
    4-connected parts, merge fragments into the most similar neighbour) is
    used instead.

    Parameters
    ----------
    image, n_atoms, seed
        As for :func:`compute_atoms` (``n_atoms`` is slic's ``n_segments``;
        ``seed`` is ignored).
    compactness : float
        Weight of spatial against colour distance. The default 0.1 is the
        [0, 1] counterpart of skimage's CIELAB default of 10 (colours are
        about 100 times smaller).
    sigma : float
        Gaussian pre-smoothing passed to slic.

    Returns
    -------
    labels : ndarray of int64, shape (H, W)
        As for :func:`compute_atoms`.
    """
    from skimage.segmentation import slic

    img, n_atoms = _checked(image, n_atoms)
    lab = slic(img, n_segments=n_atoms, compactness=compactness, sigma=sigma,
               convert2lab=False, enforce_connectivity=False, start_label=0,
               channel_axis=-1)
    return _finalize(lab, img, n_atoms)


def felzenszwalb_atoms(image, n_atoms: int = 1000, *, sigma: float = 0.5,
                       max_iter: int = 4, seed=None) -> np.ndarray:
    """Felzenszwalb-Huttenlocher graph-based segmentation.

    Uses :func:`skimage.segmentation.felzenszwalb` with ``min_size`` a fifth
    of the mean atom area ``A = H * W / n_atoms``. Its ``scale`` (the
    threshold ``k`` of the paper, for data in [0, 1]) sets the size at which
    a region stops absorbing neighbours, so it grows linearly with the
    wanted region size: the search starts at ``scale = 0.05 * A``
    (calibrated on natural photos, where it gives about ``n_atoms``) and
    makes at most ``max_iter - 1`` secant corrections on log(count)
    against log(scale) (initial slope -0.5), stopping once the count after
    clean-up is within 25 % of ``n_atoms``. The run closest to ``n_atoms``
    (in ratio) is kept. On images with large flat areas felzenszwalb can
    return far fewer regions whatever the scale; if fewer than
    ``n_atoms / 4`` remain, regions larger than the mean atom area are cut
    by a grid of about ``n_atoms`` cells (as in :func:`edge_atoms`).

    Parameters
    ----------
    image, n_atoms, seed
        As for :func:`compute_atoms` (``seed`` is ignored).
    sigma : float
        Gaussian pre-smoothing passed to felzenszwalb.
    max_iter : int
        Maximum number of felzenszwalb runs in the scale search.

    Returns
    -------
    labels : ndarray of int64, shape (H, W)
        As for :func:`compute_atoms`.
    """
    from skimage.segmentation import felzenszwalb

    img, n_atoms = _checked(image, n_atoms)
    mean_area = _mean_area(img.shape, n_atoms)
    min_size = max(1, int(mean_area / 5))
    log_target = np.log(n_atoms)
    scale = 0.05 * mean_area
    slope = -0.5  # typical d log(count) / d log(scale) near the target
    best = None
    prev = None
    for _ in range(max(1, int(max_iter))):
        lab = felzenszwalb(img, scale=scale, sigma=sigma, min_size=min_size, channel_axis=-1)
        lab = _finalize(lab, img, n_atoms)
        count = int(lab.max()) + 1
        err = np.log(count) - log_target
        if best is None or abs(err) < best[0]:
            best = (abs(err), lab)
        if abs(err) < np.log(1.25):
            break
        if prev is not None:
            # Secant slope; kept at the previous value when the count did
            # not move (e.g. saturated at one region per pixel).
            s = (np.log(count) - np.log(prev[1])) / (np.log(scale) - np.log(prev[0]))
            if -3.0 < s < -0.1:
                slope = s
        prev = (scale, count)
        scale = scale * float(np.exp(np.clip(-err / slope, -3.0, 3.0)))
    return _subdivide(best[1], img, n_atoms)


def _grid_seeds(shape, n_atoms: int):
    h, w = shape
    rows = int(np.clip(round(np.sqrt(n_atoms * h / w)), 1, h))
    cols = int(np.clip(round(n_atoms / rows), 1, w))
    r = ((np.arange(rows) + 0.5) * h / rows).astype(np.int64)
    c = ((np.arange(cols) + 0.5) * w / cols).astype(np.int64)
    rr, cc = np.meshgrid(r, c, indexing="ij")
    return rr.ravel(), cc.ravel(), max(1.0, min(h / rows, w / cols))


def _watershed_cells(img: np.ndarray, n_atoms: int,
                     compactness: float = WATERSHED_COMPACTNESS, relief=None) -> np.ndarray:
    """Raw seeded compact watershed of ``relief``, by default the gradient
    (see watershed_atoms)."""
    from skimage.segmentation import watershed

    h, w = img.shape[:2]
    if relief is None:
        grad = _gradient(ndimage.gaussian_filter(img, sigma=(0.7, 0.7, 0)))
    else:
        grad = np.asarray(relief, dtype=np.float64)
        if grad.shape != (h, w):
            raise ValueError(f"relief has shape {grad.shape}, the image {(h, w)}")
    r, c, spacing = _grid_seeds((h, w), n_atoms)
    rad = int(spacing // 4)  # 0 (no move) when seeds are denser than 1 per 4x4
    off = np.arange(-rad, rad + 1)
    wr = np.clip(r[:, None, None] + off[None, :, None], 0, h - 1)
    wc = np.clip(c[:, None, None] + off[None, None, :], 0, w - 1)
    wr, wc = np.broadcast_arrays(wr, wc)
    wr = wr.reshape(r.size, -1)
    wc = wc.reshape(r.size, -1)
    k = np.argmin(grad[wr, wc], axis=1)
    idx = np.arange(r.size)
    r, c = wr[idx, k], wc[idx, k]
    markers = np.zeros((h, w), dtype=np.int64)
    markers[r, c] = np.arange(1, r.size + 1)
    lab = watershed(grad, markers=markers, connectivity=1, compactness=compactness)
    return lab


def watershed_atoms(image, n_atoms: int = 1000, *,
                    compactness: float = WATERSHED_COMPACTNESS, refine: bool = True,
                    seed=None, relief=None) -> np.ndarray:
    """Compact watershed of the gradient magnitude from a grid of seeds.

    The gradient is the Sobel magnitude of all channels (Euclidean norm;
    for a grey image the Sobel of lightness) after a light Gaussian blur.
    About ``n_atoms`` seeds are put on a regular grid and each is moved to
    the lowest gradient in a small window around it (as in SLIC), so seeds
    do not sit on edges. With ``relief`` that surface is flooded instead
    of the gradient (the posteriors with the learned boundary detector
    pass its boundary probability, so atom boundaries follow the edges
    annotators draw rather than every change of colour: the oriented
    watershed of gPb-owt-ucm, Arbelaez et al. 2011, without orientations).

    Parameters
    ----------
    image, n_atoms, seed
        As for :func:`compute_atoms` (``n_atoms`` is the number of seeds;
        ``seed`` is ignored).
    compactness : float
        Compactness of :func:`skimage.segmentation.watershed`.
    refine : bool
        Snap the boundaries: each pixel then takes the label, among its own
        and its four neighbours', of the region of nearest mean colour
        (one pass), so that no region keeps the ridge pixels on the far
        side of a sharp edge.
    relief : (H, W) float array, optional
        The surface flooded, whose ridges become atom boundaries (default
        the gradient magnitude).

    Returns
    -------
    labels : ndarray of int64, shape (H, W)
        As for :func:`compute_atoms`.
    """
    img, n_atoms = _checked(image, n_atoms)
    lab = _watershed_cells(img, n_atoms, compactness, relief)
    if refine:
        lab = _snap_boundaries(lab, img)
    return _finalize(lab, img, n_atoms)


def _snap_boundaries(labels: np.ndarray, img: np.ndarray, sigma: float = 0.7) -> np.ndarray:
    """One pass that gives every pixel the label, among its own and its four
    neighbours', of the region whose mean colour (of ``img`` blurred at
    ``sigma``) is nearest.

    A watershed of the gradient leaves the ridge pixels of an edge to
    whichever basin floods them first, so a region may hold a pixel or two
    from the far side of a sharp edge; this moves them back. One pass only:
    repeated passes fragment regions on noise.
    """
    f = ndimage.gaussian_filter(img, sigma=(sigma, sigma, 0))
    n = int(labels.max()) + 1
    means = _region_means(labels, f, n, np.bincount(labels.ravel(), minlength=n))
    p = np.pad(labels, 1, mode="edge")
    best = labels.copy()
    best_dist = ((f - means[labels]) ** 2).sum(axis=-1)
    # One (H, W) comparison per neighbour keeps the memory at a few images.
    for candidate in (p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]):
        dist = ((f - means[candidate]) ** 2).sum(axis=-1)
        nearer = dist < best_dist
        best[nearer] = candidate[nearer]
        best_dist[nearer] = dist[nearer]
    return best


def _link_endpoints(edges: np.ndarray, radius: float) -> np.ndarray:
    """Close gaps: join each end point of an edge curve to the nearest pixel
    of a different curve (or of the image border) within ``radius``."""
    from scipy.spatial import cKDTree

    h, w = edges.shape
    e = edges.astype(bool)
    nb = ndimage.convolve(e.astype(np.uint8), np.ones((3, 3), np.uint8),
                          mode="constant") - e
    ends = np.argwhere(e & (nb <= 1))
    if ends.size == 0:
        return e
    comp, _ = ndimage.label(e, structure=np.ones((3, 3), bool))
    pts = np.argwhere(e)
    ids = comp[e]
    # The border is a curve of its own (id 0): a curve ending near it is closed.
    br = np.concatenate([np.arange(h), np.arange(h), np.zeros(w, int), np.full(w, h - 1)])
    bc = np.concatenate([np.zeros(h, int), np.full(h, w - 1), np.arange(w), np.arange(w)])
    pts = np.concatenate([pts, np.stack([br, bc], axis=1)])
    ids = np.concatenate([ids, np.zeros(br.size, ids.dtype)])
    k = int(min(pts.shape[0], 4 * radius + 8))
    dist, nn = cKDTree(pts).query(ends, k=k, distance_upper_bound=radius)
    dist = dist.reshape(ends.shape[0], -1)
    nn = nn.reshape(ends.shape[0], -1)
    own = comp[ends[:, 0], ends[:, 1]]
    valid = np.isfinite(dist)
    other = valid & (ids[np.minimum(nn, pts.shape[0] - 1)] != own[:, None])
    has = other.any(axis=1)
    j = np.argmax(other, axis=1)
    p0 = ends[has]
    p1 = pts[nn[has, j[has]]]
    if p0.size == 0:
        return e
    # Rasterise the segments p0 -> p1 with enough samples for an 8-connected
    # line (vectorised over segments).
    n_s = int(np.ceil(radius)) * 2 + 2
    t = np.linspace(0.0, 1.0, n_s)
    rr = np.rint(p0[:, None, 0] + t[None, :] * (p1[:, None, 0] - p0[:, None, 0])).astype(int)
    cc = np.rint(p0[:, None, 1] + t[None, :] * (p1[:, None, 1] - p0[:, None, 1])).astype(int)
    out = e.copy()
    out[rr.ravel(), cc.ravel()] = True
    return out


def edge_atoms(image, n_atoms: int = 1000, *, sigma: float = 1.0,
               link_radius: float | None = None, max_area_factor: float | None = 16.0,
               seed=None) -> np.ndarray:
    """Atoms from closed edge contours (Barbu & Zhu's own over-segmentation).

    Steps: Canny edges of the (blurred) lightness channel with hysteresis
    thresholds taken from the gradient distribution (high = 80th percentile,
    with an absolute floor so flat noise gives no edges, low = 0.4 * high);
    gaps are closed by joining every curve end point to the nearest pixel of
    another curve or of the image border within ``link_radius``; the
    non-edge pixels are labelled into 4-connected regions, which seed a
    watershed of the gradient magnitude that hands the edge pixels to a
    neighbouring region. Regions are then cut into grid-seeded watershed
    cells of about the mean atom area ``A = H * W / n_atoms``: all regions
    larger than ``A`` if fewer than ``n_atoms / 4`` regions resulted (a
    smooth image), otherwise only those larger than ``max_area_factor * A``
    (a guard against a contour gap leaking one region into another; an atom
    can never be split by the sampler). Too many regions are left as they
    are apart from the usual merging of tiny fragments.

    Parameters
    ----------
    image, n_atoms, seed
        As for :func:`compute_atoms` (``n_atoms`` sets the fragment size,
        the link radius and the cell size for large regions; ``seed`` is
        ignored).
    sigma : float
        Gaussian blur before Canny.
    link_radius : float, optional
        Longest gap bridged between edge curves. Default: half the mean atom
        spacing, clipped to 2..8 pixels.
    max_area_factor : float or None
        Regions larger than this many mean atom areas are always cut into
        cells; None keeps them whole (only the too-few rule applies).

    Returns
    -------
    labels : ndarray of int64, shape (H, W)
        As for :func:`compute_atoms`.
    """
    import cv2
    from skimage.segmentation import watershed

    img, n_atoms = _checked(image, n_atoms)
    h, w = img.shape[:2]
    spacing = np.sqrt(_mean_area(img.shape, n_atoms))
    if link_radius is None:
        link_radius = float(np.clip(spacing / 2, 2.0, 8.0))

    light = np.clip(img[:, :, 0], 0.0, 1.0)
    blur = ndimage.gaussian_filter(light, sigma) if sigma > 0 else light
    l8 = np.rint(blur * 255).astype(np.uint8)
    gx = cv2.Sobel(l8, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(l8, cv2.CV_32F, 0, 1, ksize=3)
    mag = np.sqrt(gx * gx + gy * gy)
    # A step of 0.04 in lightness gives |grad| ~ 4 * 0.04 * 255 ~ 40.
    high = max(float(np.percentile(mag, 80)), 40.0)
    edges = cv2.Canny(l8, 0.4 * high, high, L2gradient=True) > 0
    edges = _link_endpoints(edges, link_radius)

    regions = _connected(np.where(edges, -1, 0))  # non-edge components >= 0, edges -1
    markers = np.where(edges, 0, regions + 1)
    grad = _gradient(ndimage.gaussian_filter(img, sigma=(0.7, 0.7, 0)))
    if markers.max() == 0:  # edges everywhere (degenerate): use a grid
        markers = _grid_labels((h, w), n_atoms) + 1
    lab = watershed(grad, markers=markers, connectivity=1)
    lab = _finalize(lab, img, n_atoms)
    return _subdivide(lab, img, n_atoms, max_area_factor)


_METHODS = {
    "slic": slic_atoms,
    "felzenszwalb": felzenszwalb_atoms,
    "watershed": watershed_atoms,
    "edges": edge_atoms,
    "pixels": pixel_atoms,
}


def compute_atoms(image, method: str = "slic", n_atoms: int = 1000, *, seed=None, relief=None) -> np.ndarray:
    """Over-segment an image into atomic regions.

    Parameters
    ----------
    image : ndarray, shape (H, W, C)
        Float64 image with values in [0, 1], C = 1 (grey) or 3 (CIELAB
        scaled to [0, 1] per channel, channel 0 the lightness). A 2-D array
        is taken as C = 1.
    method : str
        One of :data:`ATOM_METHODS`: ``"slic"``, ``"felzenszwalb"``,
        ``"watershed"``, ``"edges"`` or ``"pixels"``.
    n_atoms : int
        Requested number of atoms. Reached approximately by ``"slic"``,
        ``"felzenszwalb"`` and ``"watershed"``; ``"edges"`` follows the
        image content and only guarantees about ``n_atoms / 4`` or more;
        ``"pixels"`` ignores it.
    seed : optional
        Accepted for API uniformity; all methods are deterministic.
    relief : (H, W) float array, optional
        With ``"watershed"`` only: the surface flooded instead of the
        gradient (:func:`watershed_atoms`).

    Returns
    -------
    labels : ndarray of int64, shape (H, W)
        Atom labels ``0..N-1``, every label used, every atom 4-connected.

    Raises
    ------
    ValueError
        For an unknown method, ``n_atoms < 1`` or a ``relief`` given to
        another method than ``"watershed"``.
    """
    if method not in _METHODS:
        raise ValueError(
            f"unknown atom method {method!r}; choose one of {', '.join(ATOM_METHODS)}")
    n_atoms = _check_n_atoms(n_atoms)
    if relief is not None:
        if method != "watershed":
            raise ValueError(f"only 'watershed' atoms take a relief, not {method!r}")
        return watershed_atoms(image, n_atoms, seed=seed, relief=relief)
    return _METHODS[method](image, n_atoms, seed=seed)


def majority_labels(labels, atoms) -> np.ndarray:
    """The label most of each atom's pixels have in ``labels`` (ties: the
    smallest), one per atom, atoms in ascending order of their values.

    Parameters
    ----------
    labels, atoms : (H, W) int array
        A segmentation and an over-segmentation of one image (same shape).

    Returns
    -------
    (n_atoms,) array of ``labels``' values

    Examples
    --------
    >>> atoms = np.array([[0, 0, 1, 1], [0, 0, 1, 1]])
    >>> majority_labels(np.array([[5, 5, 5, 7], [5, 5, 7, 7]]), atoms)
    array([5, 7])
    """
    names, seg = np.unique(np.asarray(labels), return_inverse=True)
    a_names, inv = np.unique(np.asarray(atoms), return_inverse=True)
    k = names.size
    table = np.bincount(inv.ravel() * k + seg.ravel(), minlength=a_names.size * k)
    return names[table.reshape(a_names.size, k).argmax(1)]
