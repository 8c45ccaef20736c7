"""Cluster scores, tree construction, StocInsert walks and split sums.

The numerical core of the tree-guided kernel, written once as plain-Python
``*_impl`` functions and compiled with numba (``_build``, ``_walk``, ...):

* :func:`_score_any`, the cluster score s(A) of a set from its summed
  statistics (the image model's penalised likelihood, or the DP mixture's
  log α + log Γ(|A|) + log m(x_A));
* :func:`_build_impl`, the greedy agglomerative tree of a vertex set, and
  :func:`_induced_impl`, the tree induced on a set by the global tree;
* :func:`_walk_impl`, the StocInsert walk of a split (drawn or forced), and
  :func:`_split_logsum_impl`, the sum over the split paths of a tree that
  yield given parts;
* log d between sets (:func:`_logd_matrix_impl`) and scores of many sets.

:class:`_Fns` hands the kernel either the compiled functions or plain-Python
copies whose global names ``_score_any`` and ``_walk`` are rebound (to a
user's score if given); the copies take this module's globals, so the
``*_impl`` functions and :class:`_Fns` must stay together here. The rules
these functions implement are derived in ``docs/algorithms/tree_guided.md``.
"""

from __future__ import annotations

import heapq
import math
import types

import numpy as np
from numba import njit

from ...models.base import SCORE_IMAGE
from ...models.image_kernels import set_score
from ...models.mixture import log_marginal
from ...models.mixture.priors import prior_log_factor


# ---------------------------------------------------------------------------
# Cluster scores s(A) from summed statistics (first-class functions)
# ---------------------------------------------------------------------------


@njit(cache=True)
def _score_any(st, n, sp):
    """Cluster score of a set with summed statistics ``st`` and ``n`` items.

    ``sp`` is what the model's ``cluster_score()`` returns; ``sp[0]`` selects the model: SCORE_IMAGE, sp[1:] = [C, B, use_hist,
    use_lin, use_quad, kappa, ridge, a0 + a1, a2, exponent]
    (:func:`swcuts.models.image_kernels.set_score`); SCORE_MIXTURE,
    sp[1:] = [likelihood kind, the partition prior's parameters (3,
    :mod:`swcuts.models.mixture.priors`), likelihood params...] (the
    potential κ(n) m(x) with log κ(n) = f(n), the prior's cluster factor;
    log α + lgamma(n) for the DP). The plain-Python helpers rebind this name
    to a user's score.
    """
    if sp[0] == SCORE_IMAGE:
        return set_score(st, sp)
    return prior_log_factor(sp[2:5], n, log_marginal(int(sp[1]), st, sp[5:]))


# ---------------------------------------------------------------------------
# Tree construction (greedy agglomeration), plain Python; compiled below
# ---------------------------------------------------------------------------


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
    stats = np.zeros((nn, D))
    size = np.zeros(nn, np.int64)
    sc = np.zeros(nn)
    left = np.full(max(n - 1, 0), -1, np.int64)
    right = np.full(max(n - 1, 0), -1, np.int64)
    parent = np.full(nn, -1, np.int64)
    active = np.zeros(nn, np.bool_)
    for k in range(n):
        stats[k, :] = vstats[items[k]]
        size[k] = 1
        sc[k] = _score_any(stats[k], 1, sp)
        active[k] = True
    tmp = np.empty(D)
    next_id = n
    heap = [(0.0, 0, 0)]
    heap.pop()
    if use_graph and n > 1:
        for k in range(n):
            local[items[k]] = k
        ne = 0
        for k in range(n):
            v = items[k]
            for p in range(indptr[v], indptr[v + 1]):
                u = local[indices[p]]
                if u >= 0 and u != k:
                    ne += 1
        head = np.full(nn, -1, np.int64)
        nxt = np.empty(ne + 1, np.int64)
        val = np.empty(ne + 1, np.int64)
        free = np.empty(ne + 1, np.int64)
        buf = np.empty(ne + 1, np.int64)
        n_free = 0
        top = 0
        for k in range(n):
            v = items[k]
            for p in range(indptr[v], indptr[v + 1]):
                u = local[indices[p]]
                if u < 0 or u == k:
                    continue
                e = top
                top += 1
                val[e] = u
                nxt[e] = head[k]
                head[k] = e
                if k < u:
                    np.add(stats[k], stats[u], tmp)
                    heapq.heappush(heap, (sc[k] + sc[u] - _score_any(tmp, 2, sp), k, u))
        for k in range(n):
            local[items[k]] = -1
        uf = np.arange(nn)
        stamp = np.full(nn, -1, np.int64)
        while len(heap) > 0:
            item = heapq.heappop(heap)
            a = item[1]
            b = item[2]
            if not (active[a] and active[b]):
                continue
            m = next_id
            next_id += 1
            np.add(stats[a], stats[b], stats[m])
            size[m] = size[a] + size[b]
            sc[m] = _score_any(stats[m], size[m], sp)
            left[m - n] = a
            right[m - n] = b
            parent[a] = m
            parent[b] = m
            active[a] = False
            active[b] = False
            active[m] = True
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
        while len(heap) > 0:
            item = heapq.heappop(heap)
            a = item[1]
            b = item[2]
            if not (active[a] and active[b]):
                continue
            m = next_id
            next_id += 1
            np.add(stats[a], stats[b], stats[m])
            size[m] = size[a] + size[b]
            sc[m] = _score_any(stats[m], size[m], sp)
            left[m - n] = a
            right[m - n] = b
            parent[a] = m
            parent[b] = m
            active[a] = False
            active[b] = False
            active[m] = True
            w = 0
            for i in range(n_alive):
                r = alive[i]
                if active[r]:
                    alive[w] = r
                    w += 1
            n_alive = w
            for i in range(n_alive):
                r = alive[i]
                np.add(stats[r], stats[m], tmp)
                heapq.heappush(heap, (sc[r] + sc[m] - _score_any(tmp, size[r] + size[m], sp), r, m))
            alive[n_alive] = m
            n_alive += 1
    # Leaf order: the leaves of every node are contiguous.
    lo = np.zeros(nn, np.int64)
    for v in range(nn - 1, n - 1, -1):
        j = v - n
        lo[left[j]] = lo[v]
        lo[right[j]] = lo[v] + size[left[j]]
    order = np.empty(n, np.int64)
    for k in range(n):
        order[lo[k]] = k
    return left, right, parent, stats, sc, size, lo, order


def _walk_impl(sp, left, right, parent, stats, size, sc, n, nu, inv_t, log_wnew,
               pure, k, forced, u, assign, stop):
    """StocInsert from node ``nu`` to the root: the split's group choices.

    Groups start as the leaves of the two children of ``nu``; the sibling
    subtree Q of every node on the way up (nearest first) joins an open
    group g with probability ∝ exp(-log d(g, Q) / T) or opens a new group
    with probability ∝ exp(log_wnew). ``forced``: the choices are those that
    reproduce the parts ``pure`` (part of every node, which must be ≥ 0 for
    the children of ``nu`` and every Q; ``k`` parts, group id = part id,
    open groups visited in ascending id); otherwise the choices are drawn
    with the uniforms ``u`` (group ids in order of opening). The group of
    the t-th Q goes to ``assign[t]``. ``stop`` (forced walks): give up as
    soon as the log probability so far, an upper bound of the whole (every
    choice adds a log probability ≤ 0), falls below it; -inf never stops.
    Returns (log probability of the choices, or of the choices so far when
    stopped; number of Qs; number of groups; whether the walk reached the
    root).
    """
    D = stats.shape[1]
    depth = 0
    v = parent[nu]
    while v >= 0:
        depth += 1
        v = parent[v]
    cap = k if forced else depth + 2
    gstats = np.zeros((cap, D))
    gsize = np.zeros(cap, np.int64)
    gsc = np.zeros(cap)
    gopen = np.zeros(cap, np.bool_)
    logits = np.empty(cap + 1)
    gid = np.empty(cap + 1, np.int64)
    usc = np.empty(cap + 1)
    tmp = np.empty(D)
    j = nu - n
    cl = left[j]
    cr = right[j]
    if forced:
        gl = pure[cl]
        gr = pure[cr]
    else:
        gl = 0
        gr = 1
    gstats[gl, :] = stats[cl]
    gsize[gl] = size[cl]
    gsc[gl] = sc[cl]
    gopen[gl] = True
    gstats[gr, :] = stats[cr]
    gsize[gr] = size[cr]
    gsc[gr] = sc[cr]
    gopen[gr] = True
    n_open = 2
    logp = 0.0
    child = nu
    v = parent[nu]
    t = 0
    while v >= 0:
        jv = v - n
        Q = left[jv]
        if Q == child:
            Q = right[jv]
        m = 0
        top = k if forced else n_open
        for g in range(top):
            if gopen[g]:
                np.add(gstats[g], stats[Q], tmp)
                s_u = _score_any(tmp, gsize[g] + size[Q], sp)
                logits[m] = -(gsc[g] + sc[Q] - s_u) * inv_t
                gid[m] = g
                usc[m] = s_u
                m += 1
        logits[m] = log_wnew
        gid[m] = -1
        m += 1
        mx = logits[0]
        for i in range(1, m):
            if logits[i] > mx:
                mx = logits[i]
        acc = 0.0
        for i in range(m):
            acc += math.exp(logits[i] - mx)
        lse = mx + math.log(acc)
        target = -1
        idx = m - 1
        if forced:
            target = pure[Q]
            for i in range(m - 1):
                if gid[i] == target:
                    idx = i
                    break
        else:
            x = u[t]
            cum = 0.0
            for i in range(m):
                cum += math.exp(logits[i] - lse)
                if x < cum:
                    idx = i
                    break
        logp += logits[idx] - lse
        if logp < stop:
            return logp, t + 1, n_open, False
        g = gid[idx]
        if g >= 0:
            np.add(gstats[g], stats[Q], gstats[g])
            gsize[g] += size[Q]
            gsc[g] = usc[idx]
        else:
            g = target if forced else n_open
            gstats[g, :] = stats[Q]
            gsize[g] = size[Q]
            gsc[g] = sc[Q]
            gopen[g] = True
            n_open += 1
        assign[t] = g
        child = v
        v = parent[v]
        t += 1
    return logp, t, n_open, True


def _split_logsum_impl(sp, left, right, parent, stats, size, sc, n, leafpart, k,
                       node_logw, inv_t, log_wnew, best, stop):
    """log Σ over every path of the split procedure on this tree that yields
    the parts ``leafpart`` (part id of every leaf, 0..k-1): the nodes ν whose
    children and off-path subtrees each lie in one part (children in two
    different parts), each weighted by its node probability and its replayed
    StocInsert choices. ``best``: the largest single path instead (the
    negative control). -inf when no path yields the parts.

    ``stop``: a path whose replay falls below it is left unfinished and
    counted with its partial (larger) probability. Returns (the log sum,
    True) when every path was finished, else (an upper bound of it, False).
    With deterministic trees there is at most one path (docs), so an
    unfinished sum lies below ``stop``."""
    nn = 2 * n - 1
    pure = np.empty(nn, np.int64)
    for v in range(n):
        pure[v] = leafpart[v]
    for j in range(n - 1):
        a = pure[left[j]]
        b = pure[right[j]]
        pure[n + j] = a if (a >= 0 and a == b) else -1
    ok = np.zeros(nn, np.bool_)
    ok[nn - 1] = True
    for v in range(nn - 1, n - 1, -1):
        j = v - n
        ok[left[j]] = ok[v] and pure[right[j]] >= 0
        ok[right[j]] = ok[v] and pure[left[j]] >= 0
    acc = -np.inf
    complete = True
    no_u = np.empty(0)
    assign = np.empty(max(n, 1), np.int64)
    for j in range(n - 1):
        v = n + j
        if not ok[v]:
            continue
        a = pure[left[j]]
        b = pure[right[j]]
        if a < 0 or b < 0 or a == b:
            continue
        res = _walk(sp, left, right, parent, stats, size, sc, n, v, inv_t, log_wnew,
                    pure, k, True, no_u, assign, stop - node_logw[j])
        lp = node_logw[j] + res[0]
        complete = complete and res[3]
        if best:
            if lp > acc:
                acc = lp
        else:
            acc = np.logaddexp(acc, lp)
    return acc, complete


def _logd_matrix_impl(sp, SA, sA, nA, SB, sB, nB):
    """log d between every set of A and every set of B, from their statistics."""
    out = np.empty((SA.shape[0], SB.shape[0]))
    tmp = np.empty(SA.shape[1])
    for i in range(SA.shape[0]):
        for j in range(SB.shape[0]):
            np.add(SA[i], SB[j], tmp)
            out[i, j] = sA[i] + sB[j] - _score_any(tmp, nA[i] + nB[j], sp)
    return out


def _scores_impl(sp, S, n):
    """Cluster scores of sets with statistics ``S`` (rows) and sizes ``n``."""
    out = np.empty(S.shape[0])
    for i in range(S.shape[0]):
        out[i] = _score_any(S[i], n[i], sp)
    return out


def _induced_impl(sp, items, gpos, hmin, lg, vstats):
    """The tree of ``items`` (ascending) induced by the global tree.

    Every internal node of the induced tree is a node of the global tree
    under which both children hold items of the set; the other nodes are
    contracted. In the depth-first leaf order of the global tree (leaf
    positions ``gpos``) the split between consecutive items s-1 and s is
    their lowest common ancestor, whose depth is the smallest depth of the
    splits between adjacent leaves at positions a+1..b (a < b the items'
    positions): one range-minimum query of the sparse table ``hmin``
    (``hmin[j, p]`` = min of the adjacent-split depths at positions
    p..p+2^j-1; ``lg[k]`` = floor(log2 k)), O(1) per item whatever the size
    and depth of the global tree. The induced tree is the Cartesian tree
    (smallest depth at the root) of those depths. Statistics and scores
    are those of the induced nodes' item sets. Same output as
    :func:`_build_impl` (internal nodes numbered children first, root last).
    """
    m = items.shape[0]
    D = vstats.shape[1]
    nn = 2 * m - 1
    stats = np.zeros((nn, D))
    size = np.zeros(nn, np.int64)
    sc = np.zeros(nn)
    left = np.full(max(m - 1, 0), -1, np.int64)
    right = np.full(max(m - 1, 0), -1, np.int64)
    parent = np.full(nn, -1, np.int64)
    lo = np.zeros(nn, np.int64)
    for k in range(m):
        stats[k, :] = vstats[items[k]]
        size[k] = 1
        sc[k] = _score_any(stats[k], 1, sp)
    keys = np.empty(m, np.int64)
    for k in range(m):
        keys[k] = gpos[items[k]]
    dord = np.argsort(keys)
    if m == 1:
        return left, right, parent, stats, sc, size, lo, dord
    for t in range(m):
        lo[dord[t]] = t
    h = np.empty(m, np.int64)  # h[s]: depth of the split between positions s-1 and s
    for s in range(1, m):
        a = keys[dord[s - 1]] + 1
        b = keys[dord[s]]
        j = lg[b - a + 1]
        x = hmin[j, a]
        y = hmin[j, b - (1 << j) + 1]
        h[s] = x if x < y else y
    # Cartesian tree of h[1..m-1] (minimum at the root).
    lch = np.full(m, -1, np.int64)
    rch = np.full(m, -1, np.int64)
    stack = np.empty(m, np.int64)
    top = 0
    for s in range(1, m):
        last = -1
        while top > 0 and h[stack[top - 1]] > h[s]:
            top -= 1
            last = stack[top]
        lch[s] = last
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
    top = 0
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
        for q in range(D):
            stats[v, q] = stats[lc, q] + stats[rc, q]
        size[v] = size[lc] + size[rc]
        sc[v] = _score_any(stats[v], size[v], sp)
        lo[v] = a_of[s]
    return left, right, parent, stats, sc, size, lo, dord


_build = njit(cache=True)(_build_impl)
_walk = njit(cache=True)(_walk_impl)
_split_logsum = njit(cache=True)(_split_logsum_impl)
_logd_matrix = njit(cache=True)(_logd_matrix_impl)
_scores = njit(cache=True)(_scores_impl)
_induced = njit(cache=True)(_induced_impl)


class _Fns:
    """The helpers: compiled (the module's numba functions, scores by
    ``_score_any``) or plain Python — the same functions with the global
    names ``_score_any`` and ``_walk`` rebound, to a user's score if given."""

    def __init__(self, compiled, sp, score=None):
        self.sp = sp
        if compiled and score is None:
            self.score = _score_any
            self.build, self.walk = _build, _walk
            self.logsum, self.logd = _split_logsum, _logd_matrix
            self.scores, self.induced = _scores, _induced
            return
        g = dict(globals())
        g["_score_any"] = _score_any.py_func if score is None else score
        self.score = g["_score_any"]

        def copy(fn):
            return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__)

        self.build, self.walk = copy(_build_impl), copy(_walk_impl)
        g["_walk"] = self.walk
        self.logsum, self.logd = copy(_split_logsum_impl), copy(_logd_matrix_impl)
        self.scores, self.induced = copy(_scores_impl), copy(_induced_impl)
