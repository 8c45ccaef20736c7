"""Bad input, issue 32: options of the wrong type or value, readers that
read before they check, benchmarks whose runs fail.

1. Every numeric option of every public function (``swcuts.__all__``,
   ``swcuts.segmentation.segment.__all__``, ``swcuts.evaluation.benchmarking.tune_peers``; cluster's
   likelihood and sampler options too) refuses a string, a bool, None where
   None is not its default, NaN or ±inf, and an array, with a one-line
   message that names the option and says what it got, before any work
   starts; numpy scalars are accepted. The work is replaced by a function
   that raises :class:`Reached`, so an accepted value is seen without
   running anything.
2. ``swcuts.io.flow.read_flo`` checks a file's header and size before reading it.
3. A benchmark says which runs failed and why.
"""

from __future__ import annotations

import doctest
import math
import re

import numpy as np
import pytest

import swcuts
import swcuts.segmentation.segment
import swcuts.clustering
import swcuts.evaluation.datasets
import swcuts.io.errors
import swcuts.segmentation.energy
from swcuts.io.errors import InputError, InputTypeError


class Reached(Exception):
    """The options were accepted: the work began."""


def _reached(*args, **kwargs):
    raise Reached


IMG = np.random.default_rng(1).random((24, 32, 3))
LABELS = (np.arange(32)[None, :] >= 16).repeat(24, axis=0).astype(int)
DATA = np.random.default_rng(2).normal(size=(20, 2))
BINARY = (DATA > 0).astype(int)
COUNTS = np.random.default_rng(3).integers(0, 5, size=(20, 4))
FRAME = np.tile(np.linspace(0, 1, 40), (40, 1))


# ----------------------------------------------------- the public functions
def _segment(mp, **kw):
    mp.setattr(swcuts.segmentation.build, "compute_atoms", _reached)
    swcuts.segment(IMG, **kw)


def _read_flo(mp, **kw):
    mp.setattr(swcuts.io.flow, "Path", _reached)  # the options are checked before the file
    swcuts.read_flo("flow.flo", **kw)


def _energy(mp, **kw):
    mp.setattr(swcuts.segmentation.energy, "ImageModel", _reached)
    swcuts.energy(IMG, LABELS, **kw)


def _energy_terms(mp, **kw):
    mp.setattr(swcuts.segmentation.energy, "ImageModel", _reached)
    swcuts.energy_terms(IMG, LABELS, **kw)


def _cluster(data=DATA, **fixed):
    def call(mp, **kw):
        mp.setattr(swcuts.clustering, "anneal", _reached)
        swcuts.cluster(data, **fixed, **kw)
    return call


def _sampler_option(sampler):
    def call(mp, **kw):
        mp.setattr(swcuts.clustering, "anneal", _reached)
        swcuts.cluster(DATA, sampler=sampler, sampler_options=kw)
    return call


def _sample_posterior(mp, **kw):
    mp.setattr(swcuts.segmentation.build, "compute_atoms", _reached)
    swcuts.sample_posterior(IMG, **{"n_samples": 4, "chains": 1, "thin": 1, **kw})


def _sample_image_posterior(mp, **kw):
    _sample_posterior(mp, model="image", **kw)


def _segment_motion(mp, **kw):
    mp.setattr(swcuts, "segment", _reached)  # the regions of frame 2: the first work
    swcuts.segment_motion(FRAME, FRAME[::-1], **kw)


def _multigrid_from_atoms(mp, **kw):
    from swcuts.image.prepare import prepare_image

    mp.setattr(swcuts.segmentation.segment, "_anneal_atoms", _reached)
    features, _ = prepare_image(IMG)
    posterior = dict(bins=32, a0=0.5, a1=5.0, a2=5.0, kappa=1.0, edge_scale=1.0, q_max=0.95)
    swcuts.segmentation.segment.multigrid_from_atoms(features, posterior=posterior, **{"n_atoms": 20, **kw})


def _benchmark(mp, **kw):
    mp.setattr(swcuts.evaluation.datasets, "open_dataset", _reached)
    swcuts.benchmark("data", samplers=["swc"], peers=[], **kw)


def _tune_peers(mp, **kw):
    from swcuts.evaluation.benchmarking.driver import tune_peers

    mp.setattr(swcuts.evaluation.datasets, "open_dataset", _reached)
    tune_peers("data", ["felzenszwalb"], **kw)


INT, REAL = "integer", "real"
#: function -> {option: (kind, None accepted, a good value as a numpy scalar)}
OPTIONS = {
    "read_flo": (_read_flo, {"limit_bytes": (INT, True, np.int64(10**6))}),
    "segment": (_segment, {
        "n_atoms": (INT, True, np.int32(20)), "steps": (INT, True, np.int64(20)),
        "time_budget": (REAL, True, np.float32(1.5)), "t0": (REAL, True, np.float32(5.0)),
        "t_final": (REAL, False, np.float64(0.05)), "edge_scale": (REAL, False, np.float32(1.0)),
        "q_max": (REAL, False, np.float64(0.9)), "bins": (INT, True, np.int16(32)),
        "a0": (REAL, True, np.float32(0.5)), "a1": (REAL, True, np.float64(2.0)),
        "a2": (REAL, True, np.int64(3)), "kappa": (REAL, False, np.float32(1.0)),
        "levels": (INT, False, np.uint8(2)), "posterior_samples": (INT, True, np.int64(5)),
        "channel_axis": (INT, True, np.int64(-1)), "seed": (INT, True, np.uint32(7))}),
    "energy": (_energy, {
        "channel_axis": (INT, True, np.int8(2)), "bins": (INT, True, np.int64(16)),
        "a0": (REAL, True, np.float32(0.5)), "a1": (REAL, True, np.float32(0.5)),
        "a2": (REAL, True, np.float32(0.5)), "kappa": (REAL, False, np.float64(0.0))}),
    "energy_terms": (_energy_terms, {
        "bins": (INT, True, np.int64(16)), "a2": (REAL, True, np.float32(0.5)),
        "kappa": (REAL, False, np.float64(2.0))}),
    "cluster": (_cluster(), {
        "alpha": (REAL, False, np.float32(1.0)), "steps": (INT, True, np.int64(10)),
        "time_budget": (REAL, True, np.float32(0.5)), "temperature": (REAL, False, np.float32(1.0)),
        "seed": (INT, True, np.int64(0)), "kappa0": (REAL, True, np.float32(0.5)),
        "nu0": (REAL, True, np.float32(4.0))}),
    "cluster-nggp": (_cluster(prior="nggp"), {"sigma": (REAL, True, np.float32(0.25))}),
    "cluster-beta-bernoulli": (_cluster(BINARY, model="beta-bernoulli"), {
        "a": (REAL, False, np.float32(1.0)), "b": (REAL, False, np.int64(2))}),
    "cluster-multinomial": (_cluster(COUNTS, model="multinomial"), {"beta": (REAL, False, np.float64(0.2))}),
    "cluster-lines": (_cluster(model="lines"), {"sigma": (REAL, False, np.float32(0.5))}),
    "cluster-split-merge": (_sampler_option("split-merge"), {
        "t": (INT, False, np.int64(3)), "M": (INT, False, np.int32(1)), "R": (INT, False, np.uint8(1))}),
    "cluster-triadic": (_sampler_option("triadic"), {"beta": (REAL, False, np.float32(0.25))}),
    "cluster-reconfiguration": (_sampler_option("reconfiguration"), {
        "n_chains": (INT, False, np.int64(2)), "gibbs_sweeps": (INT, False, np.int64(1)),
        "max_history": (INT, False, np.int64(64)), "neighbours": (INT, False, np.int64(5))}),
    "cluster-tree-guided": (_sampler_option("tree-guided"), {
        "global_prob": (REAL, False, np.float32(0.5)), "G": (INT, False, np.int64(10)),
        "merge_floor": (REAL, False, np.float64(0.01)), "split_floor": (REAL, False, np.float32(0.1)),
        "new_weight": (REAL, False, np.float32(2.0)), "local_max": (INT, False, np.int64(8)),
        "local_floor": (REAL, False, np.float64(0.5)), "neighbours": (INT, True, np.int64(5))}),
    "sample_posterior": (_sample_posterior, {      # the default, model="edges"
        "n_samples": (INT, False, np.int64(8)), "thin": (INT, True, np.int32(2)),
        "chains": (INT, True, np.int64(2)), "seed": (INT, True, np.int64(1)),
        "time_budget": (REAL, True, np.float32(2.0)), "n_atoms": (INT, True, np.int64(16)),
        "pilot_steps": (INT, True, np.int64(10)), "workers": (INT, True, np.int64(1)),
        "channel_axis": (INT, True, np.int64(-1))}),
    "sample_posterior-image": (_sample_image_posterior, {
        "n_samples": (INT, False, np.int64(8)), "thin": (INT, True, np.int32(2)),
        "chains": (INT, True, np.int64(2)), "seed": (INT, True, np.int64(1)),
        "time_budget": (REAL, True, np.float32(2.0)), "n_atoms": (INT, True, np.int64(16)),
        "t0": (REAL, False, np.float32(5.0)), "anneal_steps": (INT, True, np.int64(10)),
        "pilot_steps": (INT, True, np.int64(10)), "edge_scale": (REAL, True, np.float32(1.0)),
        "q_max": (REAL, True, np.float64(0.9)), "bins": (INT, True, np.int64(16)),
        "a0": (REAL, True, np.float32(0.5)), "a1": (REAL, True, np.float32(0.5)),
        "a2": (REAL, True, np.float32(0.5)), "kappa": (REAL, True, np.float32(1.0)),
        "workers": (INT, True, np.int64(1)), "channel_axis": (INT, True, np.int64(-1))}),
    "segment_motion": (_segment_motion, {
        "seed": (INT, True, np.int64(3)), "max_displacement": (REAL, True, np.float64(3.0)),
        "precision": (REAL, False, np.float32(0.5)), "pyramid_levels": (INT, True, np.int64(1)),
        "rounds": (INT, False, np.int64(2)), "time_budget": (REAL, True, np.float32(1.0)),
        "channel_axis": (INT, True, np.int64(-1)), "region_seconds": (REAL, True, np.float64(1.0)),
        "finer_range": (REAL, False, np.float32(1.5)), "posterior_samples": (INT, False, np.int64(0)),
        "sigma": (REAL, True, np.float32(2.0)), "rounding": (REAL, False, np.float64(1.0)),
        "nil_cost": (REAL, False, np.float32(6.0)), "alpha": (REAL, False, np.float32(0.2)),
        "beta": (REAL, False, np.float32(4.0)), "delta": (REAL, False, np.int64(2)),
        "nu": (REAL, False, np.float32(1.0)), "lambda2": (REAL, False, np.float64(200.0)),
        "tau": (REAL, False, np.float32(0.1))}),
    "multigrid_from_atoms": (_multigrid_from_atoms, {
        "n_atoms": (INT, False, np.int64(20)), "steps": (INT, True, np.int64(100)),
        "time_budget": (REAL, True, np.float32(1.0)), "t0": (REAL, False, np.float32(1.0)),
        "t_final": (REAL, False, np.float64(0.05))}),
    "benchmark": (_benchmark, {
        "steps": (INT, True, np.int64(10)), "time_budget": (REAL, True, np.float32(1.0)),
        "limit": (INT, True, np.int64(1)), "workers": (INT, True, np.int64(1)),
        "seeds": (INT, False, np.int64(0))}),
    "tune_peers": (_tune_peers, {"limit": (INT, True, np.int64(2)), "workers": (INT, True, np.int64(1))}),
}

#: A bad value -> the error it gets for (integer, real) options.
BAD = {
    "string": ("1", InputTypeError, InputTypeError),
    "bool": (True, InputTypeError, InputTypeError),
    "numpy_bool": (np.bool_(True), InputTypeError, InputTypeError),
    "none": (None, InputTypeError, InputTypeError),
    "nan": (math.nan, InputTypeError, InputError),
    "inf": (math.inf, InputTypeError, InputError),
    "minus_inf": (-math.inf, InputTypeError, InputError),
    "fraction_for_integer": (1.5, InputTypeError, None),
    "array_1": (np.array([1.0]), InputTypeError, InputTypeError),
    "array_0d": (np.array(2.0), InputTypeError, InputTypeError),
    "array_5x5": (np.ones((5, 5)), InputTypeError, InputTypeError),
}


def _cases():
    for fn, (call, options) in OPTIONS.items():
        for option, (kind, nullable, good) in options.items():
            yield pytest.param(call, option, good, id=f"{fn}-{option}")


def _bad_cases():
    for fn, (call, options) in OPTIONS.items():
        for option, (kind, nullable, _) in options.items():
            for name, (value, int_error, real_error) in BAD.items():
                error = int_error if kind == INT else real_error
                if error is not None and not (value is None and nullable):
                    yield pytest.param(call, option, value, error, id=f"{fn}-{option}-{name}")


#: Public functions that take no numeric option (a path, an array).
NO_NUMERIC_OPTIONS = {"load_image", "write_flo"}


def test_every_public_function_is_listed():
    """The table covers what swcuts exports that takes options."""
    functions = {n for n in swcuts.__all__ if callable(getattr(swcuts, n)) and n[0].islower()}
    functions |= {n for n in swcuts.segmentation.segment.__all__ if callable(getattr(swcuts.segmentation.segment, n)) and n[0].islower()}
    functions -= NO_NUMERIC_OPTIONS
    assert functions <= {name.split("-")[0] for name in OPTIONS}, functions


@pytest.mark.parametrize("call, option, value, error", _bad_cases())
def test_a_bad_value_is_one_line_naming_the_option(monkeypatch, call, option, value, error):
    with pytest.raises(error) as info:
        call(monkeypatch, **{option: value})
    msg = str(info.value)
    assert "\n" not in msg and len(msg) < 300, msg
    assert re.search(rf"\b{option}\b.* must\b", msg) and "got" in msg, msg
    if error is InputTypeError:  # both: a TypeError for Python, an InputError for the CLI
        assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("call, option, value", _cases())
def test_a_numpy_scalar_is_accepted(monkeypatch, call, option, value):
    with pytest.raises(Reached):
        call(monkeypatch, **{option: value})


def test_window_sizes_refuse_what_is_not_an_integer(monkeypatch):
    for bad in ("8", True, 8.0, np.array([8.0]), np.ones((3, 3)), None):
        with pytest.raises(InputTypeError, match=r"^window sizes must be integers, got .+") as info:
            _segment(monkeypatch, sampler="multigrid", window_sizes=[bad])
        assert "\n" not in str(info.value)
    with pytest.raises(Reached):
        _segment(monkeypatch, sampler="multigrid", window_sizes=np.array([8, 16], dtype=np.int32))


def test_cluster_alpha_as_a_string_is_refused():
    """The case of the issue: alpha="1" was accepted and sampled with alpha 1."""
    with pytest.raises(TypeError, match=r"^alpha .*must be a number, got '1' \(a string\)$"):
        swcuts.cluster(DATA, alpha="1", steps=5)


def test_numpy_scalars_give_the_same_result_as_python_numbers():
    py = swcuts.cluster(DATA, alpha=1.0, temperature=1.0, steps=40, seed=3, sampler_options={"t": 2})
    npy = swcuts.cluster(DATA, alpha=np.float32(1.0), temperature=np.float64(1.0), steps=np.int64(40),
                         seed=np.int64(3), sampler_options={"t": np.int8(2)})
    assert np.array_equal(py.labels, npy.labels) and py.log_posterior == npy.log_posterior
    py = swcuts.segment(IMG, steps=30, n_atoms=20, seed=1, a2=3, t0=5.0)
    npy = swcuts.segment(IMG, steps=np.int64(30), n_atoms=np.int32(20), seed=np.uint8(1), a2=np.float32(3),
                         t0=np.float64(5.0))
    assert np.array_equal(py.labels, npy.labels) and py.energy == npy.energy


@pytest.mark.parametrize("name", ["swcuts.io.errors", "swcuts.evaluation.benchmarking.failures"])
def test_examples(name):
    import importlib

    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------------------- 2. read_flo checks first
BIG = 1_500_000_000  # bytes of the sparse files: the size of the file


def _sparse_flo(path, header: bytes, size=BIG):
    """A file of ``size`` bytes (sparse: no disk, no time) starting with ``header``."""
    with open(path, "wb") as fh:
        fh.write(header)
        fh.truncate(size)
    return path


def _header(width, height, magic=202021.25):
    return np.array([magic], "<f4").tobytes() + np.array([width, height], "<i4").tobytes()


def _peak_bytes(fn):
    """(what ``fn()`` raised, the peak of Python and numpy allocations during it)."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(InputError) as info:
            fn()
        return info.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("header, words", [
    (b"\x89PNG\r\n\x1a\n" + bytes(4), "magic number"),  # not a .flo file (b"PIEH" is one)
    (_header(100, 100), "too long"),  # the header's 100x100 is not the file's size
    (_header(0, 5), "invalid .flo header"),
    (_header(-3, 5), "invalid .flo header"),
    (_header(2**21, 5), "each must be 1 to 1048576"),
], ids=["magic", "size", "zero_width", "negative_width", "wide"])
def test_read_flo_refuses_a_big_file_from_its_header(tmp_path, header, words):
    from swcuts.io.flow import read_flo

    path = _sparse_flo(tmp_path / "big.flo", header)
    error, peak = _peak_bytes(lambda: read_flo(path))
    assert words in str(error) and "\n" not in str(error), str(error)
    assert peak < 1_000_000, peak  # the 1.5 GB were not read


def test_read_flo_refuses_a_flow_beyond_memory_before_reading_it(tmp_path):
    from swcuts.io.flow import read_flo

    side = 13_000  # a consistent file of 1.35 GB
    path = _sparse_flo(tmp_path / "big.flo", _header(side, side), 12 + 8 * side * side)
    error, peak = _peak_bytes(lambda: read_flo(path, limit_bytes=10**8))
    assert "13000x13000 flow needs about 3 GB" in str(error) and "0.1 GB" in str(error), str(error)
    assert peak < 1_000_000, peak


def test_read_flo_refuses_what_is_not_a_regular_file(tmp_path):
    import os

    from swcuts.io.flow import read_flo

    fifo = tmp_path / "pipe.flo"
    os.mkfifo(fifo)  # opening it to read would wait for a writer
    with pytest.raises(InputError, match="not a regular file"):
        read_flo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        read_flo(tmp_path)


def test_read_flo_reads_a_file_that_fits(tmp_path):
    from swcuts.io.flow import read_flo, write_flo

    flow = np.random.default_rng(0).normal(size=(5, 7, 2)).astype(np.float32)
    flow[1, 2] = np.nan
    write_flo(tmp_path / "f.flo", flow)
    out = read_flo(tmp_path / "f.flo", limit_bytes=18 * 35)
    assert out.dtype == np.float32 and out.flags.writeable and np.array_equal(out, flow, equal_nan=True)
    with pytest.raises(InputError, match="a 7x5 flow needs about 630 bytes"):
        read_flo(tmp_path / "f.flo", limit_bytes=18 * 35 - 1)


# ------------------------------------------------- 3. a benchmark's failed runs
@pytest.fixture(scope="module")
def two_images(tmp_path_factory):
    """A folder data set of two 24x32 images with one annotation each."""
    import imageio.v3 as iio

    root = tmp_path_factory.mktemp("two_images")
    for k in range(2):
        img = np.zeros((24, 32, 3), np.uint8)
        img[:, 16:] = (200, 60 + 40 * k, 40)
        iio.imwrite(root / f"im{k}.png", img)
        iio.imwrite(root / f"im{k}_gt1.png", (np.arange(32)[None, :] >= 16).repeat(24, 0).astype(np.uint8))
    return root


def _failing_segment(monkeypatch, fail_seeds=(0, 1)):
    """segment() fails: out of memory for seed 0, a ValueError for seed 1
    (and runs for the seeds not in ``fail_seeds``)."""
    # Modules that bind ``segment`` by name when first imported would keep the
    # failing one after the test (the CLI's, seen in later tests): import them first.
    import swcuts.cli.app  # noqa: F401

    real = swcuts.segmentation.segment.segment

    def segment(image, *, seed=None, **kw):
        if seed in fail_seeds:
            raise MemoryError if seed == 0 else ValueError("boom at\nseed 1")
        return real(image, seed=seed, **kw)

    monkeypatch.setattr(swcuts.segmentation.segment, "segment", segment)


def _records(rows):
    return rows.to_dict("records") if hasattr(rows, "to_dict") else rows


def test_api_raises_when_no_run_succeeds(two_images, tmp_path, monkeypatch):
    from swcuts.evaluation.benchmarking.failures import RunsFailed

    _failing_segment(monkeypatch)
    out = tmp_path / "bench"
    with pytest.raises(RunsFailed) as info:
        swcuts.benchmark(two_images, output=out, samplers=["swc"], peers=[], seeds=[0, 1], steps=10,
                         workers=1, annotators=False)
    error = info.value
    assert str(error) == "all 4 runs failed: 2 x out of memory; 2 x ValueError: boom at seed 1"
    assert error.reasons == [("out of memory", 2), ("ValueError: boom at seed 1", 2)]
    assert (error.n_failed, error.n_runs) == (4, 4)
    rows = _records(error.rows)  # what would have been returned, and the folder as after any benchmark
    assert len(rows) == 4 and {r["status"] for r in rows} == {"failed"}
    assert (out / "results.csv").is_file() and (out / "report.html").is_file()


def test_api_raises_when_only_the_annotators_succeed(two_images, monkeypatch):
    from swcuts.evaluation.benchmarking.failures import RunsFailed

    _failing_segment(monkeypatch)
    with pytest.raises(RunsFailed, match=r"^no run of a method succeeded; 4 of 6 runs failed: "
                                         r"2 x out of memory; 2 x ValueError: boom at seed 1$"):
        swcuts.benchmark(two_images, samplers=["swc"], peers=[], seeds=[0, 1], steps=10, workers=1)


def test_api_raises_when_no_image_can_be_read(tmp_path):
    from swcuts.evaluation.benchmarking.failures import RunsFailed

    for k in range(2):
        (tmp_path / f"im{k}.png").write_bytes(b"not a picture")
        np.save(tmp_path / f"im{k}_gt1.npy", np.zeros((4, 4), int))
    with pytest.raises(RunsFailed) as info:
        swcuts.benchmark(tmp_path, samplers=["swc"], peers=["felzenszwalb"], steps=10, workers=1)
    reasons = info.value.reasons
    assert len(reasons) == 2 and all(count == 2 and "not an image file" in r for r, count in reasons), reasons
    assert "im0.png" in reasons[0][0] and "im1.png" in reasons[1][0]


def test_api_warns_once_when_some_runs_fail(two_images, monkeypatch):
    from swcuts.evaluation.benchmarking.failures import RunsFailedWarning

    _failing_segment(monkeypatch, fail_seeds=(1,))
    with pytest.warns(RunsFailedWarning) as caught:
        rows = swcuts.benchmark(two_images, samplers=["swc"], peers=[], seeds=[0, 1], steps=10, workers=1,
                                annotators=False)
    assert [str(w.message) for w in caught] == ["2 of 4 runs failed: 2 x ValueError: boom at seed 1"]
    assert [r["status"] for r in _records(rows)] == ["ok", "failed", "ok", "failed"]


def test_api_says_nothing_when_every_run_succeeds(two_images, recwarn):
    rows = swcuts.benchmark(two_images, samplers=[], peers=["felzenszwalb"], workers=1, annotators=False)
    assert {r["status"] for r in _records(rows)} == {"ok"}
    assert not [w for w in recwarn if "runs failed" in str(w.message)]


def _cli(folder, out, *extra):
    from swcuts.cli.app import main

    return main(["benchmark", str(folder), "-o", str(out), "--samplers", "swc", "--peers", "none",
                 "--seeds", "0,1", "--steps", "10", "--workers", "1", "--no-progress", *extra])


def test_cli_exits_1_and_says_each_reason_once_when_no_run_succeeds(two_images, tmp_path, monkeypatch,
                                                                       capsys):
    _failing_segment(monkeypatch)
    assert _cli(two_images, tmp_path / "bench", "--no-annotators") == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"swcuts: error: no run succeeded (all 4 runs failed; their rows are in {tmp_path / 'bench'}):",
        "swcuts:   2 x out of memory",
        "swcuts:   2 x ValueError: boom at seed 1"], err
    assert "Traceback" not in err and out == ""
    assert (tmp_path / "bench" / "results.csv").is_file()


def test_cli_exits_0_and_says_how_many_failed_and_why(two_images, tmp_path, monkeypatch, capsys):
    _failing_segment(monkeypatch, fail_seeds=(1,))
    assert _cli(two_images, tmp_path / "bench", "--no-annotators") == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == ["swcuts: warning: 2 of 4 runs failed:",
                                "swcuts:   2 x ValueError: boom at seed 1"], err
    assert "4 runs (2 failed)" in out


def test_cli_says_nothing_on_stderr_when_every_run_succeeds(two_images, tmp_path, capsys):
    from swcuts.cli.app import main

    assert main(["benchmark", str(two_images), "-o", str(tmp_path / "bench"), "--samplers", "none",
                 "--peers", "felzenszwalb", "--workers", "1", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "(0 failed)" in out
