"""Region adjacency graph of a label image.

Vertices are the regions (atoms) of an int label image with labels
``0..N-1``; edges join regions that touch through 4-adjacent pixels.
Everything is built with vectorised numpy, never a Python loop over pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RegionGraph", "pixel_pairs", "pair_edges"]


def pixel_pairs(labels):
    """Labels at both ends of every 4-adjacent pixel pair of a 2-D label
    image (horizontal pairs first, then vertical), as two flat arrays."""
    a = np.concatenate([labels[:, :-1].ravel(), labels[:-1, :].ravel()])
    b = np.concatenate([labels[:, 1:].ravel(), labels[1:, :].ravel()])
    return a, b


def pair_edges(labels, graph):
    """The pixel pairs that straddle two regions, and the edge each crosses.

    Returns ``(cut, edge)``: ``cut`` a boolean mask over the pairs of
    :func:`pixel_pairs` (in its order) whose two labels differ, and
    ``edge`` the index in ``graph.edges`` of each of those pairs, so that
    ``np.bincount(edge, weights=values[cut], minlength=graph.n_edges)``
    sums a per-pair quantity over every edge.

    Examples
    --------
    >>> labels = np.array([[0, 0, 1], [2, 2, 1]])
    >>> cut, edge = pair_edges(labels, RegionGraph.from_labels(labels))
    >>> cut.nonzero()[0].tolist(), edge.tolist()          # edges (0, 1), (0, 2), (1, 2)
    ([1, 3, 4, 5], [0, 2, 1, 1])
    """
    a, b = pixel_pairs(np.asarray(labels, dtype=np.int64))
    cut = a != b
    n = graph.n_vertices
    keys = np.minimum(a[cut], b[cut]) * n + np.maximum(a[cut], b[cut])
    return cut, np.searchsorted(graph.edges[:, 0] * n + graph.edges[:, 1], keys)


def _csr(edges, n):
    """CSR neighbour lists of an edge list: each edge appears twice, once
    from each end, sorted by (vertex, neighbour).

    Parameters
    ----------
    edges : ndarray of int64, shape (E, 2)
        Edge list.
    n : int
        Number of vertices.

    Returns
    -------
    indptr : ndarray of int64, shape (n + 1,)
    indices, edge_ids : ndarray of int64, shape (2 E,)
        The neighbours of ``v`` are ``indices[indptr[v]:indptr[v + 1]]``,
        joined by the edges ``edge_ids[indptr[v]:indptr[v + 1]]``.
    """
    m = edges.shape[0]
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    eid = np.concatenate([np.arange(m), np.arange(m)])
    order = np.lexsort((dst, src))
    indptr = _offsets(np.bincount(src, minlength=n), n)
    return indptr, dst[order].astype(np.int64), eid[order].astype(np.int64)


def _offsets(counts, n):
    """Start offsets ``[0, c0, c0 + c1, ...]`` (int64, n + 1 of them) of
    ``n`` consecutive blocks of the sizes ``counts``."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


@dataclass(frozen=True)
class RegionGraph:
    """Adjacency graph of the regions of a label image.

    Attributes
    ----------
    n_vertices : int
        Number of regions N.
    edges : ndarray of int64, shape (E, 2)
        Edge list with ``edges[:, 0] < edges[:, 1]``, sorted lexicographically.
    boundary_length : ndarray of int64, shape (E,)
        Number of 4-adjacent pixel pairs across each edge.
    indptr, indices, edge_ids : ndarray of int64
        CSR neighbour lists: the neighbours of vertex ``v`` are
        ``indices[indptr[v]:indptr[v + 1]]`` (sorted) and the corresponding
        edges are ``edge_ids[indptr[v]:indptr[v + 1]]``.
    pixel_count : ndarray of int64, shape (N,)
        Number of pixels of each region.
    pixel_ptr, pixel_index : ndarray of int64
        Flat (raveled, C-order) indices of the pixels of region ``v`` are
        ``pixel_index[pixel_ptr[v]:pixel_ptr[v + 1]]`` (ascending).
    shape : tuple of int
        Shape (H, W) of the label image.
    """

    n_vertices: int
    edges: np.ndarray
    boundary_length: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    edge_ids: np.ndarray
    pixel_count: np.ndarray
    pixel_ptr: np.ndarray
    pixel_index: np.ndarray
    shape: tuple

    @property
    def n_edges(self) -> int:
        """Number of edges E."""
        return int(self.edges.shape[0])

    @classmethod
    def from_labels(cls, labels) -> "RegionGraph":
        """Build the graph of a 2-D label image with labels ``0..N-1``.

        Parameters
        ----------
        labels : (H, W) array of int
            Label image; every value in ``0..labels.max()`` must occur.

        Returns
        -------
        RegionGraph
        """
        labels = np.asarray(labels)
        if labels.ndim != 2 or labels.size == 0:
            raise ValueError("labels must be a non-empty 2-D array")
        if not np.issubdtype(labels.dtype, np.integer):
            raise TypeError("labels must be an integer array")
        lab = labels.astype(np.int64, copy=False)
        n = int(lab.max()) + 1
        if lab.min() < 0:
            raise ValueError("labels must be non-negative")
        pixel_count = np.bincount(lab.ravel(), minlength=n).astype(np.int64)
        if np.any(pixel_count == 0):
            raise ValueError("labels must use every value 0..N-1")

        # 4-adjacent pixel pairs with different labels, as keys i*N + j, i < j.
        a, b = pixel_pairs(lab)
        diff = a != b
        lo = np.minimum(a[diff], b[diff])
        hi = np.maximum(a[diff], b[diff])
        keys, counts = np.unique(lo * n + hi, return_counts=True)
        edges = np.stack([keys // n, keys % n], axis=1).astype(np.int64)

        indptr, indices, edge_ids = _csr(edges, n)
        pixel_index = np.argsort(lab.ravel(), kind="stable").astype(np.int64)
        return cls(
            n_vertices=n,
            edges=edges,
            boundary_length=counts.astype(np.int64),
            indptr=indptr,
            indices=indices,
            edge_ids=edge_ids,
            pixel_count=pixel_count,
            pixel_ptr=_offsets(pixel_count, n),
            pixel_index=pixel_index,
            shape=tuple(int(s) for s in lab.shape),
        )

    @classmethod
    def from_edges(cls, n_vertices, edges, pixel_count=None) -> "RegionGraph":
        """Build an abstract graph (no image) from an edge list.

        Used for small test graphs and for graphs whose vertices are not
        image regions. Pixel fields describe one pixel per vertex unless
        ``pixel_count`` is given.
        """
        n = int(n_vertices)
        e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        e = np.sort(e, axis=1)
        if np.any(e[:, 0] == e[:, 1]) or (e.size and (e.min() < 0 or e.max() >= n)):
            raise ValueError("edges must join two distinct vertices in 0..n-1")
        e = np.unique(e, axis=0)
        indptr, indices, edge_ids = _csr(e, n)
        pc = np.ones(n, np.int64) if pixel_count is None else np.asarray(pixel_count, np.int64)
        return cls(
            n_vertices=n,
            edges=e,
            boundary_length=np.ones(e.shape[0], np.int64),
            indptr=indptr,
            indices=indices,
            edge_ids=edge_ids,
            pixel_count=pc,
            pixel_ptr=_offsets(pc, n),
            pixel_index=np.arange(int(pc.sum()), dtype=np.int64),
            shape=(1, int(pc.sum())),
        )

    def subgraph(self, keep) -> "RegionGraph":
        """The same vertices and pixels with only the edges where ``keep`` is
        True (edge ids renumbered in order)."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self.n_edges,):
            raise ValueError("keep must have one entry per edge")
        e = self.edges[keep]
        n = self.n_vertices
        indptr, indices, edge_ids = _csr(e, n)
        return RegionGraph(n_vertices=n, edges=e, boundary_length=self.boundary_length[keep],
                           indptr=indptr, indices=indices, edge_ids=edge_ids,
                           pixel_count=self.pixel_count,
                           pixel_ptr=self.pixel_ptr, pixel_index=self.pixel_index, shape=self.shape)

    def neighbors(self, v: int) -> np.ndarray:
        """Neighbours of vertex ``v`` (sorted)."""
        return self.indices[self.indptr[v]:self.indptr[v + 1]]

    def pixels(self, v: int) -> np.ndarray:
        """Flat pixel indices of region ``v``."""
        return self.pixel_index[self.pixel_ptr[v]:self.pixel_ptr[v + 1]]

    def to_networkx(self):
        """Return a :class:`networkx.Graph` with ``pixel_count`` on vertices
        and ``boundary_length`` on edges."""
        import networkx as nx

        g = nx.Graph()
        for v in range(self.n_vertices):
            g.add_node(v, pixel_count=int(self.pixel_count[v]))
        for (i, j), length in zip(self.edges.tolist(), self.boundary_length.tolist()):
            g.add_edge(i, j, boundary_length=int(length))
        return g
