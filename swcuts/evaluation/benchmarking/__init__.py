"""Benchmarks of segmenters on data sets with human annotations.

:func:`benchmark` runs swcuts' samplers and classical peers on every image
of a data set (:mod:`.runs` executes one run, :mod:`.store` keeps the
output folder, :mod:`.driver` schedules the runs on a process pool or a
Dask cluster, :mod:`.failures` says which runs failed and why);
:mod:`swcuts.evaluation.report` turns the folder into a page.
"""

from swcuts.evaluation.benchmarking.driver import benchmark, tune_peers
from swcuts.evaluation.benchmarking.failures import RunsFailed, RunsFailedWarning
from swcuts.evaluation.benchmarking.runs import (
    DEFAULT_PEERS, DEFAULT_SAMPLERS, RESULT_COLUMNS, TRACE_FILE_COLUMNS, make_methods, parse_grid)

__all__ = ["benchmark", "tune_peers", "RunsFailed", "RunsFailedWarning", "make_methods", "parse_grid",
           "RESULT_COLUMNS", "TRACE_FILE_COLUMNS", "DEFAULT_SAMPLERS", "DEFAULT_PEERS"]
