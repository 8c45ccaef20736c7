"""Compiled mixture paths: the single-item moves, the compiled Gibbs sweep,
and the compiled restricted scans / sequential allocations of the
split-merge samplers, against the generic ``delta``/``apply`` path and
against exact enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from enumeration import (assert_matches, compare, exact_distribution, iid_tv, run_visits,
                         set_partitions, visit_counts)
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.mixture.moves import item_join, item_leave, item_move
from swcuts.evaluation.synthetic.clusters import (
    jain_neal_bernoulli, lee_choi_gaussians, rossum_lines)
from swcuts.samplers.gibbs import Gibbs, random_scan
from swcuts.samplers.split_merge import SplitMerge
from swcuts.samplers.triadic.kernel import Triadic
from swcuts.samplers.common import seed_compiled_rng

NAMES = ("beta-bernoulli", "gaussian", "lines")


def data_model(name, n):
    if name == "beta-bernoulli":
        x, truth = jain_neal_bernoulli(n, 6, seed=1)
    elif name == "gaussian":
        x, truth = lee_choi_gaussians(max(n, 13), seed=2)
    else:
        x, truth = rossum_lines(3, -(-n // 3), seed=3)
    return MixtureModel(x[:n], name, alpha=1.0), truth[:n]


@pytest.mark.parametrize("name", NAMES)
def test_item_moves_match_delta_and_keep_caches_exact(name):
    model, truth = data_model(name, 24)
    state = model.new_state(truth)
    rng = np.random.default_rng(0)
    D = model.vstats.shape[1]
    st_a, st_b, one = np.empty(D), np.empty(D), np.empty(1, np.int64)
    args = model.kernel_arrays(state)
    labels, size, lstats, lloglik = args[0], args[1], args[4], args[5]
    for _ in range(60):
        v = int(rng.integers(model.n_vertices))
        a = int(labels[v])
        used = state.partition.used_labels()
        b = int(rng.choice(np.append(used, state.partition.fresh_label())))
        if b == a:
            continue
        expect = model.delta(state, np.array([v]), b)
        d1, ll_a = item_leave(v, a, size, lstats, lloglik, *args[6:], st_a)
        d2, ll_b = item_join(v, b, size, lstats, lloglik, *args[6:], st_b)
        assert d1 + d2 == pytest.approx(expect, abs=1e-9 * max(1.0, abs(expect)))
        item_move(v, a, b, *args[:6], st_a, ll_a, st_b, ll_b, one)
        state.log_pi += d1 + d2
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)
    fresh = model.new_state(state.labels)
    used = state.partition.used_labels()
    np.testing.assert_allclose(state.stats[used], fresh.stats[used], atol=1e-9)
    np.testing.assert_allclose(state.loglik[used], fresh.loglik[used], atol=1e-9)
    assert sorted(state.partition.free) == sorted(fresh.partition.free)


class _Sweep:
    """A kernel whose step is ``n_updates`` compiled Gibbs updates."""

    def __init__(self, model, n_updates):
        self.model = model
        self.n_updates = n_updates

    def step(self, state, rng, temperature=1.0):
        random_scan(self.model, state, rng, temperature, n_updates=self.n_updates)


@pytest.mark.parametrize("name,temperature", [(n, 1.0) for n in NAMES] + [("gaussian", 2.0)])
def test_compiled_gibbs_sweep_visits_match_posterior(name, temperature):
    model, _ = data_model(name, 6)
    assert model.compiled_likelihood
    states = set_partitions(6)
    p = exact_distribution(model, states) ** (1.0 / temperature)
    p /= p.sum()
    rng = np.random.default_rng(7)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    n_samples = 6000
    counts = visit_counts(_Sweep(model, 12), state, rng, n_samples=n_samples, thin=1,
                          temperature=temperature, burn=20)
    assert_matches(*compare(counts, states, p), p, n_samples)
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)


def _path(kernel_cls, model, truth, compiled, steps, start_one_label):
    rng = np.random.default_rng(3)
    seed_compiled_rng(rng)
    kernel = kernel_cls(model, compiled=compiled)
    state = model.new_state(np.zeros_like(truth) if start_one_label else truth)
    out = []
    for _ in range(steps):
        info = kernel.step(state, rng, 1.0)
        out.append((info.move, info.accepted, round(info.log_accept_ratio, 6)))
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-7)
    return out, state.labels.copy()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cls", [SplitMerge, Triadic], ids=lambda c: c.name)
def test_compiled_and_generic_paths_make_the_same_moves(cls, name):
    model, truth = data_model(name, 40)
    fast = _path(cls, model, truth, None, 150, cls is SplitMerge)
    slow = _path(cls, model, truth, False, 150, cls is SplitMerge)
    assert fast[0] == slow[0]
    np.testing.assert_array_equal(fast[1], slow[1])
    assert any(acc for _, acc, _ in fast[0])  # the chain did move


@pytest.mark.parametrize("name", NAMES)
def test_compiled_gibbs_step_makes_the_generic_moves(name):
    """Gibbs on a mixture: the compiled single-item step and the generic
    ``gibbs_relabel`` path draw the same uniforms and make the same moves."""
    model, truth = data_model(name, 40)
    runs = []
    for compiled in (None, False):
        kernel = Gibbs(model, compiled=compiled)
        assert kernel._mixture == (compiled is None)
        rng = np.random.default_rng(11)
        state = model.new_state(np.zeros_like(truth))
        trace = [kernel.step(state, rng, 1.3).moved for _ in range(1500)]
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-7)
        runs.append((trace, state.labels.copy()))
    assert runs[0][0] == runs[1][0] and sum(runs[0][0]) > 50
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("name", ["beta-bernoulli", "gaussian"])
def test_compiled_gibbs_step_visits_match_posterior(name):
    model, _ = data_model(name, 6)
    states = set_partitions(6)
    p = exact_distribution(model, states)
    rng = np.random.default_rng(12)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    n_samples = 5000
    counts = visit_counts(Gibbs(model), state, rng, n_samples=n_samples, thin=8, burn=50)
    assert_matches(*compare(counts, states, p), p, n_samples)


def _gibbs_chain(model, truth, use_run, every, n_steps=600, temperature=1.0):
    """Gibbs (wrapped in AuxiliaryCycle when ``every``) from one cluster:
    ``n_steps`` steps one by one, or in compiled ``run`` chunks of 37."""
    from swcuts.models.mixture.model import AuxiliaryCycle

    kernel = Gibbs(model)
    if every:
        kernel = AuxiliaryCycle(kernel, every=every)
    rng = np.random.default_rng(21)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros_like(truth))
    best = state.partition.labels.copy()
    best_lp = state.log_pi
    if use_run:
        assert kernel.compiled
        done = 0
        while done < n_steps:
            k = min(37, n_steps - done)
            _, best_lp, _ = kernel.run(state, rng, np.full(k, temperature), best, best_lp)
            done += k
    else:
        for _ in range(n_steps):
            kernel.step(state, rng, temperature)
            if state.log_pi > best_lp + 1e-9:
                best_lp, best[:] = state.log_pi, state.partition.labels
    return state, best, best_lp


@pytest.mark.parametrize("prior", ["dp", "nggp"])
def test_compiled_gibbs_run_makes_the_steps_moves(prior):
    """Gibbs.run on a mixture (and AuxiliaryCycle.run with the NGGP's u move
    every 40 steps) draws the same uniforms as the steps one by one: same
    labels, log π and u; its best state is at least as good and exact."""
    x, truth = lee_choi_gaussians(40, seed=2)
    kw = {"prior": "nggp", "sigma": 0.3} if prior == "nggp" else {}
    model = MixtureModel(x, "gaussian", alpha=1.0, **kw)
    every = 40 if prior == "nggp" else 0
    fast, best_f, lp_f = _gibbs_chain(model, truth, True, every)
    slow, best_s, lp_s = _gibbs_chain(model, truth, False, every)
    np.testing.assert_array_equal(fast.partition.labels, slow.partition.labels)
    assert fast.log_pi == pytest.approx(slow.log_pi, abs=1e-9)
    assert getattr(fast, "u", None) == getattr(slow, "u", None)
    assert fast.log_pi == pytest.approx(model.log_target(fast.labels, getattr(fast, "u", None)),
                                        abs=1e-7)
    assert fast.partition.n_labels > 1  # the chain did move
    assert lp_f >= lp_s - 1e-9
    if prior == "dp":
        assert lp_f == pytest.approx(model.log_target(best_f), abs=1e-7)
    # Negative control: another temperature draws the same uniforms but
    # makes other moves.
    hot, _, _ = _gibbs_chain(model, truth, True, every, temperature=3.0)
    assert not np.array_equal(hot.partition.labels, slow.partition.labels)


def test_compiled_gibbs_run_visits_match_posterior():
    """The run path (compiled chunks of 8 updates) samples the enumerated
    posterior; the same chain at T = 2 (π^(1/2)) does not (negative control)."""
    model, _ = data_model("beta-bernoulli", 6)
    states = set_partitions(6)
    p = exact_distribution(model, states)
    n_samples = 5000
    assert_matches(*run_visits(Gibbs(model), model, states, p, 13, n_samples, 8), p, n_samples)
    tv, pvalue = run_visits(Gibbs(model), model, states, p, 13, n_samples, 8, temperature=2.0)
    assert pvalue < 1e-6 and tv > 1.5 * iid_tv(p, n_samples)
