"""The helper process of :mod:`swcuts.cli.prewarm`: its jobs are the callees a
cold compile of the default kernel asks for, the main process loads them,
the command line starts and ends it (the library does not), and the
result is the same with it, without it, and when it dies.

Each case runs in a new process with an empty numba cache (a first run);
they are slow (a cold compile each), not timed.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Runs in a new process: an optional helper (``mode``), then a small
#: default segment from the API and one from the command line (``cli``:
#: the command line first, with the helper it starts itself); prints a
#: JSON line of what happened.
_SCRIPT = r"""
import json, sys
import numpy as np
from swcuts.cli import prewarm
from swcuts.cli.app import main
from swcuts.samplers.compiled import run_swc
mode, png, out = sys.argv[1:]
h = None
if mode == "ahead-interpreter":  # another thread running: a new interpreter, not a fork
    import threading, time
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    mode = "ahead"
if mode in ("ahead", "killed"):
    h = prewarm.start()
    assert h is not None, "no helper started"
    if mode == "ahead":  # let the helper finish every job first
        with h._cond:
            h._cond.wait_for(lambda: h._ended or all(s in ("done", "fail") for s in h._state), 300)
    else:
        h._proc.kill()
        h._proc.wait()
started = []
start = prewarm.start
prewarm.start = lambda: started.append(start()) or started[-1]

def cli():
    assert main(["segment", png, "-o", out, "--seed", "0", "--steps", "300", "--no-progress"]) == 0
    with open(out + "/summary.json") as f:
        return json.load(f)["energy"]

cli_energy = cli() if mode == "cli" else None
import swcuts
image = np.zeros((24, 32)); image[:, 16:] = 1.0
image += 0.05 * np.random.default_rng(0).standard_normal(image.shape)
energy = swcuts.segment(image, seed=0, steps=300, n_atoms=20).energy
if cli_energy is None:
    import shutil
    shutil.rmtree(out, ignore_errors=True)
    cli_energy = cli()
helpers = [x for x in [h] + started if x is not None]
hits = {}
for module, name, sig in prewarm.JOBS:
    kernel = prewarm._job_function(module, name)
    hits[name] = [kernel.dispatcher._cache_hits[sig], [str(s) for s in kernel.dispatcher.signatures]]
print(json.dumps({
    "energy": energy,
    "cli_energy": cli_energy,
    "states": helpers[0]._state if helpers else None,
    "started": len(started),
    "ended": [x._proc.poll() is not None for x in started if x is not None],
    "forked": [isinstance(x._proc, prewarm._Forked) for x in helpers],
    "hits": hits,
    "jobs": {name: str(sig) for _, name, sig in prewarm.JOBS},
    "run_swc": [str(s) for s in run_swc.signatures],
    "expected_run_swc": str(prewarm.RUN_SWC_SIGNATURE),
}))
if h is not None:
    h.close()
"""


def _run(mode, tmp_path, prewarm="1"):
    cache = tmp_path / f"cache-{mode}"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), SWCUTS_PREWARM=prewarm)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, mode, str(ROOT / "sample_images" / "coffee.png"),
                           str(tmp_path / f"out-{mode}")], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def without_helper(tmp_path_factory):
    return _run("none", tmp_path_factory.mktemp("prewarm"), prewarm="0")


def test_jobs_are_what_a_cold_compile_of_the_default_kernel_asks_for(without_helper):
    run = without_helper
    assert run["run_swc"] == [run["expected_run_swc"]]
    for name, sig in run["jobs"].items():
        assert run["hits"][name][1] == [sig], name  # compiled once, with the job's types
        assert run["hits"][name][0] == 0  # and not loaded: no helper ran


@pytest.mark.parametrize("mode", ["ahead", "ahead-interpreter"])
def test_main_process_loads_what_the_helper_compiled(tmp_path, without_helper, mode):
    run = _run(mode, tmp_path)
    assert run["forked"] == [mode == "ahead" and sys.platform == "linux"]
    assert run["states"] == ["done"] * len(run["jobs"])
    assert all(hits == 1 for hits, _ in run["hits"].values())
    assert (run["energy"], run["cli_energy"]) == (without_helper["energy"], without_helper["cli_energy"])


def test_a_dead_helper_changes_nothing(tmp_path, without_helper):
    run = _run("killed", tmp_path)
    assert all(hits == 0 for hits, _ in run["hits"].values())
    assert (run["energy"], run["cli_energy"]) == (without_helper["energy"], without_helper["cli_energy"])


def test_the_command_line_starts_its_helper_and_ends_it(tmp_path, without_helper):
    run = _run("cli", tmp_path)
    assert run["started"] == 1 and run["ended"] == [True]
    # each job: loaded from the helper, or compiled here after telling it to skip
    assert set(run["states"]) <= {"done", "skip", "start", "fail"}
    for (hits, sigs), state in zip(run["hits"].values(), run["states"]):
        assert sigs and hits == (state == "done")
    assert (run["energy"], run["cli_energy"]) == (without_helper["energy"], without_helper["cli_energy"])


def test_the_library_starts_no_helper(monkeypatch):
    import numpy as np

    import swcuts
    from swcuts.cli import prewarm

    calls = []
    monkeypatch.setattr(prewarm, "start", lambda: calls.append(1))
    swcuts.segment(np.zeros((16, 16)), seed=0, steps=10, n_atoms=20)
    assert calls == []


def test_no_helper_when_the_kernel_is_cached_or_disabled(monkeypatch):
    from swcuts.cli import prewarm

    monkeypatch.setattr(prewarm, "_default_kernel_cached", lambda: True)
    assert prewarm.start() is None
    monkeypatch.setattr(prewarm, "_default_kernel_cached", lambda: False)
    monkeypatch.setenv("SWCUTS_PREWARM", "0")
    assert prewarm.start() is None
    with prewarm.helper(wanted=False) as h:
        assert h is None


def test_an_error_in_the_block_ends_the_helper(monkeypatch):
    from swcuts._numba import compiled_only
    from swcuts.cli import prewarm

    monkeypatch.setattr(prewarm, "_default_kernel_cached", lambda: False)
    monkeypatch.setenv("SWCUTS_PREWARM", "1")
    with pytest.raises(KeyboardInterrupt):
        with prewarm.helper() as h:
            assert h is not None and compiled_only.load_hook == h.load_hook
            raise KeyboardInterrupt
    assert h._proc.poll() is not None
    assert compiled_only.load_hook is None


def test_a_busy_loop_started_just_now_counts_as_a_busy_core(monkeypatch):
    # The helper's decision reads the tasks runnable now, not the load
    # average of the last minute (which a program started a second ago
    # does not move yet).
    import time

    from swcuts.cli import prewarm

    if prewarm._busy_now() is None:
        pytest.skip("no /proc/loadavg")
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert prewarm._busy_now() >= 1
        monkeypatch.setattr(prewarm, "_busy_now", lambda: 1)
        monkeypatch.setattr(prewarm.os, "sched_getaffinity", lambda pid: {0, 1})
        assert prewarm._idle_cores() == 0.0  # two cores: this run's and the loop's
        monkeypatch.setattr(prewarm, "_busy_now", lambda: 0)
        assert prewarm._idle_cores() == 1.0
        # Where the count cannot be read: the load average.
        monkeypatch.setattr(prewarm, "_busy_now", lambda: None)
        monkeypatch.setattr(prewarm.os, "getloadavg", lambda: (1.7, 1.0, 1.0))
        assert abs(prewarm._idle_cores() - 0.3) < 1e-12
    finally:
        loop.kill()
        loop.wait()
