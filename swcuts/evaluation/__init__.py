"""Scoring and comparing: metrics, data sets (real and synthetic), classical peers, the benchmark and its report."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.evaluation.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "benchmarking", "calibration", "datasets", "metrics", "motion_datasets", "motion_metrics", "motion_peers",
    "peers", "report", "report_html", "results", "synthetic"
])
