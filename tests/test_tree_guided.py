"""Tree-guided MCMC (Lee & Choi, seed 004) with an exact acceptance ratio.

Three kinds of evidence (DESIGN.md, "Correctness contract"):

1. **Exact detailed balance of the global move alone.** On 5-6 items every
   random path of one global move (anchor, merge set, split node, every
   StocInsert choice) is enumerated here, independently of the kernel's
   path sums, from the paper's procedure and the kernel's primitives (trees,
   merge probabilities, cluster scores). That gives the proposal matrix Q;
   the kernel's ``log_q`` must equal it (sum over every path), and with the
   kernel's own acceptance the transition matrix K must satisfy
   π_i K_ij = π_j K_ji to 1e-10. The paper's printed ratio (one path of a
   split, one anchor forward, a sum in reverse) must fail that check.
2. **The draws match the matrix.** One step from fixed states, many times:
   the outcome frequencies against the rows of K.
3. **Visit frequencies** of chains against the enumerated posterior (total
   variation < 1.5 × the iid noise floor and chi-square p > 1e-3), for the
   global move alone, the local move alone and both, on the image model
   (graph) and on a Dirichlet-process mixture (no graph).

Mixing and thinning. The exact K gives the relaxation time of the global
move alone: about 27 steps on the grey setting, but 70-240 steps on the
binary mixtures (low-probability "crossed" partitions, where every label
mixes items of two groups, are left only through improbable
split-then-merge sequences). The global move alone is therefore sampled on
the grey image (thin 30); on the mixture it is checked through the exact
matrix (detailed balance, πK = π, irreducibility) and the one-step draws,
and chains are sampled with the local move, alone and with the global move.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.sparse.csgraph import connected_components

from enumeration import compare, exact_distribution, iid_tv, set_partitions, visit_counts
from test_enumeration_kernels import (_assert_visits_match, colour_setting, grey_setting,
                                      grey_learned_setting, grey_window_setting, image4_boundary,
                                      image4_learned, image4_window, paper_twin)

import swcuts
import swcuts.segmentation.segment
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.potts import PottsModel
from swcuts.evaluation.metrics.regions import adjusted_rand_index
from swcuts.models.partition import canonical
from swcuts.samplers import KERNELS
from swcuts.samplers.tree_guided.kernel import TreeGuided
from swcuts.samplers.common import seed_compiled_rng

BINARY = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [1, 0, 0, 0],
                   [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 0]])
# Duplicate rows: exact ties in the tree construction.
BINARY_TIES = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 1], [0, 0, 1]])


def mixture5():
    return MixtureModel(BINARY[:5], "beta-bernoulli", alpha=1.0)


def mixture_ties():
    return MixtureModel(BINARY_TIES, "beta-bernoulli", alpha=1.0)


# Near-duplicate rows: the greedy tree is a caterpillar (depth 5), which
# tree_build="balanced" and "matching" replace by other, shallower trees.
BINARY_CATERPILLAR = np.array([[1, 1, 0], [1, 1, 0], [1, 1, 0], [1, 1, 1], [1, 0, 0], [0, 1, 0]])


def caterpillar6():
    return MixtureModel(BINARY_CATERPILLAR, "beta-bernoulli", alpha=1.0)


def mixture6():
    return MixtureModel(BINARY, "beta-bernoulli", alpha=2.0)


def grey():
    return grey_setting()[0]


def boundary4():
    return image4_boundary()[0]


def window4():
    return image4_window()[0]


def grey_window():
    return grey_window_setting()[0]


def learned4():
    return image4_learned()[0]


def grey_learned():
    return grey_learned_setting()[0]


# ---------------------------------------------------------------------------
# Independent enumeration of the global move's random paths
# ---------------------------------------------------------------------------


def _groups(labels):
    labels = np.asarray(labels)
    return sorted((np.flatnonzero(labels == lab) for lab in np.unique(labels)),
                  key=lambda g: int(g[0]))


def _key(groups, n):
    lab = np.empty(n, np.int64)
    for i, g in enumerate(groups):
        lab[np.asarray(g, np.int64)] = i
    return canonical(lab)


def _lse(xs):
    xs = np.asarray(xs, float)
    m = xs.max()
    return m + math.log(np.exp(xs - m).sum())


def enumerate_paths(kernel, labels, T=1.0):
    """Every random path of one global move from ``labels``, as
    (log probability, canonical labels of X*). Follows the paper's
    procedure step by step: anchor c uniform; each other label into M
    with its merge probability; M empty → split node ν by its weight, then
    every sibling subtree on the way to the root joins an open group
    (∝ d^(-1/T)) or opens one (∝ the new-group weight)."""
    n = len(labels)
    gs = _groups(labels)
    L = len(gs)

    def score(items):
        return kernel._info(np.sort(np.asarray(items, np.int64))).score

    out = []
    for a in range(L):
        c = gs[a]
        others = [gs[i] for i in range(L) if i != a]
        pr = [kernel.merge_log_prob(c, o, T) for o in others]
        for mask in itertools.product([0, 1], repeat=L - 1):
            lq = -math.log(L) + sum(pr[i][0] if m else pr[i][1] for i, m in enumerate(mask))
            if any(mask):
                merged = np.concatenate([c] + [o for o, m in zip(others, mask) if m])
                out.append((lq, _key([merged] + [o for o, m in zip(others, mask) if not m], n)))
                continue
            tree = kernel.tree(c)
            if tree.n < 2:
                out.append((lq, canonical(labels)))  # nothing to split: stay
                continue
            logw = tree.node_log_weights(T, kernel.split_floor)
            for j in range(tree.n - 1):
                nu = tree.n + j
                qs = []
                child, v = nu, int(tree.parent[nu])
                while v >= 0:
                    cl, cr = tree.children(v)
                    qs.append(cr if cl == child else cl)
                    child, v = v, int(tree.parent[v])

                def rec(groups, t, lp, j=j, qs=qs, tree=tree, others=others, lq=lq, logw=logw):
                    if t == len(qs):
                        out.append((lq + logw[j] + lp, _key(list(groups) + others, n)))
                        return
                    Q = list(tree.leaves(qs[t]))
                    logits = [-(score(g) + score(Q) - score(g + Q)) / T for g in groups]
                    logits.append(kernel.log_wnew)
                    z = _lse(logits)
                    for gi in range(len(groups)):
                        ng = [list(g) for g in groups]
                        ng[gi] = ng[gi] + Q
                        rec(ng, t + 1, lp + logits[gi] - z)
                    rec([list(g) for g in groups] + [Q], t + 1, lp + logits[-1] - z)

                l, r = tree.children(nu)
                rec([list(tree.leaves(l)), list(tree.leaves(r))], 0, 0.0)
    return out


def global_matrices(kernel, states, T=1.0):
    """(K, log Q) of the global move: K with the kernel's own acceptance of
    every path; Q[i][j] the enumerated total log probability of proposing j."""
    index = {s: i for i, s in enumerate(states)}
    S = len(states)
    K = np.zeros((S, S))
    logQ = {}
    for i, s in enumerate(states):
        paths = enumerate_paths(kernel, s, T)
        total = sum(math.exp(lq) for lq, _ in paths)
        assert total == pytest.approx(1.0, abs=1e-12), "path probabilities do not sum to 1"
        by_target = {}
        for lq, t in paths:
            by_target.setdefault(t, []).append(lq)
        for t, lqs in by_target.items():
            j = index[t]
            if j == i:
                K[i, i] += sum(math.exp(lq) for lq in lqs)
                continue
            logQ[i, j] = _lse(lqs)
            la = None
            for lq in lqs:
                if la is None or kernel.ratio != "exact":  # exact: path-independent
                    la = kernel.log_acceptance(np.array(s), np.array(t), T, path_log_q=lq)
                acc = 1.0 if la >= 0 else math.exp(la)
                K[i, j] += math.exp(lq) * acc
                K[i, i] += math.exp(lq) * (1.0 - acc)
    return K, logQ


def balance_violation(K, p):
    """max over i != j of |π_i K_ij - π_j K_ji| / max(π_i K_ij, π_j K_ji)."""
    F = p[:, None] * K
    den = np.maximum(F, F.T)
    mask = den > 0
    return float((np.abs(F - F.T)[mask] / den[mask]).max())


def _tempered(model, states, T):
    logp = np.array([model.log_target(np.array(s)) for s in states]) / T
    p = np.exp(logp - logp.max())
    return p / p.sum()


_MATRICES = {}


def exact_matrix(name, factory, T=1.0, ratio="exact", trees="auto", **options):
    """Cached (model, states, p, kernel, K, logQ)."""
    key = (name, T, ratio, trees)
    if key not in _MATRICES:
        model = factory()
        states = set_partitions(model.n_vertices)
        p = _tempered(model, states, T)
        kernel = TreeGuided(model, moves="global", ratio=ratio, trees=trees, **options)
        K, logQ = global_matrices(kernel, states, T)
        _MATRICES[key] = (model, states, p, kernel, K, logQ)
    return _MATRICES[key]


EXACT_CASES = {
    "mixture5": (mixture5, 1.0),
    "mixture5-T2": (mixture5, 2.0),
    "mixture-ties": (mixture_ties, 1.0),
    "grey": (grey, 1.0),
    # The "contrast" posterior (boundary term), four atoms in a cycle.
    "boundary4": (boundary4, 1.0),
    # The "window" posterior (fractional window counts), the same four atoms.
    "window4": (window4, 1.0),
    # The "learned" posterior (coarsened likelihood, signed boundary weights).
    "learned4": (learned4, 1.0),
    # Trees induced by the fixed global tree (the default for mixtures
    # above 100 items), on the small mixtures: the greedy global tree
    # (default) and the balanced ones (tree_build="balanced", "matching"),
    # with every pair as candidates and, with neighbours=2, from the
    # k-nearest-neighbour graph (phase 1 of the builds).
    "mixture5-global": (mixture5, 1.0, "global"),
    "mixture-ties-global": (mixture_ties, 1.0, "global"),
    "caterpillar6-global": (caterpillar6, 1.0, "global"),
    "caterpillar6-global-balanced": (caterpillar6, 1.0, "global", {"tree_build": "balanced"}),
    "caterpillar6-global-knn-balanced": (caterpillar6, 1.0, "global",
                                         {"neighbours": 2, "tree_build": "balanced"}),
    "caterpillar6-global-matching": (caterpillar6, 1.0, "global", {"tree_build": "matching"}),
    "caterpillar6-global-knn-matching": (caterpillar6, 1.0, "global",
                                         {"neighbours": 2, "tree_build": "matching"}),
}


def _case(case):
    factory, T, *trees = EXACT_CASES[case]
    return factory, T, (trees[0] if trees else "auto")


def _options(case):
    entry = EXACT_CASES[case]
    return entry[3] if len(entry) > 3 else {}


# ---------------------------------------------------------------------------
# 1. Exact detailed balance of the global move
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(EXACT_CASES))
def test_global_move_satisfies_detailed_balance_exactly(case):
    factory, T, trees = _case(case)
    model, states, p, kernel, K, logQ = exact_matrix(case, factory, T, trees=trees,
                                                     **_options(case))
    assert kernel.trees == ("global" if trees == "global" else "set")
    assert kernel.tree_build == _options(case).get("tree_build", "greedy")
    if "knn" in case:
        assert kernel._use_graph
    if kernel.tree_build != "greedy":  # the balanced global tree is another tree
        greedy = TreeGuided(model, trees=trees, **{**_options(case), "tree_build": "greedy"})
        assert _node_sets(kernel.global_tree()) != _node_sets(greedy.global_tree())
    # The kernel's proposal probability is the sum over every path.
    err = max(abs(kernel.log_q(np.array(states[i]), np.array(states[j]), T) - lq)
              for (i, j), lq in logQ.items())
    assert err < 1e-10, f"log q differs from the enumerated path sum by {err:.2g}"
    assert np.allclose(K.sum(axis=1), 1.0, atol=1e-12)
    assert balance_violation(K, p) < 1e-10
    assert np.abs(p @ K - p).max() < 1e-12
    # The global move alone is irreducible: one strongly connected class.
    n_comp, _ = connected_components(K > 0, directed=True, connection="strong")
    assert n_comp == 1


@pytest.mark.parametrize("case", ["mixture5", "grey", "caterpillar6-global-knn-balanced",
                                  "caterpillar6-global-knn-matching"])
def test_paper_ratio_fails_detailed_balance(case):
    """Negative control: the paper's printed ratio (the drawn split path
    forward, the drawn anchor for a merge, sums in reverse)."""
    factory, T, trees = _case(case)
    model, states, p, kernel, K, _ = exact_matrix(case, factory, T, ratio="paper", trees=trees,
                                                  **_options(case))
    assert balance_violation(K, p) > 0.1
    assert np.abs(p @ K - p).max() > 1e-3


def test_paths_split_outcomes_have_one_path_merges_one_per_anchor():
    """With trees that are functions of the vertex set, a split outcome is
    produced by exactly one node (the module docstring's argument), while a
    merge of |P| labels has one path per anchor in P: the exact log q of a
    merge is their sum, larger than the drawn anchor's path (the paper's
    forward term)."""
    model = mixture_ties()
    kernel = TreeGuided(model, moves="global")
    n_merges = 0
    for s in set_partitions(6)[::7]:
        by_target = {}
        for lq, t in enumerate_paths(kernel, s):
            by_target.setdefault(t, []).append(lq)
        L = len(set(s))
        for t, lqs in by_target.items():
            k = len(set(t))
            if k > L:
                assert len(lqs) == 1
            elif k < L:
                assert len(lqs) == L - k + 1  # one path per merged label as anchor
                q = kernel.log_q(np.array(s), np.array(t))
                assert q == pytest.approx(_lse(lqs), abs=1e-12)
                assert q > max(lqs) + 1e-9
                n_merges += 1
    assert n_merges > 50


def test_global_move_without_the_boundary_term_fails_detailed_balance():
    """Negative control of the boundary setting: the kernel with λ forced
    to 0 (its acceptance and proposal without the term)."""
    model, states, p, _, _, _ = exact_matrix("boundary4", boundary4)
    K, _ = global_matrices(TreeGuided(paper_twin(model), moves="global"), states)
    assert balance_violation(K, p) > 0.1
    assert np.abs(p @ K - p).max() > 1e-2


# ---------------------------------------------------------------------------
# 2. One-step draws against the exact transition matrix
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["mixture-ties", "mixture-ties-global",
                                  "caterpillar6-global-knn-balanced",
                                  "caterpillar6-global-knn-matching",
                                  "grey"])
def test_one_step_draws_match_transition_matrix(case):
    factory, T, trees = _case(case)
    model, states, p, kernel, K, _ = exact_matrix(case, factory, T, trees=trees,
                                                  **_options(case))
    index = {s: i for i, s in enumerate(states)}
    rng = np.random.default_rng(17)
    draws = 2500
    picks = (0, 7, len(states) // 2, len(states) - 1) if case != "grey" else (0, len(states) - 1)
    for si in picks:
        counts = np.zeros(len(states))
        for _ in range(draws):
            state = model.new_state(np.array(states[si]))
            kernel.step(state, rng, T)
            counts[index[canonical(state.labels)]] += 1
            assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)
        exp = K[si] * draws
        big = exp >= 5
        obs_b = np.append(counts[big], counts[~big].sum())
        exp_b = np.append(exp[big], exp[~big].sum())
        if exp_b[-1] == 0:
            assert obs_b[-1] == 0
            obs_b, exp_b = obs_b[:-1], exp_b[:-1]
        pv = stats.chisquare(obs_b, exp_b * obs_b.sum() / exp_b.sum()).pvalue if len(obs_b) > 1 else 1
        assert pv > 1e-3, f"state {states[si]}: chi-square p {pv:.2g}"


# ---------------------------------------------------------------------------
# 3. Visit frequencies against the enumerated posterior
# ---------------------------------------------------------------------------

N_SAMPLES = 3000
CHAIN_CASES = {
    # name: (model factory, moves, thin). Global alone on grey: from the exact
    # K, samples 30 steps apart inflate the variance of the visit counts by
    # 4 % on average (21 % at worst) over the 30 likeliest partitions.
    "grey-global": (grey, "global", 30),
    "grey-local": (grey, "local", 8),
    "grey-window-both": (grey_window, "both", 10),
    "grey-learned-both": (grey_learned, "both", 10),
    "colour-both": (lambda: colour_setting()[0], "both", 10),
    "mixture-local": (mixture6, "local", 8),
    "mixture-both": (mixture6, "both", 10),
    "mixture-both-global-trees": (mixture6, "both", 10),
    "caterpillar-both-global-trees-balanced": (caterpillar6, "both", 10),
}


@pytest.mark.parametrize("case", sorted(CHAIN_CASES))
def test_chain_leaves_posterior_invariant(case):
    factory, moves, thin = CHAIN_CASES[case]
    model = factory()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 10  # π spread over many partitions
    rng = np.random.default_rng(2024)
    seed_compiled_rng(rng)
    kernel = TreeGuided(model, moves=moves, trees="global" if "global-trees" in case else "auto",
                        tree_build="balanced" if case.endswith("balanced") else "greedy")
    state = _assert_visits_match(kernel, model, rng, states, p, thin, n_samples=N_SAMPLES)
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    if moves != "local":
        rates = kernel.acceptance_rates()
        assert 0 < rates["split"] < 1 and 0 < rates["merge"] < 1


@pytest.mark.parametrize("factory", [boundary4, window4], ids=["boundary", "window"])
def test_local_moves_on_the_boundary_setting(factory):
    """Local and global moves together on the "contrast" and "window"
    posteriors (the local move's Gibbs updates go through ``model.delta``,
    which has the boundary term); with λ forced to 0 the visits are off."""
    model = factory()
    states = set_partitions(4)
    p = exact_distribution(model, states)
    results = []
    # Thinned by 5: every 2nd state left enough autocorrelation in the counts
    # that the iid floor was exceeded 1.5-fold on 3 of 8 seeds, with no trend
    # at 4x the samples (no bias); the λ = 0 twin still fails 4-5-fold.
    for m, n in ((model, 1500), (paper_twin(model), 500)):
        rng = np.random.default_rng(2024)
        kernel = TreeGuided(m, moves="both")
        state = m.new_state(np.zeros(4, dtype=np.int64))
        counts = visit_counts(kernel, state, rng, n_samples=n, thin=5, burn=50)
        results.append((*compare(counts, states, p), iid_tv(p, n)))
    (tv, pvalue, floor), (tv0, pvalue0, floor0) = results
    assert tv < 1.5 * floor and pvalue > 1e-3, f"TV {tv:.3f} (floor {floor:.3f}), p {pvalue:.2g}"
    assert tv0 > 3 * floor0 and pvalue0 < 1e-3


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


def _node_sets(tree):
    return {frozenset(tree.leaves(v).tolist()) for v in range(tree.n, 2 * tree.n - 1)}


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
