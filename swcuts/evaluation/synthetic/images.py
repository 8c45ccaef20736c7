"""Synthetic images with a known partition (in the spirit of Fig. 7 of
Barbu & Zhu, "Generalizing Swendsen-Wang to sampling arbitrary posterior
probabilities", 2005).

Every image is a background with a few shapes (ellipses/circles, triangles,
rectangles) drawn on it. The intensity of each region comes from one of
three families, the region models of the paper:

``"clutter"``
    constant mean plus iid texture from a non-Gaussian histogram: each pixel
    takes one of two intensities (colours), a mixture like clutter;
``"linear"``
    a linear ramp ``a + b x + c y``;
``"quadratic"``
    a quadratic surface ``a + b x + c y + d x^2 + e xy + f y^2``.

iid Gaussian noise (level ``"low"``, ``"medium"`` or ``"high"``) is added
on top and the result clipped to [0, 1]. The ground truth ``truth`` has
labels ``0..K-1`` (0 is the background), every region is one 4-connected
piece of at least 2 % of the image, and regions that touch differ by at
least 0.15 (grey levels, or Euclidean RGB distance) at 95 % of the
4-adjacent pixel pairs across their common boundary, before noise.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SYNTHETIC_NOISE", "FAMILIES", "make_synthetic", "make_fig7"]

SYNTHETIC_NOISE = ("low", "medium", "high")
NOISE_SIGMA = {"low": 0.02, "medium": 0.05, "high": 0.1}
FAMILIES = ("clutter", "linear", "quadratic")
SHAPES = ("ellipse", "triangle", "rectangle")

MIN_REGION_FRACTION = 0.02  # every region covers at least this much
MIN_CONTRAST = 0.15  # noise-free difference across boundaries (5th percentile)
_LEVEL_RANGE = (0.03, 0.97)  # noise-free values stay inside this range


def _noise_sigma(noise) -> float:
    if isinstance(noise, str):
        if noise not in NOISE_SIGMA:
            raise ValueError(
                f"unknown noise level {noise!r}; choose one of {', '.join(SYNTHETIC_NOISE)}")
        return NOISE_SIGMA[noise]
    sigma = float(noise)
    if not sigma >= 0:
        raise ValueError(f"noise must be one of {', '.join(SYNTHETIC_NOISE)} or a sigma >= 0")
    return sigma


# ---------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------


def _ellipse(yy, xx, cy, cx, ry, rx, angle=0.0):
    dy, dx = yy - cy, xx - cx
    ca, sa = np.cos(angle), np.sin(angle)
    u = (dx * ca + dy * sa) / rx
    v = (-dx * sa + dy * ca) / ry
    return u * u + v * v <= 1.0


def _rectangle(yy, xx, top, left, height, width):
    return (yy >= top) & (yy < top + height) & (xx >= left) & (xx < left + width)


def _triangle(yy, xx, vertices):
    (y0, x0), (y1, x1), (y2, x2) = vertices

    def side(ya, xa, yb, xb):
        return (xb - xa) * (yy - ya) - (yb - ya) * (xx - xa)

    d0, d1, d2 = side(y0, x0, y1, x1), side(y1, x1, y2, x2), side(y2, x2, y0, x0)
    return ((d0 >= 0) & (d1 >= 0) & (d2 >= 0)) | ((d0 <= 0) & (d1 <= 0) & (d2 <= 0))


def _random_shape(kind, shape, rng, frac, yy, xx):
    """Boolean mask of a random shape of about ``frac`` of the image area."""
    h, w = shape
    area = frac * h * w
    if kind == "ellipse":
        aspect = rng.uniform(1.0, 1.8)
        ry = np.sqrt(area / (np.pi * aspect))
        rx = ry * aspect
        r = max(rx, ry)
        cy = rng.uniform(min(r, h / 2), max(h - r, h / 2))
        cx = rng.uniform(min(r, w / 2), max(w - r, w / 2))
        return _ellipse(yy, xx, cy, cx, ry, rx, rng.uniform(0, np.pi))
    if kind == "rectangle":
        aspect = rng.uniform(0.5, 2.0)  # width / height
        height = min(np.sqrt(area / aspect), h)
        width = min(area / height, w)
        top = rng.uniform(0, h - height)
        left = rng.uniform(0, w - width)
        return _rectangle(yy, xx, top, left, height, width)
    if kind == "triangle":
        # Vertices at roughly 120 degrees apart on a circle, scaled to area.
        theta = rng.uniform(0, 2 * np.pi) + np.array([0.0, 2.0, 4.0]) * np.pi / 3
        theta = theta + rng.uniform(-0.35, 0.35, size=3)
        py, px = np.sin(theta), np.cos(theta)
        unit = 0.5 * abs((px[1] - px[0]) * (py[2] - py[0]) - (px[2] - px[0]) * (py[1] - py[0]))
        r = np.sqrt(area / unit)
        cy = rng.uniform(min(r, h / 2), max(h - r, h / 2))
        cx = rng.uniform(min(r, w / 2), max(w - r, w / 2))
        return _triangle(yy, xx, list(zip(cy + r * py, cx + r * px)))
    raise ValueError(f"unknown shape {kind!r}")


def _valid_partition(truth, n_regions, min_area) -> bool:
    """Labels 0..n_regions-1 all present, each one 4-connected piece of at
    least ``min_area`` pixels."""
    from skimage.measure import label

    sizes = np.bincount(truth.ravel(), minlength=n_regions)
    if sizes.size != n_regions or sizes.min() < min_area:
        return False
    return int(label(truth, background=-1, connectivity=1).max()) == n_regions


def _random_layout(shape, n_shapes, rng, max_restarts=200):
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    min_area = MIN_REGION_FRACTION * h * w
    fmax = float(np.clip(0.6 / max(n_shapes, 1), 0.05, 0.15))
    for _ in range(max_restarts):
        kinds = list(rng.permutation(SHAPES))
        kinds += list(rng.choice(SHAPES, size=max(0, n_shapes - 3)))
        truth = np.zeros(shape, dtype=np.int64)
        ok = True
        for k in range(1, n_shapes + 1):
            for _ in range(60):
                mask = _random_shape(kinds[k - 1], shape, rng, rng.uniform(0.04, fmax), yy, xx)
                cand = truth.copy()
                cand[mask] = k
                if _valid_partition(cand, k + 1, min_area):
                    truth = cand
                    break
            else:
                ok = False
                break
        if ok:
            return truth
    raise RuntimeError(f"could not place {n_shapes} shapes in an image of shape {shape}")


# ---------------------------------------------------------------------------
# appearance
# ---------------------------------------------------------------------------


def _region_coords(truth, n_regions):
    """Normalised coordinates per region: (x - cx) / s, (y - cy) / s over the
    whole image, s the equivalent radius of the region."""
    h, w = truth.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    flat = truth.ravel()
    cnt = np.bincount(flat, minlength=n_regions).astype(np.float64)
    cy = np.bincount(flat, weights=yy.ravel(), minlength=n_regions) / cnt
    cx = np.bincount(flat, weights=xx.ravel(), minlength=n_regions) / cnt
    s = np.sqrt(cnt / np.pi)
    return xx, yy, cx, cy, s


def _shading(family, params, u, v):
    """Zero-mean-ish spatial part of a region's intensity."""
    if family == "clutter":
        return np.zeros_like(u)
    if family == "linear":
        b, c = params["slope"]
        return b * u + c * v
    if family == "quadratic":
        b, c, d, e, f = params["quad"]
        return b * u + c * v + d * u * u + e * u * v + f * v * v
    raise ValueError(f"unknown family {family!r}")


def _random_params(family, rng, n_channels):
    p = {"family": family, "mean": rng.uniform(0.18, 0.82, size=n_channels)}
    if family == "clutter":
        p["amp"] = rng.uniform(0.12, 0.2)
        p["p"] = rng.uniform(0.3, 0.7)
        d = rng.normal(size=n_channels)
        p["dir"] = d / np.linalg.norm(d) if n_channels > 1 else np.ones(1)
    elif family == "linear":
        ang = rng.uniform(0, 2 * np.pi)
        p["slope"] = (np.cos(ang), np.sin(ang))
        p["range"] = rng.uniform(0.12, 0.3)
    else:
        ang = rng.uniform(0, 2 * np.pi)
        lin = rng.uniform(0.0, 0.5)
        sign = rng.choice([-1.0, 1.0])
        d, f = sign * rng.uniform(0.5, 1.0, size=2)
        p["quad"] = (lin * np.cos(ang), lin * np.sin(ang), d, rng.uniform(-0.5, 0.5), f)
        p["range"] = rng.uniform(0.12, 0.3)
    return p


def _surface(params, region_mask, u, v):
    """Noise-free mean intensity of a region over its pixels (N, C), plus the
    clutter half-amplitude used for range checks."""
    fam = params["family"]
    mean = np.asarray(params["mean"], dtype=np.float64)
    sh = _shading(fam, params, u[region_mask], v[region_mask])
    if fam != "clutter":
        span = sh.max() - sh.min()
        sh = (sh - sh.mean()) * (params["range"] / span if span > 0 else 0.0)
    return mean[None, :] + sh[:, None]


def _boundary_pairs(truth):
    """Flat indices (i, j) of 4-adjacent pixel pairs with different labels."""
    h, w = truth.shape
    idx = np.arange(h * w).reshape(h, w)
    i = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    j = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    flat = truth.ravel()
    keep = flat[i] != flat[j]
    return i[keep], j[keep]


def _contrast_ok(mean_img, truth, k, assigned, pairs) -> bool:
    i, j = pairs
    flat = truth.ravel()
    li, lj = flat[i], flat[j]
    for other in np.unique(np.concatenate([lj[li == k], li[lj == k]])).tolist():
        if not assigned[other]:
            continue
        a = np.concatenate([i[(li == k) & (lj == other)], j[(lj == k) & (li == other)]])
        b = np.concatenate([j[(li == k) & (lj == other)], i[(lj == k) & (li == other)]])
        diff = np.sqrt(((mean_img[a] - mean_img[b]) ** 2).sum(axis=1))
        if np.percentile(diff, 5) < MIN_CONTRAST:
            return False
    return True


def _in_range(surf, params) -> bool:
    half = params["amp"] * max(params["p"], 1 - params["p"]) if params["family"] == "clutter" else 0.0
    return surf.min() - half >= _LEVEL_RANGE[0] and surf.max() + half <= _LEVEL_RANGE[1]


def _random_appearance(truth, n_regions, n_channels, rng, max_restarts=50, tries=300):
    xx, yy, cx, cy, s = _region_coords(truth, n_regions)
    pairs = _boundary_pairs(truth)
    flat = truth.ravel()
    for _ in range(max_restarts):
        fams = list(rng.permutation(FAMILIES))
        fams += list(rng.choice(FAMILIES, size=max(0, n_regions - 3)))
        fams = fams[:n_regions]
        mean_img = np.zeros((flat.size, n_channels))
        assigned = np.zeros(n_regions, dtype=bool)
        regions = []
        for k in range(n_regions):
            mask = flat == k
            u = ((xx - cx[k]) / s[k]).ravel()
            v = ((yy - cy[k]) / s[k]).ravel()
            for _ in range(tries):
                params = _random_params(fams[k], rng, n_channels)
                surf = _surface(params, mask, u, v)
                if not _in_range(surf, params):
                    continue
                mean_img[mask] = surf
                if _contrast_ok(mean_img, truth, k, assigned, pairs):
                    break
            else:
                break
            assigned[k] = True
            regions.append(params)
        if assigned.all():
            return regions
    raise RuntimeError("could not find region intensities with enough contrast")


def _render(truth, regions, n_channels, sigma, rng):
    """Draw texture and noise; return float image (H, W, C) in [0, 1]."""
    h, w = truth.shape
    n = len(regions)
    xx, yy, cx, cy, s = _region_coords(truth, n)
    flat = truth.ravel()
    out = np.zeros((flat.size, n_channels))
    # Random draws are made for the whole image in a fixed order, so that the
    # same seed gives the same texture whatever the noise level.
    coin = rng.random(flat.size)
    gauss = rng.standard_normal((flat.size, n_channels))
    for k, params in enumerate(regions):
        mask = flat == k
        u = ((xx - cx[k]) / s[k]).ravel()
        v = ((yy - cy[k]) / s[k]).ravel()
        surf = _surface(params, mask, u, v)
        if params["family"] == "clutter":
            p = params["p"]
            b = (coin[mask] < p).astype(np.float64) - p  # zero-mean two-valued
            surf = surf + params["amp"] * b[:, None] * np.asarray(params["dir"])[None, :]
        out[mask] = surf
    out = np.clip(out + sigma * gauss, 0.0, 1.0)
    return out.reshape(h, w, n_channels)


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def make_synthetic(shape=(120, 160), *, colour: bool = False, noise="medium", seed=None,
                   n_shapes: int | None = None):
    """Random synthetic image of shapes on a background, with its partition.

    Parameters
    ----------
    shape : tuple of int
        Image size (H, W); at least 16 x 16.
    colour : bool
        If True, return an RGB image (H, W, 3); otherwise grey (H, W).
    noise : {"low", "medium", "high"} or float
        iid Gaussian noise with sigma 0.02, 0.05, 0.1 (or the given sigma),
        added to the noise-free image, then clipped to [0, 1].
    seed : int, Generator or None
        Seed of :func:`numpy.random.default_rng`. The layout, region models
        and texture depend on the seed only, not on ``noise``: the same
        seed at two noise levels gives the same image up to the noise.
    n_shapes : int, optional
        Number of shapes on the background (default: 3 to 5, random); the
        first three are one ellipse, one triangle and one rectangle (in
        random order), further ones of random kind.

    Returns
    -------
    image : ndarray of float64, shape (H, W) or (H, W, 3)
        Values in [0, 1].
    truth : ndarray of int64, shape (H, W)
        Region labels ``0..K-1`` (0 the background, K = n_shapes + 1 as
        long as every shape stays visible), each region 4-connected and at
        least 2 % of the image; touching regions differ by at least 0.15
        before noise.

    Examples
    --------
    >>> image, truth = make_synthetic((32, 40), n_shapes=3, seed=0)
    >>> image.shape, truth.shape, int(truth.max()) + 1  # background and three shapes
    ((32, 40), (32, 40), 4)
    >>> bool(image.min() >= 0.0 and image.max() <= 1.0)
    True
    >>> colour, _ = make_synthetic((32, 40), colour=True, noise="low", seed=0)
    >>> colour.shape
    (32, 40, 3)
    """
    h, w = (int(shape[0]), int(shape[1]))
    if h < 16 or w < 16:
        raise ValueError(f"shape must be at least 16 x 16, got {shape}")
    sigma = _noise_sigma(noise)
    rng = np.random.default_rng(seed)
    if n_shapes is None:
        n_shapes = int(rng.integers(3, 6))
    if not 1 <= int(n_shapes) <= 12:
        raise ValueError(f"n_shapes must be in 1..12, got {n_shapes}")
    n_shapes = int(n_shapes)
    n_channels = 3 if colour else 1
    truth = _random_layout((h, w), n_shapes, rng)
    regions = _random_appearance(truth, n_shapes + 1, n_channels, rng)
    image = _render(truth, regions, n_channels, sigma, rng)
    if not colour:
        image = image[:, :, 0]
    return image, truth


def make_fig7(shape=(160, 240), seed=0, *, noise="medium"):
    """The fixed Fig. 7-like test image: two circles, a triangle and three
    rectangles (two of them touching) on a background, grey.

    Region models (label: shape, family):
    0 background, linear ramp 0.40 -> 0.55 left to right;
    1 upper-left circle, clutter (two levels 0.77 / 0.93);
    2 lower-right circle, quadratic bowl, dark (0.10 centre, 0.22 rim);
    3 triangle, clutter, dark (levels 0.11 / 0.25);
    4 lower-left rectangle, quadratic dome, bright (0.92 -> 0.77);
    5 rectangle touching 4, linear ramp 0.12 -> 0.26, dark;
    6 upper-right rectangle, linear ramp 0.95 -> 0.75 top to bottom.
    The layout scales with ``shape``; only the texture and the noise depend
    on ``seed``.

    Parameters
    ----------
    shape : tuple of int
        Image size (H, W); at least 32 x 48.
    seed : int, Generator or None
        Seed of the texture and noise.
    noise : {"low", "medium", "high"} or float
        Noise level as in :func:`make_synthetic`.

    Returns
    -------
    image : ndarray of float64, shape (H, W)
        Grey image in [0, 1].
    truth : ndarray of int64, shape (H, W)
        Labels 0..6 as listed above.

    Examples
    --------
    >>> image, truth = make_fig7((32, 48), seed=1)
    >>> image.shape, np.unique(truth).tolist()
    ((32, 48), [0, 1, 2, 3, 4, 5, 6])
    """
    h, w = (int(shape[0]), int(shape[1]))
    if h < 32 or w < 48:
        raise ValueError(f"shape must be at least 32 x 48, got {shape}")
    sigma = _noise_sigma(noise)
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    truth = np.zeros((h, w), dtype=np.int64)
    truth[_ellipse(yy, xx, 0.30 * h, 0.20 * w, 0.17 * h, 0.17 * h)] = 1
    truth[_ellipse(yy, xx, 0.68 * h, 0.78 * w, 0.20 * h, 0.20 * h)] = 2
    truth[_triangle(yy, xx, [(0.12 * h, 0.47 * w), (0.56 * h, 0.36 * w),
                             (0.50 * h, 0.63 * w)])] = 3
    truth[_rectangle(yy, xx, 0.62 * h, 0.08 * w, 0.26 * h, 0.26 * w)] = 4
    truth[_rectangle(yy, xx, 0.74 * h, 0.30 * w, 0.20 * h, 0.25 * w)] = 5
    truth[_rectangle(yy, xx, 0.08 * h, 0.72 * w, 0.27 * h, 0.20 * w)] = 6

    xx, yy, cx, cy, s = _region_coords(truth, 7)
    u_img = (xx / w)  # background ramp in image coordinates
    coin = rng.random((h, w))
    gauss = rng.standard_normal((h, w))
    img = np.zeros((h, w))

    def norm(a, m):
        a = a[m]
        return (a - a.min()) / max(a.max() - a.min(), 1e-12)

    def clutter(m, lo, hi, p):
        return np.where(coin[m] < p, hi, lo)

    m = truth == 0
    img[m] = 0.40 + 0.15 * u_img[m]
    m = truth == 1
    img[m] = clutter(m, 0.77, 0.93, 0.5)
    m = truth == 2
    r2 = ((xx - cx[2]) ** 2 + (yy - cy[2]) ** 2)
    img[m] = 0.10 + 0.12 * norm(r2, m)
    m = truth == 3
    img[m] = clutter(m, 0.11, 0.25, 0.3)
    m = truth == 4
    q = ((xx - cx[4]) / (0.13 * w)) ** 2 + ((yy - cy[4]) / (0.13 * h)) ** 2
    img[m] = 0.92 - 0.15 * norm(q, m)
    m = truth == 5
    img[m] = 0.12 + 0.14 * norm(xx, m)
    m = truth == 6
    img[m] = 0.95 - 0.20 * norm(yy, m)

    img = np.clip(img + sigma * gauss, 0.0, 1.0)
    return img, truth
