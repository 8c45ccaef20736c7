"""Dirichlet-process mixtures: the fast ``delta``/``apply`` path against the
slow ``log_target``, marginal likelihoods against independent references,
the CRP prior, π-invariance of Gibbs by exact enumeration, the papers'
data generators and the input checks."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from enumeration import compare, exact_distribution, iid_tv, set_partitions, visit_counts
from swcuts.io.errors import InputError
from swcuts.models.mixture.model import MixtureModel
from swcuts.evaluation.synthetic.clusters import (
    JAIN_NEAL_PROBABILITIES, jain_neal_bernoulli, lee_choi_gaussians, rossum_lines)
from swcuts.models.mixture.likelihoods import (
    BetaBernoulli, ConjugateLikelihood, LineMixture, NormalInverseWishart)
from swcuts.models.mixture.model import crp_log_prior
from swcuts.models.partition import canonical
from swcuts.samplers.gibbs import Gibbs
from swcuts.samplers.common import seed_compiled_rng

# ---------------------------------------------------------------------------
# Small data sets, one per likelihood
# ---------------------------------------------------------------------------

BINARY6 = np.array([[1, 1, 0], [1, 1, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 1, 1]])
POINTS6 = np.array([[0.0, 0.0], [0.8, 0.3], [1.5, -0.3], [2.1, 0.5], [3.0, 0.1], [3.6, 0.7]])
LINES6 = np.array([[-2.0, -1.9], [0.0, 0.1], [2.0, 2.2], [-2.0, 2.1], [0.0, -0.2], [2.0, -1.8]])


def small_model(name, n=None):
    """A model on 6 items (or the first n of a generated set) per likelihood."""
    if name == "beta-bernoulli":
        x = BINARY6 if n is None else jain_neal_bernoulli(max(n, 5), 6, seed=1)[0][:n]
        return MixtureModel(x, "beta-bernoulli", alpha=1.0)
    if name == "gaussian":
        x = POINTS6 if n is None else lee_choi_gaussians(13, seed=2)[0][:n]
        return MixtureModel(x, "gaussian", alpha=1.0, mu0=[1.8, 0.2], kappa0=0.5, nu0=4.0,
                            Psi0=0.6)
    x = LINES6 if n is None else rossum_lines(3, 4, seed=3)[0][:n]
    return MixtureModel(x, "lines", alpha=1.0, sigma=0.5, prior_cov=4.0)


NAMES = ("beta-bernoulli", "gaussian", "lines")
MODELS9 = {name: small_model(name, 9) for name in NAMES}


def tol(*values):
    return 1e-9 * max(1.0, *(abs(v) for v in values))


def moved(labels, R, new_label):
    out = np.array(labels, dtype=np.int64)
    out[np.asarray(R, dtype=np.int64)] = new_label
    return out


def assert_exact_delta(model, labels, R, new_label):
    state = model.new_state(np.array(labels))
    before = state.labels.copy()
    stats_before = state.stats.copy()
    d = model.delta(state, R, new_label)
    # delta does not touch the state.
    assert np.array_equal(state.labels, before)
    assert np.array_equal(state.stats, stats_before)
    lt0 = model.log_target(before)
    lt1 = model.log_target(moved(before, R, new_label))
    assert abs(d - (lt1 - lt0)) <= tol(lt0, lt1), (d, lt1 - lt0)
    return d


# ---------------------------------------------------------------------------
# delta == log_target difference
# ---------------------------------------------------------------------------


@st.composite
def moves(draw):
    n = 9
    labels = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    new_label = draw(st.integers(0, n - 1))
    return labels, np.flatnonzero(mask), new_label


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, derandomize=True)
@given(move=moves())
def test_delta_matches_log_target_for_random_moves(name, move):
    labels, R, new_label = move
    assert_exact_delta(MODELS9[name], labels, R, new_label)


@pytest.mark.parametrize("name", NAMES)
def test_delta_every_move_kind(name):
    model = MODELS9[name]
    labels = np.array([0, 0, 0, 3, 3, 5, 5, 5, 8])
    cases = {
        "canonical": ([1], 3),
        "merge": ([3, 4], 0),                # a whole label joins another
        "merge-into-singleton": ([0, 1, 2], 8),
        "split": ([5, 6], 2),                # part of a label to an unused slot
        "rename": ([3, 4], 1),               # a whole label to an unused slot: no change
        "multi-label": ([1, 3, 6, 8], 5),    # R spans four labels
        "multi-label-split": ([0, 3, 5], 7),
        "all-to-one": (list(range(9)), 4),
        "noop-same-label": ([5, 6], 5),
        "noop-empty": ([], 6),
        "duplicates": ([1, 1, 3, 3], 8),
    }
    d = {}
    for kind, (R, new_label) in cases.items():
        d[kind] = assert_exact_delta(model, labels, np.array(R, dtype=np.int64), new_label)
    assert d["rename"] == pytest.approx(0.0, abs=1e-12)
    assert d["noop-same-label"] == 0.0 and d["noop-empty"] == 0.0


@pytest.mark.parametrize("name", NAMES)
def test_apply_keeps_caches_exact_over_a_chain(name):
    model = small_model(name, 9) if name != "gaussian" else MixtureModel(
        lee_choi_gaussians(40, seed=5)[0], "gaussian")
    n = model.n_vertices
    rng = np.random.default_rng(17)
    state = model.new_state(rng.integers(0, 3, n))
    for step in range(400):
        part = state.partition
        kind = step % 4
        if kind == 0:        # one item anywhere
            R = np.array([rng.integers(n)])
        elif kind == 1:      # a whole label (merge or rename)
            R = part.members(int(rng.choice(part.used_labels())))
        else:                # a random subset, often across labels
            R = np.flatnonzero(rng.random(n) < 0.3)
        new_label = part.fresh_label() if rng.random() < 0.3 else int(rng.choice(part.used_labels()))
        d = model.delta(state, R, new_label)
        model.apply(state, R, new_label, d)
        if step % 20 == 0 or step == 399:
            fresh = model.new_state(state.labels)
            scale = np.abs(fresh.stats).max()
            assert np.allclose(state.stats, fresh.stats, rtol=0, atol=1e-9 * max(scale, 1.0))
            assert np.allclose(state.loglik, fresh.loglik, rtol=1e-9, atol=1e-9)
            assert state.log_pi == pytest.approx(model.log_target(state.labels), rel=1e-10, abs=1e-8)
            assert np.array_equal(state.partition.size, np.bincount(state.labels, minlength=n))
            unused = np.flatnonzero(state.partition.size == 0)
            assert np.all(state.stats[unused] == 0.0) and np.all(state.loglik[unused] == 0.0)
    if name == "beta-bernoulli":  # integer statistics never drift
        assert np.array_equal(state.stats, model.new_state(state.labels).stats)


def test_delta_rejects_out_of_range_moves():
    model = MODELS9["lines"]
    state = model.new_state(np.zeros(9, dtype=np.int64))
    with pytest.raises(IndexError):
        model.delta(state, [0], 9)
    with pytest.raises(IndexError):
        model.delta(state, [9], 1)
    # The scratch marks were restored: a good move still works.
    assert_exact_delta(model, np.zeros(9, dtype=np.int64), np.array([0, 1]), 3)


# ---------------------------------------------------------------------------
# Marginal likelihoods against brute-force references
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("a,b", [(1.0, 1.0), (0.5, 2.0), (3.0, 0.7)])
def test_beta_bernoulli_marginal_against_beta_integral(a, b):
    rng = np.random.default_rng(3)
    x = (rng.random((7, 3)) < 0.6).astype(int)
    lik = BetaBernoulli(a, b).bind(x.astype(float))
    got = lik.log_marginal(lik.stats(x).sum(axis=0))
    ref = 0.0
    for i in range(3):
        s, n = int(x[:, i].sum()), x.shape[0]
        val, _ = integrate.quad(lambda t: t ** s * (1 - t) ** (n - s) * stats.beta.pdf(t, a, b), 0, 1,
                                epsabs=0, epsrel=1e-12, limit=200)
        ref += math.log(val)
        # and the closed form through scipy's beta function
        closed = special.betaln(a + s, b + n - s) - special.betaln(a, b)
        assert closed == pytest.approx(math.log(val), rel=1e-8)
    assert got == pytest.approx(ref, rel=1e-8)


def test_niw_marginal_against_numerical_integration_1d():
    x = np.array([0.3, -0.5, 1.1, 0.8])
    mu0, kappa0, nu0, psi0 = 0.2, 0.7, 3.0, 1.5
    lik = NormalInverseWishart(mu0=[mu0], kappa0=kappa0, nu0=nu0, Psi0=psi0).bind(x[:, None])
    got = lik.log_marginal(lik.stats(x[:, None]).sum(axis=0))

    # In 1-D, IW(ν0, Ψ0) is the inverse gamma with shape ν0/2 and scale Ψ0/2.
    # Integrate over μ and u = log σ² of likelihood × prior (Jacobian e^u).
    a, sc, n = nu0 / 2, psi0 / 2, x.size
    log_ig = a * math.log(sc) - math.lgamma(a)

    def integrand(mu, u):
        s2 = math.exp(u)
        ll = -0.5 * n * math.log(2 * math.pi * s2) - float(((x - mu) ** 2).sum()) / (2 * s2)
        lp = -0.5 * math.log(2 * math.pi * s2 / kappa0) - kappa0 * (mu - mu0) ** 2 / (2 * s2)
        return math.exp(ll + lp + log_ig - (a + 1) * u - sc / s2 + u)

    val, _ = integrate.dblquad(integrand, -15.0, 15.0, -10.0, 10.0, epsabs=0, epsrel=1e-10)
    assert got == pytest.approx(math.log(val), abs=1e-7)


def test_niw_marginal_is_consistent_with_the_student_t_predictive():
    """p(x1, x2, x3) = p(x1, x2) p(x3 | x1, x2), the predictive being the
    multivariate t of the NIW posterior (Murphy 2007, eq. 258)."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(3, 2)) @ np.array([[1.0, 0.4], [0.0, 0.7]])
    mu0 = np.array([0.3, -0.2])
    kappa0, nu0 = 0.4, 4.5
    psi0 = np.array([[1.2, 0.3], [0.3, 0.8]])
    lik = NormalInverseWishart(mu0=mu0, kappa0=kappa0, nu0=nu0, Psi0=psi0).bind(x)
    s = lik.stats(x)
    joint = lik.log_marginal(s.sum(axis=0))
    first = lik.log_marginal(s[:2].sum(axis=0))
    d, n = 2, 2
    xbar = x[:2].mean(axis=0)
    kn, nn = kappa0 + n, nu0 + n
    mun = (kappa0 * mu0 + n * xbar) / kn
    scatter = (x[:2] - xbar).T @ (x[:2] - xbar)
    psin = psi0 + scatter + kappa0 * n / kn * np.outer(xbar - mu0, xbar - mu0)
    dof = nn - d + 1
    pred = stats.multivariate_t.logpdf(x[2], loc=mun, shape=psin * (kn + 1) / (kn * dof), df=dof)
    assert joint == pytest.approx(first + pred, abs=1e-10)
    # ... and the first factor the same way from the prior predictive.
    one = lik.log_marginal(s[0])
    p1 = stats.multivariate_t.logpdf(x[0], loc=mu0, shape=psi0 * (kappa0 + 1) / (kappa0 * (nu0 - 1)),
                                     df=nu0 - 1)
    assert one == pytest.approx(p1, abs=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_line_marginal_against_gaussian_evidence(seed):
    rng = np.random.default_rng(seed)
    n = 6
    xs = rng.uniform(-3, 3, n)
    ys = 0.7 * xs - 0.4 + rng.normal(0, 0.3, n)
    pts = np.stack([xs, ys], axis=1)
    m0 = np.array([0.5, -1.0])
    S0 = np.array([[2.0, 0.3], [0.3, 1.5]])
    sigma = 0.4
    lik = LineMixture(sigma, prior_mean=m0, prior_cov=S0)
    got = lik.log_marginal(lik.stats(pts).sum(axis=0))
    X = np.stack([xs, np.ones(n)], axis=1)
    ref = stats.multivariate_normal.logpdf(ys, X @ m0, sigma ** 2 * np.eye(n) + X @ S0 @ X.T)
    assert got == pytest.approx(ref, abs=1e-9)


def test_lee_choi_preset_matches_the_paper():
    x, _ = lee_choi_gaussians(130, seed=4)
    lik = NormalInverseWishart.lee_choi().bind(x)
    cov = np.cov(x, rowvar=False)
    assert lik.kappa0 == 0.1 and lik.nu0 == 2 + 6
    assert np.allclose(lik.mu0, x.mean(axis=0))
    assert np.linalg.det(lik.Psi0) == pytest.approx(0.1, rel=1e-4)
    assert np.allclose(lik.Psi0 / lik.Psi0[0, 0], cov / cov[0, 0], rtol=1e-4)
    model = MixtureModel(x, "gaussian", preset="lee-choi")
    assert model.likelihood.nu0 == 8.0


def test_default_niw_hyperparameters_are_documented_values():
    x, _ = lee_choi_gaussians(130, seed=4)
    lik = MixtureModel(x, "gaussian").likelihood
    assert lik.kappa0 == 0.1 and lik.nu0 == 4.0
    assert np.allclose(lik.Psi0, np.cov(x, rowvar=False) / 10, rtol=1e-4)
    # An unbound instance is reusable: binding returns a copy.
    proto = NormalInverseWishart(kappa0=0.5)
    MixtureModel(x, proto)
    assert proto.mu0 is None and not proto.bound


# ---------------------------------------------------------------------------
# The CRP prior
# ---------------------------------------------------------------------------


class FlatLikelihood(ConjugateLikelihood):
    """A likelihood of 1 for every cluster (Python path, kind = None)."""

    def stats(self, x):
        x = np.atleast_2d(np.asarray(x, dtype=float))
        return np.ones((x.shape[0], 1))

    def log_marginal(self, stat):
        return 0.0


@pytest.mark.parametrize("alpha", [0.3, 1.0, 4.5])
def test_crp_prior_sums_to_one_over_all_partitions(alpha):
    model = MixtureModel(np.zeros((5, 1)), FlatLikelihood(), alpha=alpha)
    parts = set_partitions(5)
    assert len(parts) == 52  # Bell(5)
    total = sum(math.exp(model.log_target(np.array(p))) for p in parts)
    assert total == pytest.approx(1.0, rel=1e-12)
    # The probability of L clusters is the known |s(n, L)| α^L Γ(α)/Γ(α+n).
    p_single = math.exp(model.log_target(np.zeros(5, dtype=np.int64)))
    assert p_single == pytest.approx(math.gamma(5) * alpha * math.gamma(alpha) / math.gamma(alpha + 5))


def test_python_likelihood_path_gives_exact_deltas():
    class Gauss1(ConjugateLikelihood):
        """Known-variance 1-D Gaussian with a N(0, 1) prior on the mean."""

        def stats(self, x):
            x = np.atleast_2d(np.asarray(x, dtype=float))
            return np.stack([np.ones(x.shape[0]), x[:, 0], x[:, 0] ** 2], axis=1)

        def log_marginal(self, s):
            n, sx, sxx = s
            return float(-0.5 * n * math.log(2 * math.pi) - 0.5 * math.log(1 + n)
                         - 0.5 * (sxx - sx * sx / (1 + n)))

    model = MixtureModel(np.array([0.1, 0.3, 2.0, 2.2, -1.0, 5.0]), Gauss1(), alpha=0.7)
    rng = np.random.default_rng(4)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    for _ in range(60):
        R = np.flatnonzero(rng.random(6) < 0.4)
        new_label = int(rng.integers(6))
        lt0 = model.log_target(state.labels)
        d = model.delta(state, R, new_label)
        assert d == pytest.approx(model.log_target(moved(state.labels, R, new_label)) - lt0, abs=1e-10)
        model.apply(state, R, new_label, d)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-9)


def test_crp_log_prior_function():
    assert crp_log_prior([2, 0, 1], 2.0) == pytest.approx(
        2 * math.log(2.0) + math.lgamma(2) + math.lgamma(1) + math.lgamma(2.0) - math.lgamma(5.0))


# ---------------------------------------------------------------------------
# Exact enumeration: single-site Gibbs leaves π invariant
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_gibbs_leaves_mixture_posterior_invariant(name):
    model = small_model(name)
    assert model.graph is None
    states = set_partitions(model.n_vertices)
    assert len(states) == 203
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 10  # π is spread over many partitions
    rng = np.random.default_rng(2025)
    seed_compiled_rng(rng)
    kernel = Gibbs(model)
    # visit_counts calls step(); run() (the compiled loop that a compiled
    # likelihood enables) has its own enumeration test in test_mixture_compiled.
    assert kernel.compiled == kernel._mixture
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    n_samples = 6000
    counts = visit_counts(kernel, state, rng, n_samples=n_samples, thin=20, key=canonical)
    tv, pvalue = compare(counts, states, p)
    floor = iid_tv(p, n_samples)
    assert tv < 1.5 * floor, f"total variation {tv:.3f} (iid noise floor {floor:.3f})"
    assert pvalue > 1e-3, f"chi-square p-value {pvalue:.2g}"
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)


def test_enumeration_catches_a_wrong_target():
    """The invariance check has power: Gibbs on α = 1 against π with α = 3."""
    model = small_model("beta-bernoulli")
    wrong = MixtureModel(BINARY6, "beta-bernoulli", alpha=3.0)
    states = set_partitions(6)
    p = exact_distribution(wrong, states)
    rng = np.random.default_rng(6)
    kernel = Gibbs(model)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=3000, thin=20)
    _, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3


# ---------------------------------------------------------------------------
# The papers' data
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("d", [6, 8, 10])
def test_jain_neal_bernoulli(d):
    x, labels = jain_neal_bernoulli(100, d, seed=0)
    assert x.shape == (100, d) and x.dtype == np.uint8 and set(np.unique(x)) <= {0, 1}
    assert np.array_equal(np.bincount(labels), [20] * 5)
    x2, _ = jain_neal_bernoulli(100, d, seed=0)
    assert np.array_equal(x, x2)
    MixtureModel(x, "beta-bernoulli")  # valid model data


def test_jain_neal_probability_table_and_copied_column():
    x, labels = jain_neal_bernoulli(20000, 8, seed=1)
    freq = np.array([x[labels == k].mean(axis=0) for k in range(5)])
    expected = JAIN_NEAL_PROBABILITIES[:, [0, 1, 2, 3, 4, 5, 5, 5]]
    assert np.abs(freq - expected).max() < 0.02
    assert JAIN_NEAL_PROBABILITIES.shape == (5, 6)
    assert np.array_equal(JAIN_NEAL_PROBABILITIES[1], [.05, .05, .05, .05, .95, .95])


def test_lee_choi_gaussians():
    x, labels = lee_choi_gaussians(seed=0)
    assert x.shape == (1300, 2) and np.all(np.isfinite(x))
    assert np.array_equal(np.bincount(labels), [100] * 13)
    assert np.array_equal(x, lee_choi_gaussians(seed=0)[0])
    assert not np.array_equal(x, lee_choi_gaussians(seed=1)[0])
    # Clusters are compact relative to their separation.
    centres = np.array([x[labels == k].mean(axis=0) for k in range(13)])
    gaps = np.linalg.norm(centres[:, None] - centres[None], axis=2) + np.eye(13) * 99
    spread = max(np.sqrt(np.linalg.eigvalsh(np.cov(x[labels == k].T)).max()) for k in range(13))
    assert gaps.min() > 3 * spread


def test_true_partition_is_preferred_on_generated_data():
    for (x, labels), name in [(jain_neal_bernoulli(100, 6, seed=2), "beta-bernoulli"),
                              (lee_choi_gaussians(seed=2), "gaussian"),
                              (rossum_lines(seed=2), "lines")]:
        model = MixtureModel(x, name)
        one = model.log_target(np.zeros(model.n_vertices, dtype=np.int64))
        each = model.log_target(np.arange(model.n_vertices))
        true = model.log_target(labels)
        assert true > max(one, each), name


def test_rossum_lines():
    x, labels, coef = rossum_lines(4, 15, seed=5, return_params=True)
    assert x.shape == (60, 2) and coef.shape == (4, 2)
    assert np.array_equal(np.bincount(labels), [15] * 4)
    a, b = coef[labels, 0], coef[labels, 1]
    resid = x[:, 1] - (a * x[:, 0] + b)
    assert abs(resid.std() - 0.5) < 0.15
    # Points lie along segments of length 20 centred on (0, b).
    t = x[:, 0] * np.sqrt(1 + a ** 2)
    assert np.all(np.abs(t) <= 10.0)
    assert np.array_equal(rossum_lines(seed=1)[0], rossum_lines(seed=1)[0])


# ---------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------

GOOD_BIN = np.array([[0, 1], [1, 1], [0, 0]])
GOOD_REAL = np.array([[0.0, 1.0], [1.0, 2.0], [3.0, 0.5]])

BAD = [
    (dict(data=np.array([[0, 2], [1, 1]]), likelihood="beta-bernoulli"), InputError, "binary"),
    (dict(data=np.array([[0.5, 1.0], [1.0, 0.0]]), likelihood="beta-bernoulli"), InputError, "binary"),
    (dict(data=np.array([[0.0, np.nan], [1.0, 2.0]]), likelihood="gaussian"), InputError, "NaN"),
    (dict(data=np.array([[0.0, np.inf], [1.0, 2.0]]), likelihood="lines"), InputError, "infinite"),
    (dict(data=np.zeros((4, 3)), likelihood="lines"), InputError, "2 columns"),
    (dict(data=np.zeros(4), likelihood="lines"), InputError, "2-D"),
    (dict(data=np.zeros((2, 2, 2)), likelihood="gaussian"), InputError, "2-D"),
    (dict(data=np.array([["a", "b"], ["c", "d"]]), likelihood="gaussian"), InputError, "numeric"),
    (dict(data=np.array([[1 + 2j, 0], [0, 1]]), likelihood="gaussian"), InputError, "numeric"),
    (dict(data=np.array([[1.0, 2.0]]), likelihood="gaussian"), InputError, "at least 2 items"),
    (dict(data=np.zeros((0, 2)), likelihood="lines"), InputError, "at least 2 items"),
    (dict(data=np.zeros((3, 0)), likelihood="gaussian"), InputError, "feature"),
    (dict(data=GOOD_BIN, likelihood="beta-bernoulli", alpha=0.0), InputError, "alpha"),
    (dict(data=GOOD_BIN, likelihood="beta-bernoulli", alpha=-1.0), InputError, "alpha"),
    (dict(data=GOOD_BIN, likelihood="beta-bernoulli", alpha=float("nan")), InputError, "alpha"),
    (dict(data=GOOD_BIN, likelihood="poisson"), InputError, "unknown mixture likelihood"),
    (dict(data=GOOD_BIN, likelihood=3), TypeError, "likelihood must be"),
    (dict(data=GOOD_BIN, likelihood="beta-bernoulli", a=0.0), InputError, "a must"),
    (dict(data=GOOD_BIN, likelihood="beta-bernoulli", sigma=1.0), TypeError, "sigma"),
    (dict(data=GOOD_BIN, likelihood=BetaBernoulli(), a=2.0), TypeError, "by name"),
    (dict(data=GOOD_REAL, likelihood="gaussian", nu0=0.5), InputError, "nu0"),
    (dict(data=GOOD_REAL, likelihood="gaussian", kappa0=-1), InputError, "kappa0"),
    (dict(data=GOOD_REAL, likelihood="gaussian", Psi0=[[1.0, 2.0], [2.0, 1.0]]), InputError,
     "positive definite"),
    (dict(data=GOOD_REAL, likelihood="gaussian", Psi0=np.eye(3)), InputError, "Psi0"),
    (dict(data=GOOD_REAL, likelihood="gaussian", mu0=[0.0, 1.0, 2.0]), InputError, "mu0"),
    (dict(data=GOOD_REAL, likelihood="gaussian", preset="murphy"), InputError, "preset"),
    (dict(data=GOOD_REAL, likelihood="lines", sigma=0.0), InputError, "sigma"),
    (dict(data=GOOD_REAL, likelihood="lines", prior_cov=[[1.0, 0.0], [0.5, 1.0]]), InputError,
     "symmetric"),
]


@pytest.mark.parametrize("kwargs,exc,words", BAD, ids=[f"{b[0]['likelihood']}-{b[2]}" for b in BAD])
def test_bad_inputs_raise_one_line_errors(kwargs, exc, words):
    with pytest.raises(exc) as info:
        MixtureModel(**kwargs)
    msg = str(info.value)
    assert "\n" not in msg and msg
    assert words.lower() in msg.lower()


@pytest.mark.parametrize("call", [
    lambda: jain_neal_bernoulli(100, 5),
    lambda: jain_neal_bernoulli(3, 6),
    lambda: jain_neal_bernoulli(10.5, 6),
    lambda: lee_choi_gaussians(12),
    lambda: rossum_lines(0, 5),
    lambda: rossum_lines(1, 1),
    lambda: rossum_lines(sigma1=-1.0),
])
def test_bad_generator_arguments(call):
    with pytest.raises(InputError) as info:
        call()
    assert "\n" not in str(info.value)


def test_bad_labels_for_a_state():
    model = MODELS9["beta-bernoulli"]
    with pytest.raises(ValueError):
        model.new_state(np.zeros(8, dtype=np.int64))
    with pytest.raises(ValueError):
        model.new_state(np.full(9, 9, dtype=np.int64))
    with pytest.raises(ValueError):
        model.new_state(np.zeros(9))  # float labels
