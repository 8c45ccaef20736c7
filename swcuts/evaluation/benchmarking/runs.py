"""One benchmark run, as a worker executes it: segment, score, measure −log π.

A :class:`Task` carries everything a worker needs (the image and its
ground truths included), so a task runs the same in this process, in a
local process pool or on a Dask worker on another machine, and a run
with a step budget gives the same row wherever it runs (but for the
seconds).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from swcuts.io.errors import InputError, one_line

__all__ = ["Method", "Task", "RunResult", "run_task", "annotator_row", "make_methods", "parse_grid",
           "run_id", "RESULT_COLUMNS", "TRACE_FILE_COLUMNS", "DEFAULT_SAMPLERS", "DEFAULT_PEERS"]

RESULT_COLUMNS = ("run_id", "image", "method", "kind", "seed", "options", "status", "error", "budget",
                  "seconds", "sample_seconds", "steps", "n_segments", "energy", "sampler_energy",
                  "pri", "voi", "covering", "covering_best", "bp", "br", "bf",
                  "match_p", "total_p", "match_r", "total_r", "labels_file")
TRACE_FILE_COLUMNS = ("run_id", "step", "seconds", "temperature", "energy", "labels")
SCORE_KEYS = ("pri", "voi", "covering", "covering_best", "bp", "br", "bf",
              "match_p", "total_p", "match_r", "total_r")
DEFAULT_SAMPLERS = ("swc",)
DEFAULT_PEERS = ("felzenszwalb", "slic-ncut", "opencv-graphseg")
#: At most this many trace rows are kept per run (every new best energy,
#: and an even spread of the other rows).
MAX_TRACE_ROWS = 300
#: Options of ``segment`` that a sweep (``grid``) may set, with their types.
GRID_OPTIONS = {"a0": float, "a1": float, "a2": float, "kappa": float, "bins": int,
                "edge_scale": float, "q_max": float, "n_atoms": int, "t0": float, "t_final": float,
                "atoms": str, "init": str, "model": str}


# ---------------------------------------------------------------------------
# Methods
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One method of a benchmark: a sampler (with options) or a peer.

    ``name`` is what the report shows: the sampler or peer name, with the
    swept options in brackets for a sampler (``swc[a2=2]``).
    """

    name: str
    kind: str  # "sampler" or "peer"
    base: str
    options: tuple = ()


def _format_value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def parse_grid(grid) -> list:
    """The option sets of a sweep of ``segment``'s options.

    Parameters
    ----------
    grid : sequence of str, dict or None
        ``["a2=1,2", "edge_scale=0.5,1"]`` (the CLI's ``--grid``) or
        ``{"a2": [1, 2], "edge_scale": [0.5, 1]}``.

    Returns
    -------
    list of dict
        Every combination (``[{}]`` for no grid).

    Examples
    --------
    >>> parse_grid(["a2=1,2", "bins=16"])
    [{'a2': 1.0, 'bins': 16}, {'a2': 2.0, 'bins': 16}]
    """
    if not grid:
        return [{}]
    if isinstance(grid, dict):
        items = [(k, list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in grid.items()]
    else:
        items = []
        for spec in grid:
            key, sep, values = str(spec).partition("=")
            if not sep or not values.strip():
                raise InputError(f"grid entry '{spec}' is not NAME=V1,V2,...; e.g. a2=1,2,4")
            items.append((key.strip().replace("-", "_"), [v.strip() for v in values.split(",") if v.strip()]))
    parsed = []
    for key, values in items:
        if key not in GRID_OPTIONS:
            raise InputError(f"grid option '{key}' is not one segment() can sweep; "
                             f"choose from {', '.join(GRID_OPTIONS)}")
        if not values:
            raise InputError(f"grid option '{key}' lists no value")
        conv = GRID_OPTIONS[key]
        try:
            parsed.append((key, [conv(v) if isinstance(v, str) else v for v in values]))
        except ValueError:
            raise InputError(f"grid option '{key}' takes {conv.__name__} values, got "
                             f"{','.join(map(str, values))}") from None
    keys = [k for k, _ in parsed]
    return [dict(zip(keys, combo)) for combo in itertools.product(*(v for _, v in parsed))]


def make_methods(samplers=DEFAULT_SAMPLERS, peers=DEFAULT_PEERS, *, grid=None, peer_params=None) -> list:
    """The methods of a benchmark: every sampler with every option set of
    ``grid``, then every peer (with ``peer_params[peer]`` as its options).

    Unknown samplers, peers and options are refused with a one-line
    :class:`~swcuts.io.errors.InputError` before any work starts.

    Parameters
    ----------
    samplers : str or sequence of str
        swcuts samplers (``swcuts.SAMPLERS``).
    peers : str or sequence of str
        Classical segmenters (``swcuts.evaluation.peers.PEERS``).
    grid : sequence of str or dict, optional
        A sweep of ``segment``'s options (:func:`parse_grid`).
    peer_params : dict, optional
        ``{peer: {param: value}}``.

    Returns
    -------
    list of Method
        The samplers (one per option set, every one sampling the same
        posterior) then the peers.

    Examples
    --------
    >>> [m.name for m in make_methods(["swc"], ["felzenszwalb"], grid=["a2=1,2"])]
    ['swc[a2=1]', 'swc[a2=2]', 'felzenszwalb']
    """
    from swcuts.segmentation.options import check_options, common_model
    from swcuts.evaluation.peers import PEERS

    if isinstance(samplers, str):
        samplers = [samplers]
    if isinstance(peers, str):
        peers = [peers]
    methods = []
    grid = parse_grid(grid)
    # One posterior for every sampler and option set.
    model = common_model([(s, opts.get("atoms")) for s in samplers for opts in grid]) if samplers else None
    for sampler in samplers:
        for opts in grid:
            check_options(sampler=sampler, **opts)
            tag = ",".join(f"{k}={_format_value(v)}" for k, v in opts.items())
            methods.append(Method(f"{sampler}[{tag}]" if tag else sampler, "sampler", sampler,
                                  tuple({"model": model, **opts}.items())))
    for peer in peers:
        if peer not in PEERS:
            raise InputError(f"unknown peer '{peer}'; choose from {', '.join(PEERS)}")
        opts = dict((peer_params or {}).get(peer, {}))
        methods.append(Method(peer, "peer", peer, tuple(sorted(opts.items()))))
    names = [m.name for m in methods]
    if not names:
        raise InputError("no method to run; name at least one sampler or peer")
    if len(set(names)) != len(names):
        raise InputError(f"a method is listed twice: {', '.join(names)}")
    return methods


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=,-]+", "_", str(text)).strip("_") or "x"


def run_id(image: str, method: str, seed) -> str:
    """The key of a run, also its file name: ``<image>__<method>__s<seed>``."""
    return f"{_slug(image)}__{_slug(method)}__s{seed}"


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


@dataclass
class Task:
    """One run: a method on an image with a seed and a budget.

    ``kind="annotator"`` scores annotator ``seed`` of the image instead.
    """

    run_id: str
    image_name: str
    kind: str  # "sampler", "peer" or "annotator"
    method: str
    base: str
    options: dict
    seed: int
    image: np.ndarray
    truths: list
    steps: int = None
    time_budget: float = None
    budget: str = "default"
    error: str = None  # set when the image could not be read: the run fails at once


@dataclass
class RunResult:
    """What a worker sends back: the result rows (one),
    the thinned trace (step, seconds, temperature, energy, labels) and the
    run's label image."""

    rows: list
    trace: list = field(default_factory=list)
    labels: np.ndarray = None


def _empty_row(**values) -> dict:
    row = dict.fromkeys(RESULT_COLUMNS, "")
    row.update(values)
    return row


def _scores(labels, truths) -> dict:
    from swcuts.evaluation.metrics.scores import benchmark_scores

    scores = benchmark_scores(labels, truths)
    return {k: scores[k] for k in SCORE_KEYS}


def _error(exc: BaseException) -> str:
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, InputError):
        return one_line(exc)
    return f"{type(exc).__name__}: {one_line(exc)}"


def _thin_trace(trace) -> list:
    """Rows (step, seconds, temperature, energy, labels) of a Trace: every
    new best energy and an even spread of the rest, at most
    :data:`MAX_TRACE_ROWS` (the best-so-far curve is kept exactly when it
    has fewer steps than that)."""
    cols = trace.as_arrays()
    n = len(cols["step"])
    if n == 0:
        return []
    energy = np.asarray(cols["energy"], dtype=float)
    best = np.minimum.accumulate(energy)
    keep = np.zeros(n, dtype=bool)
    keep[[0, n - 1]] = True
    keep[1:] |= best[1:] < best[:-1]
    if keep.sum() > MAX_TRACE_ROWS:
        idx = np.flatnonzero(keep)
        keep[:] = False
        keep[idx[np.round(np.linspace(0, idx.size - 1, MAX_TRACE_ROWS)).astype(int)]] = True
    spare = MAX_TRACE_ROWS - int(keep.sum())
    if spare > 0:
        keep[np.round(np.linspace(0, n - 1, min(spare, n))).astype(int)] = True
    return [(int(cols["step"][i]), float(cols["seconds"][i]), float(cols["temperature"][i]),
             float(energy[i]), int(cols["labels"][i])) for i in np.flatnonzero(keep)]


@contextmanager
def one_core():
    """Run the body with the thread pools of BLAS/OpenMP (threadpoolctl)
    and of OpenCV at one thread each, restored after.

    Every run of a benchmark is timed on one core: a peer whose linear
    algebra spread over every core would otherwise be timed unfairly
    against the samplers (single-threaded), and with one run per core
    (``workers`` = cores) extra threads only fight over the cores.
    """
    import cv2
    from threadpoolctl import threadpool_limits

    before = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        cv2.setNumThreads(before)


def run_task(task: Task) -> RunResult:
    """Run a task on one core (:func:`one_core`) and score it.

    A failing run does not raise: its row has ``status="failed"`` and a
    one-line ``error``, so one bad image does not stop a benchmark.
    """
    with one_core():
        return _run_task(task)


def _run_task(task: Task) -> RunResult:
    from swcuts.segmentation.energy import energy
    from swcuts.segmentation.segment import segment

    if task.kind == "annotator":  # the first annotator's labels go to the report's gallery
        row = annotator_row(task.image_name, task.image, task.truths, task.seed)
        return RunResult([row], labels=np.asarray(task.truths[0]) if task.seed == 0 else None)
    row = _empty_row(run_id=task.run_id, image=task.image_name, method=task.method, kind=task.kind,
                     seed=task.seed, options=json.dumps(task.options, sort_keys=True),
                     budget=task.budget)
    if task.error is not None:
        row.update(status="failed", error=" ".join(task.error.split()))
        return RunResult([row])
    start = time.perf_counter()
    try:
        if task.kind == "sampler":
            seg = segment(task.image, sampler=task.base, seed=task.seed, steps=task.steps,
                          time_budget=task.time_budget, **task.options)
            labels, trace = seg.labels, _thin_trace(seg.trace)
            row.update(sample_seconds=seg.seconds, steps=seg.steps, sampler_energy=seg.energy)
        else:
            from swcuts.evaluation.peers import run_peer

            labels = run_peer(task.base, task.image, seed=task.seed, **task.options)
            trace = []
        seconds = time.perf_counter() - start
        row.update(seconds=seconds, n_segments=int(np.unique(labels).size),
                   energy=energy(task.image, labels))
        if task.kind == "peer":
            row["sample_seconds"] = seconds
        row.update(_scores(labels, task.truths), status="ok")
        return RunResult([row], trace, np.asarray(labels))
    except Exception as exc:  # MemoryError included: recorded, the others go on
        row.update(status="failed", error=_error(exc), seconds=time.perf_counter() - start)
        return RunResult([row])


def annotator_row(image_name, image, truths, k) -> dict:
    """The row of annotator ``k`` of an image (method ``human``, seed = k):
    its segmentation's −log π under the reference posterior and its scores
    against the other annotators (leave-one-out; none with a single one)."""
    from swcuts.segmentation.energy import energy

    start = time.perf_counter()
    truth = truths[k]
    row = _empty_row(run_id=run_id(image_name, "human", k), image=image_name, method="human",
                     kind="annotator", seed=k, options="{}", budget="", status="ok")
    try:
        row.update(energy=energy(image, truth), n_segments=int(np.unique(truth).size))
        others = [t for j, t in enumerate(truths) if j != k]
        if others:
            row.update(_scores(truth, others))
    except Exception as exc:
        row.update(status="failed", error=_error(exc))
    row["seconds"] = row["sample_seconds"] = time.perf_counter() - start
    return row
