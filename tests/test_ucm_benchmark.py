"""benchmarks/ucm.py: greedy merging by the mean boundary strength (the UCM
baseline of issue 34, round 9) and the absorption of small regions."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _ucm():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("ucm")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_merged_boundaries_are_pooled_and_stale_pairs_skipped():
    ucm = _ucm()
    # Atoms 0 | 1 over 2: (0, 1) weakest; once merged, {0, 1} | 2 pools
    # (0, 2) at 0.1 and (1, 2) at 0.9 over equal lengths: mean 0.5, not 0.1.
    edges = np.array([[0, 1], [0, 2], [1, 2]])
    merges = ucm.ucm_merges(3, edges, np.array([0.05, 0.1, 0.9]) * 4, np.array([4.0, 4.0, 4.0]))
    assert len(merges) == 2 and sorted(merges[0][:2]) == [0, 1]
    assert np.allclose([m[2] for m in merges], [0.05, 0.5])
    assert ucm.cut_labels(3, merges, 0.3).tolist() == [0, 0, 1]
    assert ucm.cut_labels(3, merges, 0.5).tolist() == [0, 0, 0]
    assert ucm.cut_labels(3, merges, 0.01).tolist() == [0, 1, 2]


def test_heights_never_decrease_and_every_region_merges_once():
    ucm = _ucm()
    rng = np.random.default_rng(0)
    atoms = np.repeat(np.repeat(np.arange(16).reshape(4, 4), 3, 0), 3, 1)
    from swcuts.graph.region_graph import RegionGraph

    graph = RegionGraph.from_labels(atoms)
    sums, counts = ucm.edge_sums(atoms, graph, rng.random(2 * 12 * 11))
    merges = ucm.ucm_merges(16, graph.edges, sums, counts)
    heights = [m[2] for m in merges]
    assert len(merges) == 15 and heights == sorted(heights)
    assert len({m[1] for m in merges}) == 15
    assert counts.sum() == 2 * 3 * 12     # 3 cuts of 12 pixel pairs each way


def test_small_regions_join_the_neighbour_across_their_weakest_boundary():
    ucm = _ucm()
    # Regions 0 (1 pixel) between 1 and 2: its boundary with 2 is weaker.
    edges = np.array([[0, 1], [0, 2], [1, 2]])
    labels = np.array([0, 1, 2])
    area = np.array([1, 10, 10])
    out = ucm.absorb_small(labels, area, edges, np.array([0.8, 0.2, 0.9]), np.ones(3), min_size=5)
    assert out[0] == out[2] != out[1]
    # A small region without neighbours stays; min_size 0 changes nothing.
    assert ucm.absorb_small(labels, area, edges[:0], np.zeros(0), np.zeros(0), 5).tolist() == [0, 1, 2]
