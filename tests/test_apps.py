"""Smoke tests of the programs in apps/: each runs once as a user would run
it (a subprocess, tiny images, tiny budgets) and its outputs are read back."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
H, W = 32, 40


def run_app(name, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, str(ROOT / "apps" / name), *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)


def picture(seed=0):
    """A 32x40 RGB picture: two flat halves and a square, a little noise, some texture."""
    rng = np.random.default_rng(seed)
    img = np.full((H, W, 3), 60.0)
    img[:, W // 2:] = (200, 120, 40)
    img[8:20, 6:16] = (40, 160, 220)
    img += 25 * rng.standard_normal((H, W, 1)) + 8 * rng.standard_normal((H, W, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def test_segment_folder(tmp_path):
    photos, out = tmp_path / "photos", tmp_path / "out"
    photos.mkdir()
    iio.imwrite(photos / "a.png", picture())
    (photos / "broken.png").write_text("not an image")
    proc = run_app("segment_folder.py", photos, "-o", out, "--workers", 1, "--steps", 200)
    assert proc.returncode == 0, proc.stderr
    assert "broken.png: FAILED" in proc.stderr and "not an image file" in proc.stderr
    assert iio.imread(out / "a_overlay.png").shape == (H, W, 3)
    labels = np.load(out / "a_labels.npy")
    assert labels.shape == (H, W) and labels.dtype.kind in "iu"
    with open(out / "segments.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["image"] for r in rows] == ["a.png"]
    assert int(rows[0]["segments"]) == len(np.unique(labels)) and float(rows[0]["energy"]) > 0


def test_compare_on_my_images(tmp_path):
    iio.imwrite(tmp_path / "a.png", picture())
    plot = tmp_path / "plot.png"
    proc = run_app("compare_on_my_images.py", tmp_path / "a.png", "--samplers", "swc,gibbs", "--steps", 200,
                   "-o", plot)
    assert proc.returncode == 0, proc.stderr
    table = [line.split() for line in proc.stdout.splitlines() if line.startswith("a.png")]
    assert [row[1] for row in table] == ["swc", "gibbs"]
    assert iio.imread(plot).ndim == 3


def test_motion_gif(tmp_path):
    frame1 = picture(1)
    frame2 = np.roll(frame1, 1, axis=1)  # everything moves one pixel right
    iio.imwrite(tmp_path / "1.png", frame1)
    iio.imwrite(tmp_path / "2.png", frame2)
    gif, flo = tmp_path / "m.gif", tmp_path / "m.flo"
    proc = run_app("motion_gif.py", tmp_path / "1.png", tmp_path / "2.png", "-o", gif, "--flo", flo,
                   "--rounds", 1, "--max-displacement", 1)
    assert proc.returncode == 0, proc.stderr
    frames = iio.imread(gif, index=None)
    assert frames.shape[0] == 4 and frames.shape[1] >= H and frames.shape[2] == W
    import swcuts

    flow = swcuts.read_flo(flo)
    assert flow.shape == (H, W, 2) and np.nanmedian(flow[..., 0]) == 1 and np.nanmedian(flow[..., 1]) == 0


@pytest.mark.parametrize("app, args, message", [
    ("segment_folder.py", ["/no/such/folder", "-o", "out"], "is not a folder"),
    ("compare_on_my_images.py", ["/no/such.png", "--samplers", "swc"], "does not exist"),
    ("motion_gif.py", ["a.png", "b.png", "--rounds", "0"], "--rounds must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_status_2(app, args, message):
    proc = run_app(app, *args)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.splitlines()) == 1
