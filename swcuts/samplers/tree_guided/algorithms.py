"""Tree construction, and the helpers the kernel calls (compiled or not).

The tree construction of the tree-guided kernel, written once as
plain-Python ``*_impl`` functions and compiled with numba:

* :func:`_build_impl`, the greedy agglomerative tree of a vertex set,
  its heavy paths rebalanced (:func:`.balanced._rebalance_impl`,
  ``tree_build="balanced"``) or the same joins by matching rounds
  (:func:`.balanced._build_balanced_impl`, ``tree_build="matching"``), and :func:`_induced_impl`, the tree
  induced on a set by the global tree.

:class:`_Fns` hands the kernel either the compiled functions of this
module, :mod:`.scores` (cluster scores s(A), log d between sets) and
:mod:`.walks` (StocInsert walks, replays and split sums), or plain-Python
copies whose global names ``_score_any``, ``_walk_groups``, ``_replay`` and
``_join_round`` are rebound (to a
user's score if given); the copies take the globals of the four modules. The rules these
functions implement are derived in ``docs/algorithms/tree_guided.md``.
"""

from __future__ import annotations

import heapq
import types

import numpy as np
from numba import njit

from swcuts._numba.primitives import gather_marked
from swcuts.samplers.tree_guided import balanced, pairs, scores, walks
from swcuts.samplers.tree_guided.balanced import (
    _build_balanced, _build_balanced_impl, _join, _join_impl, _join_round_impl, _rebalance,
    _rebalance_impl)
from swcuts.samplers.tree_guided.trees import (
    leaf_order, local_edges, no_links, node_rows, range_min)
from swcuts.samplers.tree_guided.scores import (
    _logd_matrix, _logd_matrix_impl, _same_stats, _score_any, _scores, _scores_impl)
from swcuts.samplers.tree_guided.walks import (
    _replay_impl, _split_logsum, _split_logsum_impl, _walk, _walk_groups, _walk_groups_impl,
    _walk_impl)


# ---------------------------------------------------------------------------
# Tree construction (greedy agglomeration), plain Python; compiled below
# ---------------------------------------------------------------------------


def _next_join_impl(sp, heap, active, m, n, stats, size, sc, left, right, parent):
    """Pops ``heap`` (log d, a, b) down to its first pair of clusters both
    active and joins them as node m (:func:`.balanced._join_impl`); False
    when the heap runs out first."""
    while len(heap) > 0:
        item = heapq.heappop(heap)
        a = item[1]
        b = item[2]
        if active[a] and active[b]:
            _join(sp, a, b, m, n, stats, size, sc, left, right, parent)
            active[a] = False
            active[b] = False
            active[m] = True
            return True
    return False


_next_join = njit(cache=True)(_next_join_impl)


def _build_impl(sp, items, local, indptr, indices, use_graph, vstats):
    """Greedy agglomerative tree of ``items`` (ascending vertex ids).

    Nodes 0..n-1 are the leaves (item ``items[k]``), n..2n-2 the joined
    clusters in order of creation; the root is 2n-2. Phase 1 (``use_graph``)
    joins only clusters linked by an edge of the CSR graph (indptr,
    indices); phase 2 joins whatever is left, every pair a candidate. Each
    phase joins the candidate pair of smallest log d first, ties broken by
    the node numbers (a, b), a < b, so the tree is a function of the set.
    ``local`` (size N, all -1) is scratch and is restored.

    Returns (left, right, parent, stats, score, size, lo, order): children
    of internal node n + j, parent of every node (-1 at the root), summed
    statistics, cluster score and number of leaves of every node; the
    leaves of node v are ``items[order[lo[v]:lo[v] + size[v]]]``.
    """
    n = items.shape[0]
    D = vstats.shape[1]
    nn = 2 * n - 1
    stats, size, sc = node_rows(n, D)
    left, right, parent = no_links(n)
    active = np.zeros(nn, np.bool_)
    for k in range(n):
        stats[k, :] = vstats[items[k]]
        size[k] = 1
        sc[k] = _score_any(stats[k], size[k], sp)  # int64, not Literal[int](1): one compile
        active[k] = True
    tmp = np.empty(D)
    next_id = n
    heap = [(0.0, 0, 0)]
    heap.pop()
    if use_graph and n > 1:
        ek, eu = local_edges(items, local, indptr, indices)
        ne = ek.shape[0]
        head = np.full(nn, -1, np.int64)
        nxt = np.empty(ne + 1, np.int64)
        val = np.empty(ne + 1, np.int64)
        free = np.empty(ne + 1, np.int64)
        buf = np.empty(ne + 1, np.int64)
        n_free = 0
        for e in range(ne):
            k = ek[e]
            u = eu[e]
            val[e] = u
            nxt[e] = head[k]
            head[k] = e
            if k < u:
                np.add(stats[k], stats[u], tmp)
                heapq.heappush(heap, (sc[k] + sc[u] - _score_any(tmp, size[k] + size[u], sp), k, u))
        uf = np.arange(nn)
        stamp = np.full(nn, -1, np.int64)
        while _next_join(sp, heap, active, next_id, n, stats, size, sc, left, right, parent):
            m = next_id
            next_id += 1
            a = left[m - n]
            b = right[m - n]
            uf[a] = m
            uf[b] = m
            # Neighbours of the new cluster: the current roots of the
            # neighbour entries of a and b, once each; the entries are freed.
            nb = 0
            for x in (a, b):
                e = head[x]
                while e >= 0:
                    r = val[e]
                    while uf[r] != r:
                        r = uf[r]
                    y = val[e]
                    while uf[y] != r:
                        z = uf[y]
                        uf[y] = r
                        y = z
                    if r != m and stamp[r] != m:
                        stamp[r] = m
                        buf[nb] = r
                        nb += 1
                    e2 = nxt[e]
                    free[n_free] = e
                    n_free += 1
                    e = e2
                head[x] = -1
            for t in range(nb):
                r = buf[t]
                n_free -= 1
                e = free[n_free]
                val[e] = r
                nxt[e] = head[m]
                head[m] = e
                np.add(stats[r], stats[m], tmp)
                heapq.heappush(heap, (sc[r] + sc[m] - _score_any(tmp, size[r] + size[m], sp), r, m))
    # Phase 2: every remaining pair is a candidate.
    alive = np.empty(n, np.int64)
    n_alive = 0
    for v in range(next_id):
        if active[v]:
            alive[n_alive] = v
            n_alive += 1
    if n_alive > 1:
        for i in range(n_alive):
            for j in range(i + 1, n_alive):
                a = alive[i]
                b = alive[j]
                np.add(stats[a], stats[b], tmp)
                heapq.heappush(heap, (sc[a] + sc[b] - _score_any(tmp, size[a] + size[b], sp), a, b))
        while _next_join(sp, heap, active, next_id, n, stats, size, sc, left, right, parent):
            m = next_id
            next_id += 1
            n_alive = gather_marked(alive, n_alive, active, alive)  # in place: the live clusters
            for i in range(n_alive):
                r = alive[i]
                np.add(stats[r], stats[m], tmp)
                heapq.heappush(heap, (sc[r] + sc[m] - _score_any(tmp, size[r] + size[m], sp), r, m))
            alive[n_alive] = m
            n_alive += 1
    lo, order = leaf_order(left, right, size, n)  # the leaves of every node are contiguous
    return left, right, parent, stats, sc, size, lo, order


def _induced_impl(sp, items, gpos, hmin, lg, vstats, leaf_sc, split_at, c_size, c_stats,
                  c_score):
    """The tree of ``items`` (ascending) induced by the global tree.

    Every internal node of the induced tree is a node of the global tree
    under which both children hold items of the set; the other nodes are
    contracted. The leaves are the items in depth-first order of the global
    tree (leaf positions ``gpos``), and the tree is the Cartesian tree of
    the splits between consecutive items (:func:`_cartesian_impl`).
    ``leaf_sc[i]`` is the score of item i alone (the same ``_score_any`` of
    its row, computed once); ``hmin``, ``lg``, ``split_at`` and the kept
    node scores ``c_size``, ``c_stats``, ``c_score`` as there. Same output
    as :func:`_build_impl` (internal nodes numbered children first, root
    last), plus ``hkey``: depth · N + position of the global node of every
    internal node (:func:`.trees._lifting_tables`).
    """
    m = items.shape[0]
    stats, size, sc = node_rows(m, vstats.shape[1])
    keys = np.empty(m, np.int64)
    for k in range(m):
        stats[k, :] = vstats[items[k]]
        size[k] = 1
        sc[k] = leaf_sc[items[k]]
        keys[k] = gpos[items[k]]
    dord = np.argsort(keys)
    left, right, parent, lo, hkey = _cartesian(sp, dord, keys, keys, stats, size, sc, hmin, lg,
                                               split_at, c_size, c_stats, c_score, _NO_HINT,
                                               _NO_HINT, stats[:0], _NO_HINT, sc[:0])
    return left, right, parent, stats, sc, size, lo, dord, hkey


def _cartesian_impl(sp, dord, first, last, stats, size, sc, hmin, lg, split_at, c_size, c_stats,
                    c_score, h_hint, old_node, o_stats, o_size, o_score):
    """The induced tree over m leaves that are disjoint runs of the global
    tree's depth-first leaf order: leaf k covers the positions
    ``first[k]..last[k]`` and ``dord[t]`` is the t-th leaf in that order;
    rows 0..m-1 of ``stats``, ``size`` and ``sc`` (2m - 1 rows) hold the
    leaves' statistics, sizes and scores, and the rows of the internal
    nodes are filled here. A leaf is an item (:func:`_induced_impl`) or a
    whole subtree of an induced tree (:func:`.merged.merged_tree`).

    The split between consecutive leaves s-1 and s is the lowest common
    ancestor of the last item of the one and the first of the other, whose
    depth is the smallest depth of the splits between adjacent leaves of
    the global tree at positions a+1..b: one range-minimum query of the
    sparse table ``hmin`` (:func:`.trees.range_min`), O(1) whatever the
    size and depth of the global tree. The tree is the Cartesian tree
    (smallest depth at the root) of those depths. ``hmin`` holds
    depth · N + position, so that the minimum also names the global node
    (``split_at[position]``); ``c_size``, ``c_stats`` and ``c_score`` (per
    global node, size -1 when empty) keep the last score computed at each
    global node with its size and statistics, and a node whose size and
    statistics are bit for bit those kept takes the kept score (the score
    is a function of them): a label's tree rebuilt after a few of its items
    moved rescores only the nodes above them.

    Hints from an earlier tree of a nearby set (:mod:`.rebuild`; empty
    arrays: none): ``h_hint[s]`` ≥ 0 is the key of the split between leaves
    s-1 and s, and ``old_node[s]`` ≥ 0 the earlier tree's node of that
    split, whose statistics, size and score are ``o_stats``, ``o_size``,
    ``o_score``: its score is taken when its size and statistics are bit
    for bit the new node's (the same output, fewer random accesses to the
    sparse table and the kept scores).

    Returns (left, right, parent, lo, hkey): internal nodes numbered
    children first, root 2m - 2; ``lo[v]`` the first position (0..m-1) of
    node v's leaves; ``hkey[j]`` depth · N + position of the global node of
    internal node m + j.
    """
    m = dord.shape[0]
    D = stats.shape[1]
    ng = hmin.shape[1]
    left, right, parent = no_links(m)
    lo = np.zeros(2 * m - 1, np.int64)
    hkey = np.zeros(max(m - 1, 0), np.int64)
    if m == 1:
        return left, right, parent, lo, hkey
    for t in range(m):
        lo[dord[t]] = t
    h = np.empty(m, np.int64)  # h[s]: the split between leaves s-1 and s
    hinted = h_hint.shape[0] > 0
    for s in range(1, m):
        if hinted and h_hint[s] >= 0:
            h[s] = h_hint[s]
        else:
            h[s] = range_min(hmin, lg, last[dord[s - 1]] + 1, first[dord[s]])
    # Cartesian tree of h[1..m-1] (minimum at the root).
    lch = np.full(m, -1, np.int64)
    rch = np.full(m, -1, np.int64)
    stack = np.empty(m, np.int64)
    top = 0
    for s in range(1, m):
        last_popped = -1
        while top > 0 and h[stack[top - 1]] > h[s]:
            top -= 1
            last_popped = stack[top]
        lch[s] = last_popped
        if top > 0:
            rch[stack[top - 1]] = s
        stack[top] = s
        top += 1
    root = stack[0]
    # Post-order numbering: internal node ids m, m+1, ..., root = 2m-2.
    node = np.full(m, -1, np.int64)  # node id of split s
    a_of = np.empty(m, np.int64)  # range start (position) of split s
    st_s = np.empty(m, np.int64)
    st_state = np.empty(m, np.int64)
    a_of[root] = 0
    st_s[0] = root
    st_state[0] = 0
    top = 1
    next_id = m
    while top > 0:
        s = st_s[top - 1]
        if st_state[top - 1] == 0:
            st_state[top - 1] = 1
            if lch[s] >= 0:
                a_of[lch[s]] = a_of[s]
                st_s[top] = lch[s]
                st_state[top] = 0
                top += 1
            continue
        if st_state[top - 1] == 1:
            st_state[top - 1] = 2
            if rch[s] >= 0:
                a_of[rch[s]] = s
                st_s[top] = rch[s]
                st_state[top] = 0
                top += 1
            continue
        top -= 1
        lc = node[lch[s]] if lch[s] >= 0 else dord[s - 1]
        rc = node[rch[s]] if rch[s] >= 0 else dord[s]
        v = next_id
        next_id += 1
        node[s] = v
        left[v - m] = lc
        right[v - m] = rc
        parent[lc] = v
        parent[rc] = v
        hkey[v - m] = h[s]
        for q in range(D):
            stats[v, q] = stats[lc, q] + stats[rc, q]
        size[v] = size[lc] + size[rc]
        lo[v] = a_of[s]
        o = old_node[s] if hinted else -1
        if o >= 0 and o_size[o] == size[v] and _same_stats(o_stats[o], stats[v]):
            sc[v] = o_score[o]
            continue
        g = split_at[h[s] % ng]
        if c_size[g] == size[v] and _same_stats(c_stats[g], stats[v]):
            sc[v] = c_score[g]
        else:
            sc[v] = _score_any(stats[v], size[v], sp)
            c_size[g] = size[v]
            for q in range(D):
                c_stats[g, q] = stats[v, q]
            c_score[g] = sc[v]
    return left, right, parent, lo, hkey


_build = njit(cache=True)(_build_impl)
_NO_HINT = np.zeros(0, np.int64)
_cartesian = njit(cache=True)(_cartesian_impl)
_induced = njit(cache=True)(_induced_impl)


class _Fns:
    """The helpers: compiled (the numba functions, scores by ``_score_any``)
    or plain Python — the same functions with the global names
    ``_score_any``, ``_walk_groups``, ``_replay``, ``_join_round``, ``_join``,
    ``_next_join``, ``_cartesian``, ``_logd_pair`` and ``_merge_row`` rebound, to a user's
    score if given."""

    def __init__(self, compiled, sp, score=None):
        self.sp = sp
        if compiled and score is None:
            self.score = _score_any
            self.build, self.walk, self.walk_groups = _build, _walk, _walk_groups
            self.build_matching, self.rebalance = _build_balanced, _rebalance
            self.logsum, self.logd = _split_logsum, _logd_matrix
            self.scores, self.induced, self.cartesian = _scores, _induced, _cartesian
            self.pairs = pairs._refresh
            self.root_bound = walks._root_bound
            self.log_q_merge, self.log_q_anchor = pairs._log_q_merge, pairs._log_q_anchor
            self.anchor_draw = pairs._anchor_draw
            return
        g = {**vars(scores), **vars(walks), **vars(balanced), **vars(pairs), **globals()}
        g["_score_any"] = g["_score_inline"] = _score_any.py_func if score is None else score
        self.score = g["_score_any"]

        def copy(fn):
            return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__)

        self.build, self.walk = copy(_build_impl), copy(_walk_impl)
        g["_walk_groups"] = self.walk_groups = copy(_walk_groups_impl)
        g["_replay"] = copy(_replay_impl)
        g["_join_round"] = copy(_join_round_impl)
        g["_join"] = copy(_join_impl)
        g["_next_join"] = copy(_next_join_impl)
        g["_cartesian"] = self.cartesian = copy(_cartesian_impl)
        g["_logd_pair"] = copy(scores._logd_pair_impl)
        self.build_matching = copy(_build_balanced_impl)
        self.rebalance = copy(_rebalance_impl)
        self.logsum, self.logd = copy(_split_logsum_impl), copy(_logd_matrix_impl)
        self.scores, self.induced = copy(_scores_impl), copy(_induced_impl)
        self.pairs = copy(pairs._refresh_impl)
        self.root_bound = copy(walks._root_bound_impl)
        g["_merge_row"] = copy(pairs._merge_row_impl)
        self.log_q_merge = copy(pairs._log_q_merge_impl)
        self.log_q_anchor = copy(pairs._log_q_anchor_impl)
        self.anchor_draw = copy(pairs._anchor_draw_impl)

    def build_global(self, kind, items, local, indptr, indices, use_graph, vstats):
        """The global tree (``tree_build``): ``"greedy"`` (:func:`_build_impl`),
        ``"balanced"`` (that tree with its heavy paths rebalanced,
        :func:`.balanced._rebalance_impl`) or ``"matching"`` (the greedy
        joins by matching rounds, :func:`.balanced._build_balanced_impl`)."""
        if kind == "matching":
            return self.build_matching(self.sp, items, local, indptr, indices, use_graph, vstats)
        out = self.build(self.sp, items, local, indptr, indices, use_graph, vstats)
        if kind == "greedy" or items.shape[0] < 2:
            return out
        return self.rebalance(self.sp, out[0], out[1], out[3], out[5])
