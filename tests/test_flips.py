"""The compiled pieces of multiple flipping: the interleaved piece search."""

import numpy as np
import pytest

from numba import njit

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.regions import pieces_interleaved
from swcuts.models.regions import region_cache
from swcuts.samplers.common import grow_into


# The reference: a full search of C \ R, one piece at a time.
@njit
def _pieces(R, n_r, ell, labels, indptr, indices, area, in_r, mark, visited, exponent):
    """Pieces of C \\ R, C the region of label ``ell`` containing R: each
    contains a neighbour of R. Returns (count, Σ area^e)."""
    for t in range(n_r):
        in_r[R[t]] = 1
    n_pieces = 0
    sp = 0.0
    n_vis = 0
    for t in range(n_r):
        v0 = R[t]
        for p0 in range(indptr[v0], indptr[v0 + 1]):
            s = indices[p0]
            if in_r[s] or mark[s] or labels[s] != ell:
                continue
            start = n_vis
            mark[s] = 1
            visited[n_vis] = s
            n_vis += 1
            head = start
            a = 0.0
            while head < n_vis:
                v = visited[head]
                head += 1
                a += area[v]
                for p in range(indptr[v], indptr[v + 1]):
                    u = indices[p]
                    if mark[u] or in_r[u] or labels[u] != ell:
                        continue
                    mark[u] = 1
                    visited[n_vis] = u
                    n_vis += 1
            n_pieces += 1
            sp += a ** exponent
    for h in range(n_vis):
        mark[visited[h]] = 0
    for t in range(n_r):
        in_r[R[t]] = 0
    return n_pieces, sp


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


def test_pixel_statistics_sum_like_the_rows():
    """sum_stats on a pixel graph (from position, values and bins) adds up
    to the same vector as the rows of vstats; on atoms it adds the rows."""
    from swcuts.models.image import ImageModel
    from swcuts.models.vertex_stats import sum_stats

    rng = np.random.default_rng(0)
    h, w = 9, 13
    img = rng.random((h, w, 3))
    for atoms in (np.arange(h * w).reshape(h, w), np.repeat(np.arange(h * w // 3 + 1), 3)[:h * w].reshape(h, w)):
        g = RegionGraph.from_labels(atoms)
        model = ImageModel(img, atoms, g, bins=7)
        vsrc = model.vsrc
        assert (vsrc[1] is not None) == (g.n_vertices == h * w)
        out = np.empty(model.vstats.shape[1])
        for _ in range(5):
            R = rng.choice(g.n_vertices, int(rng.integers(1, g.n_vertices)), replace=False)
            sum_stats(R, R.size, vsrc, model.n_channels, model.n_bins, out)
            np.testing.assert_allclose(out, model.vstats[R].sum(axis=0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(30))
def test_region_index_follows_moves(seed):
    """move_regions keeps the region index equal to a fresh region search:
    splits into several pieces, merges of several regions, fresh labels."""
    from swcuts.models.image import ImageModel
    from swcuts.models.partition import canonical
    from swcuts.models.image_kernels import (
        REG_AREA, REG_IDS, REG_NFREE, REG_RID, load_regions, move_regions, store_regions)
    from swcuts.models.vertex_stats import sum_stats
    from swcuts.samplers.flips import FlipWorkspace

    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(3, 12)), int(rng.integers(3, 12))
    k = int(rng.integers(2, 5))
    labels = rng.integers(0, k, size=(h // 2 + 1, w // 2 + 1)).repeat(2, 0).repeat(2, 1)[:h, :w].ravel()
    flip = rng.random(labels.size) < 0.2
    labels[flip] = rng.integers(0, k, size=flip.sum())
    atoms = np.arange(h * w).reshape(h, w)
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(rng.random((h, w, 1)), atoms, g, bins=4)
    state = model.new_state(labels)
    part = state.partition
    ws = FlipWorkspace(g.n_vertices, part.size.size, model.vstats.shape[1])
    regions = ws.regions
    load_regions(state.comp_root, state.comp_area, regions)
    vsrc = model.vsrc
    q = np.full(g.n_edges, rng.uniform(0.3, 0.9))
    mark = np.zeros(g.n_vertices, np.int8)
    Rbuf = np.empty(g.n_vertices, np.int64)
    for _ in range(25):
        v = int(rng.integers(g.n_vertices))
        n_r = grow_into(v, part.labels, q, g.indptr, g.indices, g.edge_ids, mark, Rbuf)
        R = Rbuf[:n_r].copy()
        ell = part.labels[v]
        used = part.free_stack[part.n_free[0]:]
        new = int(rng.choice(used)) if rng.random() < 0.8 else part.fresh_label()
        if new == ell:
            continue
        sR = np.empty(model.vstats.shape[1])
        sum_stats(R, n_r, vsrc, 1, 4, sR)
        move_regions(R, n_r, ell, new, part.labels, part.size, part.free_stack, part.n_free,
                     state.stats, state.loglik, sR, 0.0, 0.0, regions, g.indptr, g.indices,
                     model.area, ws.in_r, ws.pws, ws.visited)
        fresh_root, fresh_area = region_cache(part.labels, g.edges, model.area)
        rid, rarea = regions[REG_RID], regions[REG_AREA]
        assert canonical(rid) == canonical(fresh_root)
        np.testing.assert_array_equal(rarea[rid], fresh_area)
        free = set(regions[REG_IDS][:regions[REG_NFREE][0]].tolist())
        assert free.isdisjoint(rid.tolist()) and len(free) + len(set(rid.tolist())) == g.n_vertices
        assert np.all(ws.pws[0] == -1) and not ws.in_r.any()
    store_regions(regions, state.comp_root, state.comp_area)
    fresh_root, fresh_area = region_cache(part.labels, g.edges, model.area)
    assert canonical(state.comp_root) == canonical(fresh_root)
    np.testing.assert_array_equal(state.comp_area, fresh_area)
    assert np.all(state.comp_root[state.comp_root] == state.comp_root)  # roots lie in their regions
