"""Burn-in by the MSER rule and thinning after it (swcuts.inference.burn_in):
the descent of a chain is dropped, a stationary chain keeps (almost) all its
draws, and the autocorrelation time after the burn-in is the chain's own --
with the descent kept it is not (the negative control)."""

import math

import numpy as np
import pytest

from swcuts.inference import diagnostics as dg
from swcuts.inference.burn_in import burn_in, mser_truncation, thinning


def _ar1(rng, n, phi=0.5, chains=1):
    x = np.zeros((chains, n))
    e = rng.standard_normal((chains, n))
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("descent", [50, 150, 300])
def test_the_descent_is_dropped(seed, descent):
    rng = np.random.default_rng(seed)
    x = _ar1(rng, 1000)[0]
    x[:descent] += np.linspace(30, 0, descent) ** 1.5 / 5  # a decaying trend, then level
    d = mser_truncation(x)
    assert 0.5 * descent <= d <= 1.5 * descent + 10, d
    assert d % 5 == 0 and d <= 500


@pytest.mark.parametrize("seed", range(4))
def test_a_stationary_chain_keeps_its_draws(seed):
    x = _ar1(np.random.default_rng(seed), 1000)[0]
    assert mser_truncation(x) <= 100


def test_burn_in_is_the_largest_over_chains_and_statistics():
    rng = np.random.default_rng(5)
    a = _ar1(rng, 600, chains=2)
    b = _ar1(rng, 600, chains=2)
    b[1, :200] += np.linspace(40, 0, 200)
    assert burn_in([a, b]) == max(mser_truncation(r) for r in [*a, *b])
    assert burn_in([a, b]) >= 100


def test_thinning_after_the_burn_in_is_the_chains_own_and_with_the_descent_it_is_not():
    rng = np.random.default_rng(6)
    x = _ar1(rng, 3000, chains=3)
    x[:, :300] += np.linspace(60, 0, 300)
    tau, burn = thinning([x])
    assert 200 <= burn <= 450
    assert 2.3 < tau < 3.8  # AR(1), phi = 0.5: (1 + phi) / (1 - phi) = 3
    with_descent = np.median([dg.integrated_autocorrelation_time(r) for r in x])
    assert with_descent > 3 * tau
    # The same figure as measuring the kept draws directly.
    assert tau == pytest.approx(np.median([dg.integrated_autocorrelation_time(r[burn:]) for r in x]))


def test_short_or_constant_series():
    assert mser_truncation(np.arange(15.0)) == 0  # three batches: too short
    assert mser_truncation(np.ones(100)) == 0
    tau, burn = thinning([np.ones((2, 50))])
    assert math.isnan(tau) and burn == 0
