"""energy.png drawn without matplotlib (swcuts.io.line_plot)."""

import io
import math
import sys

import numpy as np
import pytest
from PIL import Image

from swcuts.io.line_plot import _LINE, line_png, nice_ticks


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _line_pixels(png):
    """Pixels of the line's colour (blue; the rest of the plot is grey or black)."""
    p = _pixels(png)
    assert _LINE[2] - _LINE[0] > 100
    return p[..., 2] - p[..., 0] > 50


@pytest.mark.parametrize("lo, hi", [(0.0, 0.06), (11408.0, 19030.0), (-3e-3, 0.0), (2.5e7, 2.8e7),
                                    (-7.0, 123.0), (1.0, 1.0 + 1e-9), (5.0, 5.0)])
def test_nice_ticks_cover_the_range_at_a_nice_step(lo, hi):
    ticks, step = nice_ticks(lo, hi)
    assert 1 <= ticks.size <= 9
    mantissa = step / 10.0 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m) for m in (1.0, 2.0, 2.5, 5.0))
    assert np.allclose(np.diff(ticks), step)
    assert ticks[0] >= lo - 1e-9 * step and ticks[-1] <= hi + 1e-9 * step
    if hi > lo:  # within one step of both ends
        assert ticks[0] - lo < step + 1e-9 * step and hi - ticks[-1] < step + 1e-9 * step


def test_png_has_the_size_and_draws_the_line_where_the_values_are():
    x = np.linspace(0.0, 1.0, 50)
    falling = _line_pixels(line_png(x, 10.0 - x, xlabel="seconds", ylabel="energy", title="t"))
    rising = _line_pixels(line_png(x, x, xlabel="seconds", ylabel="energy", title="t"))
    assert falling.shape == (350, 600)
    assert falling.sum() > 300 and rising.sum() > 300
    # The falling line starts high on the left, the rising one low.
    cols = np.flatnonzero(falling.any(axis=0))
    left = cols[:5]
    assert np.flatnonzero(falling[:, left].any(axis=1)).mean() < np.flatnonzero(rising[:, left].any(axis=1)).mean()


def test_nan_values_leave_gaps_and_no_finite_value_draws_no_line():
    x = np.arange(6.0)
    whole = _line_pixels(line_png(x, x)).sum()
    gap = _line_pixels(line_png(x, np.where(x == 2.0, np.nan, x))).sum()
    assert 0 < gap < whole
    assert _line_pixels(line_png([0.0, 1.0], [np.nan, np.nan])).sum() == 0


def test_one_point_and_constant_values_draw():
    assert _line_pixels(line_png([0.0], [3.0])).sum() > 0
    assert _line_pixels(line_png([0.0, 1.0, 2.0], [5.0, 5.0, 5.0])).sum() > 100


def test_energy_plot_does_not_import_matplotlib():
    import subprocess

    code = ("import sys, types\n"
            "from swcuts.cli.common import _energy_plot\n"
            "png = _energy_plot(types.SimpleNamespace(seconds=[0.0, 0.1], energy=[2.0, 1.0]))\n"
            "assert png[:4] == b'\\x89PNG'\n"
            "print('matplotlib' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
