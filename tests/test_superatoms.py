"""Super-atoms (swcuts.graph.superatoms): merges along the weakest boundaries
never remove a boundary stronger than one that is kept."""

import numpy as np
import pytest
from scipy import ndimage

from swcuts.graph.region_graph import RegionGraph
from swcuts.graph.superatoms import edge_means, merge_weakest, pair_strengths, thin_atoms


def _setting(seed, side=6, cell=3):
    """A side x side grid of square atoms (cell x cell pixels) and a random
    boundary map with a few strong ridges."""
    rng = np.random.default_rng(seed)
    atoms = np.kron(np.arange(side * side).reshape(side, side), np.ones((cell, cell), dtype=np.int64))
    prob = rng.uniform(0.0, 0.3, size=atoms.shape)
    prob[:, rng.integers(1, atoms.shape[1] - 1)] = 0.95
    prob[rng.integers(1, atoms.shape[0] - 1), :] = 0.9
    return atoms, RegionGraph.from_labels(atoms), pair_strengths(prob)


def _crossed_stronger(sa, strength):
    """How far the strongest boundary merged away (between atoms now in one
    super-atom) exceeds the weakest boundary kept: > 0 is a violation."""
    return sa.merge_levels.max() - sa.strength.min()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kept_boundaries_are_at_least_as_strong_as_merged_ones(seed):
    atoms, graph, strength = _setting(seed)
    for k in (30, 12, 4, 2):
        sa = merge_weakest(atoms, graph, strength, n_regions=k)
        assert sa.n_regions == k and sa.merge_levels.size == graph.n_vertices - k
        assert np.all(np.diff(sa.merge_levels) >= -1e-12)          # merge levels never decrease
        assert _crossed_stronger(sa, strength) <= 1e-12
        # The kept strengths are the means along the super-atoms' boundaries.
        assert np.allclose(sa.strength, edge_means(strength, sa.labels, sa.graph))
        # Labels are the atoms' super-atoms, and every super-atom is connected.
        assert np.array_equal(sa.labels, sa.of_atom[atoms])
        for v in range(k):
            assert ndimage.label(sa.labels == v)[1] == 1


def test_strongest_first_merging_is_caught():
    # Negative control: merging along the strongest boundaries (the weakest
    # of the negated strength) removes boundaries stronger than kept ones.
    atoms, graph, strength = _setting(0)
    wrong = merge_weakest(atoms, graph, -strength, n_regions=12)
    wrong.strength = edge_means(strength, wrong.labels, wrong.graph)
    wrong.merge_levels = -wrong.merge_levels
    assert _crossed_stronger(wrong, strength) > 0.1


def test_max_level_stops_at_the_first_strong_boundary():
    atoms, graph, strength = _setting(1)
    sa = merge_weakest(atoms, graph, strength, max_level=0.5)
    assert sa.merge_levels.max() < 0.5 <= sa.strength.min()
    assert 2 <= sa.n_regions <= 9                  # the two ridges leave a few parts
    everything = merge_weakest(atoms, graph, strength)
    assert everything.n_regions == 1 and everything.strength.size == 0


def test_bad_input():
    atoms, graph, strength = _setting(0)
    with pytest.raises(ValueError):
        merge_weakest(atoms, graph, strength, n_regions=0)
    with pytest.raises(ValueError):
        pair_strengths(np.zeros(4))


def test_min_size_merges_small_regions_first():
    atoms, graph, strength = _setting(2)
    sa = merge_weakest(atoms, graph, strength, n_regions=6, min_size=20)   # atoms have 9 pixels
    assert sa.n_regions == 6 and sa.graph.pixel_count.min() >= 20
    # The levels recorded are those of the weakest-first merges that followed.
    assert np.all(np.diff(sa.merge_levels) >= -1e-12) and _crossed_stronger(sa, strength) <= 1e-12
    plain = merge_weakest(atoms, graph, strength, n_regions=6)
    assert plain.graph.pixel_count.min() < 20         # without it, a small region is kept


def test_fold_thin_merges_slivers_on_a_ridge():
    # Two blocks and, on the ridge between them, a column of one-pixel slivers
    # (the watershed's leftovers on a sharp step): both their boundaries are strong.
    atoms = np.zeros((12, 13), dtype=np.int64)
    atoms[:, 7:] = 1
    atoms[:, 6] = 2 + np.arange(12) // 4          # three slivers, 4 px each
    prob = np.full(atoms.shape, 0.02)
    prob[:, 5:8] = 0.9
    graph = RegionGraph.from_labels(atoms)
    strength = pair_strengths(prob)
    assert thin_atoms(atoms).tolist() == [False, False, True, True, True]
    kept = merge_weakest(atoms, graph, strength, max_level=0.5)
    folded = merge_weakest(atoms, graph, strength, max_level=0.5, fold_thin=True)
    assert kept.n_regions == 5          # the negative control: without the fold they stay
    assert folded.n_regions == 2
    # Each block keeps its pixels: the slivers joined one side or the other.
    assert len(np.unique(folded.labels[:, :6])) == 1 and len(np.unique(folded.labels[:, 7:])) == 1
    # A sliver taken in by another sliver is folded as well (no region is left without an interior).
    assert not thin_atoms(folded.labels).any()
