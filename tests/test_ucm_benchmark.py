"""benchmarks/ucm.py (the UCM baseline of issue 34, round 9): its cut of
the mean-strength hierarchy and the absorption of small regions."""

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


def test_the_cut_at_a_threshold_keeps_the_stronger_boundaries():
    ucm = _ucm()
    from swcuts.graph.region_graph import RegionGraph

    atoms = np.array([[0, 0, 1, 1, 2, 2]] * 3)
    p = np.array([[0.0, 0.25, 0.25, 0.75, 0.5, 0.5]] * 3)   # boundaries 0|1: 0.25, 1|2: 0.75
    graph = RegionGraph.from_labels(atoms)
    strength = ucm.pair_strength(p, "p")
    assert ucm.ucm_cut(atoms, graph, strength, 0.1).tolist() == [0, 1, 2]
    assert ucm.ucm_cut(atoms, graph, strength, 0.5).tolist() == [0, 0, 1]
    assert ucm.ucm_cut(atoms, graph, strength, 0.9).tolist() == [0, 0, 0]
    from swcuts.graph.superatoms import edge_sums

    sums, counts = edge_sums(strength, atoms, graph)
    assert np.allclose(sums / counts, [0.25, 0.75]) and counts.tolist() == [3, 3]


def test_small_regions_join_the_neighbour_across_their_weakest_boundary():
    ucm = _ucm()
    # Region 0 (1 pixel, at the top of the middle column) between regions 1
    # (left) and 2 (right): its boundary with 2 is weaker.
    atoms = np.array([[1, 0, 2]] + [[1, 3, 2]] * 4)
    p = np.array([[0.0, 0.8, 0.2]] + [[0.0, 0.95, 0.95]] * 4)
    strength = ucm.pair_strength(p, "p")
    regions = np.array([0, 1, 2, 1])      # atom 3 belongs to region 1
    out = ucm.absorb_small(regions, atoms, strength, min_size=2)
    assert out[0] == out[2] != out[1]
    # A small region without neighbours stays; min_size 0 changes nothing.
    alone = np.zeros((3, 3), dtype=np.int64)
    assert ucm.absorb_small(np.array([0]), alone, ucm.pair_strength(np.zeros((3, 3)), "p"), 5).tolist() == [0]
    assert ucm.absorb_small(regions, atoms, strength, 0).tolist() == [0, 1, 2, 1]
