"""Balanced global trees (``TreeGuided(tree_build=...)``).

:func:`_rebalance_impl` (``"balanced"``) rebalances the heavy paths of the
greedy tree (see its docstring). :func:`_build_balanced_impl`
(``"matching"``) is an alternative to :func:`.algorithms._build_impl`
(same arguments, same output), described here. The greedy build joins one pair at a time, the pair of smallest log d; with
the DP score that is most often the largest cluster and one item, so the
tree is close to a caterpillar (depth ~ n / 2). Here the joins go by
rounds: in each round every candidate pair of current clusters is scored,
and the pairs are taken in order of log d (ties by node numbers), each
cluster joining at most once per round (a greedy maximal matching); then
the clusters left out are paired two by two when their best candidates
are the same cluster (two-hop pairs, as in multilevel graph coarsening).
A leaf's depth is at most the number of rounds, and a round joins nearly
every cluster, so the number of clusters falls by about half per round and
the depth is O(log n) in practice (measured mean leaf depth 10.6, 14.9, 20.3 at n = 1k, 10k, 100k
on the toy; not a worst-case bound). Phase 1
(``use_graph``) takes candidates from the edges of the CSR graph, phase 2
every pair of what is left, as in the greedy build. The tree is a function
of the set and the data only (see ``docs/algorithms/tree_guided.md``,
"A balanced global tree").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.samplers.tree_guided.scores import _score_any
from swcuts.samplers.tree_guided.trees import (
    leaf_order, local_edges, no_links, node_rows)


def _join_impl(sp, a, b, m, n, stats, size, sc, left, right, parent):
    """Node m := a ∪ b: its statistics, size and score, children (of
    internal node m, row m - n of ``left``, ``right``) and the parents."""
    for q in range(stats.shape[1]):
        stats[m, q] = stats[a, q] + stats[b, q]
    size[m] = size[a] + size[b]
    sc[m] = _score_any(stats[m], size[m], sp)
    left[m - n] = a
    right[m - n] = b
    parent[a] = m
    parent[b] = m


_join = njit(cache=True)(_join_impl)


def _join_round_impl(sp, ea, eb, stats, size, sc, left, right, parent, up, n, next_id, tmp):
    """One matching round over the candidate pairs (ea[e], eb[e]), ea < eb,
    sorted by (ea, eb) and distinct: pairs in order of log d, ties by
    (ea, eb), each node joined at most once; ``up[v]`` is set to the new
    node of every joined v. Returns the next free node id."""
    ne = ea.shape[0]
    w = np.empty(ne)
    for e in range(ne):
        a = ea[e]
        b = eb[e]
        for q in range(tmp.shape[0]):
            tmp[q] = stats[a, q] + stats[b, q]
        w[e] = sc[a] + sc[b] - _score_any(tmp, size[a] + size[b], sp)
    perm = np.argsort(w, kind="mergesort")  # stable: ties keep the (ea, eb) order
    for t in range(ne):
        e = perm[t]
        a = ea[e]
        b = eb[e]
        if up[a] != a or up[b] != b:
            continue
        _join(sp, a, b, next_id, n, stats, size, sc, left, right, parent)
        up[a] = next_id
        up[b] = next_id
        next_id += 1
    # Two-hop pairs: a cluster left out (every candidate of it was taken) is
    # paired with another left out whose best candidate is the same cluster
    # (the "hub"), in order of log d to the hub; else a hub with k satellites
    # would absorb one per round (depth k).
    hub = np.full(up.shape[0], -1, np.int64)
    cand = np.empty(2 * ne, np.int64)
    nc = 0
    for t in range(ne):
        e = perm[t]
        for side in range(2):
            x = ea[e] if side == 0 else eb[e]
            y = eb[e] if side == 0 else ea[e]
            if up[x] == x and hub[x] < 0:
                hub[x] = y
                cand[nc] = x
                nc += 1
    hubs = np.empty(nc, np.int64)
    for t in range(nc):
        hubs[t] = hub[cand[t]]
    hperm = np.argsort(hubs, kind="mergesort")  # by hub, then log d to it
    t = 0
    while t + 1 < nc:
        a = cand[hperm[t]]
        b = cand[hperm[t + 1]]
        if hub[a] != hub[b]:
            t += 1
            continue
        _join(sp, min(a, b), max(a, b), next_id, n, stats, size, sc, left, right, parent)
        up[a] = next_id
        up[b] = next_id
        next_id += 1
        t += 2
    return next_id


_join_round = njit(cache=True)(_join_round_impl)


def _build_balanced_impl(sp, items, local, indptr, indices, use_graph, vstats):
    """Balanced agglomerative tree of ``items`` (ascending vertex ids): the
    same output as :func:`.algorithms._build_impl` (leaves 0..n-1, internal
    nodes numbered children first, root 2n-2), joined by matching rounds
    (module docstring). ``local`` (size N, all -1) is scratch and is restored."""
    n = items.shape[0]
    D = vstats.shape[1]
    nn = 2 * n - 1
    stats, size, sc = node_rows(n, D)
    left, right, parent = no_links(n)
    up = np.arange(nn)
    for k in range(n):
        stats[k, :] = vstats[items[k]]
        size[k] = 1
        sc[k] = _score_any(stats[k], size[k], sp)  # int64, not Literal[int](1): one compile
    tmp = np.empty(D)
    next_id = n
    if use_graph and n > 1:
        ek, eu = local_edges(items, local, indptr, indices)
        keys = np.minimum(ek, eu) * nn + np.maximum(ek, eu)
        while keys.shape[0] > 0:
            keys = np.unique(keys)
            ea = keys // nn
            eb = keys % nn
            next_id = _join_round(sp, ea, eb, stats, size, sc, left, right, parent, up,
                                  n, next_id, tmp)
            # The pairs between the clusters of this round's result.
            ne = 0
            for e in range(keys.shape[0]):
                a = up[ea[e]]
                b = up[eb[e]]
                if a != b:
                    keys[ne] = min(a, b) * nn + max(a, b)
                    ne += 1
            keys = keys[:ne]
            for v in range(next_id):
                up[v] = v
    # Phase 2: every pair of what is left is a candidate.
    alive = np.empty(n, np.int64)
    n_alive = 0
    for v in range(next_id):
        if parent[v] < 0:
            alive[n_alive] = v
            n_alive += 1
    while n_alive > 1:
        npair = n_alive * (n_alive - 1) // 2
        ea = np.empty(npair, np.int64)
        eb = np.empty(npair, np.int64)
        e = 0
        for i in range(n_alive):
            for j in range(i + 1, n_alive):
                ea[e] = alive[i]
                eb[e] = alive[j]
                e += 1
        next_id = _join_round(sp, ea, eb, stats, size, sc, left, right, parent, up,
                              n, next_id, tmp)
        n_alive = 0
        for v in range(next_id):
            up[v] = v
            if parent[v] < 0:
                alive[n_alive] = v
                n_alive += 1
    lo, order = leaf_order(left, right, size, n)  # the leaves of every node are contiguous
    return left, right, parent, stats, sc, size, lo, order


_build_balanced = njit(cache=True)(_build_balanced_impl)


def _rebalance_impl(sp, left, right, stats, size):
    """The greedy tree (``left``, ``right``, ``stats``, ``size`` of
    :func:`.algorithms._build_impl`) with its heavy paths rebalanced.

    A heavy path goes from its head (the root or a lighter child) down the
    larger child (ties: the left) to a leaf. Its elements, bottom up, are
    that leaf and the lighter children hung on the path, in the order the
    greedy build absorbed them; the path is replaced by the weight-balanced
    tree over that sequence (a range splits where the leaf counts of its
    two halves are closest; ties: the lower split), each lighter child
    rebalanced in turn. Every prefix of the sequence is a node of the greedy
    tree (a cluster as the greedy build grew it); the other nodes are runs
    of clusters absorbed one after another. An element of weight w in a
    sequence of weight W gets depth at most log2(W / w) + 1, and these
    telescope along the heavy paths: depth O(log n). Same output as the
    build, internal nodes renumbered children first.
    """
    n = size.shape[0] // 2 + 1
    nn = 2 * n - 1
    D = stats.shape[1]
    nl = np.zeros(nn, np.int64)
    nr = np.zeros(nn, np.int64)
    nstats = np.zeros((nn, D))
    nsize = np.zeros(nn, np.int64)
    nsc = np.zeros(nn)
    parent = np.full(nn, -1, np.int64)
    newid = np.arange(nn)  # new id of the rebalanced subtree of a head
    for k in range(n):
        nstats[k, :] = stats[k]
        nsize[k] = 1
        nsc[k] = _score_any(nstats[k], nsize[k], sp)
    is_head = np.zeros(nn, np.bool_)
    is_head[nn - 1] = True
    for j in range(n - 1):
        a = left[j]
        b = right[j]
        if size[b] > size[a]:
            is_head[a] = True
        else:
            is_head[b] = True
    seq = np.empty(n, np.int64)
    pre = np.empty(n + 1, np.int64)
    st_a = np.empty(2 * n, np.int64)
    st_b = np.empty(2 * n, np.int64)
    st_s = np.empty(2 * n, np.int64)  # split point of a range
    st_state = np.empty(2 * n, np.int64)
    res = np.empty(2 * n, np.int64)
    lres = np.empty(2 * n, np.int64)
    pst = np.zeros((n + 1, D))  # prefix sums of the elements' statistics
    tl = np.empty(D)
    tr = np.empty(D)
    tw = np.empty(D)
    next_id = n
    # Heads in increasing id: the lighter children on a head's path are
    # its descendants (smaller ids), so they are done first.
    for h in range(n, nn):
        if not is_head[h]:
            continue
        # The path, top down; its elements bottom up.
        k = 0
        v = h
        while v >= n:
            j = v - n
            a = left[j]
            b = right[j]
            if size[b] > size[a]:
                seq[k] = a
                v = b
            else:
                seq[k] = b
                v = a
            k += 1
        seq[k] = v
        k += 1
        for t in range(k // 2):
            x = seq[t]
            seq[t] = seq[k - 1 - t]
            seq[k - 1 - t] = x
        pre[0] = 0
        for t in range(k):
            seq[t] = newid[seq[t]]
            pre[t + 1] = pre[t] + nsize[seq[t]]
            for q in range(D):
                pst[t + 1, q] = pst[t, q] + nstats[seq[t], q]
        # Weight-balanced tree over seq[0..k-1], nodes created children first.
        top = 1
        st_a[0] = 0
        st_b[0] = k - 1
        st_state[0] = 0
        while top > 0:
            i = top - 1
            a = st_a[i]
            b = st_b[i]
            if a == b:
                res[i] = seq[a]
                top -= 1
                continue
            if st_state[i] == 0:
                half = 0.5 * (pre[a] + pre[b + 1])
                s = np.searchsorted(pre[a + 1:b + 1], half) + a  # pre[s+1] >= half
                if s > a and half - pre[s] <= pre[s + 1] - half:
                    s -= 1
                if s > b - 1:
                    s = b - 1
                # Among the splits whose larger side holds at most 3/4 of
                # the leaves, the one of largest log d between the sides.
                W = pre[b + 1] - pre[a]
                best = -np.inf
                for c in range(a, b):
                    wl = pre[c + 1] - pre[a]
                    if 4 * max(wl, W - wl) > 3 * W:
                        continue
                    for q in range(D):
                        tl[q] = pst[c + 1, q] - pst[a, q]
                        tr[q] = pst[b + 1, q] - pst[c + 1, q]
                        tw[q] = pst[b + 1, q] - pst[a, q]
                    ld = (_score_any(tl, wl, sp) + _score_any(tr, W - wl, sp)
                          - _score_any(tw, W, sp))
                    if ld > best:
                        best = ld
                        s = c
                st_s[i] = s
                st_state[i] = 1
                st_a[top] = a
                st_b[top] = s
                st_state[top] = 0
                top += 1
                continue
            if st_state[i] == 1:
                st_state[i] = 2
                lres[i] = res[i + 1]  # the left half's subtree
                st_a[top] = st_s[i] + 1
                st_b[top] = b
                st_state[top] = 0
                top += 1
                continue
            lc = lres[i]
            rc = res[i + 1]
            m = next_id
            next_id += 1
            nl[m] = lc
            nr[m] = rc
            parent[lc] = m
            parent[rc] = m
            for q in range(D):
                nstats[m, q] = nstats[lc, q] + nstats[rc, q]
            nsize[m] = nsize[lc] + nsize[rc]
            nsc[m] = _score_any(nstats[m], nsize[m], sp)
            res[i] = m
            top -= 1
        newid[h] = res[0]
    lft = np.empty(max(n - 1, 0), np.int64)
    rgt = np.empty(max(n - 1, 0), np.int64)
    for j in range(n - 1):
        lft[j] = nl[n + j]
        rgt[j] = nr[n + j]
    lo, order = leaf_order(lft, rgt, nsize, n)
    return lft, rgt, parent, nstats, nsc, nsize, lo, order


_rebalance = njit(cache=True)(_rebalance_impl)
