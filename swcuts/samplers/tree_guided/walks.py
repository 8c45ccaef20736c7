"""StocInsert walks of a split: drawn, replayed, and summed over a tree.

* :func:`_walk_impl` draws the group choices of a split at a node ν, from
  ν up to the root (the move itself); :func:`_walk_groups_impl` also
  returns the groups' statistics, sizes and scores;
* :func:`_replay_impl` gives the log probability of the choices that
  reproduce given parts, taken from the root down so that it can stop as
  soon as the probability is known to lie below a threshold;
* :func:`_split_logsum_impl` sums that over the nodes of a tree whose split
  can yield the parts (at most one with deterministic trees);
* :func:`_root_bound_impl` bounds that from above by the first choice of
  the replay, the root's, from global positions (no tree);
* :func:`_uniforms` draws the walk's uniforms as one per item of the label
  and skips the ones it does not read.

Plain Python, compiled below; :class:`.algorithms._Fns` rebinds the
score (here ``_score_inline``, :func:`.scores._score_any` inlined),
``_walk_groups`` and ``_replay`` in plain-Python copies. The rules are
derived in ``docs/algorithms/tree_guided.md`` ("Global move", "Where the
paper's ratio is not exact").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.primitives import log_sum_exp
from swcuts.samplers.tree_guided.merged import _root_sides
from swcuts.samplers.tree_guided.scores import _score_inline
from swcuts.samplers.tree_guided.trees import _depth_of, mark_ancestors, path_siblings


def _walk_impl(sp, left, right, parent, stats, size, sc, n, nu, inv_t, log_wnew, u, assign):
    """StocInsert from node ``nu`` to the root: the split's group choices.

    Groups start as the leaves of the two children of ``nu`` (groups 0 and
    1); the sibling subtree Q of every node on the way up (nearest first)
    joins an open group g with probability ∝ exp(-log d(g, Q) / T) or opens
    a new group with probability ∝ exp(log_wnew), drawn with the uniforms
    ``u`` (group ids in order of opening). The group of the t-th Q goes to
    ``assign[t]``. Returns (log probability of the choices, number of Qs,
    number of groups); :func:`_walk_groups_impl` also returns the groups.
    """
    res = _walk_groups(sp, left, right, parent, stats, size, sc, n, nu, inv_t, log_wnew, u,
                       assign)
    return res[0], res[1], res[2]


def _walk_groups_impl(sp, left, right, parent, stats, size, sc, n, nu, inv_t, log_wnew, u,
                      assign):
    """:func:`_walk_impl`, returning also the groups it made: (log
    probability, number of Qs, number of groups k, statistics (rows 0..k-1),
    sizes and scores of the groups). The groups' statistics are sums of
    tree nodes' (the split's parts, without a pass over their items)."""
    D = stats.shape[1]
    siblings = path_siblings(left, right, parent, n, nu)
    cap = siblings.size + 2
    gstats = np.zeros((cap, D))
    gsize = np.zeros(cap, np.int64)
    gsc = np.zeros(cap)
    logits = np.empty(cap + 1)
    usc = np.empty(cap + 1)
    tmp = np.empty(D)
    j = nu - n
    for g in range(2):
        c = left[j] if g == 0 else right[j]
        gstats[g, :] = stats[c]
        gsize[g] = size[c]
        gsc[g] = sc[c]
    n_open = 2
    logp = 0.0
    for t in range(siblings.size):
        Q = siblings[t]
        for g in range(n_open):
            np.add(gstats[g], stats[Q], tmp)
            usc[g] = _score_inline(tmp, gsize[g] + size[Q], sp)
            logits[g] = -(gsc[g] + sc[Q] - usc[g]) * inv_t
        logits[n_open] = log_wnew
        m = n_open + 1
        lse = log_sum_exp(logits, m)
        idx = m - 1
        cum = 0.0
        for i in range(m):
            cum += math.exp(logits[i] - lse)
            if u[t] < cum:
                idx = i
                break
        logp += logits[idx] - lse
        if idx < n_open:
            np.add(gstats[idx], stats[Q], gstats[idx])
            gsize[idx] += size[Q]
            gsc[idx] = usc[idx]
        else:
            idx = n_open
            gstats[idx, :] = stats[Q]
            gsize[idx] = size[Q]
            gsc[idx] = sc[Q]
            n_open += 1
        assign[t] = idx
    return logp, siblings.size, n_open, gstats, gsize, gsc


def _replay_impl(sp, left, right, parent, stats, size, sc, n, nu, inv_t, log_wnew, pure, k,
                 stop, trace):
    """log probability that the walk of :func:`_walk_impl` from ``nu``
    yields the parts ``pure`` (part of every node, ≥ 0 for the children of
    ``nu`` and every off-path subtree; ``k`` parts, group id = part id).

    Each choice is forced (the part of Q has an open group: join it; else
    open one), and its log probability is the walk's, term for term and
    bit for bit: a first pass adds up the groups' statistics from ``nu``
    upwards, as the walk does, keeping the group each choice changed; the
    choices' probabilities are then taken from the root down, where the
    caterpillar-like trees of the DP score put most of the improbable
    choices. Every term is ≤ 0, so the sum so far bounds the whole from
    above: the replay stops as soon as it falls below ``stop`` (-inf never
    stops). Returns (log probability, or the sum so far when stopped;
    whether the replay reached ``nu``); a non-empty ``trace`` gets the sum
    so far after every choice, root first (a replay with any ``stop``
    stops at the first of them below it).
    """
    D = stats.shape[1]
    Qs = path_siblings(left, right, parent, n, nu)
    T = Qs.size
    # Group states: 0..T-1 the group changed by choice t, after it; T and
    # T + 1 the children of nu. st_node: the tree node whose statistics the
    # state holds (its score is then sc[node]), -1 after a join.
    st = np.empty((T + 2, D))
    st_size = np.empty(T + 2, np.int64)
    st_node = np.empty(T + 2, np.int64)
    cur = np.full(k, -1, np.int64)  # state of every group (-1: not open)
    prev = np.empty(T, np.int64)  # state of the group of choice t before it
    j = nu - n
    for side in range(2):
        c = left[j] if side == 0 else right[j]
        st[T + side, :] = stats[c]
        st_size[T + side] = size[c]
        st_node[T + side] = c
        cur[pure[c]] = T + side
    for t in range(T):
        Q = Qs[t]
        p = pure[Q]
        r = cur[p]
        prev[t] = r
        if r >= 0:
            for q in range(D):  # np.add(st[r], stats[Q], st[t]), without the views
                st[t, q] = st[r, q] + stats[Q, q]
            st_size[t] = st_size[r] + size[Q]
            st_node[t] = -1
        else:
            for q in range(D):
                st[t, q] = stats[Q, q]
            st_size[t] = size[Q]
            st_node[t] = Q
        cur[p] = t
    gsc = np.zeros(k)  # score of every open group after the choice being priced
    for g in range(k):
        r = cur[g]
        if r >= 0:
            gsc[g] = sc[st_node[r]] if st_node[r] >= 0 else _score_inline(st[r], st_size[r], sp)
    logits = np.empty(k + 1)
    tmp = np.empty(D)
    logp = 0.0
    for t in range(T - 1, -1, -1):
        Q = Qs[t]
        p = pure[Q]
        after = gsc[p]  # score of group p after joining Q: the walk's usc[p]
        r = prev[t]
        cur[p] = r
        if r >= 0:
            gsc[p] = sc[st_node[r]] if st_node[r] >= 0 else _score_inline(st[r], st_size[r], sp)
        m = 0
        idx = -1
        for g in range(k):
            r = cur[g]
            if r < 0:
                continue
            if g == p:
                s_u = after
                idx = m
            else:
                for q in range(D):
                    tmp[q] = st[r, q] + stats[Q, q]
                s_u = _score_inline(tmp, st_size[r] + size[Q], sp)
            logits[m] = -(gsc[g] + sc[Q] - s_u) * inv_t
            m += 1
        logits[m] = log_wnew
        if idx < 0:
            idx = m
        m += 1
        logp += logits[idx] - log_sum_exp(logits, m)
        if trace.size > 0:
            trace[T - 1 - t] = logp
        if logp < stop:
            return logp, False
    return logp, True


def _split_logsum_impl(sp, left, right, parent, stats, size, sc, n, leaves, parts, big, k,
                       node_logw, inv_t, log_wnew, best, stop, trace, found):
    """log Σ over every path of the split procedure on this tree that yields
    the parts given by ``leaves`` (the leaves outside part ``big``) and
    their ``parts`` (every other leaf is in ``big``; k parts): the nodes ν
    whose children and off-path subtrees each lie in one part (children in
    two different parts), each weighted by its node probability and its
    replayed StocInsert choices. ``best``: the largest single path instead
    (the negative control). -inf when no path yields the parts.

    Only the ancestors of the listed leaves can hold two parts, so only
    they are visited (children before parents: node ids grow towards the
    root): O(n) for two fills, then O(their number + the replays), e.g.
    O(depth) when a merge adds one item to a label.

    ``stop``: a path whose replay falls below it is left unfinished and
    counted with its partial (larger) probability. Returns (the log sum,
    True) when every path was finished, else (an upper bound of it, False).
    With deterministic trees there is at most one path (docs), so an
    unfinished sum lies below ``stop``.

    ``found`` (3 ints) gets the number of paths, the internal node j of
    the last and its number of choices; a non-empty ``trace`` (n floats)
    its replay's sums so far (:func:`_replay_impl`).
    """
    nn = 2 * n - 1
    pure = np.full(nn, big, np.int64)  # part of a node's leaves, -1 if several
    for i in range(leaves.size):
        pure[leaves[i]] = parts[i]
    seen = np.zeros(nn, np.bool_)
    buf = np.empty(nn, np.int64)
    m = 0
    for i in range(leaves.size):
        m = mark_ancestors(parent, parent[leaves[i]], seen, buf, m)
    anc = np.sort(buf[:m])
    for t in range(m):
        v = anc[t]
        a = pure[left[v - n]]
        b = pure[right[v - n]]
        pure[v] = a if (a >= 0 and a == b) else -1
    ok = seen  # reused: ok[v] for the visited nodes, top down
    if m > 0:
        ok[nn - 1] = True
    for t in range(m - 1, -1, -1):
        v = anc[t]
        j = v - n
        ok[left[j]] = ok[v] and pure[right[j]] >= 0
        ok[right[j]] = ok[v] and pure[left[j]] >= 0
    acc = -np.inf
    complete = True
    for t in range(m):
        v = anc[t]
        j = v - n
        if not ok[v]:
            continue
        a = pure[left[j]]
        b = pure[right[j]]
        if a < 0 or b < 0 or a == b:
            continue
        res = _replay(sp, left, right, parent, stats, size, sc, n, v, inv_t, log_wnew,
                      pure, k, stop - node_logw[j], trace)
        found[0] += 1
        found[1] = j
        found[2] = _depth_of(parent, v)
        lp = node_logw[j] + res[0]
        complete = complete and res[1]
        if best:
            if lp > acc:
                acc = lp
        else:
            acc = np.logaddexp(acc, lp)
    return acc, complete


def _root_bound_impl(sp, gp, a_stats, a_row, dead, gpos, b_items, b_part, big, k, vstats, hmin,
                     lg, inv_t, log_wnew):
    """An upper bound of the log probability of a split of the merged set
    U = A ∪ B that yields its k parts, from its first choice alone, without
    the tree of U: the choice of the root's child Q off the split node's
    path, by the walk's rule (:func:`_walk_groups_impl`): Q joins its part's
    group, or opens one when its part has no item on the other side, among
    the groups the parts' items on that side form (:func:`.merged._root_sides`;
    A's leaves at the ascending global positions ``gp``, not ``dead``, with
    statistics ``a_stats[a_row[t]]``; the items ``b_items`` of B, in any
    order, their parts ``b_part``, A's ``big``). The other choices and the
    split node's weight are probabilities (≤ 1): the replay's sum
    (:func:`_split_logsum_impl`) is at most this, its first term. -inf when
    no split path yields the parts, 0 when the split node is the root. A
    function of the parts alone (the sums run over U in the global leaf
    order), whichever tree of A it comes from. O(|B| log |A| + |U|).
    """
    nb = b_items.shape[0]
    pos = np.empty(nb, np.int64)
    for i in range(nb):
        pos[i] = gpos[b_items[i]]
    o = np.argsort(pos)  # distinct positions
    status, p, st_nu, n_nu, st_q, nq = _root_sides(gp, a_stats, a_row, dead, pos[o],
                                                   b_items[o], b_part[o], big, k, vstats,
                                                   hmin, lg)
    if status < 0:
        return -np.inf
    if status == 0:
        return 0.0
    D = st_q.shape[0]
    s_q = _score_inline(st_q, nq, sp)
    logits = np.empty(k + 1)
    tmp = np.empty(D)
    m = 0
    idx = -1
    for g in range(k):
        if n_nu[g] == 0:
            continue
        s_g = _score_inline(st_nu[g], n_nu[g], sp)
        for q in range(D):
            tmp[q] = st_nu[g, q] + st_q[q]
        s_u = _score_inline(tmp, n_nu[g] + nq, sp)
        logits[m] = -(s_g + s_q - s_u) * inv_t
        if g == p:
            idx = m
        m += 1
    logits[m] = log_wnew
    if idx < 0:
        idx = m
    m += 1
    return logits[idx] - log_sum_exp(logits, m)


_walk_groups = njit(cache=True)(_walk_groups_impl)
_root_bound = njit(cache=True)(_root_bound_impl)
_walk = njit(cache=True)(_walk_impl)
_replay = njit(cache=True)(_replay_impl)
_split_logsum = njit(cache=True)(_split_logsum_impl)


def _uniforms(rng, n, k):
    """The first ``k`` of ``rng.random(n)``, leaving ``rng`` where
    ``rng.random(n)`` would: the walk reads one uniform per ancestor of the
    split node, but the draw is of one per item (the chain stays the same),
    so the rest are skipped with the bit generator's ``advance`` (one 64-bit
    output per double) where it has one."""
    bitgen = getattr(rng, "bit_generator", None)
    if k < n and type(bitgen).__name__ in ("PCG64", "PCG64DXSM"):
        u = rng.random(k)
        before = bitgen.state
        bitgen.advance(n - k)
        if before["has_uint32"]:  # advance drops the half-used 64-bit output of integers()
            after = bitgen.state
            after["has_uint32"], after["uinteger"] = before["has_uint32"], before["uinteger"]
            bitgen.state = after
        return u
    return rng.random(n)
