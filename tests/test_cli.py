"""End-to-end tests of ``swcuts segment`` (in process, plus one subprocess run)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
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
        capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL,
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


# ---------------------------------------------------------------------------
# Bad input: exit 2, one line, no traceback, no output
# ---------------------------------------------------------------------------


def _make_bad(kind, d: Path) -> Path:
    if kind == "missing":
        return d / "does_not_exist.png"
    if kind == "directory":
        (d / "adir").mkdir()
        return d / "adir"
    if kind == "text_as_png":
        p = d / "notes.png"
        p.write_text("this is not an image\n")
        return p
    if kind == "garbage_jpg":
        p = d / "photo.jpg"
        p.write_bytes(bytes(range(256)) * 4)
        return p
    if kind == "truncated_png":
        p = d / "cut.png"
        p.write_bytes(FIG7.read_bytes()[:200])
        return p
    if kind == "empty_file":
        p = d / "empty.png"
        p.write_bytes(b"")
        return p
    p = d / f"{kind}.npy"
    arrays = {
        "empty_npy": np.zeros((0, 0)),
        "empty_rows_npy": np.zeros((0, 10, 3)),
        "one_pixel_npy": np.zeros((1, 1)),
        "one_row_npy": np.zeros((1, 50)),
        "five_channels_npy": np.random.default_rng(0).random((20, 20, 5)),
        "nan_npy": np.where(np.eye(10) > 0, np.nan, 0.5),
        "inf_npy": np.where(np.eye(10) > 0, np.inf, 0.5),
        "neg_inf_rgb_npy": np.where(np.eye(10)[..., None] > 0, -np.inf, 0.5) * np.ones((1, 1, 3)),
        "one_d_npy": np.zeros(100),
        "four_d_npy": np.zeros((2, 10, 10, 3)),
        "string_npy": np.array([["a", "b"], ["c", "d"]]),
        "complex_npy": np.ones((10, 10), dtype=complex),
    }
    if kind == "one_pixel_png":
        p = d / "one.png"
        iio.imwrite(p, np.zeros((1, 1), dtype=np.uint8))
        return p
    if kind == "object_npy":
        np.save(p, np.array([None, 1], dtype=object), allow_pickle=True)
        return p
    np.save(p, arrays[kind])
    return p


BAD_FILES = ["missing", "directory", "text_as_png", "garbage_jpg", "truncated_png", "empty_file",
             "empty_npy", "empty_rows_npy", "one_pixel_npy", "one_row_npy", "one_pixel_png",
             "five_channels_npy", "nan_npy", "inf_npy", "neg_inf_rgb_npy", "one_d_npy", "four_d_npy",
             "string_npy", "complex_npy", "object_npy"]

EXPECTED_WORDS = {
    "missing": "does not exist", "directory": "directory", "text_as_png": "not an image",
    "garbage_jpg": "not an image", "truncated_png": "not an image", "empty_file": "empty",
    "empty_npy": "2x2", "empty_rows_npy": "2x2", "one_pixel_npy": "2x2", "one_row_npy": "2x2",
    "one_pixel_png": "2x2", "five_channels_npy": "5 channels", "nan_npy": "NaN", "inf_npy": "infinite",
    "neg_inf_rgb_npy": "infinite", "one_d_npy": "dimensions", "four_d_npy": "dimensions",
    "string_npy": "numeric", "complex_npy": "numeric", "object_npy": "not an image",
}


@pytest.mark.parametrize("kind", BAD_FILES)
def test_bad_image_file(kind, tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    path = _make_bad(kind, src)
    out = tmp_path / "out"
    rc, stdout, err = run_cli(capsys, "segment", path, "-o", out, *TINY)
    assert_one_line_error(rc, err)
    assert EXPECTED_WORDS[kind] in err
    assert stdout == ""
    assert_no_output(out)


# (CLI arguments, the same options for swcuts.segment)
BAD_OPTIONS = {
    "unknown_sampler": (["--sampler", "metropolis"], dict(sampler="metropolis")),
    "unknown_atoms": (["--atoms", "voronoi"], dict(atoms="voronoi")),
    "negative_steps": (["--steps", "-5"], dict(steps=-5)),
    "zero_steps": (["--steps", "0"], dict(steps=0)),
    "t_final_above_t0": (["--t0", "1", "--t-final", "2"], dict(t0=1.0, t_final=2.0)),
    "t_final_above_default_t0": (["--t-final", "50"], dict(t_final=50.0)),
    "negative_time_budget": (["--time-budget", "-1"], dict(time_budget=-1.0)),
    "zero_time_budget": (["--time-budget", "0"], dict(time_budget=0.0)),
    "nan_time_budget": (["--time-budget", "nan"], dict(time_budget=float("nan"))),
    "steps_and_time_budget": (["--steps", "10", "--time-budget", "1"], dict(steps=10, time_budget=1.0)),
    "zero_n_atoms": (["--n-atoms", "0"], dict(n_atoms=0)),
    "negative_seed": (["--seed", "-1"], dict(seed=-1)),
    "negative_t0": (["--t0", "-3"], dict(t0=-3.0)),
    "infinite_t0": (["--t0", "inf"], dict(t0=float("inf"))),
    "zero_t_final": (["--t-final", "0"], dict(t_final=0.0)),
    "unknown_init": (["--init", "zeros"], dict(init="zeros")),
    "init_atoms_for_swc": (["--init", "atoms"], dict(init="atoms")),
    "init_atoms_multigrid_on_slic": (["--sampler", "multigrid", "--atoms", "slic", "--init", "atoms"],
                                     dict(sampler="multigrid", atoms="slic", init="atoms")),
    "init_random_multilevel": (["--sampler", "multilevel", "--init", "random"],
                               dict(sampler="multilevel", init="random")),
    "t_final_above_atoms_t0": (["--sampler", "multigrid", "--t-final", "2"], dict(sampler="multigrid", t_final=2.0)),
    "negative_edge_scale": (["--edge-scale", "-1"], dict(edge_scale=-1.0)),
    "nan_a0": (["--a0", "nan"], dict(a0=float("nan"))),
    "negative_a1": (["--a1", "-2"], dict(a1=-2.0)),
    "infinite_a2": (["--a2", "inf"], dict(a2=float("inf"))),
    "window_too_large": (["--sampler", "multigrid", "--window-sizes", "8,64"],
                         dict(sampler="multigrid", window_sizes=[8, 64])),
    "window_zero": (["--sampler", "multigrid", "--window-sizes", "0"],
                    dict(sampler="multigrid", window_sizes=[0])),
    "window_for_swc": (["--window-sizes", "8"], dict(window_sizes=[8])),
    "zero_levels": (["--sampler", "multilevel", "--levels", "0"], dict(sampler="multilevel", levels=0)),
    "multilevel_on_slic": (["--sampler", "multilevel", "--atoms", "slic"],
                           dict(sampler="multilevel", atoms="slic")),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_bad_options_same_message_as_api(case, tiny_npy, tmp_path, capsys):
    cli_args, api_kwargs = BAD_OPTIONS[case]
    out = tmp_path / "out"
    rc, stdout, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *cli_args)
    assert_one_line_error(rc, err)
    assert stdout == ""
    assert_no_output(out)
    kwargs = dict(n_atoms=40, steps=300)
    kwargs.update(api_kwargs)
    if "time_budget" in api_kwargs and "steps" not in api_kwargs:
        kwargs.pop("steps")
    with pytest.raises(ValueError) as info:
        swcuts.segment(np.load(tiny_npy), **kwargs)
    assert err == f"swcuts: error: {info.value}\n"


@pytest.mark.parametrize("argv", [
    ["segment", "IMG", "-o", "OUT", "--steps", "ten"],
    ["segment", "IMG", "-o", "OUT", "--steps", "1.5"],
    ["segment", "IMG", "-o", "OUT", "--t0", "hot"],
    ["segment", "IMG", "-o", "OUT", "--bogus"],
    ["segment", "IMG", "-o", "OUT", "--window-sizes", "8,big"],
    ["segment", "IMG", "-o", "OUT", "--levels", "two"],
    ["segment", "IMG"],
    ["segment", "-o", "OUT"],
    ["frobnicate", "IMG"],
    [],
])
def test_bad_command_lines(argv, tiny_npy, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [str(tiny_npy) if a == "IMG" else str(out) if a == "OUT" else a for a in argv]
    rc, stdout, err = run_cli(capsys, *argv)
    assert_one_line_error(rc, err)
    assert_no_output(out)


def test_bad_option_checked_before_reading_image(tmp_path, capsys):
    # Both the file and the option are bad: the cheap option check comes first.
    rc, _, err = run_cli(capsys, "segment", tmp_path / "missing.png", "-o", tmp_path / "out",
                         "--sampler", "nope")
    assert_one_line_error(rc, err)
    assert "sampler" in err


def test_output_path_is_a_file(tiny_npy, tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("keep me")
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", target, *TINY)
    assert_one_line_error(rc, err)
    assert "not a directory" in err
    assert target.read_text() == "keep me"
    assert os.listdir(tmp_path) == ["taken"]


def test_output_below_a_file(tiny_npy, tmp_path, capsys, monkeypatch):
    target = tmp_path / "taken"
    target.write_text("keep me")
    # Refused before any work starts.
    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", _must_not_run)
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", target / "sub" / "dir", *TINY)
    assert_one_line_error(rc, err)
    assert target.read_text() == "keep me"


def test_output_dir_nested_is_created(tiny_npy, tmp_path, capsys):
    out = tmp_path / "a" / "b" / "c"
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY)
    assert rc == 0, err
    assert set(os.listdir(out)) == OUTPUTS


def test_existing_output_dir_is_reused(tiny_npy, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "other.txt").write_text("x")
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY)
    assert rc == 0, err
    assert set(os.listdir(out)) == OUTPUTS | {"other.txt"}


def _must_not_run(*args, **kwargs):
    raise AssertionError("work started although the input should have been refused")


def test_image_too_large_for_memory(small_png, tmp_path, capsys, monkeypatch):
    # check_memory compares against swcuts.io.memory.available_memory(): make it tiny.
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: 100_000)
    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", _must_not_run)
    monkeypatch.setattr(swcuts.segmentation.segment, "prepare_image", _must_not_run)
    out = tmp_path / "out"
    rc, stdout, err = run_cli(capsys, "segment", small_png, "-o", out, *FAST)
    assert_one_line_error(rc, err)
    assert "GB" in err and "downscale" in err
    assert stdout == ""
    assert_no_output(out)


def test_memory_limit_depends_on_atoms(small_png, tmp_path, capsys, monkeypatch):
    # Enough memory for 150 atoms, not for a pixel graph of 80x120 vertices.
    need = swcuts.io.memory.estimate_memory((80, 120), 150)
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: need + 10_000)
    rc, _, err = run_cli(capsys, "segment", small_png, "-o", tmp_path / "pix", "--atoms", "pixels", *FAST)
    assert_one_line_error(rc, err)
    assert "9600 atoms" in err
    assert_no_output(tmp_path / "pix")
    rc, _, err = run_cli(capsys, "segment", small_png, "-o", tmp_path / "ok", *TINY)
    assert rc == 0, err


def test_failed_rerun_keeps_the_earlier_outputs(tiny_npy, tmp_path, capsys, monkeypatch):
    """A re-run that fails while writing leaves the earlier run's files as they were."""
    from swcuts.cli import app as cli

    out = tmp_path / "out"
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY)
    assert rc == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = cli._write_bytes

    def failing(path, data):
        if Path(path).name == "energy.png":
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(cli, "_write_bytes", failing)
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY, "--seed", "5")
    assert_one_line_error(rc, err)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no staging folder left
    (out / "energy.png").unlink()
    (out / "energy.png").mkdir()  # an output name taken by a folder: refused before any work
    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", _must_not_run)
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY)
    assert_one_line_error(rc, err)
    assert "energy.png" in err


def test_extreme_prior_gives_results_and_a_warning_not_a_failure(tiny_npy, tmp_path, capsys):
    out = tmp_path / "out"
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY, "--a0", "1e308")
    assert rc == 0, err
    assert all(line.startswith("swcuts: warning: ") for line in err.splitlines())

    def refuse(token):
        raise AssertionError(f"summary.json holds {token}")

    summary = json.loads((out / "summary.json").read_text(), parse_constant=refuse)
    assert "energy" in summary and (out / "labels.png").is_file()


#: ``swcuts`` with a marker file touched as sampling starts (argv[1]), so the
#: test signals when the run is sampling, not after a guessed delay (a fixed
#: 6 s sleep hit a still-importing interpreter on a busy machine).
SAMPLE_MARKED = (
    "import sys, pathlib\n"
    "import swcuts.segmentation.segment as api\n"
    "real = api.anneal\n"
    "def marked(*args, **kw):\n"
    "    pathlib.Path(sys.argv[1]).touch()\n"
    "    return real(*args, **kw)\n"
    "api.anneal = marked\n"
    "from swcuts.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def test_sigterm_while_sampling_leaves_the_output_as_it_was(tiny_npy, tmp_path, tmp_path_factory):
    import signal
    import time

    out = tmp_path / "out"
    out.mkdir()
    (out / "labels.png").write_bytes(b"earlier run")
    marker = tmp_path_factory.mktemp("flag") / "sampling"  # not in tmp_path: anneal may run again
    # The kernels compiled beforehand into a numba cache of this test's own, so
    # that the signal comes while sampling, not while compiling, and no other
    # test process writes that cache meanwhile.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path_factory.mktemp("numba_cache")))
    args = ["segment", str(tiny_npy), "--n-atoms", "40", "--no-progress"]
    warm = subprocess.run([sys.executable, "-m", "swcuts", *args, "-o", str(tmp_path_factory.mktemp("warm") / "o"),
                           "--steps", "10"], env=env, capture_output=True, text=True)
    assert warm.returncode == 0, warm.stderr
    proc = subprocess.Popen([sys.executable, "-c", SAMPLE_MARKED, str(marker), *args, "-o", str(out),
                             "--steps", "100000000"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err == "swcuts: terminated\n"
    assert sorted(os.listdir(tmp_path)) == ["out"] and os.listdir(out) == ["labels.png"]
    assert (out / "labels.png").read_bytes() == b"earlier run"


def test_failed_write_leaves_no_files(tiny_npy, tmp_path, capsys, monkeypatch):
    """If writing fails half way, the files already written are removed again."""
    from swcuts.cli import app as cli

    real = cli._write_bytes

    def failing(path, data):
        if Path(path).name == "energy.png":
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(cli, "_write_bytes", failing)
    out = tmp_path / "new" / "out"
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY)
    assert_one_line_error(rc, err)
    assert "No space left" in err
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------ swcuts compare
def test_compare_writes_table_plot_and_summary(tiny_npy, tmp_path, capsys):
    out = tmp_path / "cmp"
    rc, stdout, err = run_cli(capsys, "compare", tiny_npy, "-o", out, "--samplers", "swc,gibbs",
                              "--time-budget", "0.3", "--n-atoms", "40", "--seed", "1")
    assert rc == 0, err
    assert sorted(os.listdir(out)) == ["compare.html", "comparison.csv", "comparison.png", "summary.json"]
    page = (out / "compare.html").read_text()
    assert "swc" in page and "gibbs" in page and "data:image/png;base64" in page
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary) == ["gibbs", "swc"]
    rows = (out / "comparison.csv").read_text().splitlines()
    assert rows[0] == "sampler,step,seconds,temperature,energy,labels,accepted"
    samplers = {r.split(",")[0] for r in rows[1:]}
    assert samplers == {"swc", "gibbs"}
    # The best energy of each run is at or below every energy in its trace.
    for name in ("swc", "gibbs"):
        energies = [float(r.split(",")[4]) for r in rows[1:] if r.startswith(name + ",")]
        assert summary[name]["energy"] <= min(energies) + 1e-6
    assert "lowest energy" in stdout


@pytest.mark.parametrize("argv", [
    ["--samplers", "swc,nope"],
    ["--samplers", ","],
    ["--time-budget", "0"],
    ["--samplers", "multilevel", "--atoms", "slic"],
])
def test_compare_bad_options(argv, tiny_npy, tmp_path, capsys):
    out = tmp_path / "cmp"
    rc, stdout, err = run_cli(capsys, "compare", tiny_npy, "-o", out, *argv)
    assert_one_line_error(rc, err)
    assert_no_output(out)


def test_empty_output_and_dash_file_names_get_clear_errors(small_png, tmp_path, capsys, monkeypatch):
    rc, _, err = run_cli(capsys, "segment", small_png, "-o", "")
    assert_one_line_error(rc, err)
    assert "output folder is empty" in err
    dash = tmp_path / "-photo.png"
    dash.write_bytes(Path(small_png).read_bytes())
    monkeypatch.chdir(tmp_path)
    rc, _, err = run_cli(capsys, "segment", "-photo.png", "-o", "out")
    assert_one_line_error(rc, err)
    assert "./NAME" in err and not (tmp_path / "out").exists()


def test_a_name_too_long_for_the_file_system_is_one_line(tiny_npy, tmp_path, capsys):
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", tmp_path / ("x" * 300), *TINY)
    assert_one_line_error(rc, err)
    assert "too long" in err


def test_an_option_the_sampler_ignores_is_a_warning(tiny_npy, tmp_path, capsys):
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", tmp_path / "out", *TINY, "--levels", "3")
    assert rc == 0
    assert err.startswith("swcuts: warning: --levels applies to the multilevel sampler only")
