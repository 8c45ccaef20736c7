"""Segmenting a large photo at the resolution the segmentation needs: a
reduced working image for the atoms, graph, posterior and sampling
(:func:`working_size`, :func:`reduce_display`), and the atoms carried back
to the full image along its edges (:func:`carry_atoms`).

About 1,000 atoms describe a photo whatever its pixel count, and the
posterior's weights are set per pixel count (:func:`swcuts.segmentation.image_models.posterior_weights`),
so a 12-megapixel photo reduced to :data:`WORK_PIXELS` segments as the
photos the defaults were tuned on (BSDS500, 0.15 megapixels) do, at their
cost. What the reduction loses is where a boundary runs between two
working pixels; :func:`carry_atoms` finds it again at full size: the atoms
are upsampled (nearest), every pixel within one working pixel of an atom
boundary is left open, and OpenCV's watershed floods the open band from
the atoms' sure interiors over the full image's colour differences, so
each boundary settles on the strongest edge of the band.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["WORK_PIXELS", "REDUCE_ABOVE", "working_size", "reduce_display", "prepare_working", "carry_atoms"]

#: Pixels of the working image of a large photo (:func:`working_size`).
#: Chosen on 40 BSDS500 validation photos upscaled x4 (2.5 MP;
#: benchmarks/full_size_quality.py, docs/speed.md): of 150k, 250k and 500k,
#: 500k scored closest to the photos segmented at their own size (PRI,
#: VoI and covering within 0.01); 250k costs 2 s less on a 4000x2667 photo
#: for a VoI 0.04 higher.
WORK_PIXELS = 500_000
#: A photo is reduced only when it has more than this many times
#: :data:`WORK_PIXELS` (a reduction by less than ~1.4 in each direction
#: saves too little to be worth carrying the boundaries back).
REDUCE_ABOVE = 2.0


def working_size(h, w, work_pixels=WORK_PIXELS):
    """(height, width) of the working image of an ``h`` x ``w`` photo, or
    None when it is used at its own size (at most :data:`REDUCE_ABOVE`
    times ``work_pixels``, or ``work_pixels`` None).

    Examples
    --------
    >>> working_size(3000, 4000)
    (612, 816)
    >>> working_size(321, 481) is None
    True
    """
    if work_pixels is None or h * w <= REDUCE_ABOVE * work_pixels:
        return None
    f = math.sqrt(work_pixels / (h * w))
    return max(2, round(h * f)), max(2, round(w * f))


def reduce_display(display, size):
    """The display image (H, W) or (H, W, 3) floats in [0, 1] reduced to
    ``size`` = (height, width) by area averaging (``cv2.INTER_AREA``)."""
    import cv2

    h, w = size
    small = cv2.resize(np.ascontiguousarray(display), (int(w), int(h)), interpolation=cv2.INTER_AREA)
    return np.clip(small, 0.0, 1.0, out=small)


def prepare_working(image, size, *, channel_axis=-1):
    """:func:`~swcuts.image.prepare.prepare_image` with the features of the
    working image: ``(features of the display image reduced to size,
    display image at full size)``."""
    from swcuts.image.prepare import image_scale, unit_features, validate_image

    arr = validate_image(image, channel_axis=channel_axis)
    scale = image_scale(arr)
    scale.say()
    display = np.ascontiguousarray(scale.apply(arr), dtype=np.float64)
    features, _ = unit_features(reduce_display(display, size))
    return features, display


def _as_colour8(display):
    """The display image as 8-bit, three channels (grey repeated), what
    ``cv2.watershed`` reads (it compares colours channel by channel, so
    their order does not matter)."""
    import cv2

    u8 = cv2.convertScaleAbs(np.ascontiguousarray(display), alpha=255.0)
    if u8.ndim == 2:
        return cv2.merge([u8, u8, u8])
    return u8


def carry_atoms(atoms_small, display, *, band=None):
    """The atoms of the working image carried to the full image along its edges.

    Parameters
    ----------
    atoms_small : (h, w) int array
        Atom labels 0..N-1 of the working image.
    display : (H, W) or (H, W, 3) float array in [0, 1]
        The full image.
    band : int, optional
        Half-width in full pixels of the band left open around every atom
        boundary (default: one working pixel, rounded up, plus one).

    Returns
    -------
    (H, W) int64 array
        Atom labels 0..N-1 at full size: every pixel farther than ``band``
        from an upsampled atom boundary keeps its atom; the pixels of the
        band go to the atom whose interior reaches them first in a
        watershed of the full image's colour differences
        (``cv2.watershed``); every atom keeps at least its upsampled interior
        (an atom thinner than the band keeps its upsampled pixels).

    Examples
    --------
    >>> display = np.zeros((40, 40)); display[:, 23:] = 1.0   # an edge at column 23
    >>> small = np.zeros((10, 10), np.int64); small[:, 5:] = 1  # at column 20 once upsampled
    >>> big = carry_atoms(small, display)
    >>> big.shape, int((big[:, 23:] == 1).all()), int((big[:, :23] == 0).all())
    ((40, 40), 1, 1)
    """
    import cv2

    small = np.asarray(atoms_small)
    H, W = display.shape[:2]
    h, w = small.shape
    n = int(small.max()) + 1
    if band is None:
        band = int(math.ceil(max(H / h, W / w))) + 1
    # Markers 1..N (watershed's 0 = unknown), upsampled by nearest neighbour.
    up = cv2.resize((small + 1).astype(np.int32 if n < 2**31 - 1 else np.int64), (W, H),
                    interpolation=cv2.INTER_NEAREST).astype(np.int32)
    if band <= 0:
        return up.astype(np.int64) - 1
    k = cv2.getStructuringElement(cv2.MORPH_RECT, (2 * band + 1, 2 * band + 1))
    if n < 65535:
        u16 = up.astype(np.uint16)
        open_band = cv2.dilate(u16, k) != cv2.erode(u16, k)
    else:  # float32 holds labels exactly up to 2**24
        f32 = up.astype(np.float32)
        open_band = cv2.dilate(f32, k) != cv2.erode(f32, k)
    markers = up.copy()
    markers[open_band] = 0
    kept = np.zeros(n + 1, bool)
    kept[np.unique(markers[::max(1, band // 2), ::max(1, band // 2)])] = True
    if not kept[1:].all():
        kept[np.unique(markers)] = True
        lost = ~kept
        lost[0] = False
        if lost.any():  # atoms thinner than the band: their upsampled pixels
            back = lost[up]
            markers[back] = up[back]
    colour = _as_colour8(display)
    cv2.watershed(colour, markers)
    # Watershed lines (-1, and the image's outer frame): the label of the
    # 4-neighbour of nearest colour.
    line = markers < 1
    if line.any():
        _fill_lines(markers, up, line, colour)
    return markers.astype(np.int64) - 1


def _fill_lines(markers, up, line, bgr):
    """Give every watershed-line pixel (``line``) of ``markers`` the label of
    its labelled 4-neighbour of nearest colour in ``bgr`` (8-bit colour; its upsampled
    atom ``up`` when no neighbour is labelled: a crossing of lines)."""
    H, W = markers.shape
    rr, cc = np.nonzero(line)
    for _ in range(4):  # a pixel whose neighbours are all line pixels waits for a pass
        colour = bgr[rr, cc].astype(np.int32)
        best = np.zeros(rr.size, np.int32)
        best_d = np.full(rr.size, np.iinfo(np.int32).max)
        for dr, dc in ((0, -1), (0, 1), (-1, 0), (1, 0)):
            r2 = np.clip(rr + dr, 0, H - 1)
            c2 = np.clip(cc + dc, 0, W - 1)
            nb = markers[r2, c2]
            d = np.abs(bgr[r2, c2].astype(np.int32) - colour).sum(axis=1)
            better = (nb > 0) & (d < best_d)
            best[better] = nb[better]
            best_d[better] = d[better]
        done = best > 0
        markers[rr[done], cc[done]] = best[done]
        rr, cc = rr[~done], cc[~done]
        if rr.size == 0:
            return
    markers[rr, cc] = up[rr, cc]
