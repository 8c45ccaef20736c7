"""The benchmark report: its numbers on a hand-made output folder, and the page."""

from __future__ import annotations

import base64
import csv
import json

import imageio.v3 as iio
import numpy as np
import pytest

from swcuts.evaluation.benchmarking.runs import RESULT_COLUMNS, TRACE_FILE_COLUMNS
from swcuts.io.errors import InputError
from swcuts.evaluation.report import build_report, compare_page
from swcuts.evaluation.results import energy_at_times, load_results, method_table, time_to_reach

#: (run_id, image, method, kind, seed, status, energy, covering, match_p, total_p, match_r, total_r)
RUNS = [
    ("A_swc", "A", "swc", "sampler", 0, "ok", 80.0, 0.6, 8, 10, 6, 12),
    ("A_gibbs", "A", "gibbs", "sampler", 0, "ok", 85.0, 0.4, 5, 10, 3, 12),
    ("B_swc", "B", "swc", "sampler", 0, "ok", 140.0, 0.8, 9, 10, 9, 12),
    ("B_gibbs", "B", "gibbs", "sampler", 0, "failed", None, None, None, None, None, None),
    ("B_gibbs", "B", "gibbs", "sampler", 0, "ok", 180.0, 0.5, 4, 10, 4, 12),  # a resume's retry wins
    ("A_felz", "A", "felzenszwalb", "peer", 0, "ok", 120.0, 0.5, 7, 10, 6, 12),
    ("B_felz", "B", "felzenszwalb", "peer", 0, "failed", None, None, None, None, None, None),
    ("A_h0", "A", "human", "annotator", 0, "ok", 70.0, 0.9, 9, 10, 9, 10),
    ("A_h1", "A", "human", "annotator", 1, "ok", 90.0, 0.9, 9, 10, 9, 10),
    ("B_h0", "B", "human", "annotator", 0, "ok", 150.0, 0.9, 9, 10, 9, 10),
]
TRACES = {"A_swc": ([0, 1, 2], [100, 90, 80]), "A_gibbs": ([0, 1, 2], [100, 95, 85]),
          "B_swc": ([0, 1, 2], [200, 150, 140]), "B_gibbs": ([0, 1, 2], [200, 190, 180]),
          "stale": ([0, 1], [10, 1])}


@pytest.fixture()
def outdir(tmp_path):
    out = tmp_path / "bench"
    (out / "labels").mkdir(parents=True)
    (out / "images").mkdir()
    rng = np.random.default_rng(0)
    for image in ("A", "B"):
        iio.imwrite(out / "images" / f"{image}.jpg", rng.integers(0, 255, (30, 40, 3), dtype=np.uint8))
    with open(out / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, RESULT_COLUMNS)
        w.writeheader()
        for rid, image, method, kind, seed, status, energy, cov, mp, tp, mr, tr in RUNS:
            row = dict.fromkeys(RESULT_COLUMNS, "")
            row.update(run_id=rid, image=image, method=method, kind=kind, seed=seed, status=status)
            if status == "ok":
                labels = np.zeros((30, 40), np.uint16)
                labels[:, 20:] = 1
                iio.imwrite(out / "labels" / f"{rid}.png", labels)
                row.update(energy=energy, covering=cov, covering_best=cov, pri=cov, voi=1 - cov, bf=cov,
                           match_p=mp, total_p=tp, match_r=mr, total_r=tr, n_segments=2, seconds=1.0,
                           labels_file=f"labels/{rid}.png")
            else:
                row["error"] = "ValueError: it broke"
            w.writerow(row)
    with open(out / "traces.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(TRACE_FILE_COLUMNS)
        for rid, (secs, energies) in TRACES.items():
            for k, (t, e) in enumerate(zip(secs, energies)):
                w.writerow([rid, k, t, 1.0, e, 3])
    (out / "summary.json").write_text(json.dumps({"data": "somewhere", "budget": "time 2 s", "seeds": [0],
                                                  "peers": {"felzenszwalb": {"param": "scale", "value": 400,
                                                                             "tuned_on": "train"}}}))
    return out


def test_load_results_keeps_the_last_row_and_drops_stale_traces(outdir):
    rows, traces, summary = load_results(outdir)
    assert len(rows) == 9
    b_gibbs = [r for r in rows if r["run_id"] == "B_gibbs"]
    assert len(b_gibbs) == 1 and b_gibbs[0]["status"] == "ok" and b_gibbs[0]["energy"] == 180.0
    assert set(traces) == {"A_swc", "A_gibbs", "B_swc", "B_gibbs"}
    assert summary["budget"] == "time 2 s"


def test_method_table_by_hand(outdir):
    rows, _, _ = load_results(outdir)
    table = {e["method"]: e for e in method_table(rows)}
    assert list(table) == ["swc", "gibbs", "felzenszwalb", "human"]
    swc = table["swc"]
    assert swc["covering"]["mean"] == pytest.approx(0.7)
    # data-set boundary F from summed counts: P = 17/20, R = 15/24
    p, r = 17 / 20, 15 / 24
    assert swc["bf_dataset"] == pytest.approx(2 * p * r / (p + r))
    # image A's lowest energy is annotator 0's 70, B's is swc's 140
    assert swc["energy_gap"]["mean"] == pytest.approx((100 * 10 / 70 + 0) / 2)
    # median annotator: A 80 (< swc's 80? no), B 150 (> 140): humans lower on neither
    assert swc["humans_lower"] == 0.0
    assert table["gibbs"]["humans_lower"] == pytest.approx(1.0)  # 80 < 85 and 150 < 180
    assert table["felzenszwalb"]["failed"] == 1 and table["felzenszwalb"]["runs"] == 2


def test_energy_at_times_and_time_to_reach_by_hand(outdir):
    rows, traces, _ = load_results(outdir)
    at = energy_at_times(rows, traces, [1.0, 2.0])
    # by 1 s: A swc 90 vs best 80 (12.5 %), gibbs 95 (18.75 %); B swc 150 vs 140, gibbs 190
    assert at["swc"][1.0]["median"] == pytest.approx(np.median([12.5, 100 * 10 / 140]))
    assert at["gibbs"][1.0]["median"] == pytest.approx(np.median([18.75, 100 * 50 / 140]))
    assert at["swc"][1.0]["lowest_on"] == 2 and at["gibbs"][2.0]["lowest_on"] == 0
    assert at["lowest"][2.0] == "swc"
    reach = time_to_reach(rows, traces, reference="gibbs")
    # A: gibbs gets to 85 at 2 s, swc at 2 s (1x); B: gibbs to 180 at 2 s, swc at 1 s (2x)
    assert reach["swc"]["median_speedup"] == pytest.approx(1.5)
    assert reach["swc"]["reached"] == 2 == reach["swc"]["runs"] and reach["swc"]["reference_stuck"] == 0
    # A reference that never leaves its start gives no time to compare with.
    traces["A_gibbs"]["energy"][:] = 100.0
    reach = time_to_reach(rows, traces, reference="gibbs")
    assert reach["swc"]["reference_stuck"] == 1 and reach["swc"]["runs"] == 1
    assert reach["swc"]["median_speedup"] == pytest.approx(2.0)


def test_a_sampler_that_never_reaches_the_level_says_never(outdir):
    rows, traces, _ = load_results(outdir)
    # swc ends at 80 (A) and 140 (B); gibbs stops at 85 and 180 after 2 s: never there.
    reach = time_to_reach(rows, traces, reference="swc")["gibbs"]
    assert reach["reached"] == 0 and reach["runs"] == 2
    assert reach["median_speedup"] == 0.0 and reach["median_seconds"] == np.inf
    assert reach["never_seconds"] == (2.0, 2.0)
    # Half the runs reach it (B at 1 s, 1x): the median run is still one that never did, not the
    # mean of 0 and 1.
    traces["B_gibbs"]["energy"][1:] = 140.0
    reach = time_to_reach(rows, traces, reference="swc")["gibbs"]
    assert reach["reached"] == 1 and reach["median_speedup"] == 0.0 and reach["never_seconds"] == (2.0, 2.0)
    page = build_report(outdir).read_text()
    assert "never within its budget of 2 s" in page and "&gt; 2 s" in page
    assert "0.0×" not in page and "1.5×" in page  # swc against gibbs's final energy, as before


def test_the_gallery_enlarges_full_size_overlays_without_script(outdir):
    page = build_report(outdir).read_text()
    assert "<script" not in page.lower() and "figure.zoom:target" in page
    # swc's best image is B (covering 0.8), its worst A; the median (B again) is not repeated.
    assert 'id="gallery-best"' in page and 'id="gallery-worst"' in page and "Median image" not in page
    for n in (1, 2):
        assert f'<figure class="zoom" id="overlay-{n}"><a href="#overlay-{n}"' in page
    jpeg = page.split('src="data:image/jpeg;base64,', 1)[1].split('"', 1)[0]
    assert iio.imread(base64.b64decode(jpeg)).shape == (30, 40, 3)  # the image's own size


def test_build_report_writes_a_self_contained_page(outdir):
    page = build_report(outdir).read_text()
    for name in ("swc", "gibbs", "felzenszwalb", "annotator 1", "it broke", "scale", "train"):
        assert name in page, name
    assert page.count("data:image/png;base64") >= 2 and "data:image/jpeg;base64" in page
    assert "http://" not in page and "https://" not in page
    (outdir / "traces.csv").unlink()
    (outdir / "images" / "A.jpg").unlink()
    page = build_report(outdir).read_text()
    assert "traces.csv" in page and "swc" in page


def test_report_errors(tmp_path):
    with pytest.raises(InputError, match="results.csv"):
        build_report(tmp_path)
    (tmp_path / "results.csv").write_text("not,a,results,file\n")
    with pytest.raises(InputError, match="run_id"):
        build_report(tmp_path)


def test_compare_page(tmp_path):
    labels = np.zeros((30, 40), int)
    labels[:, 20:] = 1
    trace = {"seconds": np.array([0.0, 1.0]), "energy": np.array([10.0, 5.0])}
    page = compare_page([("swc", labels, trace, 5.0, 2, 100), ("gibbs", labels, trace, 6.0, 2, 100)],
                        np.zeros((30, 40, 3)))
    assert "swc" in page and "gibbs" in page and "20.00 %" in page and "data:image/png;base64" in page


def test_merging_folders(outdir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    lines = (outdir / "results.csv").read_text().splitlines()
    header, a_swc = lines[0], next(x for x in lines if x.startswith("A_swc,"))
    (other / "results.csv").write_text(header + "\n" + a_swc.replace(",0.6,", ",0.2,") + "\n"
                                       + a_swc.replace("A_swc", "C_swc").replace(",A,", ",C,") + "\n")
    rows, traces, summary = load_results(outdir, other)
    by_id = {r["run_id"]: r for r in rows}
    assert len(rows) == 10 and by_id["A_swc"]["covering"] == 0.2 and by_id["A_swc"]["folder"] == other
    assert "A_swc" not in traces and summary["merged"] == [str(other)]  # the merged run has no trace
    assert "merged with" in build_report(outdir, other).read_text()
