"""The tree-guided kernel's moves priced from statistics (no item visited by a
rejected global move) give the same chain as the moves priced from items.

The pieces (``docs/algorithms/tree_guided.md``, "The cost of a move"):
``MixtureModel.delta_regroup`` (Δ log π of a merge or split from label or
part statistics), the walk's group statistics and smallest items
(``_walk_groups_impl``, ``Tree.group_firsts``), the skipped uniforms of a
walk (``moves._uniforms``) and the free list a rejected multi-part move
leaves (``moves._free_list_as_if_undone``). Each is checked against the
item-by-item computation it replaces, and the whole kernel against its
item path (the same seeded chain, step by step).
"""

import numpy as np
import pytest

from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
from swcuts.models.mixture.likelihoods import BetaBernoulli
from swcuts.models.partition import Partition
from swcuts.samplers.tree_guided.kernel import TreeGuided
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers.tree_guided.freelist import _free_list_as_if_undone
from swcuts.samplers.tree_guided.walks import _uniforms
from swcuts.samplers.tree_guided.trees import _leaf_groups


class PythonBetaBernoulli(BetaBernoulli):
    """The Beta-Bernoulli marginal through Python (``kind = None``)."""

    kind = None

    def log_marginal(self, stat) -> float:
        from swcuts.models.mixture.marginals import KIND_BETA_BERNOULLI, log_marginal

        return float(log_marginal.py_func(KIND_BETA_BERNOULLI, np.asarray(stat, float),
                                          self.params))


def _models():
    rng = np.random.default_rng(0)
    binary = (rng.random((40, 5)) < 0.4).astype(int)
    data, _ = lee_choi_gaussians(120, seed=1)
    return {
        "niw": MixtureModel(data, "gaussian", alpha=1.3, preset="lee-choi"),
        "beta-bernoulli": MixtureModel(binary, "beta-bernoulli", alpha=0.7),
        "python": MixtureModel(binary, PythonBetaBernoulli(), alpha=0.7),
        "nggp": MixtureModel(binary, "beta-bernoulli", alpha=1.0, prior="nggp", sigma=0.4),
    }


@pytest.mark.parametrize("name", ["niw", "beta-bernoulli", "python", "nggp"])
def test_delta_regroup_is_the_change_of_log_target(name):
    model = _models()[name]
    rng = np.random.default_rng(5)
    n = model.n_vertices
    for _ in range(20):
        labels = rng.integers(0, 5, n)
        state = model.new_state(labels)
        part = state.partition
        used = part.used_labels()
        # A merge of 2-3 labels into the first.
        P = rng.choice(used, size=min(len(used), int(rng.integers(2, 4))), replace=False)
        after = labels.copy()
        after[np.isin(labels, P)] = P[0]
        d = model.delta_regroup(state, P, state.stats[P].sum(axis=0), [part.size[P].sum()])
        want = model.log_target(after, state.u) - model.log_target(labels, state.u)
        assert d == pytest.approx(want, abs=1e-8)
        assert d == pytest.approx(model.delta(state, np.flatnonzero(after != labels), P[0]),
                                  abs=1e-9)
        # A split of one label into 2-3 parts.
        c = int(used[np.argmax(part.size[used])])
        items = np.flatnonzero(labels == c)
        g = rng.integers(0, int(rng.integers(2, 4)), items.size)
        after = labels.copy()
        after[items] = np.where(g == 0, c, n + g)  # fresh names
        groups = [items[g == t] for t in np.unique(g)]
        d = model.delta_regroup(state, [c], [model.vstats[p].sum(axis=0) for p in groups],
                                [p.size for p in groups])
        want = (model.log_target(np.unique(after, return_inverse=True)[1], state.u)
                - model.log_target(labels, state.u))
        assert d == pytest.approx(want, abs=1e-8)


def test_walk_groups_are_the_parts_of_the_split():
    """The walk's group statistics, sizes and scores are those of the
    parts that the split makes, and their smallest items too."""
    data, _ = lee_choi_gaussians(300, seed=2)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    rng = np.random.default_rng(3)
    for compiled in (True, False):
        kernel = TreeGuided(model, compiled=compiled)
        f = kernel._f
        tree = kernel.tree(np.sort(rng.choice(300, 180, replace=False)).astype(np.int64))
        n = tree.n
        for nu in rng.choice(np.arange(n, 2 * n - 1), 25, replace=False).tolist():
            k = tree.ancestors(nu)
            assign = np.empty(k + 1, np.int64)
            u = rng.random(k)
            lp, t, ng, gstats, gsize, gsc = f.walk_groups(
                f.sp, tree.left, tree.right, tree.parent, tree.stats, tree.size, tree.score, n,
                nu, 1.0, kernel.log_wnew, u, assign)
            assert t == k
            lp2, _, ng2 = f.walk(f.sp, tree.left, tree.right, tree.parent, tree.stats, tree.size,
                                 tree.score, n, nu, 1.0, kernel.log_wnew, u, assign.copy())
            assert (lp2, ng2) == (lp, ng)
            leafgroup = _leaf_groups(tree.left, tree.right, tree.parent, tree.lo, tree.order,
                                     tree.size, n, nu, assign)
            firsts = tree.group_firsts(nu, assign, ng)
            for g in range(ng):
                items = tree.items[leafgroup == g]
                assert gsize[g] == items.size
                np.testing.assert_allclose(gstats[g], model.vstats[items].sum(axis=0),
                                           rtol=1e-12, atol=1e-9)
                assert gsc[g] == pytest.approx(kernel._info(items).score, abs=1e-8)
                assert firsts[g] == items.min()


@pytest.mark.parametrize("gen", ["pcg64", "pcg64dxsm", "mt19937"])
def test_skipped_uniforms_leave_the_generator_as_drawing_them(gen):
    bitgens = {"pcg64": np.random.PCG64, "pcg64dxsm": np.random.PCG64DXSM,
               "mt19937": np.random.MT19937}
    for n, k, ints in ((10, 3, True), (10, 3, False), (500, 0, True), (7, 7, True)):
        a = np.random.Generator(bitgens[gen](11))
        b = np.random.Generator(bitgens[gen](11))
        if ints:  # integers() leaves half of a 64-bit output buffered
            a.integers(9), b.integers(9)
        want = a.random(n)[:k]
        got = _uniforms(b, n, k)
        np.testing.assert_array_equal(got[:k], want)
        np.testing.assert_array_equal(a.integers(0, 9, 5), b.integers(0, 9, 5))
        assert a.random() == b.random()


def test_free_list_as_if_a_rejected_move_was_applied_and_undone():
    """The emulated free list equals the one that relabelling the parts
    and moving them back leaves (splits into fresh labels, merges)."""
    rng = np.random.default_rng(4)
    changed = 0
    for _ in range(200):
        n = int(rng.integers(8, 30))
        labels = rng.integers(0, int(rng.integers(2, 8)), n)
        real, fake = Partition(labels), Partition(labels)
        for _ in range(3):  # scramble the free list as a chain would
            v = int(rng.integers(n))
            lab = real.fresh_label() if rng.random() < 0.5 else int(rng.choice(real.used_labels()))
            real.relabel([v], lab)
            fake.relabel([v], lab)
        before = real.free_stack.copy()
        used = real.used_labels()
        if rng.random() < 0.5:  # split the largest label: k movers to fresh labels
            c = int(used[np.argmax(real.size[used])])
            items = np.flatnonzero(real.labels == c)
            k = int(min(items.size - 1, rng.integers(2, 4)))
            if k < 1:
                continue
            movers = [items[t::k + 1] for t in range(1, k + 1)]
            fresh = []
            for R in movers:
                fresh.append(real.fresh_label())
                real.relabel(R, fresh[-1])
            for R in movers:
                real.relabel(R, c)
            _free_list_as_if_undone(fake.free_stack, fake.n_free, np.zeros(0, np.int64), k)
        else:  # merge 2-4 labels into the first
            if used.size < 3:
                continue
            P = rng.choice(used, size=int(min(used.size, rng.integers(3, 5))), replace=False)
            movers = [(int(lab), np.flatnonzero(real.labels == lab)) for lab in P[1:]]
            for _, R in movers:
                real.relabel(R, int(P[0]))
            for lab, R in movers:
                real.relabel(R, lab)
            _free_list_as_if_undone(fake.free_stack, fake.n_free,
                                    np.array([lab for lab, _ in movers], np.int64), 0)
        np.testing.assert_array_equal(real.labels, fake.labels)
        np.testing.assert_array_equal(fake.free_stack, real.free_stack)
        assert fake.n_free[0] == real.n_free[0]
        changed += not np.array_equal(before, real.free_stack)
    assert changed > 20  # the emulation is not the identity


@pytest.mark.parametrize("case", ["toy-global-trees", "binary-set-trees", "nggp", "balanced"])
def test_statistics_path_is_the_item_path_step_by_step(case):
    """The same seeded chain whether a proposal is priced from statistics
    (the default for mixtures) or by applying it to the state (the path of
    models without ``delta_regroup``): the same moves, decisions, labels
    (names included) and log α to 1e-9."""
    if case == "binary-set-trees":
        model, options, steps = _models()["beta-bernoulli"], {}, 1500
    elif case == "nggp":
        data, _ = lee_choi_gaussians(120, seed=1)
        model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi", prior="nggp",
                             sigma=0.4)
        options, steps = {}, 1500
    else:
        data, _ = lee_choi_gaussians(260, seed=3)
        model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
        options = {"tree_build": "balanced"} if case == "balanced" else {}
        steps = 1500
    runs = []
    for by_stats in (True, False):
        kernel = TreeGuided(model, **options)
        if not by_stats:
            kernel._regroup = None
        rng = np.random.default_rng(21)
        seed_compiled_rng(rng)
        state = model.new_state(np.random.default_rng(0).integers(0, 4, model.n_vertices))
        trace = []
        for _ in range(steps):
            info = kernel.step(state, rng)
            trace.append((info.move, info.accepted, info.log_accept_ratio,
                          state.partition.labels.copy(), state.partition.free_stack.copy()))
        assert state.log_pi == pytest.approx(model.log_target(state.labels, state.u), abs=1e-7)
        runs.append((trace, kernel.counts))
    (a, ca), (b, cb) = runs
    assert ca == cb
    assert ca["split"][1] > 3 and ca["merge"][1] > 3
    assert sum(1 for x in a if x[0] != "local" and not x[1] and np.isfinite(x[2])) > 100
    for s, (x, y) in enumerate(zip(a, b)):
        assert x[:2] == y[:2], f"step {s}"
        assert x[2] == pytest.approx(y[2], abs=1e-9), f"step {s}"
        np.testing.assert_array_equal(x[3], y[3], err_msg=f"step {s}")
        np.testing.assert_array_equal(x[4], y[4], err_msg=f"step {s}")


@pytest.mark.parametrize("build", ["greedy", "balanced"])
def test_induced_trees_reusing_node_scores_are_the_trees_built_cold(build):
    """An induced tree built while the global nodes keep their last scores
    (sets that differ by a few items, as a label between two moves) is bit
    for bit the tree a fresh kernel builds, and every kept score is the
    score of the kept size and statistics."""
    data, _ = lee_choi_gaussians(400, seed=4)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    warm = TreeGuided(model, trees="global", tree_build=build)
    rng = np.random.default_rng(7)
    items = np.sort(rng.choice(400, 150, replace=False))
    for _ in range(30):
        swap = rng.choice(400, 6, replace=False)  # a few items in or out
        items = np.setxor1d(items, swap).astype(np.int64)
        t = warm.tree(items)
        cold = TreeGuided(model, trees="global", tree_build=build).tree(items)
        for name in ("left", "right", "parent", "size", "lo", "order", "stats", "score"):
            np.testing.assert_array_equal(getattr(t, name), getattr(cold, name), err_msg=name)
    c_size, c_stats, c_score = warm._lift_cache
    kept = np.flatnonzero(c_size > 0)
    assert kept.size > 100
    f = warm._f
    np.testing.assert_array_equal(c_score[kept], f.scores(f.sp, c_stats[kept], c_size[kept]))
