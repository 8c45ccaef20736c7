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

from swcuts.models.partition import _version
from swcuts.samplers.common import StepInfo, metropolis_hastings_bound_first
from swcuts.samplers.tree_guided.freelist import _free_list_after_merge, _free_list_as_if_undone
from swcuts.samplers.tree_guided.heads import merge_set
from swcuts.samplers.tree_guided.around import _AroundMerges
from swcuts.samplers.tree_guided.ratio import merge_anchor_sum
from swcuts.samplers.tree_guided.trees import _leaf_groups, _Rest
from swcuts.samplers.tree_guided.walks import _uniforms


class _Summary:
    """Statistics, score, size and smallest item of a label or of a part,
    without its items (the attributes :mod:`.ratio` reads)."""

    __slots__ = ("stats", "score", "n", "first")

    def __init__(self, stats, score, n, first):
        self.stats = stats
        self.score = float(score)
        self.n = int(n)
        self.first = int(first)


class _GlobalMoves(_AroundMerges):
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

    def _first_items(self, state, labels) -> list:
        """:meth:`_first_item` of each of ``labels``."""
        lists = self._members_index(state).lists
        out = []
        for lab in labels:
            lst = lists.get(int(lab))
            out.append(int(lst[0]) if lst is not None and lst.size
                       else self._first_item(state, lab))
        return out

    def global_move(self, state, rng, temperature=1.0) -> StepInfo:
        """One split-or-merge Metropolis-Hastings update.

        Cost: the merge probabilities of the L labels from the state's
        per-label statistics, kept between moves for unchanged labels
        (:mod:`.pairs`); a split walks up the anchor's tree (cached with
        the label); a merge reads the smaller labels' items only when its
        first bound does not reject it (:meth:`_merge_reverse`). The member
        index stays known exact across the move (every move of this kernel
        updates it), so that its entries are used without their O(|label|)
        check (:class:`swcuts.models.partition.MemberIndex`).
        """
        part = state.partition
        since = _version(part)
        info = self._global_move(state, rng, temperature)
        self._members_index(state).updated(part, since)
        return info

    def _global_move(self, state, rng, temperature):
        """:meth:`global_move` without the member index's bookkeeping."""
        part = state.partition
        labs = part.used_labels()
        L = labs.size
        a = int(rng.integers(L))
        c = int(labs[a])
        if not self._by_stats(state):
            return self._global_move_items(state, rng, temperature, labs, a)
        S, n = self._label_stats(state, labs)
        sc, _, lpm, l1pm = self._pairs.refresh(labs, S, n, temperature)
        # The merge set (log u < log p for each other label) and, when it is
        # not empty, the merged labels' sums: one compiled call (.heads).
        log_u = np.log(rng.random(L - 1)) if L > 1 else np.zeros(0)
        perm, k, lsum, S_U, n_U, keep = merge_set(a, log_u, lpm, l1pm, S, n)
        anchor_lq = -math.log(L) + lsum
        if k == 1:
            orow = perm[1:]  # the other labels' rows, ascending
            return self._split_stats(state, c, _Rest(S[orow], sc[orow], n[orow]), anchor_lq, rng,
                                     temperature)
        return self._merge_stats(state, labs, perm, int(k), (S_U, int(n_U), int(keep)), (S, sc, n),
                                 anchor_lq, temperature, rng, (lpm, l1pm))

    def _global_move_items(self, state, rng, temperature, labs, a):
        """:meth:`_global_move` on a state priced by applying proposals
        (models without ``delta_regroup``): label infos from their items."""
        L = labs.size
        c = int(labs[a])
        other_labs = np.concatenate((labs[:a], labs[a + 1:]))  # np.delete(labs, a), cheaper
        cinfo = self._label_info(state, c)
        others = self._rest_of(state, other_labs)
        # The merge set (log u < log p for each other label) and the anchor's
        # log q less log L: one compiled call (.pairs._anchor_draw_impl).
        f = self._f
        log_u = np.log(rng.random(L - 1)) if L > 1 else np.zeros(0)
        inM, lsum = f.anchor_draw(f.sp, *self._arrays1(cinfo), *self._arrays(others), log_u,
                                  1.0 / temperature, self.merge_floor)
        anchor_lq = -math.log(L) + float(lsum)
        if not inM.any():
            return self._split_items(state, c, cinfo, others, anchor_lq, rng, temperature)
        m_labs = other_labs[inM].tolist()
        keep = ~inM
        rest = _Rest(others.stats[keep], others.score[keep], others.n[keep])
        P = [cinfo] + [self._label_info(state, lab) for lab in m_labs]
        return self._merge_items(state, [c] + m_labs, P, rest, anchor_lq, temperature, rng)

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

    def _start_split(self, tree, anchor_lq, rng, temperature):
        """Counts a split attempt and draws it (:meth:`_draw_split`): None
        when ``tree`` has a single item, else (n, ν, walk result, assign,
        number of groups k, log q of the drawn path)."""
        self.counts["split"][0] += 1
        n = tree.n
        if n < 2:
            return None
        _, logw_j, nu, res, assign = self._draw_split(tree, rng, temperature)
        path_lq = anchor_lq + logw_j + float(res[0])
        return n, nu, res, assign, int(res[2]), path_lq

    def _split_stats(self, state, c, rest, anchor_lq, rng, temperature) -> StepInfo:
        """A split priced from the groups' statistics; items are read only
        to move them, once the move is accepted."""
        tree = self._label_tree_of(state, c)
        drawn = self._start_split(tree, anchor_lq, rng, temperature)
        if drawn is None:
            return StepInfo(False, -math.inf, 0, 0.0, "split")
        n, nu, res, assign, k, path_lq = drawn
        gstats, gsize, gsc = res[3], res[4], res[5]
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
        tree = self._label_tree(c, cinfo)
        drawn = self._start_split(tree, anchor_lq, rng, temperature)
        if drawn is None:
            return StepInfo(False, -math.inf, 0, 0.0, "split")
        n, nu, _, assign, k, path_lq = drawn
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
    def _merge_reverse(self, infos, n_rest, anchor_lq, fwd, d, temperature, stop, split_sum):
        """log α of a merge, or an upper bound of it below ``stop`` (then
        the exact value is not needed), the dearest terms last.

        log q(X*|X) is at least ``anchor_lq``, the drawn anchor's term of
        its sum over anchors, and log q(X|X*) at most the anchor bound of
        the reverse split (:meth:`_log_q_anchor`, O(L) scores), itself at
        most -log L*; ``fwd()`` gives the sum over anchors and
        ``split_sum(best, stop)`` the log sum over the reverse split's paths
        (its replay on the merged set's tree, given up below ``stop``).
        With induced trees the split sum comes first: it is kept for a
        merge proposed again (:meth:`_merged_split_sum`), and it is what
        rejects nearly every merge that gets this far; with -log L* and
        ``anchor_lq`` in place of the other two terms it bounds log α.
        ``infos()`` gives the merged label's and the other labels' summaries
        (for the anchor bound), ``n_rest`` the number of the other labels.
        """
        best = self.ratio == "paper"
        split = None
        if self.trees == "global":
            head = d / temperature - math.log(n_rest + 1) - anchor_lq
            split = split_sum(best, -math.inf if best else stop - head)
            if head + split < stop:
                return head + split
        rev_bound = self._log_q_anchor(*infos(), temperature)
        log_alpha = d / temperature + rev_bound - anchor_lq
        if split is None and log_alpha < stop:
            return log_alpha
        fwd = anchor_lq if best else fwd()
        log_alpha = d / temperature + rev_bound - fwd
        if split is None:
            if log_alpha < stop:
                return log_alpha
            # The reverse split's replay stops once log α is known to lie below stop.
            split = split_sum(best, -math.inf if best else stop - log_alpha)
        rev = rev_bound + split
        return d / temperature + rev - fwd

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

    def _merge_stats(self, state, labs, perm, k, merged, labels, anchor_lq, temperature, rng,
                     tables) -> StepInfo:
        """A merge priced from the labels' statistics; the items of the
        smaller labels are read only past the first bound, and every item
        only once the move is accepted.

        Upper bounds of log α, cheapest first (:meth:`_merge_reverse`): the
        probability of drawing the merged label as the anchor is at most
        -log L*, and the forward probability at least the drawn anchor's
        term ``anchor_lq``; then the reverse split's path (with induced
        trees, on the merged set's tree contracted around the smaller
        labels, :mod:`.merged`), the anchor bound (:meth:`_log_q_anchor`)
        and the forward sum over anchors. Each is computed only when the
        ones before do not already reject the move.

        ``labs``: the labels, ascending; ``perm``, ``k``: the rows of the
        merged labels P (``perm[:k]``, the anchor first) and of the others
        (:func:`.heads.merge_set`); ``merged``: P's summed statistics, size
        and the index in P of its largest label; ``labels``: (statistics,
        scores, sizes) of every label, ``tables``: (log p, log(1 - p))
        between the labels (:mod:`.pairs`). Everything up to the first
        bound is arrays (one compiled call for the sums): a merge at
        n = 100,000 moves ~8 labels and more than half of the merges end
        there; the smallest items, which order the parts, are read past it.
        """
        self.counts["merge"][0] += 1
        S, sc, n = labels
        S_U, n_U, keep = merged
        lpm, l1pm = tables
        rows, rest_rows = perm[:k], perm[k:]
        P = labs[rows]
        moved = n_U - int(n[rows[keep]])
        d = self._regroup(state, P, S_U, [n_U])
        lq_anchor = -math.log(rest_rows.size + 1)
        P_labs = P.tolist()
        f = self._f

        def exact(stop):
            firsts = self._first_items(state, P_labs)
            # Parts by smallest item (a stable sort, as np.argsort's; k is small).
            order = sorted(range(k), key=firsts.__getitem__)
            if self.trees == "global" and self.merge_around:
                split_sum = self._merged_split_sum(state, P_labs, order, keep, temperature)
            else:
                def split_sum(best, stop):
                    parts = [self._members(state, P_labs[g]) for g in order]
                    U = np.sort(np.concatenate(parts), kind="stable")  # merges sorted runs
                    return self._split_tree_logsum(self.tree(U), parts, temperature, best=best,
                                                   stop=stop)

            def infos():
                U_info = _Summary(S_U, f.score(S_U, n_U, f.sp), n_U, firsts[order[0]])
                return U_info, _Rest(S[rest_rows], sc[rest_rows], n[rest_rows])

            def fwd():
                prow = rows[order]
                return merge_anchor_sum(lpm[np.ix_(prow, prow)], l1pm[np.ix_(prow, rest_rows)])

            return self._merge_reverse(infos, rest_rows.size, anchor_lq, fwd, d, temperature,
                                       stop, split_sum)

        # log q(X*|X) >= anchor_lq: the bound needs no forward sum over anchors.
        ok, log_alpha = metropolis_hastings_bound_first(
            rng, d / temperature + lq_anchor - anchor_lq, exact)
        if not ok:
            if k > 2:
                part = state.partition
                _free_list_after_merge(part.free_stack, part.n_free, P, keep)
            return StepInfo(False, log_alpha, moved, d, "merge")
        dst = P_labs[keep]
        movers = [(lab, self._members(state, lab)) for g, lab in enumerate(P_labs) if g != keep]
        U = np.sort(np.concatenate([self._members(state, dst)] + [R for _, R in movers]),
                    kind="stable")
        before = state.log_pi
        self._commit_merge(state, dst, movers, U)
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
        lq_anchor = -math.log(len(rest) + 1)
        merged = []

        def U_of():
            if not merged:
                merged.append(np.sort(np.concatenate([p.items for p in P]), kind="stable"))
            return merged[0]

        def split_sum(best, stop):
            return self._split_tree_logsum(self.tree(U_of()), [p.items for p in Ps], temperature,
                                           best=best, stop=stop)

        def exact(d, stop):
            return self._merge_reverse(lambda: (self._info(U_of()), rest), len(rest), anchor_lq,
                                       lambda: self._log_q_merge(Ps, rest, temperature), d,
                                       temperature, stop, split_sum)

        model = self.model
        log_pi0 = state.log_pi
        if len(movers) == 1:
            R = movers[0][1]
            d = model.delta(state, R, dst)
            ok, log_alpha = metropolis_hastings_bound_first(
                rng, d / temperature + lq_anchor - anchor_lq, lambda stop: exact(d, stop))
            if ok:
                self._commit_merge(state, dst, movers, U_of())
                self.counts["merge"][1] += 1
                return StepInfo(True, log_alpha, moved, d, "merge")
            return StepInfo(False, log_alpha, moved, d, "merge")
        for _, R in movers:
            dd = model.delta(state, R, dst)
            model.apply(state, R, dst, dd)
        d = state.log_pi - log_pi0
        ok, log_alpha = metropolis_hastings_bound_first(
            rng, d / temperature + lq_anchor - anchor_lq, lambda stop: exact(d, stop))
        if ok:
            lists = self._members_index(state).lists
            lists[dst] = U_of()
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
