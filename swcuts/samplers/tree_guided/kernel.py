"""The tree-guided kernel: :class:`TreeGuided`.

Sets up the cluster score of the model (image, mixture, or a user's
``score``), the candidate graph of the tree construction and the caches of
trees and set statistics (exact: both are functions of the vertex set),
and makes the moves on the live state:

* the global move (:mod:`.moves`): pick an anchor label, put every other
  label into its merge set with probability p(c, c'), then split the
  anchor along its tree (StocInsert) or merge it with the set; accept with
  the exact ratio of :mod:`.ratio` (priced from statistics on mixtures, so
  that only an accepted move touches items);
* the local move: single-site Gibbs on the leaves of a subtree of the fixed
  global tree (a state-independent choice, always accepted);
* :meth:`TreeGuided.iteration`, the paper's cycle of G global moves and a
  sweep of local moves.

A member index of the labels is kept current so that no step passes over
all N items. See ``docs/algorithms/tree_guided.md``.
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict

import numpy as np

from swcuts.io.errors import check_number
from swcuts.models.image import ImageModel
from swcuts.models.partition import MemberIndex, _version
from swcuts.samplers.common import StepInfo
from swcuts.samplers.targets import gibbs_relabel, gibbs_sweep_image
from swcuts.samplers.tree_guided.algorithms import _Fns
from swcuts.samplers.tree_guided.moves import _GlobalMoves
from swcuts.samplers.tree_guided.pairs import LabelPairs
from swcuts.samplers.tree_guided.rebuild import (induced_near, list_with, list_without,
                                                   max_depth, set_changes)
from swcuts.samplers.tree_guided.ratio import _ProposalProbabilities
from swcuts.samplers.tree_guided.trees import (
    Tree, _floored_log_softmax, _knn_csr, _lifting_tables, _Rest, _SetInfo)


def _plain(lst) -> bool:
    """Whether a member list is a C-contiguous int64 array (the compiled
    list updates' one signature)."""
    return lst.dtype == np.int64 and lst.flags.c_contiguous


class TreeGuided(_GlobalMoves, _ProposalProbabilities):
    """Tree-guided MCMC (Lee & Choi) with an exact acceptance ratio.

    Parameters
    ----------
    model : partition model
        Needs ``vstats`` (per-vertex sufficient statistics) and a cluster
        score: the model's ``cluster_score()`` (:class:`swcuts.models.protocols.Model`;
        :class:`~swcuts.models.ImageModel` and :class:`~swcuts.models.MixtureModel`
        have one), else ``score``. Models with a fixed label set (Potts) are refused.
    q : array, optional
        Edge probabilities; accepted for a uniform kernel signature, unused.
    moves : {"both", "global", "local"}
        Which moves :meth:`step` makes.
    global_prob : float
        With ``moves="both"``, probability that a step is a global move
        (otherwise a local move).
    G : int
        Global moves per :meth:`iteration` (the paper's G = 20).
    merge_floor : float
        ε in the merge probability ε + (1 - 2ε)/(1 + d^(1/T)), in [0, 0.5).
    split_floor : float
        Share of the uniform distribution in the choice of the split node.
    new_weight : float
        Weight of "open a new group" in StocInsert (the paper's 1).
    local_max : int
        Largest subtree (in leaves) updated by one local move.
    local_floor : float
        Share of the uniform distribution in the choice of that subtree.
    neighbours : int, None or "auto"
        Models without a graph: candidate pairs of the tree construction
        from a k-nearest-neighbour graph of the data (int k), every pair
        (None), or "auto": every pair up to 100 items, else k = 10.
    trees : {"auto", "set", "global"}
        The tree of a label: the greedy tree of its vertex set ("set"), or
        the tree induced on it by the fixed global tree ("global", models
        without a graph only); "auto": "global" for models without a graph
        above 100 items, else "set".
    tree_build : {"balanced", "greedy", "matching"}
        How the fixed global tree is built (it guides the local moves and,
        with ``trees="global"``, gives every label's tree): greedy joins, one
        pair at a time (default; depth ~ n/2 with the DP score); "balanced",
        that tree with its heavy paths rebalanced (depth O(log n)); "matching",
        the greedy joins by rounds of matching. Both balanced trees accept
        fewer global moves (docs/algorithms/tree_guided.md, "A balanced global
        tree"), so the default stays "greedy".
    ratio : {"exact", "paper"}
        "paper" is the paper's printed ratio, kept as a negative control for
        the tests; it does not leave π invariant.
    score : callable, optional
        ``score(stats, n, params) -> float``: the log potential of a set with
        summed statistics ``stats`` and ``n`` items (runs as plain Python).
    compiled : bool, optional
        Compiled helpers (default) or plain Python (same results). The
        driver-facing flag ``self.compiled`` is always False: the driver
        calls :meth:`step`.

    Attributes
    ----------
    counts : dict
        ``{"split": [proposed, accepted], "merge": [...], "local": [...]}``.
    """

    name = "tree-guided"

    def __init__(self, model, q=None, *, moves="both", global_prob=0.5, G=20, merge_floor=1e-3,
                 split_floor=0.05, new_weight=1.0, local_max=16, local_floor=0.5,
                 neighbours="auto", trees="auto", tree_build="greedy", ratio="exact", score=None,
                 compiled=None):
        if getattr(model, "fixed_labels", False):
            raise ValueError(f"{type(model).__name__} has a fixed label set; tree-guided MCMC "
                             "needs a partition model whose labels are names")
        if moves not in ("both", "global", "local"):
            raise ValueError(f"moves must be 'both', 'global' or 'local', got {moves!r}")
        if ratio not in ("exact", "paper"):
            raise ValueError(f"ratio must be 'exact' or 'paper', got {ratio!r}")
        if trees not in ("auto", "set", "global"):
            raise ValueError(f"trees must be 'auto', 'set' or 'global', got {trees!r}")
        if tree_build not in ("balanced", "greedy", "matching"):
            raise ValueError(f"tree_build must be 'balanced', 'greedy' or 'matching', "
                             f"got {tree_build!r}")
        self.tree_build = tree_build
        check_number("merge_floor", merge_floor, minimum=0, maximum=0.5, exclusive_max=True)
        for nm, val in (("split_floor", split_floor), ("local_floor", local_floor),
                        ("global_prob", global_prob)):
            check_number(nm, val, minimum=0, maximum=1)
        check_number("new_weight", new_weight, minimum=0, exclusive=True)
        check_number("local_max", local_max, integer=True, minimum=1)
        check_number("G", G, integer=True, minimum=0)
        if neighbours is not None and not (isinstance(neighbours, str) and neighbours == "auto"):
            check_number("neighbours", neighbours, integer=True, minimum=1)
        self.model = model
        self.graph = getattr(model, "graph", None)
        self.moves = moves
        self.global_prob = float(global_prob)
        self.G = int(G)
        self.merge_floor = float(merge_floor)
        self.split_floor = float(split_floor)
        self.log_wnew = math.log(float(new_weight))
        self.local_max = int(local_max)
        self.local_floor = float(local_floor)
        self.ratio = ratio
        vstats = getattr(model, "vstats", None)
        if vstats is None:
            raise TypeError(f"{type(model).__name__} has no per-vertex statistics (vstats)")
        self.vstats = np.ascontiguousarray(vstats, dtype=np.float64)
        use_compiled = True if compiled is None else bool(compiled)
        if score is not None:
            fns = _Fns(False, np.zeros(1), score)
        else:
            cluster_score = getattr(model, "cluster_score", None)
            if cluster_score is None:
                raise TypeError(f"{type(model).__name__} has no cluster_score(); pass score=")
            sp, fn = cluster_score()
            fns = _Fns(use_compiled and fn is None, sp, fn)
        self._f = fns
        self._mixture_gibbs = (bool(getattr(model, "compiled_likelihood", False))
                               and compiled is not False)
        # The image model's Gibbs updates, compiled (targets.gibbs_sweep_image):
        # its own delta and apply only (a subclass that overrides them keeps
        # gibbs_relabel, which calls them).
        self._image_gibbs = (not self._mixture_gibbs and compiled is not False
                             and getattr(model, "compiled", False) is True
                             and getattr(type(model), "delta", None) is ImageModel.delta
                             and getattr(type(model), "apply", None) is ImageModel.apply)
        # Candidate graph of the tree construction.
        n = model.n_vertices
        if self.graph is not None:
            self._indptr = np.ascontiguousarray(self.graph.indptr, dtype=np.int64)
            self._indices = np.ascontiguousarray(self.graph.indices, dtype=np.int64)
            self._use_graph = True
        else:
            k = neighbours
            if k == "auto":
                k = 10 if n > 100 else None
            data = getattr(model, "data", None)
            if k is not None and data is not None and n > k + 1:
                self._indptr, self._indices = _knn_csr(data, int(k))
                self._use_graph = True
            else:
                self._indptr = np.zeros(n + 1, np.int64)
                self._indices = np.zeros(0, np.int64)
                self._use_graph = False
        self._local = np.full(n, -1, np.int64)
        if trees == "global" and self.graph is not None:
            raise ValueError("trees='global' is for models without a graph (on a graph "
                             "every node of a label's tree must be connected)")
        if trees == "auto":
            trees = "global" if self.graph is None and n > 100 else "set"
        self.trees = trees
        self._lift = None
        self._index = weakref.WeakKeyDictionary()
        # Caches keyed by vertex set (exact: trees and statistics are functions of the set).
        self._infos = OrderedDict()
        self._trees = OrderedDict()
        # label -> [its member array from the index, _SetInfo, Tree or None]:
        # the index replaces a label's array when the label changes, never
        # edits it, so the same array means the same set (no byte key).
        self._labels = {}
        self._tree_bytes = 0
        self.tree_cache_bytes = 64 << 20
        self.info_cache_size = max(4096, 4 * n)
        self._gtree = None
        self._last_local_size = 1
        self.compiled = False
        self.counts = {"split": [0, 0], "merge": [0, 0], "local": [0, 0]}
        # Δ log π of a merge or split from label and part statistics
        # (mixtures); other models price a proposal by applying it.
        self._regroup = getattr(model, "delta_regroup", None)
        # With induced trees, a merge's reverse split is priced on the merged
        # set's tree around the smaller labels' items (False: on the whole
        # tree of the merged set; the same values, for the tests).
        self.merge_around = True
        # Contracted trees of merged sets (moves._merged_split_sum), by bytes.
        self._around = OrderedDict()
        self._around_bytes = 0
        self.around_cache_bytes = 16 << 20
        # Scores and merge probabilities between the labels, kept by label.
        self._pairs = LabelPairs(fns.pairs, fns.sp, self.merge_floor)

    # ------------------------------------------------------------ sets
    def _info(self, items) -> _SetInfo:
        key = items.tobytes()
        info = self._infos.get(key)
        if info is not None:
            self._infos.move_to_end(key)
            return info
        st = self.vstats[items].sum(axis=0)
        info = _SetInfo(items, key, st, float(self._f.score(st, int(items.size), self._f.sp)))
        self._infos[key] = info
        if len(self._infos) > self.info_cache_size:
            self._infos.popitem(last=False)
        return info

    def tree(self, items, near=None) -> Tree:
        """The tree of a vertex set (ascending int64 items), from the cache;
        an induced tree not in the cache is built with the hints of the
        induced tree ``near`` of a nearby set when given (the same tree,
        :mod:`.rebuild`)."""
        items = np.ascontiguousarray(items, dtype=np.int64)
        key = items.tobytes()
        t = self._trees.get(key)
        if t is not None:
            self._trees.move_to_end(key)
            return t
        f = self._f
        if self.trees == "global" and near is not None and near.hkey is not None:
            t = Tree(items, induced_near(f, near, items, self._lifting(), self._lift_cache,
                                         self.vstats, self._leaf_sc))
        elif self.trees == "global":
            gpos, hmin, lg, split_at = self._lifting()
            t = Tree(items, f.induced(f.sp, items, gpos, hmin, lg, self.vstats, self._leaf_sc,
                                      split_at, *self._lift_cache))
        else:
            t = Tree(items, f.build(f.sp, items, self._local, self._indptr, self._indices,
                                    self._use_graph, self.vstats))
        self._trees[key] = t
        self._tree_bytes += t.nbytes
        while self._tree_bytes > self.tree_cache_bytes and len(self._trees) > 1:
            _, old = self._trees.popitem(last=False)
            self._tree_bytes -= old.nbytes
        return t

    def global_tree(self) -> Tree:
        """The fixed tree over all vertices that guides the local moves."""
        if self._gtree is None:
            f = self._f
            items = np.arange(self.model.n_vertices, dtype=np.int64)
            self._gtree = Tree(items, f.build_global(self.tree_build, items, self._local,
                                                     self._indptr, self._indices,
                                                     self._use_graph, self.vstats))
        return self._gtree

    def _lifting(self):
        """(leaf position, sparse table, floor-log2 table, node at each
        split) of the global tree, for the induced trees (``trees="global"``;
        :func:`.trees._lifting_tables`). Also sets the score of every item
        alone, ``_leaf_sc``, and the cache of node scores ``_lift_cache``."""
        if self._lift is None:
            f = self._f
            self._leaf_sc = np.asarray(f.scores(f.sp, self.vstats, np.ones(len(self.vstats),
                                                                            np.int64)), float)
            g = self.global_tree()
            self._lift = _lifting_tables(g)
            nn = 2 * g.n - 1
            # Last score computed at each global node, with its size and statistics.
            self._lift_cache = (np.full(nn, -1, np.int64), np.zeros((nn, self.vstats.shape[1])),
                                np.zeros(nn))
        return self._lift

    # ------------------------------------------------------- label members
    def _members_index(self, state) -> MemberIndex:
        idx = self._index.get(state)
        if idx is None:
            idx = self._index[state] = MemberIndex()
        return idx

    def _members(self, state, label) -> np.ndarray:
        """Items of ``label``, ascending: O(1) while the member index is
        known exact (its entries are then this kernel's, all ascending, or a
        rebuild's); else the index's check and an order check, O(|label|)
        (after another kernel's moves the index is rebuilt once)."""
        index = self._members_index(state)
        lst = index.members(state.partition, int(label))
        if not index.current(state.partition) and lst.size > 1 and np.any(lst[1:] < lst[:-1]):
            lst = np.sort(lst)
        return np.ascontiguousarray(lst, dtype=np.int64)

    def _members_many(self, state, labels):
        """The members of several labels, concatenated (each ascending), and
        their sizes: :meth:`_members` of each, with the member index's check
        (every listed item carries its label, as many as the label has) and
        the order made once for all of them."""
        index = self._members_index(state)
        lists = index.lists
        got = [lists.get(int(lab)) for lab in labels]
        part = state.partition
        if all(x is not None for x in got):
            sizes = np.array([x.size for x in got], np.int64)
            cat = np.concatenate(got) if got else np.zeros(0, np.int64)
            if index.current(part):  # exact and ascending (this kernel's lists)
                return np.ascontiguousarray(cat, dtype=np.int64), sizes
            if (np.array_equal(sizes, part.size[np.asarray(labels, np.int64)])
                    and np.array_equal(part.labels[cat], np.repeat(np.asarray(labels), sizes))):
                steps = np.diff(cat) > 0
                steps[np.cumsum(sizes)[:-1] - 1] = True  # a new label may start lower
                if steps.all():
                    return np.ascontiguousarray(cat, dtype=np.int64), sizes
        got = [self._members(state, lab) for lab in labels]
        return np.concatenate(got), np.array([x.size for x in got], np.int64)

    def _label_cached(self, state, label, slot, make):
        """Entry ``slot`` of ``label``'s cache (1: set statistics, 2: tree),
        ``make(members)`` on first use; kept while the label's member list
        is unchanged (beyond the member index's check, O(1)). The label's
        last tree is kept until its next tree is built, from it
        (:meth:`tree`'s ``near``)."""
        hit = self._label_hit(state, label)
        if hit[slot] is None:
            members = self._members(state, label)
            if slot == 2:
                hit[2] = self.tree(members, near=hit[3])
                hit[3] = None
            else:
                hit[slot] = make(members)
        return hit[slot]

    def _label_hit(self, state, label) -> list:
        """``label``'s cache entry [member array, set statistics or None,
        tree or None, its last tree or None], made anew (keeping the last
        tree) when the member array changed."""
        lst = self._members_index(state).members(state.partition, int(label))
        hit = self._labels.get(int(label))
        if hit is None or hit[0] is not lst:
            if len(self._labels) > 2 * state.partition.n_labels + 64:
                self._labels.clear()
                hit = None
            near = None if hit is None else (hit[2] if hit[2] is not None else hit[3])
            hit = self._labels[int(label)] = [lst, None, None, near]
        return hit

    def _label_tree_near(self, state, label):
        """The tree to price a merge into ``label`` on (:mod:`.merged`) and
        whether it is the label's last tree rather than its tree: the
        label's tree when it is built; else, with induced trees, its last
        tree, if any (the changes since come from :meth:`_changes_since`),
        so that the O(m) build waits for a split of the label; else the
        label's tree, built. O(1) but for that build."""
        hit = self._label_hit(state, label)
        near = hit[3]
        if hit[2] is None and near is not None and near.hkey is not None and near.n > 1:
            return near, True
        return self._label_tree_of(state, label), False

    def _changes_since(self, state, label, old, limit=32, deep=False):
        """(items added, leaves of ``old`` dropped) from the tree ``old`` to
        ``label``'s members, or None when more than ``limit`` items (or a
        quarter of ``old``'s) moved (:func:`.rebuild.set_changes`, one walk
        over both sets), or when ``old`` is deep (a leaf deeper than
        4 log2 m): every ancestor of a changed item is a node of the
        contracted tree, so on a deep tree, the greedy caterpillar's, one
        build of the label's tree costs less than contracting around the
        changes at every merge (``deep``: no depth limit)."""
        if not deep:
            depth = old.aux.get("max_depth")
            if depth is None:
                depth = old.aux["max_depth"] = int(max_depth(old.parent, old.n))
            if depth > 4 * max(1, int(old.n).bit_length()):
                return None
        lim = min(int(limit), old.n // 4)
        added, drop, ok = set_changes(old.items, self._members(state, label), lim)
        return (added, drop) if ok else None

    def _label_info(self, state, label) -> _SetInfo:
        """:meth:`_info` of the members of ``label`` (:meth:`_label_cached`)."""
        return self._label_cached(state, label, 1, self._info)

    def _label_tree_of(self, state, label) -> Tree:
        """The tree of ``label``'s members (:meth:`_label_cached`; no set
        statistics needed)."""
        return self._label_cached(state, label, 2, None)

    def _label_tree(self, label, info) -> Tree:
        """The tree of ``info`` (a label's, from :meth:`_label_info`), kept
        with the label while it is unchanged."""
        hit = self._labels.get(int(label))
        if hit is None or hit[1] is not info:
            return self.tree(info.items)
        if hit[2] is None:
            hit[2] = self.tree(info.items)
        return hit[2]

    def _index_moved(self, state, items, old, new) -> None:
        """Bring the member index up to date after ``items`` moved from the
        labels ``old`` to ``new`` (removals first: a freed slot may be
        reused by a later item)."""
        lists = self._members_index(state).lists
        # Sorted lists: the positions of the few items are found by bisection
        # and a new array is made with them removed or inserted (O(|label|)
        # copying, no sort; one compiled call per label, numpy's calls on a
        # list that is not strictly ascending); an entry made stale by another
        # kernel is left to the index's check.
        items = np.ascontiguousarray(items, dtype=np.int64)
        old = np.ascontiguousarray(old, dtype=np.int64)
        new = np.ascontiguousarray(new, dtype=np.int64)
        gone_labs = sorted(set(old.tolist()))
        for lab in gone_labs:
            lst = lists.get(lab)
            if lst is not None and lst.size:
                ok, out = (list_without(lst, items, old, lab) if _plain(lst) else (False, None))
                if not ok:
                    gone = items[old == lab]
                    pos = np.minimum(np.searchsorted(lst, gone), lst.size - 1)
                    out = np.delete(lst, pos[lst[pos] == gone])
                lists[lab] = out
        for lab in sorted(set(new.tolist())):
            lst = lists.get(lab)
            ok = False
            if lst is not None and _plain(lst):
                ok, out = list_with(lst, items, new, lab)
            if not ok:
                add = np.sort(items[new == lab])
                out = add if lst is None else np.insert(lst, np.searchsorted(lst, add), add)
            lists[lab] = out
        size = state.partition.size
        for lab in gone_labs:
            if size[lab] == 0:
                lists.pop(lab, None)

    def _label_stats(self, state, labs):
        """Summed statistics (rows) and sizes of the labels ``labs`` from the
        state's per-label caches (O(len(labs) · D), no pass over items)."""
        part = state.partition
        D = self.vstats.shape[1]
        stats = getattr(state, "stats", None)
        if isinstance(stats, np.ndarray) and stats.ndim == 2 and stats.shape[1] == D:
            S = np.ascontiguousarray(stats[labs])
        else:
            S = np.array([self.vstats[self._members(state, lab)].sum(axis=0)
                          for lab in labs.tolist()]).reshape(len(labs), D)
        return S, np.ascontiguousarray(part.size[labs], dtype=np.int64)

    def _rest_of(self, state, labs) -> _Rest:
        """Statistics, scores and sizes of the labels ``labs``
        (:meth:`_label_stats`, and their scores)."""
        S, n = self._label_stats(state, labs)
        f = self._f
        return _Rest(S, np.asarray(f.scores(f.sp, S, n), dtype=np.float64), n)

    # ----------------------------------------------------------------- step
    def step(self, state, rng, temperature=1.0) -> StepInfo:
        """One move at temperature T: a global move (split or merge) or a
        local move, chosen by ``moves`` / ``global_prob``.

        Returns
        -------
        StepInfo
            ``move`` is "split", "merge" or "local"; ``moved`` the number of
            vertices relabelled (proposed, for a global move); ``delta`` the
            Δ log π of the proposal (global) or of the local updates.
        """
        temperature = float(temperature)
        if not temperature > 0.0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if self.moves == "global" or (self.moves == "both" and rng.random() < self.global_prob):
            return self.global_move(state, rng, temperature)
        return self.local_move(state, rng, temperature)

    def local_subtree(self, item, temperature=1.0):
        """(candidate nodes, their log probabilities) of the local move
        seeded at ``item`` in the fixed global tree: the internal ancestors
        of the item with at most ``local_max`` leaves (empty: the item alone)."""
        g = self.global_tree()
        cand = []
        v = int(g.parent[item]) if g.n > 1 else -1
        while v >= 0 and g.size[v] <= self.local_max:
            cand.append(v)
            v = int(g.parent[v])
        if not cand:
            return np.zeros(0, np.int64), np.zeros(0)
        cand = np.array(cand, np.int64)
        return cand, _floored_log_softmax(g.logd[cand - g.n] / temperature, self.local_floor)

    def local_move(self, state, rng, temperature=1.0) -> StepInfo:
        """Single-site Gibbs over the leaves of a subtree of the fixed global
        tree (state-independent choice; always accepted)."""
        self.counts["local"][0] += 1
        self.counts["local"][1] += 1
        since = _version(state.partition)
        n = self.model.n_vertices
        i = int(rng.integers(n))
        cand, logw = self.local_subtree(i, temperature)
        if cand.size == 0:
            S = np.array([i], np.int64)
        else:
            w = np.exp(logw)
            k = min(int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right")),
                    cand.size - 1)
            S = self.global_tree().leaves(int(cand[k]))
        self._last_local_size = int(S.size)
        before = state.log_pi
        labels = state.partition.labels
        old = labels[S]
        if self._mixture_gibbs:
            # The same Gibbs updates, compiled (one uniform per leaf).
            self.model.gibbs_sweep_items(state, S, rng.random(S.size), temperature)
        elif self._image_gibbs:
            part = state.partition
            state.log_pi = float(gibbs_sweep_image(
                self.model.set_move_arrays(state), part.labels, part.size, part.free_stack,
                part.n_free, np.ascontiguousarray(S, dtype=np.int64), rng.random(S.size),
                temperature, float(state.log_pi)))
        else:
            one = np.empty(1, np.int64)
            for v in S.tolist():
                one[0] = v
                gibbs_relabel(self.model, state, one, rng, temperature)
        new = labels[S]
        ch = np.flatnonzero(new != old)
        if ch.size:
            self._index_moved(state, S[ch], old[ch], new[ch])
        self._members_index(state).updated(state.partition, since)
        return StepInfo(True, 0.0, int(ch.size), state.log_pi - before, "local")

    # ------------------------------------------------------------ iteration
    def iteration(self, state, rng, temperature=1.0) -> StepInfo:
        """The paper's cycle: G global moves, then local moves until about
        as many vertices as there are have been updated (one sweep)."""
        before = state.log_pi
        any_acc = False
        moved = 0
        log_alpha = 0.0
        for _ in range(self.G):
            info = self.global_move(state, rng, temperature)
            log_alpha = info.log_accept_ratio
            if info.accepted:
                any_acc = True
                moved += info.moved
        n = self.model.n_vertices
        done = 0
        while done < n:
            info = self.local_move(state, rng, temperature)
            done += max(1, self._last_local_size)
            moved += info.moved
        return StepInfo(any_acc, log_alpha, moved, state.log_pi - before, "iteration")

    def acceptance_rates(self) -> dict:
        """Accepted / proposed per move type (NaN before any proposal)."""
        return {k: (a / p if p else float("nan")) for k, (p, a) in self.counts.items()}
