"""Tests of swcuts.graph.learned_edges: learned SW-cut edge probabilities."""

import numpy as np
import pytest

from swcuts.graph import learned_edges as le
from swcuts.graph.region_graph import RegionGraph
from swcuts.io.errors import InputError


def _scene(channels=3, seed=0):
    """Two halves with a step between columns 19 and 20, cut into 4 x 3 atoms,
    and a boundary map that is high on the step only."""
    rng = np.random.default_rng(seed)
    img = np.full((30, 40, channels), 0.4)
    img[:, 20:, 0] = 0.8
    img = np.clip(img + 0.01 * rng.standard_normal(img.shape), 0, 1)
    atoms = (np.arange(30)[:, None] // 10) * 4 + np.arange(40)[None, :] // 10
    bmap = np.full((30, 40), 0.01)
    bmap[:, 19:21] = 0.8
    return img, atoms, RegionGraph.from_labels(atoms), bmap


@pytest.mark.parametrize("channels", [1, 3])
def test_across_the_step_is_weak_within_is_strong(channels):
    img, atoms, graph, bmap = _scene(channels)
    q = le.learned_edge_probabilities(img, atoms, graph, bmap)
    assert q.shape == (graph.n_edges,) and q.dtype == np.float64
    assert (q > 0).all() and (q <= le.Q_MAX).all()
    blocks = np.arange(12) % 4      # column block of each atom: 0, 1 | 2, 3
    across = (blocks[graph.edges[:, 0]] < 2) != (blocks[graph.edges[:, 1]] < 2)
    assert across.any() and (~across).any()
    assert q[across].max() < q[~across].min(), (q[across], q[~across])


def test_features_shape_and_determinism():
    img, atoms, graph, bmap = _scene()
    x = le.edge_features(img, atoms, graph, bmap)
    assert x.shape == (graph.n_edges, len(le.EDGE_FEATURES)) and np.isfinite(x).all()
    np.testing.assert_array_equal(le.learned_edge_probabilities(img, atoms, graph, bmap),
                                  le.learned_edge_probabilities(img, atoms, graph, bmap))


def test_quantiles_are_ordered():
    img, atoms, graph, bmap = _scene()
    rng = np.random.default_rng(3)
    x = le.edge_features(img, atoms, graph, rng.uniform(0.01, 0.99, bmap.shape))
    qs = x[:, [1, 2, 3, 4, 5, 6]]      # q10 <= q25 <= median <= q75 <= q90 <= max
    assert (np.diff(qs, axis=1) >= 0).all()


def test_mismatched_shapes():
    img, atoms, graph, bmap = _scene()
    with pytest.raises(InputError):
        le.learned_edge_probabilities(img, atoms, graph, bmap[:-1])


def test_missing_and_corrupt_weights(tmp_path):
    img, atoms, graph, bmap = _scene()
    for path, content in ((tmp_path / "none.npz", None), (tmp_path / "bad.npz", b"garbage")):
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(InputError) as err:
            le.learned_edge_probabilities(img, atoms, graph, bmap, model=path)
        msg = str(err.value)
        assert "\n" not in msg and path.name in msg and le.REBUILD in msg
