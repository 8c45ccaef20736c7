"""The "learned" posterior's atoms merged along their weakest boundaries
(``atom_merge`` of its MODELS entry; issue 34, round 9)."""

from __future__ import annotations

import numpy as np
import pytest

import swcuts
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.boundary import learned_pair_weights
from swcuts.segmentation.build import merge_atoms
from swcuts.segmentation.image_models import MODELS, model_atom_merge


def _strips(rng, probs, width=4, height=6):
    """Atoms of vertical strips ``width`` wide, and a map whose columns at
    each strip boundary have the given probabilities (noise elsewhere low)."""
    n = len(probs) + 1
    atoms = np.repeat(np.arange(n), width)[None, :].repeat(height, 0)
    p = rng.uniform(0.001, 0.01, atoms.shape)
    for k, q in enumerate(probs):
        p[:, (k + 1) * width] = q
    return atoms, p


@pytest.mark.parametrize("seed", [0, 1])
def test_boundaries_below_the_level_are_merged_and_the_others_kept(seed):
    rng = np.random.default_rng(seed)
    probs = rng.uniform(0.02, 0.5, 5)
    atoms, p = _strips(rng, probs)
    level = -2.0
    merged, graph = merge_atoms(atoms, RegionGraph.from_labels(atoms), p, level=level, min_pixels=0)
    kept = np.log(probs / (1 - probs)) >= level
    assert graph.n_vertices == 1 + kept.sum()
    # Neighbouring strips share a label exactly where their boundary is weak.
    same = merged[0, ::4][:-1] == merged[0, ::4][1:]
    assert np.array_equal(same, ~kept)
    # The mean log-odds of every boundary left is at least the level.
    w = -learned_pair_weights(merged, probability=p)
    a = np.concatenate([merged[:, :-1].ravel(), merged[:-1, :].ravel()])
    b = np.concatenate([merged[:, 1:].ravel(), merged[1:, :].ravel()])
    for i, j in graph.edges:
        assert w[(a == i) & (b == j) | (a == j) & (b == i)].mean() >= level


def test_small_atoms_join_a_neighbour_whatever_their_boundary():
    rng = np.random.default_rng(2)
    atoms, p = _strips(rng, [0.9, 0.9], width=4, height=25)     # strong boundaries, 100 px atoms
    graph = RegionGraph.from_labels(atoms)
    assert merge_atoms(atoms, graph, p, level=-2.0, min_pixels=0)[1].n_vertices == 3
    # 100 pixels of 300: min_pixels 40 per 10^5 pixels is 0.12 px here; 40000 is 120.
    assert merge_atoms(atoms, graph, p, level=-2.0, min_pixels=40)[1].n_vertices == 3
    assert merge_atoms(atoms, graph, p, level=-2.0, min_pixels=40000)[1].n_vertices < 3


def test_segment_samples_the_merged_atoms_and_can_do_without(monkeypatch):
    rng = np.random.default_rng(3)
    image = np.zeros((48, 64, 3))
    image[:, 32:] = [0.8, 0.2, 0.1]
    image += rng.normal(0, 0.03, image.shape)
    image = np.clip(image, 0, 1)
    assert model_atom_merge("learned") is not None
    merged = swcuts.segment(image, seed=0, model="learned")
    monkeypatch.setitem(MODELS["learned"], "atom_merge", None)
    plain = swcuts.segment(image, seed=0, model="learned")
    assert merged.graph.n_vertices < plain.graph.n_vertices
    assert merged.atoms.max() + 1 == merged.graph.n_vertices
    # The merged atoms are unions of the plain ones.
    pairs = set(zip(plain.atoms.ravel().tolist(), merged.atoms.ravel().tolist()))
    assert len(pairs) == plain.graph.n_vertices
