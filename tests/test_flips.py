"""The compiled pieces of multiple flipping: the interleaved piece search."""

import numpy as np
import pytest

from swcuts.graph import RegionGraph
from swcuts.models.regions import region_cache
from swcuts.samplers.compiled import _pieces
from swcuts.samplers.common import grow_into
from swcuts.samplers.flips import pieces_interleaved


@pytest.mark.parametrize("seed", range(30))
def test_interleaved_pieces_match_a_full_search(seed):
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(3, 12)), int(rng.integers(3, 12))
    # Blocky random labels so that regions are large and R can cut them.
    k = int(rng.integers(2, 4))
    labels = rng.integers(0, k, size=(h // 2 + 1, w // 2 + 1)).repeat(2, 0).repeat(2, 1)[:h, :w].ravel()
    flip = rng.random(labels.size) < 0.15
    labels[flip] = rng.integers(0, k, size=flip.sum())
    g = RegionGraph.from_labels(np.arange(h * w).reshape(h, w))
    area = np.ones(h * w) * rng.choice([1.0, 2.0])
    n = h * w
    _, comp_area = region_cache(labels, g.edges, area)
    ex = 0.9
    in_r = np.zeros(n, np.int8)
    mark = np.zeros(n, np.int8)
    owner = -np.ones(n, np.int64)
    scratch = (np.empty(n, np.int64), np.empty(n, np.int64), np.zeros(n, np.int64), np.zeros(n))
    Rbuf = np.empty(n, np.int64)
    q = np.full(g.n_edges, rng.uniform(0.3, 0.9))
    for _ in range(20):
        v = int(rng.integers(n))
        n_r = grow_into(v, labels, q, g.indptr, g.indices, g.edge_ids, mark, Rbuf)
        R = Rbuf[:n_r].copy()
        ell = labels[v]
        rest = comp_area[v] - area[R].sum()
        if rest < 0.5:
            continue
        ref = _pieces(R, n_r, ell, labels, g.indptr, g.indices, area, in_r, mark, np.empty(n, np.int64), ex)
        got = pieces_interleaved(R, n_r, ell, labels, g.indptr, g.indices, area, rest, ex, in_r,
                                 owner, *scratch)
        assert got[0] == ref[0]
        assert got[1] == pytest.approx(ref[1], rel=1e-12)
        assert np.all(owner == -1) and not in_r.any()
