"""Bad input through the API (segment, cluster), what is said rather than
refused, and signals (issue 16): one line naming the problem, a specific
exception, outputs left as they were. The command-line cases are in
test_bad_input.py."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import swcuts
import swcuts.cli.app
import swcuts.io.memory
from swcuts.cli.app import main
from swcuts.io.errors import InputError

import test_bad_input
from test_bad_input import ROOT, RUN, _must_not_run, snapshot

files, earlier, out = test_bad_input.files, test_bad_input.earlier, test_bad_input.out  # the fixtures, shared

# ------------------------------------------------------------- API: segment
IMG = np.random.default_rng(1).random((24, 32, 3))
API_CASES = {
    "path": (dict(image="tiny.png"), TypeError, "load_image"),
    "objects": (dict(image=np.array([[object()] * 3] * 3)), TypeError, "dtype"),
    "one_dimension": (dict(image=np.zeros(10)), InputError, "1 dimensions"),
    "four_dimensions": (dict(image=np.zeros((2, 2, 24, 32))), InputError, "4 dimensions"),
    "one_pixel_wide": (dict(image=np.zeros((24, 1))), InputError, "2x2"),
    "nan": (dict(image=np.full((24, 32), np.nan)), InputError, "NaN"),
    "seven_channels": (dict(image=np.zeros((24, 32, 7))), InputError, "7 channels"),
    "channel_axis_float": (dict(channel_axis=1.5), InputError, "channel_axis"),
    "channel_axis_range": (dict(channel_axis=5), InputError, "out of range"),
    "channel_axis_none": (dict(channel_axis=None), InputError, "channel_axis=None"),
    "sampler_type": (dict(sampler=3), TypeError, "sampler must be a string"),
    "bins_one": (dict(bins=1), InputError, "bins"),
    "bins_huge": (dict(bins=10**6), InputError, "bins must be at most 1024"),
    "bins_float": (dict(bins=1.5), TypeError, "bins must be an integer"),
    "levels_zero": (dict(sampler="multilevel", levels=0), InputError, "levels"),
    "levels_huge": (dict(sampler="multilevel", levels=10**6), InputError, "levels must be at most 8"),
    "levels_image": (dict(image=np.zeros((4, 6)), sampler="multilevel", levels=6), InputError,
                     "levels=6 is more than a 4x6 image can hold"),
    "n_atoms_bool": (dict(n_atoms=True), TypeError, "n_atoms"),
    "seed_text": (dict(seed="x"), TypeError, "seed"),
    "seed_negative": (dict(seed=-1), InputError, "seed"),
    "time_inf": (dict(steps=None, time_budget=math.inf), InputError, "time_budget"),
    "time_cost": (dict(steps=None, time_budget=1e9), InputError, "days"),
    "steps_cost": (dict(steps=10**15), InputError, "for its trace"),
    "windows_empty": (dict(sampler="multigrid", window_sizes=[]), InputError, "at least one"),
    "windows_float": (dict(sampler="multigrid", window_sizes=[1.5]), TypeError, "integers"),
    "windows_count": (dict(sampler="multigrid", window_sizes=[2] * 65), InputError, "at most 64"),
    "windows_big": (dict(sampler="multigrid", window_sizes=[100]), InputError, "larger than"),
    "a0_nan": (dict(a0=math.nan), InputError, "a0"),
    "kappa_negative": (dict(kappa=-1.0), InputError, "kappa"),
    "q_max_one": (dict(q_max=1.0), InputError, "q_max"),
    "huge_array": (dict(image=np.broadcast_to(np.float64(0.5), (10**5, 10**5))), InputError, "megapixels"),
}


@pytest.mark.parametrize("kwargs, exc, text", API_CASES.values(), ids=API_CASES.keys())
def test_segment_api(kwargs, exc, text, monkeypatch):
    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", _must_not_run)
    kwargs = {"image": IMG, "steps": 20, **kwargs}
    with pytest.raises(exc) as info:
        swcuts.segment(**kwargs)
    assert "\n" not in str(info.value) and text in str(info.value), str(info.value)


@pytest.mark.parametrize("kwargs, budget, words", [
    (dict(sampler="split-merge", atoms="pixels", bins=1024), 60 * 10**6, ["bins=1024", "GB", "at most"]),
    (dict(sampler="multilevel", levels=8), None, ["levels=8", "at most"]),
    (dict(n_atoms=700), None, ["n_atoms=700", "at most"]),
    (dict(atoms="pixels", sampler="split-merge"), 100_000, ["image of 24x32", "megapixels", "downscale"]),
], ids=["bins", "levels", "n_atoms", "image"])
def test_segment_api_cost(kwargs, budget, words, monkeypatch):
    """Each option that multiplies memory is refused by its own estimate,
    naming the option and what fits."""
    from swcuts.segmentation.costs import run_cost

    if budget is None:  # just below the estimate, above the default's
        budget = (run_cost((24, 32), **kwargs)["total"] + run_cost((24, 32), sampler=kwargs.get("sampler", "swc"),
                                                                  n_atoms=20, levels=1)["total"]) // 2
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: budget)
    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", _must_not_run)
    monkeypatch.setattr(swcuts.segmentation.segment, "prepare_image", _must_not_run)
    with pytest.raises(InputError) as info:
        swcuts.segment(IMG, steps=20, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_energy_label_count_beyond_memory(monkeypatch):
    from swcuts.segmentation.costs import run_cost

    labels = np.arange(24 * 32).reshape(24, 32)
    need = run_cost((24, 32), sampler="multigrid", atoms="pixels", n_labels=labels.size)["total"]
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: need - 100_000)
    with pytest.raises(InputError, match=r"768 labels .* at most \d+ labels fit"):
        swcuts.energy(IMG, labels)


# ------------------------------------------------------------- API: cluster
DATA = np.random.default_rng(2).normal(size=(20, 2))
CLUSTER_CASES = {
    "time_inf": (dict(time_budget=math.inf), InputError, "time_budget"),
    "time_zero": (dict(time_budget=0), InputError, "time_budget"),
    "time_cost": (dict(time_budget=1e9), InputError, "days"),
    "steps_zero": (dict(steps=0), InputError, "steps"),
    "steps_float": (dict(steps=1.5), TypeError, "steps must be an integer"),
    "steps_cost": (dict(steps=10**15), InputError, "for its trace"),
    "both": (dict(steps=5, time_budget=1.0), InputError, "either steps or time_budget"),
    "seed_negative": (dict(seed=-1), InputError, "seed"),
    "seed_float": (dict(seed=1.5), TypeError, "seed"),
    "alpha_zero": (dict(alpha=0), InputError, "alpha"),
    "alpha_nan": (dict(alpha=math.nan), InputError, "alpha"),
    "alpha_huge": (dict(alpha=1e308), InputError, "alpha"),
    "data_nan": (dict(data=np.full((5, 2), np.nan)), InputError, "NaN"),
    "data_huge": (dict(data=DATA * 1e200), InputError, "too large"),
    "data_3d": (dict(data=np.zeros((3, 2, 2))), InputError, "2-D"),
    "data_empty": (dict(data=np.zeros((0, 2))), InputError, "at least 2"),
    "data_text": (dict(data=np.array([["a", "b"]] * 3)), InputError, "numeric"),
    "data_memory": (dict(data=np.broadcast_to(np.float64(0.5), (10**7, 10**3))), InputError, "items fit"),
    "sampler_image": (dict(sampler="swc"), InputError, "needs an image graph"),
    "sampler_unknown": (dict(sampler="nope"), InputError, "unknown sampler"),
    "model": (dict(model="nope"), InputError, "unknown mixture likelihood"),
    "init": (dict(init="nope"), InputError, "unknown init"),
    "temperature": (dict(temperature=0), InputError, "temperature"),
    "sampler_option": (dict(sampler_options={"nope": 1}), InputError, "has no option"),
    "sampler_options_type": (dict(sampler_options="x"), TypeError, "sampler_options"),
    "scans": (dict(sampler_options={"t": 10**9}), InputError, "t=1000000000"),
    "sweeps": (dict(sampler="srm", sampler_options={"gibbs_sweeps": 10**6}), InputError, "at most 1000"),
    "chains": (dict(sampler="reconfiguration", sampler_options={"n_chains": 10**9}), InputError,
               "use at most 128 chains"),
}


@pytest.mark.parametrize("kwargs, exc, text", CLUSTER_CASES.values(), ids=CLUSTER_CASES.keys())
def test_cluster_api(kwargs, exc, text):
    kwargs = {"data": DATA, **kwargs}
    if "time_budget" not in kwargs and "steps" not in kwargs:
        kwargs["steps"] = 10
    with pytest.raises(exc) as info:
        swcuts.cluster(**kwargs)
    assert "\n" not in str(info.value) and text in str(info.value), str(info.value)


# ---------------------------------------------------- what is said, not refused
def test_decompression_bomb_warning_is_not_shown(files, tmp_path, capsys, monkeypatch):
    import PIL.Image

    monkeypatch.setattr(PIL.Image, "MAX_IMAGE_PIXELS", 100)  # Pillow would warn and refuse
    out = tmp_path / "out"
    assert main(["segment", str(files["img"]), "-o", str(out), *RUN]) == 0
    _, err = capsys.readouterr()
    assert err == "" and (out / "labels.png").is_file()


def test_levels_for_a_sampler_without_levels_is_one_warning(files, tmp_path, capsys):
    assert main(["segment", str(files["img"]), "-o", str(tmp_path / "out"), *RUN, "--levels", "3"]) == 0
    _, err = capsys.readouterr()
    assert err == "swcuts: warning: --levels applies to the multilevel sampler only; ignored by 'swc'\n"


def test_summary_records_the_options(files, earlier):
    import json

    summary = json.loads((earlier / "summary.json").read_text())
    assert summary["options"]["seed"] == 1 and summary["options"]["steps"] == 60
    assert summary["options"]["n_atoms"] == 20 and summary["options"]["image"].endswith("tiny.png")


# ------------------------------------------------------------------- signals
# The writer waits, after writing its file, until the test has sent the
# signal (argv[1] + ".sent"): signals are deferred to the end of the file
# being written (swcuts.io.output_set.signals_deferred), so the run then ends.
WRITE_SLOWLY = (
    "import sys, time, pathlib\n"
    "import swcuts.cli.app as cli\n"
    "real = cli.save_rgb_png\n"
    "def slow(path, data):\n"
    "    real(path, data)\n"
    "    pathlib.Path(sys.argv[1]).touch()\n"
    "    deadline = time.monotonic() + 300\n"
    "    while not pathlib.Path(sys.argv[1] + '.sent').exists() and time.monotonic() < deadline:\n"
    "        time.sleep(0.02)\n"
    "cli.save_rgb_png = slow\n"
    "from swcuts.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


@pytest.mark.parametrize("sig, code, line", [(signal.SIGTERM, 143, "swcuts: terminated\n"),
                                             (signal.SIGINT, 130, "swcuts: interrupted\n")],
                         ids=["SIGTERM", "SIGINT"])
def test_signal_while_writing_keeps_the_earlier_run(files, out, sig, code, line):
    before = snapshot(out)
    marker = out.parent / "writing"
    # The child starts with SIGINT at its default, as from an interactive
    # shell: a suite run as a background job inherits SIGINT ignored (POSIX
    # asynchronous lists), and Python then keeps it ignored.
    proc = subprocess.Popen([sys.executable, "-c", WRITE_SLOWLY, str(marker), "segment", str(files["img"]),
                             "-o", str(out), "--seed", "3", *RUN],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Generous ceilings (a loaded machine took over 60 s); a hang still fails.
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1]
    proc.send_signal(sig)
    Path(f"{marker}.sent").touch()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == code, err
    assert err == line
    marker.unlink()
    Path(f"{marker}.sent").unlink()
    assert snapshot(out) == before
    assert sorted(os.listdir(out.parent)) == ["out"]  # no staging folder left
