"""Tests of ``swcuts.benchmark`` and ``swcuts benchmark`` / ``swcuts report``."""

from __future__ import annotations

import csv
import json

import imageio.v3 as iio
import numpy as np
import pytest

import swcuts
from swcuts.evaluation.benchmarking import driver
from swcuts.evaluation.benchmarking.runs import make_methods, parse_grid
from swcuts.evaluation.benchmarking.runs import RESULT_COLUMNS
from swcuts.evaluation.benchmarking.store import OutputFolder
from swcuts.cli.app import main
from swcuts.io.errors import InputError
from swcuts.evaluation.metrics.scores import benchmark_scores

STEPS = 300
#: Columns that depend on the clock, not on the seeds.
TIMING = {"seconds", "sample_seconds"}


def _image(seed, h=24, w=32):
    """A two-region colour image with noise, and two annotations of it
    (the true split, and the split one column off)."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((h, w), dtype=np.uint8)
    truth[:, w // 2:] = 1
    img = np.where(truth[..., None] == 1, [200, 60, 40], [40, 90, 200]).astype(float)
    img = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
    other = np.zeros_like(truth)
    other[:, w // 2 + 1:] = 1
    return img, [truth, other]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A plain-folder data set of three images, each with two ground truths."""
    root = tmp_path_factory.mktemp("data")
    for k in range(3):
        img, truths = _image(k)
        iio.imwrite(root / f"im{k}.png", img)
        for j, t in enumerate(truths):
            iio.imwrite(root / f"im{k}_gt{j}.png", t)
    return root


def _run(folder, out=None, **kw):
    opts = dict(samplers=["swc"], peers=["felzenszwalb"], seeds=[0, 1], steps=STEPS, report=False, workers=1)
    opts.update(kw)
    rows = swcuts.benchmark(folder, output=out, **opts)
    return rows.to_dict("records") if hasattr(rows, "to_dict") else rows


def _key(rows):
    """Rows without the clock, comparable across runs."""
    out = {}
    for r in rows:
        out[r["run_id"]] = {k: (None if v != v else v) if isinstance(v, float) else v
                            for k, v in r.items() if k not in TIMING}
    return out


def _read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_parse_grid_and_methods():
    assert parse_grid(None) == [{}]
    assert parse_grid(["a2=1,2", "edge-scale=0.5"]) == [{"a2": 1.0, "edge_scale": 0.5},
                                                         {"a2": 2.0, "edge_scale": 0.5}]
    assert parse_grid({"bins": [16, 32]}) == [{"bins": 16}, {"bins": 32}]
    names = [m.name for m in make_methods(["swc", "gibbs"], ["felzenszwalb"], grid=["a2=1,2"])]
    assert names == ["swc[a2=1]", "swc[a2=2]", "gibbs[a2=1]", "gibbs[a2=2]", "felzenszwalb"]
    for bad in (["a2"], ["nosuch=1"], ["bins=x"]):
        with pytest.raises(InputError):
            parse_grid(bad)
    with pytest.raises(InputError, match="unknown sampler"):
        make_methods(["nosuch"], [])
    with pytest.raises(InputError, match="unknown peer"):
        make_methods(["swc"], ["nosuch"])
    with pytest.raises(InputError, match="a2"):
        make_methods(["swc"], [], grid=["a2=-1"])


def test_benchmark_rows_files_and_scores(folder, tmp_path):
    out = tmp_path / "bench"
    rows = _run(folder, out)
    # 3 images x (2 methods x 2 seeds) + 2 annotators per image
    assert len(rows) == 3 * 4 + 3 * 2
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    runs = [r for r in rows if r["kind"] != "annotator"]
    for r in runs:
        assert 0 <= r["pri"] <= 1 and r["voi"] >= 0 and 0 <= r["covering"] <= r["covering_best"] <= 1
        assert (out / r["labels_file"]).is_file()
        labels = iio.imread(out / r["labels_file"])
        assert labels.shape == (24, 32) and np.unique(labels).size == r["n_segments"]
        # The energy column is the reference posterior's -log pi of the saved labels.
        img = iio.imread(folder / f"{r['image']}.png")
        assert r["energy"] == pytest.approx(swcuts.energy(img, labels), rel=1e-9)
    for r in runs:
        if r["kind"] == "sampler":  # the sampler's own energy is the same posterior's
            assert r["sampler_energy"] == pytest.approx(r["energy"], rel=1e-6)
    # The scores are those of the saved labels against the image's annotators.
    r = runs[-1]
    expected = benchmark_scores(iio.imread(out / r["labels_file"]), _image(int(r["image"][2:]))[1])
    assert all(r[k] == pytest.approx(expected[k]) for k in ("pri", "voi", "covering", "bf", "match_r"))
    humans = [r for r in rows if r["kind"] == "annotator"]
    assert {r["seed"] for r in humans} == {0, 1}
    assert all(np.isfinite(r["energy"]) and r["pri"] > 0.9 for r in humans)
    # Files: results.csv holds the same rows; traces only for sampler runs.
    on_disk = _read_csv(out / "results.csv")
    assert [r["run_id"] for r in on_disk] == [r["run_id"] for r in rows]
    assert list(on_disk[0]) == list(RESULT_COLUMNS)
    traces = _read_csv(out / "traces.csv")
    sampler_ids = {r["run_id"] for r in runs if r["kind"] == "sampler"}
    assert {t["run_id"] for t in traces} == sampler_ids
    summary = json.loads((out / "summary.json").read_text())
    assert summary["budget"] == f"steps {STEPS}" and summary["seeds"] == [0, 1]
    assert summary["methods"] == ["swc", "felzenszwalb"] and summary["finished"]
    assert sorted(p.name for p in (out / "images").iterdir()) == ["im0.jpg", "im1.jpg", "im2.jpg"]


def test_same_rows_in_process_pool_and_dask(folder):
    """With a step budget, the same seeds give the same rows with 1 worker,
    2 worker processes and a Dask cluster."""
    from distributed import Client, LocalCluster

    kw = dict(limit=2, seeds=[3], peers=["felzenszwalb"], annotators=False)
    one = _key(_run(folder, **kw))
    two = _key(_run(folder, **{**kw, "workers": 2}))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        dask = _key(_run(folder, scheduler=client, **{**kw, "workers": None}))
    assert len(one) == 4
    assert one == two == dask


def test_resume_runs_only_what_is_missing(folder, tmp_path, monkeypatch):
    out = tmp_path / "bench"
    calls = []
    real_add = OutputFolder.add

    def add_then_stop(self, result):
        real_add(self, result)
        calls.append(result.rows[0]["run_id"])
        if len(calls) == 4:
            raise KeyboardInterrupt

    monkeypatch.setattr(OutputFolder, "add", add_then_stop)
    with pytest.raises(KeyboardInterrupt):
        _run(folder, out)
    monkeypatch.setattr(OutputFolder, "add", real_add)
    done_before = {r["run_id"] for r in _read_csv(out / "results.csv")}
    assert len(done_before) == 4  # the two annotators of im0, then two runs
    # Without resume, the folder is refused, nothing is overwritten.
    with pytest.raises(InputError, match="resume"):
        _run(folder, out)
    ran = []
    real_run = driver.run_task
    monkeypatch.setattr(driver, "run_task", lambda task: ran.append(task.run_id) or real_run(task))
    rows = _run(folder, out, resume=True)
    assert not done_before & set(ran)
    assert len(rows) == 3 * 4 + 3 * 2 and all(r["status"] == "ok" for r in rows)
    # A resume with another budget is refused.
    with pytest.raises(InputError, match="budget"):
        _run(folder, out, resume=True, steps=STEPS + 1)


def test_one_bad_image_is_recorded_and_the_others_run(folder, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for p in folder.iterdir():
        (data / p.name).write_bytes(p.read_bytes())
    iio.imwrite(data / "im1_gt1.png", np.zeros((10, 10), np.uint8))  # wrong size
    rows = _run(data, samplers=[], seeds=[0], annotators=False)
    bad = [r for r in rows if r["image"] == "im1"]
    assert len(rows) == 3 and len(bad) == 1
    assert bad[0]["status"] == "failed" and "im1_gt1.png" in bad[0]["error"]
    assert all(r["status"] == "ok" for r in rows if r["image"] != "im1")


def test_energy_scores_any_segmentation():
    img, (truth, _) = _image(0)
    seg = swcuts.segment(img, seed=0, steps=STEPS)
    assert swcuts.energy(img, seg.labels) == pytest.approx(seg.energy, rel=1e-9)
    assert swcuts.energy(img, truth) == pytest.approx(swcuts.energy(img, 5 - 2 * truth.astype(int)))
    assert swcuts.energy(img, truth) < swcuts.energy(img, np.zeros_like(truth))
    with pytest.raises(InputError, match="do not match"):
        swcuts.energy(img, truth[:-1])


def test_cli_benchmark_and_report(folder, tmp_path, capsys):
    out = tmp_path / "cli"
    rc = main(["benchmark", str(folder), "-o", str(out), "--samplers", "swc", "--peers", "felzenszwalb",
               "--steps", str(STEPS), "--limit", "1", "--no-progress", "--workers", "1"])
    printed = capsys.readouterr().out
    assert rc == 0 and "felzenszwalb" in printed and "report.html" in printed
    assert (out / "report.html").is_file()
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0 and (out / "report.html").is_file()
    for argv in (["benchmark", str(folder), "-o", str(tmp_path / "x"), "--samplers", "nosuch"],
                 ["benchmark", str(tmp_path / "missing"), "-o", str(tmp_path / "y")],
                 ["benchmark", str(folder), "-o", str(tmp_path / "z"), "--steps", "0"],
                 ["benchmark", str(folder), "-o", str(out), "--limit", "1"],  # results exist, no --resume
                 ["report", str(tmp_path / "nothing")]):
        capsys.readouterr()
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("swcuts: error: ") and err.count("\n") == 1, (argv, err)
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists() and not (tmp_path / "z").exists()


def test_tune_peers_picks_the_best_mean_covering(folder, tmp_path):
    from swcuts.evaluation.peers import PEERS

    tuned = driver.tune_peers(folder, ["felzenszwalb"], limit=2, workers=1)["felzenszwalb"]
    grid = PEERS["felzenszwalb"].grid
    by_value = {float(k): v for k, v in tuned["covering_by_value"].items()}
    assert tuned["param"] == "scale" and tuned["value"] in grid and set(by_value) == set(grid)
    assert tuned["tuned_covering"] == max(by_value.values()) == by_value[tuned["value"]]
    out = tmp_path / "bench"
    rows = _run(folder, out, samplers=[], seeds=[0], limit=1, annotators=False,
                peer_tuning={"felzenszwalb": tuned})
    assert json.loads(rows[0]["options"]) == {"scale": tuned["value"]}
    peers = json.loads((out / "summary.json").read_text())["peers"]
    assert peers["felzenszwalb"]["tuned_on"] == str(folder) and peers["felzenszwalb"]["n_images"] == 2
