"""The global move of the tree-guided kernel: split or merge, on the live state.

:class:`_GlobalMoves` (a base class of :class:`~.kernel.TreeGuided`)
picks the anchor label and its merge set, then splits the anchor along
its tree (StocInsert) or merges it with the set, and accepts with the
exact ratio of :mod:`.ratio`.

Two ways to price a proposal, the same decisions:

* *from statistics* (models with ``delta_regroup``, the mixtures): a
  label is summarised by the state's per-label statistics and size; a
  merge's labels by the sum of theirs, a split's parts by the sums of tree
  nodes the walk made (:func:`.walks._walk_groups_impl`). The Δ log π of
  the proposal comes from these (``model.delta_regroup``), so a rejected
  move visits no item: the items of the labels are read only when the
  reverse split of a merge has to be replayed on the merged set's tree,
  and moved only when the move is accepted (then by ``model.delta`` /
  ``model.apply``, as the item path does, so that ``state.log_pi`` is
  the same);
* *from items* (any other model, e.g. the image model, whose Δ log π has
  a boundary term): the parts are applied to the state and undone on
  rejection.

See ``docs/algorithms/tree_guided.md`` ("Global move", "The cost of a
move").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...partition import _stack_index, _swap_in_stack
from ..common import StepInfo, metropolis_hastings_bound_first
from .trees import _leaf_groups, _Rest


class _Summary:
    """Statistics, score, size and smallest item of a label or of a part,
    without its items (the attributes :mod:`.ratio` reads)."""

    __slots__ = ("stats", "score", "n", "first")

    def __init__(self, stats, score, n, first):
        self.stats = stats
        self.score = float(score)
        self.n = int(n)
        self.first = int(first)


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


@njit(cache=True)
def _free_list_as_if_undone(stack, n_free, labels, k):
    """Leave the partition's free list of labels (``stack``, ``n_free``) as
    applying a rejected multi-part move item by item and undoing it would
    have (the swaps of :func:`swcuts.partition.relabel_vertices`): a
    split's ``k`` fresh labels taken from the top and given back (``labels``
    empty), or a merge's emptied ``labels`` freed and taken back, in that
    order. Label names carry no meaning, but they decide which label later
    draws pick, so this keeps a seeded chain the same as when every
    proposal was applied to the state to price it. O(k L), no item."""
    if labels.size == 0:
        fresh = stack[n_free[0] - k:n_free[0]][::-1].copy()
        n_free[0] -= k  # each fresh label is the top of the free part when taken
        for lab in fresh:  # each empties again, to the first used entry
            first = n_free[0]
            _swap_in_stack(stack, None, _stack_index(stack, None, lab, first, stack.size, 1),
                           first)
            n_free[0] = first + 1
        return
    for lab in labels:  # each label empties into the free part...
        first = n_free[0]
        _swap_in_stack(stack, None, _stack_index(stack, None, lab, first, stack.size, 1), first)
        n_free[0] = first + 1
    for lab in labels:  # ...and is taken back from the top
        top = n_free[0] - 1
        _swap_in_stack(stack, None, _stack_index(stack, None, lab, top, -1, -1), top)
        n_free[0] = top


class _GlobalMoves:
    """Split-or-merge moves of :class:`~.kernel.TreeGuided` (its base class)."""

    def _by_stats(self, state) -> bool:
        """Whether this state's proposals are priced from statistics."""
        stats = getattr(state, "stats", None)
        return (self._regroup is not None and isinstance(stats, np.ndarray) and stats.ndim == 2
                and stats.shape[1] == self.vstats.shape[1])

    def _first_item(self, state, label) -> int:
        """Smallest item of ``label`` from the member index (its lists are
        ascending); used to order labels, which changes no probability."""
        lst = self._members_index(state).lists.get(int(label))
        if lst is None or lst.size == 0:
            lst = self._members(state, label)
        return int(lst[0])

    def global_move(self, state, rng, temperature=1.0) -> StepInfo:
        """One split-or-merge Metropolis-Hastings update.

        Cost: O(L · D) for the merge probabilities of the L labels (from the
        state's per-label statistics); a split walks up the anchor's tree
        (cached with the label); a merge reads items only when its bounds
        do not reject it.
        """
        part = state.partition
        labs = part.used_labels()
        L = labs.size
        a = int(rng.integers(L))
        c = int(labs[a])
        by_stats = self._by_stats(state)
        if by_stats:
            every = self._rest_of(state, labs)
            cinfo = _Summary(every.stats[a], every.score[a], every.n[a], 0)
            keep_rows = np.arange(L) != a
            others = _Rest(every.stats[keep_rows], every.score[keep_rows], every.n[keep_rows])
        else:
            cinfo = self._label_info(state, c)
            others = None
        other_labs = np.delete(labs, a)
        if others is None:
            others = self._rest_of(state, other_labs)
        if L > 1:
            lp, l1p = self._merge_logp(self._logd([cinfo], others)[0], temperature)
            inM = np.log(rng.random(L - 1)) < lp
        else:
            lp = l1p = np.zeros(0)
            inM = np.zeros(0, bool)
        anchor_lq = -math.log(L) + float(lp[inM].sum() + l1p[~inM].sum())
        if not inM.any():
            if by_stats:
                return self._split_stats(state, c, others, anchor_lq, rng, temperature)
            return self._split_items(state, c, cinfo, others, anchor_lq, rng, temperature)
        m_labs = other_labs[inM].tolist()
        P_labs = [c] + m_labs
        keep = ~inM
        rest = _Rest(others.stats[keep], others.score[keep], others.n[keep])
        if by_stats:
            cinfo.first = self._first_item(state, c)
            P = [cinfo] + [_Summary(others.stats[i], others.score[i], others.n[i],
                                    self._first_item(state, other_labs[i]))
                           for i in np.flatnonzero(inM).tolist()]
            return self._merge_stats(state, P_labs, P, rest, anchor_lq, temperature, rng)
        P = [cinfo] + [self._label_info(state, lab) for lab in m_labs]
        return self._merge_items(state, P_labs, P, rest, anchor_lq, temperature, rng)

    # ------------------------------------------------------------- splits
    def _apply_split(self, state, c, parts, keep):
        """Move every part but ``parts[keep]`` to a fresh label (item by
        item through the model); returns the fresh labels."""
        model = self.model
        fresh_labels = []
        for g, R in enumerate(parts):
            if g == keep:
                continue
            fresh = state.partition.fresh_label()
            dd = model.delta(state, R, fresh)
            model.apply(state, R, fresh, dd)
            fresh_labels.append(fresh)
        lists = self._members_index(state).lists
        lists[c] = parts[keep]
        for fresh, R in zip(fresh_labels, [p for g, p in enumerate(parts) if g != keep]):
            lists[fresh] = R
        return fresh_labels

    def _draw_split(self, tree, rng, temperature, n_walk=None):
        """(node j, log weight, ν, walk result, assign) of a split of ``tree``."""
        n = tree.n
        logw = tree.node_log_weights(temperature, self.split_floor)
        j = tree.draw_node(temperature, self.split_floor, rng.random())
        nu = n + j
        k = tree.ancestors(nu)
        u = _uniforms(rng, n, k)
        assign = np.empty(k + 1, np.int64)
        f = self._f
        res = f.walk_groups(f.sp, tree.left, tree.right, tree.parent, tree.stats, tree.size,
                            tree.score, n, nu, 1.0 / temperature, self.log_wnew, u, assign)
        return j, float(logw[j]), nu, res, assign

    def _parts_of(self, tree, nu, assign, n_groups):
        """The items of every group of a split at ``nu``, each ascending."""
        n = tree.n
        leafgroup = _leaf_groups(tree.left, tree.right, tree.parent, tree.lo, tree.order,
                                 tree.size, n, nu, assign)
        order = np.argsort(leafgroup, kind="stable")  # items ascending within a group
        bounds = np.cumsum(np.bincount(leafgroup, minlength=int(n_groups)))[:-1]
        return [tree.items[g] for g in np.split(order, bounds)]

    def _split_stats(self, state, c, rest, anchor_lq, rng, temperature) -> StepInfo:
        """A split priced from the groups' statistics; items are read only
        to move them, once the move is accepted."""
        self.counts["split"][0] += 1
        tree = self._label_tree_of(state, c)
        n = tree.n
        if n < 2:
            return StepInfo(False, -math.inf, 0, 0.0, "split")
        j, logw_j, nu, res, assign = self._draw_split(tree, rng, temperature)
        lp_walk, _, k, gstats, gsize, gsc = res
        k = int(k)
        path_lq = anchor_lq + logw_j + float(lp_walk)
        firsts = tree.group_firsts(nu, assign, k)
        order = np.argsort(firsts, kind="stable")  # parts by smallest item
        pinfos = [_Summary(gstats[g], gsc[g], gsize[g], firsts[g]) for g in order.tolist()]
        rev = self._log_q_merge(pinfos, rest, temperature)
        sizes = gsize[order]
        moved = n - int(sizes.max())
        if rev == -math.inf:
            return StepInfo(False, -math.inf, moved, 0.0, "split")
        # log q(X*|X) is the drawn path's path_lq: with deterministic trees no
        # other path yields these parts (docs/algorithms/tree_guided.md, (b)).
        d = self._regroup(state, [c], gstats[order], sizes)
        log_a = d / temperature + rev - path_lq
        ok, log_alpha = metropolis_hastings_bound_first(rng, log_a, lambda stop: log_a)
        if not ok:
            if k > 2:
                part = state.partition
                _free_list_as_if_undone(part.free_stack, part.n_free, np.zeros(0, np.int64), k - 1)
            return StepInfo(False, log_alpha, moved, d, "split")
        parts = self._parts_of(tree, nu, assign, k)
        parts = [parts[g] for g in order.tolist()]
        keep = int(np.argmax(sizes))  # the largest part (the first of equals) keeps c
        before = state.log_pi
        self._apply_split(state, c, parts, keep)
        self.counts["split"][1] += 1
        return StepInfo(True, log_alpha, moved, state.log_pi - before, "split")

    def _split_items(self, state, c, cinfo, rest, anchor_lq, rng, temperature) -> StepInfo:
        """A split applied to the state to price it (models without
        ``delta_regroup``), undone on rejection."""
        self.counts["split"][0] += 1
        tree = self._label_tree(c, cinfo)
        n = tree.n
        if n < 2:
            return StepInfo(False, -math.inf, 0, 0.0, "split")
        j, logw_j, nu, res, assign = self._draw_split(tree, rng, temperature)
        lp_walk, k = res[0], int(res[2])
        path_lq = anchor_lq + logw_j + float(lp_walk)
        parts = self._parts_of(tree, nu, assign, k)
        parts.sort(key=lambda p: int(p[0]))
        pinfos = [self._info(p) for p in parts]
        rev = self._log_q_merge(pinfos, rest, temperature)
        moved = n - max(p.size for p in parts)
        if rev == -math.inf:
            return StepInfo(False, -math.inf, moved, 0.0, "split")
        # The largest part keeps the label c; the others get fresh labels.
        keep = max(range(len(parts)), key=lambda g: parts[g].size)
        movers = [parts[g] for g in range(len(parts)) if g != keep]
        log_pi0 = state.log_pi
        model = self.model
        if len(movers) == 1:
            fresh = state.partition.fresh_label()
            d = model.delta(state, movers[0], fresh)
            log_a = d / temperature + rev - path_lq
            ok, log_alpha = metropolis_hastings_bound_first(rng, log_a, lambda stop: log_a)
            if ok:
                self._apply_split(state, c, parts, keep)
                self.counts["split"][1] += 1
                return StepInfo(True, log_alpha, moved, d, "split")
            return StepInfo(False, log_alpha, moved, d, "split")
        lists = self._members_index(state).lists
        old_c = lists.get(c)
        fresh_labels = self._apply_split(state, c, parts, keep)
        d = state.log_pi - log_pi0
        log_a = d / temperature + rev - path_lq
        ok, log_alpha = metropolis_hastings_bound_first(rng, log_a, lambda stop: log_a)
        if ok:
            self.counts["split"][1] += 1
            return StepInfo(True, log_alpha, moved, d, "split")
        for fresh, R in zip(fresh_labels, movers):
            dd = model.delta(state, R, c)
            model.apply(state, R, c, dd)
            lists.pop(fresh, None)
        lists[c] = old_c
        state.log_pi = log_pi0
        return StepInfo(False, log_alpha, moved, d, "split")

    # ------------------------------------------------------------- merges
    def _merge_reverse(self, U_info, parts, rest, fwd, d, temperature, stop):
        """log α of a merge given an upper bound ``stop`` below which the
        exact value is not needed: first with the anchor bound of the
        reverse split (no tree), then with its replay on the tree of the
        merged set (``parts()``: the labels' items, by smallest item, read
        only then)."""
        rev_bound = self._log_q_anchor(U_info, rest, temperature)
        rest_of_alpha = d / temperature + rev_bound - fwd
        if rest_of_alpha < stop:
            return rest_of_alpha, None
        parts = parts()
        U = np.sort(np.concatenate(parts), kind="stable")  # merges sorted runs
        # The reverse split's replay stops once log α is known to lie below stop.
        best = self.ratio == "paper"
        rev = rev_bound + self._split_tree_logsum(
            self.tree(U), parts, temperature, best=best,
            stop=-math.inf if best else stop - rest_of_alpha)
        return d / temperature + rev - fwd, U

    def _commit_merge(self, state, dst, movers, U):
        """Move every mover's items into ``dst`` and update the index."""
        model = self.model
        for _, R in movers:
            dd = model.delta(state, R, dst)
            model.apply(state, R, dst, dd)
        lists = self._members_index(state).lists
        lists[dst] = U
        for lab, _ in movers:
            lists.pop(lab, None)

    def _merge_stats(self, state, P_labs, P, rest, anchor_lq, temperature, rng) -> StepInfo:
        """A merge priced from the labels' statistics; the items of the
        labels are read only past the anchor bound, and moved only once the
        move is accepted.

        Upper bounds of log q(X|X*), dearest last: the probability of drawing
        the merged label as the anchor, -log L*, times that of an empty merge
        set (:meth:`_log_q_anchor`, from the merged statistics), times the
        split path's (on the tree of the merged set). Each is computed only
        when the ones before do not already reject the move.
        """
        self.counts["merge"][0] += 1
        order = sorted(range(len(P)), key=lambda g: P[g].first)
        Ps = [P[g] for g in order]
        keep = max(range(len(P)), key=lambda g: P[g].n)  # the largest label keeps its name
        dst = P_labs[keep]
        moved = int(sum(P[g].n for g in range(len(P)) if g != keep))
        fwd = anchor_lq if self.ratio == "paper" else self._log_q_merge(Ps, rest, temperature)
        S_U = np.sum([p.stats for p in P], axis=0)
        n_U = int(sum(p.n for p in P))
        d = self._regroup(state, P_labs, S_U, [n_U])
        lq_anchor = -math.log(len(rest) + 1)
        merged = []

        def exact(stop):
            f = self._f
            U_info = _Summary(S_U, f.score(S_U, n_U, f.sp), n_U, Ps[0].first)
            log_alpha, U = self._merge_reverse(
                U_info, lambda: [self._members(state, P_labs[g]) for g in order], rest, fwd, d,
                temperature, stop)
            merged.append(U)
            return log_alpha

        ok, log_alpha = metropolis_hastings_bound_first(
            rng, d / temperature + lq_anchor - fwd, exact)
        if not ok:
            if len(P) > 2:
                part = state.partition
                _free_list_as_if_undone(part.free_stack, part.n_free, np.array(
                    [P_labs[g] for g in range(len(P)) if g != keep], np.int64), 0)
            return StepInfo(False, log_alpha, moved, d, "merge")
        movers = [(P_labs[g], self._members(state, P_labs[g])) for g in range(len(P)) if g != keep]
        before = state.log_pi
        self._commit_merge(state, dst, movers, merged[-1])
        self.counts["merge"][1] += 1
        return StepInfo(True, log_alpha, moved, state.log_pi - before, "merge")

    def _merge_items(self, state, P_labs, P, rest, anchor_lq, temperature, rng) -> StepInfo:
        """A merge applied to the state to price it (models without
        ``delta_regroup``), undone on rejection; bounds as
        :meth:`_merge_stats`."""
        self.counts["merge"][0] += 1
        Ps = sorted(P, key=lambda i: i.first)
        keep = max(range(len(P)), key=lambda g: P[g].n)
        dst = P_labs[keep]
        movers = [(P_labs[g], P[g].items) for g in range(len(P)) if g != keep]
        moved = int(sum(R.size for _, R in movers))
        fwd = anchor_lq if self.ratio == "paper" else self._log_q_merge(Ps, rest, temperature)
        lq_anchor = -math.log(len(rest) + 1)
        merged = []

        def exact(d, stop):
            U = np.sort(np.concatenate([p.items for p in P]), kind="stable")
            log_alpha, _ = self._merge_reverse(self._info(U), lambda: [p.items for p in Ps], rest,
                                               fwd, d, temperature, stop)
            merged.append(U)
            return log_alpha

        model = self.model
        log_pi0 = state.log_pi
        if len(movers) == 1:
            R = movers[0][1]
            d = model.delta(state, R, dst)
            ok, log_alpha = metropolis_hastings_bound_first(
                rng, d / temperature + lq_anchor - fwd, lambda stop: exact(d, stop))
            if ok:
                self._commit_merge(state, dst, movers, merged[-1])
                self.counts["merge"][1] += 1
                return StepInfo(True, log_alpha, moved, d, "merge")
            return StepInfo(False, log_alpha, moved, d, "merge")
        for _, R in movers:
            dd = model.delta(state, R, dst)
            model.apply(state, R, dst, dd)
        d = state.log_pi - log_pi0
        ok, log_alpha = metropolis_hastings_bound_first(
            rng, d / temperature + lq_anchor - fwd, lambda stop: exact(d, stop))
        if ok:
            lists = self._members_index(state).lists
            lists[dst] = merged[-1]
            for lab, _ in movers:
                lists.pop(lab, None)
            self.counts["merge"][1] += 1
            return StepInfo(True, log_alpha, moved, d, "merge")
        # Every mover's label is empty now: each returns to its own label.
        for lab, R in movers:
            dd = model.delta(state, R, lab)
            model.apply(state, R, lab, dd)
        state.log_pi = log_pi0
        return StepInfo(False, log_alpha, moved, d, "merge")
