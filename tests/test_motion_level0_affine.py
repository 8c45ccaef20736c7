"""The level-0 kernel under the affine object model (τ > 0): exact
enumeration of π(X⁽⁰⁾ | objects) on a 2×2 lattice, with the
translation-only kernel (the level 0 before the affine term reached it) as
the negative control, and the cached statistics and log π on a larger
lattice."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from enumeration import assert_matches, compare
from test_motion import tiny_posterior
from swcuts.samplers.velocity import VelocityGibbs

TAU = 0.6


def _visits(kernel, post, n_samples, thin, seed):
    rng = np.random.default_rng(seed)
    state = kernel.new_state(np.zeros(post.n_pixels, np.int64))
    kernel.run(state, rng, np.ones(500))
    counts = Counter()
    for _ in range(n_samples):
        kernel.run(state, rng, np.ones(thin))
        counts[tuple(int(v) for v in state.x0)] += 1
    return counts, state


@pytest.fixture(scope="module")
def affine_level0():
    post = tiny_posterior(seed=2, tau=TAU, alpha=1.0)
    # one object: its gradient spans both axes of the 2x2 lattice
    obj = np.zeros(4, np.int64)
    states = list(itertools.product(range(post.n_labels), repeat=post.n_pixels))
    logp = np.array([post.log_target(np.array(s), obj) for s in states])
    p = np.exp(logp - logp.max())
    return post, obj, states, p / p.sum()


@pytest.mark.parametrize("sizes", [[2], [1, 2]])
def test_velocity_gibbs_leaves_affine_level0_conditional_invariant(affine_level0, sizes):
    post, obj, states, p = affine_level0
    kernel = VelocityGibbs(post, obj, 1, window_sizes=sizes)
    counts, state = _visits(kernel, post, n_samples=20000, thin=4, seed=3)
    assert state.log_pi == pytest.approx(post.log_target(state.x0, obj), abs=1e-6)
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 20000)


def test_enumeration_catches_translation_only_level0_under_affine_target(affine_level0):
    post, obj, states, p = affine_level0
    kernel = VelocityGibbs(post, obj, 1, window_sizes=[2], _translation_only=True)
    counts, _ = _visits(kernel, post, n_samples=20000, thin=4, seed=3)
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
