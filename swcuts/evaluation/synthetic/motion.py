"""Synthetic two-frame motion pairs with exact ground truth.

Every pair is a stack of layers: a background and a few foreground objects,
each with its own smooth random texture and its own translation. Frame 2 is
the reference (as in section 7 of Barbu & Zhu): a pixel ``x`` of frame 2
that belongs to layer ``k`` shows the point ``x - d_k`` of frame 1, where
``d_k = (u_k, v_k)`` is the layer's displacement in pixels::

    I2(x, y) = I1(x - u, y - v)

so ``flow[y, x] = (u, v) = d_k`` (``u`` to the right, ``v`` downwards).
Each layer is a continuous function of position (its texture is sampled
with cubic splines, its mask is an exact shape), and both frames sample
the same functions, so the ground truth is exact for sub-pixel velocities
too; the only approximation a method makes is its own interpolation of
frame 1. Layers are drawn in order (the background first, object ``K-1``
on top), so occlusions are rendered correctly.

``occluded`` marks the pixels of frame 2 that are not visible in frame 1
(half-occluded): those whose point ``x - d_k`` lies under a layer above
``k`` in frame 1, or outside frame 1.

:func:`layered_pair` gives textured layers; :func:`rectangles_pair` the
paper's aperture-problem case (Fig. 15, first row): two rectangles of
nearly uniform intensity on a nearly uniform background, where only the
corners carry reliable local motion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

__all__ = ["MotionPair", "layered_pair", "rectangles_pair"]


@dataclass
class MotionPair:
    """Two frames and their ground truth.

    Attributes
    ----------
    frame1, frame2 : ndarray of float64, shape (H, W) or (H, W, 3)
        The frames, values in [0, 1]; frame 2 is the reference.
    flow : ndarray of float64, shape (H, W, 2)
        ``(u, v)`` in pixels on the grid of frame 2:
        ``frame2(x, y) = frame1(x - u, y - v)``. Defined (not NaN) at every
        pixel, occluded ones included (their layer's displacement).
    occluded : ndarray of bool, shape (H, W)
        Pixels of frame 2 not visible in frame 1 (for real pairs: the
        pixels whose true flow is unknown).
    objects : ndarray of int64, shape (H, W), or None
        Layer of every pixel of frame 2: 0 the background, ``1..K-1`` the
        objects (None for real pairs without object ground truth).
    velocities : ndarray of float64, shape (K, 2)
        ``(u, v)`` of every layer.
    motions : ndarray of float64, shape (K, 2, 3), or None
        Layers moving by affine maps
        (:func:`~swcuts.evaluation.synthetic.nonrigid.nonrigid_pair`): layer
        k's flow at (x, y) is ``motions[k] @ (x, y, 1)``; None for
        translating layers and real pairs.
    """

    frame1: np.ndarray
    frame2: np.ndarray
    flow: np.ndarray
    occluded: np.ndarray
    objects: np.ndarray
    velocities: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    motions: np.ndarray | None = None


# ---------------------------------------------------------------------------
# layers: a texture (continuous, by splines) and a mask (an exact shape)
# ---------------------------------------------------------------------------


@dataclass
class _Layer:
    texture: np.ndarray  # (C, Ht, Wt) grid; sampled at layer coordinates + margin
    margin: float  # layer coordinates (0, 0) are texture coordinates (margin, margin)
    kind: str  # "all", "ellipse", "rectangle"
    params: tuple  # (cx, cy, rx, ry): centre (layer coordinates) and half-sizes
    offset: np.ndarray  # (x, y) position of the layer's origin in frame 1

    def mask(self, xs, ys):
        """Is the point ``(xs, ys)`` of frame 1 covered by this layer?"""
        if self.kind == "all":
            return np.ones(np.shape(xs), bool)
        cx, cy, rx, ry = self.params
        dx, dy = xs - cx - self.offset[0], ys - cy - self.offset[1]
        if self.kind == "ellipse":
            return (dx / rx) ** 2 + (dy / ry) ** 2 <= 1.0
        return (np.abs(dx) <= rx) & (np.abs(dy) <= ry)

    def colour(self, xs, ys):
        """Texture values at the points ``(xs, ys)`` of frame 1 -> (C, ...)."""
        coords = np.stack([ys - self.offset[1] + self.margin, xs - self.offset[0] + self.margin])
        return np.stack([ndimage.map_coordinates(t, coords, order=3, mode="mirror")
                         for t in self.texture])


def _texture(rng, shape, n_channels, mean, amplitude, smooth):
    """Smooth random texture: Gaussian-filtered white noise around ``mean``."""
    out = np.empty((n_channels,) + tuple(shape))
    shared = ndimage.gaussian_filter(rng.standard_normal(shape), smooth, mode="wrap")
    shared /= shared.std() + 1e-12
    for c in range(n_channels):
        own = ndimage.gaussian_filter(rng.standard_normal(shape), smooth, mode="wrap")
        own /= own.std() + 1e-12
        tex = 0.7 * shared + 0.3 * own if n_channels > 1 else shared
        out[c] = mean[c] + amplitude * tex
    return out


def _render(layers, velocities, h, w, frame):
    """Composite the layers at ``frame`` 1 or 2; return image (C,H,W), labels."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    n_channels = layers[0].texture.shape[0]
    image = np.zeros((n_channels, h, w))
    labels = np.zeros((h, w), np.int64)
    for k, layer in enumerate(layers):
        d = velocities[k] if frame == 2 else np.zeros(2)
        px, py = xs - d[0], ys - d[1]  # the point of frame 1 seen here
        m = layer.mask(px, py)
        if not m.any():
            continue
        image[:, m] = layer.colour(px[m], py[m])
        labels[m] = k
    return image, labels


def _occlusion(layers, velocities, labels2, h, w):
    """Pixels of frame 2 whose point in frame 1 is hidden or outside."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    d = velocities[labels2]  # (H, W, 2)
    px, py = xs - d[..., 0], ys - d[..., 1]
    occluded = (px < 0) | (px > w - 1) | (py < 0) | (py > h - 1)
    for k, layer in enumerate(layers):
        # a layer above this pixel's own layer covering its frame-1 point
        above = labels2 < k
        occluded |= above & layer.mask(px, py)
    return occluded


def _noise_and_clip(image, sigma, rng):
    if sigma > 0:
        image = image + rng.normal(0.0, sigma, image.shape)
    return np.clip(image, 0.0, 1.0)


def _finish(layers, velocities, h, w, colour, noise, rng):
    img1, _ = _render(layers, velocities, h, w, 1)
    img2, labels2 = _render(layers, velocities, h, w, 2)
    occluded = _occlusion(layers, velocities, labels2, h, w)
    flow = velocities[labels2].astype(np.float64)
    img1 = _noise_and_clip(img1, noise, rng)
    img2 = _noise_and_clip(img2, noise, rng)
    if colour:
        frame1, frame2 = np.moveaxis(img1, 0, -1), np.moveaxis(img2, 0, -1)
    else:
        frame1, frame2 = img1[0], img2[0]
    return MotionPair(frame1=np.ascontiguousarray(frame1), frame2=np.ascontiguousarray(frame2),
                      flow=flow, occluded=occluded, objects=labels2,
                      velocities=np.asarray(velocities, np.float64))


def _check_shape(shape):
    h, w = int(shape[0]), int(shape[1])
    if h < 24 or w < 24:
        raise ValueError(f"shape must be at least 24 x 24, got {tuple(shape)}")
    return h, w


def _random_velocities(rng, n, max_speed, precision, min_separation):
    """``n`` velocities in the square ``|u|, |v| <= max_speed``, pairwise at
    least ``min_separation`` apart (as far as the square allows)."""
    best = None
    for _ in range(200):
        v = rng.uniform(-max_speed, max_speed, (n, 2))
        if precision:
            v = np.round(v / precision) * precision
        if n < 2:
            return v
        dist = np.hypot(*(v[:, None, :] - v[None, :, :]).transpose(2, 0, 1))
        sep = dist[np.triu_indices(n, 1)].min()
        if sep >= min_separation:
            return v
        if best is None or sep > best[0]:
            best = (sep, v)
    return best[1]


def layered_pair(shape=(120, 160), n_objects: int = 2, max_speed: float = 3.0, precision=None, *,
                 seed=None, colour: bool = False, noise: float = 0.01, smooth: float = 2.0,
                 contrast: float = 0.12) -> MotionPair:
    """A random pair of textured layers, each translating on its own.

    Parameters
    ----------
    shape : tuple of int
        ``(H, W)`` of the frames, at least 24 x 24.
    n_objects : int
        Number of foreground objects (ellipses and rectangles) over the
        background; the label image has ``n_objects + 1`` labels.
    max_speed : float
        Every component of every velocity (background included) is drawn
        uniformly in ``[-max_speed, max_speed]``; layers differ by at least
        ``min(1, max_speed)`` px.
    precision : float, optional
        If given, velocities are rounded to multiples of it (e.g. 0.5, the
        paper's label step); by default they are continuous (sub-pixel).
    seed : int, Generator or None
        Seed of :func:`numpy.random.default_rng`.
    colour : bool
        RGB frames ``(H, W, 3)`` instead of grey ``(H, W)``.
    noise : float
        Sigma of iid Gaussian noise added to each frame (then clipped to
        [0, 1]); 0 for exact frames.
    smooth : float
        Scale (Gaussian sigma, px) of the textures: larger is smoother.
    contrast : float
        Standard deviation of each texture around its layer's mean.

    Returns
    -------
    MotionPair

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.motion import layered_pair
    >>> p = layered_pair((60, 80), n_objects=2, seed=1)
    >>> p.frame1.shape, p.flow.shape, int(p.objects.max())
    ((60, 80), (60, 80, 2), 2)
    """
    h, w = _check_shape(shape)
    n_objects = int(n_objects)
    if not 0 <= n_objects <= 8:
        raise ValueError(f"n_objects must be in 0..8, got {n_objects}")
    max_speed = float(max_speed)
    if not max_speed >= 0:
        raise ValueError(f"max_speed must be >= 0, got {max_speed}")
    if precision is not None and not float(precision) > 0:
        raise ValueError(f"precision must be > 0, got {precision}")
    noise = float(noise)
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    n_channels = 3 if colour else 1
    n_layers = n_objects + 1
    margin = int(np.ceil(max_speed)) + 4
    for _ in range(100):
        velocities = _random_velocities(rng, n_layers, max_speed, precision, min(1.0, max_speed))
        # well-separated layer means (grey) or colours, so objects also differ in intensity
        if colour:
            means = rng.uniform(0.25, 0.75, (n_layers, 3))
        else:
            means = (0.25 + 0.5 * rng.permutation(n_layers) / max(n_layers - 1, 1))[:, None]
        layers = [_Layer(_texture(rng, (h + 2 * margin, w + 2 * margin), n_channels, means[0],
                                  contrast, smooth), margin, "all", (), np.zeros(2))]
        for k in range(1, n_layers):
            rx = rng.uniform(0.12, 0.25) * w
            ry = rng.uniform(0.12, 0.25) * h
            cx = rng.uniform(rx * 0.6, w - rx * 0.6)
            cy = rng.uniform(ry * 0.6, h - ry * 0.6)
            kind = "ellipse" if rng.random() < 0.5 else "rectangle"
            tmargin = int(np.ceil(max(rx, ry))) + margin
            layers.append(_Layer(_texture(rng, (2 * tmargin + 1, 2 * tmargin + 1), n_channels,
                                          means[k], contrast, smooth),
                                 tmargin, kind, (0.0, 0.0, rx, ry), np.array([cx, cy])))
        pair = _finish(layers, velocities, h, w, colour, noise, rng)
        counts = np.bincount(pair.objects.ravel(), minlength=n_layers)
        if counts.min() >= 0.03 * h * w:
            return pair
    raise RuntimeError("could not place the objects; try a larger shape or fewer objects")


def rectangles_pair(shape=(120, 160), *, velocities=((2.0, 1.0), (-1.5, 0.5)), background_velocity=(0.0, 0.0),
                    levels=(0.3, 0.55, 0.8), texture: float = 0.004, seed=None, colour: bool = False,
                    noise: float = 0.005) -> MotionPair:
    """The paper's aperture-problem case: two moving, nearly uniform rectangles.

    Two axis-aligned rectangles of nearly uniform intensity move over a
    nearly uniform background. Inside a rectangle local motion is
    undetermined, along its edges only the normal component is; only the
    8 corners carry reliable local velocity, so a method must group the
    pixels of a rectangle (by intensity) to get its motion right. Edges
    are anti-aliased (the rectangles are rendered by exact pixel
    coverage), so sub-pixel motion stays exact.

    Parameters
    ----------
    shape : tuple of int
        ``(H, W)``, at least 24 x 24.
    velocities : pair of (u, v)
        Displacements of the two rectangles, pixels.
    background_velocity : (u, v)
        Displacement of the background.
    levels : three floats
        Grey levels of the background and the two rectangles (in colour,
        the grey level of each is mixed with a fixed hue).
    texture : float
        Amplitude of a faint smooth texture on every layer ("nearly"
        uniform); 0 for exactly uniform layers.
    seed : int, Generator or None
        Seed for the faint texture and the noise.
    colour : bool
        RGB frames instead of grey.
    noise : float
        Sigma of iid Gaussian noise on each frame.

    Returns
    -------
    MotionPair
        ``objects``: 0 background, 1 and 2 the rectangles.

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.motion import rectangles_pair
    >>> p = rectangles_pair(seed=0)
    >>> p.flow[60, 50].tolist(), int(p.objects[60, 50])
    ([2.0, 1.0], 1)
    """
    h, w = _check_shape(shape)
    rng = np.random.default_rng(seed)
    n_channels = 3 if colour else 1
    vel = np.array([background_velocity] + [tuple(v) for v in velocities], np.float64)
    if vel.shape != (3, 2):
        raise ValueError("velocities must be two (u, v) pairs")
    if colour:
        hues = np.array([[0.9, 1.0, 1.1], [1.2, 0.9, 0.8], [0.8, 1.0, 1.2]])
        means = np.clip(np.asarray(levels, float)[:, None] * hues, 0.05, 0.95)
    else:
        means = np.asarray(levels, float)[:, None]
    margin = int(np.ceil(np.abs(vel).max())) + 4
    # rectangles: left one and right one, about a quarter of the width each
    boxes = [(0.30 * w, 0.50 * h, 0.16 * w, 0.22 * h), (0.70 * w, 0.45 * h, 0.14 * w, 0.25 * h)]
    smooth = 4.0
    layers = [_Layer(_texture(rng, (h + 2 * margin, w + 2 * margin), n_channels, means[0], texture, smooth),
                     margin, "all", (), np.zeros(2))]
    for k, (cx, cy, rx, ry) in enumerate(boxes, start=1):
        tm = int(np.ceil(max(rx, ry))) + margin
        layers.append(_Layer(_texture(rng, (2 * tm + 1, 2 * tm + 1), n_channels, means[k], texture, smooth),
                             tm, "rectangle", (0.0, 0.0, rx, ry), np.array([cx, cy])))
    pair = _finish_covered(layers, vel, h, w, colour, float(noise), rng)
    return pair


def _coverage(xs, ys, cx, cy, rx, ry):
    """Fraction of the unit pixel at (xs, ys) inside the box |x-cx|<=rx, |y-cy|<=ry."""
    fx = np.clip(np.minimum(xs + 0.5, cx + rx) - np.maximum(xs - 0.5, cx - rx), 0.0, 1.0)
    fy = np.clip(np.minimum(ys + 0.5, cy + ry) - np.maximum(ys - 0.5, cy - ry), 0.0, 1.0)
    return fx * fy


def _finish_covered(layers, velocities, h, w, colour, noise, rng):
    """As :func:`_finish`, but rectangles are blended by their exact pixel
    coverage (anti-aliased edges); labels and flow follow the pixel centre."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    imgs = []
    for frame in (1, 2):
        n_channels = layers[0].texture.shape[0]
        image = np.zeros((n_channels, h, w))
        for k, layer in enumerate(layers):
            d = velocities[k] if frame == 2 else np.zeros(2)
            px, py = xs - d[0], ys - d[1]
            if layer.kind == "all":
                image = layer.colour(px, py)
                continue
            _, _, rx, ry = layer.params
            cov = _coverage(px, py, layer.offset[0], layer.offset[1], rx, ry)
            m = cov > 0
            image[:, m] = (1 - cov[m]) * image[:, m] + cov[m] * layer.colour(px[m], py[m])
        imgs.append(image)
    _, labels2 = _render(layers, velocities, h, w, 2)
    occluded = _occlusion(layers, velocities, labels2, h, w)
    flow = velocities[labels2].astype(np.float64)
    img1 = _noise_and_clip(imgs[0], noise, rng)
    img2 = _noise_and_clip(imgs[1], noise, rng)
    if colour:
        frame1, frame2 = np.moveaxis(img1, 0, -1), np.moveaxis(img2, 0, -1)
    else:
        frame1, frame2 = img1[0], img2[0]
    return MotionPair(frame1=np.ascontiguousarray(frame1), frame2=np.ascontiguousarray(frame2),
                      flow=flow, occluded=occluded, objects=labels2, velocities=velocities.copy())
