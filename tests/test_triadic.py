"""Triadic split-merge (van Rossum et al., seed 000) with sequential allocation.

Two independent proofs that the kernel leaves π^(1/T) invariant:

1. **Exact transition matrix** on every partition of n = 5 items: the law
   of one ``step`` is enumerated (every anchor triple with its probability,
   every move type, every allocation order and, for the 2→3 split, every
   insertion position of k, every allocation outcome with its sequential
   probability, times min(1, α)), through the kernel's own ``propose`` /
   ``revert``. Then π_a K_ab = π_b K_ba and π K = π to 1e-10, and K is
   irreducible. A one-step frequency test ties ``step``'s own random draws
   to the enumerated rows.
2. **Visit frequencies** of long runs against the exactly enumerated
   posterior (DESIGN.md's correctness contract): the triadic kernel
   *alone*, from the one-label partition, on the image settings (edge
   anchors) and on a Dirichlet-process mixture without a graph (uniform
   anchors). The kernel is irreducible on its own (module docstring of
   ``swcuts.samplers.triadic``; the exact K's strong connectivity shows it
   on the small spaces), so no Gibbs scans are interleaved: a composition
   with Gibbs could mask a wrong triadic ratio, a test of triadic alone
   cannot.

Negative controls: the same checks reject the paper's uniform-allocation
q formula used with sequential allocation, and a missing β factor.

Thinning: the integrated autocorrelation time of the indicators of the
most probable partitions is 4-11 triadic steps on the image settings and
3-5 on the mixture, so samples 20 (mixture: 10) steps apart are close to
independent for the chi-square test.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from enumeration import assert_matches, chain_visits, exact_distribution, iid_tv, set_partitions
from test_enumeration_kernels import (colour_setting, grey_learned_setting, grey_setting, grey_window_setting,
                                      image4_boundary, image4_learned, image4_window, paper_twin,
                                      plain_rows_twin, uncoarsened_twin)

import swcuts
import swcuts.segmentation.segment
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.potts import PottsModel
from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import jain_neal_bernoulli
from swcuts.models.partition import canonical
from swcuts.samplers import KERNELS
from swcuts.samplers.gibbs import Gibbs
from swcuts.samplers.triadic.kernel import Triadic
from swcuts.samplers.triadic.kernel import MOVES

_LOG2, _LOG3 = math.log(2.0), math.log(3.0)


# ---------------------------------------------------------------- settings
def image5():
    """Five atoms of a 2x5 grey image (a graph with a cycle), two greys."""
    atoms = np.array([[0, 0, 1, 1, 2], [3, 3, 4, 4, 2]])
    img = np.array([[0.2, 0.3, 0.25, 0.7, 0.8], [0.3, 0.2, 0.75, 0.8, 0.9]])[..., None]
    g = RegionGraph.from_labels(atoms)
    return ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05)


def mixture(n, seed=1):
    """Beta-Bernoulli DP mixture on Jain & Neal's binary data (no graph)."""
    data = jain_neal_bernoulli(max(n, 5), d=6, seed=seed)[0][:n]
    return MixtureModel(data, "beta-bernoulli")


def _tempered(model, states, temperature):
    logp = np.array([model.log_target(np.array(s)) for s in states]) / temperature
    p = np.exp(logp - logp.max())
    return p / p.sum()


# ----------------------------------------------------- the exact kernel
def exact_kernel(kernel, model, states, temperature=1.0):
    """The transition matrix of one ``kernel.step``, enumerated exactly."""
    index = {s: a for a, s in enumerate(states)}
    K = np.zeros((len(states), len(states)))
    anchors = kernel.anchor_probabilities()
    assert sum(anchors.values()) == pytest.approx(1.0, abs=1e-12)
    for a, s in enumerate(states):
        state = model.new_state(np.array(s))
        labels = state.partition.labels
        for t, p_t in anchors.items():
            i, j, k = t
            moves = kernel.move_probabilities(int(labels[i]), int(labels[j]), int(labels[k]))
            for move, p_m in moves.items():
                if move == "noop":
                    K[a, a] += p_t * p_m
                    continue
                items = kernel.allocated(state, t, move)
                orders = list(itertools.permutations(items.tolist()))
                kposs = range(items.size + 1) if move == "split23" else [0]
                n_targets = 3 if move == "split23" else 2
                outcomes = ([()] if move == "merge21"
                            else list(itertools.product(range(n_targets), repeat=items.size)))
                w = p_t * p_m / (len(orders) * len(kposs))
                for order in orders:
                    for kpos in kposs:
                        total_q = 0.0
                        for out in outcomes:
                            prop = kernel.propose(state, t, move, np.array(order, dtype=np.int64),
                                                  temperature, kpos=kpos,
                                                  outcome=np.array(out, dtype=np.int64))
                            b = index[canonical(state.partition.labels)]
                            q = math.exp(prop.log_q_fwd)
                            acc = math.exp(min(prop.log_alpha, 0.0))
                            kernel.revert(state, prop)
                            assert tuple(state.partition.labels.tolist()) == s
                            K[a, b] += w * q * acc
                            K[a, a] += w * q * (1.0 - acc)
                            total_q += q
                        # The sequential allocation is a probability law.
                        assert total_q == pytest.approx(1.0, abs=1e-12)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-9)
    return K


def _balance_errors(K, p):
    flow = p[:, None] * K
    return np.abs(flow - flow.T).max(), np.abs(p @ K - p).max()


def _irreducible(K):
    reach = (K > 0).astype(int)
    n = K.shape[0]
    r = np.eye(n, dtype=int)
    for _ in range(n):
        r = np.minimum(1, r + r @ reach)
    return bool(np.all(r > 0))


@pytest.fixture(scope="module")
def image5_kernel():
    """image5, edge anchors, β = 0.3 (β ≠ 1/2 tells β from 1 − β), T = 1."""
    model = image5()
    kernel = Triadic(model, beta=0.3)
    states = set_partitions(5)
    return model, kernel, states, exact_kernel(kernel, model, states)


@pytest.mark.parametrize("case", ["image-edge-anchors", "mixture-uniform-anchors-T2"])
def test_exact_transition_matrix_is_reversible(case, image5_kernel):
    if case == "image-edge-anchors":
        model, kernel, states, K = image5_kernel
        temperature = 1.0
    else:
        model, temperature = mixture(5), 2.0
        kernel = Triadic(model, beta=0.5)
        states = set_partitions(5)
        K = exact_kernel(kernel, model, states, temperature)
    assert kernel.anchors == ("edge" if model.graph is not None else "uniform")
    p = _tempered(model, states, temperature)
    assert 1.0 / np.sum(p ** 2) > 10  # π spread over many partitions
    assert np.abs(K.sum(axis=1) - 1.0).max() < 1e-12
    balance, stationarity = _balance_errors(K, p)
    assert balance < 1e-10, f"detailed balance violated by {balance:.3g}"
    assert stationarity < 1e-10, f"π K - π = {stationarity:.3g}"
    # Triadic alone reaches every partition; every move type happens.
    assert _irreducible(K)
    off = K - np.diag(np.diag(K))
    assert off.sum() > 0.2  # the chain does move


@pytest.mark.parametrize("make", [image4_boundary, image4_window, image4_learned],
                         ids=["boundary", "window", "learned"])
def test_exact_transition_matrix_with_the_boundary_term(make):
    """The "contrast", "window" and "learned" posteriors: the exact kernel is
    reversible and irreducible; the kernel with λ forced to 0 is not
    reversible for it, nor (window) the kernel on the plain-rows twin, nor
    (learned) the kernel on the ζ = 1 twin."""
    model, img, atoms = make()
    states = set_partitions(4)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 5
    K = exact_kernel(Triadic(model, beta=0.3), model, states)
    assert max(_balance_errors(K, p)) < 1e-10
    assert _irreducible(K)
    # (twin, the least error it must show: the plain rows' π is 0.05 away
    # in total variation, their kernel's balance error 4e-3 and πK − π 1e-2)
    twins = [(paper_twin(model), 1e-2)]
    if model.window and model.likelihood_weight == 1.0:
        twins.append((plain_rows_twin(model, img, atoms), 1e-3))
    if model.likelihood_weight != 1.0:
        twins.append((uncoarsened_twin(model, img, atoms), 1e-3))
    for twin, least in twins:
        balance, stationarity = _balance_errors(exact_kernel(Triadic(twin, beta=0.3), twin, states),
                                                p)
        assert balance > least and stationarity > least


class _NoBeta(Triadic):
    """Wrong: drops the move-selection ratios β and 1/(1 − β)."""

    def _log_proposal_ratio(self, move, log_q_fwd, log_q_rev, n_touched):
        return log_q_rev - log_q_fwd


class _UniformFormula(Triadic):
    """Wrong: sequential allocation, but the paper's uniform-allocation q
    ratios (its eqs. for (1/2)^(n−2) and (1/3)^(n−3), n the touched items)."""

    def _log_proposal_ratio(self, move, log_q_fwd, log_q_rev, n):
        u12 = (n - 2) * _LOG2
        u23 = (n - 3) * _LOG3 - (n - 2) * _LOG2
        ratio = {"split12": u12, "merge21": -u12, "split23": u23, "merge32": -u23}[move]
        return self._log_r[move] + ratio


@pytest.mark.parametrize("wrong", [_NoBeta, _UniformFormula], ids=["no-beta", "uniform-q"])
def test_exact_matrix_catches_wrong_ratios(wrong):
    model = mixture(4, seed=2)
    states = set_partitions(4)
    p = exact_distribution(model, states)
    ok = exact_kernel(Triadic(model, beta=0.3), model, states)
    assert max(_balance_errors(ok, p)) < 1e-10
    bad = exact_kernel(wrong(model, beta=0.3), model, states)
    balance, stationarity = _balance_errors(bad, p)
    assert balance > 1e-3 and stationarity > 1e-3


def test_step_draws_follow_the_enumerated_law(image5_kernel):
    """One-step frequencies of ``step`` from three states against K's rows:
    the anchors, move coin, orders and k positions ``step`` draws are the
    ones the enumeration assumes."""
    model, kernel, states, K = image5_kernel
    rng = np.random.default_rng(8)
    n_draws = 3000
    for start in [(0, 0, 0, 0, 0), (0, 0, 1, 1, 0), (0, 1, 2, 2, 0)]:
        a = states.index(start)
        counts = np.zeros(len(states))
        state = model.new_state(np.array(start))
        for _ in range(n_draws):
            info = kernel.step(state, rng)
            counts[states.index(canonical(state.partition.labels))] += 1
            if info.accepted:
                state = model.new_state(np.array(start))
        exp = K[a] * n_draws
        big = exp >= 5
        obs_b = np.append(counts[big], counts[~big].sum())
        exp_b = np.append(exp[big], exp[~big].sum())
        if exp_b[-1] == 0:
            assert obs_b[-1] == 0
            obs_b, exp_b = obs_b[:-1], exp_b[:-1]
        pvalue = stats.chisquare(obs_b, exp_b).pvalue
        assert pvalue > 1e-3, f"from {start}: chi-square p-value {pvalue:.2g}"


# ------------------------------------------------------ visit frequencies
N_SAMPLES = 3000
THIN = 20


def _run(kernel, model, states, p, seed, thin=THIN, temperature=1.0, n_samples=N_SAMPLES):
    return chain_visits(kernel, model, states, p, seed, n_samples, thin, temperature)


def _assert_matches(tv, pvalue, p, n_samples=N_SAMPLES):
    assert_matches(tv, pvalue, p, n_samples)


@pytest.mark.parametrize("name,beta", [("grey", 0.5), ("colour", 0.3), ("grey-window", 0.5),
                                       ("grey-learned", 0.5)])
def test_triadic_alone_leaves_image_posterior_invariant(name, beta):
    model = {"grey": grey_setting, "colour": colour_setting,
             "grey-window": grey_window_setting, "grey-learned": grey_learned_setting}[name]()[0]
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 10
    kernel = Triadic(model, beta=beta)
    tv, pvalue = _run(kernel, model, states, p, seed=2024)
    _assert_matches(tv, pvalue, p)
    rates = kernel.acceptance_rates()
    assert all(0.02 < rates[m] < 1 for m in MOVES), rates


def test_triadic_alone_on_a_mixture_without_graph():
    """The paper's own setting: a DP mixture, anchors a uniform triple."""
    model = mixture(6)
    assert model.graph is None
    states = set_partitions(6)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 10
    kernel = Triadic(model, beta=0.3)
    assert kernel.anchors == "uniform"
    tv, pvalue = _run(kernel, model, states, p, seed=21, thin=10, n_samples=4000)
    _assert_matches(tv, pvalue, p, n_samples=4000)


def test_enumeration_catches_the_uniform_allocation_formula():
    model = grey_setting()[0]
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    tv, pvalue = _run(_UniformFormula(model), model, states, p, seed=7, n_samples=1000)
    assert pvalue < 1e-3 and tv > 1.5 * iid_tv(p, 1000)


# ------------------------------------------------------------ unit checks
def test_moves_and_rejections():
    """Accepted splits add a label, merges remove one; a rejection leaves
    the labelling (label names included) untouched; caches stay exact."""
    model = grey_setting()[0]
    kernel = Triadic(model, beta=0.3)
    rng = np.random.default_rng(1)
    state = model.new_state(np.array([0, 0, 1, 1, 2, 2]))
    seen = set()
    change = {"split12": 1, "split23": 1, "merge21": -1, "merge32": -1}
    for _ in range(600):
        before = state.labels.copy()
        n_before = state.partition.n_labels
        log_pi = state.log_pi
        info = kernel.step(state, rng, 1.0)
        seen.add((info.move, info.accepted))
        if not info.accepted:
            np.testing.assert_array_equal(state.labels, before)
            assert state.log_pi == log_pi
        else:
            assert info.moved > 0
            assert state.partition.n_labels == n_before + change[info.move]
            assert state.log_pi == pytest.approx(log_pi + info.delta, abs=1e-9)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    assert seen == {(m, acc) for m in MOVES for acc in (True, False)} | {("noop", False)}


def test_noop_when_i_and_j_share_a_label_that_k_does_not():
    """c_i = c_j ≠ c_k: no move has this case as its reverse."""
    model = image5()
    kernel = Triadic(model)
    assert kernel.move_probabilities(0, 0, 1) == {"noop": 1.0}
    assert kernel.move_probabilities(0, 0, 0) == {"split12": 1.0}
    assert kernel.move_probabilities(0, 1, 1) == {"merge21": 0.5, "split23": 0.5}
    assert kernel.move_probabilities(0, 1, 0) == {"merge21": 0.5, "split23": 0.5}
    assert kernel.move_probabilities(0, 1, 2) == {"merge32": 1.0}
    state = model.new_state(np.array([0, 0, 0, 0, 0]))
    rng = np.random.default_rng(3)
    noops = 0
    for _ in range(300):
        labels = state.labels.copy()
        info = kernel.step(state, rng)
        if info.move == "noop":
            noops += 1
            assert not info.accepted and info.moved == 0
            np.testing.assert_array_equal(state.labels, labels)
    assert noops > 0


@pytest.mark.parametrize("anchors", ["edge", "uniform"])
def test_anchor_draws_follow_anchor_probabilities(anchors):
    model = image5()
    kernel = Triadic(model, anchors=anchors)
    law = kernel.anchor_probabilities()
    rng = np.random.default_rng(0)
    n = 30000
    counts = {}
    for _ in range(n):
        t = kernel._draw_anchors(rng)
        assert len(set(t)) == 3 and t in law
        counts[t] = counts.get(t, 0) + 1
    keys = sorted(law)
    obs = np.array([counts.get(t, 0) for t in keys])
    exp = np.array([law[t] for t in keys]) * n
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    if anchors == "edge":
        edges = {tuple(e) for e in model.graph.edges.tolist()}
        for i, j, k in keys:
            assert (min(i, j), max(i, j)) in edges
            assert (min(i, k), max(i, k)) in edges or (min(j, k), max(j, k)) in edges


def test_member_index_survives_other_kernels():
    model = colour_setting()[0]
    kernel = Triadic(model)
    gibbs = Gibbs(model, compiled=False)
    rng = np.random.default_rng(4)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    for _ in range(300):
        for _ in range(2):
            gibbs.step(state, rng, 1.0)
        kernel.step(state, rng, 1.0)
        index = kernel._index[state]
        for lab in state.partition.used_labels().tolist():
            np.testing.assert_array_equal(np.sort(index.members(state.partition, lab)),
                                          np.flatnonzero(state.labels == lab))
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)


@pytest.mark.parametrize("which", ["grey", "colour", "window", "mixture"])
def test_compiled_run_makes_the_moves_of_the_steps(which):
    """The compiled run and the Python steps draw the same numbers and make
    the same moves, bit for bit: labels and log π after every update (one
    update per call, and one run recording the path), the counts; also with
    another kernel moving vertices in between (stale member lists)."""
    import hashlib

    model = {"grey": lambda: grey_setting()[0], "colour": lambda: colour_setting()[0],
             "window": lambda: grey_window_setting()[0], "mixture": lambda: mixture(7)}[which]()
    n_steps = 500
    temps = 1.0 + np.arange(n_steps) % 3 * 0.5
    for gibbs in (None, Gibbs(model, compiled=False)):
        got = {}
        for mode in ("step", "run") + (("path",) if gibbs is None else ()):
            kernel = Triadic(model, beta=0.4)
            assert kernel.compiled
            rng = np.random.default_rng(31)
            state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
            h = hashlib.sha256()
            if mode == "path":
                path = np.empty((n_steps, model.n_vertices), np.int64)
                kernel.run(state, rng, temps, path=path)
                labels_hash = hashlib.sha256(path.tobytes()).hexdigest()
            else:
                hl = hashlib.sha256()
                for s in range(n_steps):
                    if gibbs is not None and s % 5 == 0:
                        for _ in range(2):
                            gibbs.step(state, rng, 1.0)
                    if mode == "step":
                        kernel.step(state, rng, float(temps[s]))
                    else:
                        kernel.run(state, rng, temps[s:s + 1])
                    h.update(state.labels.tobytes())
                    h.update(np.float64(state.log_pi).tobytes())
                    hl.update(state.labels.tobytes())
                labels_hash = hl.hexdigest()
            got[mode] = (h.hexdigest(), labels_hash, state.log_pi, kernel.counts)
            assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
        assert got["run"] == got["step"]
        if gibbs is None:
            assert got["path"][1:] == got["step"][1:]
            assert all(got["step"][3][m][1] > 0 for m in MOVES)


def test_options_and_registry():
    model = grey_setting()[0]
    assert KERNELS["triadic"] is Triadic and "triadic" in swcuts.SAMPLERS
    assert "triadic" in swcuts.segmentation.options.STEPS_PER_ATOM and "triadic" in swcuts.segmentation.options.DEFAULT_T0
    kernel = Triadic(model, None, beta=0.2, compiled=None)
    assert kernel.name == "triadic" and kernel.compiled is True and kernel.anchors == "edge"
    assert Triadic(model, compiled=False).compiled is False  # the driver calls step()
    assert Triadic(model, anchors="uniform").anchors == "uniform"
    for beta in (0.0, 1.0, -0.1, 1.5, True, "a"):
        with pytest.raises(ValueError):
            Triadic(model, beta=beta)
    with pytest.raises(ValueError):
        Triadic(model, anchors="pair")
    with pytest.raises(ValueError):
        Triadic(mixture(5), anchors="edge")
    with pytest.raises(ValueError):
        Triadic(PottsModel(model.graph, n_labels=3, beta=0.5))
    state = model.new_state(np.zeros(6, dtype=np.int64))
    with pytest.raises(ValueError):
        Triadic(model).step(state, np.random.default_rng(0), temperature=0.0)


def test_too_few_vertices_is_a_no_op():
    atoms = np.array([[0, 1]])
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(np.array([[0.2, 0.8]]), atoms, g, bins=4)
    state = model.new_state(np.zeros(2, dtype=np.int64))
    info = Triadic(model).step(state, np.random.default_rng(0))
    assert info.move == "noop" and not info.accepted and state.labels.tolist() == [0, 0]


# ------------------------------------------------------------ image scale
def _image(h=40, w=50, seed=0):
    rng = np.random.default_rng(seed)
    img = np.full((h, w), 0.25)
    img[:, w // 2:] = 0.75
    img[h // 4: 3 * h // 4, w // 8: w // 3] = 0.5
    return np.clip(img + 0.04 * rng.standard_normal((h, w)), 0.0, 1.0)


def test_segment_api_smoke():
    img = _image()
    a = swcuts.segment(img, sampler="triadic", steps=200, seed=0)
    b = swcuts.segment(img, sampler="triadic", steps=200, seed=0)
    assert a.sampler == "triadic" and a.steps == 200
    assert a.labels.shape == img.shape
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.energy == pytest.approx(-a.model.log_target(a.vertex_labels), rel=1e-9, abs=1e-6)
    assert a.accepted > 0
    assert a.energy < a.trace.energy[0]  # the run improved on its start
