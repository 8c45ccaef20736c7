"""End-to-end tests of ``swcuts segment`` (in process, plus one subprocess run)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

import swcuts
import swcuts.segmentation.segment
import swcuts.io.memory
from swcuts.image.atoms import DEFAULT_ATOMS
from swcuts.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
FIG7 = ROOT / "sample_images" / "fig7.png"
OUTPUTS = {"labels.png", "labels.npy", "overlay.png", "atoms.png", "trace.csv", "energy.png", "summary.json"}
TRACE_HEADER = ["step", "seconds", "temperature", "energy", "labels", "accepted"]
SUMMARY_KEYS = {"sampler", "atoms", "steps", "seconds", "energy", "labels", "acceptance_rate", "seed", "version"}
FAST = ["--steps", "2000", "--n-atoms", "150"]
TINY = ["--steps", "300", "--n-atoms", "40"]


def run_cli(capsys, *argv):
    """Run ``swcuts`` in process; return (exit code, stdout, stderr)."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, err):
    assert rc == 2
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert err.startswith("swcuts: error: ") and len(err.strip()) > len("swcuts: error: ") + 5, repr(err)


def assert_no_output(outdir: Path):
    """The output directory is absent or empty (no temp files either)."""
    assert not outdir.exists() or list(outdir.iterdir()) == [], sorted(os.listdir(outdir))


@pytest.fixture(scope="module")
def small_png(tmp_path_factory):
    """fig7 downscaled 2x: a 80x120 8-bit grey PNG."""
    img = iio.imread(FIG7)[::2, ::2]
    path = tmp_path_factory.mktemp("img") / "fig7_small.png"
    iio.imwrite(path, np.ascontiguousarray(img))
    return path


@pytest.fixture(scope="module")
def tiny_npy(tmp_path_factory):
    """A 24x32 two-region float image saved as .npy."""
    rng = np.random.default_rng(0)
    img = np.zeros((24, 32))
    img[:, 16:] = 1.0
    img = np.clip(img + 0.05 * rng.standard_normal(img.shape), 0, 1)
    path = tmp_path_factory.mktemp("img") / "tiny.npy"
    np.save(path, img)
    return path


@pytest.fixture(scope="module")
def seeded_run(small_png, tmp_path_factory):
    """One CLI run on the small fig7 with seed 0 (run in process)."""
    outdir = tmp_path_factory.mktemp("run") / "out"
    cap_err, cap_out = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = cap_out, cap_err
    try:
        rc = main(["segment", str(small_png), "-o", str(outdir), "--seed", "0", *FAST])
    finally:
        sys.stdout, sys.stderr = old
    return dict(rc=rc, out=cap_out.getvalue(), err=cap_err.getvalue(), outdir=outdir,
                shape=iio.imread(small_png).shape[:2])


# ---------------------------------------------------------------------------
# Successful runs
# ---------------------------------------------------------------------------


def test_run_succeeds_quietly(seeded_run):
    assert seeded_run["rc"] == 0
    # stderr is not a terminal here: no progress bar, no warnings.
    assert seeded_run["err"] == ""
    assert "segments" in seeded_run["out"]


def test_writes_every_file_and_nothing_else(seeded_run):
    names = set(os.listdir(seeded_run["outdir"]))
    assert names == OUTPUTS  # in particular no leftover temporary files


def test_labels_png_and_npy(seeded_run):
    h, w = seeded_run["shape"]
    d = seeded_run["outdir"]
    labels = np.load(d / "labels.npy")
    assert labels.shape == (h, w)
    assert labels.dtype.kind in "iu"
    k = int(labels.max()) + 1
    np.testing.assert_array_equal(np.unique(labels), np.arange(k))
    png = iio.imread(d / "labels.png")
    assert png.dtype == np.uint16
    assert png.shape == (h, w)
    np.testing.assert_array_equal(png, labels)


@pytest.mark.parametrize("name", ["overlay.png", "atoms.png"])
def test_overlay_images(seeded_run, small_png, name):
    h, w = seeded_run["shape"]
    img = iio.imread(seeded_run["outdir"] / name)
    assert img.dtype == np.uint8
    assert img.shape == (h, w, 3)
    # The grey input shows through everywhere but on the drawn boundaries.
    grey = iio.imread(small_png).astype(int)
    drawn = (img[..., 0] != img[..., 1]) | (img[..., 1] != img[..., 2])
    assert np.abs(img[~drawn].astype(int) - grey[~drawn][:, None]).max() <= 1
    from scipy.ndimage import binary_dilation
    from skimage.segmentation import find_boundaries

    segments = find_boundaries(np.load(seeded_run["outdir"] / "labels.npy"), mode="thick")
    if name == "overlay.png":  # the segments' boundaries, in red, and nothing else
        assert (img[drawn, 0] > 200).all() and (img[drawn, 1:] < 60).all()
        assert not (drawn & ~segments).any()
        assert not (segments & ~binary_dilation(drawn, np.ones((3, 3), bool))).any()
    else:  # the atoms' boundaries, in cyan: a finer partition than the segments
        assert (img[drawn, 0] < 60).all() and (img[drawn, 2] > 200).all()
        assert drawn.sum() > (segments & drawn).sum() > 0


def test_trace_csv(seeded_run):
    with open(seeded_run["outdir"] / "trace.csv", newline="") as fh:
        text = fh.read()
    assert text.splitlines()[0] == ",".join(TRACE_HEADER)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == TRACE_HEADER
    body = rows[1:]
    assert len(body) >= 2
    steps = [int(r[0]) for r in body]
    assert all(b > a for a, b in zip(steps, steps[1:]))
    assert steps[-1] == 2000
    energies = [float(r[3]) for r in body]
    assert all(math.isfinite(e) for e in energies)
    for r in body:
        assert len(r) == 6
        float(r[1]), float(r[2]), int(r[4]), int(r[5])


def test_energy_png(seeded_run):
    path = seeded_run["outdir"] / "energy.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = iio.imread(path)
    assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 50


def test_summary_json(seeded_run):
    d = seeded_run["outdir"]
    summary = json.loads((d / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    labels = np.load(d / "labels.npy")
    assert summary["labels"] == int(labels.max()) + 1 == len(np.unique(labels))
    assert summary["sampler"] == "swc"
    assert summary["atoms"] == DEFAULT_ATOMS
    assert summary["steps"] == 2000
    assert summary["seed"] == 0
    assert summary["version"] == swcuts.__version__
    assert summary["seconds"] >= 0
    assert 0.0 <= summary["acceptance_rate"] <= 1.0
    assert math.isfinite(summary["energy"])
    with open(d / "trace.csv", newline="") as fh:
        first_energy = float(list(csv.DictReader(fh))[0]["energy"])
    assert summary["energy"] <= first_energy + 1e-6


def test_same_seed_same_labels(seeded_run, small_png, tmp_path, capsys):
    rc, _, _ = run_cli(capsys, "segment", small_png, "-o", tmp_path / "again", "--seed", "0", *FAST)
    assert rc == 0
    np.testing.assert_array_equal(np.load(tmp_path / "again" / "labels.npy"),
                                  np.load(seeded_run["outdir"] / "labels.npy"))


def test_one_segment_is_said_in_the_singular(tmp_path, capsys):
    flat = tmp_path / "flat.npy"
    np.save(flat, np.full((24, 32), 0.5))
    rc, out, _ = run_cli(capsys, "segment", flat, "-o", tmp_path / "out", "--seed", "0", *TINY)
    assert rc == 0 and out.startswith("1 segment, energy "), out
    # The sampler's seconds and the whole run's, both named.
    assert re.search(r"steps in [0-9.]+ s of sampling \([0-9.]+ s in all\) -> ", out), out


def test_time_budget(small_png, tmp_path, capsys):
    out = tmp_path / "tb"
    rc, _, err = run_cli(capsys, "segment", small_png, "-o", out, "--time-budget", "2",
                         "--n-atoms", "150", "--seed", "1")
    # The budget is the whole run; a slow first run (kernels compiled) may leave sampling its minimum.
    assert rc == 0 and all(line.startswith("swcuts: warning: the work before sampling")
                           for line in err.splitlines())
    assert set(os.listdir(out)) == OUTPUTS
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] > 0
    assert 0 < summary["seconds"] < 2.0  # sampling: what the rest of the run left
    with open(out / "trace.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) >= 2


def test_module_entry_point_subprocess(small_png, tmp_path):
    out = tmp_path / "sub"
    env = dict(os.environ)
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "swcuts", "segment", str(small_png), "-o", str(out), "--seed", "3", *FAST],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    # stderr is a pipe, not a terminal: no progress bar (tqdm draws with \r and "step/s").
    assert proc.stderr == ""
    assert "\r" not in proc.stdout
    assert set(os.listdir(out)) == OUTPUTS
    assert np.load(out / "labels.npy").shape == iio.imread(small_png).shape[:2]


@pytest.mark.parametrize("init", [None, "uniform"])
def test_multigrid_on_pixels(init, tiny_npy, tmp_path, capsys):
    """Pixel multigrid starts from SW cuts on atoms by default; --init uniform from one label."""
    out = tmp_path / "mg"
    extra = ["--init", init] if init else []
    rc, stdout, err = run_cli(capsys, "segment", tiny_npy, "-o", out, "--sampler", "multigrid",
                              "--steps", "400", "--seed", "0", *extra)
    assert rc == 0 and err == "" and "400 steps" in stdout
    assert set(os.listdir(out)) == OUTPUTS
    summary = json.loads((out / "summary.json").read_text())
    assert summary["init"] == (init or "atoms")
    assert summary["atoms"] == "pixels" and summary["n_atoms"] == 24 * 32 and summary["steps"] == 400
    with open(out / "trace.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert int(rows[-1]["step"]) == 400 and rows[0]["labels"] == "1"
    temps = [float(r["temperature"]) for r in rows]
    rises = sum(b > a for a, b in zip(temps, temps[1:]))
    assert rises == (0 if init == "uniform" else 1)  # the pixel phase starts again at T0 = 1


class _FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(tiny_npy, tmp_path, monkeypatch):
    """Sanity check of the no-progress-bar tests: on a terminal the bar does appear."""
    fake = _FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    assert main(["segment", str(tiny_npy), "-o", str(tmp_path / "a"), *TINY]) == 0
    assert fake.getvalue().strip()  # tqdm drew something
    fake2 = _FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake2)
    assert main(["segment", str(tiny_npy), "-o", str(tmp_path / "b"), "--no-progress", *TINY]) == 0
    assert fake2.getvalue() == ""


# ---------------------------------------------------------------------------
# Other image kinds: handled, not refused
# ---------------------------------------------------------------------------


def _base(h=40, w=60):
    rng = np.random.default_rng(5)
    img = np.zeros((h, w))
    img[:, w // 2:] = 0.8
    img[h // 2:, :w // 3] = 0.4
    return np.clip(img + 0.03 * rng.standard_normal((h, w)), 0, 1)


def _write_png16_colour(path, rgb16):
    import cv2

    if rgb16.shape[2] == 3:
        bgr = rgb16[..., ::-1]
    else:
        bgr = rgb16[..., [2, 1, 0, 3]]
    assert cv2.imwrite(str(path), np.ascontiguousarray(bgr))


IMAGE_KINDS = ["png16_grey", "png16_rgb", "png_rgba", "png_grey_alpha", "png16_rgba", "npy_float_rgb",
               "npy_channels_first", "npy_uint16"]


@pytest.mark.parametrize("kind", IMAGE_KINDS)
def test_image_kinds(kind, tmp_path, capsys):
    g = _base()
    rgb = np.stack([g, 1 - g, 0.5 * g], axis=-1)
    alpha = np.full(g.shape + (1,), 1.0)
    path = tmp_path / ("img.npy" if kind.startswith("npy") else "img.png")
    if kind == "png16_grey":
        iio.imwrite(path, (g * 65535).astype(np.uint16))
    elif kind == "png16_rgb":
        _write_png16_colour(path, (rgb * 65535).astype(np.uint16))
    elif kind == "png16_rgba":
        _write_png16_colour(path, (np.concatenate([rgb, alpha], -1) * 65535).astype(np.uint16))
    elif kind == "png_rgba":
        iio.imwrite(path, (np.concatenate([rgb, alpha * 0.5], -1) * 255).astype(np.uint8))
    elif kind == "png_grey_alpha":
        iio.imwrite(path, (np.stack([g, np.ones_like(g)], -1) * 255).astype(np.uint8), mode="LA")
    elif kind == "npy_float_rgb":
        np.save(path, (rgb * 7.0 - 2.0).astype(np.float32))  # outside [0, 1]: rescaled
    elif kind == "npy_channels_first":
        np.save(path, np.moveaxis(rgb, -1, 0))
    elif kind == "npy_uint16":
        np.save(path, (g * 4000).astype(np.uint16))
    loaded = swcuts.io.image_read.load_image(path)
    if kind.startswith("png16"):
        assert loaded.dtype == np.uint16
    out = tmp_path / "out"
    rc, _, err = run_cli(capsys, "segment", path, "-o", out, "--seed", "0", *TINY)
    assert rc == 0, err
    if kind == "npy_uint16":  # values up to 4000: 12-bit data, said in one line (issue 32)
        assert err.count("\n") == 1 and "taken as 12-bit data" in err
    else:
        assert err == ""
    assert set(os.listdir(out)) == OUTPUTS
    labels = np.load(out / "labels.npy")
    assert labels.shape == g.shape
    assert iio.imread(out / "overlay.png").shape == g.shape + (3,)
    assert json.loads((out / "summary.json").read_text())["labels"] == labels.max() + 1
