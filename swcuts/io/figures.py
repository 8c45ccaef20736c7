"""Figures as PNG bytes, and energies as a plot can show them.

:func:`figure` makes a matplotlib figure on the Agg canvas (no pyplot: it
would add most of a second of import time to every run, and no display is
needed) and :func:`png_bytes` renders it; every plot swcuts writes is made
with the two.

An extreme prior weight (``--a0 1e308``) gives energies near the largest
float, or infinite ones; matplotlib's axis arithmetic overflows on the
first ("arange: cannot compute length") and drops the second silently.
:func:`plottable` turns any series into values every plot can draw, and
says what it changed, so that a run's plots always render.
"""

from __future__ import annotations

import io
import math

import numpy as np

__all__ = ["figure", "png_bytes", "plottable", "LARGEST"]


def figure(width, height, dpi=100):
    """A matplotlib ``Figure`` of ``width`` x ``height`` inches on the Agg canvas.

    Examples
    --------
    >>> fig = figure(2, 1)
    >>> png_bytes(fig)[:4]
    b'\x89PNG'
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig, *, tight=True) -> bytes:
    """The PNG file of ``fig`` (laid out tight first unless ``tight=False``)."""
    if tight:
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


#: Values larger than this (in magnitude) are plotted divided by a power of
#: ten: well inside what matplotlib's tick and limit arithmetic handles.
LARGEST = 1e100


def plottable(*series):
    """Series of values prepared for one plot axis.

    Non-finite values (NaN, infinities) become NaN (a gap in a line), and
    if the largest finite magnitude exceeds :data:`LARGEST`, every series
    is divided by the same power of ten.

    Parameters
    ----------
    *series : array_like
        The values of each line on the axis.

    Returns
    -------
    values : list of numpy.ndarray
        float64 arrays, one per series.
    unit : str
        Text to append to the axis label: ``""``, or e.g. ``" (×1e308)"``.
    note : str
        ``""``, or e.g. ``"3 of 60 values infinite or NaN, not shown"``.

    Examples
    --------
    >>> (y,), unit, note = plottable([1e308, 1.5e308, np.inf])
    >>> y.tolist(), unit, note
    ([1.0, 1.5, nan], ' (×1e308)', '1 of 3 values infinite or NaN, not shown')
    >>> plottable([1.0, 2.0])[1:]
    ('', '')
    """
    values = [np.asarray(s, dtype=np.float64).ravel() for s in series]
    total = sum(v.size for v in values)
    bad = sum(int(np.count_nonzero(~np.isfinite(v))) for v in values)
    values = [np.where(np.isfinite(v), v, np.nan) for v in values]
    largest = max((float(np.nanmax(np.abs(v))) for v in values if np.isfinite(v).any()), default=0.0)
    unit = ""
    if largest > LARGEST:
        power = int(math.floor(math.log10(largest)))
        values = [v / 10.0 ** power for v in values]
        unit = f" (×1e{power})"
    note = ""
    if bad:
        note = (f"{bad} of {total} values infinite or NaN, not shown" if bad < total
                else "every value infinite or NaN: nothing to show")
    return values, unit, note
