"""A merge's reverse split priced around the items the merge adds.

:class:`_AroundMerges` (a base class of :class:`.moves._GlobalMoves`) gives
the ``split_sum`` of a merge with induced trees: the log probability of the
split of the merged set U that would undo it, on the tree of U contracted
around the smaller labels' items (:func:`.merged.merged_tree`), kept for a
merge proposed again. Before a contracted tree is made, the root bound
(:meth:`.ratio._ProposalProbabilities._root_bound`, from the global
positions and the items' statistics, no tree of U) decides the merges whose
reverse split no path yields (probability 0) and those that its first
choice, at the root, already rejects; on the greedy caterpillar a contracted
tree costs Θ(depth) and most of these merges end there. See
``docs/algorithms/tree_guided.md`` ("The cost of a move", "Sixth round").
"""

from __future__ import annotations

import math
import operator
import weakref

import numpy as np

from swcuts.samplers.tree_guided.merged import (
    _entry_bytes, _gp_of, _replay_record, _stopped_at, merged_tree)


class _AroundMerges:
    """Reverse splits of merges on contracted trees (a base class of the kernel)."""

    def _bound_around(self, tree, b_items, part_of, big, k, temperature, drop=None):
        """The root bound of a merge's reverse split
        (:meth:`~.ratio._ProposalProbabilities._root_bound`) from the tree
        of its largest label A (or A's last tree with the changes since, as
        :func:`.merged.merged_tree`), the other items and their parts."""
        gp = _gp_of(tree, self._lifting()[0])
        dead = np.zeros(tree.n, np.bool_)
        if drop is not None and len(drop):
            dead[tree.lo[np.asarray(drop, np.int64)]] = True
        # A's leaf rows of the tree's statistics are its items' rows of vstats.
        return self._root_bound(gp, tree.stats, tree.order, dead, b_items, part_of, big, k,
                                temperature)

    def _bound_on_last(self, state, label, tree, lists, ranks, rank_keep, temperature):
        """:meth:`_bound_around` of a merge of the labels whose member
        arrays are ``lists`` (the largest, ``label``, last; the others'
        parts ``ranks``) on ``label``'s last tree ``tree``, with the changes
        since (:meth:`_changes_since` without its depth limit); None when
        too many items moved to tell."""
        changes = self._changes_since(state, label, tree, deep=True)
        if changes is None:
            return None
        added, drop = changes
        b_items = np.concatenate(lists[:-1] + [added])
        part_of = np.repeat(np.array(ranks + (rank_keep,), np.int64),
                            [x.size for x in lists[:-1]] + [added.size])
        return self._bound_around(tree, b_items, part_of, rank_keep, len(lists), temperature,
                                  drop)

    def _keep_around(self, key, entry):
        """Keep ``entry`` (a contracted tree, or a root bound alone) under
        ``key``, least recently used first out past ``around_cache_bytes``."""
        cache = self._around
        old = cache.pop(key, None)
        if old is not None:
            self._around_bytes -= _entry_bytes(old)
        cache[key] = entry
        self._around_bytes += _entry_bytes(entry)
        while self._around_bytes > self.around_cache_bytes and len(cache) > 1:
            _, old = cache.popitem(last=False)
            self._around_bytes -= _entry_bytes(old)
        return entry

    def _merged_split_sum(self, state, P_labs, order, keep, temperature):
        """``split_sum`` of :meth:`_merge_reverse` for a merge of the labels
        ``P_labs`` into ``P_labs[keep]`` (the largest), priced on the tree of
        the merged set around the other labels' items (:mod:`.merged`):
        reads the items of the smaller labels only, and the cached tree of
        the largest. Part ids are the labels' ranks by smallest item
        (``order``: the labels in that order), as the whole-tree path
        numbers them. Induced trees only.

        The root bound comes first (a function of the parts, the value that
        the whole-tree path returns too, :meth:`_split_tree_logsum`): when
        it is below ``stop`` (or -inf: no split path yields the labels) it
        is returned, without a contracted tree; on a deep last tree of the
        largest label, before that tree is rebuilt.

        The contracted tree and its node weights are kept (least recently
        used first out, ``around_cache_bytes``), keyed by the largest
        label's tree, the other labels' items and parts and the temperature
        (they are a function of these), with the root bound and the sums so
        far of its whole replay: a merge proposed again costs
        O(|small labels| + depth), and its sum, or the replay given up below
        ``stop``, is the one a fresh computation gives, bit for bit
        (:func:`_stopped_at`)."""

        def split_sum(best, stop):
            def decides(bound):  # the root bound is returned (-inf: no split path)
                return bound == -math.inf or (not best and bound < stop)

            rank_keep = order.index(keep)
            small_labs = [P_labs[g] for g in order if g != keep]
            ranks = tuple(r for r in range(len(order)) if r != rank_keep)  # theirs
            index = self._members_index(state)
            lists = added = drop = bound = None
            if index.current(state.partition):
                got = index.lists.get
                lists = [got(lab) for lab in small_labs]
                lists.append(got(P_labs[keep]))
                for x in lists:
                    if x is None:
                        lists = None
                        break
            cache = self._around
            if lists is not None:
                # The largest label's tree, or its last tree (with the changes
                # since, computed on a miss).
                tree, stale = self._label_tree_near(state, P_labs[keep])
                for _ in range(2):
                    # The index replaces a label's array when the label changes
                    # and never edits it: the same arrays hold the same items
                    # (the entry keeps them, so that no other array takes their
                    # ids). The largest label's array is the last: with the
                    # tree, it decides the changes.
                    key = (id(tree), float(temperature), self.split_floor, self.log_wnew, best,
                           rank_keep, ranks) + tuple(map(id, lists))
                    hit = cache.get(key)
                    if hit is not None and (hit[0]() is not tree or not all(
                            map(operator.is_, hit[5], lists))):
                        hit = None
                    if hit is not None and hit[1] is None:  # a root bound alone, kept
                        cache.move_to_end(key)
                        if decides(hit[7]):
                            return hit[7]
                        bound, hit = hit[7], None
                    if hit is not None or not stale:
                        break
                    changes = self._changes_since(state, P_labs[keep], tree)
                    if changes is not None:
                        added, drop = changes
                        break
                    # A deep last tree (the greedy caterpillar's): the root
                    # bound on it, with the changes since, before its O(m)
                    # rebuild (the bound is a function of the parts).
                    if bound is None:
                        bound = self._bound_on_last(state, P_labs[keep], tree, lists, ranks,
                                                    rank_keep, temperature)
                    if bound is not None and decides(bound):
                        self._keep_around(key, [weakref.ref(tree), None, None, None, None,
                                                tuple(lists), None, bound])
                        return bound
                    tree, stale = self._label_tree_of(state, P_labs[keep]), False
            else:
                tree = self._label_tree_of(state, P_labs[keep])
                head = (id(tree), float(temperature), self.split_floor, self.log_wnew, best,
                        rank_keep, ranks)
                b_items, sizes = self._members_many(state, small_labs)
                key = head + (sizes.tobytes(), b_items.tobytes())
                hit = cache.get(key)
                if hit is not None and hit[0]() is tree and hit[1] is None:
                    cache.move_to_end(key)
                    if decides(hit[7]):
                        return hit[7]
                    bound, hit = hit[7], None
            if hit is not None and hit[0]() is tree:
                cache.move_to_end(key)
            else:
                if lists is not None:
                    b_items = np.concatenate(lists[:-1])
                    sizes = np.array([x.size for x in lists[:-1]], np.int64)
                part_of = np.repeat(np.array(ranks, np.int64), sizes)
                if added is not None and (added.size or drop.size):
                    # Items that joined the largest label since its last tree
                    # are leaves of its part; those that left it are dropped.
                    b_items = np.concatenate((b_items, added))
                    part_of = np.concatenate((part_of, np.full(added.size, rank_keep)))
                else:
                    drop = None
                if bound is None:
                    bound = self._bound_around(tree, b_items, part_of, rank_keep, len(P_labs),
                                               temperature, drop)
                kept = () if lists is None else tuple(lists)
                if decides(bound):
                    # Kept alone (a weak reference: the kept entries must not
                    # keep old trees alive), for a merge proposed again.
                    self._keep_around(key, [weakref.ref(tree), None, None, None, None, kept,
                                            None, bound])
                    return bound
                arrays, logw, leaf = merged_tree(
                    self._f, tree, b_items, self._lift, self._lift_cache, self.vstats,
                    self._leaf_sc, temperature, self.split_floor, drop)
                hit = self._keep_around(key, [weakref.ref(tree), arrays, logw, leaf, None, kept,
                                              part_of, bound])
            if not best and hit[7] < stop:
                return hit[7]
            left, right, parent, stats, size, score, E = hit[1]
            args = (left, right, parent, stats, size, score, E, hit[3], hit[6], rank_keep,
                    len(P_labs), hit[2], temperature, best)
            record = hit[4]
            if record is not None:
                if record[0] > 1:  # several paths (not with these trees): no record
                    return self._logsum(*args, stop)
                got = _stopped_at(record, stop)
                if got is not None:
                    return got
            # A replay, given up below this stop (the whole one when the kept
            # part of an earlier replay does not decide): its sums so far,
            # root first, are kept and decide later stops (_stopped_at).
            run = stop if record is None else -math.inf
            trace, found = np.full(E, math.inf), np.zeros(3, np.int64)
            value = self._logsum(*args, run, trace, found)
            hit[4] = record = _replay_record(found, hit[2], trace, value, run)
            if run == stop or record[0] > 1:
                return value if run == stop else self._logsum(*args, stop)
            return _stopped_at(record, stop)

        return split_sum
