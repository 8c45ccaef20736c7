"""End-to-end tests of the CLI on bad input (exit 2, one line, no traceback,
no output; output folders; memory; signals and failed writes) and of
``swcuts compare``. Successful ``swcuts segment`` runs are in test_cli.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

import swcuts
import swcuts.io.memory
import swcuts.segmentation.segment

import test_cli
from test_cli import (
    FAST,
    FIG7,
    OUTPUTS,
    TINY,
    assert_no_output,
    assert_one_line_error,
    run_cli,
)

small_png, tiny_npy = test_cli.small_png, test_cli.tiny_npy  # the fixtures, shared

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


def _disk_full_at_energy_png(monkeypatch, cli):
    """Make the CLI's writes fail with "No space left on device" at energy.png."""
    real = cli._write_bytes

    def failing(path, data):
        if Path(path).name == "energy.png":
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(cli, "_write_bytes", failing)


def test_failed_rerun_keeps_the_earlier_outputs(tiny_npy, tmp_path, capsys, monkeypatch):
    """A re-run that fails while writing leaves the earlier run's files as they were."""
    from swcuts.cli import app as cli

    out = tmp_path / "out"
    rc, _, err = run_cli(capsys, "segment", tiny_npy, "-o", out, *TINY)
    assert rc == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _disk_full_at_energy_png(monkeypatch, cli)
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
                           "--steps", "10"], env=env, capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    proc = subprocess.Popen([sys.executable, "-c", SAMPLE_MARKED, str(marker), *args, "-o", str(out),
                             "--steps", "100000000"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Generous ceilings (a loaded machine took over 60 s); a hang still fails.
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err
    assert err == "swcuts: terminated\n"
    assert sorted(os.listdir(tmp_path)) == ["out"] and os.listdir(out) == ["labels.png"]
    assert (out / "labels.png").read_bytes() == b"earlier run"


def _finaliser_signalling(signum):
    """An object whose ``__del__`` sends ``signum`` to this process: the
    handler then runs inside the finaliser, as when a SIGTERM comes while
    llvmlite frees a compiler object during a numba compile."""
    class Finalised:
        def __del__(self):
            os.kill(os.getpid(), signum)
            sum(range(1000))  # a few bytecodes: the handler runs here

    return Finalised()


@pytest.mark.parametrize("handler, ends", [("cli", True), ("plain raise", False)])
def test_sigterm_in_a_finaliser_still_ends_the_run(handler, ends):
    """Raised inside a ``__del__``, Terminated would be printed and dropped
    and the run would go on (a CLI run sampled on after its SIGTERM); the
    handler signals again once the finaliser has returned. Negative
    control: a handler that only raises loses the signal."""
    import signal
    import threading
    import time

    from swcuts.cli import app as cli

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers run in the main thread only")

    def plain(signum, frame):
        raise cli.Terminated

    previous = signal.signal(signal.SIGTERM, cli._terminate if handler == "cli" else plain)
    ended = False
    try:
        obj = _finaliser_signalling(signal.SIGTERM)
        del obj
        deadline = time.monotonic() + (60 if ends else 1)
        while time.monotonic() < deadline:
            time.sleep(0.01)
    except cli.Terminated:
        ended = True
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert ended == ends


def test_failed_write_leaves_no_files(tiny_npy, tmp_path, capsys, monkeypatch):
    """If writing fails half way, the files already written are removed again."""
    from swcuts.cli import app as cli

    _disk_full_at_energy_png(monkeypatch, cli)
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
