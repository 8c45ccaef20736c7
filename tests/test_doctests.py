"""The Examples sections of the public API run as tests."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

import swcuts

#: Modules whose examples run without data from outside the repository.
MODULES = [
    "swcuts.segmentation.segment",
    "swcuts.segmentation.result",
    "swcuts.segmentation.energy",
    "swcuts.models.image",
    "swcuts.clustering",
    "swcuts.evaluation.metrics.regions",
    "swcuts.evaluation.metrics.boundaries",
    "swcuts.evaluation.metrics.scores",
    "swcuts.evaluation.peers",
    "swcuts.inference.diagnostics",
    "swcuts.inference.partition_stats",
    "swcuts.models.partition",
    "swcuts.evaluation.synthetic.images",
    "swcuts.evaluation.synthetic.scenes",
    "swcuts.evaluation.datasets",
    "swcuts.evaluation.benchmarking.runs",
    "swcuts.evaluation.benchmarking.driver",
    "swcuts.models.boundary",
    "swcuts.motion.segment",
    "swcuts.motion.flow_refine",
    "swcuts.motion.pyramid",
    "swcuts.motion.uncertainty",
    "swcuts.motion.fusion",
    "swcuts.models.protocols",
    "swcuts.inference.multilevel_anneal",
    "swcuts.samplers.common",
    "swcuts.samplers.swc",
    "swcuts.segmentation.posterior",
    "swcuts.graph.edge_probabilities",
    "swcuts.io.flow",
    "swcuts.evaluation.motion_datasets",
    "swcuts.evaluation.synthetic.motion",
    "swcuts.evaluation.synthetic.nonrigid",
    "swcuts.models.affine_objects",
    "swcuts.samplers.objects",
    "swcuts.inference.posterior_samples",
    "swcuts.samplers.registry",
    "swcuts.evaluation.motion_peers",
    "swcuts.segmentation.options",
    "swcuts.segmentation.image_models",
    "swcuts.evaluation.motion_metrics",
    "swcuts._numba.compiled_only",
    "swcuts.cli.posterior_outputs",
    "swcuts.cli.common",
    "swcuts.models.vertex_stats",
    "swcuts.image.atoms",
    "swcuts.image.boundary_context",
    "swcuts.image.boundary_conv",
    "swcuts.image.boundary_detector",
    "swcuts.image.boundary_weights",
    "swcuts.image.edge_forest",
    "swcuts.image.edge_forest_train",
    "swcuts.image.edge_forest_votes",
    "swcuts.graph.learned_edges",
    "swcuts.graph.superatoms",
    "swcuts.segmentation.edge_posterior",
    "swcuts.samplers.blocks",
    "swcuts.graph.region_graph",
    "swcuts.models.coarsening",
    "swcuts.models.image",
    "swcuts.io.weights",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"np": np, "swcuts": swcuts},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
