"""The output set under pressure (issue 32): an input among the outputs,
extreme options, an output folder on another file system, signals while
the files are written. Each ends in a complete set, or in one line (exit
code 2, 130 or 143 on the command line; InputError from the API) with the
user's files as they were and nothing left beside them.

The command-line cases run in-process (``swcuts.cli.app.main``) on a 24x32
image as tests/test_bad_input.py does; signals go to subprocesses, which
signal themselves at chosen points of the run (no timing).
"""

from __future__ import annotations

import doctest
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace

import imageio.v3 as iio
import numpy as np
import pytest

import swcuts
import swcuts.segmentation.segment
import swcuts.cli.app
from swcuts.cli.app import SEGMENT_OUTPUTS, main
from swcuts.io.errors import InputError
from swcuts.io.output_set import check_signals, refuse_inputs, signals_deferred, write_output_set
from test_bad_input import _must_not_run, no_work  # the start of any work fails the test

ROOT = Path(__file__).resolve().parents[1]
RUN = ["--steps", "60", "--n-atoms", "20", "--no-progress"]
SHM = Path("/dev/shm")


# ---------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """A 24x32 colour PNG with two halves."""
    rng = np.random.default_rng(0)
    img = (rng.random((24, 32, 3)) * 60).astype(np.uint8)
    img[:, 16:] += 150
    path = tmp_path_factory.mktemp("inputs") / "tiny.png"
    iio.imwrite(path, img)
    return path


@pytest.fixture(scope="module")
def earlier(image, tmp_path_factory):
    """The output folder of an earlier, successful run."""
    out = tmp_path_factory.mktemp("earlier") / "out"
    assert main(["segment", str(image), "-o", str(out), "--seed", "1", *RUN]) == 0
    return out


@pytest.fixture
def out(earlier, tmp_path):
    """A copy of the earlier run's output folder, alone in its folder."""
    target = tmp_path / "work" / "out"
    shutil.copytree(earlier, target)
    return target


def snapshot(folder: Path):
    """Every entry under ``folder`` (hidden ones too) with its bytes, or
    the target of a symbolic link."""
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): os.readlink(p) if p.is_symlink() else
            (p.read_bytes() if p.is_file() else "folder") for p in sorted(folder.rglob("*"))}


def refused(capsys, argv, words, *folders, rc=2):
    """``main(argv)`` exits with ``rc`` and one line naming ``words``;
    every folder of ``folders`` is as it was."""
    before = [snapshot(f) for f in folders]
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    assert code == rc, err
    assert err.count("\n") == 1 and err.startswith("swcuts: error: ") and "Traceback" not in err, err
    for word in words:
        assert word.lower() in err.lower(), (word, err)
    assert [snapshot(f) for f in folders] == before
    return err


def photo_folder(tmp_path, image, name):
    """A folder holding the user's photo as ``name`` (its only file)."""
    folder = tmp_path / "photos"
    folder.mkdir()
    if name.endswith(".npy"):
        np.save(folder / name, iio.imread(image))
    else:
        shutil.copy(image, folder / name)
    return folder


# ------------------------------------- 1. an input is one of the outputs
@pytest.mark.parametrize("name, extra", [
    ("overlay.png", []), ("labels.npy", []), ("labels.png", []), ("energy.png", []), ("summary.json", []),
    ("boundary_prob.png", ["--posterior-samples", "4"]), ("labels_level1.npy", ["--sampler", "multilevel"]),
], ids=["overlay", "labels_npy", "labels_png", "energy", "summary", "posterior", "multilevel"])
def test_segment_refuses_an_input_among_its_outputs(image, tmp_path, capsys, monkeypatch, name, extra):
    no_work(monkeypatch)
    photos = photo_folder(tmp_path, image, name)
    refused(capsys, ["segment", photos / name, "-o", photos, *RUN, *extra],
            ["input", name, "overwritten", "-o"], photos)


def test_an_input_not_among_the_outputs_is_fine(image, tmp_path, capsys):
    photos = photo_folder(tmp_path, image, "labels_level1.npy")  # written by multilevel only
    photo = (photos / "labels_level1.npy").read_bytes()
    assert main(["segment", str(photos / "labels_level1.npy"), "-o", str(photos), *RUN]) == 0, \
        capsys.readouterr().err
    assert (photos / "labels_level1.npy").read_bytes() == photo
    assert sorted(os.listdir(photos)) == sorted([*SEGMENT_OUTPUTS, "labels_level1.npy"])


@pytest.mark.parametrize("how", ["spelling", "symlinked_input", "symlinked_output", "symlinked_folder",
                                 "hard_link"])
def test_the_same_file_under_another_name_is_refused(image, tmp_path, capsys, monkeypatch, how):
    no_work(monkeypatch)
    photos = photo_folder(tmp_path, image, "overlay.png")
    target, source = photos, photos / "overlay.png"
    if how == "spelling":
        target = photos / ".." / "photos"
    elif how == "symlinked_input":
        source = tmp_path / "link.png"
        source.symlink_to(photos / "overlay.png")
    elif how == "symlinked_output":  # the output name links to the user's photo elsewhere
        elsewhere = tmp_path / "mine"
        elsewhere.mkdir()
        source = elsewhere / "photo.png"
        (photos / "overlay.png").rename(source)
        (photos / "overlay.png").symlink_to(source)
    elif how == "symlinked_folder":
        target = tmp_path / "folder_link"
        target.symlink_to(photos)
    else:
        source = tmp_path / "hard.png"
        os.link(photos / "overlay.png", source)
    refused(capsys, ["segment", source, "-o", target, *RUN], ["overlay.png", "-o"], photos, tmp_path / "mine")


def test_compare_refuses_an_input_among_its_outputs(image, tmp_path, capsys, monkeypatch):
    no_work(monkeypatch)
    photos = photo_folder(tmp_path, image, "comparison.png")
    refused(capsys, ["compare", photos / "comparison.png", "-o", photos, "--samplers", "swc"],
            ["comparison.png", "overwritten"], photos)


@pytest.mark.parametrize("frame", [0, 1])
def test_motion_refuses_a_frame_among_its_outputs(image, tmp_path, capsys, monkeypatch, frame):
    import swcuts.motion.segment

    monkeypatch.setattr(swcuts.motion.segment, "segment_motion", _must_not_run)
    photos = photo_folder(tmp_path, image, "flow.png")
    frames = [image, photos / "flow.png"][::1 if frame else -1]
    refused(capsys, ["motion", *frames, "-o", photos], ["flow.png", "overwritten"], photos)


@pytest.fixture
def clashing_data(image, tmp_path):
    """A data set in ``out/labels`` whose image ``a__swc__s0.png`` is the
    label file of image ``a``'s swc run: ``benchmark ... -o out`` would
    write over it."""
    data = tmp_path / "out" / "labels"
    data.mkdir(parents=True)
    gt = (np.arange(32)[None, :] >= 16).repeat(24, 0).astype(np.uint8)
    for name in ("a", "a__swc__s0"):
        shutil.copy(image, data / f"{name}.png")
        iio.imwrite(data / f"{name}_gt.png", gt)
    return data


def test_benchmark_refuses_to_write_over_its_data(clashing_data, capsys, monkeypatch):
    from swcuts.evaluation.benchmarking import driver as driver

    monkeypatch.setattr(driver, "run_task", _must_not_run)
    out = clashing_data.parent
    refused(capsys, ["benchmark", clashing_data, "-o", out, "--samplers", "swc", "--peers", "none", "--steps",
                     "10", "--workers", "1", "--no-progress"], ["a__swc__s0.png", "overwritten"], out)
    before = snapshot(out)
    with pytest.raises(InputError, match="a__swc__s0.png"):
        swcuts.benchmark(clashing_data, output=out, samplers=["swc"], peers=[], steps=10, workers=1,
                         progress=False)
    assert snapshot(out) == before


def test_report_refuses_to_write_over_its_results(tmp_path, capsys):
    from swcuts.evaluation.report import build_report

    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "results.csv").write_text("run_id,status\n")
    (bench / "report.html").symlink_to("results.csv")
    refused(capsys, ["report", bench], ["results.csv", "report.html"], bench)
    with pytest.raises(InputError, match="results.csv"):
        build_report(bench)


def test_api_write_output_set_refuses_an_input(tmp_path):
    (tmp_path / "summary.json").write_text("the user's notes")
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as info:
        write_output_set(tmp_path, [("summary.json", lambda p: Path(p).write_text("{}"))],
                         inputs=[tmp_path / "summary.json"])
    assert "\n" not in str(info.value) and "summary.json" in str(info.value)
    assert snapshot(tmp_path) == before
    refuse_inputs(tmp_path / "missing", ["summary.json"], [tmp_path / "summary.json"])  # nothing there yet
    refuse_inputs(tmp_path, ["summary.json"], [tmp_path / "no_such_input.png"])  # reported where read


def test_outputs_doctests():
    import swcuts.io.output_set
    import swcuts.io.figures

    for module in (swcuts.io.output_set, swcuts.io.figures):
        result = doctest.testmod(module, extraglobs={"np": np},
                                 optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0


def test_segment_outputs_names_every_file_a_run_writes(image, tmp_path, capsys):
    from swcuts.cli.app import segment_outputs
    from swcuts.segmentation.options import DEFAULTS

    out = tmp_path / "out"
    assert main(["segment", str(image), "-o", str(out), "--sampler", "multilevel", "--levels", "3",
                 "--steps", "20", "--no-progress"]) == 0, capsys.readouterr().err
    options = dict(sampler="multilevel", levels=3, n_atoms=DEFAULTS["n_atoms"])
    assert sorted(os.listdir(out)) == sorted(segment_outputs(options))


# ------------------------------------------------ 2. extreme option values
@pytest.mark.parametrize("extra", [
    ["--a0", "1e308"], ["--a1", "1e308"], ["--a2", "1e308"],
    ["--a0", "1.7e308", "--a1", "1.7e308", "--a2", "1.7e308"], ["--edge-scale", "1e308"],
    ["--t0", "1e308"], ["--t0", "1e-300", "--t-final", "1e-308"],
    ["--a2", "1e308", "--posterior-samples", "4"],
], ids=["a0", "a1", "a2_inf", "all", "edge_scale", "t0_huge", "t0_tiny", "posterior_inf"])
def test_extreme_options_write_the_complete_set(image, tmp_path, capsys, extra):
    from swcuts.cli.posterior_outputs import POSTERIOR_FILES

    out = tmp_path / "out"
    assert main(["segment", str(image), "-o", str(out), "--seed", "1", *RUN, *extra]) == 0
    _, err = capsys.readouterr()
    assert "not drawn" not in err and "Traceback" not in err, err
    expected = [*SEGMENT_OUTPUTS, *(POSTERIOR_FILES if "--posterior-samples" in extra else ())]
    assert sorted(os.listdir(out)) == sorted(expected)
    for name in expected:
        if name.endswith(".png"):
            assert iio.imread(out / name).size > 0, name
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_a_plot_that_cannot_be_drawn_fails_the_run(image, out, capsys, monkeypatch):
    def broken(trace):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(swcuts.cli.app, "_energy_plot", broken)
    refused(capsys, ["segment", image, "-o", out, *RUN, "--a0", "1e308"],
            ["energy.png cannot be drawn", "no output written"], out.parent)


def test_api_extreme_prior_renders_every_output(tmp_path):
    from swcuts.cli.app import output_files

    img = np.random.default_rng(1).random((24, 32, 3))
    seg = swcuts.segment(img, a0=1e308, a2=1e308, steps=60, n_atoms=20, seed=0)
    files = output_files(seg)
    assert [name for name, _ in files] == list(SEGMENT_OUTPUTS)
    write_output_set(tmp_path / "out", files)
    assert sorted(os.listdir(tmp_path / "out")) == sorted(SEGMENT_OUTPUTS)


def test_api_compare_outputs_draw_any_energy():
    from swcuts.cli.app import _comparison_plot
    from swcuts.io.figures import plottable
    from swcuts.evaluation.report import compare_page

    def run(energy):
        trace = SimpleNamespace(seconds=np.linspace(0, 1, 5), energy=np.asarray(energy, dtype=float))
        return SimpleNamespace(trace=trace, n_labels=2)

    runs = [("swc", run([1.7e308] * 5)), ("gibbs", run([np.inf, 1e308, 1e308, 0.9e308, np.nan]))]
    assert _comparison_plot(runs)[:4] == b"\x89PNG"
    labels = np.zeros((24, 32), int)
    page = compare_page([("swc", labels, {"seconds": [0, 1], "energy": [0.0, 0.0]}, 0.0, 1, 2),
                         ("gibbs", labels, {"seconds": [0, 1], "energy": [np.inf, np.inf]}, np.inf, 1, 2)],
                        np.zeros((24, 32, 3)))
    assert "<table>" in page and "data:image/png;base64" in page
    (a, b), unit, note = plottable([1.0, np.inf], [np.nan, 3.0])
    assert unit == "" and note == "2 of 4 values infinite or NaN, not shown"
    assert plottable([np.inf])[2] == "every value infinite or NaN: nothing to show"


# --------------------------------- 3. an output folder on another file system
def _other_device(tmp_path):
    if not SHM.is_dir() or os.stat(SHM).st_dev == os.stat(tmp_path).st_dev or not os.access(SHM, os.W_OK):
        pytest.skip("no tmpfs at /dev/shm on another device than the temporary folder")
    return Path(tempfile.mkdtemp(prefix="swcuts-test-", dir=SHM))


@pytest.fixture(params=["same_device", "other_device"])
def linked_target(request, tmp_path):
    """A folder (holding an earlier file) and a symbolic link to it."""
    if request.param == "same_device":
        target = tmp_path / "real"
        target.mkdir()
    else:
        target = _other_device(tmp_path)
        request.addfinalizer(lambda: shutil.rmtree(target, ignore_errors=True))
    (target / "labels.png").write_bytes(b"earlier run")
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "out"
    link.symlink_to(target, target_is_directory=True)
    return link, target


def test_segment_into_a_symlinked_folder(image, linked_target, capsys):
    link, target = linked_target
    assert main(["segment", str(image), "-o", str(link), *RUN]) == 0, capsys.readouterr().err
    assert link.is_symlink() and sorted(os.listdir(target)) == sorted(SEGMENT_OUTPUTS)
    assert (target / "labels.png").read_bytes() != b"earlier run"
    assert os.listdir(link.parent) == ["out"]  # no staging folder beside the link
    new = link / "deeper" / "new"  # a folder created through the link
    assert main(["segment", str(image), "-o", str(new), *RUN]) == 0, capsys.readouterr().err
    assert sorted(os.listdir(new)) == sorted(SEGMENT_OUTPUTS) and os.listdir(target / "deeper") == ["new"]


def test_a_failed_write_into_a_symlinked_folder_keeps_it(image, linked_target, capsys, monkeypatch):
    link, target = linked_target

    def fail(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(swcuts.cli.app, "save_npy", fail)
    refused(capsys, ["segment", image, "-o", link, *RUN], ["No space left"], target, link.parent)


def test_api_write_output_set_onto_another_device(tmp_path):
    target = _other_device(tmp_path)
    try:
        link = tmp_path / "out"
        link.symlink_to(target, target_is_directory=True)
        files = [(name, lambda p, name=name: Path(p).write_text(name)) for name in ("a.txt", "b.txt")]
        assert write_output_set(link, files) == [link / "a.txt", link / "b.txt"]
        assert sorted(os.listdir(target)) == ["a.txt", "b.txt"] and (target / "b.txt").read_text() == "b.txt"
        assert sorted(os.listdir(tmp_path)) == ["out"]
    finally:
        shutil.rmtree(target, ignore_errors=True)


# ------------------------------------------------- 4. signals while writing
#: ``swcuts`` that sends itself ``SIG`` at a point of the run: argv[1] the
#: point, argv[2] the signal; the rest is the command line.
SIGNAL_AT = r"""
import os, signal, sys
point, sig = sys.argv[1], getattr(signal, sys.argv[2])
def hit():
    os.kill(os.getpid(), sig)
from imageio.core import v3_plugin_api
import swcuts.cli.app as cli
import swcuts.io.output_set as outputs
real_init, real_plot, real_bytes = v3_plugin_api.PluginV3.__init__, cli._energy_plot, cli._write_bytes
writes = [0]
def init(self, request):  # inside the image reader: before Pillow's plugin is complete
    real_init(self, request)
    if request.mode.io_mode == "r" and point == "read":
        hit()
v3_plugin_api.PluginV3.__init__ = init
import swcuts.io.image_write as image_write
real_atomic = image_write.atomic_write
def atomic(path, write_fn):  # inside the PNG writer, the file half-written
    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(b"\x89PNG")
        writes[0] += 1
        if point == f"writer{writes[0]}":
            hit()
        write_fn(tmp)
    return real_atomic(path, write)
image_write.atomic_write = atomic
def plot(trace):
    if point == "render":
        hit()
    return real_plot(trace)
cli._energy_plot = plot
def write_bytes(path, data):
    real_bytes(path, data)
    if point == "after_csv" and path.name == "trace.csv":
        hit()
cli._write_bytes = write_bytes
from swcuts.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize("point, sig", [
    ("read", "SIGTERM"), ("render", "SIGTERM"), ("writer1", "SIGTERM"), ("writer3", "SIGTERM"),
    ("after_csv", "SIGTERM"), ("writer2", "SIGINT"),
])
def test_a_signal_while_writing_ends_the_run_in_one_line(image, out, point, sig):
    before = snapshot(out)
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AT, point, sig, "segment", str(image), "-o", str(out),
                           "--seed", "3", *RUN], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    expected = {"SIGTERM": (143, "swcuts: terminated\n"), "SIGINT": (130, "swcuts: interrupted\n")}[sig]
    assert (proc.returncode, proc.stderr) == expected
    assert snapshot(out) == before
    assert os.listdir(out.parent) == ["out"]  # no staging folder


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers are set in the main thread only")
def test_api_a_signal_is_deferred_to_a_safe_point(tmp_path):
    class Stop(Exception):
        pass

    def stop(signum, frame):
        raise Stop

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            seen = sum(range(1000))  # bytecodes: the handler would have run by now
            with pytest.raises(Stop):
                check_signals()
        assert seen == 499500

        def write(path):
            Path(path).write_text("x")
            os.kill(os.getpid(), signal.SIGTERM)

        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "a.txt").write_text("earlier")
        with pytest.raises(Stop):
            write_output_set(tmp_path / "out", [("a.txt", write), ("b.txt", write)])
        assert os.listdir(tmp_path / "out") == ["a.txt"] and (tmp_path / "out" / "a.txt").read_text() == "earlier"
        assert signal.getsignal(signal.SIGTERM) is stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_api_a_default_handler_still_ends_the_process_after_clean_up(tmp_path):
    """With SIGTERM at its default, the process still ends by the signal,
    after the staged files are removed."""
    code = ("import os, signal, sys\n"
            "from pathlib import Path\n"
            "from swcuts.io.output_set import write_output_set\n"
            "def write(path):\n"
            "    Path(path).write_text('x')\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "write_output_set(sys.argv[1], [('a.txt', write), ('b.txt', write)])\n"
            "print('not reached')\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("earlier")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == -signal.SIGTERM and proc.stdout == "" and proc.stderr == ""
    assert os.listdir(out) == ["a.txt"] and (out / "a.txt").read_text() == "earlier"
    assert os.listdir(tmp_path) == ["out"]
