"""swcuts.io.flow: the Middlebury .flo format and the colour-wheel coding."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import numpy as np
import pytest

from swcuts.io import flow as flo_io
from swcuts.io.flow import colour_wheel, flow_to_color, read_flo, write_flo

MIDDLEBURY = Path(__file__).resolve().parents[2] / "shared" / "data" / "middlebury"


def test_round_trip_with_nan(tmp_path):
    rng = np.random.default_rng(0)
    f = rng.normal(0, 3, (7, 11, 2)).astype(np.float32)
    f[2, 3] = np.nan
    f[4, 5, 1] = np.nan
    p = tmp_path / "f.flo"
    write_flo(p, f)
    assert p.stat().st_size == 12 + 8 * 7 * 11
    g = read_flo(p)
    assert g.dtype == np.float32 and g.shape == f.shape
    np.testing.assert_array_equal(g, f)  # NaN positions compare equal
    assert np.isnan(g[2, 3]).all() and np.isnan(g[4, 5, 1]) and not np.isnan(g[4, 5, 0])


def test_header_layout_and_unknown_value(tmp_path):
    p = tmp_path / "f.flo"
    f = np.array([[[1.5, -2.0], [np.nan, np.nan]]], np.float64)  # H=1, W=2
    write_flo(p, f)
    raw = p.read_bytes()
    assert np.frombuffer(raw[:4], "<f4")[0] == np.float32(202021.25)
    assert np.frombuffer(raw[4:12], "<i4").tolist() == [2, 1]  # width, height
    np.testing.assert_array_equal(np.frombuffer(raw[12:], "<f4"), [1.5, -2.0, 1e10, 1e10])
    # any |value| > 1e9 reads as unknown (Dimetrodon uses 1.67e9)
    p.write_bytes(raw[:12] + np.array([1.5, -2.0, 1.67e9, -2e9], "<f4").tobytes())
    g = read_flo(p)
    assert np.isnan(g[0, 1]).all() and g[0, 0].tolist() == [1.5, -2.0]


def test_overwrite_is_atomic_and_leaves_no_temp(tmp_path):
    p = tmp_path / "f.flo"
    write_flo(p, np.zeros((3, 3, 2)))
    write_flo(p, np.ones((2, 4, 2)))
    assert read_flo(p).shape == (2, 4, 2)
    assert sorted(os.listdir(tmp_path)) == ["f.flo"]


@pytest.mark.parametrize("mutate, message", [
    (lambda raw: np.array([1.0], "<f4").tobytes() + raw[4:], "magic"),
    (lambda raw: raw[:-3], "truncated"),
    (lambda raw: raw + b"\0" * 8, "too long"),
    (lambda raw: raw[:8], "header"),
    (lambda raw: raw[:4] + np.array([0, 3], "<i4").tobytes() + raw[12:], "width 0"),
])
def test_bad_files_are_one_line_value_errors(tmp_path, mutate, message):
    p = tmp_path / "f.flo"
    write_flo(p, np.zeros((3, 4, 2)))
    p.write_bytes(mutate(p.read_bytes()))
    with pytest.raises(ValueError, match=message) as info:
        read_flo(p)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("bad", [np.zeros((3, 4)), np.zeros((3, 4, 3)), np.zeros((0, 4, 2)),
                                 np.array([[["a", "b"]]])])
def test_write_rejects_bad_arrays(tmp_path, bad):
    with pytest.raises(ValueError):
        write_flo(tmp_path / "x.flo", bad)
    assert not os.listdir(tmp_path)


def test_colour_wheel_definition():
    w = colour_wheel()
    assert w.shape == (55, 3)
    # the six primaries/secondaries at the transition starts RY=15, YG=6, GC=4, CB=11, BM=13, MR=6
    starts = np.cumsum([0, 15, 6, 4, 11, 13])
    assert w[starts].tolist() == [[255, 0, 0], [255, 255, 0], [0, 255, 0], [0, 255, 255],
                                  [0, 0, 255], [255, 0, 255]]
    assert w[1].tolist() == [255, 17, 0]  # floor(255 * 1 / 15)
    assert w[16].tolist() == [213, 255, 0]  # 255 - floor(255 / 6)
    assert w[54].tolist() == [255, 0, 43]  # 255 - floor(255 * 5 / 6)


@pytest.mark.parametrize("uv, expected", [
    ((0.0, 0.0), (255, 255, 255)),  # no motion: white
    ((1.0, 0.0), (255, 0, 0)),  # +u (right): wheel[0], red
    ((-1.0, 0.0), (0, 209, 255)),  # -u: fk = 27, wheel[27] = (0, 255 - floor(255*2/11), 255)
    ((0.0, 1.0), (255, 229, 0)),  # +v (down): fk = 13.5, halfway wheel[13]/[14] (G 221, 238)
    ((0.0, -1.0), (88, 0, 255)),  # -v (up): fk = 40.5, halfway wheel[40]/[41] (R 78, 98)
    ((0.5, 0.0), (255, 127, 127)),  # half length: 1 - r (1 - colour)
    ((2.0, 0.0), (191, 0, 0)),  # beyond max_flow: 0.75 colour
    ((np.nan, np.nan), (0, 0, 0)),  # unknown: black
    ((1e10, 1e10), (0, 0, 0)),
])
def test_flow_to_color_known_vectors(uv, expected):
    f = np.array([[uv]], np.float64)
    assert flow_to_color(f, max_flow=1.0)[0, 0].tolist() == list(expected)


def test_flow_to_color_normalises_by_largest_known_vector():
    f = np.array([[[2.0, 0.0], [1.0, 0.0], [np.nan, 0.0], [1e10, 0.0]]])
    out = flow_to_color(f)
    assert out.dtype == np.uint8 and out.shape == (1, 4, 3)
    assert out[0].tolist() == [[255, 0, 0], [255, 127, 127], [0, 0, 0], [0, 0, 0]]
    assert flow_to_color(np.zeros((2, 2, 2))).min() == 255  # all-zero flow: white, no division by 0


@pytest.mark.skipif(not (MIDDLEBURY / "Dimetrodon" / "flow10.flo").exists(), reason="no Middlebury data")
def test_reads_middlebury_ground_truth():
    f = read_flo(MIDDLEBURY / "Dimetrodon" / "flow10.flo")
    assert f.shape == (388, 584, 2)
    assert 0.04 < np.isnan(f).any(-1).mean() < 0.055  # about 4.8 % unknown
    assert np.nanmax(np.abs(f)) < 10


def test_examples():
    result = doctest.testmod(flo_io, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
