"""Tree-guided MCMC (Lee & Choi, seed 004): the kernel's behaviour (exact ratio,
compiled and Python paths, trees, replayed splits, bookkeeping) and its front
ends. The exact-balance and visit-frequency evidence is in test_tree_guided.py."""

import math

import numpy as np
import pytest

import swcuts
import swcuts.segmentation.segment
from swcuts.evaluation.metrics.regions import adjusted_rand_index
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.partition import canonical
from swcuts.models.potts import PottsModel
from swcuts.samplers import KERNELS
from swcuts.samplers.tree_guided.kernel import TreeGuided

from test_tree_guided import _node_sets, boundary4, grey, grey_learned, grey_window, mixture6

# ---------------------------------------------------------------------------
# Kernel behaviour
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("factory", [mixture6, grey], ids=["mixture", "image"])
def test_step_uses_the_exact_ratio(factory):
    """Every accepted global move reports log α = Δ/T + log q(X|X*) - log q(X*|X)."""
    model = factory()
    kernel = TreeGuided(model, moves="global")
    rng = np.random.default_rng(3)
    state = model.new_state(np.zeros(model.n_vertices, np.int64))
    T = 1.5
    checked = 0
    for _ in range(300):
        before = state.labels.copy()
        info = kernel.step(state, rng, T)
        assert info.move in ("split", "merge")
        if info.accepted:
            after = state.labels.copy()
            assert info.log_accept_ratio == pytest.approx(
                kernel.log_acceptance(before, after, T), abs=1e-8)
            checked += 1
        else:
            assert np.array_equal(state.labels, before)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    assert checked > 20


@pytest.mark.parametrize("factory", [mixture6, grey, grey_window], ids=["mixture", "image", "window"])
def test_compiled_and_python_paths_agree(factory):
    model = factory()
    runs = []
    for compiled in (True, False):
        kernel = TreeGuided(model, compiled=compiled)
        rng = np.random.default_rng(8)
        state = model.new_state(np.zeros(model.n_vertices, np.int64))
        trace = []
        for _ in range(300):
            info = kernel.step(state, rng)
            trace.append((canonical(state.labels), info.move, round(info.log_accept_ratio, 8)))
        runs.append(trace)
    assert runs[0] == runs[1]


def _connected(graph, items):
    items = set(int(v) for v in items)
    start = next(iter(items))
    seen, stack = {start}, [start]
    while stack:
        v = stack.pop()
        for u in graph.neighbors(v).tolist():
            if u in items and u not in seen:
                seen.add(u)
                stack.append(u)
    return seen == items


def test_trees_are_functions_of_the_vertex_set_and_connected_on_graphs():
    atoms = np.arange(20).reshape(4, 5)
    rng = np.random.default_rng(0)
    img = rng.random((4, 5, 1))
    g = RegionGraph.from_labels(atoms)
    from swcuts.models.image import ImageModel

    model = ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05)
    k1 = TreeGuided(model)
    k2 = TreeGuided(model, compiled=False)
    connected = np.array([0, 1, 2, 5, 6, 7, 11, 12, 16], np.int64)
    # Build other trees first in k1 so that its caches differ.
    k1.tree(np.arange(20))
    t1, t2 = k1.tree(connected), k2.tree(connected)
    for attr in ("left", "right", "parent", "size"):
        assert np.array_equal(getattr(t1, attr), getattr(t2, attr))
    assert np.allclose(t1.logd, t2.logd, rtol=0, atol=1e-9)
    # Every node of a connected label's tree is a connected set of atoms.
    for v in range(2 * t1.n - 1):
        assert _connected(g, t1.leaves(v))
    # A disconnected label: two pieces, each a connected subtree, joined at the root.
    pieces = np.array([0, 1, 5, 6, 13, 14, 18, 19], np.int64)
    t = k1.tree(pieces)
    l, r = t.children(t.root)
    assert {tuple(t.leaves(l)), tuple(t.leaves(r))} == {(0, 1, 5, 6), (13, 14, 18, 19)}
    for v in range(2 * t.n - 2):  # all but the root
        assert _connected(g, t.leaves(v))


def test_mixture_trees_without_graph_use_every_pair_or_knn():
    rng = np.random.default_rng(1)
    small = MixtureModel(rng.normal(size=(30, 2)), "gaussian")
    assert not TreeGuided(small)._use_graph  # every pair (BHC)
    big = MixtureModel(rng.normal(size=(150, 2)), "gaussian")
    kern = TreeGuided(big)
    assert kern._use_graph  # k-nearest-neighbour candidates above 100 items
    t = kern.tree(np.arange(150))
    assert t.n == 150 and np.all(t.size[t.n:] >= 2) and t.size[t.root] == 150
    # Same tree with every pair as candidates when asked.
    t_full = TreeGuided(big, neighbours=None).tree(np.arange(150))
    assert t_full.size[t_full.root] == 150


def test_induced_trees_are_the_global_tree_restricted_to_the_set():
    """trees="global": the tree of a set S has one internal node per node v
    of the global tree whose two children both meet S, holding S ∩ leaves(v);
    node statistics and scores are those of that set."""
    rng = np.random.default_rng(5)
    model = MixtureModel(rng.normal(size=(150, 2)), "gaussian")
    kernel = TreeGuided(model)
    assert kernel.trees == "global"
    g = kernel.global_tree()
    glv = [set(g.leaves(v).tolist()) for v in range(2 * g.n - 1)]
    for size in (2, 3, 17, 60, 150):
        S = np.sort(rng.choice(150, size, replace=False))
        t = kernel.tree(S)
        Sset = set(S.tolist())
        expect = set()
        for v in range(g.n, 2 * g.n - 1):
            l, r = g.children(v)
            if glv[l] & Sset and glv[r] & Sset:
                expect.add(frozenset(glv[v] & Sset))
        assert _node_sets(t) == expect
        assert t.size[t.root] == size and np.all(t.parent[:-1] > np.arange(2 * t.n - 2))
        for v in range(2 * t.n - 1):
            items = t.leaves(v)
            np.testing.assert_allclose(t.stats[v], model.vstats[items].sum(axis=0), atol=1e-9)
            assert t.score[v] == pytest.approx(kernel._info(items).score, abs=1e-9)
    # A function of the set: the same tree from a kernel with other caches.
    other = TreeGuided(model, compiled=False)
    S = np.sort(rng.choice(150, 40, replace=False))
    other.tree(np.arange(10))
    t1, t2 = kernel.tree(S), other.tree(S)
    for attr in ("left", "right", "parent", "size"):
        assert np.array_equal(getattr(t1, attr), getattr(t2, attr))
    assert np.allclose(t1.logd, t2.logd, atol=1e-9)
    assert TreeGuided(model, trees="set").trees == "set"
    with pytest.raises(ValueError):
        TreeGuided(grey(), trees="global")


def _leaf_depths(tree):
    depth = np.zeros(2 * tree.n - 1, np.int64)
    for v in range(2 * tree.n - 3, -1, -1):  # parents have larger ids
        depth[v] = depth[tree.parent[v]] + 1
    return depth[:tree.n]


@pytest.mark.parametrize("build", ["balanced", "matching"])
@pytest.mark.parametrize("neighbours", ["auto", None])
def test_balanced_global_tree_is_shallow_and_a_function_of_the_data(neighbours, build):
    """tree_build="balanced" (the greedy tree, heavy paths rebalanced) and
    "matching" (the greedy joins by matching rounds): a tree over all items
    (every node's leaves are its children's), the same compiled and in
    plain Python, and shallow where the greedy tree is a near-caterpillar (DP score: the largest cluster absorbs items one by one)."""
    from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
    data, _ = lee_choi_gaussians(400, seed=3)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    kernel = TreeGuided(model, neighbours=neighbours, tree_build=build)
    assert kernel._use_graph == (neighbours == "auto")
    g = kernel.global_tree()
    assert g.size[g.root] == 400 and np.all(g.parent[:-1] > np.arange(2 * g.n - 2))
    assert np.array_equal(np.sort(g.order), np.arange(400))
    for v in range(g.n, 2 * g.n - 1):
        l, r = g.children(v)
        assert np.array_equal(g.leaves(v), np.union1d(g.leaves(l), g.leaves(r)))
    depth = _leaf_depths(g)
    assert depth.max() <= 2 * math.ceil(math.log2(400))
    greedy = TreeGuided(model, neighbours=neighbours, tree_build="greedy").global_tree()
    assert _leaf_depths(greedy).mean() > 1.5 * depth.mean()
    py = TreeGuided(model, neighbours=neighbours, tree_build=build, compiled=False).global_tree()
    for attr in ("left", "right", "parent", "size", "order"):
        assert np.array_equal(getattr(g, attr), getattr(py, attr))
    assert np.allclose(g.logd, py.logd, atol=1e-9)
    with pytest.raises(ValueError):
        TreeGuided(model, tree_build="bushy")


def test_replayed_split_prices_the_drawn_walk_and_stops_below_a_threshold():
    """The reverse split's replay (root first) gives the drawn walk's log
    probability; with a threshold it may stop early, returning an upper
    bound below the threshold, and never changes a value above it."""
    from swcuts.samplers.tree_guided.trees import _leaf_groups

    rng = np.random.default_rng(9)
    model = MixtureModel(rng.normal(size=(150, 2)), "gaussian")
    for compiled in (True, False):
        kernel = TreeGuided(model, compiled=compiled)
        f, tree = kernel._f, kernel.tree(np.arange(150, dtype=np.int64))
        n = tree.n
        logw = tree.node_log_weights(1.0, kernel.split_floor)
        stopped = 0
        for nu in rng.choice(np.arange(n, 2 * n - 1), 40, replace=False).tolist():
            assign = np.empty(n, np.int64)
            lp, _, k = f.walk(f.sp, tree.left, tree.right, tree.parent, tree.stats, tree.size,
                              tree.score, n, nu, 1.0, kernel.log_wnew, rng.random(n), assign)
            groups = _leaf_groups(tree.left, tree.right, tree.parent, tree.lo, tree.order,
                                  tree.size, n, nu, assign)
            parts = [np.sort(tree.items[groups == g]) for g in range(k)]
            want = logw[nu - n] + lp
            assert kernel._split_tree_logsum(tree, parts, 1.0) == pytest.approx(want, abs=1e-9)
            assert kernel._split_tree_logsum(tree, parts, 1.0, stop=want - 1.0) == pytest.approx(
                want, abs=1e-9)
            bound = kernel._split_tree_logsum(tree, parts, 1.0, stop=want + 1.0)
            assert want - 1e-9 <= bound < want + 1.0
            stopped += bound > want + 1e-6
        assert stopped > 0


def test_member_index_follows_every_move():
    """The kernel keeps its member index current through global and local
    moves (no pass over all items per move), and exact after another
    kernel moved items (the stale entries are detected and rebuilt)."""
    from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians
    from swcuts.samplers.gibbs import Gibbs

    data, truth = lee_choi_gaussians(260, seed=3)
    model = MixtureModel(data, "gaussian", alpha=1.0, preset="lee-choi")
    kernel = TreeGuided(model, local_max=8)
    rng = np.random.default_rng(6)
    state = model.new_state(truth)
    gibbs = Gibbs(model)
    for it in range(400):
        kernel.step(state, rng)
        if it == 200:
            for _ in range(300):
                gibbs.step(state, rng)
    lists = kernel._members_index(state).lists
    part = state.partition
    assert sorted(lists) == part.used_labels().tolist()
    for lab, lst in lists.items():
        assert np.array_equal(lst, np.flatnonzero(part.labels == lab))
        # The infos and trees kept with the labels are those of their sets.
        info = kernel._label_info(state, lab)
        assert np.array_equal(info.items, lst)
        np.testing.assert_allclose(info.stats, model.vstats[lst].sum(axis=0), atol=1e-9)
        assert np.array_equal(kernel._label_tree(lab, info).items, lst)
    assert kernel.counts["split"][1] + kernel.counts["merge"][1] > 0
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-7)


def test_local_move_choice_does_not_depend_on_the_state():
    model = mixture6()
    kernel = TreeGuided(model, moves="local", local_max=3)
    for i in range(model.n_vertices):
        cand, logw = kernel.local_subtree(i)
        g = kernel.global_tree()
        assert np.all(g.size[cand] <= 3)
        assert logw.size == 0 or math.isclose(np.exp(logw).sum(), 1.0)
    # The global tree is built once, from the data alone.
    assert kernel.global_tree() is kernel.global_tree()


def test_iteration_runs_the_papers_cycle():
    model = mixture6()
    kernel = TreeGuided(model, G=5)
    rng = np.random.default_rng(4)
    state = model.new_state(np.zeros(6, np.int64))
    for _ in range(20):
        info = kernel.iteration(state, rng)
        assert info.move == "iteration"
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)
    assert kernel.counts["local"][0] >= 20


def test_bad_arguments_and_models():
    model = mixture6()
    with pytest.raises(ValueError):
        TreeGuided(model, moves="sideways")
    with pytest.raises(ValueError):
        TreeGuided(model, ratio="approx")
    with pytest.raises(ValueError):
        TreeGuided(model, merge_floor=0.5)
    potts = PottsModel(RegionGraph.from_labels(np.arange(6).reshape(2, 3)), n_labels=2, beta=0.5)
    with pytest.raises(ValueError):
        TreeGuided(potts)
    kernel = TreeGuided(model)
    state = model.new_state(np.zeros(6, np.int64))
    with pytest.raises(ValueError):
        kernel.step(state, np.random.default_rng(0), temperature=0.0)


class _Delegate:
    """Another class with the same attributes: the kernel must not need the class."""

    def __init__(self, model, **hide):
        self._model, self._hide = model, hide

    def __getattr__(self, name):
        if name in self._hide:
            raise AttributeError(name)
        return getattr(self._model, name)


@pytest.mark.parametrize("factory", [mixture6, grey], ids=["mixture", "image"])
def test_kernel_asks_the_model_for_its_cluster_score(factory):
    model = factory()
    runs = []
    for m in (model, _Delegate(model)):
        kernel = TreeGuided(m)
        rng = np.random.default_rng(3)
        state = model.new_state(np.zeros(model.n_vertices, np.int64))
        runs.append([(canonical(state.labels), kernel.step(state, rng).move) for _ in range(60)])
    assert runs[0] == runs[1]
    with pytest.raises(TypeError, match="cluster_score"):
        TreeGuided(_Delegate(model, cluster_score=True))


def test_mixture_cluster_score_is_the_dp_potential():
    # s(A) = log α + lgamma(|A|) + log m(x_A); the DP's one-block prior is
    # s(A) − log m − (lgamma(α + n) − lgamma(α)), so s(V) = log π(one block) + that.
    model = mixture6()
    n = model.n_vertices
    for compiled in (True, False):
        kernel = TreeGuided(model, compiled=compiled)
        everything = kernel._info(np.arange(n, dtype=np.int64)).score
        expected = model.log_target(np.zeros(n, np.int64)) + math.lgamma(2.0 + n) - math.lgamma(2.0)
        assert everything == pytest.approx(expected, abs=1e-9)
        assert everything != pytest.approx(model.log_target(np.zeros(n, np.int64)), abs=1e-3)


def test_single_item_label_cannot_split():
    from swcuts.models.image import ImageModel

    atoms = np.zeros((2, 2), np.int64)
    model = ImageModel(np.full((2, 2), 0.5), atoms, RegionGraph.from_labels(atoms), bins=4)
    kernel = TreeGuided(model, moves="global")
    state = model.new_state(np.zeros(1, np.int64))
    info = kernel.step(state, np.random.default_rng(0))
    assert info.move == "split" and not info.accepted


# ---------------------------------------------------------------------------
# Front ends
# ---------------------------------------------------------------------------


def test_registered():
    assert KERNELS["tree-guided"] is TreeGuided
    assert "tree-guided" in swcuts.SAMPLERS
    assert "tree-guided" in swcuts.segmentation.options.STEPS_PER_ATOM


def test_segment_smoke():
    rng = np.random.default_rng(0)
    img = np.zeros((40, 40))
    img[:, 20:] = 0.8
    img += 0.05 * rng.standard_normal(img.shape)
    res = swcuts.segment(np.clip(img, 0, 1), sampler="tree-guided", steps=200, seed=0)
    assert res.labels.shape == img.shape and res.steps == 200
    halves = np.repeat((np.arange(40) >= 20)[None, :], 40, axis=0).astype(np.int64)
    assert adjusted_rand_index(res.labels, halves) > 0.95  # the two halves, found
    again = swcuts.segment(np.clip(img, 0, 1), sampler="tree-guided", steps=200, seed=0)
    assert np.array_equal(res.labels, again.labels)


def test_cluster_smoke():
    from swcuts.evaluation.synthetic.clusters import lee_choi_gaussians

    data, truth = lee_choi_gaussians(n=260, seed=1)
    res = swcuts.cluster(data, model="gaussian", sampler="tree-guided", steps=300, seed=0)
    assert adjusted_rand_index(res.labels, truth) > 0.9  # seed 0: 0.98


@pytest.mark.parametrize("factory", [grey_window, grey_learned, boundary4],
                         ids=["window", "learned", "boundary"])
def test_compiled_local_move_makes_the_moves_of_gibbs_relabel(factory):
    """The image model's local move in compiled code
    (``targets.gibbs_sweep_image``) against ``gibbs_relabel`` called vertex
    by vertex (``compiled=False``), bit for bit: labels and log π after every
    step of both moves at three temperatures. Negative control: the
    compiled sweep with other uniforms leaves the path."""
    from swcuts.samplers import targets

    model = factory()
    paths = []
    for compiled, flip in ((True, False), (False, False), (True, True)):
        kernel = TreeGuided(model, compiled=compiled)
        assert kernel._image_gibbs is compiled
        rng = np.random.default_rng(5)
        state = model.new_state(np.zeros(model.n_vertices, np.int64))
        path = []
        sweep = targets.gibbs_sweep_image
        if flip:
            targets_sweep = sweep

            def sweep_other(ma, lab, size, fs, nf, items, u, T, lp):
                return targets_sweep(ma, lab, size, fs, nf, items, 1.0 - u, T, lp)

            import swcuts.samplers.tree_guided.kernel as kmod
            saved, kmod.gibbs_sweep_image = kmod.gibbs_sweep_image, sweep_other
        try:
            for t in range(600):
                kernel.step(state, rng, (1.0, 1.5, 2.0)[t % 3])
                path.append(state.labels.tobytes() + np.float64(state.log_pi).tobytes())
        finally:
            if flip:
                kmod.gibbs_sweep_image = saved
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)
        assert kernel.counts["local"][0] > 200
        paths.append(path)
    assert paths[0] == paths[1]
    assert paths[2] != paths[0]


def test_image_subclass_with_its_own_delta_keeps_gibbs_relabel():
    """The compiled local move is the image model's own delta and apply: a
    subclass that overrides them keeps the Python Gibbs updates, which call them."""
    from swcuts.models.image import ImageModel

    class Counting(ImageModel):
        calls = 0

        def delta(self, state, R, new_label):
            Counting.calls += 1
            return super().delta(state, R, new_label)

    model = grey()
    sub = Counting.__new__(Counting)
    sub.__dict__.update(model.__dict__)
    assert TreeGuided(model)._image_gibbs
    kernel = TreeGuided(sub, moves="local")
    assert not kernel._image_gibbs
    rng = np.random.default_rng(0)
    state = sub.new_state(np.zeros(sub.n_vertices, np.int64))
    for _ in range(20):
        kernel.step(state, rng)
    assert Counting.calls > 0
