"""Super-atoms: the atoms merged along their weakest boundaries, a coarse
graph whose edges follow the boundary detector's ridges.

:func:`merge_weakest` builds a boundary hierarchy in the manner of the
ultrametric contour map (Arbeláez et al. 2011, "Contour detection and
hierarchical image segmentation"): starting from the atoms, it merges the
adjacent pair whose shared boundary has the lowest mean strength (the
boundary strength of a pixel pair, e.g. the detector's probability of a
boundary, averaged over the pixel pairs between the two regions), updates
the merged region's boundaries with every neighbour (sums and counts add),
and stops at ``n_regions`` regions or when the weakest remaining boundary
is at least ``max_level`` strong.

The mean of a merged boundary lies between the means of its parts, so the
merge levels never decrease: every boundary that is kept is at least as
strong as every boundary that was merged away (:attr:`SuperAtoms.merge_levels`,
``tests/test_superatoms.py``). The super-atom graph keeps the strongest
boundaries of the atoms, so a sampler on it places segment boundaries where
the atoms' strongest boundaries are, with far fewer vertices.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from swcuts.graph.region_graph import RegionGraph, pair_edges, pixel_pairs

__all__ = ["SuperAtoms", "merge_weakest", "pair_strengths", "edge_means", "edge_sums"]


def pair_strengths(probability) -> np.ndarray:
    """Boundary strength of every 4-adjacent pixel pair of a map: the larger
    of the two pixels' values (an annotator marks a boundary on one of the
    two pixels it separates), in the order of
    :func:`swcuts.graph.region_graph.pixel_pairs`.

    Examples
    --------
    >>> pair_strengths(np.array([[0.1, 0.9], [0.2, 0.3]]))
    array([0.9, 0.3, 0.2, 0.9])
    """
    p = np.asarray(probability, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"need a 2-D map, got shape {p.shape}")
    return np.maximum(*pixel_pairs(p))


def edge_sums(strength, labels, graph):
    """(sum, count) of ``strength`` over the pixel pairs across every edge of ``graph``.

    Examples
    --------
    >>> labels = np.array([[0, 0, 1]] * 2)
    >>> edge_sums(pair_strengths(np.array([[0.0, 0.5, 1.0]] * 2)), labels, RegionGraph.from_labels(labels))
    (array([2.]), array([2.]))
    """
    cut, edge = pair_edges(labels, graph)
    s = np.bincount(edge, weights=np.asarray(strength, dtype=np.float64)[cut], minlength=graph.n_edges)
    c = np.bincount(edge, minlength=graph.n_edges).astype(np.float64)
    return s, c


def edge_means(strength, labels, graph) -> np.ndarray:
    """Mean of the pixel-pair ``strength`` over each edge of ``graph`` (the
    graph of the label image ``labels``).

    Examples
    --------
    >>> labels = np.array([[0, 0, 1]] * 2)
    >>> strength = pair_strengths(np.array([[0.0, 0.5, 1.0]] * 2))
    >>> edge_means(strength, labels, RegionGraph.from_labels(labels))
    array([1.])
    """
    s, c = edge_sums(strength, labels, graph)
    return s / np.maximum(c, 1.0)


@dataclass
class SuperAtoms:
    """The result of :func:`merge_weakest`.

    Attributes
    ----------
    labels : (H, W) int64 array
        Super-atom of every pixel, 0..K-1.
    of_atom : (N,) int64 array
        Super-atom of every atom.
    graph : RegionGraph
        The graph of ``labels``.
    strength : (E,) float array
        Mean pixel-pair strength along every edge of ``graph``.
    merge_levels : (N - K,) float array
        The mean strength of the boundary removed by each merge, in order
        (non-decreasing).
    """

    labels: np.ndarray
    of_atom: np.ndarray
    graph: RegionGraph
    strength: np.ndarray
    merge_levels: np.ndarray

    @property
    def n_regions(self) -> int:
        """K, the number of super-atoms."""
        return int(self.graph.n_vertices)


def thin_atoms(atoms, n=None) -> np.ndarray:
    """Which atoms have no interior pixel: every pixel of the atom has a
    4-neighbour in another atom (the image's edge counts as the atom's own),
    so the atom is nowhere more than two pixels wide.

    Examples
    --------
    >>> atoms = np.array([[0, 0, 0, 1, 2, 2, 2]] * 4)   # atom 1: a one-pixel column
    >>> thin_atoms(atoms).tolist()
    [False, True, False]
    """
    a = np.asarray(atoms, dtype=np.int64)
    n = int(a.max()) + 1 if n is None else int(n)
    p = np.pad(a, 1, mode="edge")
    inner = ((p[:-2, 1:-1] == a) & (p[2:, 1:-1] == a) & (p[1:-1, :-2] == a) & (p[1:-1, 2:] == a))
    return np.bincount(a[inner], minlength=n)[:n] == 0


def merge_weakest(atoms, graph, strength, *, n_regions=None, max_level=None, min_size=0,
                  fold_thin=False) -> SuperAtoms:
    """Merge adjacent atoms along their weakest boundaries.

    Parameters
    ----------
    atoms : (H, W) int array
        Atom label image (0..N-1) of ``graph``.
    graph : RegionGraph
        The atoms' adjacency graph.
    strength : (P,) float array
        Boundary strength of every 4-adjacent pixel pair
        (:func:`pair_strengths` of a detector's map).
    n_regions : int, optional
        Stop at this many regions (at least 1).
    max_level : float, optional
        Stop when the weakest boundary left has a mean strength of at least
        this. With neither, every connected group of atoms becomes one region.
    min_size : int
        First, every region of fewer pixels is merged into the neighbour
        across its weakest boundary (smallest regions first), whatever the
        strength; the weakest-first merging follows (its levels are
        :attr:`SuperAtoms.merge_levels`). 0: none.
    fold_thin : bool
        Merge the atoms without an interior pixel (:func:`thin_atoms`:
        slivers at most two pixels wide, which a watershed leaves along a
        sharp ridge of the map) the same way, whatever their size.

    Returns
    -------
    SuperAtoms

    Examples
    --------
    >>> atoms = np.array([[0, 0, 1, 1, 2, 2]] * 3)
    >>> p = np.array([[0.0, 0.25, 0.25, 0.75, 0.5, 0.5]] * 3)   # boundaries 0|1: 0.25, 1|2: 0.75
    >>> sa = merge_weakest(atoms, RegionGraph.from_labels(atoms), pair_strengths(p), n_regions=2)
    >>> sa.labels[0].tolist(), sa.of_atom.tolist(), sa.merge_levels.tolist(), sa.strength.tolist()
    ([0, 0, 0, 0, 1, 1], [0, 0, 1], [0.25], [0.75])
    """
    n = graph.n_vertices
    if n_regions is not None and int(n_regions) < 1:
        raise ValueError(f"n_regions must be at least 1, got {n_regions!r}")
    target = 1 if n_regions is None else int(n_regions)
    s, c = edge_sums(strength, atoms, graph)
    nb = [{} for _ in range(n)]
    for e, (i, j) in enumerate(graph.edges.tolist()):
        nb[i][j] = nb[j][i] = [s[e], c[e]]
    parent = np.arange(n)
    area = graph.pixel_count.astype(np.int64).copy()
    regions = n

    def join(i, j):  # j's boundaries become i's; returns i's changed neighbours
        del nb[i][j], nb[j][i]
        changed = []
        for v, (sv, cv) in nb[j].items():
            del nb[v][j]
            if v in nb[i]:
                nb[i][v][0] += sv
                nb[i][v][1] += cv
            else:
                nb[i][v] = nb[v][i] = [sv, cv]
            changed.append(v)
        nb[j] = {}
        parent[j] = i
        area[i] += area[j]
        return changed

    # 1. Regions below min_size join the neighbour across their weakest boundary.
    thin = thin_atoms(atoms, n) if fold_thin else np.zeros(n, bool)
    small = [(int(area[v]), v) for v in range(n) if area[v] < min_size or thin[v]]
    heapq.heapify(small)
    while small and regions > target:
        a, v = heapq.heappop(small)
        if parent[v] != v or a != area[v] or not nb[v]:
            continue  # stale, or an isolated region
        u = min(nb[v], key=lambda x: (nb[v][x][0] / nb[v][x][1], x))
        join(u, v)
        regions -= 1
        if area[u] < min_size or thin[u]:   # a sliver that took in another is still one
            heapq.heappush(small, (int(area[u]), u))
    # 2. The weakest boundary first.
    heap = [(sv / cv, i, j) for i in range(n) for j, (sv, cv) in nb[i].items() if i < j]
    heapq.heapify(heap)
    levels = []
    while regions > target and heap:
        level, i, j = heapq.heappop(heap)
        shared = nb[i].get(j)
        if shared is None or shared[0] / shared[1] != level:
            continue  # a stale entry: i or j was merged since, or the boundary grew
        if max_level is not None and level >= max_level:
            break
        levels.append(level)
        for v in join(i, j):
            heapq.heappush(heap, (nb[i][v][0] / nb[i][v][1], min(i, v), max(i, v)))
        regions -= 1
    root = parent.copy()
    while True:  # path halving to the roots
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    _, of_atom = np.unique(root, return_inverse=True)
    labels = of_atom[np.asarray(atoms, dtype=np.int64)]
    sgraph = RegionGraph.from_labels(labels)
    return SuperAtoms(labels=labels, of_atom=of_atom.astype(np.int64), graph=sgraph,
                      strength=edge_means(strength, labels, sgraph),
                      merge_levels=np.asarray(levels, dtype=np.float64))
