"""The multinomial likelihood with a symmetric Dirichlet base measure
(Lee & Choi's NIPS-corpus model): its Dirichlet-multinomial marginal against
scipy and numerical integration, Δ log π against the slow log π (DP and
NGGP), Gibbs visits against the enumerated posterior with a negative
control, recovery of two obvious groups, and the input checks."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import swcuts
from enumeration import compare, exact_distribution, iid_tv, set_partitions, visit_counts
from swcuts.io.errors import InputError
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.mixture.likelihoods import Multinomial
from swcuts.samplers.gibbs import Gibbs
from swcuts.samplers.common import seed_compiled_rng

COUNTS6 = np.array([[3, 1, 0, 0], [2, 2, 0, 1], [4, 0, 1, 0],
                    [0, 1, 3, 2], [0, 0, 2, 4], [1, 0, 2, 2]])


@pytest.mark.parametrize("beta", [0.1, 0.7, 3.0])
def test_one_item_marginal_is_scipys_dirichlet_multinomial(beta):
    lik = Multinomial(beta).bind(COUNTS6)
    for x in COUNTS6:
        ref = stats.dirichlet_multinomial.logpmf(x, np.full(4, beta), x.sum())
        assert lik.log_marginal(lik.stats(x)) == pytest.approx(ref, abs=1e-10)


def test_cluster_marginal_against_integration_over_theta():
    """Three items with V = 2: ∫ Π_i Binomial(x_i | θ) Beta(θ | β, β) dθ."""
    x = np.array([[2, 1], [0, 3], [4, 4]])
    beta = 0.8
    lik = Multinomial(beta).bind(x)

    def f(t):
        return math.prod(stats.binom.pmf(xi[0], xi.sum(), t) for xi in x) * \
            stats.beta.pdf(t, beta, beta)

    ref = integrate.quad(f, 0, 1, epsabs=0, epsrel=1e-11, limit=200)[0]
    assert lik.log_marginal(lik.stats(x).sum(axis=0)) == pytest.approx(math.log(ref), abs=1e-8)


def test_empty_items_and_integer_statistics():
    x = np.array([[0, 0, 0], [5, 0, 1], [0, 0, 0]])
    model = MixtureModel(x, "multinomial", beta=0.5)
    # An item with no counts has marginal 1 whatever the cluster.
    assert model.log_target([0, 0, 1]) == pytest.approx(model.log_target([0, 1, 1]))
    state = model.new_state(np.array([0, 1, 0]))
    assert np.array_equal(state.stats[:, 3:], np.round(state.stats[:, 3:]))


@st.composite
def moves(draw):
    n = 6
    labels = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    new_label = draw(st.integers(0, n - 1))
    u = draw(st.floats(0.01, 100.0))
    return np.array(labels), np.flatnonzero(mask), new_label, u


MODELS = {"dp": MixtureModel(COUNTS6, "multinomial", alpha=1.3, beta=0.4),
          "nggp": MixtureModel(COUNTS6, "multinomial", alpha=1.3, prior="nggp", sigma=0.3,
                               beta=0.4)}


@pytest.mark.parametrize("prior", sorted(MODELS))
@settings(max_examples=150, deadline=None, derandomize=True)
@given(move=moves())
def test_delta_matches_log_posterior(prior, move):
    labels, R, new_label, u = move
    model = MODELS[prior]
    u = u if model.prior.has_auxiliary else None
    state = model.new_state(labels, u=u)
    after = labels.copy()
    after[R] = new_label
    lt0, lt1 = model.log_target(labels, u), model.log_target(after, u)
    assert state.log_pi == pytest.approx(lt0, abs=1e-9)
    assert model.delta(state, R, new_label) == pytest.approx(lt1 - lt0, abs=1e-9)


def test_gibbs_visits_match_the_posterior():
    model = MixtureModel(COUNTS6, "multinomial", alpha=1.0, beta=0.5)
    states = set_partitions(6)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 5
    rng = np.random.default_rng(8)
    seed_compiled_rng(rng)
    n = 4000
    state = model.new_state(np.zeros(6, dtype=np.int64))
    tv, pvalue = compare(visit_counts(Gibbs(model), state, rng, n, thin=12), states, p)
    assert tv < 1.5 * iid_tv(p, n) and pvalue > 1e-3, (tv, pvalue)
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)
    # Negative control: Gibbs on β = 3 against the posterior with β = 0.5.
    wrong = MixtureModel(COUNTS6, "multinomial", alpha=1.0, beta=3.0)
    state = wrong.new_state(np.zeros(6, dtype=np.int64))
    n = 1000
    tv, pvalue = compare(visit_counts(Gibbs(wrong), state, rng, n, thin=12), states, p)
    assert pvalue < 1e-3 and tv > 1.5 * iid_tv(p, n)


def test_cluster_recovers_two_vocabularies():
    rng = np.random.default_rng(3)
    a = rng.multinomial(40, [0.3, 0.3, 0.3, 0.025, 0.025, 0.025, 0.025], size=15)
    b = rng.multinomial(40, [0.025, 0.025, 0.025, 0.025, 0.3, 0.3, 0.3], size=15)
    x = np.vstack([a, b])
    for prior, kw in (("dp", {}), ("nggp", {"sigma": 0.3})):
        res = swcuts.cluster(x, model="multinomial", sampler="gibbs", prior=prior, seed=1,
                             steps=3000, **kw)
        truth = np.repeat([0, 1], 15)
        assert res.n_clusters == 2 and (np.array_equal(res.labels, truth)
                                        or np.array_equal(res.labels, 1 - truth))


@pytest.mark.parametrize("data,kwargs,words", [
    ([[1, -1], [0, 2]], {}, "non-negative integer counts"),
    ([[1.5, 1], [0, 2]], {}, "non-negative integer counts"),
    ([[1], [2]], {}, "at least 2 categories"),
    ([[1, 1], [0, 2]], {"beta": 0.0}, "beta must be a finite number > 0"),
])
def test_bad_inputs(data, kwargs, words):
    with pytest.raises(InputError) as err:
        MixtureModel(data, "multinomial", **kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)
