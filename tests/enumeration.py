"""Exact enumeration of small partition spaces, and the invariance check
that every kernel must pass (DESIGN.md, "Correctness contract")."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from swcuts.models.partition import canonical


def set_partitions(n):
    """All partitions of n items as restricted growth strings."""
    out = []

    def rec(prefix, k):
        if len(prefix) == n:
            out.append(tuple(prefix))
            return
        for lab in range(k + 1):
            rec(prefix + [lab], max(k, lab + 1))

    rec([0], 1)
    return out


def labelings(n, n_labels):
    return [tuple(x) for x in itertools.product(range(n_labels), repeat=n)]


def exact_distribution(model, states):
    logp = np.array([model.log_target(np.array(s)) for s in states])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def _compiled_run(kernel):
    """``kernel.run`` when it makes exactly the moves of ``kernel.step`` one
    by one, else None.

    That holds for the SW-cut and Gibbs kernels on their compiled path
    (:class:`~swcuts.samplers.swc.CompiledRunMixin`, ``compiled`` true):
    ``step`` is ``run`` over one temperature (on the mixture Gibbs path
    ``run`` draws the same uniforms in the same order,
    ``test_compiled_gibbs_run_makes_the_steps_moves``); and for split-merge
    and triadic (:class:`~swcuts.samplers.run_lists.RunLists`: the compiled
    run draws the same numbers from the same generator,
    ``test_compiled_run_makes_the_moves_of_the_steps`` in their test
    files). A test's kernel that overrides ``step`` or ``run`` (a negative
    control) keeps ``step``; a split-merge or triadic subclass of a test's
    own (e.g. one that overrides ``_scan``) too.
    """
    from swcuts.samplers.run_lists import RunLists
    from swcuts.samplers.swc import CompiledRunMixin

    cls = type(kernel)
    if isinstance(kernel, RunLists):  # split-merge, triadic
        return kernel.run if cls.__module__.startswith("swcuts.") and kernel.compiled else None
    if not (isinstance(kernel, CompiledRunMixin) and getattr(kernel, "compiled", False) is True):
        return None
    if not all(getattr(f, "__module__", "").startswith("swcuts.") for f in (cls.step, cls.run)):
        return None
    return kernel.run


def visit_counts(kernel, state, rng, n_samples, thin, temperature=1.0, key=canonical, burn=200):
    """Visit counts of ``n_samples`` states ``thin`` steps apart, after
    ``burn`` steps. A compiled SW-cut, Gibbs, split-merge or triadic kernel makes
    each run of ``thin`` steps in one compiled call (:func:`_compiled_run`): the same
    moves and visits as ``thin`` calls of ``step``, without ~30 µs of
    Python per step."""
    run = _compiled_run(kernel)
    if run is None:
        for _ in range(burn):
            kernel.step(state, rng, temperature)
    elif burn:
        run(state, rng, np.full(burn, float(temperature)))
    counts = Counter()
    temps = np.full(thin, float(temperature))
    for _ in range(n_samples):
        if run is None:
            for _ in range(thin):
                kernel.step(state, rng, temperature)
        else:
            run(state, rng, temps)
        counts[key(state.partition.labels)] += 1
    return counts


def iid_tv(p, n, rng=None, reps=50):
    """Mean total variation of n independent draws from p: the noise floor."""
    rng = np.random.default_rng(0) if rng is None else rng
    return float(np.mean([0.5 * np.abs(rng.multinomial(n, p) / n - p).sum() for _ in range(reps)]))


def compare(counts, states, p, min_expected=5.0):
    """(total variation, chi-square p-value) of visit counts against p."""
    n = sum(counts.values())
    index = {s: i for i, s in enumerate(states)}
    assert all(s in index for s in counts), "the chain visited a state outside the space"
    obs = np.zeros(len(states))
    for s, c in counts.items():
        obs[index[s]] = c
    tv = 0.5 * np.abs(obs / n - p).sum()
    exp = p * n
    big = exp >= min_expected
    obs_b = np.append(obs[big], obs[~big].sum())
    exp_b = np.append(exp[big], exp[~big].sum())
    if exp_b[-1] == 0:
        obs_b, exp_b = obs_b[:-1], exp_b[:-1]
    chi = stats.chisquare(obs_b, exp_b * obs_b.sum() / exp_b.sum())
    return tv, chi.pvalue


def chain_visits(kernel, model, states, p, seed, n_samples, thin, temperature=1.0):
    """Run ``kernel`` from one label; (TV, chi-square p-value) of its visit
    counts against p. Also checks that the cached log π stays exact."""
    from swcuts.samplers.common import seed_compiled_rng

    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=n_samples, thin=thin,
                          temperature=temperature)
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    return compare(counts, states, p)


def assert_matches(tv, pvalue, p, n_samples):
    """TV below 1.5x the iid noise floor and chi-square p-value above 1e-3."""
    floor = iid_tv(p, n_samples)
    assert tv < 1.5 * floor, f"total variation {tv:.3f} (iid noise floor {floor:.3f})"
    assert pvalue > 1e-3, f"chi-square p-value {pvalue:.2g}"


def run_visits(kernel, model, states, p, seed, n_samples, thin, temperature=1.0, burn=2000):
    """:func:`chain_visits` for kernels with a compiled ``run``: each run of
    ``thin`` steps is one compiled call, so long thinning stays cheap."""
    from swcuts.samplers.common import seed_compiled_rng

    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    kernel.run(state, rng, np.full(burn, temperature))
    counts = Counter()
    temps = np.full(thin, temperature)
    for _ in range(n_samples):
        kernel.run(state, rng, temps)
        counts[canonical(state.partition.labels)] += 1
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    return compare(counts, states, p)
