"""``swcuts.benchmark``: every method on every image of a data set, scored.

Runs go to this process (``workers=1``), a local process pool
(``workers=N``) or a Dask cluster (``scheduler=ADDRESS`` or a
``distributed.Client``); images are read lazily and at most a few runs per
worker are in flight, so a data set of any size runs in bounded memory.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import queue
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from datetime import datetime, timezone

import numpy as np

from swcuts import __version__
from swcuts.io.errors import InputTypeError, check_number, describe, is_integer
from swcuts.io.errors import InputError, show_path
from swcuts.evaluation.benchmarking.runs import (
    DEFAULT_PEERS, DEFAULT_SAMPLERS, RESULT_COLUMNS, RunResult, Task, _empty_row, make_methods,
    run_id, run_task)
from swcuts.evaluation.benchmarking.failures import check_runs
from swcuts.evaluation.benchmarking.store import OutputFolder, refuse_overwriting

__all__ = ["benchmark", "tune_peers"]

#: Columns converted to numbers in the rows :func:`benchmark` returns.
NUMERIC = {"seed": int, "seconds": float, "sample_seconds": float, "steps": int, "n_segments": int,
           "energy": float, "sampler_energy": float, "pri": float, "voi": float, "covering": float,
           "covering_best": float, "bp": float, "br": float, "bf": float, "match_p": int,
           "total_p": int, "match_r": int, "total_r": int}
#: Runs in flight per worker (enough to keep a worker busy while the next
#: image is read, few enough to bound memory).
IN_FLIGHT_PER_WORKER = 2
#: Annotators per image assumed by the progress bar until an image is read (BSDS: 5-7).
ASSUMED_ANNOTATORS = 5


# ---------------------------------------------------------------------------
# Executors: submit(fn, arg) -> future with add_done_callback and result()
# ---------------------------------------------------------------------------


class _Done:
    """A finished call, for the in-process executor."""

    def __init__(self, fn, arg):
        try:
            self._value, self._exc = fn(arg), None
        except BaseException as exc:  # noqa: BLE001 - re-raised by result()
            self._value, self._exc = None, exc

    def add_done_callback(self, fn):
        fn(self)

    def result(self):
        if self._exc is not None:
            raise self._exc
        return self._value


class _InProcess:
    def submit(self, fn, arg):
        return _Done(fn, arg)


def _worker_context():
    """forkserver where there is one: workers start clean (no inherited
    threads or locks, as with spawn) but fork from a server that has
    imported swcuts once, instead of importing it each (about a second)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["swcuts.evaluation.benchmarking.runs", "swcuts.segmentation.segment", "swcuts.evaluation.metrics", "swcuts.evaluation.peers"])
    return ctx


@contextmanager
def _executor(workers: int, scheduler):
    """(executor, number of workers) for the requested back end."""
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError:
            raise InputError("a Dask scheduler needs dask.distributed: pip install 'swcuts[dask]'") from None
        if isinstance(scheduler, Client):
            yield scheduler, max(1, sum(scheduler.nthreads().values()))
            return
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at '{show_path(scheduler)}': {exc}") from None
        try:
            yield client, max(1, sum(client.nthreads().values()))
        finally:
            client.close()
    elif workers == 1:
        yield _InProcess(), 1
    else:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=_worker_context())
        try:
            yield pool, workers
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class _Progress:
    """A progress bar with the time left (on a terminal), whose total may
    grow as images are read (their number of annotators)."""

    def __init__(self, total, enabled, desc="runs"):
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=max(total, 0), unit="run", desc=desc, dynamic_ncols=True, disable=None)

    def grow(self, n):
        if self.bar is not None and n:
            self.bar.total = max(self.bar.total + n, self.bar.n)
            self.bar.refresh()

    def update(self):
        if self.bar is not None:
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _execute(tasks, executor, n_workers, on_result, progress):
    """Run ``tasks`` (an iterator; read lazily) and call ``on_result(task,
    RunResult)`` in this process as each ends, keeping at most
    ``IN_FLIGHT_PER_WORKER * n_workers`` runs in flight."""
    finished = queue.Queue()
    in_flight = 0
    broken = None
    tasks = iter(tasks)

    def submit_next() -> bool:
        task = next(tasks, None)
        if task is None:
            return False
        future = executor.submit(run_task, task)
        future.add_done_callback(lambda f, t=task: finished.put((t, f)))
        return True

    try:
        while in_flight < IN_FLIGHT_PER_WORKER * n_workers and submit_next():
            in_flight += 1
        while in_flight:
            task, future = finished.get()
            in_flight -= 1
            try:
                result = future.result()
            except BrokenProcessPool:
                broken = "a worker process died (out of memory?)"
                result = _failed(task, broken)
            except Exception as exc:  # a worker lost on a cluster, a task it could not unpickle
                result = _failed(task, f"{type(exc).__name__}: {exc}")
            on_result(task, result)
            progress.update()
            if broken is None and submit_next():
                in_flight += 1
    finally:
        progress.close()
    if broken is not None:
        raise InputError(f"{broken}; the runs finished so far are kept: rerun with resume "
                         f"(--resume) and fewer workers")


def _failed(task: Task, error: str) -> RunResult:
    return RunResult([_empty_row(run_id=task.run_id, image=task.image_name, method=task.method,
                                 kind=task.kind, seed=task.seed, options="{}", budget=task.budget,
                                 status="failed", error=" ".join(str(error).split())[:300])])


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------


def _budget(steps, time_budget) -> str:
    from swcuts.inference.budget import check_budget
    from swcuts.segmentation.options import _check_positive_int, _check_real

    _check_positive_int("steps", steps)
    _check_real("time_budget", time_budget, what="a positive number of seconds", allow_none=True)
    if steps is not None and time_budget is not None:
        raise InputError("give either steps or time_budget, not both")
    check_budget(steps, time_budget)
    if steps is not None:
        return f"steps {int(steps)}"
    if time_budget is not None:
        return f"time {float(time_budget):g} s"
    return "default"


def _seeds(seeds) -> list:
    given = seeds
    if is_integer(seeds):
        seeds = [seeds]
    try:
        seeds = list(seeds) if not isinstance(seeds, str) else None
    except TypeError:  # not iterable (a 0-d array included)
        seeds = None
    if seeds is None:
        raise InputTypeError(f"seeds must be a list of non-negative integers, got {describe(given)}")
    if not seeds:
        raise InputError("seeds lists no seed; give at least one, e.g. 0")
    for s in seeds:
        check_number("seeds", s, integer=True, minimum=0, what="non-negative integers")
    if len(set(seeds)) != len(seeds):
        raise InputError(f"a seed is listed twice: {seeds}")
    return [int(s) for s in seeds]


def available_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _workers(workers) -> int:
    if workers is None:
        return available_cores()
    check_number("workers", workers, integer=True, minimum=1, maximum=256,
                 why=" (more processes than swcuts will start; or use a Dask cluster)")
    return int(workers)


def _open(data, split, limit):
    from swcuts.evaluation.datasets import open_dataset

    check_number("limit", limit, integer=True, minimum=1, allow_none=True)
    ds = open_dataset(data, split=split)
    names = list(ds.names)
    if limit is not None:
        names = names[:int(limit)]
    if not names:
        raise InputError(f"data set '{show_path(data)}' holds no image")
    return ds, names


def _files(ds, names) -> list:
    """The files of the images ``names`` of data set ``ds`` and their ground truths."""
    return [path for name in names for path in (ds.image_path(name), *ds.truth_paths(name))]


def _refuse_overwriting(output, ds, names, samplers, peers, grid, seeds, annotators, tune_on, tune_split):
    """Refuse, before any work, an output folder where the benchmark would
    write over a file of its data sets (:func:`.store.refuse_overwriting`)."""
    inputs = _files(ds, names)
    if tune_on is not None and peers:
        inputs += _files(*_open(tune_on, tune_split, None))
    methods = [m.name for m in make_methods(samplers, peers, grid=grid)]
    run_ids = [run_id(name, method, seed) for name in names for method in methods for seed in seeds]
    if annotators:
        run_ids += [run_id(name, "human", 0) for name in names]
    refuse_overwriting(output, run_ids, inputs)


def _typed(row: dict) -> dict:
    out = dict(row)
    for key, conv in NUMERIC.items():
        v = out.get(key)
        if v in ("", None):
            out[key] = math.nan if conv is float else None
        else:
            out[key] = conv(float(v)) if conv is int else conv(v)
    return out


def _as_table(rows):
    rows = [_typed(r) for r in rows]
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


# ---------------------------------------------------------------------------
# Peer tuning
# ---------------------------------------------------------------------------


def tune_peers(data, peers=DEFAULT_PEERS, *, split=None, limit=None, workers=None, scheduler=None,
               progress=False) -> dict:
    """Choose each peer's main parameter by the best mean covering on ``data``.

    Every value of the peer's grid (:data:`swcuts.evaluation.peers.PEERS`) runs on
    every image (seed 0); the value with the highest mean segmentation
    covering wins (ties: the first in the grid).

    Parameters
    ----------
    data : str or Path
        A data set folder (:func:`swcuts.evaluation.datasets.open_dataset`).
    peers : sequence of str
        Peers to tune (``swcuts.evaluation.peers.PEERS``).
    split, limit, workers, scheduler, progress
        As in :func:`benchmark`.

    Returns
    -------
    dict
        ``{peer: {"param", "value", "tuned_on", "split", "n_images",
        "tuned_covering", "grid", "covering_by_value"}}``.

    Examples
    --------
    >>> import tempfile
    >>> from swcuts.evaluation.datasets import _example_folder
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = _example_folder(tmp.name, (16, 20))  # halves.png and halves_gt1.npy
    >>> tuned = tune_peers(folder, ["felzenszwalb"], workers=1)["felzenszwalb"]
    >>> tuned["param"], tuned["value"], tuned["tuned_covering"]
    ('scale', 1600.0, 0.9)
    >>> tmp.cleanup()
    """
    from swcuts.evaluation.peers import PEERS

    peers = [peers] if isinstance(peers, str) else list(peers)
    for peer in peers:
        if peer not in PEERS:
            raise InputError(f"unknown peer '{peer}'; choose from {', '.join(PEERS)}")
    workers = _workers(workers)
    ds, names = _open(data, split, limit)
    scores = {(p, v): [] for p in peers for v in PEERS[p].grid}

    def tasks():
        for name in names:
            sample = ds.read(name)
            for peer in peers:
                spec = PEERS[peer]
                for value in spec.grid:
                    yield Task(run_id(name, f"{peer}[{spec.param}={value}]", 0), name, "peer", peer, peer,
                               {spec.param: value}, 0, sample.image, sample.truths)

    def record(task, result):
        row = result.rows[0]
        if row["status"] == "ok":
            scores[(task.base, task.options[PEERS[task.base].param])].append(row["covering"])

    total = len(names) * sum(len(PEERS[p].grid) for p in peers)
    with _executor(workers, scheduler) as (executor, n):
        _execute(tasks(), executor, n, record, _Progress(total, progress, desc="tuning peers"))
    chosen = {}
    for peer in peers:
        spec = PEERS[peer]
        by_value = {v: float(np.mean(scores[(peer, v)])) if scores[(peer, v)] else math.nan
                    for v in spec.grid}
        finite = [v for v in spec.grid if math.isfinite(by_value[v])]
        if not finite:
            raise InputError(f"peer '{peer}' failed on every tuning image of '{show_path(data)}'")
        best = max(finite, key=lambda v: by_value[v])
        chosen[peer] = {"param": spec.param, "value": best, "tuned_on": str(data), "split": split,
                        "n_images": len(names), "tuned_covering": by_value[best],
                        "grid": list(spec.grid), "covering_by_value": {str(v): by_value[v] for v in spec.grid}}
    return chosen


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------


def benchmark(data, *, output=None, samplers=DEFAULT_SAMPLERS, peers=DEFAULT_PEERS, seeds=(0,),
              steps=None, time_budget=None, split=None, limit=None, grid=None, peer_params=None,
              tune_peers_on=None, tune_split=None, peer_tuning=None, annotators=True, workers=None,
              scheduler=None,
              resume=False, report=True, progress=False):
    """Run swcuts' samplers and classical segmenters on a data set and score them.

    Every (image, method, seed) runs with the same budget (``steps`` or
    ``time_budget`` for every sampler; peers run to completion) and is
    scored against every annotator (:func:`swcuts.evaluation.metrics.benchmark_scores`:
    PRI, VoI, covering, boundary P/R/F); its −log π is computed under
    swcuts' default posterior (:func:`swcuts.energy`), as is every
    annotator's segmentation (method ``human``, scored leave-one-out).

    Parameters
    ----------
    data : str or Path
        A data set folder (:func:`swcuts.evaluation.datasets.open_dataset`: BSDS500,
        BSDS300 or a folder of images with ``NAME_gt*`` label images).
    output : str or Path, optional
        Folder for ``results.csv``, ``traces.csv``, ``labels/``,
        ``images/``, ``summary.json`` and ``report.html`` (see
        :mod:`swcuts.evaluation.benchmarking.store`). None: nothing is written.
    samplers : sequence of str
        swcuts samplers (``swcuts.SAMPLERS``).
    peers : sequence of str
        Classical segmenters (``swcuts.evaluation.peers.PEERS``).
    seeds : sequence of int
        Every method runs once per seed.
    steps, time_budget : int or float, optional
        The samplers' budget (default: each sampler's default budget).
    split : str, optional
        The data set's split (``train``, ``val``, ``test``); None: all.
    limit : int, optional
        Only the first ``limit`` images (sorted by name).
    grid : sequence of str or dict, optional
        A sweep of ``segment``'s options, e.g. ``["a2=1,2,4",
        "edge_scale=0.5,1"]``: every sampler runs with every combination.
    peer_params : dict, optional
        ``{peer: {param: value}}``, e.g. ``{"felzenszwalb": {"scale": 300}}``.
    tune_peers_on : str or Path, optional
        A data set on which each peer's main parameter is chosen first
        (:func:`tune_peers`); overrides ``peer_params`` for those peers.
    tune_split : str, optional
        The split of ``tune_peers_on``.
    peer_tuning : dict, optional
        What :func:`tune_peers` returned on an earlier call: its values
        are used, and the report says where they were tuned.
    annotators : bool
        Add the annotators' rows.
    workers : int, optional
        Local worker processes (default: one per available core; 1: every
        run in this process).
    scheduler : str or distributed.Client, optional
        A Dask scheduler address (``tcp://host:8786``) or client: the runs
        go to that cluster instead (``pip install 'swcuts[dask]'``).
    resume : bool
        Continue the benchmark in ``output``, skipping the finished runs.
    report : bool
        Write ``report.html`` at the end.
    progress : bool
        A progress bar with the time left, on a terminal.

    Returns
    -------
    pandas.DataFrame or list of dict
        One row per run (``RESULT_COLUMNS``), the earlier runs of a resumed
        benchmark included; a DataFrame when pandas is installed. A run
        that failed has ``status="failed"`` and its reason in ``error``.

    Raises
    ------
    RunsFailed
        When no run of a sampler or peer succeeded (every image unreadable,
        every run out of memory, ...): one line with the number of runs and
        the reasons; its ``rows`` are what would have been returned, its
        ``reasons`` every distinct reason with its count. The output folder
        (with ``output``) is written as for a benchmark that succeeded.
    InputError
        For bad options or a data set that cannot be opened, before any run.

    Warns
    -----
    RunsFailedWarning
        When some runs failed: one line with their number and each distinct
        reason once, with its count (:mod:`swcuts.evaluation.benchmarking.failures`).

    Examples
    --------
    A one-image data set (a folder with ``NAME.png`` and ``NAME_gt1.npy``),
    one sampler and one peer, in this process:

    >>> import tempfile
    >>> from swcuts.evaluation.datasets import _example_folder
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = _example_folder(tmp.name, (16, 20))  # halves.png and halves_gt1.npy
    >>> rows = swcuts.benchmark(folder, samplers=["swc"], peers=["felzenszwalb"], steps=100,
    ...                         workers=1, annotators=False)
    >>> records = rows.to_dict("records") if hasattr(rows, "to_dict") else rows  # pandas or not
    >>> [(r["method"], round(r["pri"], 2)) for r in records]
    [('swc', 1.0), ('felzenszwalb', 0.83)]
    >>> tmp.cleanup()

    On BSDS500's test split, two samplers, two seeds, with a report:

    >>> rows = swcuts.benchmark("BSDS500/data", split="test", samplers=["swc", "gibbs"],
    ...                         time_budget=5, seeds=[0, 1], output="bench")  # doctest: +SKIP
    >>> rows.groupby("method")[["pri", "voi", "covering", "bf"]].mean()  # doctest: +SKIP
    """
    from swcuts.evaluation.peers import PEERS

    budget = _budget(steps, time_budget)
    seeds = _seeds(seeds)
    workers = _workers(workers)
    peers = [peers] if isinstance(peers, str) else list(peers)
    make_methods(samplers, peers, grid=grid, peer_params=peer_params)  # refuse bad names before work
    ds, names = _open(data, split, limit)
    if output is not None:
        _refuse_overwriting(output, ds, names, samplers, peers, grid, seeds, annotators, tune_peers_on,
                            tune_split)
    peer_info = {p: {"param": PEERS[p].param, "value": (peer_params or {}).get(p, {}).get(
        PEERS[p].param, PEERS[p].default), "tuned_on": None, "grid": list(PEERS[p].grid)} for p in peers}
    if tune_peers_on is not None and peers:
        peer_tuning = tune_peers(tune_peers_on, peers, split=tune_split, workers=workers, scheduler=scheduler,
                                 progress=progress)
    if peer_tuning:
        tuned = {p: t for p, t in peer_tuning.items() if p in peers}
        peer_info.update(tuned)
        peer_params = {**(peer_params or {}), **{p: {t["param"]: t["value"]} for p, t in tuned.items()}}
    methods = make_methods(samplers, peers, grid=grid, peer_params=peer_params)
    settings = {"version": __version__, "data": str(data), "split": split, "n_images": len(names),
                "layout": getattr(ds, "layout", None), "methods": [m.name for m in methods],
                "samplers": list(samplers) if not isinstance(samplers, str) else [samplers],
                "peers": peer_info, "grid": grid if grid else None, "budget": budget, "seeds": seeds,
                "workers": workers, "scheduler": None if scheduler is None else str(scheduler),
                "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    store = OutputFolder(output, resume=resume, settings=settings) if output is not None else None
    done = store.done if store is not None else set()
    rows = [] if store is None else None
    kw = dict(steps=steps, time_budget=time_budget, budget=budget)

    def tasks():
        for name in names:
            try:
                sample = ds.read(name)
            except InputError as exc:  # recorded for every run of the image; the others go on
                for m in methods:
                    for seed in seeds:
                        yield Task(run_id(name, m.name, seed), name, m.kind, m.name, m.base, {}, seed,
                                   None, [], error=str(exc), **kw)
                continue
            if store is not None:
                store.save_image(name, sample.image)
            if annotators:
                bar.grow(len(sample.truths) - ASSUMED_ANNOTATORS)
                for k in range(len(sample.truths)):
                    if run_id(name, "human", k) not in done:
                        yield Task(run_id(name, "human", k), name, "annotator", "human", "human", {}, k,
                                   sample.image, sample.truths)
            for m in methods:
                for seed in seeds:
                    rid = run_id(name, m.name, seed)
                    if rid not in done:
                        yield Task(rid, name, m.kind, m.name, m.base, dict(m.options), seed,
                                   sample.image, sample.truths, **kw)

    def record(task, result):
        if store is not None:
            store.add(result)
        else:
            rows.extend(result.rows)

    per_image = len(methods) * len(seeds) + (ASSUMED_ANNOTATORS if annotators else 0)
    bar = _Progress(len(names) * per_image - len(done), progress)
    with _executor(workers, scheduler) as (executor, n):
        _execute(tasks(), executor, n, record, bar)
    if store is not None:
        store.write_summary(finished=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        if report:
            from swcuts.evaluation.report import build_report

            build_report(store.path)
        rows = store.latest_rows()
    table = _as_table(rows)
    check_runs(rows, table)
    return table
