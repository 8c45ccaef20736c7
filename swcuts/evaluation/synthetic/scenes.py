"""Synthetic piecewise scenes: a second generator, independent of
:mod:`swcuts.evaluation.synthetic.images` (whose images swcuts' defaults were tuned on).

Layouts (``LAYOUTS``): ``"voronoi"`` power-diagram cells of varied size,
boundaries displaced by fractal noise; ``"blobs"`` thresholded smooth noise
painted over a background; ``"stripes"`` bands of varied width along a
wavy direction, occluded by a few objects; ``"occlusion"`` a background
split by a wavy horizon under overlapping, depth-ordered superellipses
with jittered rims. Region families (``FAMILIES``; Barbu & Zhu section 5,
eqs. 55-57, plus one): ``"histogram"`` iid draws from a random mixture of
2-5 intensities (colours) with a requested spread (std); ``"linear"`` a
plane; ``"quadratic"`` a dome, bowl or saddle; ``"smooth-texture"``
anisotropic filtered noise with a requested spread. Noise (``NOISE_KINDS``
x ``NOISE_LEVELS`` low / medium / high), after a 0.7-px optical blur: iid
Gaussian (sigma 0.015 / 0.04 / 0.08), Poisson shot noise (1000 / 150 / 40
photons at intensity 1, read noise 0.004) or salt-and-pepper (0.5 / 2 / 5 %
of the pixels, on Gaussian noise 0.01 / 0.02 / 0.03).

Ground truth: labels ``0..K-1``, each one 4-connected region of at least
``MIN_AREA_FRACTION`` of the image (fragments, then the smallest regions,
join the neighbour they share the longest boundary with). Touching regions
differ before blur and noise: their mean parts (level plus shading) by
``MIN_CONTRAST`` (Euclidean over channels) at 90 % of the boundary's pixel
pairs, or their texture spreads by a factor ``SPREAD_RATIO`` and at least
``SPREAD_GAP``.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi
from skimage.measure import label

__all__ = ["LAYOUTS", "FAMILIES", "FAMILY_MIXES", "NOISE_LEVELS", "NOISE_KINDS", "MIN_CONTRAST",
           "SPREAD_RATIO", "SPREAD_GAP", "MIN_AREA_FRACTION", "make_scene", "make_scene_set"]

LAYOUTS = ("voronoi", "blobs", "stripes", "occlusion")
FAMILIES = ("histogram", "linear", "quadratic", "smooth-texture")
FAMILY_MIXES = {"mixed": FAMILIES, "shading": ("linear", "quadratic"),
                "texture": ("histogram", "smooth-texture")}
NOISE_LEVELS = ("low", "medium", "high")
NOISE_KINDS = ("gaussian", "poisson", "salt-pepper")
_GAUSS = {"low": 0.015, "medium": 0.04, "high": 0.08}
_PHOTONS = {"low": 1000.0, "medium": 150.0, "high": 40.0}
_IMPULSE = {"low": (0.005, 0.01), "medium": (0.02, 0.02), "high": (0.05, 0.03)}

MIN_CONTRAST = 0.12  # mean-part difference across a boundary (10th percentile)
SPREAD_RATIO = 2.5  # ... or texture spreads this many times apart
SPREAD_GAP = 0.05  # ... and at least this far apart
MIN_AREA_FRACTION = 0.005
_RANGE = (0.02, 0.98)  # noise-free values stay inside


def _fractal(shape, rng, sigma, octaves=4):
    """Unit-std multi-octave smooth noise, coarsest scale ``sigma`` pixels."""
    out = np.zeros(shape)
    for o in range(octaves):
        f = ndi.gaussian_filter(rng.standard_normal(shape), max(sigma / 2 ** o, 0.7), mode="wrap")
        out += 0.55 ** o * f / (f.std() + 1e-12)
    return out / (out.std() + 1e-12)


def _voronoi(shape, n, rng):
    h, w = shape
    yy, xx = np.indices(shape, dtype=np.float64)
    r0 = np.sqrt(h * w / (np.pi * n))
    amp = rng.uniform(0.08, 0.3) * r0
    yy, xx = yy + amp * _fractal(shape, rng, r0 / 2), xx + amp * _fractal(shape, rng, r0 / 2)
    py, px = rng.uniform(0, h, n), rng.uniform(0, w, n)
    weight = rng.uniform(0, 0.9, n) * r0 ** 2  # power diagram: cells of varied size
    d = (yy[None] - py[:, None, None]) ** 2 + (xx[None] - px[:, None, None]) ** 2 - weight[:, None, None]
    return np.argmin(d, axis=0)


def _blobs(shape, n, rng):
    h, w = shape
    yy, xx = np.indices(shape, dtype=np.float64)
    r0 = np.sqrt(h * w / (np.pi * n))
    lab = np.zeros(shape, dtype=np.int64)
    for j in range(1, n):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = r0 * rng.uniform(0.7, 1.8)
        bump = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
        field = bump + rng.uniform(0.15, 0.35) * _fractal(shape, rng, r / 2, octaves=3)
        lab[field > 0.55] = j
    return lab


def _object(yy, xx, cy, cx, r, rng):
    """Superellipse of radius ~r with a harmonic-jittered rim."""
    a, dy, dx = rng.uniform(0, np.pi), yy - cy, xx - cx
    u = (dx * np.cos(a) + dy * np.sin(a)) / (r * rng.uniform(0.8, 1.4))
    v = (-dx * np.sin(a) + dy * np.cos(a)) / (r * rng.uniform(0.6, 1.0))
    p = rng.uniform(1.4, 5.0)
    rho, phi = (np.abs(u) ** p + np.abs(v) ** p) ** (1 / p), np.arctan2(v, u)
    rim = sum((rng.normal(0, 0.12 / k) * np.cos(k * phi + rng.uniform(0, 2 * np.pi)) for k in range(2, 8)),
              np.ones_like(phi))
    return rho <= rim


def _stripes(shape, n, rng):
    h, w = shape
    yy, xx = np.indices(shape, dtype=np.float64)
    n_bands = int(np.clip(round(n * rng.uniform(0.4, 0.7)), 2, n))
    a = rng.uniform(0, np.pi)
    along, t = xx * np.sin(a) - yy * np.cos(a), xx * np.cos(a) + yy * np.sin(a)
    t = t + rng.uniform(3, 0.06 * h + 3) * np.sin(2 * np.pi * along / rng.uniform(0.4, 1.5) / w
                                                  + rng.uniform(0, 2 * np.pi))
    t = t + rng.uniform(1, 4) * _fractal(shape, rng, 6)
    cuts = np.quantile(t, np.cumsum(rng.dirichlet(np.full(n_bands, 3.0)))[:-1])
    lab = np.digitize(t, cuts)
    r0 = np.sqrt(h * w / (np.pi * n))
    for j in range(n_bands, n):
        lab[_object(yy, xx, rng.uniform(0, h), rng.uniform(0, w), r0 * rng.uniform(0.6, 1.2), rng)] = j
    return lab


def _occlusion(shape, n, rng):
    h, w = shape
    yy, xx = np.indices(shape, dtype=np.float64)
    horizon = h * rng.uniform(0.3, 0.7) + 0.1 * h * _fractal((1, w), rng, w / 8)[0]
    lab = (yy > horizon[None, :]).astype(np.int64)
    r0 = np.sqrt(h * w / (np.pi * n))
    centres = []
    for j in range(2, n):
        if centres and rng.random() < 0.6:  # overlap an earlier object
            cy, cx, r = centres[rng.integers(len(centres))]
            ang = rng.uniform(0, 2 * np.pi)
            cy, cx = cy + r * np.sin(ang), cx + r * np.cos(ang)
        else:
            cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = r0 * rng.uniform(0.6, 1.5) * (1.2 - 0.4 * j / n)  # nearer objects smaller
        centres.append((cy, cx, r))
        lab[_object(yy, xx, cy, cx, r, rng)] = j
    return lab


_LAYOUT_FUNCS = {"voronoi": _voronoi, "blobs": _blobs, "stripes": _stripes, "occlusion": _occlusion}


def _pairs(lab):
    """4-adjacent flat pixel index pairs (i, j) with different labels."""
    idx = np.arange(lab.size).reshape(lab.shape)
    i = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    j = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    keep = lab.ravel()[i] != lab.ravel()[j]
    return i[keep], j[keep]


def _shared_boundary(lab, k):
    """(K, K) counts of 4-adjacent pixel pairs between labels."""
    f = lab.ravel()[np.stack(_pairs(lab))]
    c = np.bincount(f[0] * k + f[1], minlength=k * k).reshape(k, k)
    return c + c.T


def _compact(lab):
    return np.unique(lab, return_inverse=True)[1].reshape(lab.shape)


def _root(parent, a):
    while parent[a] != a:
        a = parent[a]
    return a


def _finalise(raw, n_target, min_area):
    """Connected components; fragments, then the smallest regions, join the
    neighbour they share the longest boundary with until n_target remain."""
    lab = label(raw, background=-1, connectivity=1) - 1
    while (k := int(lab.max()) + 1) > 1:
        sizes = np.bincount(lab.ravel(), minlength=k)
        small = np.flatnonzero(sizes < min_area).tolist()
        if not small:
            if k <= n_target:
                break
            small = [int(np.argmin(sizes))]
        best = np.argmax(_shared_boundary(lab, k), axis=1)
        parent = np.arange(k)
        for s in small:  # union-find, as fragments may join each other
            parent[_root(parent, s)] = _root(parent, best[s])
        lab = _compact(np.array([_root(parent, a) for a in range(k)])[lab])
    return lab


def _layout(kind, shape, n, rng, min_area):
    best, parts = None, n
    for _ in range(8):  # more parts while too few regions survive the merging
        lab = _finalise(_LAYOUT_FUNCS[kind](shape, parts, rng), n, min_area)
        if best is None or lab.max() > best.max():
            best = lab
        if lab.max() + 1 >= n:
            break
        parts += max(1, n - int(lab.max()) - 1)
    return best


def _variation(family, yy, xx, bbox_mask, rng, n_channels):
    """Zero-mean spatial part (shading, (N, C)), texture part (N, C) and
    the requested spread of one region's pixels."""
    n_pix = yy.size
    zero = np.zeros((n_pix, n_channels))
    if family in ("linear", "quadratic"):
        s = np.sqrt(n_pix / np.pi)
        u, v = (xx - xx.mean()) / s, (yy - yy.mean()) / s
        ang = rng.uniform(0, 2 * np.pi)
        if family == "linear":
            f = np.cos(ang) * u + np.sin(ang) * v
        else:
            lin = rng.uniform(0, 0.6)
            d, e, g = rng.uniform(0.5, 1.0) * rng.choice([-1, 1]), rng.uniform(-0.6, 0.6), rng.uniform(-1, 1)
            f = lin * (np.cos(ang) * u + np.sin(ang) * v) + d * u * u + e * u * v + g * v * v
        f = f - f.mean()
        span = f.max() - f.min()
        f = f * (rng.uniform(0.1, 0.35) / span if span > 0 else 0.0)
        tint = np.ones(n_channels) + (0.25 * rng.standard_normal(n_channels) if n_channels > 1 else 0)
        return f[:, None] * np.clip(tint, 0.5, 1.5)[None, :], zero, 0.0
    spread = rng.uniform(0.03, 0.12)
    if family == "histogram":
        m = int(rng.integers(2, 6))
        levels = rng.standard_normal((m, n_channels))
        comp = rng.choice(m, size=n_pix, p=rng.dirichlet(np.full(m, 0.8)))
        t = levels[comp] + 0.2 * rng.standard_normal((n_pix, n_channels))
    else:  # smooth-texture
        sy, sx = rng.uniform(0.8, 4.0, size=2)
        field = ndi.gaussian_filter(rng.standard_normal(bbox_mask.shape), (sy, sx))[bbox_mask]
        tint = np.ones(n_channels) + (0.4 * rng.standard_normal(n_channels) if n_channels > 1 else 0)
        t = field[:, None] * tint[None, :]
    t = t - t.mean(axis=0)
    t = t * (spread / np.sqrt(np.mean(t.var(axis=0)) + 1e-18))
    return zero, t, spread


def _differ(mean_img, spreads, lab, pairs, k, assigned) -> bool:
    """Region k differs from every assigned neighbour (in mean part or spread)."""
    i, j = pairs
    li, lj = lab.ravel()[i], lab.ravel()[j]
    sel = (li == k) | (lj == k)
    other = np.where(li[sel] == k, lj[sel], li[sel])
    d = np.sqrt(((mean_img[i[sel]] - mean_img[j[sel]]) ** 2).sum(axis=1))
    for o in np.unique(other).tolist():
        lo, hi = sorted((spreads[k], spreads[o]))
        if assigned[o] and np.percentile(d[other == o], 10) < MIN_CONTRAST and not (
                hi - lo >= SPREAD_GAP and hi >= SPREAD_RATIO * max(lo, 0.01)):
            return False
    return True


def _appearance(lab, families, n_channels, rng, restarts=30, tries=120):
    k_all, f, pairs = int(lab.max()) + 1, lab.ravel(), _pairs(lab)
    yy, xx = (g.ravel() for g in np.indices(lab.shape, dtype=np.float64))
    order = np.argsort(-(_shared_boundary(lab, k_all) > 0).sum(axis=1), kind="stable")  # most neighbours first
    objs = ndi.find_objects(lab + 1)
    for _ in range(restarts):
        fams = rng.choice(families, size=k_all)
        mean_img, texture = np.zeros((f.size, n_channels)), np.zeros((f.size, n_channels))
        spreads, regions, assigned = np.zeros(k_all), [None] * k_all, np.zeros(k_all, dtype=bool)
        for k in order.tolist():
            idx = np.flatnonzero(f == k)
            box = lab[objs[k]] == k
            redraw = True
            for attempt in range(tries):
                if redraw or attempt % 20 == 0:
                    shade, tex, spread = _variation(fams[k], yy[idx], xx[idx], box, rng, n_channels)
                    total = shade + tex
                    lo, hi = _RANGE[0] - total.min(axis=0), _RANGE[1] - total.max(axis=0)
                    redraw = bool(np.any(lo > hi))
                    if redraw:
                        continue
                lum = rng.uniform(0, 1)
                chroma = rng.standard_normal(n_channels) * rng.uniform(0, 0.3) if n_channels > 1 else 0
                mean = lo + (hi - lo) * np.clip(lum + chroma, 0, 1)
                mean_img[idx] = mean[None, :] + shade
                spreads[k] = spread
                if _differ(mean_img, spreads, lab, pairs, k, assigned):
                    break
            else:
                break
            texture[idx] = tex
            assigned[k] = True
            regions[k] = {"family": str(fams[k]), "mean": mean.copy(), "spread": float(spread)}
        if assigned.all():
            return mean_img.reshape(lab.shape + (-1,)), texture.reshape(lab.shape + (-1,)), regions
    raise RuntimeError("could not give touching regions enough contrast")


def _add_noise(clean, noise, kind, rng):
    if noise == "none":
        return clean.copy()
    if kind == "gaussian":
        out = clean + _GAUSS[noise] * rng.standard_normal(clean.shape)
    elif kind == "poisson":
        out = rng.poisson(clean * _PHOTONS[noise]) / _PHOTONS[noise] + 0.004 * rng.standard_normal(clean.shape)
    else:  # salt-pepper
        frac, sigma = _IMPULSE[noise]
        out = clean + sigma * rng.standard_normal(clean.shape)
        hit = rng.random(clean.shape[:2]) < frac
        out[hit] = (rng.random(int(hit.sum())) < 0.5).astype(np.float64)[:, None]
    return np.clip(out, 0.0, 1.0)


def make_scene(shape=(240, 320), *, n_regions=None, layout=None, family="mixed", colour=True,
               noise="medium", noise_kind="gaussian", blur=0.7, seed=None, return_info=False):
    """Random piecewise scene with its ground-truth partition.

    Parameters
    ----------
    shape : tuple of int
        Image size (H, W), at least 32 x 32.
    n_regions : int, optional
        Number of regions, 2..40 (default: 5 to 14, random); fewer only if
        the layout cannot hold that many of ``MIN_AREA_FRACTION``.
    layout : str, optional
        One of ``LAYOUTS`` (default: random).
    family : str or sequence of str
        A key of ``FAMILY_MIXES`` (``"mixed"``, ``"shading"``, ``"texture"``),
        one of ``FAMILIES`` or a sequence of them; each region draws one.
    colour : bool
        RGB (H, W, 3) if True, else grey (H, W).
    noise : {"none", "low", "medium", "high"}
    noise_kind : {"gaussian", "poisson", "salt-pepper"}
        Noise level and distribution (strengths in the module docstring).
    blur : float
        Sigma (pixels) of the optical blur before the noise; 0: none.
    seed : int, Generator or None
        Seed of :func:`numpy.random.default_rng`. Layout, appearance and
        noise have separate streams: the same seed at another noise level
        or kind gives the same scene up to the noise.
    return_info : bool
        Also return a dict: ``layout``, ``regions`` (per label: family,
        mean, spread), ``mean_part`` (level plus shading) and ``clean``
        (before blur and noise), both (H, W, C), and the options.

    Returns
    -------
    image : ndarray of float64, (H, W, 3) or (H, W)
        Values in [0, 1].
    labels : ndarray of int64, (H, W)
        Labels ``0..K-1``, each a 4-connected region.

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.scenes import make_scene
    >>> image, labels = make_scene((60, 80), n_regions=6, layout="voronoi", seed=3)
    >>> image.shape, labels.shape, int(labels.max()) + 1
    ((60, 80, 3), (60, 80), 6)
    >>> bool(0.0 <= image.min() and image.max() <= 1.0)
    True
    >>> grey, _ = make_scene((60, 80), family="shading", colour=False, noise="high",
    ...                      noise_kind="poisson", seed=3)
    >>> grey.shape
    (60, 80)
    """
    h, w = int(shape[0]), int(shape[1])
    fams = FAMILY_MIXES.get(family, (family,)) if isinstance(family, str) else tuple(family)
    bad = {f"shape {shape}": h < 32 or w < 32, f"noise_kind {noise_kind!r}": noise_kind not in NOISE_KINDS,
           f"noise {noise!r}": noise != "none" and noise not in NOISE_LEVELS,
           f"layout {layout!r}": layout is not None and layout not in LAYOUTS,
           f"n_regions {n_regions}": n_regions is not None and not 2 <= int(n_regions) <= 40,
           **{f"family {f!r}": f not in FAMILIES for f in fams}}
    if any(bad.values()):
        raise ValueError(f"invalid {', '.join(k for k, v in bad.items() if v)} (see help(make_scene))")
    base = np.random.default_rng(seed)
    rng_layout, rng_look, rng_noise = (np.random.default_rng(base.integers(2 ** 63)) for _ in range(3))
    n_regions = int(rng_layout.integers(5, 15)) if n_regions is None else int(n_regions)
    layout = str(rng_layout.choice(LAYOUTS)) if layout is None else layout
    labels = _layout(layout, (h, w), n_regions, rng_layout, MIN_AREA_FRACTION * h * w)
    mean_part, texture, regions = _appearance(labels, fams, 3 if colour else 1, rng_look)
    clean = mean_part + texture
    image = _add_noise(ndi.gaussian_filter(clean, (blur, blur, 0)) if blur > 0 else clean, noise, noise_kind,
                       rng_noise)
    image = image if colour else image[:, :, 0]
    if not return_info:
        return image, labels
    return image, labels, {"layout": layout, "regions": regions, "mean_part": mean_part, "clean": clean,
                           "noise": noise, "noise_kind": noise_kind, "blur": blur, "families": fams}


def make_scene_set(n, *, seed, shape=(240, 320), n_regions=None, blur=0.7):
    """``n`` scenes cycling through every layout, family mix, grey and
    colour, noise level and noise kind.

    Scene ``i`` has layout ``LAYOUTS[i % 4]``, mix
    ``list(FAMILY_MIXES)[i % 3]`` (12 scenes hold every pair), colour if
    ``m % 2`` and level ``NOISE_LEVELS[m % 3]`` with ``m = i + i // 4``,
    kind ``NOISE_KINDS[(i // 2) % 3]`` and seed ``seed * 100003 + i``.

    Parameters
    ----------
    n : int
        Number of scenes.
    seed : int
        Seed of the set; scene ``i`` is seeded ``seed * 100003 + i``.
    shape, n_regions, blur
        As in :func:`make_scene`.

    Returns
    -------
    list of tuple
        ``(name, image, labels, meta)`` per scene: ``name`` like
        ``"s03_occlusion_mixed_grey_low_gaussian"``, ``image`` and
        ``labels`` as :func:`make_scene` returns them, ``meta`` the options
        of the scene.

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.scenes import make_scene_set
    >>> scenes = make_scene_set(2, seed=0, shape=(40, 48), n_regions=3)
    >>> [name for name, *_ in scenes]
    ['s00_voronoi_mixed_grey_low_gaussian', 's01_blobs_shading_rgb_medium_gaussian']
    >>> scenes[1][1].shape, scenes[1][3]["colour"]
    ((40, 48, 3), True)
    """
    out = []
    for i in range(int(n)):
        meta = {"layout": LAYOUTS[i % 4], "family": list(FAMILY_MIXES)[i % 3], "colour": bool((i + i // 4) % 2),
                "noise": NOISE_LEVELS[(i + i // 4) % 3], "noise_kind": NOISE_KINDS[(i // 2) % 3],
                "seed": int(seed) * 100003 + i}
        image, labels = make_scene(shape, n_regions=n_regions, blur=blur, **meta)
        name = "_".join([f"s{i:02d}", meta["layout"], meta["family"], "rgb" if meta["colour"] else "grey",
                         meta["noise"], meta["noise_kind"]])
        out.append((name, image, labels, meta))
    return out
