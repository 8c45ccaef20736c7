"""A label's induced tree rebuilt from its tree before a few items moved.

A local move changes a few items of a label, and its tree (the tree
induced by the global tree, :func:`.algorithms._induced_impl`) is built
again when next needed: O(m) work, most of it random accesses to the
sparse table of the global tree and to the kept node scores (a few
hundred µs for m = 7,700). The old tree of the label already holds almost
all of it: the split between two items that are neighbours in the global
leaf order in both sets is the same global node, and a node whose items
did not change keeps its statistics and score. :func:`_hints` reads, in
one pass over both sets, the new set's leaf order (no sort) and, for each
split between items that were neighbours before, the old split's key and
node; :func:`.algorithms._cartesian_impl` uses them. The tree is the one
a cold build gives, bit for bit (a hint only saves a lookup of a value
that is a function of the same data). See ``docs/algorithms/tree_guided.md``
("The cost of a move").
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _hints(old_items, old_order, old_lo, old_right, old_hkey, old_stats, old_sc, items, gpos,
           vstats, leaf_sc):
    """Leaf order, leaf rows and split hints of the induced tree of
    ``items`` (ascending) from the induced tree of ``old_items`` (its leaf
    at each position ``old_order``, first positions ``old_lo``, right
    children, split keys ``old_hkey``, statistics and scores).

    Returns (keys: global position of every new leaf, dord: the new leaf at
    each position, h_hint: the old key of the split before each position
    or -1, old_node: the old node of that split or -1, and the statistics,
    sizes and scores of the 2m - 1 nodes with the leaves' rows filled,
    from the old leaves' rows where the item was there: ``vstats`` and
    ``leaf_sc`` rows).
    """
    mo = old_items.shape[0]
    m = items.shape[0]
    # Old leaf -> new leaf (-1: removed), by one walk over both ascending sets.
    new_of = np.full(mo, -1, np.int64)
    is_old = np.zeros(m, np.bool_)
    i = 0
    for k in range(m):
        while i < mo and old_items[i] < items[k]:
            i += 1
        if i < mo and old_items[i] == items[k]:
            new_of[i] = k
            is_old[k] = True
    keys = np.empty(m, np.int64)
    nn = 2 * m - 1
    D = vstats.shape[1]
    stats = np.zeros((nn, D))
    size = np.zeros(nn, np.int64)
    sc = np.zeros(nn)
    i = 0
    for k in range(m):
        keys[k] = gpos[items[k]]
        size[k] = 1
        if is_old[k]:
            while old_items[i] != items[k]:
                i += 1
            for q in range(D):
                stats[k, q] = old_stats[i, q]
            sc[k] = old_sc[i]
        else:
            for q in range(D):
                stats[k, q] = vstats[items[k], q]
            sc[k] = leaf_sc[items[k]]
    # The added items in leaf order.
    n_add = m - int(is_old.sum())
    add = np.empty(n_add, np.int64)
    t = 0
    for k in range(m):
        if not is_old[k]:
            add[t] = k
            t += 1
    add = add[np.argsort(keys[add])]
    # The old split before each old position, and its node.
    h_old = np.full(mo, -1, np.int64)
    nd_old = np.full(mo, -1, np.int64)
    for j in range(mo - 1):
        p = old_lo[old_right[j]]
        h_old[p] = old_hkey[j]
        nd_old[p] = mo + j
    # New leaf order: the kept old leaves in their order, the added merged in.
    dord = np.empty(m, np.int64)
    h_hint = np.full(m, -1, np.int64)
    old_node = np.full(m, -1, np.int64)
    prev_old = -2  # old position of the leaf before, if it is an old leaf
    a = 0
    s = 0
    for p in range(mo + 1):
        k = new_of[old_order[p]] if p < mo else -1
        if p < mo and k < 0:
            continue  # removed
        while a < n_add and (p == mo or keys[add[a]] < keys[k]):
            dord[s] = add[a]
            a += 1
            s += 1
            prev_old = -2
        if p == mo:
            break
        dord[s] = k
        if s > 0 and prev_old == p - 1:
            h_hint[s] = h_old[p]
            old_node[s] = nd_old[p]
        prev_old = p
        s += 1
    return keys, dord, h_hint, old_node, stats, size, sc


def induced_near(f, old, items, lift, lift_cache, vstats, leaf_sc):
    """The induced tree of ``items`` built with the hints of the induced
    tree of a nearby set.

    Parameters
    ----------
    f : :class:`.algorithms._Fns`
    old : Tree
        The induced tree of a nearby set (with ``hkey``).
    items : ndarray of int64
        The new set, ascending.
    lift, lift_cache : tuple
        The global tree's lookup tables and kept node scores, as for
        :func:`.algorithms._induced_impl`.
    vstats, leaf_sc : per-item statistics and scores of single items.

    Returns
    -------
    tuple
        The output of :func:`.algorithms._induced_impl` for ``items``, the
        same arrays bit for bit.
    """
    gpos, hmin, lg, split_at = lift
    keys, dord, h_hint, old_node, stats, size, sc = _hints(
        old.items, old.order, old.lo, old.right, old.hkey, old.stats, old.score, items, gpos,
        vstats, leaf_sc)
    left, right, parent, lo, hkey = f.cartesian(f.sp, dord, keys, keys, stats, size, sc, hmin,
                                                lg, split_at, *lift_cache, h_hint, old_node,
                                                old.stats, old.size, old.score)
    return left, right, parent, stats, sc, size, lo, dord, hkey


@njit(cache=True)
def set_changes(old_items, items, limit):
    """The changes from the ascending set ``old_items`` to the ascending set
    ``items``, by one walk over both: (the items added, the positions in
    ``old_items`` of the items removed, whether there are at most ``limit``
    changes; the walk stops at the first change beyond ``limit``).
    :func:`.merged.merged_tree` prices a merge on a label's last tree with
    these changes (its leaves are ``old_items`` in order)."""
    mo = old_items.shape[0]
    m = items.shape[0]
    added = np.empty(limit + 1, np.int64)
    removed = np.empty(limit + 1, np.int64)
    na = nr = 0
    i = k = 0
    while i < mo or k < m:
        if k >= m or (i < mo and old_items[i] < items[k]):
            removed[nr] = i
            nr += 1
            i += 1
        elif i >= mo or items[k] < old_items[i]:
            added[na] = items[k]
            na += 1
            k += 1
        else:
            i += 1
            k += 1
        if na + nr > limit:
            return added[:0], removed[:0], False
    return added[:na].copy(), removed[:nr].copy(), True



@njit(cache=True)
def max_depth(parent, n):
    """Largest depth of a leaf of a tree with ``n`` leaves (``parent``;
    internal nodes are numbered after their children, the root last)."""
    depth = np.zeros(parent.shape[0], np.int64)
    best = 0
    for v in range(parent.shape[0] - 2, -1, -1):
        depth[v] = depth[parent[v]] + 1
        if v < n and depth[v] > best:
            best = depth[v]
    return best


@njit(cache=True)
def _ascending(lst):
    """Whether ``lst`` is strictly ascending."""
    for t in range(1, lst.shape[0]):
        if lst[t] <= lst[t - 1]:
            return False
    return True


@njit(cache=True)
def list_without(lst, items, labels, label):
    """(ok, ``lst`` without the ``items`` whose entry of ``labels`` is
    ``label``): numpy's ``np.delete(lst, pos[lst[pos] == gone])`` with
    ``gone = items[labels == label]`` and ``pos`` the clipped
    ``np.searchsorted(lst, gone)``, when ``lst`` (non-empty) is strictly
    ascending (ok False otherwise: then numpy's result is not the items
    removed, and the caller takes numpy's path). One compiled call for a
    local move's member lists (``TreeGuided._index_moved``)."""
    n = lst.shape[0]
    if not _ascending(lst):
        return False, lst
    drop = np.zeros(n, np.bool_)
    for t in range(items.shape[0]):
        if labels[t] != label:
            continue
        g = items[t]
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            if lst[mid] < g:
                lo = mid + 1
            else:
                hi = mid
        p = min(lo, n - 1)
        if lst[p] == g:
            drop[p] = True
    out = np.empty(n - drop.sum(), np.int64)
    k = 0
    for t in range(n):
        if not drop[t]:
            out[k] = lst[t]
            k += 1
    return True, out


@njit(cache=True)
def list_with(lst, items, labels, label):
    """(ok, ``lst`` with the ``items`` whose entry of ``labels`` is
    ``label``): numpy's ``np.insert(lst, np.searchsorted(lst, add), add)``
    with ``add = np.sort(items[labels == label])``, when ``lst`` is strictly
    ascending (a merge of the two; ok False otherwise, as
    :func:`list_without`)."""
    if not _ascending(lst):
        return False, lst
    m = 0
    for t in range(items.shape[0]):
        if labels[t] == label:
            m += 1
    add = np.empty(m, np.int64)
    m = 0
    for t in range(items.shape[0]):
        if labels[t] == label:
            add[m] = items[t]
            m += 1
    add.sort()
    n = lst.shape[0]
    out = np.empty(n + m, np.int64)
    i = 0
    j = 0
    for k in range(n + m):  # an added item goes before an equal entry (searchsorted "left")
        if j < m and (i == n or add[j] <= lst[i]):
            out[k] = add[j]
            j += 1
        else:
            out[k] = lst[i]
            i += 1
    return True, out
