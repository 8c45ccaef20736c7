"""Multi-level cluster sampling (section 6.3, Prop. 12): exact enumeration of
the joint nested states, each level's conditional (eq. 70) and full rounds."""

import copy
from collections import Counter

import numpy as np
import pytest

from enumeration import assert_matches, compare, set_partitions
from swcuts.anneal import Schedule
from swcuts.graph import RegionGraph
from swcuts.models import ImageModel
from swcuts.multilevel import ConnectedMultigrid, MultiLevel, TwoLevel, anneal_multilevel
from swcuts.partition import canonical
from swcuts.samplers import seed_compiled_rng
from test_multiflip import edge_q, pixel_setting

ATOM = dict(atom_a0=0.6, atom_a2=0.05, atom_kappa=0.02)


# ------------------------------------------------------------------ enumeration
def _is_connected_partition(labels, edges):
    """Every label one connected region of ``edges``."""
    parent = list(range(len(labels)))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i, j in edges:
        if labels[i] == labels[j]:
            parent[find(i)] = find(j)
    return len({find(v) for v in range(len(labels))}) == len(set(labels))


def _region_graph(pix, shape):
    img = np.array(canonical(pix)).reshape(shape)
    return img, RegionGraph.from_labels(img)


def nested_states(shape, n_levels):
    """Every nested state the sampler can reach: per level the canonical
    labels of the pixels; every level below the top a partition into
    connected regions of the previous level's regions (pixels at level 0)."""
    n_pix = shape[0] * shape[1]
    pixel_edges = RegionGraph.from_labels(np.arange(n_pix).reshape(shape)).edges.tolist()
    out = []

    def rec(prefix, vert, edges, n_vert):
        s = len(prefix)
        for part in set_partitions(n_vert):
            if s < n_levels - 1 and not _is_connected_partition(part, edges):
                continue
            pix = tuple(canonical(np.asarray(part)[vert]))
            if s == n_levels - 1:
                out.append(prefix + (pix,))
                continue
            img, g = _region_graph(pix, shape)
            rec(prefix + (pix,), img.ravel(), g.edges.tolist(), g.n_vertices)

    rec((), np.arange(n_pix), pixel_edges, n_pix)
    return out


def level_models(model, n_levels, atom_a0):
    """π_s of the levels below the top, as posteriors of pixel labellings."""
    out = []
    for a0 in atom_a0:
        m = copy.copy(model)
        m.a0, m.a1, m.a2, m.kappa = a0, 0.0, ATOM["atom_a2"], ATOM["atom_kappa"]
        out.append(m)
    return out


def joint_distribution(model, states, atom_a0, nested_ok=None):
    """Exact joint π ∝ π_img(top) Π_s π_s(level s), from scratch on pixels."""
    n_levels = len(states[0])
    models = level_models(model, n_levels, atom_a0)
    cache = {}

    def logp(m_idx, m, pix):
        key = (m_idx, pix)
        if key not in cache:
            cache[key] = m.log_target(np.array(pix))
        return cache[key]

    lp = np.array([sum(logp(s, models[s], x[s]) for s in range(n_levels - 1))
                   + logp(-1, model, x[-1]) for x in states])
    p = np.exp(lp - lp.max())
    return p / p.sum()


def setting(shape, seed=3):
    model, img, atoms = pixel_setting(*shape, seed=seed)
    return model, img, edge_q(img, atoms, model.graph)


def sampler_for(shape, n_levels, cls=MultiLevel, **kw):
    model, img, q = setting(shape)
    kw = {**ATOM, "block": 2, "window_sizes": [2, 3], **kw}
    return cls(model, q, img, n_levels=n_levels, **kw)


def key_of(ml):
    return tuple(tuple(lab.ravel().tolist()) for lab in ml.levels())


def check_caches(ml):
    """Every level's stored log π is exact, labels nested and connected."""
    for s, lv in enumerate(ml.hierarchy):
        assert lv.state.log_pi == pytest.approx(lv.model.log_target(lv.state.labels), abs=1e-6)
    assert ml.log_pi == pytest.approx(ml.model.log_target(ml.segments), abs=1e-6)
    levels = ml.levels()
    e = ml.graph.edges
    for s in range(ml.n_levels - 1):
        lo, up = levels[s].ravel(), levels[s + 1].ravel()
        # Nested: each label of level s inside one label of level s + 1 ...
        assert all(len(set(up[lo == k])) == 1 for k in np.unique(lo))
        # ... and one connected region inside it (Definition 2).
        inside = up[e[:, 0]] == up[e[:, 1]]
        assert _is_connected_partition(lo.tolist(), e[inside].tolist())


def run_chain(ml, rng, steps, n_samples, burn=200, levels=None):
    """Visit counts of the joint state after every round of ``steps`` per level
    (levels ``levels`` only, the others fixed)."""
    levels = range(ml.n_levels) if levels is None else levels
    seed_compiled_rng(rng)

    def round_():
        for s in levels:
            ml.run_level(s, rng, np.ones(steps[s]))

    for _ in range(burn):
        round_()
    counts = Counter()
    for _ in range(n_samples):
        round_()
        counts[key_of(ml)] += 1
    check_caches(ml)
    return counts


# ------------------------------------------------------------------ joint rounds
# A chain of rounds from one start must visit every nested state with its
# joint probability (invariance and ergodicity together). With three levels
# the chain mixes slowly (a segment boundary moves only where every level
# below has one), so there the exact draws below carry the proof.
def joint_setting(shape, n_levels, a0):
    states = nested_states(shape, n_levels)
    model, _, _ = setting(shape)
    p = joint_distribution(model, states, a0)
    assert 1.0 / np.sum(p ** 2) > 20  # π is spread over many joint states
    return states, p


@pytest.fixture(scope="module")
def two_levels_2x3():
    return joint_setting((2, 3), 2, [2.5])


def test_rounds_sample_the_joint_posterior(two_levels_2x3):
    states, p = two_levels_2x3
    ml = sampler_for((2, 3), 2, atom_a0=[2.5])
    counts = run_chain(ml, np.random.default_rng(12), [8, 8], 5000)
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 5000)


class _NoCuts(ConnectedMultigrid):
    """Wrong: the level kernel drops the cut ratio of Prop. 9."""

    def __init__(self, model, q, **kw):
        super().__init__(model, q, **kw)
        self.log1mq = np.zeros_like(self.log1mq)


class _WrongLevel0(MultiLevel):
    constrained_kernel = _NoCuts


def test_enumeration_catches_a_wrong_level_kernel(two_levels_2x3):
    states, p = two_levels_2x3
    ml = sampler_for((2, 3), 2, cls=_WrongLevel0, atom_a0=[2.5])
    counts = run_chain(ml, np.random.default_rng(12), [8, 8], 3000)
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3


# ------------------------------------------------------------------ exact draws
# Invariance itself, without mixing: draw x ~ π exactly, apply the kernel of
# level 0, then of level 1, ...; after level s the state must still be ~ π
# (eq. 70 for every level), and after the last level a whole round has run.
def through_levels(ml, states, p, seed, n, steps, n_run=None):
    """Visit counts after each of the first ``n_run`` levels, from exact draws."""
    n_run = ml.n_levels if n_run is None else n_run
    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    counts = [Counter() for _ in range(n_run)]
    for i in rng.choice(len(states), size=n, p=p):
        ml.set_levels([np.array(x).reshape(ml.graph.shape) for x in states[i]])
        for s in range(n_run):
            ml.run_level(s, rng, np.ones(steps))
            counts[s][key_of(ml)] += 1
    check_caches(ml)
    return counts


EXACT = {"2x3-two-levels": ((2, 3), 2, [2.5]), "2x3-three-levels": ((2, 3), 3, [2.5, 2.5])}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_every_level_keeps_exact_draws_exact(name):
    shape, n_levels, a0 = EXACT[name]
    states, p = joint_setting(shape, n_levels, a0)
    ml = sampler_for(shape, n_levels, atom_a0=a0)
    n = 2500
    for s, counts in enumerate(through_levels(ml, states, p, seed=8, n=n, steps=20)):
        tv, pvalue = compare(counts, states, p)
        assert_matches(tv, pvalue, p, n)


def test_exact_draws_catch_a_wrong_level_kernel(two_levels_2x3):
    states, p = two_levels_2x3
    ml = sampler_for((2, 3), 2, cls=_WrongLevel0, atom_a0=[2.5])
    counts = through_levels(ml, states, p, seed=8, n=1500, steps=20, n_run=1)
    tv, pvalue = compare(counts[0], states, p)
    assert pvalue < 1e-3


# ------------------------------------------------------------------ conditionals, 3x3
def test_level0_samples_its_conditional_3x3():
    """Atoms given the segments: π_s over the partitions into connected
    regions inside the segments (S = left column | rest)."""
    shape = (3, 3)
    seg = np.array([[0, 1, 1]] * 3)
    ml = sampler_for(shape, 2, atom_a0=[1.5])
    ml.set_levels([seg, seg])
    e = ml.graph.edges
    inside = e[seg.ravel()[e[:, 0]] == seg.ravel()[e[:, 1]]].tolist()
    top = tuple(canonical(seg.ravel()))
    states = [(x0, top) for x0 in set_partitions(9) if _is_connected_partition(x0, inside)]
    model, _, _ = setting(shape)
    p = joint_distribution(model, states, [1.5])
    assert 1.0 / np.sum(p ** 2) > 10
    counts = run_chain(ml, np.random.default_rng(4), [30, 0], 4000, levels=[0])
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 4000)


def test_level1_samples_its_conditional_3x3():
    """Segments given the atoms: π_img over the partitions of five atoms."""
    shape = (3, 3)
    atoms = np.array([[0, 1, 1], [0, 2, 3], [4, 4, 3]])
    ml = sampler_for(shape, 2)
    ml.set_levels([atoms, np.zeros(shape, int)])
    states = [(tuple(canonical(atoms.ravel())), tuple(canonical(np.array(part)[atoms.ravel()])))
              for part in set_partitions(5)]
    model, _, _ = setting(shape)
    p = joint_distribution(model, states, [ATOM["atom_a0"]])
    counts = run_chain(ml, np.random.default_rng(6), [0, 20], 4000, levels=[1])
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 4000)
