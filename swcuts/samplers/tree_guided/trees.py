"""The tree of a vertex set, per-set information and the kNN candidate graph.

:class:`Tree` holds the output of the tree construction of
:mod:`.algorithms` for one vertex set (children, parents, per-node
statistics, scores and sizes, leaf order) and the node weights of a split.
:func:`_leaf_groups` reads the groups of a split off a walk. The kernel
caches trees and :class:`_SetInfo` (statistics and score of a set) by
vertex set; :class:`_Rest` holds the labels a move leaves alone. For
mixtures without a graph, :func:`_knn_csr` gives the k-nearest-neighbour
candidate graph of the tree construction (also used by
``Reconfiguration(outside="knn")``). See ``docs/algorithms/tree_guided.md`` ("Trees are a function
of the vertex set").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


class Tree:
    """The deterministic tree of one vertex set (see docs/algorithms/tree_guided.md).

    Attributes
    ----------
    items : ndarray of int64
        The vertex set, ascending; leaf k is ``items[k]``.
    n : int
    left, right : ndarray (n - 1,)
        Children of internal node n + j.
    parent : ndarray (2n - 1,)
        Parent of every node, -1 at the root (node 2n - 2).
    stats, score, size : per node statistics, cluster score s, leaf count.
    logd : ndarray (n - 1,)
        log d(l(ν), r(ν)) of internal node n + j.
    """

    def __init__(self, items, out):
        self.items = items
        self.n = int(items.size)
        (self.left, self.right, self.parent, self.stats, self.score, self.size, self.lo,
         self.order) = out[:8]
        # Induced trees: depth · N + position of every internal node's global node.
        self.hkey = out[8] if len(out) > 8 else None
        self.aux = {}  # per-tree tables of :mod:`.merged`, made on first use
        self.logd = node_logd(self.left, self.right, self.score, self.n)
        self._logw = None
        self._cumw = None
        self._minleaf = None

    @property
    def root(self) -> int:
        return 2 * self.n - 2

    def leaves(self, node) -> np.ndarray:
        """Items under ``node``, ascending."""
        lo = self.lo[node]
        return np.sort(self.items[self.order[lo:lo + self.size[node]]])

    def children(self, node):
        j = node - self.n
        return int(self.left[j]), int(self.right[j])

    def node_log_weights(self, temperature, floor) -> np.ndarray:
        """log probability of drawing internal node n + j for a split."""
        key = (float(temperature), float(floor))
        if self._logw is None or self._logw[0] != key:  # one entry: T changes when annealing
            self._logw = (key, _floored_log_softmax(self.logd / temperature, floor))
        return self._logw[1]

    def draw_node(self, temperature, floor, u) -> int:
        """j of the internal node n + j that a split draws (probability
        exp(node_log_weights)) with the uniform ``u``; the cumulative weights
        are kept with the node weights, so a draw is O(log n)."""
        logw = self.node_log_weights(temperature, floor)
        if self._cumw is None or self._cumw[0] is not logw:
            w = np.exp(logw)
            self._cumw = (logw, np.cumsum(w), w.sum())
        _, cum, total = self._cumw
        return min(int(np.searchsorted(cum, u * total, side="right")), self.n - 2)

    def ancestors(self, node) -> int:
        """Number of proper ancestors of ``node`` (its depth; O(depth))."""
        return int(_depth_of(self.parent, node))

    def group_firsts(self, nu, assign, k) -> np.ndarray:
        """Smallest item of each of the ``k`` groups of a split at ``nu``
        (groups as :func:`_walk_impl` numbers them, ``assign`` its choices),
        in O(depth): the smallest leaf under every node is kept with the
        tree (leaf k is ``items[k]``, ascending)."""
        if self._minleaf is None:
            self._minleaf = _min_leaf(self.left, self.right, self.n)
        return self.items[_group_first_leaves(self.left, self.right, self.parent, self.n, nu,
                                              assign, self._minleaf, k)]

    @property
    def nbytes(self) -> int:
        # + node weights and their sums, keys, and the tables of :mod:`.merged`
        return int(self.stats.nbytes + 16 * 8 * self.n)


def node_logd(left, right, score, n) -> np.ndarray:
    """log d(l(ν), r(ν)) = s(l) + s(r) - s(ν) of every internal node n + j
    of a tree (children ``left[j]``, ``right[j]``; ``score`` per node)."""
    return score[left] + score[right] - score[n:]


def _floored_log_softmax(x, floor) -> np.ndarray:
    """log of (1 - floor) softmax(x) + floor / len(x)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.copy()
    return floored_log_weights(x, x.max() + math.log(np.exp(x - x.max()).sum()), x.size, floor)


def floored_log_weights(x, lse, count, floor) -> np.ndarray:
    """log of (1 - floor) exp(x - lse) + floor / count: the weights of
    :func:`_floored_log_softmax` for some of ``count`` logits whose
    log-sum-exp is ``lse``."""
    lsm = np.asarray(x, dtype=np.float64) - lse
    if floor <= 0.0:
        return lsm
    return np.logaddexp(math.log1p(-floor) + lsm, math.log(floor / count))


class _SetInfo:
    """Statistics, score, size and smallest item of one vertex set."""

    __slots__ = ("items", "key", "stats", "score", "n", "first")

    def __init__(self, items, key, stats, score):
        self.items = items
        self.key = key
        self.stats = stats
        self.score = score
        self.n = int(items.size)
        self.first = int(items[0])


class _Rest:
    """Statistics, scores and sizes of the labels a move leaves alone, as
    arrays (one row per label)."""

    __slots__ = ("stats", "score", "n")

    def __init__(self, stats, score, n):
        self.stats = stats
        self.score = score
        self.n = n

    def __len__(self):
        return int(self.n.size)

    @classmethod
    def of(cls, infos, D):
        if not infos:
            return cls(np.zeros((0, D)), np.zeros(0), np.zeros(0, np.int64))
        return cls(np.array([a.stats for a in infos]), np.array([a.score for a in infos]),
                   np.array([a.n for a in infos], np.int64))


def _knn_csr(data, k):
    """Symmetrised k-nearest-neighbour graph of the standardised rows, CSR."""
    from scipy.spatial import cKDTree

    X = np.asarray(data, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    X = (X - X.mean(axis=0)) / sd
    n = X.shape[0]
    kk = min(k + 1, n)
    _, idx = cKDTree(X).query(X, k=kk)
    idx = np.asarray(idx).reshape(n, kk)
    src = np.repeat(np.arange(n), kk)
    dst = idx.ravel()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    a = np.concatenate((src, dst))
    b = np.concatenate((dst, src))
    pairs = np.unique(np.stack((a, b), axis=1), axis=0)
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, pairs[:, 0] + 1, 1)
    return np.cumsum(indptr).astype(np.int64), pairs[:, 1].astype(np.int64)


@njit(cache=True)
def _leaf_groups(left, right, parent, lo, order, size, n, nu, assign):
    """Group of every leaf after a split at ``nu``: 0 and 1 for the leaves
    of its two children, ``assign[t]`` for the t-th sibling subtree on the
    way to the root (as :func:`_walk_impl` numbers them)."""
    out = np.empty(n, np.int64)
    j = nu - n
    for side in range(2):
        c = left[j] if side == 0 else right[j]
        for p in range(lo[c], lo[c] + size[c]):
            out[order[p]] = side
    siblings = path_siblings(left, right, parent, n, nu)
    for t in range(siblings.size):
        Q = siblings[t]
        for p in range(lo[Q], lo[Q] + size[Q]):
            out[order[p]] = assign[t]
    return out


@njit(cache=True)
def _depth_of(parent, v):
    """Number of proper ancestors of node ``v``."""
    d = 0
    v = parent[v]
    while v >= 0:
        d += 1
        v = parent[v]
    return d


@njit(cache=True)
def mark_ancestors(parent, v, seen, out, m):
    """Mark node ``v`` and its ancestors up to the first one already
    marked: each is set in ``seen`` and stored at ``out[m]``, ``out[m + 1]``,
    ...; returns the new count (the nodes above several leaves are visited
    once however many leaves share them)."""
    while v >= 0 and not seen[v]:
        seen[v] = True
        out[m] = v
        m += 1
        v = parent[v]
    return m


@njit(cache=True)
def path_siblings(left, right, parent, n, nu):
    """The sibling subtree of every node on the path from ``nu`` up to the
    root, nearest first: the Qs that a split's walk at ``nu`` visits
    (internal node v has children ``left[v - n]`` and ``right[v - n]``)."""
    out = np.empty(_depth_of(parent, nu), np.int64)
    child = nu
    v = parent[nu]
    t = 0
    while v >= 0:
        Q = left[v - n]
        if Q == child:
            Q = right[v - n]
        out[t] = Q
        child = v
        v = parent[v]
        t += 1
    return out


@njit(cache=True)
def _min_leaf(left, right, n):
    """Smallest leaf under every node (internal nodes after their children)."""
    out = np.empty(2 * n - 1, np.int64)
    for k in range(n):
        out[k] = k
    for j in range(n - 1):
        a = out[left[j]]
        b = out[right[j]]
        out[n + j] = a if a < b else b
    return out


@njit(cache=True)
def _group_first_leaves(left, right, parent, n, nu, assign, minleaf, k):
    """Smallest leaf of each group of a split at ``nu`` (see
    :func:`_leaf_groups`), from the smallest leaf under every node."""
    out = np.full(k, 2 * n, np.int64)
    j = nu - n
    out[0] = minleaf[left[j]]
    out[1] = minleaf[right[j]]
    siblings = path_siblings(left, right, parent, n, nu)
    for t in range(siblings.size):
        Q = siblings[t]
        g = assign[t]
        if minleaf[Q] < out[g]:
            out[g] = minleaf[Q]
    return out


@njit(cache=True)
def range_min(hmin, lg, a, b):
    """Smallest entry of ``hmin[0, a..b]`` (a <= b) from the sparse table
    of :func:`_lifting_tables` (``lg[k]`` = floor(log2 k)): the key of the
    shallowest split between the leaves at positions a - 1 and b."""
    j = lg[b - a + 1]
    x = hmin[j, a]
    y = hmin[j, b - (1 << j) + 1]
    return x if x < y else y


def _lifting_tables(g):
    """(leaf position, sparse table, floor-log2 table, node at each split)
    of the global tree ``g`` for the induced trees: ``hmin[0, p]`` is
    depth · n + p with the depth of the lowest common ancestor of the
    leaves at depth-first positions p-1 and p (the one node that splits
    between them, ``split_at[p]``), ``hmin[j, p]`` the minimum of 2^j of
    them. Adding the position keeps the order of the depths (a range's
    shallowest split is unique: between two splits of equal depth lies a
    shallower one) and names the node at the minimum."""
    n = g.n
    nn = 2 * n - 1
    depth = np.zeros(nn, np.int64)
    for v in range(nn - 2, -1, -1):  # parents have larger ids
        depth[v] = depth[g.parent[v]] + 1
    h0 = np.zeros(max(n, 1), np.int64)
    split_at = np.zeros(max(n, 1), np.int64)
    if n > 1:
        h0[g.lo[g.right]] = depth[n:]  # a node splits at its right child's first leaf
        split_at[g.lo[g.right]] = np.arange(n, nn)
    h0 = h0 * max(n, 1) + np.arange(h0.size)
    K = max(1, int(max(n - 1, 1)).bit_length())
    hmin = np.empty((K, h0.size), np.int64)
    hmin[0] = h0
    for j in range(1, K):
        w = 1 << (j - 1)
        hmin[j] = hmin[j - 1]
        np.minimum(hmin[j - 1, :-w], hmin[j - 1, w:], out=hmin[j, :-w])
    lg = np.zeros(n + 1, np.int64)
    for k in range(2, n + 1):
        lg[k] = lg[k >> 1] + 1
    return np.ascontiguousarray(g.lo[:n]), hmin, lg, split_at


@njit(cache=True)
def leaf_order(left, right, size, n):
    """Positions of a binary tree's leaves such that the leaves of every node
    are contiguous: ``lo[v]`` the first position under node v (nodes ``n..``
    are internal, node ``n + j`` has children ``left[j]``, ``right[j]``, the
    root last), and ``order``, the leaf at each position."""
    nn = 2 * n - 1
    lo = np.zeros(nn, np.int64)
    for v in range(nn - 1, n - 1, -1):
        j = v - n
        lo[left[j]] = lo[v]
        lo[right[j]] = lo[v] + size[left[j]]
    order = np.empty(n, np.int64)
    for k in range(n):
        order[lo[k]] = k
    return lo, order



@njit(cache=True)
def node_rows(n, D):
    """Zeroed statistics (D columns), sizes and scores of the 2n - 1 nodes
    of a tree over n leaves."""
    nn = 2 * n - 1
    return np.zeros((nn, D)), np.zeros(nn, np.int64), np.zeros(nn)


@njit(cache=True)
def no_links(n):
    """``left``, ``right`` (n - 1 internal nodes) and ``parent`` (2n - 1
    nodes) of a tree over n leaves, all -1 (nothing joined yet)."""
    left = np.full(max(n - 1, 0), -1, np.int64)
    right = np.full(max(n - 1, 0), -1, np.int64)
    return left, right, np.full(2 * n - 1, -1, np.int64)


@njit(cache=True)
def local_edges(items, local, indptr, indices):
    """The edges of the CSR graph (indptr, indices) inside ``items``, by
    leaf numbers: (ek[e], eu[e]) for k ascending, then the row of
    ``items[k]`` in order, loops left out; an edge comes once each way.
    ``local`` (size N, all -1) is scratch and is restored."""
    n = items.shape[0]
    cap = 0
    for k in range(n):
        local[items[k]] = k
        cap += indptr[items[k] + 1] - indptr[items[k]]
    ek = np.empty(cap, np.int64)
    eu = np.empty(cap, np.int64)
    ne = 0
    for k in range(n):
        v = items[k]
        for p in range(indptr[v], indptr[v + 1]):
            u = local[indices[p]]
            if u >= 0 and u != k:
                ek[ne] = k
                eu[ne] = u
                ne += 1
    for k in range(n):
        local[items[k]] = -1
    return ek[:ne], eu[:ne]
