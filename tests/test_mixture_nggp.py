"""The NGGP partition prior (Lee & Choi eqs. 4-6): its joint density of
(partition, u) against the paper's integrals, its normalisation, the exact
move of u, σ = 0 as the Dirichlet process for every sampler, and every
mixture sampler's visit frequencies against the enumerated partition
posterior (u integrated out numerically), each with negative controls."""

import math
from collections import Counter

import numpy as np
import pytest
from scipy import integrate, stats

import swcuts
from enumeration import compare, exact_distribution, iid_tv, set_partitions
from swcuts.io.errors import InputError
from swcuts.models.mixture.priors import NGGP, DirichletProcess
from swcuts.models.mixture.model import AuxiliaryCycle, MixtureModel, crp_log_prior
from swcuts.models.partition import canonical
from swcuts.samplers.reconfiguration.kernel import SRM, Reconfiguration
from swcuts.samplers.gibbs import Gibbs
from swcuts.samplers.split_merge import RandomSplit, SplitMerge
from swcuts.samplers.tree_guided.kernel import TreeGuided
from swcuts.samplers.triadic.kernel import Triadic
from swcuts.samplers.common import seed_compiled_rng

BINARY = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [1, 0, 0, 0],
                   [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 0]])
STATES6 = set_partitions(6)


def nggp6(sigma=0.5):
    return MixtureModel(BINARY, "beta-bernoulli", alpha=1.0, prior="nggp", sigma=sigma)


# ---------------------------------------------------------------------------
# The prior
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("alpha,sigma", [(1.0, 0.3), (2.5, 0.7), (0.3, 0.5), (1.0, 0.95)])
def test_nggp_partition_prior_sums_to_one(alpha, sigma):
    prior = NGGP(alpha, sigma)
    for n in (1, 2, 3, 5, 6):
        total = sum(math.exp(prior.log_prior(np.bincount(s))) for s in set_partitions(n))
        assert total == pytest.approx(1.0, abs=1e-9)


def test_nggp_joint_matches_the_papers_integrals():
    """log p(partition, u) against eq. 4 with ψ and κ of eq. 5 integrated
    numerically from the Lévy intensity ρ(dw) = α/Γ(1−σ) w^(−1−σ) e^(−w) dw."""
    alpha, sigma = 1.7, 0.4
    prior = NGGP(alpha, sigma)
    sizes = np.array([3, 1, 2])
    n = int(sizes.sum())

    def rho(w):
        return alpha / math.gamma(1 - sigma) * w ** (-1 - sigma) * math.exp(-w)

    for u in (0.3, 2.0, 11.0):
        psi = integrate.quad(lambda w: -math.expm1(-u * w) * rho(w), 0, np.inf, limit=200)[0]
        kappa = [integrate.quad(lambda w: w ** m * math.exp(-u * w) * rho(w), 0, np.inf,
                                limit=200)[0] for m in sizes]
        ref = ((n - 1) * math.log(u) - math.lgamma(n) - psi + sum(math.log(k) for k in kappa))
        assert prior.log_prior(sizes, u) == pytest.approx(ref, abs=1e-7)
        assert prior.psi(u) == pytest.approx(psi, rel=1e-8)


def test_nggp_marginal_against_quadrature_in_u():
    """The partition marginal (u integrated out in log u) against quad in u."""
    prior = NGGP(0.8, 0.6)
    sizes = np.array([2, 2, 1])
    ref = math.log(integrate.quad(lambda u: math.exp(prior.log_prior(sizes, u)), 0, np.inf,
                                  limit=400, epsrel=1e-11)[0])
    assert prior.log_prior(sizes) == pytest.approx(ref, abs=1e-8)


def test_sigma_zero_is_the_dirichlet_process():
    prior = NGGP(1.3, 0.0)
    assert not prior.has_auxiliary and prior.initial_u(10) is None
    for s in set_partitions(5):
        sizes = np.bincount(s)
        assert prior.log_prior(sizes) == crp_log_prior(sizes, 1.3)
    assert np.array_equal(prior.params(), DirichletProcess(1.3).params())
    # σ → 0 is continuous.
    assert NGGP(1.3, 1e-9).log_prior([2, 3, 1]) == pytest.approx(crp_log_prior([2, 3, 1], 1.3),
                                                                 abs=1e-6)


def test_delta_matches_the_joint_under_nggp():
    model = MixtureModel(BINARY[:, :3].repeat(2, axis=0)[:9], "beta-bernoulli", alpha=0.7,
                         prior="nggp", sigma=0.35)
    rng = np.random.default_rng(4)
    for _ in range(200):
        labels = rng.integers(0, 4, size=9)
        u = float(np.exp(rng.normal(1.0, 1.5)))
        state = model.new_state(labels, u=u)
        assert state.log_pi == pytest.approx(model.log_target(labels, u), abs=1e-9)
        R = rng.choice(9, size=rng.integers(1, 5), replace=False)
        new = int(rng.integers(0, 9))
        after = labels.copy()
        after[R] = new
        d = model.delta(state, R, new)
        assert d == pytest.approx(model.log_target(after, u) - model.log_target(labels, u),
                                  abs=1e-9)
        model.apply(state, R, new, d)
        d_u = model.update_auxiliary(state, rng)
        assert state.log_pi == pytest.approx(model.log_target(after, state.u), abs=1e-8)
        assert d_u == pytest.approx(model.log_target(after, state.u)
                                    - model.log_target(after, u), abs=1e-8)


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_u_move_samples_its_conditional(temperature):
    """The slice move of u at a fixed partition against the CDF of
    p(u | partition)^(1/T) (quadrature), by a Kolmogorov-Smirnov test."""
    model = nggp6(0.5)
    state = model.new_state(np.array([0, 0, 1, 1, 1, 2]))
    rng = np.random.default_rng(11)
    draws = []
    for _ in range(4000):
        model.update_auxiliary(state, rng, temperature)
        draws.append(state.u)
    draws = np.array(draws[::2])
    prior = model.prior

    def dens(u):
        return math.exp(prior.log_u_density(u, 6, 3) / temperature - 3.0)

    z = integrate.quad(dens, 0, np.inf, limit=400)[0]

    def cdf(x):
        return np.array([integrate.quad(dens, 0, v, limit=400)[0] / z for v in np.atleast_1d(x)])

    assert stats.kstest(draws, cdf).pvalue > 1e-3


def test_sigma_zero_draws_no_random_number():
    model = nggp6(0.0)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    assert state.u is None
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    assert model.update_auxiliary(state, rng) == 0.0
    assert rng.bit_generator.state == before


@pytest.mark.parametrize("sampler", ["gibbs", "split-merge", "random-split", "triadic",
                                     "reconfiguration", "srm", "tree-guided"])
def test_nggp_with_sigma_zero_gives_the_dp_labels(sampler):
    x = np.random.default_rng(0).integers(0, 2, (20, 4))
    kw = dict(model="beta-bernoulli", sampler=sampler, seed=3, steps=150, init="random")
    a = swcuts.cluster(x, **kw)
    b = swcuts.cluster(x, prior="nggp", sigma=0, **kw)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.best_labels, b.best_labels)
    assert a.log_posterior == b.log_posterior and b.u is None
    assert np.array_equal(a.trace.as_arrays()["energy"], b.trace.as_arrays()["energy"])


def test_cluster_with_nggp_runs_and_keeps_the_joint_exact():
    x = np.random.default_rng(1).integers(0, 2, (25, 5))
    res = swcuts.cluster(x, model="beta-bernoulli", sampler="split-merge", prior="nggp",
                         sigma=0.4, seed=2, steps=300)
    assert res.u > 0 and res.model.prior.sigma == 0.4
    assert res.log_posterior == pytest.approx(res.model.log_target(res.best_labels))


@pytest.mark.parametrize("kwargs,words", [
    (dict(prior="pitman-yor"), "unknown partition prior"),
    (dict(prior="nggp", sigma=1.0), "sigma must lie in [0, 1)"),
    (dict(prior="nggp", sigma=-0.1), "sigma must lie in [0, 1)"),
    (dict(prior="nggp", sigma="x"), "sigma must be a number"),
    (dict(prior="nggp", sigma=0.5, alpha=0.0), "alpha (the concentration of the clusters' prior) must be"),
])
def test_bad_prior_arguments(kwargs, words):
    with pytest.raises(InputError) as err:
        swcuts.cluster(BINARY, model="beta-bernoulli", steps=5, **kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------------------
# Exact enumeration: every sampler under the NGGP prior
# ---------------------------------------------------------------------------
#
# The chain runs on (partition, u): the kernel's moves of the partition at
# fixed u, each followed by the slice move of u (AuxiliaryCycle). Its
# partition visits are compared with the partition marginal p(partition | X),
# u integrated out by quadrature (MixtureModel.log_target(labels)): exact,
# because the marginal of the chain's stationary law on (partition, u) is
# that marginal, and the quadrature's error (~1e-10) is far below the Monte
# Carlo noise. A discretised u would change the target instead.

N_SAMPLES = 3000


def _history(p):
    rng = np.random.default_rng(0)
    return [np.array(STATES6[t]) for t in rng.choice(len(STATES6), 6, p=p)]


SAMPLERS = {
    # name: (kernel factory, thin)
    "gibbs": (lambda m, p: Gibbs(m), 12),
    "split-merge": (lambda m, p: SplitMerge(m, t=2), 15),
    "random-split": (lambda m, p: RandomSplit(m), 20),
    "triadic": (lambda m, p: Triadic(m), 15),
    "reconfiguration": (lambda m, p: Reconfiguration(m, history=_history(p)), 2),
    "srm": (lambda m, p: SRM(m), 2),
    "tree-guided": (lambda m, p: TreeGuided(m), 10),
}


def nggp_visits(kernel, model, seed, n_samples, thin, move_u=True, u=None):
    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64), u=u)
    chain = AuxiliaryCycle(kernel) if move_u else kernel
    for _ in range(200):
        chain.step(state, rng, 1.0)
    counts = Counter()
    for _ in range(n_samples):
        for _ in range(thin):
            chain.step(state, rng, 1.0)
        counts[canonical(state.partition.labels)] += 1
    assert state.log_pi == pytest.approx(model.log_target(state.labels, state.u), abs=1e-6)
    return counts


@pytest.fixture(scope="module")
def nggp_posterior():
    model = nggp6(0.5)
    p = exact_distribution(model, STATES6)
    assert 1.0 / np.sum(p ** 2) > 10  # spread over many partitions
    return model, p


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_visits_match_the_nggp_posterior(name, nggp_posterior):
    model, p = nggp_posterior
    factory, thin = SAMPLERS[name]
    tv, pvalue = compare(nggp_visits(factory(model, p), model, 1, N_SAMPLES, thin), STATES6, p)
    floor = iid_tv(p, N_SAMPLES)
    assert tv < 1.5 * floor, f"total variation {tv:.3f} (iid noise floor {floor:.3f})"
    assert pvalue > 1e-3, f"chi-square p-value {pvalue:.2g}"
    # Negative control: the same sampler with the DP's weights (same α).
    dp = MixtureModel(BINARY, "beta-bernoulli", alpha=1.0)
    n = 600
    tv, pvalue = compare(nggp_visits(factory(dp, p), dp, 1, n, thin), STATES6, p)
    assert pvalue < 1e-3 and tv > 1.5 * iid_tv(p, n)


def test_enumeration_catches_a_frozen_u(nggp_posterior):
    """Negative control: without the u move (u frozen at 1) the partition
    chain samples p(partition | u = 1, X), not the marginal."""
    model, p = nggp_posterior
    n = 1000
    counts = nggp_visits(Gibbs(model), model, 1, n, 12, move_u=False, u=1.0)
    tv, pvalue = compare(counts, STATES6, p)
    assert pvalue < 1e-3 and tv > 1.5 * iid_tv(p, n)


def test_annealing_driver_keeps_the_joint_exact():
    """anneal(keep_best=True) leaves the state at its best labels with
    log π of (labels, u), whichever u the state holds."""
    from swcuts.inference.anneal import Schedule, anneal

    x = np.random.default_rng(0).integers(0, 2, (20, 4))
    model = MixtureModel(x, "beta-bernoulli", prior="nggp", sigma=0.3)
    state = model.new_state(np.zeros(20, dtype=np.int64))
    anneal(AuxiliaryCycle(SplitMerge(model)), state, Schedule(1.0, 1.0),
           rng=np.random.default_rng(1), steps=100)
    assert state.log_pi == pytest.approx(model.log_target(state.labels, state.u), abs=1e-8)
