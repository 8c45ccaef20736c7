"""Adaptive reconfiguration moves (Herlau et al., seed 001) and sRM.

Two kinds of evidence, both with a *fixed* history so that the kernel is a
fixed Markov kernel (with a growing history ARM is adaptive MCMC, whose
finite-time law is not exactly π; see the module docstring):

* **Exact detailed balance of the move alone.** On n = 5 items the move's
  transition matrix K is built exactly: every anchor pair (graph edges in
  both orders, or every ordered pair), every (z^a, z^b) of a small fixed
  history, and every outcome of the sweep with its probability — the
  choices are enumerated by a scripted chooser (an odometer over the
  branch indices), and the acceptance probability is the kernel's own.
  π_z K(z, z*) = π_z* K(z*, z) must hold to 1e-10. The same enumeration
  checks the uniqueness of the sweep path: no (z, φ, z*) may be reached by
  two choice sequences (the kernel multiplies the probabilities of a
  single path).
* **Visit frequencies** of the move interleaved with Gibbs sweeps (the
  paper's iteration) against the exactly enumerated posterior, on the image
  model (graph) and on mixture models (no graph).

Negative controls: dropping the reverse probability, or the "last original
member stays" rule (which makes paths non-unique), breaks detailed balance.
"""

import math

import numpy as np
import pytest

from enumeration import compare, exact_distribution, iid_tv, set_partitions, visit_counts
from test_enumeration_kernels import (colour_setting, grey_learned_setting, grey_setting, grey_window_setting,
                                      image4_boundary, image4_learned, image4_window, paper_twin,
                                      window_setting)

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.partition import canonical
from swcuts.samplers.reconfiguration.kernel import SRM, Reconfiguration
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers import reconfiguration as rc


# ---------------------------------------------------------------- settings
def image5():
    """Five atoms of a grey image with a non-trivial adjacency graph."""
    atoms = np.array([[0, 0, 1, 1, 2],
                      [3, 3, 4, 4, 2]])
    img = np.array([[0.2, 0.25, 0.3, 0.35, 0.8],
                    [0.2, 0.7, 0.75, 0.8, 0.85]])[..., None]
    g = RegionGraph.from_labels(atoms)
    return ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05)


def image4():
    """Four atoms in a cycle (a 2x2 lattice of 1x2-pixel atoms)."""
    atoms = np.repeat(np.arange(4).reshape(2, 2), 2, axis=1)
    img = np.array([[0.2, 0.25, 0.3, 0.75],
                    [0.2, 0.7, 0.8, 0.85]])[..., None]
    g = RegionGraph.from_labels(atoms)
    return ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05)


def mixture5():
    data = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [1, 0, 0, 0], [0, 0, 1, 1], [0, 1, 1, 1]],
                    dtype=float)
    return MixtureModel(data, "beta-bernoulli", alpha=1.0)


def mixture4():
    data = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [0, 0, 1]], dtype=float)
    return MixtureModel(data, "beta-bernoulli", alpha=1.0)


def bernoulli6():
    data = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [1, 0, 0, 0],
                     [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 0]], dtype=float)
    return MixtureModel(data, "beta-bernoulli", alpha=1.0)


def gaussian6():
    rng = np.random.default_rng(3)
    data = np.concatenate([rng.normal(0.0, 1.0, (3, 2)), rng.normal(2.5, 1.0, (3, 2))])
    return MixtureModel(data, "gaussian", alpha=1.0)


#: Two past states that disagree on many pairs (the fixed history of the
#: exact checks on five items).
HIST5 = [(0, 0, 0, 1, 1), (0, 1, 1, 0, 2)]
HIST4 = [(0, 0, 1, 1), (0, 1, 1, 2)]


# ------------------------------------------------- exact transition matrix
class Scripted:
    """Chooser that follows a script of branch indices (extended with 0s),
    records the branching factors and the probability of the path, and
    rejects (so that the state returns to z) after recording log α."""

    def __init__(self, seq):
        self.seq = list(seq)
        self.pos = 0
        self.branch = []
        self.logp = 0.0
        self.zstar = None
        self.log_alpha = None

    def choose(self, logw):
        if self.pos >= len(self.seq):
            self.seq.append(0)
        k = self.seq[self.pos]
        m = max(logw)
        self.logp += logw[k] - (m + math.log(sum(math.exp(v - m) for v in logw)))
        self.branch.append(len(logw))
        self.pos += 1
        return k

    def proposed(self, labels):
        self.zstar = canonical(labels)

    # The compiled pass follows the script in one call (see _CompiledPass).
    def script(self):
        return np.array(self.seq, dtype=np.int64)

    def record(self, branch, logp):
        self.branch = list(branch)
        self.pos = len(branch)
        self.seq = self.seq + [0] * max(0, self.pos - len(self.seq))
        self.logp = logp

    def accept(self, log_alpha):
        self.log_alpha = log_alpha
        return False


def sweep_paths(model, kernel, z, i, j, za, zb, order):
    """Every choice sequence of one move from z with φ = (i, j, za, zb, order)."""
    seq = []
    state = model.new_state(np.array(z))
    lab0, free0 = state.partition.labels.copy(), state.partition.free
    while True:
        # A rejected proposal returns to z, possibly under other label names;
        # the branch indices refer to sorted label names, so start afresh then.
        if not (np.array_equal(state.partition.labels, lab0) and state.partition.free == free0):
            state = model.new_state(np.array(z))
        ch = Scripted(seq)
        kernel.attempt(state, i, j, za, zb, order, 1.0, ch)
        assert canonical(state.partition.labels) == canonical(z)
        yield ch
        s, b = ch.seq[:ch.pos], ch.branch
        k = len(s) - 1
        while k >= 0 and s[k] + 1 >= b[k]:
            k -= 1
        if k < 0:
            return
        seq = s[:k] + [s[k] + 1]


def anchor_pairs(model):
    if model.graph is not None:
        e = model.graph.edges.tolist()
        return [(a, b) for a, b in e] + [(b, a) for a, b in e]
    n = model.n_vertices
    return [(a, b) for a in range(n) for b in range(n) if a != b]


def exact_kernel(model, kernel, hist, orders):
    """The move's transition matrix over all partitions, built exactly.

    Anchors uniform over ``anchor_pairs``; (z^a, z^b) uniform over the
    states of ``hist`` joining / separating them (no-op when either is
    missing); the order uniform over ``orders``. Returns (K, states,
    largest number of paths from one z to one z* under one φ).
    """
    states = set_partitions(model.n_vertices)
    index = {s: t for t, s in enumerate(states)}
    K = np.zeros((len(states), len(states)))
    anchors = anchor_pairs(model)
    most = 0
    for z in states:
        for i, j in anchors:
            if kernel.srm:
                phis = [(None, None)]
            else:
                ra = [np.array(h) for h in hist if h[i] == h[j]]
                rb = [np.array(h) for h in hist if h[i] != h[j]]
                phis = [(a, b) for a in ra for b in rb]
            for za, zb in phis:
                for order in orders:
                    w = 1.0 / (len(anchors) * len(phis) * len(orders))
                    seen = {}
                    for ch in sweep_paths(model, kernel, z, i, j, za, zb, order):
                        if ch.logp == -math.inf:
                            continue
                        seen[ch.zstar] = seen.get(ch.zstar, 0) + 1
                        acc = 1.0 if ch.log_alpha >= 0 else math.exp(ch.log_alpha)
                        K[index[z], index[ch.zstar]] += w * math.exp(ch.logp) * acc
                    most = max(most, max(seen.values()))
    K[np.diag_indices_from(K)] += 1.0 - K.sum(axis=1)
    return K, states, most


def balance_error(model, K, states):
    p = exact_distribution(model, states)
    F = p[:, None] * K
    return float(np.abs(F - F.T).max())


def _orders(kernel, *pairs):
    return [rc._Order(kernel._P, a, b) for a, b in pairs]


@pytest.mark.parametrize("make,compiled", [(image5, None), (mixture5, False), (mixture5, None)],
                         ids=["image-graph", "mixture-nograph", "mixture-compiled"])
def test_move_alone_satisfies_detailed_balance_exactly(make, compiled):
    model = make()
    kernel = Reconfiguration(model, history=[np.array(h) for h in HIST5], compiled=compiled)
    assert kernel._compiled_pass == (make is mixture5 and compiled is None)
    K, states, most = exact_kernel(model, kernel, HIST5, _orders(kernel, (2, 1)))
    assert most == 1, "two sweep paths lead to the same proposal"
    assert np.all(K >= -1e-15) and np.allclose(K.sum(axis=1), 1.0)
    off = (K.sum() - np.trace(K)) / len(states)
    assert off > 0.1  # the move does move
    assert balance_error(model, K, states) < 1e-10


@pytest.mark.parametrize("compiled", [False, None], ids=["generic", "compiled"])
def test_knn_frontier_move_satisfies_detailed_balance_exactly(compiled):
    """outside="knn": only the outside items next to the two labels on a
    nearest-neighbour graph of the data may join them (here k = 1, a
    sparse graph on five items); still exact."""
    model = mixture5()
    kernel = Reconfiguration(model, history=[np.array(h) for h in HIST5], outside="knn",
                             neighbours=1, compiled=compiled)
    indptr, indices = kernel._fgraph
    assert indices.size < 5 * 4  # not every pair
    K, states, most = exact_kernel(model, kernel, HIST5, _orders(kernel, (2, 1)))
    assert most == 1
    assert (K.sum() - np.trace(K)) / len(states) > 0.1
    assert balance_error(model, K, states) < 1e-10
    srm = SRM(model, outside="knn", neighbours=1, compiled=compiled)
    K, states, most = exact_kernel(model, srm, None, _orders(srm, (1, 0)))
    assert most == 1
    assert balance_error(model, K, states) < 1e-10


@pytest.mark.parametrize("make,compiled", [(image4, None), (mixture4, False), (mixture4, None)],
                         ids=["image-graph", "mixture-nograph", "mixture-compiled"])
def test_srm_move_satisfies_detailed_balance_exactly(make, compiled):
    model = make()
    kernel = SRM(model, compiled=compiled)
    K, states, most = exact_kernel(model, kernel, None, _orders(kernel, (1, 0)))
    assert most == 1
    assert (K.sum() - np.trace(K)) / len(states) > 0.1
    assert balance_error(model, K, states) < 1e-10


@pytest.mark.parametrize("compiled", [False, None], ids=["generic", "compiled"])
def test_detailed_balance_holds_for_every_item_order(compiled):
    """The order is part of φ: two orders (and their mixture) on four items."""
    model = mixture4()
    kernel = Reconfiguration(model, history=[np.array(h) for h in HIST4], compiled=compiled)
    K, states, most = exact_kernel(model, kernel, HIST4, _orders(kernel, (1, 0), (3, 2)))
    assert most == 1
    assert balance_error(model, K, states) < 1e-10


@pytest.mark.parametrize("make", [image4_boundary, image4_window, image4_learned],
                         ids=["boundary", "window", "learned"])
@pytest.mark.parametrize("cls", [Reconfiguration, SRM], ids=["reconfiguration", "srm"])
def test_boundary_term_move_satisfies_detailed_balance_exactly(cls, make):
    """The "contrast" and "window" posteriors (four atoms in a cycle):
    exact; the same kernel with λ forced to 0 is not (checked on one of
    the two: both reach the model through the same ``model.delta``)."""
    model = make()[0]
    kw = {} if cls is SRM else {"history": [np.array(h) for h in HIST4]}
    hist = None if cls is SRM else HIST4
    errors = []
    for m in ((model,) if cls is SRM else (model, paper_twin(model))):
        kernel = cls(m, **kw)
        K, states, most = exact_kernel(m, kernel, hist, _orders(kernel, (1, 0)))
        assert most == 1
        assert (K.sum() - np.trace(K)) / len(states) > 0.1
        errors.append(balance_error(model, K, states))
    assert errors[0] < 1e-10
    assert cls is SRM or errors[1] > 1e-3


class _NoReverse(Reconfiguration):
    """A wrong kernel: drops T(z | z*) from the acceptance ratio."""

    def attempt(self, state, i, j, za, zb, order, temperature, chooser):
        run = rc._Pass.run

        def forward_only(p):
            r = run(p)
            return 0.0 if (p.forced and r > -math.inf) else r

        rc._Pass.run = forward_only
        try:
            return super().attempt(state, i, j, za, zb, order, temperature, chooser)
        finally:
            rc._Pass.run = run


def test_negative_control_dropped_reverse_probability():
    model = mixture4()
    kernel = _NoReverse(model, history=[np.array(h) for h in HIST4], compiled=False)
    K, states, _ = exact_kernel(model, kernel, HIST4, _orders(kernel, (1, 0)))
    assert balance_error(model, K, states) > 1e-4


def test_negative_control_without_last_original_rule(monkeypatch):
    """Without eq. 17 several sweep paths reach one proposal, and the
    product of the drawn probabilities is no longer T(z*|z)."""

    def unlocked(self, h, one):
        own = int(self.part.labels[h])
        cands = [own, self.bi] if self.bi == self.bj else [own, self.bi, self.bj]
        target = None
        if self.forced:
            Lz = int(self.target[h])
            target = self.bi if Lz == self.zi else (self.bj if Lz == self.zj else own)
        one[0] = h
        return self._choose(one, cands, target, False)

    monkeypatch.setattr(rc._Pass, "_update_outside", unlocked)
    model = mixture5()
    kernel = Reconfiguration(model, history=[np.array(h) for h in HIST5], compiled=False)
    K, states, most = exact_kernel(model, kernel, HIST5, _orders(kernel, (2, 1)))
    assert most > 1
    assert balance_error(model, K, states) > 1e-5


# ------------------------------------------------------ visit frequencies
N_SAMPLES = 4000
ENUM = {"grey": grey_setting, "colour": colour_setting, "grey-window": grey_window_setting,
        "grey-learned": grey_learned_setting,
        "bernoulli": lambda: (bernoulli6(), None, None),
        "gaussian": lambda: (gaussian6(), None, None)}


def _frozen_history(states, p, rng, k=6):
    """k past states drawn from π: what a converged history looks like."""
    return [np.array(states[t]) for t in rng.choice(len(states), k, p=p)]


def _assert_matches(tv, pvalue, p, n=N_SAMPLES):
    floor = iid_tv(p, n)
    assert tv < 1.5 * floor, f"total variation {tv:.3f} (iid noise floor {floor:.3f})"
    assert pvalue > 1e-3, f"chi-square p-value {pvalue:.2g}"


@pytest.mark.parametrize("name", sorted(ENUM))
def test_move_with_gibbs_leaves_posterior_invariant(name):
    model, _, _ = ENUM[name]()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 5  # π spread over many partitions
    rng = np.random.default_rng(2024)
    seed_compiled_rng(rng)
    kernel = Reconfiguration(model, history=_frozen_history(states, p, rng))
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=N_SAMPLES, thin=2, burn=50)
    tv, pvalue = compare(counts, states, p)
    _assert_matches(tv, pvalue, p)
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    rates = kernel.acceptance_rates()
    assert rates["split"] > 0.05 and rates["merge"] > 0.05


@pytest.mark.parametrize("name", ["colour", "bernoulli"])
def test_paper_anchor_rule_with_gibbs_leaves_posterior_invariant(name):
    """anchors="disagree": two past states first, then anchors where they
    disagree (the paper's rule); fewer no-ops, same invariance."""
    model, _, _ = ENUM[name]()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    rng = np.random.default_rng(77)
    seed_compiled_rng(rng)
    kernel = Reconfiguration(model, history=_frozen_history(states, p, rng), anchors="disagree")
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=3000, thin=2, burn=50)
    _assert_matches(*compare(counts, states, p), p, n=3000)
    assert kernel.counts["none"][0] < 0.1 * (kernel.counts["split"][0] + kernel.counts["merge"][0])


@pytest.mark.parametrize("graph", [True, False], ids=["edges", "pairs"])
def test_paper_anchor_rule_is_uniform_over_disagreements(graph):
    A = np.array([0, 0, 0, 1, 1, 1])
    B = np.array([0, 1, 1, 1, 2, 2])
    model = grey_setting()[0] if graph else bernoulli6()
    kernel = Reconfiguration(model, history=[A, B], anchors="disagree")
    pairs = anchor_pairs(model)
    expected = {(i, j) for i, j in pairs if (A[i] == A[j]) != (B[i] == B[j])}
    rng = np.random.default_rng(0)
    counts = {}
    n = 200 * len(expected)
    for _ in range(n):
        i, j, za, zb = kernel._draw_disagreement(kernel.history, rng)
        assert za[i] == za[j] and zb[i] != zb[j]
        counts[(i, j)] = counts.get((i, j), 0) + 1
    assert set(counts) == expected
    mean = n / len(expected)
    assert all(abs(c - mean) < 5 * math.sqrt(mean) for c in counts.values())


@pytest.mark.parametrize("make", [colour_setting, window_setting], ids=["colour", "window"])
def test_srm_with_gibbs_leaves_posterior_invariant(make):
    model, _, _ = make()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    rng = np.random.default_rng(5)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(SRM(model), state, rng, n_samples=N_SAMPLES, thin=2, burn=50)
    _assert_matches(*compare(counts, states, p), p)


def test_chains_frozen_after_adaptive_burn_in_sample_the_posterior():
    """The multi-chain API: adaptive burn-in with the pooled history, then
    freeze() (a fixed kernel from there on); pooled visits match π."""
    model = bernoulli6()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    rng = np.random.default_rng(11)
    kernel = Reconfiguration(model, n_chains=4, max_history=64)
    chains = [model.new_state(np.zeros(model.n_vertices, dtype=np.int64)) for _ in range(4)]
    kernel.init_chains(chains)
    for _ in range(60):
        kernel.step_all(chains, rng, 1.0)
    assert kernel.counts["split"][1] + kernel.counts["merge"][1] > 0
    kernel.freeze()
    frozen = kernel.history.states()
    counts = {}
    n = 1000
    for _ in range(n):
        kernel.step_all(chains, rng, 1.0)
        for c in chains:
            key = canonical(c.partition.labels)
            counts[key] = counts.get(key, 0) + 1
    np.testing.assert_array_equal(kernel.history.states(), frozen)
    _assert_matches(*compare(counts, states, p), p, n=4 * n)
    for c in chains:
        assert c.log_pi == pytest.approx(model.log_target(c.labels), abs=1e-6)
