"""Synthetic two-frame pairs whose layers move by affine maps: rotating,
scaling and shearing objects over a slanted (affinely moving) background.

:func:`~swcuts.evaluation.synthetic.motion.layered_pair` moves every layer
by one translation, so a method that assumes rigid translating objects is
rewarded. Here layer ``k`` moves by the affine flow

    f_k(x) = t_k + B_k (x − c_k),

``c_k`` the layer's centre (the frame's centre for the background), ``t_k``
its translation there: frame 2 at ``x`` shows the point ``x − f_k(x)`` of
frame 1 (``I2(x) = I1(x − f_k(x))``, as in ``layered_pair``), so
``flow[y, x] = f_k(x, y)`` exactly, also below the pixel. Objects either
rotate about their centre (``B = R(θ) − I``, 2°–``max_rotation``°, either
sense) or deform (every entry of ``B`` up to ``max_strain``); the background
deforms by up to half ``max_strain``. The textures, masks, occlusion and
noise are those of ``layered_pair`` (same texture and shape code).
"""

from __future__ import annotations

import math

import numpy as np

from swcuts.evaluation.synthetic.motion import (
    MotionPair, _check_shape, _Layer, _noise_and_clip, _random_velocities, _texture)

__all__ = ["nonrigid_pair"]


def _field(t, B, c, xs, ys):
    """(H, W, 2) affine flow t + B (x − c) on the grid (xs, ys)."""
    dx, dy = xs - c[0], ys - c[1]
    return np.stack([t[0] + B[0, 0] * dx + B[0, 1] * dy, t[1] + B[1, 0] * dx + B[1, 1] * dy], axis=-1)


def _render(layers, fields, h, w, frame):
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    image = np.zeros((layers[0].texture.shape[0], h, w))
    labels = np.zeros((h, w), np.int64)
    for k, layer in enumerate(layers):
        px, py = (xs - fields[k][..., 0], ys - fields[k][..., 1]) if frame == 2 else (xs, ys)
        m = layer.mask(px, py)
        if m.any():
            image[:, m] = layer.colour(px[m], py[m])
            labels[m] = k
    return image, labels


def _occlusion(layers, flow, labels2, h, w):
    """Pixels of frame 2 whose point in frame 1 is outside it or under a
    layer above their own."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    px, py = xs - flow[..., 0], ys - flow[..., 1]
    occluded = (px < 0) | (px > w - 1) | (py < 0) | (py > h - 1)
    for k, layer in enumerate(layers):
        occluded |= (labels2 < k) & layer.mask(px, py)
    return occluded


def _gradient(rng, kind, max_rotation, max_strain):
    if kind == "rotation":
        th = math.radians(rng.uniform(2.0, max(max_rotation, 2.0))) * rng.choice([-1.0, 1.0])
        return np.array([[math.cos(th) - 1.0, -math.sin(th)], [math.sin(th), math.cos(th) - 1.0]])
    return rng.uniform(-max_strain, max_strain, (2, 2))


def nonrigid_pair(shape=(120, 160), n_objects: int = 2, max_speed: float = 3.0, *, max_rotation: float = 6.0,
                  max_strain: float = 0.03, seed=None, colour: bool = False, noise: float = 0.01,
                  smooth: float = 2.0, contrast: float = 0.12) -> MotionPair:
    """A random pair of textured layers moving by affine maps.

    Parameters
    ----------
    shape : tuple of int
        ``(H, W)``, at least 24 x 24.
    n_objects : int
        Foreground objects (ellipses and rectangles), 0..8; object 1, 3, ...
        rotate, object 2, 4, ... deform (scale and shear).
    max_speed : float
        Every component of every layer's translation ``t_k`` (its flow at
        its centre) is drawn in ``[-max_speed, max_speed]``.
    max_rotation : float
        Largest rotation of a rotating object, degrees (drawn from
        2..max_rotation, either sense).
    max_strain : float
        Largest entry of a deforming object's gradient ``B`` (px per px);
        the background's entries are up to half of it.
    seed : int, Generator or None
    colour, noise, smooth, contrast
        As in :func:`~swcuts.evaluation.synthetic.motion.layered_pair`.

    Returns
    -------
    MotionPair
        ``velocities``: every layer's ``t_k``; ``motions``: (K, 2, 3) arrays
        ``[B_k | t_k − B_k c_k]``, so ``flow(x) = motions[k] @ (x, y, 1)``.

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.nonrigid import nonrigid_pair
    >>> p = nonrigid_pair((60, 80), n_objects=2, seed=1)
    >>> p.frame1.shape, p.flow.shape, int(p.objects.max()), p.motions.shape
    ((60, 80), (60, 80, 2), 2, (3, 2, 3))
    >>> k = int(p.objects[30, 40])
    >>> bool(np.allclose(p.flow[30, 40], p.motions[k] @ [40, 30, 1]))
    True
    """
    h, w = _check_shape(shape)
    n_objects = int(n_objects)
    if not 0 <= n_objects <= 8:
        raise ValueError(f"n_objects must be in 0..8, got {n_objects}")
    for name, value in (("max_speed", max_speed), ("max_rotation", max_rotation),
                        ("max_strain", max_strain), ("noise", noise)):
        if not float(value) >= 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    rng = np.random.default_rng(seed)
    n_channels = 3 if colour else 1
    n_layers = n_objects + 1
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    for _ in range(100):
        t = _random_velocities(rng, n_layers, float(max_speed), None, min(1.0, float(max_speed)))
        if colour:
            means = rng.uniform(0.25, 0.75, (n_layers, 3))
        else:
            means = (0.25 + 0.5 * rng.permutation(n_layers) / max(n_layers - 1, 1))[:, None]
        grads = [_gradient(rng, "strain", 0.0, 0.5 * float(max_strain))]
        centres = [np.array([(w - 1) / 2.0, (h - 1) / 2.0])]
        shapes = []
        for k in range(1, n_layers):
            rx, ry = rng.uniform(0.12, 0.25) * w, rng.uniform(0.12, 0.25) * h
            cx, cy = rng.uniform(rx * 0.6, w - rx * 0.6), rng.uniform(ry * 0.6, h - ry * 0.6)
            shapes.append((rx, ry, cx, cy, "ellipse" if rng.random() < 0.5 else "rectangle"))
            grads.append(_gradient(rng, "rotation" if k % 2 else "strain", float(max_rotation),
                                   float(max_strain)))
            centres.append(np.array([cx, cy]))
        fields = [_field(t[k], grads[k], centres[k], xs, ys) for k in range(n_layers)]
        reach = max(float(np.abs(f).max()) for f in fields)
        margin = int(np.ceil(reach)) + 4
        layers = [_Layer(_texture(rng, (h + 2 * margin, w + 2 * margin), n_channels, means[0],
                                  contrast, smooth), margin, "all", (), np.zeros(2))]
        for k, (rx, ry, cx, cy, kind) in enumerate(shapes, start=1):
            tm = int(np.ceil(max(rx, ry))) + margin
            layers.append(_Layer(_texture(rng, (2 * tm + 1, 2 * tm + 1), n_channels, means[k],
                                          contrast, smooth), tm, kind, (0.0, 0.0, rx, ry), np.array([cx, cy])))
        img1, _ = _render(layers, fields, h, w, 1)
        img2, labels2 = _render(layers, fields, h, w, 2)
        if np.bincount(labels2.ravel(), minlength=n_layers).min() < 0.03 * h * w:
            continue
        flow = np.take_along_axis(np.stack(fields), labels2[None, ..., None], axis=0)[0]
        occluded = _occlusion(layers, flow, labels2, h, w)
        img1 = _noise_and_clip(img1, float(noise), rng)
        img2 = _noise_and_clip(img2, float(noise), rng)
        f1, f2 = (np.moveaxis(img1, 0, -1), np.moveaxis(img2, 0, -1)) if colour else (img1[0], img2[0])
        motions = np.stack([np.column_stack([grads[k], t[k] - grads[k] @ centres[k]])
                            for k in range(n_layers)])
        return MotionPair(frame1=np.ascontiguousarray(f1), frame2=np.ascontiguousarray(f2), flow=flow,
                          occluded=occluded, objects=labels2, velocities=np.asarray(t, np.float64),
                          motions=motions)
    raise RuntimeError("could not place the objects; try a larger shape or fewer objects")
