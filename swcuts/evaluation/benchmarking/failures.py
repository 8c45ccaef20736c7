"""What a benchmark says about its failed runs: how many, and each
distinct reason once with the number of runs it stopped.

A run that fails is recorded (``status="failed"`` and a one-line ``error``)
and the others go on (:func:`~swcuts.evaluation.benchmarking.runs.run_task`). At the
end, :func:`swcuts.benchmark` calls :func:`check_runs`: when no run of a
method (a sampler or a peer; the annotators' rows are not runs of a method)
succeeded it raises :class:`RunsFailed`, which holds the rows; when some
failed it warns once (:class:`RunsFailedWarning`) and returns the rows. The
command line prints the reasons one a line on stderr (:func:`reason_lines`)
and exits with 1 when nothing succeeded, 0 otherwise.
"""

from __future__ import annotations

import warnings
from collections import Counter

__all__ = ["RunsFailed", "RunsFailedWarning", "failure_reasons", "check_runs", "reason_lines"]

#: Reasons in the one-line message of :class:`RunsFailed` and :class:`RunsFailedWarning`
#: (the exception's ``reasons`` and :func:`reason_lines` hold every one).
REASONS_IN_MESSAGE = 5


class RunsFailed(RuntimeError):
    """No run of a benchmark's methods succeeded.

    The message is one line: the number of runs and the most common
    reasons. The output folder (if any) holds the runs, the report included.

    Attributes
    ----------
    rows : pandas.DataFrame or list of dict
        What :func:`swcuts.benchmark` would have returned.
    reasons : list of (str, int)
        Every distinct reason, with its number of runs, most common first.
    n_failed, n_runs : int
        The failed rows, and all rows (annotators' included).
    """

    def __init__(self, message, *, rows, reasons, n_failed, n_runs):
        super().__init__(message)
        self.rows, self.reasons, self.n_failed, self.n_runs = rows, reasons, n_failed, n_runs


class RunsFailedWarning(UserWarning):
    """Some runs of a benchmark failed; the others' rows are returned."""


def failure_reasons(rows) -> list:
    """Each distinct ``error`` of the failed ``rows`` once, with its count:
    ``[(reason, count), ...]``, most common first (ties: first seen first).

    Examples
    --------
    >>> rows = [{"status": "failed", "error": "out of memory"}, {"status": "ok", "error": ""},
    ...         {"status": "failed", "error": "ValueError: x"}, {"status": "failed", "error": "ValueError: x"}]
    >>> failure_reasons(rows)
    [('ValueError: x', 2), ('out of memory', 1)]
    """
    counts = Counter(_reason(r) for r in rows if r.get("status") != "ok")
    return counts.most_common()


def _reason(row) -> str:
    error = row.get("error")
    return " ".join(str(error).split()) if isinstance(error, str) and error.strip() else "no reason recorded"


def _summary(reasons, n_failed, n_runs) -> str:
    """One line: "3 of 10 runs failed: 2 x reason; 1 x reason"."""
    shown = "; ".join(f"{count} x {reason}" for reason, count in reasons[:REASONS_IN_MESSAGE])
    more = len(reasons) - REASONS_IN_MESSAGE
    if more > 0:
        shown += f"; and {more} other reason{'s' if more > 1 else ''}"
    head = f"all {n_runs} runs failed" if n_failed == n_runs else f"{n_failed} of {n_runs} runs failed"
    return f"{head}: {shown}"


def check_runs(rows, table, *, stacklevel=3) -> None:
    """Raise or warn about the failed runs of a benchmark.

    Parameters
    ----------
    rows : list of dict
        The benchmark's rows (``status``, ``error``, ``kind``).
    table : pandas.DataFrame or list of dict
        What the benchmark returns, kept in :attr:`RunsFailed.rows`.
    stacklevel : int
        Of the warning (3: the caller of :func:`swcuts.benchmark`).

    Raises
    ------
    RunsFailed
        When no run of a method (``kind`` other than ``"annotator"``)
        has ``status == "ok"``.

    Warns
    -----
    RunsFailedWarning
        When some runs failed and some succeeded: one warning, one line.
    """
    reasons = failure_reasons(rows)
    if not reasons:
        return
    n_failed = sum(count for _, count in reasons)
    message = _summary(reasons, n_failed, len(rows))
    if not any(r.get("status") == "ok" for r in rows if r.get("kind") != "annotator"):
        if n_failed != len(rows):  # the annotators' rows succeeded
            message = f"no run of a method succeeded; {message}"
        raise RunsFailed(message, rows=table, reasons=reasons, n_failed=n_failed, n_runs=len(rows))
    warnings.warn(message, RunsFailedWarning, stacklevel=stacklevel)


def reason_lines(reasons) -> list:
    """Lines for a terminal, one per distinct reason: ``"  3 x reason"``."""
    width = len(str(max((count for _, count in reasons), default=0)))
    return [f"  {count:>{width}} x {reason}" for reason, count in reasons]
