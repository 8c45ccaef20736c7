"""Connected regions of a labelling: the m and Σ area^0.9 terms of eq. 59.

A region is a connected component of the subgraph of same-label edges. When
a vertex set R is relabelled, only the components that contain R or touch
it with the new label change; :func:`region_change` searches exactly those,
in time proportional to their size. The compiled kernels' searches
(:func:`touching_regions`, :func:`search_pieces`, :func:`pieces_interleaved`,
:func:`vertex_leave_pieces`) read region areas from a cache instead
(see :mod:`.image_kernels`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only
from swcuts._numba.primitives import find, number_components, union

__all__ = ["region_change", "region_terms", "region_cache", "region_cache_terms", "grow_region",
           "refresh_regions", "touching_regions", "search_pieces", "pieces_interleaved", "vertex_leave_pieces"]


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


@njit(cache=True)
def _label_components(labels, edges, area):
    """(m, region of each vertex, area of each region) of a labelling:
    union-find over the same-label edges, regions numbered in the order of
    their smallest vertex, areas summed in vertex order."""
    n = labels.size
    parent = np.arange(n)
    for e in range(edges.shape[0]):
        if labels[edges[e, 0]] == labels[edges[e, 1]]:
            union(parent, edges[e, 0], edges[e, 1])
    comp = np.empty(n, np.int64)
    m = number_components(parent, comp)
    areas = np.zeros(m)
    for v in range(n):
        areas[comp[v]] += area[v]
    return m, comp, areas


def _components(labels, edges, area):
    """The regions of a labelling: (m, region of each vertex, area of each
    region), as scipy's ``connected_components`` of the same-label edges
    numbers them and ``np.bincount`` sums their areas (``tests/test_regions.py``
    holds the two equal).

    Examples
    --------
    >>> m, comp, areas = _components(np.array([0, 0, 1, 0]), np.array([[0, 1], [1, 2], [2, 3]]),
    ...                              np.array([1.0, 2.0, 3.0, 4.0]))
    >>> m, comp.tolist(), areas.tolist()
    (3, [0, 0, 1, 2], [3.0, 3.0, 4.0])
    """
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    return _label_components(np.ascontiguousarray(labels, np.int64), edges,
                             np.ascontiguousarray(area, np.float64))


def region_terms(labels, edges, area, exponent):
    """Slow reference: (m, Σ area^exponent) over all connected regions."""
    m, _, areas = _components(labels, edges, area)
    return int(m), float(np.sum(areas ** exponent))


def region_cache(labels, edges, area):
    """Per vertex: a root vertex naming its region, and the region's area."""
    _, comp, areas = _components(labels, edges, area)
    _, first = np.unique(comp, return_index=True)
    return first[comp].astype(np.int64), areas[comp]


@njit(cache=True)
def grow_region(lab, labels, indptr, indices, area, mark, visited, head, n_vis, targets, n_targets,
                found):
    """Breadth-first search of label ``lab`` from the queue ``visited[head:n_vis]``
    (marked in ``mark``): marks and queues every unmarked same-label
    neighbour of a vertex it takes from the queue, and sums the ``area`` of
    the vertices taken. Returns (that area, n_vis, found).

    With ``n_targets`` > 0 it counts in ``found`` the vertices it queues that
    ``targets`` flags and stops as soon as ``found`` reaches ``n_targets``
    (the area is then partial); with 0 it grows the whole region."""
    a = 0.0
    last = n_targets > 0 and found == n_targets
    while head < n_vis and not last:
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
            if n_targets > 0 and targets[u]:
                found += 1
                if found == n_targets:
                    last = True
                    break
    return a, n_vis, found


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
            a, n_vis, _ = grow_region(labels[s], labels, indptr, indices, area, mark, visited, start,
                                      n_vis, mark, 0, 0)
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


# ------------------------------------------- the regions a move changes (compiled kernels)
@compiled_only
def touching_regions(R, n_r, new_label, labels, indptr, indices, comp_root, comp_area, in_r, mark,
                     roots, exponent):
    """Regions of ``new_label`` touching R: (count, Σ area, Σ area^e).

    A region's area is read at its name, ``comp_area[comp_root[u]]``: right
    for the per-vertex cache (the root is a vertex of its region) and for
    the region index (:func:`move_regions`)."""
    for t in range(n_r):
        in_r[R[t]] = 1
    k = 0
    s = 0.0
    sp = 0.0
    for t in range(n_r):
        v = R[t]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if in_r[u] or labels[u] != new_label:
                continue
            r = comp_root[u]
            if mark[r]:
                continue
            mark[r] = 1
            roots[k] = r
            k += 1
            s += comp_area[r]
            sp += comp_area[r] ** exponent
    for t in range(k):
        mark[roots[t]] = 0
    for t in range(n_r):
        in_r[R[t]] = 0
    return k, s, sp


@compiled_only
def search_pieces(R, n_r, ell, labels, indptr, indices, area, in_r, owner, queue, parent, count,
                  garea):
    """The interleaved search of :func:`pieces_interleaved`; leaves its
    groups in place (``owner`` of every queued vertex, union-find ``parent``,
    ``count`` of queued but unvisited vertices, ``garea``) for the caller to
    read and clear. Returns (groups, queued vertices, pieces found).
    ``in_r`` marks R on entry."""
    tail = 0
    n_groups = 0
    for t in range(n_r):
        v = R[t]
        for p in range(indptr[v], indptr[v + 1]):
            s = indices[p]
            if in_r[s] or owner[s] >= 0 or labels[s] != ell:
                continue
            owner[s] = n_groups
            parent[n_groups] = n_groups
            count[n_groups] = 1
            garea[n_groups] = area[s]
            n_groups += 1
            queue[tail] = s
            tail += 1
    n_roots = n_groups
    growing = n_groups
    head = 0
    while head < tail and n_roots > 1 and growing > 1:
        v = queue[head]
        head += 1
        g = find(parent, owner[v])
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if in_r[u] or labels[u] != ell:
                continue
            if owner[u] < 0:
                owner[u] = g
                count[g] += 1
                garea[g] += area[u]
                queue[tail] = u
                tail += 1
            else:
                h = find(parent, owner[u])
                if h != g:
                    # Two searches met: one piece. Merge h into g.
                    growing -= 1 if count[h] > 0 else 0
                    parent[h] = g
                    count[g] += count[h]
                    garea[g] += garea[h]
                    n_roots -= 1
        count[g] -= 1
        if count[g] == 0:
            growing -= 1
    return n_groups, tail, n_roots


@compiled_only
def pieces_interleaved(R, n_r, ell, labels, indptr, indices, area, rest_area, exponent, in_r,
                       owner, queue, parent, count, garea):
    """Pieces of C \\ R (C the region of label ``ell`` holding the connected
    set R; ``rest_area`` = area of C \\ R): (count, Σ area^exponent).

    Every piece holds a neighbour of R. One breadth-first search grows from
    all those neighbours at once, merging searches that meet; it stops when
    all have met (C \\ R is one piece, the common case) or when at most one
    search is still growing (its area is what the others leave). The cost
    is that of the smaller pieces, not of C. ``owner`` must be −1 on entry
    (and is again on return); ``in_r`` zero.
    """
    for t in range(n_r):
        in_r[R[t]] = 1
    n_groups, tail, n_roots = search_pieces(R, n_r, ell, labels, indptr, indices, area, in_r,
                                            owner, queue, parent, count, garea)
    if n_roots == 1:
        n_pieces = 1
        sp = rest_area ** exponent
    else:
        n_pieces = 0
        sp = 0.0
        done = 0.0
        open_root = -1
        for gi in range(n_groups):
            if parent[gi] != gi:
                continue
            n_pieces += 1
            if count[gi] == 0:
                sp += garea[gi] ** exponent
                done += garea[gi]
            else:
                open_root = gi
        if open_root >= 0:
            sp += max(rest_area - done, 0.0) ** exponent
    for t in range(tail):
        owner[queue[t]] = -1
    for t in range(n_r):
        in_r[R[t]] = 0
    return n_pieces, sp


@compiled_only
def vertex_leave_pieces(k, ell, labels, indptr, indices, area, comp_area, is_nb, mark, visited, ex):
    """Pieces of k's region (label ``ell``) once k leaves it: (count, Σ area^ex).

    Each piece holds a same-label neighbour of k. The pieces are searched
    one at a time, k blocked; as soon as every such neighbour has been
    reached, the piece being searched is the last one and its area is the
    region's cached area minus k and the earlier pieces (areas are whole
    pixel counts, so the difference is exact). In a planar graph the
    neighbours of k are usually joined by a short path around k, so the
    search stops after a few vertices instead of covering the region.
    ``is_nb`` and ``mark`` are zero on entry and on return.
    """
    n_nb = 0
    for p in range(indptr[k], indptr[k + 1]):
        u = indices[p]
        if labels[u] == ell and not is_nb[u]:
            is_nb[u] = 1
            n_nb += 1
    rest = comp_area[k] - area[k]
    if n_nb <= 1:
        for p in range(indptr[k], indptr[k + 1]):
            is_nb[indices[p]] = 0
        return n_nb, (rest ** ex if n_nb == 1 else 0.0)
    mark[k] = 1
    visited[0] = k
    n_vis = 1
    found = 0
    pieces = 0
    sp = 0.0
    done_area = 0.0
    for p0 in range(indptr[k], indptr[k + 1]):
        s = indices[p0]
        if not is_nb[s] or mark[s]:
            continue
        pieces += 1
        mark[s] = 1
        visited[n_vis] = s
        n_vis += 1
        a, n_vis, found = grow_region(ell, labels, indptr, indices, area, mark, visited, n_vis - 1,
                                      n_vis, is_nb, n_nb, found + 1)
        if found == n_nb:
            sp += (rest - done_area) ** ex
            break
        sp += a ** ex
        done_area += a
    for h in range(n_vis):
        mark[visited[h]] = 0
    for p in range(indptr[k], indptr[k + 1]):
        is_nb[indices[p]] = 0
    return pieces, sp
