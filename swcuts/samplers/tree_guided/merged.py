"""The tree of a merged set around the items a merge adds.

The reverse of a merge is a split of the merged set U along its tree, and
pricing it needs the nodes of tree(U) that can be the split node, the
paths from them to the root and the total weight of every node of tree(U)
(the split node's probability is a softmax over them). With induced trees
(``trees="global"``) these come from the cached tree of the largest merged
label A and the items B = U \\ A, without building tree(U):

* the nodes of tree(U) whose sets differ from tree(A)'s are the ancestors
  of the leaves of B (a node is a global node under which both children
  meet U, and its set is U's items below it); every other node of tree(U)
  is a node of tree(A) with the same set, and the *hanging* ones, the
  largest such subtrees, partition A;
* the nodes of tree(A) that gain items are those that are global
  ancestors of an item b of B: the ancestors in tree(A) of b's neighbour in
  A (in the global tree's leaf order, on the side of their deeper lowest
  common ancestor λ_b) that are not deeper than λ_b; their children that
  gain nothing are the hanging subtrees (:func:`_merged_leaves`);
* tree(U) with every hanging subtree contracted to a leaf is the induced
  tree over the sequence of hanging subtrees and items of B, in the global
  leaf order: the split between two consecutive ones is the lowest common
  ancestor of the last item of the one and the first of the other
  (:func:`.algorithms._cartesian_impl`, the same code as a full build, so
  every statistic and score is the full tree's bit for bit);
* the log-sum-exp of the node weights of tree(U) adds, to the contracted
  tree's own nodes, the log-sum-exp of every hanging subtree's internal
  nodes, kept per tree(A) (:func:`_subtree_lse`).

The split node of a reverse split holds items of two parts, so it is an
ancestor of an item of B: the split sums (:func:`.walks._split_logsum_impl`)
and replays run on the contracted tree unchanged, the hanging subtrees
being leaves of A's part. Cost: O(|B| + the nodes of tree(A) above B's
items), O(|B| log n) with a balanced global tree; tree(A) is kept with its
label. The tree of A may also be A's tree before some of its items moved:
the items it gained since are added like B's (in A's part) and the leaves
of those it lost are dropped (``drop``; their ancestors are marked too).

Before any of this, two questions need no tree of U, only the global
positions (:func:`_boundaries`, :func:`_root_sides`): whether any split
path of tree(U) yields the parts at all (else the reverse split's
probability is 0), and the first choice of that path, the root's, which
bounds its probability from above (:mod:`.around`).

The kernel keeps contracted trees with the sums so far of their replays
(:func:`_replay_record`, read by :func:`_stopped_at`). See ``docs/algorithms/tree_guided.md`` ("The cost of a move").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts.samplers.tree_guided.ratio import _logsumexp
from swcuts.samplers.tree_guided.trees import (
    floored_log_weights, mark_ancestors, node_logd, node_rows, range_min)


@njit(cache=True)
def _subtree_lse(left, right, x, n):
    """log Σ exp(x[j]) over the internal nodes n + j of every node's
    subtree (-inf at the leaves; children before parents)."""
    out = np.full(2 * n - 1, -np.inf)
    for j in range(n - 1):
        a = out[left[j]]
        b = out[right[j]]
        c = x[j]
        mx = max(a, b, c)
        out[n + j] = mx + math.log(math.exp(a - mx) + math.exp(b - mx) + math.exp(c - mx))
    return out


@njit(cache=True)
def _merged_leaves(parent, left, right, lo, order, size, stats, sc, hkey, gp, mark, b_items, b_pos,
                   vstats, leaf_sc, hmin, lg, drop):
    """The leaves of tree(A ∪ B) contracted around B (module docstring).

    ``parent`` ... ``hkey``: the induced tree of A (m leaves; ``lo[v]``
    the first position of node v's leaves in A's leaf order, ``order[t]``
    the leaf at position t, ``hkey`` the keys depth · N + position of the
    internal nodes' global nodes); ``gp[t]``: the global position of A's
    t-th leaf (ascending); ``mark``: scratch (2m - 1, all False, restored);
    ``b_items`` and their global positions ``b_pos``, ascending;
    ``hmin``, ``lg``: the sparse table of the global tree, for the lowest
    common ancestors (:func:`.trees.range_min`); ``drop``: leaves of the
    tree of A that are not in the merged set (items that left A since
    that tree was built; their ancestors change, so they are marked, and
    they are no leaf of the contracted tree). An item of B that is a
    dropped leaf is placed by its own position.

    Returns (stats, sizes, scores of the 2E - 1 nodes with the E leaves'
    rows filled, first and last global position of every leaf, the leaf
    of every item of B, the hanging subtrees of tree(A) in leaf order).
    """
    m = gp.shape[0]
    nb = b_items.shape[0]
    marked = np.empty(max(m - 1, 1), np.int64)
    nm = 0
    dropped = np.zeros(m, np.bool_)
    for i in range(drop.shape[0]):
        dropped[drop[i]] = True
        nm = mark_ancestors(parent, parent[drop[i]], mark, marked, nm)
    for i in range(nb):
        p = b_pos[i]
        q = np.searchsorted(gp, p)
        if q < m and gp[q] == p:  # a dropped leaf: its ancestors are marked
            continue
        key = -1
        a = -1
        if q > 0:  # the lowest common ancestor with the neighbour on the left
            key = range_min(hmin, lg, gp[q - 1] + 1, p)
            a = order[q - 1]
        if q < m:  # ... on the right; λ_b is the deeper one (larger key)
            kr = range_min(hmin, lg, p + 1, gp[q])
            if kr > key:
                key = kr
                a = order[q]
        # The ancestors of a in tree(A) are ever shallower global nodes:
        # those not deeper than λ_b are the A-nodes above b.
        v = parent[a]
        while v >= 0 and hkey[v - m] > key:
            v = parent[v]
        while v >= 0 and not mark[v]:
            mark[v] = True
            marked[nm] = v
            nm += 1
            v = parent[v]
    hang = np.empty(nm + 1, np.int64)
    nh = 0
    if nm == 0:
        hang[0] = 2 * m - 2
        nh = 1
    for t in range(nm):
        j = marked[t] - m
        for c in (left[j], right[j]):
            if not mark[c] and not (c < m and dropped[c]):
                hang[nh] = c
                nh += 1
    for t in range(nm):
        mark[marked[t]] = False
    hang = hang[:nh]
    if 16 * nh > m:
        # Many hanging subtrees (B's items deep in a caterpillar-like tree,
        # where nearly every node of tree(A) is above one): put them in leaf
        # order by one pass over A's leaf positions (their first positions
        # are distinct), O(m), instead of a sort, O(nh log nh).
        slot = np.full(m, -1, np.int64)
        for t in range(nh):
            slot[lo[hang[t]]] = hang[t]
        t = 0
        for q in range(m):
            if slot[q] >= 0:
                hang[t] = slot[q]
                t += 1
    else:
        starts = np.empty(nh, np.int64)
        for t in range(nh):
            starts[t] = lo[hang[t]]
        hang = hang[np.argsort(starts)]
    E = nh + nb
    D = stats.shape[1]
    vst, vsize, vsc = node_rows(E, D)
    first = np.empty(E, np.int64)
    last = np.empty(E, np.int64)
    bleaf = np.empty(nb, np.int64)
    i = 0
    t = 0
    for k in range(E):
        if i < nb and (t >= nh or b_pos[i] < gp[lo[hang[t]]]):
            b = b_items[i]
            for q in range(D):
                vst[k, q] = vstats[b, q]
            vsize[k] = 1
            vsc[k] = leaf_sc[b]
            first[k] = b_pos[i]
            last[k] = b_pos[i]
            bleaf[i] = k
            i += 1
        else:
            h = hang[t]
            for q in range(D):
                vst[k, q] = stats[h, q]
            vsize[k] = size[h]
            vsc[k] = sc[h]
            first[k] = gp[lo[h]]
            last[k] = gp[lo[h] + size[h] - 1]
            t += 1
    return vst, vsize, vsc, first, last, bleaf, hang



@njit(cache=True)
def _boundaries(gp, dead, b_pos, b_part, big, hmin, lg):
    """The boundaries of the parts of U = A ∪ B in the global leaf order and
    whether their split nodes in tree(U) lie on one path from the root.

    ``gp``: the ascending global positions of A's leaves (``dead[t]``: the
    leaf at ``gp[t]`` is not in U); ``b_pos``: the ascending global
    positions of the other items of U, ``b_part`` their parts (A's is
    ``big``). A *boundary* is a pair of consecutive items of U of two parts
    (each touches an item of B). Its split node in tree(U) has the key
    ``range_min(x + 1, y)`` of its items' positions x < y
    (:func:`.algorithms._cartesian_impl`); that of boundary i is an
    ancestor of that of boundary j iff its key is the smallest over the span
    of both (the lowest common ancestor of the items between them; keys are
    distinct). A node of tree(U) is *mixed* (holds two parts) iff a boundary
    lies under it, and a node ν yields the parts iff its children are pure
    and of two parts and every subtree off its path to the root is pure
    (:func:`.walks._split_logsum_impl`): iff the boundaries' split nodes lie
    on one path (ν the deepest). O(|B| log |A|).

    Returns (keys, left and right positions of the r boundaries, r, whether
    their split nodes lie on one path, the boundaries by key).
    """
    m = gp.shape[0]
    nb = b_pos.shape[0]
    hs = np.empty(2 * nb, np.int64)
    xs = np.empty(2 * nb, np.int64)
    ys = np.empty(2 * nb, np.int64)
    r = 0
    for i in range(nb):
        p = b_pos[i]
        # The item of U before p: A's nearest live leaf or the previous item of B.
        q = np.searchsorted(gp, p) - 1
        while q >= 0 and dead[q]:
            q -= 1
        lpos = gp[q] if q >= 0 else -1
        lpart = big
        if i > 0 and b_pos[i - 1] > lpos:
            lpos = b_pos[i - 1]
            lpart = b_part[i - 1]
        if lpos >= 0 and lpart != b_part[i]:
            hs[r] = range_min(hmin, lg, lpos + 1, p)
            xs[r] = lpos
            ys[r] = p
            r += 1
        # The item after p, when it is A's (the next item of B records its own).
        q = np.searchsorted(gp, p, side="right")
        while q < m and dead[q]:
            q += 1
        if q < m and (i + 1 >= nb or gp[q] < b_pos[i + 1]) and b_part[i] != big:
            hs[r] = range_min(hmin, lg, p + 1, gp[q])
            xs[r] = p
            ys[r] = gp[q]
            r += 1
    order = np.argsort(hs[:r])
    ok = r > 0
    for t in range(r - 1):
        i = order[t]
        j = order[t + 1]
        if range_min(hmin, lg, min(xs[i], xs[j]) + 1, max(ys[i], ys[j])) != hs[i]:
            ok = False
            break
    return hs, xs, ys, r, ok, order


@njit(cache=True)
def _add_to_side(on_nu, g, row, st_nu, n_nu, st_q):
    """Add one leaf's statistics ``row`` to part ``g``'s side of the root
    (``on_nu``: the side that holds part ``g`` entire) or to the mixed side
    ``st_q``; True when it went to part ``g``'s side."""
    if on_nu:
        for q in range(row.shape[0]):
            st_nu[g, q] += row[q]
        n_nu[g] += 1
        return True
    for q in range(row.shape[0]):
        st_q[q] += row[q]
    return False


@njit(cache=True)
def _root_sides(gp, a_stats, a_row, dead, b_pos, b_items, b_part, big, k, vstats, hmin, lg):
    """The root of tree(U) as the reverse split's replay sees it at its
    first (top) choice, from global positions alone (no tree of U;
    arguments as :func:`_boundaries`, ``k`` parts; the statistics of A's
    leaf at ``gp[t]`` are ``a_stats[a_row[t]]``, those of the items
    ``b_items`` at ``b_pos`` their rows of ``vstats``).

    Returns (status: -1 when no split path yields the parts, 0 when the
    path's node ν is the root (no choice), else 1; the part p of the root's
    child Q off ν's path; the statistics and sizes of every part's items on
    ν's side of the root (the groups before Q's choice); Q's statistics and
    size). The root is the lowest common ancestor of U; Q is the side that
    holds no boundary below the root (the boundaries lie on ν's path). The
    sums run over U's items in the global leaf order, whatever A and B are,
    so that they are a function of the parts alone. O(|B| log |A| + |U|).
    """
    D = vstats.shape[1]
    st_nu = np.zeros((k, D))
    n_nu = np.zeros(k, np.int64)
    st_q = np.zeros(D)
    hs, xs, ys, r, ok, order = _boundaries(gp, dead, b_pos, b_part, big, hmin, lg)
    if not ok:
        return -1, -1, st_nu, n_nu, st_q, 0
    m = gp.shape[0]
    nb = b_pos.shape[0]
    lo = 0
    while lo < m and dead[lo]:
        lo += 1
    hi = m - 1
    while hi >= 0 and dead[hi]:
        hi -= 1
    first = b_pos[0]
    last = b_pos[nb - 1]
    if lo < m and gp[lo] < first:
        first = gp[lo]
    if hi >= 0 and gp[hi] > last:
        last = gp[hi]
    hr = range_min(hmin, lg, first + 1, last)
    b1 = order[0]
    if hs[b1] == hr:  # the root is a boundary's split node
        if r == 1:
            return 0, -1, st_nu, n_nu, st_q, 0
        b1 = order[1]
    s = hr % hmin.shape[1]  # the root's right subtree starts at position s
    nu_right = xs[b1] >= s
    pq = -1
    nq = 0
    i = 0
    t = lo
    while i < nb or t <= hi:
        # A's live leaves before the next item of B, then that item.
        end = hi + 1 if i >= nb else np.searchsorted(gp, b_pos[i])
        while t < end:
            if not dead[t] and not _add_to_side((gp[t] >= s) == nu_right, big, a_stats[a_row[t]],
                                                st_nu, n_nu, st_q):
                nq += 1
                pq = big
            t += 1
        if i < nb:
            g = b_part[i]
            if not _add_to_side((b_pos[i] >= s) == nu_right, g, vstats[b_items[i]], st_nu, n_nu, st_q):
                nq += 1
                pq = g
            i += 1
    return 1, pq, st_nu, n_nu, st_q, nq


def _gp_of(tree, gpos):
    """The ascending global positions of ``tree``'s leaves (kept with it)."""
    aux = tree.aux
    if "gp" not in aux:
        aux["gp"] = np.ascontiguousarray(gpos[tree.items[tree.order]])
        aux["mark"] = np.zeros(2 * tree.n - 1, np.bool_)
    return aux["gp"]


def merged_tree(f, tree, b_items, lift, lift_cache, vstats, leaf_sc, temperature, floor,
                drop=None):
    """The tree of ``tree.items`` ∪ ``b_items`` contracted around ``b_items``
    (module docstring), with the node log weights of the split move on the
    whole merged tree; with ``drop``, of (``tree.items`` without the
    leaves ``drop``) ∪ ``b_items``: ``tree`` may then be the tree of the
    largest label before some of its items moved, the items it gained
    being in ``b_items`` and those it lost in ``drop``.

    Parameters
    ----------
    f : :class:`.algorithms._Fns`
    tree : Tree
        The induced tree of A (with ``hkey``).
    b_items : ndarray of int64
        The items added, none in A (none in ``tree.items`` but dropped ones).
    lift : tuple
        (leaf position, sparse table, floor-log2 table, node at each split)
        of the global tree (:func:`.trees._lifting_tables`).
    lift_cache : tuple
        The kept node scores (:func:`.algorithms._cartesian_impl`).
    vstats, leaf_sc : per-item statistics and scores of single items.
    temperature, floor : as :meth:`.trees.Tree.node_log_weights`.
    drop : ndarray of int64, optional
        Leaves of ``tree`` (ascending) whose items are not in the merged set.

    Returns
    -------
    (left, right, parent, stats, size, score, n) : the contracted tree
    node_logw : ndarray
        log probability of drawing each of its internal nodes as the split
        node of the merged set (the weights of the whole tree(U)).
    leaf : ndarray of int64
        The leaf of every item of ``b_items``.
    """
    gpos, hmin, lg, split_at = lift
    aux = tree.aux
    _gp_of(tree, gpos)
    lse_key = float(temperature)
    if aux.get("lse", (None,))[0] != lse_key:
        aux["lse"] = (lse_key, _subtree_lse(tree.left, tree.right, tree.logd / temperature,
                                            tree.n))
    pos = gpos[b_items]
    o = np.argsort(pos)
    hkey = tree.hkey if tree.n > 1 else np.zeros(0, np.int64)
    drop = np.zeros(0, np.int64) if drop is None else np.ascontiguousarray(drop, np.int64)
    vst, vsize, vsc, first, last, bleaf, hang = _merged_leaves(
        tree.parent, tree.left, tree.right, tree.lo, tree.order, tree.size, tree.stats,
        tree.score, hkey, aux["gp"], aux["mark"], np.ascontiguousarray(b_items[o]),
        np.ascontiguousarray(pos[o]), vstats, leaf_sc, hmin, lg, drop)
    E = first.size
    none = np.zeros(0, np.int64)
    left, right, parent, _, _ = f.cartesian(f.sp, np.arange(E), first, last, vst, vsize, vsc,
                                            hmin, lg, split_at, *lift_cache, none, none,
                                            vst[:0], none, vsc[:0])
    x = node_logd(left, right, vsc, E) / temperature  # as Tree.node_log_weights
    lse = _logsumexp(np.concatenate((x, aux["lse"][1][hang])))
    logw = floored_log_weights(x, lse, tree.n - drop.size + b_items.size - 1, floor)
    leaf = np.empty(b_items.size, np.int64)
    leaf[o] = bleaf
    return (left, right, parent, vst, vsize, vsc, E), logw, leaf


def _stopped_at(record, stop):
    """What :meth:`~.ratio._ProposalProbabilities._logsum` returns for
    ``stop``, from the ``record`` (number of paths, 0 or 1; the path's node
    log weight; its replay's sums so far, root first; the whole sum, or
    None when the replay was given up: :func:`_replay_record`): the replay
    stops at the first sum so far below ``stop`` less the node's weight,
    and a stopped sum at or above ``stop`` is computed whole. The same
    floating-point operations, so the same bits. None when the record
    does not decide (a replay given up before the first sum so far below
    ``stop``: only the whole replay tells)."""
    count, node_lw, partial, whole = record
    if count == 0:
        return whole
    i = _first_below(partial, stop - node_lw)
    if i >= 0:
        acc = node_lw + float(partial[i])
        if acc < stop:
            return acc
    return whole


@njit(cache=True)
def _first_below(x, thr):
    """The first index i with x[i] < thr, -1 if none (``np.flatnonzero(x <
    thr)[0]`` without the arrays)."""
    for i in range(x.shape[0]):
        if x[i] < thr:
            return i
    return -1


def _replay_record(found, node_logw, trace, value, stop):
    """The record that :func:`_stopped_at` reads, of a call of ``_logsum``
    with ``stop`` that returned ``value`` (``found`` and ``trace``, its
    outputs; ``trace`` filled with +inf beforehand): the sums so far up to
    the first below ``stop`` less the node's weight, where the replay gave
    up (the whole sum then unknown, None), or all of them and the whole
    sum. Several paths (not with deterministic trees): no sums."""
    count = int(found[0])
    if count != 1:
        return (count, 0.0, np.zeros(0), value if count == 0 else None)
    node_lw = float(node_logw[found[1]])
    partial = trace[:found[2]]
    below = np.flatnonzero(partial < stop - node_lw)
    if below.size:
        return (1, node_lw, partial[:below[0] + 1].copy(), None)
    return (1, node_lw, partial.copy(), value)


def _entry_bytes(entry) -> int:
    """Bytes held by a kept contracted tree
    (:meth:`.moves._GlobalMoves._merged_split_sum`)."""
    if entry[1] is None:  # a root bound alone
        return 64 + sum(x.nbytes for x in entry[5])
    return (sum(x.nbytes for x in entry[1][:6]) + entry[2].nbytes + entry[3].nbytes
            + entry[6].nbytes + sum(x.nbytes for x in entry[5]))
