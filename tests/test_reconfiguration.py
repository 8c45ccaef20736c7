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

import swcuts
import swcuts.segmentation.segment
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.potts import PottsModel
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.partition import canonical
from swcuts.samplers import KERNELS
from swcuts.samplers.reconfiguration.kernel import SRM, Reconfiguration
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers import reconfiguration as rc
from swcuts.samplers.reconfiguration.history import History


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


# ------------------------------------------------------------ unit checks
def test_rejection_restores_the_state_and_acceptance_keeps_caches_exact():
    model, _, _ = colour_setting()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    rng = np.random.default_rng(3)
    kernel = Reconfiguration(model, history=_frozen_history(states, p, rng), gibbs_sweeps=0)
    state = model.new_state(np.array([0, 0, 1, 1, 2, 2, 0]))
    seen = set()
    for _ in range(300):
        before = canonical(state.labels)
        log_pi = state.log_pi
        info = kernel.move(state, 0, rng, 1.0)
        seen.add((info.move, info.accepted))
        if not info.accepted:
            assert canonical(state.labels) == before
            assert state.log_pi == log_pi
        else:
            assert canonical(state.labels) != before
            assert state.log_pi == pytest.approx(log_pi + info.delta, abs=1e-9)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
        np.testing.assert_array_equal(state.partition.size,
                                      np.bincount(state.labels, minlength=state.labels.size))
    assert {("split", True), ("split", False), ("merge", True), ("merge", False)} <= seen


def test_tempered_move_with_gibbs():
    """π^(1/T) at T = 2 on the grey setting."""
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    logp = np.array([model.log_target(np.array(s)) for s in states]) / 2.0
    p = np.exp(logp - logp.max())
    p /= p.sum()
    rng = np.random.default_rng(8)
    seed_compiled_rng(rng)
    kernel = Reconfiguration(model, history=_frozen_history(states, p, rng))
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=2500, thin=2, temperature=2.0, burn=50)
    _assert_matches(*compare(counts, states, p), p, n=2500)


def test_history_is_bounded_thinned_and_second_half():
    h = History(3, capacity=8, mode="second-half")
    for t in range(200):
        h.record([np.array([t % 2, 0, 1]), np.array([0, 0, 0])], t)
        assert len(h) <= 8
        stamps = h.stamps[:h.count]
        assert stamps.min() >= t // 2  # only the second half is kept
    assert h.interval > 1 and len(h) >= 2
    h_all = History(3, capacity=8, mode="all")
    for t in range(200):
        h_all.record([np.array([0, 1, 1])], t)
    assert len(h_all) <= 8 and h_all.stamps[:h_all.count].min() == 0
    rng = np.random.default_rng(0)
    za, zb = h.draw(0, 1, rng) or (None, None)
    assert za is None or (za[0] == za[1] and zb[0] != zb[1])
    frozen = History(3, states=[[0, 0, 1], [0, 1, 1]])
    frozen.record([np.array([2, 2, 2])], 5)
    assert len(frozen) == 2 and frozen.frozen
    za, zb = frozen.draw(0, 1, rng)
    assert za.tolist() == [0, 0, 1] and zb.tolist() == [0, 1, 1]
    assert frozen.draw(0, 2, rng) is None  # no past state joins 0 and 2


def test_no_usable_history_is_a_no_op():
    model, _, _ = grey_setting()
    kernel = Reconfiguration(model, history=[np.zeros(6, dtype=np.int64)], gibbs_sweeps=0)
    state = model.new_state(np.array([0, 0, 1, 1, 2, 2]))
    info = kernel.step(state, np.random.default_rng(0), 1.0)
    assert info.move == "none" and not info.accepted
    assert state.labels.tolist() == [0, 0, 1, 1, 2, 2]


def test_single_chain_step_uses_its_own_history():
    model, _, _ = grey_setting()
    kernel = Reconfiguration(model)
    rng = np.random.default_rng(1)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    kinds = set()
    for _ in range(200):
        kinds.add(kernel.step(state, rng, 2.0).move)
    assert {"split", "merge"} <= kinds  # the Gibbs scans feed the history
    assert len(kernel._own[state][0]) > 1
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)


def test_options_and_errors():
    model, _, _ = grey_setting()
    assert KERNELS["reconfiguration"] is Reconfiguration and KERNELS["srm"] is SRM
    for name in ("reconfiguration", "srm"):
        assert name in swcuts.SAMPLERS
        assert name in swcuts.segmentation.options.STEPS_PER_ATOM and name in swcuts.segmentation.options.DEFAULT_T0
    k = Reconfiguration(model)
    assert k.compiled is False and k.name == "reconfiguration"
    assert k.anchors == "edge" and k.outside == "frontier"
    assert SRM(model).name == "srm" and Reconfiguration(model, srm=True).name == "srm"
    mix = bernoulli6()
    km = Reconfiguration(mix)
    assert km.anchors == "disagree" and km.outside == "all"  # the paper's rule
    assert SRM(mix).anchors == "pair"  # sRM has no history
    with pytest.raises(ValueError, match="n_chains"):
        Reconfiguration(model, n_chains=1)
    Reconfiguration(model, n_chains=1, history=[np.zeros(6, dtype=np.int64)])  # fixed: fine
    SRM(model, n_chains=1)  # sRM needs no history
    with pytest.raises(ValueError):
        Reconfiguration(PottsModel(model.graph, n_labels=3, beta=0.5))
    with pytest.raises(ValueError):
        Reconfiguration(mix, outside="frontier")
    with pytest.raises(ValueError):
        Reconfiguration(model, outside="knn")  # a graph model has its own frontier
    with pytest.raises(ValueError):
        Reconfiguration(mix, outside="knn", neighbours=0)
    with pytest.raises(ValueError):
        Reconfiguration(mix, anchors="edge")
    with pytest.raises(ValueError):
        Reconfiguration(model, history="everything")
    with pytest.raises(ValueError):
        Reconfiguration(model, history=[np.zeros(5, dtype=np.int64)])
    with pytest.raises(ValueError):
        Reconfiguration(model, order="sorted")
    with pytest.raises(ValueError):
        SRM(model, anchors="disagree")
    states = [model.new_state(np.zeros(6, dtype=np.int64)) for _ in range(3)]
    with pytest.raises(ValueError, match="init_chains"):
        k.step_all(states, np.random.default_rng(0))
    with pytest.raises(ValueError, match="expected 4"):
        k.init_chains(states)
    with pytest.raises(ValueError, match="init_chains"):
        k.move(states[0], 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="temperature"):
        SRM(model).step(states[0], np.random.default_rng(0), temperature=0.0)
    with pytest.raises(ValueError) as info:
        Reconfiguration(model, n_chains=1)
    assert "\n" not in str(info.value)  # one line


def test_step_all_records_the_pooled_history():
    model = bernoulli6()
    kernel = Reconfiguration(model, n_chains=3, max_history=12)
    rng = np.random.default_rng(0)
    chains = [model.new_state(rng.integers(0, 3, size=6)) for _ in range(3)]
    kernel.init_chains(chains)
    assert len(kernel.history) == 3
    for _ in range(30):
        infos = kernel.step_all(chains, rng, 1.0)
        assert len(infos) == 3
    assert 3 <= len(kernel.history) <= 12
    with pytest.raises(ValueError, match="chain_index"):
        kernel.move(chains[0], 3, rng)


@pytest.mark.parametrize("sampler", ["reconfiguration", "srm"])
def test_segment_smoke(sampler):
    rng = np.random.default_rng(0)
    img = np.zeros((32, 40))
    img[:, 20:] = 0.8
    img[8:20, 5:15] = 0.45
    img += 0.05 * rng.standard_normal(img.shape)
    seg = swcuts.segment(img, sampler=sampler, steps=200, seed=0)
    assert seg.labels.shape == img.shape and seg.steps == 200
    assert seg.energy == pytest.approx(-seg.model.log_target(seg.vertex_labels), abs=1e-6)
    assert seg.energy < seg.trace.energy[0]  # the run improved on its start
    again = swcuts.segment(img, sampler=sampler, steps=200, seed=0)
    np.testing.assert_array_equal(seg.labels, again.labels)


def _compiled_path(cls, model, start, compiled, steps, **kwargs):
    rng = np.random.default_rng(3)
    kernel = cls(model, compiled=compiled, gibbs_sweeps=0, **kwargs)
    state = model.new_state(start)
    out = []
    for _ in range(steps):
        info = kernel.step(state, rng, 1.0) if cls is SRM else kernel.move(state, 0, rng, 1.0)
        out.append((info.move, info.accepted, round(info.log_accept_ratio, 6)))
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)
    return out, state.labels.copy(), kernel.counts


@pytest.mark.parametrize("name", ["beta-bernoulli", "gaussian"])
@pytest.mark.parametrize("cls,kwargs", [(Reconfiguration, {"anchors": "pair"}),
                                        (Reconfiguration, {"anchors": "disagree"}),
                                        (SRM, {}),
                                        (Reconfiguration, {"outside": "knn", "neighbours": 4}),
                                        (SRM, {"outside": "knn", "neighbours": 4})],
                         ids=["arm-pair", "arm-disagree", "srm", "arm-knn", "srm-knn"])
def test_compiled_and_generic_passes_make_the_same_moves(cls, kwargs, name):
    """On a mixture the compiled pass draws the same uniforms, proposes the
    same z*, computes the same T(z*|z), T(z|z*) and decides the same."""
    from swcuts.evaluation.synthetic.clusters import jain_neal_bernoulli, lee_choi_gaussians

    if name == "beta-bernoulli":
        x, truth = jain_neal_bernoulli(40, 6, seed=1)
    else:
        x, truth = lee_choi_gaussians(39, seed=2)
    model = MixtureModel(x, name, alpha=1.0)
    rng = np.random.default_rng(0)
    if cls is Reconfiguration:
        kwargs = dict(kwargs, history=[rng.integers(0, 4, truth.size) for _ in range(4)] + [truth])
    start = truth.copy()
    start[::7] = 0
    fast = _compiled_path(cls, model, start, None, 150, **kwargs)
    slow = _compiled_path(cls, model, start, False, 150, **kwargs)
    assert fast[0] == slow[0]
    np.testing.assert_array_equal(fast[1], slow[1])
    assert fast[2]["split"][1] + fast[2]["merge"][1] > 0  # the chain did move
