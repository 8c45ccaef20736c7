"""Connected regions of a labelling: the m and Σ area^0.9 terms of eq. 59.

A region is a connected component of the subgraph of same-label edges. When
a vertex set R is relabelled, only the components that contain R or touch
it with the new label change; :func:`region_change` searches exactly those,
in time proportional to their size.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["region_change", "region_terms", "region_cache", "region_cache_terms", "refresh_regions"]


@njit(cache=True)
def _bfs(start, labels, in_r, new_label, use_new, indptr, indices, area, mark, stack, visited, n_visited):
    """Grow the same-label component of ``start``; return (area, n_visited).

    With ``use_new`` the labels are read as after relabelling R (marked in
    ``in_r``) to ``new_label``.
    """
    lab = new_label if (use_new and in_r[start]) else labels[start]
    top = 0
    stack[top] = start
    top += 1
    mark[start] = 1
    visited[n_visited] = start
    n_visited += 1
    total = 0.0
    while top > 0:
        top -= 1
        v = stack[top]
        total += area[v]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if mark[u]:
                continue
            lu = new_label if (use_new and in_r[u]) else labels[u]
            if lu == lab:
                mark[u] = 1
                stack[top] = u
                top += 1
                visited[n_visited] = u
                n_visited += 1
    return total, n_visited


@njit(cache=True)
def region_change(labels, R, new_label, indptr, indices, area, exponent, in_r, mark_a, mark_b, stack, visited):
    """Change (Δm, Δ Σ area^exponent) when the vertices R get ``new_label``.

    The scratch arrays ``in_r``, ``mark_a``, ``mark_b`` must be all zero on
    entry; they are all zero again on return.
    """
    for v in R:
        in_r[v] = 1
    n_visited = 0
    m_before = 0
    s_before = 0.0
    # Components before the move: those of R and of new-label neighbours of R.
    for v in R:
        if not mark_a[v]:
            a, n_visited = _bfs(v, labels, in_r, new_label, False, indptr, indices, area, mark_a, stack, visited, n_visited)
            m_before += 1
            s_before += a ** exponent
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if labels[u] == new_label and not mark_a[u]:
                a, n_visited = _bfs(u, labels, in_r, new_label, False, indptr, indices, area, mark_a, stack, visited, n_visited)
                m_before += 1
                s_before += a ** exponent
    # After the move, every changed component lies inside the visited set.
    n_before = n_visited
    m_after = 0
    s_after = 0.0
    n_after = n_before
    for t in range(n_before):
        v = visited[t]
        if not mark_b[v]:
            a, n_after = _bfs(v, labels, in_r, new_label, True, indptr, indices, area, mark_b, stack, visited, n_after)
            m_after += 1
            s_after += a ** exponent
    for t in range(n_before):
        mark_a[visited[t]] = 0
    for t in range(n_before, n_after):  # never reached: kept for safety
        mark_a[visited[t]] = 0
    for t in range(n_after):
        mark_b[visited[t]] = 0
    for v in R:
        in_r[v] = 0
    return m_after - m_before, s_after - s_before


def region_terms(labels, edges, area, exponent):
    """Slow reference: (m, Σ area^exponent) over all connected regions."""
    labels = np.asarray(labels)
    n = labels.size
    same = labels[edges[:, 0]] == labels[edges[:, 1]] if len(edges) else np.zeros(0, bool)
    e = edges[same]
    g = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    m, comp = connected_components(g, directed=False)
    areas = np.bincount(comp, weights=np.asarray(area, np.float64), minlength=m)
    return int(m), float(np.sum(areas ** exponent))


def region_cache(labels, edges, area):
    """Per vertex: a root vertex naming its region, and the region's area."""
    labels = np.asarray(labels)
    n = labels.size
    same = labels[edges[:, 0]] == labels[edges[:, 1]] if len(edges) else np.zeros(0, bool)
    e = edges[same]
    g = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    m, comp = connected_components(g, directed=False)
    _, first = np.unique(comp, return_index=True)
    areas = np.bincount(comp, weights=np.asarray(area, np.float64), minlength=m)
    return first[comp].astype(np.int64), areas[comp]


@njit(cache=True)
def refresh_regions(labels, R, indptr, indices, area, comp_root, comp_area, mark, visited):
    """After relabelling R: recompute the cache on every region that holds
    a vertex of R or a neighbour of R (all regions that can have changed).
    ``mark`` is zero on entry and on return; ``visited`` has room for N."""
    n_vis = 0
    for t in range(R.size):
        v0 = R[t]
        for k in range(indptr[v0] - 1, indptr[v0 + 1]):
            s = v0 if k < indptr[v0] else indices[k]
            if mark[s]:
                continue
            start = n_vis
            mark[s] = 1
            visited[n_vis] = s
            n_vis += 1
            head = start
            a = 0.0
            lab = labels[s]
            while head < n_vis:
                v = visited[head]
                head += 1
                a += area[v]
                for p in range(indptr[v], indptr[v + 1]):
                    u = indices[p]
                    if mark[u] or labels[u] != lab:
                        continue
                    mark[u] = 1
                    visited[n_vis] = u
                    n_vis += 1
            for h in range(start, n_vis):
                comp_root[visited[h]] = s
                comp_area[visited[h]] = a
    for h in range(n_vis):
        mark[visited[h]] = 0


@njit(cache=True)
def region_cache_terms(labels, indptr, indices, area, exponent, comp_root, comp_area, stack):
    """Regions (connected same-label components) of a graph: fills the root
    vertex and area of every vertex's region; returns (m, Σ area^exponent)."""
    n = labels.size
    comp_root[:] = -1
    m = 0
    s = 0.0
    for r in range(n):
        if comp_root[r] >= 0:
            continue
        comp_root[r] = r
        stack[0] = r
        top = 1
        head = 0
        a = 0.0
        while head < top:
            v = stack[head]
            head += 1
            a += area[v]
            for p in range(indptr[v], indptr[v + 1]):
                u = indices[p]
                if comp_root[u] < 0 and labels[u] == labels[r]:
                    comp_root[u] = r
                    stack[top] = u
                    top += 1
        for t in range(top):
            comp_area[stack[t]] = a
        m += 1
        s += a ** exponent
    return m, s
