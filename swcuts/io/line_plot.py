"""A line plot as PNG bytes without matplotlib (energy.png).

``swcuts segment`` draws one plot on every run: −log π over seconds. With
matplotlib, importing it and rendering took ~0.3 CPU s of every run (of a
warm run's ~1.5 s). :func:`line_png` draws the same picture with Pillow
(which matplotlib itself uses to write PNGs): axes with ticks at 1, 2, 2.5
or 5 times a power of ten, a light grid, axis labels, a title and the line,
in matplotlib's own font (DejaVu Sans, read from matplotlib's data folder
without importing it; Pillow's default font when it is not there). The
whole picture is drawn at twice the size and reduced (anti-aliasing).

The values come prepared by :func:`swcuts.io.figures.plottable` (finite or
NaN, not huge); NaN values leave gaps in the line.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import math
import os

import numpy as np

__all__ = ["line_png", "nice_ticks"]

#: Supersampling factor: drawn this many times larger, then reduced.
_SS = 2
_LINE = (31, 119, 180)  # matplotlib's first colour ("C0")
_GRID = (235, 235, 235)
_INK = (0, 0, 0)


@functools.lru_cache(maxsize=8)
def _font(size: int):
    """DejaVu Sans of ``size`` pixels (matplotlib's font), or Pillow's default."""
    from PIL import ImageFont

    try:
        spec = importlib.util.find_spec("matplotlib")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            path = os.path.join(folder, "mpl-data", "fonts", "ttf", "DejaVuSans.ttf")
            if os.path.exists(path):
                return ImageFont.truetype(path, size), True
    except (ImportError, ValueError, OSError):
        pass
    try:
        return ImageFont.load_default(size), False
    except TypeError:  # Pillow < 10.1: a bitmap font of one size
        return ImageFont.load_default(), False


def nice_ticks(lo: float, hi: float, most: int = 9):
    """Tick values covering ``[lo, hi]`` at 1, 2, 2.5 or 5 times a power of
    ten, at most ``most`` of them, and the step.

    Examples
    --------
    >>> nice_ticks(0.0, 0.06)[0].tolist()
    [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06]
    >>> nice_ticks(11408.0, 19030.0)[1]
    1000.0
    """
    span = hi - lo
    if not span > 0.0:
        span = abs(lo) if lo != 0.0 else 1.0
    base = 10.0 ** math.floor(math.log10(span / most))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0, 20.0):
        step = m * base
        first = math.ceil(lo / step - 1e-9)
        last = math.floor(hi / step + 1e-9)
        if last - first + 1 <= most:
            break
    ticks = np.arange(first, last + 1) * step
    ticks[np.abs(ticks) < step * 1e-9] = 0.0
    return ticks, step


def _labels(ticks, step):
    """Tick labels with the decimals the step needs (``2.5``: one more), and
    the power of ten they are divided by (``0`` if none)."""
    largest = float(np.max(np.abs(ticks))) if ticks.size else 0.0
    power = int(math.floor(math.log10(largest))) if largest >= 1e6 else 0
    scale = 10.0 ** power
    digits = max(0, -int(math.floor(math.log10(step / scale) + 1e-9)))
    if digits and not math.isclose(round(step / scale, digits), step / scale, rel_tol=1e-6):
        digits += 1
    return [f"{t / scale:.{digits}f}".replace("-", "\u2212") for t in ticks], power


def _limits(values):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    lo, hi = float(finite.min()), float(finite.max())
    if hi == lo:  # one value: a band around it
        pad = abs(lo) * 0.05 if lo != 0.0 else 0.05
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05  # matplotlib's margins
    return lo - pad, hi + pad


def line_png(x, y, *, xlabel="", ylabel="", title="", size=(600, 350), title_size=15) -> bytes:
    """A PNG of the line through ``(x, y)`` with axes, ticks, grid, labels and title.

    Parameters
    ----------
    x, y : array_like
        Points of the line, same length; NaN values leave a gap.
    xlabel, ylabel, title : str
        Text of the axes and above the plot.
    size : (int, int)
        Width and height of the picture in pixels.
    title_size : int
        Size of the title's font in pixels (the labels': 14, matplotlib's
        10 points at 100 dpi).

    Returns
    -------
    bytes
        The PNG file.

    Examples
    --------
    >>> png = line_png([0.0, 1.0, 2.0], [3.0, 1.0, 2.0], xlabel="seconds", title="annealing")
    >>> png[:4]
    b'\\x89PNG'
    """
    from PIL import Image

    # Pillow's decompression-bomb limit applies to its own text bitmaps too:
    # a user's lowered limit must not refuse a plot of known size (as in
    # swcuts.io.image_read).
    limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
    try:
        return _draw(x, y, xlabel, ylabel, title, size, title_size)
    finally:
        Image.MAX_IMAGE_PIXELS = limit


def _draw(x, y, xlabel, ylabel, title, size, title_size):
    from PIL import Image, ImageDraw

    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    ok = np.isfinite(x) & np.isfinite(y)
    x0, x1 = _limits(np.where(ok, x, np.nan))
    y0, y1 = _limits(np.where(ok, y, np.nan))
    xt, xs = nice_ticks(x0, x1)
    yt, ys = nice_ticks(y0, y1)
    xl, xp = _labels(xt, xs)
    yl, yp = _labels(yt, ys)

    W, H = size[0] * _SS, size[1] * _SS
    font, _ = _font(14 * _SS)
    tfont, _ = _font(title_size * _SS)
    img = Image.new("RGB", (W, H), (255, 255, 255))
    d = ImageDraw.Draw(img)

    def box(text, f=font):
        left, top, right, bottom = d.textbbox((0, 0), text, font=f)
        return right - left, bottom - top

    gap, tick = 6 * _SS, 5 * _SS
    line_h = d.textbbox((0, 0), "0123456789(gyπ)", font=font, anchor="la")[3]  # with descenders
    ylab_w = max((box(s)[0] for s in yl), default=0)
    left = 10 * _SS + line_h + gap + ylab_w + gap + tick  # y label, tick labels, ticks
    bottom = H - (10 * _SS + line_h + gap + line_h + gap + tick)  # x label, tick labels, ticks
    top = 10 * _SS + box(title or "0", tfont)[1] + gap + (line_h + gap if yp else 0)
    right = W - 10 * _SS - box(xl[-1])[0] // 2 - (box(f"×1e{xp}")[0] if xp else 0)

    def px(v):
        return left + (v - x0) / (x1 - x0) * (right - left)

    def py(v):
        return bottom - (v - y0) / (y1 - y0) * (bottom - top)

    for t, s in zip(xt, xl):
        u = px(t)
        d.line([(u, top), (u, bottom)], fill=_GRID, width=_SS)
        d.line([(u, bottom), (u, bottom + tick)], fill=_INK, width=_SS)
        w, _ = box(s)
        d.text((u - w / 2, bottom + tick + gap), s, font=font, fill=_INK, anchor="la")
    for t, s in zip(yt, yl):
        v = py(t)
        d.line([(left, v), (right, v)], fill=_GRID, width=_SS)
        d.line([(left - tick, v), (left, v)], fill=_INK, width=_SS)
        w, _ = box(s)
        d.text((left - tick - gap - w, v), s, font=font, fill=_INK, anchor="lm")
    if xp:
        d.text((right + gap, bottom + tick + gap), f"×1e{xp}", font=font, fill=_INK, anchor="la")
    if yp:
        d.text((left, top - gap), f"×1e{yp}", font=font, fill=_INK, anchor="ld")

    # The line: one polyline per run of finite points.
    pts = np.column_stack([px(x), py(y)])
    breaks = np.flatnonzero(~ok)
    for run in np.split(np.arange(x.size), breaks):
        run = run[ok[run]]
        if run.size >= 2:
            d.line([tuple(p) for p in pts[run]], fill=_LINE, width=int(1.5 * _SS), joint="curve")
        elif run.size == 1:
            u, v = pts[run[0]]
            d.ellipse([u - 2 * _SS, v - 2 * _SS, u + 2 * _SS, v + 2 * _SS], fill=_LINE)
    d.rectangle([left, top, right, bottom], outline=_INK, width=_SS)

    if xlabel:
        w, _ = box(xlabel)
        d.text(((left + right) / 2 - w / 2, H - 10 * _SS - line_h), xlabel, font=font, fill=_INK,
               anchor="la")
    if ylabel:
        w, h = box(ylabel)
        label = Image.new("RGB", (w + 2 * _SS, line_h + 2 * _SS), (255, 255, 255))
        ImageDraw.Draw(label).text((_SS, _SS), ylabel, font=font, fill=_INK, anchor="la")
        label = label.rotate(90, expand=True)
        img.paste(label, (10 * _SS, int((top + bottom) / 2 - label.height / 2)))
    if title:
        w, _ = box(title, tfont)
        d.text(((left + right) / 2 - w / 2, 10 * _SS), title, font=tfont, fill=_INK, anchor="la")

    img = img.reduce(_SS)
    buf = io.BytesIO()
    img.save(buf, format="png", compress_level=6)
    return buf.getvalue()
