"""The output folder of a benchmark: rows appended as runs end, resumable.

``results.csv`` and ``traces.csv`` grow by whole lines: each run's lines
are written with one ``os.write`` on a descriptor opened with
``O_APPEND`` and flushed to disk (``fsync``) before the next run's, and a
run's trace and label image are written before its result row. So after
an interruption at any point the files hold complete runs, possibly
followed by the trace of a run without a row (stale, ignored by readers),
and ``resume`` runs again exactly the runs without an ``ok`` row.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import numpy as np

from swcuts.io.errors import InputError, show_path
from swcuts.io.image_write import atomic_write, save_label_png
from swcuts.io.output_set import json_text, refuse_inputs
from swcuts.evaluation.benchmarking.runs import RESULT_COLUMNS, TRACE_FILE_COLUMNS

__all__ = ["OutputFolder", "read_rows", "refuse_overwriting"]

#: Settings that must be equal for ``resume`` to add to an earlier benchmark.
RESUME_KEYS = ("budget", "seeds")


def _csv_lines(rows) -> bytes:
    """CSV text (bytes) of rows given as sequences of cells."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return buf.getvalue().encode()


def _cell(v):
    if isinstance(v, (float, np.floating)):
        return "" if not np.isfinite(v) else repr(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return v


def read_rows(path) -> list:
    """The rows of a results CSV as dicts of strings (the last row of a
    ``run_id`` wins: a run repeated by a resume replaces the earlier one)."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or "run_id" not in reader.fieldnames:
                raise InputError(f"'{show_path(path)}' is not a swcuts results file (no run_id column)")
            rows = {r["run_id"]: r for r in reader if r.get("run_id")}
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read '{show_path(path)}': {getattr(exc, 'strerror', None) or exc}") from None
    return list(rows.values())


#: The files of an output folder that a benchmark replaces (besides
#: ``labels/<run_id>.png``); ``results.csv`` and ``traces.csv`` grow, and
#: ``images/<name>.jpg`` is never written over.
REPLACED = ("results.csv", "traces.csv", "summary.json", "report.html")


def refuse_overwriting(path, run_ids, inputs) -> None:
    """Refuse a benchmark whose output folder ``path`` holds one of its
    ``inputs`` (the data set's images and ground truths) under a name it
    writes: its report, summary, results, or the label image of one of
    ``run_ids``.

    Raises
    ------
    InputError
        Naming the file, before any work.
    """
    refuse_inputs(path, [*REPLACED, *(f"labels/{rid}.png" for rid in run_ids)], inputs)


class OutputFolder:
    """Writer of a benchmark's output folder (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The folder; created if missing.
    resume : bool
        Continue the benchmark already in ``path`` (its settings must
        match, see :data:`RESUME_KEYS`). Without it a folder that already
        holds results is refused, so that nothing is overwritten.
    settings : dict
        Written to ``summary.json``.
    """

    def __init__(self, path, *, resume=False, settings=None):
        self.path = Path(path)
        self.settings = dict(settings or {})
        results = self.path / "results.csv"
        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"output '{show_path(self.path)}' exists and is not a directory; choose another -o")
        if results.exists() and not resume:
            raise InputError(f"'{show_path(self.path)}' already holds benchmark results; pass --resume "
                             f"(resume=True) to continue them, or choose another output folder")
        self.done = set()
        self.rows = []
        if resume and results.exists():
            self._check_resumable()
            self.rows = read_rows(results)
            self.done = {r["run_id"] for r in self.rows if r.get("status") == "ok"}
        try:
            for sub in ("", "labels", "images"):
                (self.path / sub).mkdir(parents=True, exist_ok=True)
            for name, columns in (("results.csv", RESULT_COLUMNS), ("traces.csv", TRACE_FILE_COLUMNS)):
                if not (self.path / name).exists():
                    self._append(name, _csv_lines([columns]))
            self.write_summary()
        except OSError as exc:
            raise InputError(f"cannot write the benchmark in '{show_path(self.path)}': "
                             f"{exc.strerror or exc}") from None

    def _check_resumable(self):
        try:
            old = json.loads((self.path / "summary.json").read_text())
        except (OSError, ValueError):
            return
        for key in RESUME_KEYS:
            if key in old and key in self.settings and old[key] != self.settings[key]:
                raise InputError(f"'{show_path(self.path)}' holds a benchmark with {key} {old[key]}, not "
                                 f"{self.settings[key]}; resume with the same {key} or choose another "
                                 f"output folder")
        self.settings.setdefault("started", old.get("started"))

    def _append(self, name: str, data: bytes) -> None:
        fd = os.open(self.path / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)

    def add(self, result) -> None:
        """Record a finished run: its label image, its trace, then its rows."""
        rows = result.rows
        if result.labels is not None and rows and rows[0]["status"] == "ok":
            rel = f"labels/{rows[0]['run_id']}.png"
            save_label_png(self.path / rel, result.labels)
            rows[0]["labels_file"] = rel
        if result.trace:
            rid = rows[0]["run_id"]
            self._append("traces.csv", _csv_lines([rid, *t] for t in result.trace))
        self._append("results.csv", _csv_lines([row[c] for c in RESULT_COLUMNS] for row in rows))
        for row in rows:
            if row["status"] == "ok":
                self.done.add(row["run_id"])
        self.rows.extend(rows)

    def latest_rows(self) -> list:
        """Every row recorded, earlier runs of a resume included; the last
        row of a ``run_id`` wins."""
        return list({r["run_id"]: r for r in self.rows}.values())

    def save_image(self, name: str, image) -> None:
        """``images/<name>.jpg`` for the report's overlays (once per image)."""
        path = self.path / "images" / f"{name}.jpg"
        if path.exists():
            return
        from swcuts.image.prepare import prepare_image

        _, display = prepare_image(image)
        data = np.round(np.clip(display, 0, 1) * 255).astype(np.uint8)

        def write(tmp):
            import imageio.v3 as iio

            iio.imwrite(tmp, data, extension=".jpg", quality=90)

        atomic_write(path, write)

    def write_summary(self, **extra) -> None:
        self.settings.update(extra)
        text = json_text(self.settings)
        atomic_write(self.path / "summary.json", lambda tmp: Path(tmp).write_text(text))
