"""The level-0 kernel under the affine object model (τ > 0): exact
enumeration of π(X⁽⁰⁾ | objects) on a 2×2 lattice, with the
translation-only kernel (the level 0 before the affine term reached it) as
the negative control, and the cached statistics and log π on a larger
lattice."""

from __future__ import annotations


import numpy as np
import pytest

from enumeration import assert_matches, compare
from test_motion import level0_distribution, level0_visits, tiny_posterior
from swcuts.samplers.velocity import VelocityGibbs

TAU = 0.6


@pytest.fixture(scope="module")
def affine_level0():
    post = tiny_posterior(seed=2, tau=TAU, alpha=1.0)
    # one object: its gradient spans both axes of the 2x2 lattice
    obj = np.zeros(4, np.int64)
    return post, obj, *level0_distribution(post, obj)


@pytest.mark.parametrize("sizes", [[2], [1, 2]])
def test_velocity_gibbs_leaves_affine_level0_conditional_invariant(affine_level0, sizes):
    post, obj, states, p = affine_level0
    kernel = VelocityGibbs(post, obj, 1, window_sizes=sizes)
    counts, state = level0_visits(kernel, post, n_samples=20000, thin=4, seed=3)
    assert state.log_pi == pytest.approx(post.log_target(state.x0, obj), abs=1e-6)
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 20000)


def test_enumeration_catches_translation_only_level0_under_affine_target(affine_level0):
    post, obj, states, p = affine_level0
    kernel = VelocityGibbs(post, obj, 1, window_sizes=[2], _translation_only=True)
    counts, _ = level0_visits(kernel, post, n_samples=20000, thin=4, seed=3)
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3


def test_affine_level0_keeps_statistics_and_log_pi_on_a_larger_lattice():
    post = tiny_posterior(seed=5, h=6, w=7, tau=0.3)
    obj = (np.arange(42) % 7 >= 3).astype(np.int64) + 2 * (np.arange(42) // 7 >= 3)
    kernel = VelocityGibbs(post, obj, 4)
    rng = np.random.default_rng(1)
    state = kernel.new_state(rng.integers(0, post.n_labels, 42))
    for _ in range(30):
        kernel.run(state, rng, np.ones(20))
        np.testing.assert_allclose(state.ostats, post.affine_stats(state.x0, obj, 4), atol=1e-6)
        assert state.log_pi == pytest.approx(post.log_target(state.x0, obj), abs=1e-6)


def _exact_site_moments(post, obj, x0):
    d = np.stack([post.du, post.dv])
    out = np.zeros((5, x0.size))
    for p in range(x0.size):
        logp = []
        for k in range(post.n_labels):
            x = x0.copy()
            x[p] = k
            logp.append(post.log_target(x, obj))
        pk = np.exp(np.array(logp) - max(logp))
        pk = pk[:-1] / pk.sum()  # the velocity labels (nil last)
        out[:, p] = [pk.sum(), pk @ d[0], pk @ d[1], pk @ d[0] ** 2, pk @ d[1] ** 2]
    return out


@pytest.mark.parametrize("tau", [0.0, 0.3])
def test_site_moments_are_the_exact_single_site_conditionals(tau):
    """The Rao-Blackwellised spread adds each pixel's conditional π(x_p | rest);
    against enumeration of x_p under log_target (the translation-only
    conditional differs under τ > 0: the control)."""
    post = tiny_posterior(seed=4, h=3, w=3, tau=tau, alpha=1.0)
    obj = (np.arange(9) >= 5).astype(np.int64)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x0 = rng.integers(0, post.n_labels, 9)
        kernel = VelocityGibbs(post, obj, 2)
        state = kernel.new_state(x0)
        sums = np.zeros((5, 9))
        kernel.site_moments(state, sums)
        exact = _exact_site_moments(post, obj, x0)
        np.testing.assert_allclose(sums, exact, atol=1e-9)
        np.testing.assert_allclose(state.ostats, post.affine_stats(x0, obj, 2), atol=1e-9)
        if tau > 0:
            wrong = np.zeros((5, 9))
            VelocityGibbs(post, obj, 2, _translation_only=True).site_moments(
                VelocityGibbs(post, obj, 2, _translation_only=True).new_state(x0), wrong)
            assert np.abs(wrong - exact).max() > 1e-4


def test_rao_blackwellised_moments_match_the_exact_marginal(affine_level0):
    post, obj, states, p = affine_level0
    d = np.stack([post.du, post.dv])
    arr = np.array(states)
    ok = arr != post.nil
    exact = np.array([(p[:, None] * ok).sum(0)]
                     + [(p[:, None] * ok * d[a][np.where(ok, arr, 0)] ** e).sum(0)
                        for e, a in ((1, 0), (1, 1), (2, 0), (2, 1))])
    kernel = VelocityGibbs(post, obj, 1, window_sizes=[1, 2])
    rng = np.random.default_rng(5)
    state = kernel.new_state(np.zeros(4, np.int64))
    kernel.run(state, rng, np.ones(200))
    sums = np.zeros((5, 4))
    n = 4000
    for _ in range(n):
        kernel.run(state, rng, np.ones(4))
        kernel.site_moments(state, sums)
    np.testing.assert_allclose(sums / n, exact, atol=0.03)
