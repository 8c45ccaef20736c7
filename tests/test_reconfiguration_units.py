"""Adaptive reconfiguration moves (Herlau et al., seed 001) and sRM: unit
checks of the kernel's parts. The exact transition-matrix and
visit-frequency evidence is in test_reconfiguration.py."""

import numpy as np
import pytest

import swcuts
import swcuts.segmentation.segment
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.partition import canonical
from swcuts.models.potts import PottsModel
from swcuts.samplers import KERNELS
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers.reconfiguration.history import History
from swcuts.samplers.reconfiguration.kernel import SRM, Reconfiguration

from enumeration import compare, exact_distribution, set_partitions, visit_counts
from test_enumeration_kernels import colour_setting, grey_setting
from test_reconfiguration import _assert_matches, _frozen_history, bernoulli6


# ------------------------------------------------------------ unit checks
def test_rejection_restores_the_state_and_acceptance_keeps_caches_exact():
    model, _, _ = colour_setting()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    rng = np.random.default_rng(3)
    kernel = Reconfiguration(model, history=_frozen_history(states, p, rng), gibbs_sweeps=0)
    state = model.new_state(np.array([0, 0, 1, 1, 2, 2, 0]))
    seen = set()
    for _ in range(300):
        before = canonical(state.labels)
        log_pi = state.log_pi
        info = kernel.move(state, 0, rng, 1.0)
        seen.add((info.move, info.accepted))
        if not info.accepted:
            assert canonical(state.labels) == before
            assert state.log_pi == log_pi
        else:
            assert canonical(state.labels) != before
            assert state.log_pi == pytest.approx(log_pi + info.delta, abs=1e-9)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
        np.testing.assert_array_equal(state.partition.size,
                                      np.bincount(state.labels, minlength=state.labels.size))
    assert {("split", True), ("split", False), ("merge", True), ("merge", False)} <= seen


def test_tempered_move_with_gibbs():
    """π^(1/T) at T = 2 on the grey setting."""
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    logp = np.array([model.log_target(np.array(s)) for s in states]) / 2.0
    p = np.exp(logp - logp.max())
    p /= p.sum()
    rng = np.random.default_rng(8)
    seed_compiled_rng(rng)
    kernel = Reconfiguration(model, history=_frozen_history(states, p, rng))
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=2500, thin=2, temperature=2.0, burn=50)
    _assert_matches(*compare(counts, states, p), p, n=2500)


def test_history_is_bounded_thinned_and_second_half():
    h = History(3, capacity=8, mode="second-half")
    for t in range(200):
        h.record([np.array([t % 2, 0, 1]), np.array([0, 0, 0])], t)
        assert len(h) <= 8
        stamps = h.stamps[:h.count]
        assert stamps.min() >= t // 2  # only the second half is kept
    assert h.interval > 1 and len(h) >= 2
    h_all = History(3, capacity=8, mode="all")
    for t in range(200):
        h_all.record([np.array([0, 1, 1])], t)
    assert len(h_all) <= 8 and h_all.stamps[:h_all.count].min() == 0
    rng = np.random.default_rng(0)
    za, zb = h.draw(0, 1, rng) or (None, None)
    assert za is None or (za[0] == za[1] and zb[0] != zb[1])
    frozen = History(3, states=[[0, 0, 1], [0, 1, 1]])
    frozen.record([np.array([2, 2, 2])], 5)
    assert len(frozen) == 2 and frozen.frozen
    za, zb = frozen.draw(0, 1, rng)
    assert za.tolist() == [0, 0, 1] and zb.tolist() == [0, 1, 1]
    assert frozen.draw(0, 2, rng) is None  # no past state joins 0 and 2


def test_no_usable_history_is_a_no_op():
    model, _, _ = grey_setting()
    kernel = Reconfiguration(model, history=[np.zeros(6, dtype=np.int64)], gibbs_sweeps=0)
    state = model.new_state(np.array([0, 0, 1, 1, 2, 2]))
    info = kernel.step(state, np.random.default_rng(0), 1.0)
    assert info.move == "none" and not info.accepted
    assert state.labels.tolist() == [0, 0, 1, 1, 2, 2]


def test_single_chain_step_uses_its_own_history():
    model, _, _ = grey_setting()
    kernel = Reconfiguration(model)
    rng = np.random.default_rng(1)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    kinds = set()
    for _ in range(200):
        kinds.add(kernel.step(state, rng, 2.0).move)
    assert {"split", "merge"} <= kinds  # the Gibbs scans feed the history
    assert len(kernel._own[state][0]) > 1
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)


def test_options_and_errors():
    model, _, _ = grey_setting()
    assert KERNELS["reconfiguration"] is Reconfiguration and KERNELS["srm"] is SRM
    for name in ("reconfiguration", "srm"):
        assert name in swcuts.SAMPLERS
        assert name in swcuts.segmentation.options.STEPS_PER_ATOM and name in swcuts.segmentation.options.DEFAULT_T0
    k = Reconfiguration(model)
    assert k.compiled is False and k.name == "reconfiguration"
    assert k.anchors == "edge" and k.outside == "frontier"
    assert SRM(model).name == "srm" and Reconfiguration(model, srm=True).name == "srm"
    mix = bernoulli6()
    km = Reconfiguration(mix)
    assert km.anchors == "disagree" and km.outside == "all"  # the paper's rule
    assert SRM(mix).anchors == "pair"  # sRM has no history
    with pytest.raises(ValueError, match="n_chains"):
        Reconfiguration(model, n_chains=1)
    Reconfiguration(model, n_chains=1, history=[np.zeros(6, dtype=np.int64)])  # fixed: fine
    SRM(model, n_chains=1)  # sRM needs no history
    with pytest.raises(ValueError):
        Reconfiguration(PottsModel(model.graph, n_labels=3, beta=0.5))
    with pytest.raises(ValueError):
        Reconfiguration(mix, outside="frontier")
    with pytest.raises(ValueError):
        Reconfiguration(model, outside="knn")  # a graph model has its own frontier
    with pytest.raises(ValueError):
        Reconfiguration(mix, outside="knn", neighbours=0)
    with pytest.raises(ValueError):
        Reconfiguration(mix, anchors="edge")
    with pytest.raises(ValueError):
        Reconfiguration(model, history="everything")
    with pytest.raises(ValueError):
        Reconfiguration(model, history=[np.zeros(5, dtype=np.int64)])
    with pytest.raises(ValueError):
        Reconfiguration(model, order="sorted")
    with pytest.raises(ValueError):
        SRM(model, anchors="disagree")
    states = [model.new_state(np.zeros(6, dtype=np.int64)) for _ in range(3)]
    with pytest.raises(ValueError, match="init_chains"):
        k.step_all(states, np.random.default_rng(0))
    with pytest.raises(ValueError, match="expected 4"):
        k.init_chains(states)
    with pytest.raises(ValueError, match="init_chains"):
        k.move(states[0], 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="temperature"):
        SRM(model).step(states[0], np.random.default_rng(0), temperature=0.0)
    with pytest.raises(ValueError) as info:
        Reconfiguration(model, n_chains=1)
    assert "\n" not in str(info.value)  # one line


def test_step_all_records_the_pooled_history():
    model = bernoulli6()
    kernel = Reconfiguration(model, n_chains=3, max_history=12)
    rng = np.random.default_rng(0)
    chains = [model.new_state(rng.integers(0, 3, size=6)) for _ in range(3)]
    kernel.init_chains(chains)
    assert len(kernel.history) == 3
    for _ in range(30):
        infos = kernel.step_all(chains, rng, 1.0)
        assert len(infos) == 3
    assert 3 <= len(kernel.history) <= 12
    with pytest.raises(ValueError, match="chain_index"):
        kernel.move(chains[0], 3, rng)


@pytest.mark.parametrize("sampler", ["reconfiguration", "srm"])
def test_segment_smoke(sampler):
    rng = np.random.default_rng(0)
    img = np.zeros((32, 40))
    img[:, 20:] = 0.8
    img[8:20, 5:15] = 0.45
    img += 0.05 * rng.standard_normal(img.shape)
    seg = swcuts.segment(img, sampler=sampler, steps=200, seed=0)
    assert seg.labels.shape == img.shape and seg.steps == 200
    assert seg.energy == pytest.approx(-seg.model.log_target(seg.vertex_labels), abs=1e-6)
    assert seg.energy < seg.trace.energy[0]  # the run improved on its start
    again = swcuts.segment(img, sampler=sampler, steps=200, seed=0)
    np.testing.assert_array_equal(seg.labels, again.labels)


def _compiled_path(cls, model, start, compiled, steps, **kwargs):
    rng = np.random.default_rng(3)
    kernel = cls(model, compiled=compiled, gibbs_sweeps=0, **kwargs)
    state = model.new_state(start)
    out = []
    for _ in range(steps):
        info = kernel.step(state, rng, 1.0) if cls is SRM else kernel.move(state, 0, rng, 1.0)
        out.append((info.move, info.accepted, round(info.log_accept_ratio, 6)))
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-8)
    return out, state.labels.copy(), kernel.counts


@pytest.mark.parametrize("name", ["beta-bernoulli", "gaussian"])
@pytest.mark.parametrize("cls,kwargs", [(Reconfiguration, {"anchors": "pair"}),
                                        (Reconfiguration, {"anchors": "disagree"}),
                                        (SRM, {}),
                                        (Reconfiguration, {"outside": "knn", "neighbours": 4}),
                                        (SRM, {"outside": "knn", "neighbours": 4})],
                         ids=["arm-pair", "arm-disagree", "srm", "arm-knn", "srm-knn"])
def test_compiled_and_generic_passes_make_the_same_moves(cls, kwargs, name):
    """On a mixture the compiled pass draws the same uniforms, proposes the
    same z*, computes the same T(z*|z), T(z|z*) and decides the same."""
    from swcuts.evaluation.synthetic.clusters import (
        jain_neal_bernoulli,
        lee_choi_gaussians,
    )

    if name == "beta-bernoulli":
        x, truth = jain_neal_bernoulli(40, 6, seed=1)
    else:
        x, truth = lee_choi_gaussians(39, seed=2)
    model = MixtureModel(x, name, alpha=1.0)
    rng = np.random.default_rng(0)
    if cls is Reconfiguration:
        kwargs = dict(kwargs, history=[rng.integers(0, 4, truth.size) for _ in range(4)] + [truth])
    start = truth.copy()
    start[::7] = 0
    fast = _compiled_path(cls, model, start, None, 150, **kwargs)
    slow = _compiled_path(cls, model, start, False, 150, **kwargs)
    assert fast[0] == slow[0]
    np.testing.assert_array_equal(fast[1], slow[1])
    assert fast[2]["split"][1] + fast[2]["merge"][1] > 0  # the chain did move
