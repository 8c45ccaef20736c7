"""A merge's reverse split priced around the added items (``tree_guided/merged.py``).

The tree of the merged set U = A ∪ B contracted around B (the items of the
smaller labels), from the cached tree of the largest label A, must give the
sum over split paths of the whole tree(U) (``docs/algorithms/tree_guided.md``,
"The cost of a move"); its nodes must be tree(U)'s, bit for bit; the kept
sums so far must give what a fresh replay gives for any stop; and the
kernel must make the same chain with and without it.
"""

import math

import numpy as np
import pytest

from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
from swcuts.samplers.tree_guided.kernel import TreeGuided
from swcuts.samplers.gibbs import random_scan
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers.tree_guided.merged import _boundaries, _gp_of, merged_tree
from swcuts.samplers.tree_guided.merged import _replay_record, _stopped_at


def _kernel(build, compiled=None, n=200):
    data, _ = lee_choi_gaussians(n, seed=4)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    k = TreeGuided(model, trees="global", tree_build=build, compiled=compiled)
    k._lifting()
    return k


def _outcomes(k, rng, trials):
    """(U, parts, T) of split outcomes of random sets: drawn splits (a path
    yields them) and, a third of the time, two items swapped between two
    parts (mostly no path does)."""
    n = k.model.n_vertices
    g = k.global_tree()
    for t in range(trials):
        if t % 3 == 0:  # a node of the global tree: a set like a label
            U = g.leaves(int(rng.integers(g.n, 2 * g.n - 1))).astype(np.int64)
        else:
            m = int(rng.integers(2, 5)) if t % 5 == 0 else int(rng.integers(2, n))
            U = np.sort(rng.choice(n, m, replace=False)).astype(np.int64)
        if U.size < 2:
            continue
        T = float(rng.choice([1.0, 1.7]))
        tree = k.tree(U)
        _, _, nu, res, assign = k._draw_split(tree, rng, T)
        parts = k._parts_of(tree, nu, assign, int(res[2]))
        if rng.random() < 0.3:
            x, y = parts[0][-1], parts[1][0]
            parts = [np.sort(np.where(p == x, y, np.where(p == y, x, p))) for p in parts]
        parts.sort(key=lambda p: int(p[0]))
        yield U, parts, T


def _around(k, parts, T):
    """The contracted tree of the merge of ``parts`` around the smaller ones
    (and the added items, in the order of its ``leaf``)."""
    keep = max(range(len(parts)), key=lambda g: parts[g].size)
    small = [g for g in range(len(parts)) if g != keep]
    b = np.concatenate([parts[g] for g in small]).astype(np.int64)
    part_of = np.repeat(np.array(small, np.int64), [parts[g].size for g in small])
    arrays, logw, leaf = merged_tree(k._f, k.tree(parts[keep]), b, k._lift, k._lift_cache,
                                     k.vstats, k._leaf_sc, T, k.split_floor)
    return arrays, logw, leaf, part_of, keep, b


def _assert_same_split_sum(k, args, tree_u, parts, T, rng):
    """The contracted tree's split sum (``k._logsum(*args, stop)``) against
    the whole tree(U)'s: -inf together, else equal to 1e-12, and at a
    random finite stop the same decision (exact when not below it).
    Returns whether the sum is finite."""
    whole = k._split_tree_logsum(tree_u, parts, T)
    around = k._logsum(*args, -math.inf)
    if math.isinf(whole):
        assert around == -math.inf
        return False
    assert around == pytest.approx(whole, abs=1e-12 * max(1.0, abs(whole)))
    stop = whole + float(rng.normal(0, 2))
    a = k._logsum(*args, stop)
    assert (a < stop) == (k._split_tree_logsum(tree_u, parts, T, stop=stop) < stop)
    if a >= stop:
        assert a == pytest.approx(whole, abs=1e-12 * max(1.0, abs(whole)))
    return True


@pytest.mark.parametrize("build,compiled", [("greedy", None), ("balanced", None),
                                            ("matching", None), ("balanced", False)])
def test_contracted_tree_gives_the_whole_trees_split_sum(build, compiled):
    """log Σ over the split paths that yield the parts, on the contracted
    tree and on the whole tree(U): the same to 1e-12 (the node weights'
    total is summed in another order), -inf together, and with a finite
    stop both exact or both below it."""
    k = _kernel(build, compiled, n=200 if compiled is None else 120)
    rng = np.random.default_rng(5)
    finite = infinite = 0
    for U, parts, T in _outcomes(k, rng, 90 if compiled is None else 25):
        (l, r, p, st, sz, sc, E), logw, leaf, part_of, keep, b = _around(k, parts, T)
        args = (l, r, p, st, sz, sc, E, leaf, part_of, keep, len(parts), logw, T, False)
        if _assert_same_split_sum(k, args, k.tree(U), parts, T, rng):
            finite += 1
        else:
            infinite += 1
    assert finite > 10 and infinite > 2


def _stale(k, rng, parts):
    """A last tree of the largest part A, of a set that lacks a few of A's
    items and holds a few others (of the other parts, or of no part), and
    the changes from it: (tree, the other parts' items and then the items
    A gained, their parts, the leaves of the tree A lost, A's index)."""
    keep = max(range(len(parts)), key=lambda g: parts[g].size)
    A = parts[keep]
    U = np.concatenate(parts)
    gained = rng.choice(A, int(rng.integers(0, min(4, A.size - 1) + 1)), replace=False)
    outside = np.setdiff1d(np.arange(k.model.n_vertices), U)
    lost = np.concatenate((rng.choice(np.setdiff1d(U, A), min(int(rng.integers(0, 3)),
                                                               U.size - A.size), replace=False),
                           rng.choice(outside, min(int(rng.integers(0, 3)), outside.size),
                                      replace=False)))
    old = np.sort(np.concatenate((np.setdiff1d(A, gained), lost))).astype(np.int64)
    small = [g for g in range(len(parts)) if g != keep]
    b = np.concatenate([parts[g] for g in small] + [np.sort(gained)]).astype(np.int64)
    part_of = np.repeat(np.array(small + [keep], np.int64),
                        [parts[g].size for g in small] + [gained.size])
    drop = np.searchsorted(old, np.sort(lost)).astype(np.int64)
    return k.tree(old), b, part_of, drop, keep


@pytest.mark.parametrize("build,compiled", [("greedy", None), ("balanced", None),
                                            ("balanced", False)])
def test_contracted_last_tree_with_the_changes_is_the_merged_sets_tree(build, compiled):
    """The contracted tree made from the largest label's *last* tree, with
    the items it gained since among the added items and the leaves of the
    items it lost dropped (``merged_tree(..., drop)``): every internal node
    is a node of tree(U) above an added or dropped item, statistics, size
    and score bit for bit, and its split sums are the whole tree(U)'s (to
    1e-12, -inf together, the same decision at a finite stop)."""
    k = _kernel(build, compiled, n=200 if compiled is None else 120)
    rng = np.random.default_rng(15)
    finite = infinite = 0
    for U, parts, T in _outcomes(k, rng, 90 if compiled is None else 40):
        if max(p.size for p in parts) < 4:
            continue
        tree_u = k.tree(U)
        old, b, part_of, drop, keep = _stale(k, rng, parts)
        (l, r, p, st, sz, sc, E), logw, leaf = merged_tree(
            k._f, old, b, k._lift, k._lift_cache, k.vstats, k._leaf_sc, T, k.split_floor, drop)
        assert logw.size == E - 1
        nodes = {}
        for w in range(tree_u.n, 2 * tree_u.n - 1):
            nodes[(int(tree_u.size[w]), tree_u.stats[w].tobytes())] = w
        for j in range(E - 1):
            w = nodes[(int(sz[E + j]), st[E + j].tobytes())]
            assert sc[E + j] == tree_u.score[w]
        args = (l, r, p, st, sz, sc, E, leaf, part_of, keep, len(parts), logw, T, False)
        if _assert_same_split_sum(k, args, tree_u, parts, T, rng):
            finite += 1
        else:
            infinite += 1
    assert finite > 10 and infinite > 2


@pytest.mark.parametrize("build", ["greedy", "balanced"])
def test_contracted_tree_is_the_whole_tree_around_the_added_items(build):
    """Every internal node of the contracted tree is a node of tree(U) above
    an added item, with its statistics, size and score bit for bit, and
    there is one for each of them; every leaf is an added item or a subtree
    of tree(U) without added items."""
    k = _kernel(build)
    rng = np.random.default_rng(9)
    orders = set()
    for U, parts, T in _outcomes(k, rng, 40):
        tree = k.tree(U)
        (l, r, p, st, sz, sc, E), logw, leaf, part_of, keep, b = _around(k, parts, T)
        # The hanging subtrees are put in leaf order by a pass over A's
        # leaves when there are many (more than m / 16), else by a sort.
        orders.add(16 * (E - b.size) > parts[keep].size)
        # Nodes of tree(U) above an added item, by their (sorted) item sets.
        above = {}
        for i in np.searchsorted(tree.items, b).tolist():
            v = int(tree.parent[i])
            while v >= 0:
                above[tree.leaves(v).tobytes()] = v
                v = int(tree.parent[v])
        assert E - 1 == len(above)
        assert logw.size == E - 1
        # Items under every contracted node, from its leaves.
        under = [None] * (2 * E - 1)
        pos = {}
        for t, item in enumerate(b.tolist()):
            pos[int(leaf[t])] = item
        whole_set = {tree.leaves(v).tobytes(): v for v in range(2 * tree.n - 1)}
        for v in range(E):
            if v in pos:
                under[v] = np.array([pos[v]], np.int64)
            else:  # a hanging subtree: find it in tree(U) by its statistics
                hits = [w for w in range(2 * tree.n - 1) if tree.size[w] == sz[v]
                        and np.array_equal(tree.stats[w], st[v]) and tree.score[w] == sc[v]]
                assert hits
                under[v] = tree.leaves(hits[0])
                assert not np.isin(under[v], b).any()
        for j in range(E - 1):
            under[E + j] = np.sort(np.concatenate((under[l[j]], under[r[j]])))
            w = above[under[E + j].tobytes()]
            assert whole_set[under[E + j].tobytes()] == w
            assert sz[E + j] == tree.size[w] and sc[E + j] == tree.score[w]
            np.testing.assert_array_equal(st[E + j], tree.stats[w])
    assert orders == {True, False}  # both orderings were checked


@pytest.mark.parametrize("build", ["greedy", "balanced"])
def test_kept_replay_sums_give_a_fresh_replays_value_for_any_stop(build):
    """:func:`moves._stopped_at` on the record of one whole replay returns,
    bit for bit, what a replay with that stop returns, for stops around
    every sum so far (stopped early, stopped and then computed whole, not
    stopped)."""
    k = _kernel(build)
    rng = np.random.default_rng(11)
    checked = 0
    for U, parts, T in _outcomes(k, rng, 60):
        (l, r, p, st, sz, sc, E), logw, leaf, part_of, keep, b = _around(k, parts, T)
        args = (l, r, p, st, sz, sc, E, leaf, part_of, keep, len(parts), logw, T, False)
        trace, found = np.empty(E), np.zeros(3, np.int64)
        whole = k._logsum(*args, -math.inf, trace, found)
        assert found[0] <= 1
        record = (int(found[0]), float(logw[found[1]]), trace[:found[2]].copy(), whole)
        if found[0] == 0:
            assert whole == -math.inf and _stopped_at(record, 0.0) == -math.inf
            continue
        marks = np.concatenate((record[1] + record[2], [whole]))
        stops = np.concatenate((marks, np.nextafter(marks, np.inf), marks + 1e-3,
                                marks - 1.0, [-1e300, 1e300]))
        for stop in stops.tolist():
            assert _stopped_at(record, stop) == k._logsum(*args, stop)
            checked += 1
    assert checked > 200


@pytest.mark.parametrize("build", ["greedy", "balanced"])
def test_records_of_replays_given_up_decide_later_stops_as_fresh_replays(build):
    """The record of a replay given up at a first stop (``_replay_record``:
    its sums so far up to where it stopped) gives, for any later stop,
    what a fresh replay with that stop returns, bit for bit, or None
    exactly when its sums so far do not decide; a record of a replay that
    did not stop gives every stop's value."""
    k = _kernel(build)
    rng = np.random.default_rng(12)
    decided = undecided = 0
    for U, parts, T in _outcomes(k, rng, 60):
        (l, r, p, st, sz, sc, E), logw, leaf, part_of, keep, b = _around(k, parts, T)
        args = (l, r, p, st, sz, sc, E, leaf, part_of, keep, len(parts), logw, T, False)
        trace, found = np.full(E, np.inf), np.zeros(3, np.int64)
        whole = k._logsum(*args, -math.inf, trace, found)
        if found[0] != 1:
            continue
        marks = float(logw[found[1]]) + trace[:found[2]]
        firsts = np.concatenate((marks, np.nextafter(marks, np.inf), marks + 0.5,
                                 [whole, -1e300, 1e300]))
        for first in rng.choice(firsts, 6).tolist():
            trace, found = np.full(E, np.inf), np.zeros(3, np.int64)
            value = k._logsum(*args, first, trace, found)
            record = _replay_record(found, logw, trace, value, first)
            assert value == k._logsum(*args, first)
            stopped = record[2].size > 0 and bool(record[2][-1] < first - record[1])
            assert (record[3] is None) == (record[2].size < marks.size or stopped)
            for stop in rng.choice(firsts, 8).tolist():
                got = _stopped_at(record, stop)
                if got is None:
                    undecided += 1
                    assert record[3] is None
                else:
                    decided += 1
                    assert got == k._logsum(*args, stop)
    assert decided > 100 and undecided > 10


@pytest.mark.parametrize("build", ["greedy", "balanced"])
def test_merges_priced_around_the_added_items_make_the_same_chain(build):
    """The kernel with the contracted trees (default) and with the whole
    tree of every merged set: the same moves, decisions, labels (names
    included), free lists and log α to 1e-9, step by step; repeated
    proposals come from the kept contracted trees."""
    data, _ = lee_choi_gaussians(260, seed=3)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    runs = []
    for around in (True, False):
        kernel = TreeGuided(model, tree_build=build)
        assert kernel.trees == "global"
        kernel.merge_around = around
        rng = np.random.default_rng(21)
        seed_compiled_rng(rng)
        state = model.new_state(np.random.default_rng(0).integers(0, 4, model.n_vertices))
        trace = []
        for _ in range(1500):
            info = kernel.step(state, rng)
            trace.append((info.move, info.accepted, info.log_accept_ratio,
                          state.partition.labels.copy(), state.partition.free_stack.copy()))
        runs.append((trace, kernel.counts, kernel))
    (a, ca, ka), (b, cb, kb) = runs
    assert ca == cb and ca["merge"][1] > 3
    assert len(ka._around) > 5 and len(kb._around) == 0
    for s, (x, y) in enumerate(zip(a, b)):
        assert x[:2] == y[:2], f"step {s}"
        assert x[2] == pytest.approx(y[2], abs=1e-9), f"step {s}"
        np.testing.assert_array_equal(x[3], y[3], err_msg=f"step {s}")
        np.testing.assert_array_equal(x[4], y[4], err_msg=f"step {s}")


def test_drawn_anchor_term_bounds_the_forward_merge_probability():
    """The first bound of a merge uses the drawn anchor's term in place of
    log q(X*|X), the sum over anchors: it is never larger."""
    k = _kernel("balanced")
    rng = np.random.default_rng(3)
    n = k.model.n_vertices
    for _ in range(40):
        labels = rng.integers(0, int(rng.integers(3, 9)), n)
        groups = k._groups(labels)
        infos = [k._info(g) for g in groups]
        P = sorted(rng.choice(len(infos), int(rng.integers(2, len(infos) + 1)), replace=False))
        rest = [infos[i] for i in range(len(infos)) if i not in P]
        from swcuts.samplers.tree_guided.trees import _Rest
        rest = _Rest.of(rest, k.vstats.shape[1])
        Pi = [infos[i] for i in P]
        T = float(rng.choice([0.7, 1.0, 2.0]))
        total = k._log_q_merge(Pi, rest, T)
        lp, _ = k._merge_logp(k._logd(Pi, Pi), T)
        for c in range(len(Pi)):
            _, l1 = k._merge_logp(k._logd([Pi[c]], rest)[0], T) if len(rest) else (None, [])
            term = (-math.log(len(Pi) + len(rest)) + float(np.delete(lp[c], c).sum())
                    + float(np.sum(l1)))
            assert term <= total + 1e-12


def test_members_of_several_labels_are_each_labels_members():
    """``_members_many``: the members of each label, ascending, concatenated,
    and their sizes; after items moved behind the kernel's back (a stale
    member index) still the labels' members."""
    k = _kernel("balanced", n=150)
    rng = np.random.default_rng(2)
    state = k.model.new_state(rng.integers(0, 6, 150))
    part = state.partition
    for t in range(30):
        labs = part.used_labels()
        pick = rng.choice(labs, int(rng.integers(1, labs.size + 1)), replace=False)
        cat, sizes = k._members_many(state, pick)
        want = [np.flatnonzero(part.labels == lab) for lab in pick]
        np.testing.assert_array_equal(sizes, [w.size for w in want])
        np.testing.assert_array_equal(cat, np.concatenate(want))
        if t % 3 == 0:  # another kernel moves a few items
            movers = rng.choice(150, 3, replace=False)
            part.relabel(movers, int(rng.choice(part.used_labels())))
        elif t % 3 == 1:  # ... or swaps two items' labels (the same sizes)
            i, j = rng.choice(150, 2, replace=False)
            li, lj = int(part.labels[i]), int(part.labels[j])
            part.relabel(np.array([i]), lj)
            part.relabel(np.array([j]), li)


@pytest.mark.parametrize("compiled", [None, False])
def test_kept_label_pairs_are_the_fresh_tables_bit_for_bit(compiled):
    """``pairs.LabelPairs``: the scores, log d, log p and log(1 - p) between
    the labels, kept for unchanged labels and recomputed for the others,
    are bit for bit the tables computed afresh, through a chain's moves and
    temperature changes; most labels are kept."""
    data, _ = lee_choi_gaussians(150, seed=6)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    k = TreeGuided(model, compiled=compiled)
    rng = np.random.default_rng(4)
    state = model.new_state(rng.integers(0, 8, 150))
    f = k._f
    seen = first = 0
    for t in range(60 if compiled is None else 15):
        for _ in range(3):
            k.step(state, rng)
        labs = state.partition.used_labels()
        S, n = k._label_stats(state, labs)
        T = [1.0, 1.0, 1.5][t % 3]
        sc, ld, lp, l1p = k._pairs.refresh(labs, S, n, T)
        sc0 = np.asarray(f.scores(f.sp, S, n), float)
        ld0 = f.logd(f.sp, S, sc0, n, S, sc0, n)
        lp0, l1p0 = k._merge_logp(ld0, T)
        for got, want in ((sc, sc0), (ld, ld0), (lp, lp0), (l1p, l1p0)):
            np.testing.assert_array_equal(got, want)
        if t == 0:
            first = k._pairs.recomputed
        else:
            seen += labs.size
    if compiled is None:  # (the short plain-Python chain still changes most labels)
        assert k._pairs.recomputed - first < seen / 2


def test_kept_contracted_trees_do_not_keep_label_trees_alive():
    """The kept contracted trees refer to the label trees they were made
    from weakly: once the kernel's caches drop the trees, they are freed."""
    import gc

    data, _ = lee_choi_gaussians(260, seed=3)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    kernel = TreeGuided(model)
    rng = np.random.default_rng(21)
    state = model.new_state(np.random.default_rng(0).integers(0, 4, model.n_vertices))
    for _ in range(800):
        kernel.step(state, rng)
    entries = list(kernel._around.values())
    assert len(entries) > 5 and any(e[0]() is not None for e in entries)
    kernel._trees.clear()
    kernel._labels.clear()
    gc.collect()
    assert all(e[0]() is None for e in entries)


@pytest.mark.parametrize("build,compiled", [("greedy", None), ("balanced", None),
                                            ("balanced", False)])
def test_label_trees_rebuilt_from_their_last_tree_are_the_trees_built_cold(build, compiled):
    """An induced tree built with the hints of the tree of a nearby set
    (a label before a few of its items moved; ``rebuild.induced_near``) is
    bit for bit the tree a fresh kernel builds, for sets that lose and gain
    items, also at the ends of the global leaf order."""
    from swcuts.samplers.tree_guided.rebuild import induced_near
    from swcuts.samplers.tree_guided.trees import Tree

    data, _ = lee_choi_gaussians(300, seed=4)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    warm = TreeGuided(model, trees="global", tree_build=build, compiled=compiled)
    rng = np.random.default_rng(7)
    order = warm.global_tree().order  # items by global leaf position
    items = np.sort(rng.choice(300, 120, replace=False)).astype(np.int64)
    old = warm.tree(items)
    hinted = 0
    for t in range(60 if compiled is None else 15):
        if t % 4 == 0:  # the first or last items of the global order
            swap = order[:3] if t % 8 == 0 else order[-3:]
        else:
            swap = rng.choice(300, int(rng.integers(1, 8)), replace=False)
        new = np.setxor1d(items, swap).astype(np.int64)
        out = induced_near(warm._f, old, new, warm._lifting(), warm._lift_cache, warm.vstats,
                           warm._leaf_sc)
        tree = Tree(new, out)
        cold = TreeGuided(model, trees="global", tree_build=build).tree(new)
        for name in ("left", "right", "parent", "size", "lo", "order", "stats", "score", "hkey"):
            np.testing.assert_array_equal(getattr(tree, name), getattr(cold, name),
                                          err_msg=name)
        hinted += 1
        if rng.random() < 0.7:
            items, old = new, tree
    assert hinted > 10
    # The kernel builds a changed label's tree from its last one.
    from swcuts.samplers.tree_guided import kernel as kernel_module

    calls = []

    def counted(*args):
        calls.append(1)
        return induced_near(*args)

    state = model.new_state(rng.integers(0, 3, 300))
    kernel = TreeGuided(model, trees="global", tree_build=build, compiled=compiled)
    saved = kernel_module.induced_near
    kernel_module.induced_near = counted
    try:
        for step in range(150 if compiled is None else 40):
            kernel.step(state, rng)
            if step % 10 == 0:
                for lab in state.partition.used_labels().tolist():
                    t = kernel._label_tree_of(state, lab)
                    cold = TreeGuided(model, trees="global", tree_build=build).tree(t.items)
                    np.testing.assert_array_equal(t.items, np.flatnonzero(state.labels == lab))
                    for name in ("left", "right", "stats", "score", "order"):
                        np.testing.assert_array_equal(getattr(t, name), getattr(cold, name))
    finally:
        kernel_module.induced_near = saved
    assert len(calls) > 3


@pytest.mark.parametrize("build", ["greedy", "balanced"])
def test_member_index_known_exact_between_other_kernels_moves(build):
    """The kernel's member index, trusted without checks while the
    partition's version shows only the kernel's own moves, is every label's
    member set whenever it is trusted, also when another kernel (compiled
    Gibbs sweeps, which move items through ``relabel_vertices``) moves
    items between the kernel's steps; after such moves it is not trusted
    until checked or rebuilt."""
    data, _ = lee_choi_gaussians(300, seed=5)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    kernel = TreeGuided(model, tree_build=build)
    rng = np.random.default_rng(3)
    seed_compiled_rng(rng)
    state = model.new_state(np.random.default_rng(0).integers(0, 5, 300))
    trusted = 0
    for t in range(1500):
        kernel.step(state, rng)
        index = kernel._members_index(state)
        if index.current(state.partition):
            trusted += 1
            for lab, lst in index.lists.items():
                np.testing.assert_array_equal(lst, np.flatnonzero(state.partition.labels == lab))
        if t % 50 == 7:
            before = state.partition.labels.copy()
            random_scan(model, state, rng)  # another kernel's moves
            if not np.array_equal(before, state.partition.labels):
                assert not index.current(state.partition)
    assert trusted > 1000
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-7)


def split_possible(tree, b_items, part_of, big, lift, drop=None):
    """Whether a split path of the tree of the merged set U =
    ``tree.items`` (without the leaves ``drop``) ∪ ``b_items`` yields its
    parts (``part_of`` of each item of ``b_items``, A's part ``big``), as
    :func:`merged_tree` and the split sum on it would find, without the
    contracted tree: O(|B| log m)
    (:func:`_boundaries`). When it is False the reverse split's
    probability is 0 (the merge is rejected)."""
    gpos, hmin, lg, _ = lift
    dead = np.zeros(tree.n, np.bool_)
    if drop is not None and len(drop):
        dead[tree.lo[np.asarray(drop, np.int64)]] = True
    pos = gpos[b_items]
    o = np.argsort(pos, kind="stable")
    return bool(_boundaries(_gp_of(tree, gpos), dead, np.ascontiguousarray(pos[o]),
                            np.ascontiguousarray(np.asarray(part_of, np.int64)[o]), int(big),
                            hmin, lg)[4])


@pytest.mark.parametrize("build", ["greedy", "balanced", "matching"])
def test_split_possible_is_whether_the_whole_trees_split_sum_is_finite(build):
    """``split_possible`` (from global positions, no tree of U) is True
    exactly when the split sum of the whole tree(U) is finite: from the
    largest part's tree, and from a last tree of it with the changes since
    (items gained among the added items, the leaves of the items lost
    dropped)."""
    k = _kernel(build)
    rng = np.random.default_rng(25)
    seen = {True: 0, False: 0}
    for U, parts, T in _outcomes(k, rng, 240):
        finite = math.isfinite(k._split_tree_logsum(k.tree(U), parts, T))
        seen[finite] += 1
        keep = max(range(len(parts)), key=lambda g: parts[g].size)
        small = [g for g in range(len(parts)) if g != keep]
        b = np.concatenate([parts[g] for g in small]).astype(np.int64)
        part_of = np.repeat(np.array(small, np.int64), [parts[g].size for g in small])
        assert split_possible(k.tree(parts[keep]), b, part_of, keep, k._lift) == finite
        if max(p.size for p in parts) >= 4:
            old, b, part_of, drop, keep = _stale(k, rng, parts)
            assert split_possible(old, b, part_of, keep, k._lift, drop) == finite
    assert seen[True] > 50 and seen[False] > 20


@pytest.mark.parametrize("build,compiled", [("greedy", None), ("balanced", None),
                                            ("matching", None), ("balanced", False)])
def test_root_bound_is_the_first_choice_of_the_whole_trees_replay(build, compiled):
    """The root bound of a merge's reverse split (``merged.root_sides`` and
    ``_root_bound``: no tree of U) against the whole tree(U): -inf exactly
    when no split path yields the parts; else the replay's first choice (the
    root's, to 1e-9; 0 when the split node is the root), never below the
    split sum; the same bits from the largest part's tree, from a last tree
    with the changes since, and from the whole-tree path (which returns it
    at a stop above it)."""
    k = _kernel(build, compiled, n=200 if compiled is None else 120)
    rng = np.random.default_rng(35)
    seen = {"none": 0, "root": 0, "choice": 0}
    for U, parts, T in _outcomes(k, rng, 150 if compiled is None else 40):
        tree = k.tree(U)
        keep = max(range(len(parts)), key=lambda g: parts[g].size)
        small = [g for g in range(len(parts)) if g != keep]
        b = np.concatenate([parts[g] for g in small]).astype(np.int64)
        part_of = np.repeat(np.array(small, np.int64), [parts[g].size for g in small])
        bound = k._bound_around(k.tree(parts[keep]), b, part_of, keep, len(parts), T)
        leaves = np.searchsorted(tree.items, b).astype(np.int64)
        trace, found = np.full(tree.n, np.inf), np.zeros(3, np.int64)
        whole = k._logsum(tree.left, tree.right, tree.parent, tree.stats, tree.size, tree.score,
                          tree.n, leaves, part_of, keep, len(parts),
                          tree.node_log_weights(T, k.split_floor), T, False, -math.inf, trace,
                          found)
        if whole == -math.inf:
            assert bound == -math.inf
            seen["none"] += 1
        else:
            assert found[0] == 1 and bound >= whole - 1e-12  # (log 1 rounds to 7e-18)
            if found[2] == 0:
                assert bound == 0.0
                seen["root"] += 1
            else:
                assert bound == pytest.approx(trace[0], abs=1e-9)
                seen["choice"] += 1
        if bound > -math.inf:
            # The whole-tree path returns the bound itself at a stop above it.
            assert k._split_tree_logsum(tree, parts, T, stop=bound + 0.5) == bound
        if max(p.size for p in parts) >= 4:
            old, b2, p2, drop, keep2 = _stale(k, rng, parts)
            assert k._bound_around(old, b2, p2, keep2, len(parts), T, drop) == bound
    assert min(seen.values()) > (2 if compiled is None else 0) and seen["choice"] > 10


def test_compiled_root_bound_is_its_plain_python_copy():
    """``walks._root_bound`` (compiled) against the same function run as
    plain Python (``_Fns(compiled=False)``, numpy scores): the same bound to
    1e-12 on merges of random outcomes, -inf and 0 included."""
    from swcuts.samplers.tree_guided.algorithms import _Fns

    k = _kernel("greedy")
    plain = _Fns(False, k._f.sp)
    gpos, hmin, lg, _ = k._lifting()
    rng = np.random.default_rng(45)
    values = []
    for U, parts, T in _outcomes(k, rng, 120):
        keep = max(range(len(parts)), key=lambda g: parts[g].size)
        small = [g for g in range(len(parts)) if g != keep]
        tree = k.tree(parts[keep])
        gp = np.ascontiguousarray(gpos[tree.items[tree.order]])
        b = np.concatenate([parts[g] for g in small]).astype(np.int64)
        part_of = np.repeat(np.array(small, np.int64), [parts[g].size for g in small])
        args = (gp, tree.stats, tree.order, np.zeros(tree.n, np.bool_), gpos, b, part_of, keep,
                len(parts), k.vstats, hmin, lg, 1.0 / T, k.log_wnew)
        got = k._f.root_bound(k._f.sp, *args)
        want = plain.root_bound(k._f.sp, *args)
        assert got == pytest.approx(want, abs=1e-12 * max(1.0, abs(want))) or got == want
        values.append(got)
    values = np.array(values)
    assert (values == -np.inf).any() and (values == 0).any()
    assert (np.isfinite(values) & (values < 0)).sum() > 20
