"""RegionGraph against a slow reference built by explicit loops over pixels."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swcuts.graph.region_graph import RegionGraph

# ---------------------------------------------------------------------------
# Slow reference
# ---------------------------------------------------------------------------


def reference_graph(labels):
    """Edges (i<j) -> number of 4-adjacent pixel pairs, pixel lists per label."""
    labels = np.asarray(labels)
    h, w = labels.shape
    n = int(labels.max()) + 1
    boundary = {}
    pixels = {v: [] for v in range(n)}
    for r in range(h):
        for c in range(w):
            a = int(labels[r, c])
            pixels[a].append(r * w + c)
            for rr, cc in ((r, c + 1), (r + 1, c)):
                if rr < h and cc < w:
                    b = int(labels[rr, cc])
                    if a != b:
                        key = (min(a, b), max(a, b))
                        boundary[key] = boundary.get(key, 0) + 1
    neighbours = {v: set() for v in range(n)}
    for i, j in boundary:
        neighbours[i].add(j)
        neighbours[j].add(i)
    return n, boundary, pixels, neighbours


def relabel_compact(raw):
    """Map the values of ``raw`` to 0..N-1 (so that every label is used)."""
    _, inv = np.unique(raw, return_inverse=True)
    return inv.reshape(raw.shape).astype(np.int64)


def check_against_reference(labels):
    g = RegionGraph.from_labels(labels)
    n, boundary, pixels, neighbours = reference_graph(labels)
    h, w = labels.shape

    assert g.n_vertices == n
    assert g.shape == (h, w)

    # Edge list: i < j, sorted lexicographically, exactly the reference set.
    edges = [tuple(e) for e in g.edges.tolist()]
    assert g.edges.shape == (len(boundary), 2)
    assert g.n_edges == len(boundary)
    assert all(i < j for i, j in edges)
    assert edges == sorted(boundary)
    assert g.boundary_length.tolist() == [boundary[e] for e in edges]

    # CSR neighbour lists.
    assert g.indptr.shape == (n + 1,)
    assert g.indptr[0] == 0 and g.indptr[-1] == 2 * len(boundary)
    assert g.indices.shape == (2 * len(boundary),)
    assert g.edge_ids.shape == (2 * len(boundary),)
    for v in range(n):
        nb = g.indices[g.indptr[v]:g.indptr[v + 1]].tolist()
        assert nb == sorted(neighbours[v])
        assert g.neighbors(v).tolist() == nb
        eids = g.edge_ids[g.indptr[v]:g.indptr[v + 1]].tolist()
        for u, e in zip(nb, eids):
            assert edges[e] == (min(u, v), max(u, v))

    # Pixels.
    assert g.pixel_count.tolist() == [len(pixels[v]) for v in range(n)]
    assert g.pixel_ptr.shape == (n + 1,)
    assert g.pixel_ptr[0] == 0 and g.pixel_ptr[-1] == h * w
    assert g.pixel_index.shape == (h * w,)
    flat = labels.ravel()
    for v in range(n):
        px = g.pixel_index[g.pixel_ptr[v]:g.pixel_ptr[v + 1]]
        assert px.tolist() == pixels[v]  # ascending, exactly the pixels of v
        assert px.tolist() == np.flatnonzero(flat == v).tolist()
        assert g.pixels(v).tolist() == pixels[v]

    # dtypes promised by the docstring.
    for name in ("edges", "boundary_length", "indptr", "indices", "edge_ids",
                 "pixel_count", "pixel_ptr", "pixel_index"):
        assert getattr(g, name).dtype == np.int64, name

    # networkx view.
    nxg = g.to_networkx()
    assert sorted(nxg.nodes) == list(range(n))
    assert {tuple(sorted(e)) for e in nxg.edges} == set(boundary)
    for v in range(n):
        assert nxg.nodes[v]["pixel_count"] == len(pixels[v])
    for (i, j), length in boundary.items():
        assert nxg.edges[i, j]["boundary_length"] == length
    return g


# ---------------------------------------------------------------------------
# from_labels
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_from_labels_matches_reference_random(seed):
    rng = np.random.default_rng(seed)
    h, w = rng.integers(1, 9, size=2)
    k = int(rng.integers(1, 12))
    raw = rng.integers(0, k, size=(h, w))
    # Possibly disconnected regions are fine for the graph.
    check_against_reference(relabel_compact(raw))


@pytest.mark.parametrize("seed", range(10))
def test_from_labels_matches_reference_blocky(seed):
    """Larger, blob-like regions (long boundaries, many pairs per edge)."""
    rng = np.random.default_rng(1000 + seed)
    h, w = rng.integers(5, 16, size=2)
    coarse = rng.integers(0, 6, size=(h // 3 + 1, w // 3 + 1))
    raw = np.kron(coarse, np.ones((3, 3), dtype=np.int64))[:h, :w]
    labels = relabel_compact(raw)
    g = check_against_reference(labels)
    assert g.boundary_length.sum() == (np.count_nonzero(labels[:, 1:] != labels[:, :-1])
                                       + np.count_nonzero(labels[1:, :] != labels[:-1, :]))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.integers(1, 7).flatmap(
        lambda h: st.integers(1, 7).flatmap(
            lambda w: st.lists(st.integers(0, 9), min_size=h * w, max_size=h * w).map(
                lambda vals: np.array(vals, dtype=np.int64).reshape(h, w)))))
def test_from_labels_matches_reference_hypothesis(raw):
    check_against_reference(relabel_compact(raw))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_from_labels_any_integer_dtype(dtype):
    labels = np.array([[0, 0, 1], [2, 1, 1], [2, 3, 3]], dtype=dtype)
    g = check_against_reference(labels.astype(np.int64))
    g2 = RegionGraph.from_labels(labels)
    for name in ("edges", "boundary_length", "indptr", "indices", "edge_ids",
                 "pixel_count", "pixel_ptr", "pixel_index"):
        np.testing.assert_array_equal(getattr(g, name), getattr(g2, name))


def test_known_small_image():
    labels = np.array([[0, 0, 1],
                       [0, 2, 1],
                       [3, 3, 3]])
    g = check_against_reference(labels)
    assert g.edges.tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    # (0,1): row0 c1|c2 ; (0,2): row1 c0|c1, col1 r0|r1 ; (0,3): col0 r1|r2
    # (1,2): row1 c1|c2 ; (1,3): col2 r1|r2 ; (2,3): col1 r1|r2
    assert g.boundary_length.tolist() == [1, 2, 1, 1, 1, 1]
    assert g.pixel_count.tolist() == [3, 2, 1, 3]


def test_one_by_one_image():
    g = check_against_reference(np.zeros((1, 1), dtype=np.int64))
    assert g.n_vertices == 1
    assert g.n_edges == 0
    assert g.edges.shape == (0, 2)
    assert g.indptr.tolist() == [0, 0]
    assert g.pixel_index.tolist() == [0]
    assert g.to_networkx().number_of_edges() == 0


@pytest.mark.parametrize("shape", [(1, 5), (5, 1), (4, 6)])
def test_single_label_image_has_no_edges(shape):
    g = check_against_reference(np.zeros(shape, dtype=np.int32))
    assert g.n_vertices == 1
    assert g.n_edges == 0
    assert g.boundary_length.shape == (0,)
    assert g.indices.size == 0 and g.edge_ids.size == 0
    assert g.pixel_count.tolist() == [shape[0] * shape[1]]
    assert g.pixel_index.tolist() == list(range(shape[0] * shape[1]))


def test_single_row_and_column():
    check_against_reference(np.array([[0, 1, 1, 2, 0, 3]]))
    check_against_reference(np.array([[0], [1], [1], [2], [0], [3]]))


def test_labels_with_gap_raise():
    with pytest.raises(ValueError):
        RegionGraph.from_labels(np.array([[0, 0], [2, 2]]))
    with pytest.raises(ValueError):
        RegionGraph.from_labels(np.array([[1, 1], [2, 2]]))  # 0 unused


def test_negative_labels_raise():
    with pytest.raises(ValueError):
        RegionGraph.from_labels(np.array([[0, -1], [1, 1]]))


@pytest.mark.parametrize("bad", [
    np.array([[0.0, 1.0], [1.0, 0.0]]),
    np.array([[0.0, 0.5], [1.0, 0.0]], dtype=np.float32),
    np.array([[True, False], [False, True]]),
    np.array([["a", "b"], ["a", "b"]]),
])
def test_non_integer_labels_raise_type_error(bad):
    with pytest.raises(TypeError):
        RegionGraph.from_labels(bad)


@pytest.mark.parametrize("bad", [np.zeros(4, dtype=int), np.zeros((2, 2, 2), dtype=int),
                                 np.zeros((0, 3), dtype=int)])
def test_wrong_shape_raises(bad):
    with pytest.raises(ValueError):
        RegionGraph.from_labels(bad)


def test_graph_is_frozen():
    g = RegionGraph.from_labels(np.array([[0, 1]]))
    with pytest.raises(AttributeError):
        g.n_vertices = 3


# ---------------------------------------------------------------------------
# from_edges
# ---------------------------------------------------------------------------


def check_csr(g, edge_set):
    n = g.n_vertices
    edges = [tuple(e) for e in g.edges.tolist()]
    assert edges == sorted(edge_set)
    for v in range(n):
        nb = g.neighbors(v).tolist()
        expect = sorted({j for i, j in edge_set if i == v} | {i for i, j in edge_set if j == v})
        assert nb == expect
        for u, e in zip(nb, g.edge_ids[g.indptr[v]:g.indptr[v + 1]].tolist()):
            assert edges[e] == (min(u, v), max(u, v))


def test_from_edges_removes_duplicates_and_sorts():
    g = RegionGraph.from_edges(5, [(3, 1), (1, 3), (0, 1), (1, 0), (4, 2), (0, 1)])
    assert g.n_vertices == 5
    assert g.edges.tolist() == [[0, 1], [1, 3], [2, 4]]
    assert g.boundary_length.tolist() == [1, 1, 1]
    check_csr(g, {(0, 1), (1, 3), (2, 4)})
    assert g.pixel_count.tolist() == [1] * 5
    assert g.pixel_ptr.tolist() == list(range(6))
    assert g.pixel_index.tolist() == list(range(5))


@pytest.mark.parametrize("seed", range(10))
def test_from_edges_random(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 10))
    m = int(rng.integers(0, 30))
    raw = rng.integers(0, n, size=(m, 2))
    raw = raw[raw[:, 0] != raw[:, 1]]
    g = RegionGraph.from_edges(n, raw)
    check_csr(g, {(int(min(a, b)), int(max(a, b))) for a, b in raw.tolist()})
    nxg = g.to_networkx()
    assert sorted(nxg.nodes) == list(range(n))
    assert {tuple(sorted(e)) for e in nxg.edges} == {tuple(e) for e in g.edges.tolist()}


def test_from_edges_pixel_count():
    g = RegionGraph.from_edges(3, [(0, 1), (1, 2)], pixel_count=[2, 1, 3])
    assert g.pixel_count.tolist() == [2, 1, 3]
    assert g.pixel_ptr.tolist() == [0, 2, 3, 6]
    assert g.pixels(2).tolist() == [3, 4, 5]


def test_from_edges_no_edges():
    g = RegionGraph.from_edges(3, [])
    assert g.n_edges == 0
    assert g.indptr.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("bad", [[(0, 0)], [(0, 1), (2, 2)], [(0, 3)], [(-1, 0)]])
def test_from_edges_rejects_bad_edges(bad):
    with pytest.raises(ValueError):
        RegionGraph.from_edges(3, bad)
