"""Replica exchange (swcuts.inference.tempering) leaves the joint target
Π(x) ∝ Π_k π(x_k)^(1/T_k) invariant: the swap move's exact transition matrix
over the joint states of two and three replicas on a 4-vertex graph (15
partitions each), and the whole chain (SW-cut kernels and swaps) by visit
frequencies over the 225 joint states of two replicas. A swap rule missing a
factor fails both (negative controls)."""

import itertools
from collections import Counter

import numpy as np
import pytest

from enumeration import compare, exact_distribution, iid_tv, set_partitions
from swcuts.inference import tempering
from swcuts.inference.tempering import ReplicaLadder, geometric_ladder, swap_log_ratio
from swcuts.models.partition import canonical
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers.swc import SWC
from test_enumeration_kernels import edge_q, image4_boundary


def _joint(model, temps):
    """Joint states (tuples of partition indices) and the exact Π over them."""
    states = set_partitions(model.n_vertices)
    logp = np.array([model.log_target(np.array(s)) for s in states])
    energies = -logp
    joint = list(itertools.product(range(len(states)), repeat=len(temps)))
    logj = np.array([sum(-energies[i] / t for i, t in zip(idx, temps)) for idx in joint])
    pj = np.exp(logj - logj.max())
    return states, energies, joint, pj / pj.sum()


def _swap_matrix(energies, joint, temps, rule, parity):
    """Exact transition matrix of one swap sweep (pairs of one parity) over joint states."""
    index = {s: i for i, s in enumerate(joint)}
    P = np.zeros((len(joint), len(joint)))
    for a, s in enumerate(joint):
        # The sweep's swaps act on disjoint pairs: their outcomes are independent.
        dist = {tuple(s): 1.0}
        for k in range(parity, len(temps) - 1, 2):
            new = {}
            for st, w in dist.items():
                log_r = rule(energies[st[k]], energies[st[k + 1]], temps[k], temps[k + 1])
                acc = min(1.0, float(np.exp(min(log_r, 0.0)))) if log_r < 0 else 1.0
                sw = list(st)
                sw[k], sw[k + 1] = sw[k + 1], sw[k]
                new[tuple(sw)] = new.get(tuple(sw), 0.0) + w * acc
                new[st] = new.get(st, 0.0) + w * (1 - acc)
            dist = new
        for st, w in dist.items():
            P[a, index[st]] += w
    return P


def _missing_factor(e_i, e_j, t_i, t_j):
    """A wrong swap rule: the hotter temperature's 1/T_j left out."""
    return (1.0 / t_i) * (e_i - e_j)


@pytest.mark.parametrize("temps", [(1.0, 2.5), (1.0, 1.6, 3.0)])
def test_swap_sweeps_leave_the_joint_target_invariant(temps):
    model, _, _ = image4_boundary()
    _, energies, joint, pj = _joint(model, temps)
    for parity in (0, 1):
        P = _swap_matrix(energies, joint, temps, swap_log_ratio, parity)
        assert np.allclose(P.sum(axis=1), 1.0)
        assert np.abs(pj @ P - pj).max() < 1e-12
        # Detailed balance, not only invariance: each swap is reversible.
        flow = pj[:, None] * P
        assert np.abs(flow - flow.T).max() < 1e-12


@pytest.mark.parametrize("temps", [(1.0, 2.5), (1.0, 1.6, 3.0)])
def test_a_swap_rule_missing_a_factor_breaks_invariance(temps):
    model, _, _ = image4_boundary()
    _, energies, joint, pj = _joint(model, temps)
    P = _swap_matrix(energies, joint, temps, _missing_factor, 0)
    assert np.abs(pj @ P - pj).sum() > 1e-3


class _Replica:
    """One replica: an SW-cut kernel on its own state, as the posterior runs it."""

    def __init__(self, model, q, rng):
        self.kernel = SWC(model, q)
        self.state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
        self.rng = rng

    def advance(self, n, temperature):
        seed_compiled_rng(self.rng)
        acc, _, _ = self.kernel.run(self.state, self.rng, np.full(int(n), float(temperature)))
        return acc


def _joint_visits(model, q, temps, seed, n_samples, thin):
    rng = np.random.default_rng(seed)
    reps = [_Replica(model, q, g) for g in rng.spawn(len(temps))]
    ladder = ReplicaLadder(reps, temps, swap_every=2)
    ladder.advance(500, rng)
    counts = Counter()
    for _ in range(n_samples):
        ladder.advance(thin, rng)
        counts[tuple(canonical(ladder.replicas[int(r)].state.partition.labels)
                     for r in ladder.holder)] += 1
    for r in reps:
        assert r.state.log_pi == pytest.approx(model.log_target(r.state.partition.labels), abs=1e-6)
    return counts, ladder


N_JOINT = 12000


def _joint_setting(temps):
    model, img, atoms = image4_boundary()
    q = edge_q(img, atoms, model.graph)
    states, _, joint, pj = _joint(model, temps)
    keys = [tuple(states[i] for i in idx) for idx in joint]
    return model, q, keys, pj


def test_the_tempered_chain_samples_the_joint_target():
    temps = (1.0, 4.0)
    model, q, keys, pj = _joint_setting(temps)
    counts, ladder = _joint_visits(model, q, temps, seed=3, n_samples=N_JOINT, thin=4)
    tv, pvalue = compare(counts, keys, pj)
    floor = iid_tv(pj, N_JOINT)
    assert tv < 1.5 * floor, f"total variation {tv:.3f} (iid noise floor {floor:.3f})"
    assert pvalue > 1e-3
    assert 0.05 < ladder.swap_acceptance()[0] < 1.0  # swaps happen and are not free


def test_the_same_chain_with_a_wrong_swap_rule_fails(monkeypatch):
    temps = (1.0, 4.0)
    model, q, keys, pj = _joint_setting(temps)
    monkeypatch.setattr(tempering, "swap_log_ratio", _missing_factor)
    counts, _ = _joint_visits(model, q, temps, seed=3, n_samples=N_JOINT, thin=4)
    tv, pvalue = compare(counts, keys, pj)
    assert tv > 1.5 * iid_tv(pj, N_JOINT) or pvalue < 1e-3


def test_the_cold_marginal_is_the_posterior():
    """The T = 1 marginal of the ladder's draws is π itself."""
    model, img, atoms = image4_boundary()
    q = edge_q(img, atoms, model.graph)
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    counts, _ = _joint_visits(model, q, (1.0, 2.0, 4.0), seed=5, n_samples=6000, thin=3)
    cold = Counter()
    for key, c in counts.items():
        cold[key[0]] += c
    tv, pvalue = compare(cold, states, p)
    assert tv < 1.5 * iid_tv(p, 6000) and pvalue > 1e-3


def test_swap_log_ratio_is_the_log_ratio_of_the_joint_target():
    rng = np.random.default_rng(0)
    for _ in range(20):
        e = rng.normal(0, 10, 2)
        t = np.sort(rng.uniform(1, 5, 2))
        before = -e[0] / t[0] - e[1] / t[1]
        after = -e[1] / t[0] - e[0] / t[1]
        assert swap_log_ratio(e[0], e[1], t[0], t[1]) == pytest.approx(after - before)
        # An additive constant in the energies cancels.
        assert swap_log_ratio(e[0] + 7, e[1] + 7, t[0], t[1]) == pytest.approx(after - before)


def test_ladder_and_bad_ladders():
    assert np.allclose(geometric_ladder(4, 8.0), [1, 2, 4, 8])
    assert geometric_ladder(1, 5.0).tolist() == [1.0]
    with pytest.raises(ValueError):
        geometric_ladder(3, 1.0)
    with pytest.raises(ValueError):
        ReplicaLadder([object(), object()], [2.0, 1.0])
    with pytest.raises(ValueError):
        ReplicaLadder([object()], [1.0, 2.0])


def test_sample_model_with_replicas_matches_the_exact_posterior():
    """sample_model(replicas=3): the marginals at T = 1 within Monte Carlo
    error of the exact ones (the z-scores of tests/test_posterior.py)."""
    from test_enumeration_kernels import grey_setting
    from test_posterior import Z_MAX, _exact, _z_scores
    from swcuts.segmentation.posterior import sample_model

    model, img, atoms = grey_setting()
    co, pix = _exact(model, atoms)
    ps = sample_model(model, edge_q(img, atoms, model.graph), atoms=atoms, n_samples=1200, chains=3,
                      sampler="swc", seed=4, anneal_steps=100, pilot_steps=1000, replicas=3,
                      t_max=4.0, workers=1)
    z = _z_scores(ps, co, pix)
    assert z.max() < Z_MAX, f"largest z-score {z.max():.2f}"
    t = ps.summary()["tempering"]
    assert t["temperatures"] == [1.0, 2.0, 4.0] and len(t["swap_acceptance"]) == 2
    assert all(0 < a <= 1 for a in t["swap_acceptance"])


@pytest.mark.parametrize("kw", [dict(replicas=0), dict(replicas=2, t_max=1.0), dict(replicas=2.5),
                                dict(swap_every=0), dict(replicas=3, t_max=float("nan"))])
def test_bad_tempering_options_are_refused(kw):
    from swcuts.io.errors import InputError
    from swcuts.segmentation.posterior import sample_posterior

    with pytest.raises((InputError, TypeError)):
        sample_posterior(np.zeros((16, 16)), n_samples=8, chains=2, n_atoms=8, **kw)


def test_sample_posterior_with_replicas_on_an_image_is_reproducible():
    from swcuts.segmentation.posterior import sample_posterior

    image = np.zeros((20, 24))
    image[:, 12:] = 1.0
    image += 0.1 * np.random.default_rng(0).standard_normal(image.shape)
    kw = dict(n_samples=8, chains=2, n_atoms=12, anneal_steps=100, pilot_steps=200, replicas=2,
              t_max=3.0, model="image")
    a = sample_posterior(image, seed=1, workers=1, **kw)
    b = sample_posterior(image, seed=1, workers=2, **kw)
    assert np.array_equal(a.labels, b.labels) and np.allclose(a.energies, b.energies)
    assert a.tempering["temperatures"] == [1.0, 3.0] and a.tempering == b.tempering
    assert a.summary()["tempering"]["round_trips"] >= 0
