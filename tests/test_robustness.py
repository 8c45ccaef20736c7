"""Bad input and interrupts that once gave tracebacks or misleading lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from swcuts.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
FIG7 = ROOT / "sample_images" / "fig7.png"
TINY = ["--steps", "200", "--n-atoms", "30"]


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def small_image():
    return np.ascontiguousarray(iio.imread(FIG7)[::4, ::4])


def test_png_named_npy_is_read_as_png(tmp_path, small_image, capsys):
    path = tmp_path / "picture.npy"
    iio.imwrite(path, small_image, extension=".png")
    rc, out, err = run_cli(capsys, "segment", path, "-o", tmp_path / "out", *TINY)
    assert rc == 0, err
    assert (tmp_path / "out" / "labels.png").exists()


def test_npy_name_without_npy_content_names_the_file(tmp_path, capsys):
    path = tmp_path / "broken.npy"
    path.write_bytes(bytes(range(256)))
    rc, out, err = run_cli(capsys, "segment", path, "-o", tmp_path / "out")
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "broken.npy" in err and "not a NumPy .npy file" in err
    assert not (tmp_path / "out").exists()


def test_interrupt_while_the_command_line_loads_is_one_line():
    # A KeyboardInterrupt raised by the import of the heavy modules, as a
    # Ctrl-C in the first second of `swcuts ...` does.
    code = (
        "import sys\n"
        "class Stop:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'swcuts.segmentation.segment':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Stop())\n"
        "from swcuts.cli import main\n"
        "sys.exit(main(['segment', 'x.png', '-o', 'out']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130
    assert proc.stderr == "swcuts: interrupted\n"


def test_import_swcuts_is_light():
    # The package loads its public names on first use.
    code = ("import sys, swcuts\n"
            "assert 'numba' not in sys.modules and 'swcuts.segmentation.segment' not in sys.modules\n"
            "assert callable(swcuts.segment) and 'swcuts.segmentation.segment' in sys.modules\n"
            "assert swcuts.evaluation.metrics.segmentation_covering is not None\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_unknown_attribute_is_an_attribute_error():
    import swcuts

    with pytest.raises(AttributeError, match="no_such_name"):
        swcuts.no_such_name


def test_a_full_disk_says_so(tmp_path, small_image, capsys, monkeypatch):
    # numpy reports a short write on a full disk as "N requested and M written".
    import swcuts.io.image_write

    def full(file, array, **kwargs):
        raise OSError("26600 requested and 14304 written")

    monkeypatch.setattr(swcuts.io.image_write.np, "save", full)
    path = tmp_path / "in.png"
    iio.imwrite(path, small_image)
    out = tmp_path / "out"
    rc, _, err = run_cli(capsys, "segment", path, "-o", out, *TINY)
    assert rc == 2 and err.count("\n") == 1
    assert "No space left on device" in err and str(out) in err
    assert not out.exists() or not any(out.iterdir())


def test_a_killed_runs_staging_folder_is_removed_by_the_next_run(tmp_path, small_image, capsys):
    path = tmp_path / "in.png"
    iio.imwrite(path, small_image)
    out = tmp_path / "out"
    # What SIGKILL during writing leaves: a staging folder of a process that is gone.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.swcuts-stage-{dead.pid}-0123456789ab"
    stale.mkdir()
    (stale / "labels.png").write_bytes(b"partial")
    alive = tmp_path / f".out.swcuts-stage-{__import__('os').getpid()}-0123456789ab"
    alive.mkdir()  # a run still writing (this process): left alone
    rc, _, err = run_cli(capsys, "segment", path, "-o", out, *TINY)
    assert rc == 0, err
    assert not stale.exists() and alive.exists()
    assert (out / "labels.png").exists()
