"""A battery of bad input (issue 16): every case a user can cause ends in
one line that names the problem, exit code 2 on the command line (or a
specific exception from the API), and leaves the output folder as it was.

The command-line cases run in-process (``swcuts.cli.app.main``) on a 24x32
image; each starts from a copy of an earlier run's output folder and
checks that every one of its files is unchanged and nothing was added
beside it. The API cases, what is said rather than refused, and signals
(sent to subprocesses) are in test_bad_input_api.py.
"""

from __future__ import annotations

import errno
import os
import shutil
import struct
import zlib
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

import swcuts
import swcuts.cli.app
import swcuts.io.memory
from swcuts.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
RUN = ["--steps", "60", "--n-atoms", "20", "--no-progress"]
UNTIMED = RUN[2:]  # for --time-budget cases
LONG = "x" * 300


# ---------------------------------------------------------------- fixtures
def _png_header(w, h, bit_depth=8, colour_type=0):
    """A PNG whose header says w x h pixels (its data is a stub): enough for
    a reader that checks the size before decoding."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, colour_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
            + chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Every input file of the battery, good and bad, made once."""
    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    img = (rng.random((24, 32, 3)) * 60).astype(np.uint8)
    img[:, 16:] += 150
    f = {"img": d / "tiny.png"}
    iio.imwrite(f["img"], img)
    f["dash"] = d / "-dash.png"
    shutil.copy(f["img"], f["dash"])
    f["small"] = d / "small.npy"
    np.save(f["small"], img[:4, :6, 0])
    f["empty"] = d / "empty.png"
    f["empty"].write_bytes(b"")
    f["noise"] = d / "noise.png"
    f["noise"].write_bytes(bytes(rng.integers(0, 256, 500, dtype=np.uint8)))
    f["text"] = d / "notes.jpg"
    f["text"].write_text("not a picture\n")
    f["truncated"] = d / "truncated.png"
    f["truncated"].write_bytes(f["img"].read_bytes()[:120])
    f["fake_npy"] = d / "fake.npy"
    f["fake_npy"].write_bytes(b"just some bytes, no header")
    f["strings"] = d / "strings.npy"
    np.save(f["strings"], np.array([["a", "b"], ["c", "d"]]))
    f["objects"] = d / "objects.npy"
    np.save(f["objects"], np.array([[{}, {}], [{}, {}]], dtype=object), allow_pickle=True)
    f["line"] = d / "line.npy"
    np.save(f["line"], np.arange(10.0))
    f["cube"] = d / "cube.npy"
    np.save(f["cube"], np.zeros((2, 3, 24, 32)))
    f["nan"] = d / "nan.npy"
    np.save(f["nan"], np.full((24, 32), np.nan))
    f["inf"] = d / "inf.npy"
    np.save(f["inf"], np.where(np.eye(24, 32) > 0, np.inf, 0.5))
    f["thin"] = d / "thin.npy"
    np.save(f["thin"], np.zeros((1, 32)))
    f["seven"] = d / "seven.npy"
    np.save(f["seven"], np.zeros((24, 32, 7)))
    f["complex"] = d / "complex.npy"
    np.save(f["complex"], np.zeros((24, 32), np.complex128))
    f["huge"] = d / "huge.png"
    f["huge"].write_bytes(_png_header(20000, 15000))
    f["huge16"] = d / "huge16.png"
    f["huge16"].write_bytes(_png_header(20000, 15000, bit_depth=16, colour_type=2))
    f["data"] = d / "data"
    f["data"].mkdir()
    iio.imwrite(f["data"] / "a.png", img)
    iio.imwrite(f["data"] / "a_gt.png", (np.arange(32)[None, :] >= 16).repeat(24, 0).astype(np.uint8))
    f["big_tiff"] = d / "big.tif"
    import tifffile

    tifffile.imwrite(f["big_tiff"], np.zeros((2000, 3000), np.uint8))
    f["huge_npy"] = d / "huge.npy"
    with open(f["huge_npy"], "wb") as fh:  # the header of a 20000x15000 image, no data
        np.lib.format.write_array_header_1_0(fh, {"descr": "|u1", "fortran_order": False,
                                                  "shape": (15000, 20000)})
    f["dir"] = d / "folder.png"
    f["dir"].mkdir()
    f["file"] = d / "a_file"
    f["file"].write_text("x")
    return f


@pytest.fixture(scope="module")
def earlier(files, tmp_path_factory):
    """The output folder of an earlier, successful run."""
    out = tmp_path_factory.mktemp("earlier") / "out"
    assert main(["segment", str(files["img"]), "-o", str(out), "--seed", "1", *RUN]) == 0
    return out


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` with its bytes (None if there is no folder)."""
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def out(earlier, tmp_path):
    """A copy of the earlier run's output folder, in a folder of its own."""
    target = tmp_path / "work" / "out"
    shutil.copytree(earlier, target)
    return target


def assert_refused(capsys, argv, words, out, rc=2, quiet=True):
    """``main(argv)`` exits with ``rc`` and one line naming ``words``; the
    output folder ``out`` holds exactly what it held before, and nothing
    (no staging folder, no temporary file) is left beside it."""
    before = snapshot(out)
    siblings = sorted(os.listdir(out.parent)) if out.parent.exists() else None
    code = main([str(a) for a in argv])
    stdout, err = capsys.readouterr()
    assert code == rc, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("swcuts: error: ") and "Traceback" not in err, err
    for word in words:
        assert word.lower() in err.lower(), (word, err)
    assert stdout == "" or not quiet
    assert snapshot(out) == before
    if siblings is not None:
        assert sorted(os.listdir(out.parent)) == siblings
    return err


# ------------------------------------------------- command line: bad options
OPTION_CASES = {
    "steps_zero": (["--steps", "0"], ["steps"]),
    "steps_negative": (["--steps", "-5"], ["steps"]),
    "steps_text": (["--steps", "many"], ["expected an integer", "many"]),
    "steps_cost": (["--steps", str(10**15)], ["steps=", "trace", "at most"]),
    "time_zero": (["--time-budget", "0"], ["time_budget"]),
    "time_inf": (["--time-budget", "inf"], ["time_budget"]),
    "time_nan": (["--time-budget", "nan"], ["time_budget"]),
    "time_cost": (["--time-budget", "1e9"], ["time_budget", "days", "steps"]),
    "steps_and_time": (["--steps", "10", "--time-budget", "1"], ["either steps or time_budget"]),
    "sampler": (["--sampler", "nope"], ["unknown sampler", "nope"]),
    "atoms": (["--atoms", "nope"], ["unknown atoms", "nope"]),
    "n_atoms_zero": (["--n-atoms", "0"], ["n_atoms"]),
    "n_atoms_negative": (["--n-atoms", "-3"], ["n_atoms"]),
    "n_atoms_float": (["--n-atoms", "1.5"], ["expected an integer"]),
    "seed_negative": (["--seed", "-1"], ["seed"]),
    "seed_text": (["--seed", "x"], ["expected an integer"]),
    "t0_zero": (["--t0", "0"], ["t0"]),
    "t0_nan": (["--t0", "nan"], ["t0"]),
    "t_final_above_t0": (["--t-final", "100"], ["t_final", "t0"]),
    "edge_scale_zero": (["--edge-scale", "0"], ["edge_scale"]),
    "edge_scale_inf": (["--edge-scale", "inf"], ["edge_scale"]),
    "a0_negative": (["--a0", "-1"], ["a0"]),
    "a1_nan": (["--a1", "nan"], ["a1"]),
    "a2_negative": (["--a2", "-2"], ["a2"]),
    "a0_text": (["--a0", "lots"], ["expected a number"]),
    "init": (["--init", "nope"], ["unknown init"]),
    "init_atoms_swc": (["--init", "atoms"], ["init='atoms'"]),
    "init_random_multilevel": (["--sampler", "multilevel", "--init", "random"], ["init='random'"]),
    "model": (["--model", "nope"], ["unknown model"]),
    "levels_zero": (["--sampler", "multilevel", "--levels", "0"], ["levels"]),
    "levels_huge": (["--sampler", "multilevel", "--levels", "1000000"], ["levels must be at most 8"]),
    "window_zero": (["--sampler", "multigrid", "--window-sizes", "0"], ["window sizes"]),
    "window_text": (["--sampler", "multigrid", "--window-sizes", "a,b"], ["expected integers"]),
    "window_swc": (["--window-sizes", "8"], ["window_sizes", "swc"]),
    "window_too_big": (["--sampler", "multigrid", "--window-sizes", "1000"], ["larger than", "24x32"]),
    "window_count": (["--sampler", "multigrid", "--window-sizes", ",".join(["2"] * 65)], ["at most 64"]),
    "multilevel_slic": (["--sampler", "multilevel", "--atoms", "slic"], ["atoms='pixels'"]),
    "unknown_option": (["--bins", "5"], ["unrecognized arguments", "--bins"]),
}


@pytest.mark.parametrize("extra, words", OPTION_CASES.values(), ids=OPTION_CASES.keys())
def test_segment_option(files, out, capsys, monkeypatch, extra, words):
    no_work(monkeypatch)
    base = UNTIMED if "--time-budget" in extra else RUN
    assert_refused(capsys, ["segment", files["img"], "-o", out, *base, *extra], words, out)


def _must_not_run(*args, **kwargs):
    raise AssertionError("work started although the input should have been refused")


def no_work(monkeypatch):
    """Make the start of any work (atoms, a posterior, sampling) fail the test."""
    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", _must_not_run)
    for name in ("build_posterior", "multigrid_from_atoms"):
        monkeypatch.setattr(swcuts.segmentation.segment, name, _must_not_run)


# --------------------------------------------------- command line: bad files
FILE_CASES = {
    "missing": ("tiny_missing.png", ["does not exist"]),
    "directory": ("dir", ["is a directory"]),
    "empty": ("empty", ["empty"]),
    "noise": ("noise", ["not an image file"]),
    "text_as_jpeg": ("text", ["not an image file", "notes.jpg"]),
    "truncated": ("truncated", ["not an image file", "truncated.png"]),
    "npy_name_only": ("fake_npy", ["not a NumPy .npy file"]),
    "npy_strings": ("strings", ["not pixel values"]),
    "npy_objects": ("objects", ["not an image file"]),
    "npy_complex": ("complex", ["complex128"]),
    "one_dimension": ("line", ["1 dimensions"]),
    "four_dimensions": ("cube", ["4 dimensions"]),
    "nan": ("nan", ["NaN"]),
    "inf": ("inf", ["infinite"]),
    "one_pixel_high": ("thin", ["1x32", "2x2"]),
    "seven_channels": ("seven", ["7 channels"]),
    "huge_png": ("huge", ["15000x20000", "too large", "GB", "megapixels", "fit"]),
    "huge_16bit_png": ("huge16", ["15000x20000", "too large", "megapixels"]),
    "long_name": (LONG + ".png", ["File name too long"]),
    "big_tiff": ("big_tiff", ["2000x3000", "too large", "megapixels"]),
    "huge_npy": ("huge_npy", ["15000x20000", "too large", "megapixels"]),
}


@pytest.mark.parametrize("name, words", FILE_CASES.values(), ids=FILE_CASES.keys())
def test_segment_file(files, out, capsys, monkeypatch, name, words):
    # 20 GB, and 1 GB for the TIFF (so that the test writes only 6 MB).
    memory = 10**9 if name == "big_tiff" else 20 * 10**9
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: memory)
    path = files[name] if name in files else files["img"].parent / name
    assert_refused(capsys, ["segment", path, "-o", out, *RUN], words, out)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_a_pipe_is_refused_not_waited_for(out, capsys, tmp_path):
    os.mkfifo(tmp_path / "pipe.png")  # opening it would wait for a writer
    assert_refused(capsys, ["segment", tmp_path / "pipe.png", "-o", out, *RUN], ["not a regular file"], out)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused(out, capsys):
    assert_refused(capsys, ["segment", "/dev/zero", "-o", out, *RUN], ["not a regular file"], out)


def test_file_name_starting_with_a_dash(files, out, capsys, monkeypatch):
    monkeypatch.chdir(files["dash"].parent)
    assert_refused(capsys, ["segment", "-dash.png", "-o", out, *RUN], ["./NAME"], out)
    assert main(["segment", "-o", str(out.parent / "dash"), *RUN, "--", "-dash.png"]) == 0
    capsys.readouterr()


# ----------------------------------------- command line: bad output folders
def test_output_empty(files, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("", "   "):
        assert_refused(capsys, ["segment", files["img"], "-o", name, *RUN], ["output folder is empty"],
                       tmp_path / "never")
    assert os.listdir(tmp_path) == []


def test_output_is_a_file(files, capsys):
    assert_refused(capsys, ["segment", files["img"], "-o", files["file"], *RUN], ["not a directory"],
                   files["file"].parent / "never")


def test_output_inside_a_file(files, capsys):
    assert_refused(capsys, ["segment", files["img"], "-o", files["file"] / "sub", *RUN],
                   ["not a directory"], files["file"].parent / "never")


def test_output_name_too_long(files, out, capsys):
    assert_refused(capsys, ["segment", files["img"], "-o", out.parent / LONG, *RUN],
                   ["File name too long"], out)


def test_output_name_just_short_enough(files, tmp_path, capsys):
    # 240 characters: a valid name, although its staging folder's could not be.
    target = tmp_path / ("y" * 240)
    assert main(["segment", str(files["img"]), "-o", str(target), *RUN]) == 0, capsys.readouterr()[1]
    capsys.readouterr()
    assert (target / "labels.png").is_file() and os.listdir(tmp_path) == [target.name]


def test_output_folder_not_writable(files, out, capsys, monkeypatch):
    # As root every folder is writable: the check sees what a user would.
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == out else real(p, mode, **kw))
    assert_refused(capsys, ["segment", files["img"], "-o", out, *RUN], ["not writable", "out"], out)


def _unreadable(monkeypatch, folder):
    """os.stat fails in ``folder`` as it does in a folder the user cannot read."""
    real = os.stat

    def stat(p, *args, **kwargs):
        if str(folder) in os.fspath(p) and os.fspath(p) != str(folder):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
        return real(p, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)


def test_image_in_an_unreadable_folder(files, out, capsys, monkeypatch, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    shutil.copy(files["img"], locked / "tiny.png")
    _unreadable(monkeypatch, locked)
    assert_refused(capsys, ["segment", locked / "tiny.png", "-o", out, *RUN], ["Permission denied"], out)


def test_output_in_an_unreadable_folder(files, capsys, monkeypatch, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    _unreadable(monkeypatch, locked)
    assert_refused(capsys, ["segment", files["img"], "-o", locked / "a" / "out", *RUN], ["Permission denied"],
                   tmp_path / "never")
    monkeypatch.undo()
    assert os.listdir(locked) == []


def test_output_file_taken_by_a_folder(files, out, capsys, monkeypatch):
    (out / "energy.png").unlink()
    (out / "energy.png").mkdir()
    no_work(monkeypatch)
    assert_refused(capsys, ["segment", files["img"], "-o", out, *RUN], ["energy.png", "is a directory"], out)


# ------------------------------------------- command line: what options cost
def test_atoms_beyond_memory(files, out, capsys, monkeypatch):
    from swcuts.segmentation.costs import run_cost

    few = run_cost((24, 32), n_atoms=20)["total"]
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: few + 50_000)
    err = assert_refused(capsys, ["segment", files["img"], "-o", out, "--steps", "60", "--n-atoms", "700"],
                         ["n_atoms=700", "GB", "at most"], out)
    fit = int(err.split("at most ")[1].split()[0])
    assert 20 <= fit < 700


def test_pixels_beyond_memory(files, out, capsys, monkeypatch):
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: 100_000)
    assert_refused(capsys, ["segment", files["img"], "-o", out, *RUN, "--sampler", "split-merge",
                            "--atoms", "pixels"], ["24x32", "GB", "megapixels", "downscale"], out)


def test_levels_beyond_what_the_image_holds(files, out, capsys):
    assert_refused(capsys, ["segment", files["small"], "-o", out, *RUN, "--sampler", "multilevel",
                            "--levels", "6"], ["levels=6", "4x6", "at most 4"], out)


def test_out_of_memory_during_the_run(files, out, capsys, monkeypatch):
    def oom(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(swcuts.cli.app, "segment", oom)
    assert_refused(capsys, ["segment", files["img"], "-o", out, *RUN], ["out of memory"], out)


# ------------------------------- command line: failures while writing outputs
@pytest.mark.parametrize("name, error, words", [
    ("labels.npy", OSError("26600 requested and 14304 written"), ["No space left on device"]),
    ("overlay.png", OSError(errno.EIO, "Input/output error"), ["Input/output error"]),
    ("summary.json", OSError(errno.EDQUOT, "Disk quota exceeded"), ["Disk quota exceeded"]),
], ids=["disk_full", "io_error", "quota"])
def test_a_failed_write_keeps_the_earlier_run(files, out, capsys, monkeypatch, name, error, words):
    real = swcuts.cli.app.write_output_set

    def failing(outdir, outputs):
        def fail(path):
            raise error

        return real(outdir, [(n, fail if n == name else w) for n, w in outputs])

    monkeypatch.setattr(swcuts.cli.app, "write_output_set", failing)
    assert_refused(capsys, ["segment", files["img"], "-o", out, "--seed", "2", *RUN], words, out)


def test_a_failed_write_into_a_new_folder_creates_nothing(files, out, capsys, monkeypatch):
    def fail(path, *args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(swcuts.cli.app, "save_rgb_png", fail)
    target = out.parent / "new" / "deeper"
    assert_refused(capsys, ["segment", files["img"], "-o", target, *RUN], ["No space left"], out)
    assert not (out.parent / "new").exists()


# ------------------------------------------------------ command line: compare
COMPARE_CASES = {
    "sampler": (["--samplers", "swc,nope"], ["unknown sampler", "nope"]),
    "no_samplers": (["--samplers", ","], ["sampler names"]),
    "time_zero": (["--time-budget", "0"], ["time_budget"]),
    "time_inf": (["--time-budget", "inf"], ["time_budget"]),
    "time_cost": (["--time-budget", "1e9"], ["time_budget", "days"]),
    "seed": (["--seed", "-4"], ["seed"]),
    "atoms": (["--atoms", "nope"], ["unknown atoms"]),
    "n_atoms": (["--n-atoms", "0"], ["n_atoms"]),
    "multilevel_slic": (["--samplers", "swc,multilevel", "--atoms", "slic"], ["atoms='pixels'"]),
}


@pytest.mark.parametrize("extra, words", COMPARE_CASES.values(), ids=COMPARE_CASES.keys())
def test_compare_option(files, out, capsys, monkeypatch, extra, words):
    no_work(monkeypatch)
    assert_refused(capsys, ["compare", files["img"], "-o", out, *extra], words, out)


@pytest.mark.parametrize("name, words", [("noise", ["not an image file"]), ("missing.png", ["does not exist"]),
                                         ("huge", ["too large"])], ids=["noise", "missing", "huge"])
def test_compare_file(files, out, capsys, monkeypatch, name, words):
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: 20 * 10**9)
    path = files[name] if name in files else files["img"].parent / name
    assert_refused(capsys, ["compare", path, "-o", out, "--samplers", "swc"], words, out)


def test_compare_output_is_a_file(files, capsys):
    assert_refused(capsys, ["compare", files["img"], "-o", files["file"], "--samplers", "swc"],
                   ["not a directory"], files["file"].parent / "never")


def test_compare_failed_write_keeps_the_earlier_run(files, out, capsys, monkeypatch):
    def fail(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(swcuts.cli.app, "_write_bytes", fail)
    assert_refused(capsys, ["compare", files["img"], "-o", out, "--samplers", "swc", "--time-budget", "1.5",
                            "--n-atoms", "20"], ["No space left"], out, quiet=False)


# ------------------------------------------------- command line: benchmark, report
BENCHMARK_CASES = {
    "missing": (["missing"], [], ["does not exist"]),
    "a_file": (["img"], [], ["not a folder"]),
    "no_layout": (["dir"], [], ["matches no data set layout"]),
    "steps_zero": (["data"], ["--steps", "0"], ["steps"]),
    "steps_cost": (["data"], ["--steps", str(10**15)], ["steps=", "trace"]),
    "time_inf": (["data"], ["--time-budget", "inf"], ["time_budget"]),
    "time_cost": (["data"], ["--time-budget", "1e9"], ["time_budget", "days"]),
    "sampler": (["data"], ["--samplers", "nope"], ["unknown sampler"]),
    "peer": (["data"], ["--peers", "nope"], ["unknown peer"]),
    "seed": (["data"], ["--seeds", "-1"], ["seeds"]),
    "limit": (["data"], ["--limit", "0"], ["limit"]),
    "workers": (["data"], ["--workers", "0"], ["workers"]),
    "workers_many": (["data"], ["--workers", "100000"], ["at most"]),
    "grid_name": (["data"], ["--grid", "foo=1"], ["grid option 'foo'"]),
    "grid_form": (["data"], ["--grid", "a0"], ["NAME=V1,V2"]),
    "grid_bins": (["data"], ["--grid", "bins=100000"], ["bins must be at most 1024"]),
    "split": (["data"], ["--split", "nope"], ["split"]),
}


@pytest.mark.parametrize("data, extra, words", BENCHMARK_CASES.values(), ids=BENCHMARK_CASES.keys())
def test_benchmark_option(files, tmp_path, capsys, monkeypatch, data, extra, words):
    no_work(monkeypatch)
    path = files[data[0]] if data[0] in files else tmp_path / data[0]
    budget = [] if "--steps" in extra or "--time-budget" in extra else ["--steps", "10"]
    assert_refused(capsys, ["benchmark", path, "-o", tmp_path / "bench", "--no-progress", *budget, *extra],
                   words, tmp_path / "bench")
    assert not (tmp_path / "bench").exists()


def test_report_without_results(files, capsys):
    assert_refused(capsys, ["report", files["data"]], ["no results.csv"], files["data"] / "never")
