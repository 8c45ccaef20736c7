"""The Examples sections of the public API run as tests."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import swcuts

#: Modules whose examples run without data from outside the repository.
MODULES = [
    "swcuts.api",
    "swcuts.posterior_energy",
    "swcuts.models.image",
    "swcuts.clustering",
    "swcuts.metrics.regions",
    "swcuts.metrics.boundaries",
    "swcuts.metrics.scores",
    "swcuts.peers",
    "swcuts.diagnostics",
    "swcuts.partition_stats",
    "swcuts.partition",
    "swcuts.synthetic",
    "swcuts.synthetic_scenes",
    "swcuts.datasets",
    "swcuts.benchmarking.runs",
    "swcuts.benchmarking.driver",
    "swcuts.models.boundary",
    "swcuts.motion",
    "swcuts.flow_refine",
    "swcuts.protocols",
    "swcuts.multilevel_anneal",
    "swcuts.samplers.common",
    "swcuts.posterior",
    "swcuts.edges",
    "swcuts.io",
    "swcuts.motion_datasets",
    "swcuts.synthetic_motion",
    "swcuts.posterior_samples",
    "swcuts.motion_peers",
    "swcuts.options",
    "swcuts.image_models",
    "swcuts.motion_metrics",
    "swcuts.compiled_only",
    "swcuts.posterior_outputs",
    "swcuts.models.vertex_stats",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"np": np, "swcuts": swcuts},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
