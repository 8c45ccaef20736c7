"""Multi-level cluster sampling (section 6.3, Prop. 12): exact enumeration of
the joint nested states, each level's conditional (eq. 70) and full rounds."""

import copy
from collections import Counter

import numpy as np
import pytest

from enumeration import assert_matches, compare, set_partitions
from swcuts.inference.anneal import Schedule
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.boundary import contrast_weights
from swcuts.samplers.connected import ConnectedMultigrid, restrict_graph
from swcuts.inference.multilevel_anneal import anneal_multilevel
from swcuts.samplers.multilevel import MultiLevel, TwoLevel, compact
from swcuts.models.partition import canonical
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers.multigrid import Multigrid
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


def level_models(model, atom_a0):
    """π_s of the levels below the top, as posteriors of pixel labellings."""
    out = []
    for a0 in atom_a0:
        m = copy.copy(model)
        m.a0, m.a1, m.a2, m.kappa = a0, 0.0, ATOM["atom_a2"], ATOM["atom_kappa"]
        out.append(m)
    return out


def joint_distribution(model, states, atom_a0):
    """Exact joint π ∝ π_img(top) Π_s π_s(level s), from scratch on pixels."""
    n_levels = len(states[0])
    models = level_models(model, atom_a0)
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


def setting(shape, seed=3, boundary=0.0):
    """The pixel setting; ``boundary``: λ of the "contrast" posterior's
    boundary term (every level below the top gets it too, the default)."""
    model, img, atoms = pixel_setting(*shape, seed=seed)
    if boundary:
        model.set_boundary(boundary, contrast_weights(img, atoms, model.graph))
    return model, img, edge_q(img, atoms, model.graph)


def sampler_for(shape, n_levels, cls=MultiLevel, boundary=0.0, **kw):
    model, img, q = setting(shape, boundary=boundary)
    kw = {**ATOM, "start": "blocks", "block": 2, "window_sizes": [1, 2, 3], **kw}
    return cls(model, q, img, n_levels=n_levels, **kw)


def key_of(ml):
    return tuple(tuple(lab.ravel().tolist()) for lab in ml.levels())


def nested_and_connected(ml):
    """Definition 2 with connected labels below the top: every label of level
    s is one connected region inside one label of level s + 1."""
    levels = ml.levels()
    e = ml.graph.edges
    for s in range(ml.n_levels - 1):
        lo, up = levels[s].ravel(), levels[s + 1].ravel()
        if not all(len(set(up[lo == k])) == 1 for k in np.unique(lo)):
            return False
        inside = up[e[:, 0]] == up[e[:, 1]]
        if not _is_connected_partition(lo.tolist(), e[inside].tolist()):
            return False
    return True


def check_caches(ml):
    """Every level's stored log π is exact, labels nested and connected."""
    assert nested_and_connected(ml)
    for s, lv in enumerate(ml.hierarchy):
        assert lv.state.log_pi == pytest.approx(lv.model.log_target(lv.state.labels), abs=1e-6)
    # The top level's π on its graph is π_img of the segments on the pixels.
    assert ml.log_pi == pytest.approx(ml.model.log_target(ml.segments), abs=1e-6)


def run_chain(ml, rng, steps, n_samples, thin=1, burn=200, levels=None, check=True):
    """Visit counts of the joint state every ``thin`` rounds of ``steps`` per
    level (levels ``levels`` only, the others fixed)."""
    levels = range(ml.n_levels) if levels is None else levels
    seed_compiled_rng(rng)

    def round_():
        for s in levels:
            ml.run_level(s, rng, np.ones(steps[s]))

    for _ in range(burn):
        round_()
    counts = Counter()
    for _ in range(n_samples):
        for _ in range(thin):
            round_()
        counts[key_of(ml)] += 1
    if check:
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


# Successive rounds are correlated (a round often leaves the joint state as
# it was, and segment boundaries wait for atom boundaries): without thinning
# the chi-square test, which assumes independent draws, would be fooled.
THIN_ROUNDS = 3


def test_rounds_sample_the_joint_posterior(two_levels_2x3):
    states, p = two_levels_2x3
    ml = sampler_for((2, 3), 2, atom_a0=[2.5])
    counts = run_chain(ml, np.random.default_rng(13), [8, 8], 4000, thin=THIN_ROUNDS)
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 4000)


class _NoCuts(ConnectedMultigrid):
    """Wrong: the level kernel drops the cut ratio of Prop. 9."""

    def __init__(self, model, q, **kw):
        super().__init__(model, q, **kw)
        self.log1mq = np.zeros_like(self.log1mq)


class _WrongLevel0(MultiLevel):
    constrained_kernel = _NoCuts


def _weighted_levels(weights):
    """A MultiLevel whose level-0 windows have the given side frequencies."""
    if weights is None:
        return MultiLevel

    class Kernel(ConnectedMultigrid):
        def __init__(self, model, q, **kw):
            if kw.get("window") is None:
                kw["window_weights"] = weights
            super().__init__(model, q, **kw)

    class Weighted(MultiLevel):
        constrained_kernel = Kernel

    return Weighted


def test_enumeration_catches_a_wrong_level_kernel(two_levels_2x3):
    states, p = two_levels_2x3
    ml = sampler_for((2, 3), 2, cls=_WrongLevel0, atom_a0=[2.5], window_sizes=[2, 3])
    counts = run_chain(ml, np.random.default_rng(13), [8, 8], 2000, thin=THIN_ROUNDS)
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
    n = 2000
    for s, counts in enumerate(through_levels(ml, states, p, seed=8, n=n, steps=20)):
        tv, pvalue = compare(counts, states, p)
        assert_matches(tv, pvalue, p, n)


# ------------------------------------------------------------------ conditionals, 3x3
SEG_3X3 = np.array([[0, 1, 1]] * 3)


#: λ of the boundary settings (3x3: without the term the level-0
#: conditional is 0.23 away in total variation, the level-1 one 0.20).
BOUNDARY = 0.5


@pytest.fixture(scope="module", params=[0.0, BOUNDARY], ids=["paper", "boundary"])
def level0_given_segments_3x3(request):
    """Atoms given the segments S = left column | rest: π_s over the
    partitions into connected regions inside the segments (with the
    boundary term in the "boundary" case)."""
    shape = (3, 3)
    seg = SEG_3X3
    model, _, _ = setting(shape, boundary=request.param)
    e = model.graph.edges
    inside = e[seg.ravel()[e[:, 0]] == seg.ravel()[e[:, 1]]].tolist()
    top = tuple(canonical(seg.ravel()))
    states = [(x0, top) for x0 in set_partitions(9) if _is_connected_partition(x0, inside)]
    p = joint_distribution(model, states, [1.5])
    assert 1.0 / np.sum(p ** 2) > 10
    return states, p, request.param


def test_level0_samples_its_conditional_3x3(level0_given_segments_3x3):
    states, p, boundary = level0_given_segments_3x3
    ml = sampler_for((3, 3), 2, atom_a0=[1.5], boundary=boundary)
    ml.set_levels([SEG_3X3, SEG_3X3])
    counts = run_chain(ml, np.random.default_rng(4), [30, 0], 4000, levels=[0])
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 4000)


@pytest.mark.parametrize("weights", [None, [1.0, 1.0, 1.0], [0.1, 1.0, 4.0]])
def test_level0_keeps_exact_draws_exact_3x3(level0_given_segments_3x3, weights):
    """Level 0 from exact draws of its conditional, with window sides drawn
    ∝ 1/side² (default), uniformly, or mostly large."""
    states, p, boundary = level0_given_segments_3x3
    if boundary:
        pytest.skip("the chain test carries the boundary case (exact draws: 8 s each)")
    ml = sampler_for((3, 3), 2, cls=_weighted_levels(weights), atom_a0=[1.5], boundary=boundary)
    n = 1500
    counts = through_levels(ml, states, p, seed=8, n=n, steps=20, n_run=1)
    tv, pvalue = compare(counts[0], states, p)
    assert_matches(tv, pvalue, p, n)


def test_exact_draws_catch_a_wrong_level_kernel(level0_given_segments_3x3):
    # (On the 2x3 joint states the kernel without cuts is only caught with
    # many more draws: p = 0.015 with 1,500, 2e-9 with 6,000; the 3x3
    # conditional has more cut edges.)
    states, p, boundary = level0_given_segments_3x3
    if boundary:
        pytest.skip("the paper case carries this control")
    # Windows of two pixels or more: every move of the wrong kernel has a cut.
    ml = sampler_for((3, 3), 2, cls=_WrongLevel0, atom_a0=[1.5], window_sizes=[2, 3])
    counts = through_levels(ml, states, p, seed=8, n=1500, steps=20, n_run=1)
    tv, pvalue = compare(counts[0], states, p)
    assert pvalue < 1e-3


@pytest.mark.parametrize("boundary", [0.0, BOUNDARY], ids=["paper", "boundary"])
def test_level1_samples_its_conditional_3x3(boundary):
    """Segments given the atoms: π_img over the partitions of five atoms
    (the boundary weights of the atom graph: sums over pixel pairs)."""
    shape = (3, 3)
    atoms = np.array([[0, 1, 1], [0, 2, 3], [4, 4, 3]])
    ml = sampler_for(shape, 2, boundary=boundary)
    ml.set_levels([atoms, np.zeros(shape, int)])
    states = [(tuple(canonical(atoms.ravel())), tuple(canonical(np.array(part)[atoms.ravel()])))
              for part in set_partitions(5)]
    model, _, _ = setting(shape, boundary=boundary)
    p = joint_distribution(model, states, [ATOM["atom_a0"]])
    counts = run_chain(ml, np.random.default_rng(6), [0, 20], 4000, levels=[1])
    tv, pvalue = compare(counts, states, p)
    assert_matches(tv, pvalue, p, 4000)


class _NoBoundaryTerm(ConnectedMultigrid):
    """Wrong: the level kernel with λ forced to 0 (its Δ log π without the
    boundary term)."""

    def __init__(self, model, q, **kw):
        model = copy.copy(model)
        model.set_boundary(0.0)
        super().__init__(model, q, **kw)


class _NoBoundaryLevels(MultiLevel):
    constrained_kernel = _NoBoundaryTerm


def test_level0_conditional_catches_a_kernel_without_the_boundary_term():
    shape = (3, 3)
    ml = sampler_for(shape, 2, cls=_NoBoundaryLevels, atom_a0=[1.5], boundary=BOUNDARY)
    model = ml.model
    e = model.graph.edges
    inside = e[SEG_3X3.ravel()[e[:, 0]] == SEG_3X3.ravel()[e[:, 1]]].tolist()
    top = tuple(canonical(SEG_3X3.ravel()))
    states = [(x0, top) for x0 in set_partitions(9) if _is_connected_partition(x0, inside)]
    p = joint_distribution(model, states, [1.5])
    ml.set_levels([SEG_3X3, SEG_3X3])
    counts = run_chain(ml, np.random.default_rng(4), [30, 0], 2000, levels=[0], check=False)
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3


# ------------------------------------------------------------------ interface
def two_region_image(h=24, w=30, seed=3):
    rng = np.random.default_rng(seed)
    img = np.where((np.arange(w)[None, :] < 12) | (np.arange(h)[:, None] < 8), 0.2, 0.75)
    img = np.clip(img + 0.05 * rng.standard_normal((h, w)), 0, 1)[..., None]
    atoms = np.arange(h * w).reshape(h, w)
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=8, a0=20, a1=20, a2=0.2)
    return model, img, edge_q(img, atoms, g, ceiling=0.95)


@pytest.mark.parametrize("n_levels", [1, 2, 3])
def test_anneal_multilevel_segments_an_image(n_levels):
    model, img, q = two_region_image()
    ml = MultiLevel(model, q, img, n_levels=n_levels, atom_a0=5.0)
    start = -ml.log_pi
    result = anneal_multilevel(ml, Schedule(3.0, 0.05), rng=np.random.default_rng(0), steps=40000)
    assert result.steps == 40000 and len(result.trace) > 1
    assert result.best_energy == pytest.approx(-model.log_target(result.best_labels), abs=1e-6)
    assert result.best_energy < start
    levels = ml.best_levels
    assert len(levels) == n_levels
    assert np.array_equal(levels[-1].ravel(), result.best_labels)
    for lo, up in zip(levels, levels[1:]):  # nested (Definition 2)
        assert all(len(np.unique(up[lo == k])) == 1 for k in np.unique(lo))
    for lab in levels:
        assert lab.shape == (24, 30) and np.array_equal(np.unique(lab), np.arange(lab.max() + 1))
    # The two populations end up in different segments.
    seg = levels[-1]
    assert seg[0, 0] == seg[-1, 0] and seg[-1, -1] != seg[-1, 0]
    check_caches(ml)


def test_annealing_runs_the_rounds_under_the_one_driver_whatever_its_chunks():
    # anneal_multilevel = swcuts.inference.anneal.anneal on MultiLevelKernel: the same
    # draws as the rounds written out by hand (levels in turn, 500 and 200
    # steps, level 0 at min(T, 1)), however the driver cuts the steps: the
    # best segments, the last atoms (level 0) and the accepted moves agree.
    model, img, q = two_region_image()
    steps, sched = 2300, Schedule(3.0, 0.05)
    runs = []
    for n_records in (None, 1, 300):
        ml = MultiLevel(model, q, img, n_levels=2, atom_a0=5.0)
        rng = np.random.default_rng(4)
        if n_records is None:  # by hand
            seed_compiled_rng(rng)
            for lv in ml.hierarchy:
                lv.kernel.run(lv.state, rng, np.empty(0))
            log_ratio, done, acc, best, best_seg = np.log(sched.t_final / sched.t0), 0, 0, ml.log_pi, None
            while done < steps:
                for s, k in enumerate((500, 200)):
                    k = min(k, steps - done)
                    temps = sched.t0 * np.exp(log_ratio * (done + np.arange(k)) / steps)
                    a, seen, found = ml.run_level(s, rng, temps if s else np.minimum(temps, 1.0), best)
                    acc += a
                    if found is not None:
                        best, best_seg = seen, found
                    done += k
            runs.append((canonical(best_seg), canonical(ml.levels()[0].ravel()), acc))
        else:
            res = anneal_multilevel(ml, sched, rng=rng, steps=steps, level_steps=[500, 200],
                                    n_records=n_records)
            assert res.best_energy == pytest.approx(-model.log_target(res.best_labels), abs=1e-6)
            assert np.array_equal(ml.best_levels[-1].ravel(), res.best_labels)
            runs.append((canonical(res.best_labels), canonical(ml.levels()[0].ravel()), res.accepted))
    assert runs[1][0] != canonical(np.zeros(model.n_vertices, np.int64))
    assert runs[1] == runs[0] and runs[2] == runs[0]


def test_one_level_is_plain_multigrid_and_two_is_the_default():
    model, img, q = two_region_image(8, 10)
    one = MultiLevel(model, q, img, n_levels=1)
    assert type(one.hierarchy[0].kernel) is Multigrid and len(one.levels()) == 1
    two = TwoLevel(model, q, img, window_sizes=None)
    assert two.n_levels == 2 and isinstance(two.hierarchy[0].kernel, ConnectedMultigrid)
    assert TwoLevel is MultiLevel


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, None])
def test_bad_level_counts_are_refused(bad):
    model, img, q = two_region_image(8, 10)
    with pytest.raises(ValueError, match="n_levels"):
        MultiLevel(model, q, img, n_levels=bad)


@pytest.mark.parametrize("kw", [dict(window_sizes=[11]), dict(window_sizes=[0]), dict(block=0),
                                dict(atom_a0=[1.0, 2.0]), dict(q_max=0.0), dict(start="slice"),
                                dict(start_atoms=0), dict(start_atoms=2.5),
                                dict(atom_boundary=-1.0), dict(atom_boundary="1")])
def test_bad_options_are_refused_before_any_work(kw, monkeypatch):
    model, img, q = two_region_image(8, 10)

    def no_work(*args):
        raise AssertionError("built the levels before checking the options")

    monkeypatch.setattr(MultiLevel, "_build_all", no_work)
    with pytest.raises(ValueError):
        MultiLevel(model, q, img, **kw)


@pytest.mark.parametrize("n_levels", [2, 3])
def test_slic_start_is_nested_and_connected(n_levels):
    """The default start: SLIC atoms at level 0 (about one per 80 pixels
    unless ``start_atoms`` says), one label per atom at the levels between,
    one segment."""
    model, img, q = two_region_image(24, 30)
    ml = MultiLevel(model, q, img, n_levels=n_levels, start_atoms=12)
    levels = ml.levels()
    assert 6 <= levels[0].max() + 1 <= 24
    for lo, up in zip(levels[:-2], levels[1:-1]):
        assert np.array_equal(lo, up)
    assert levels[-1].max() == 0
    check_caches(ml)
    default = MultiLevel(model, q, img, n_levels=n_levels).levels()[0].max() + 1
    assert default == pytest.approx(24 * 30 / 80, rel=0.5)


def test_atom_temperature_cap():
    """anneal_multilevel runs the levels below the top at min(T, atom_t_max)."""
    model, img, q = two_region_image(12, 14)
    seen = []

    class Spy(MultiLevel):
        def run_level(self, s, rng, temperatures, best_log_pi=-np.inf):
            seen.append((s, float(np.max(temperatures))))
            return super().run_level(s, rng, temperatures, best_log_pi)

    for cap, expect in ((1.0, 1.0), (np.inf, 5.0)):
        seen.clear()
        ml = Spy(model, q, img, start_atoms=4)
        anneal_multilevel(ml, Schedule(5.0, 5.0), rng=np.random.default_rng(0), steps=3000,
                          level_steps=[500, 500], atom_t_max=cap)
        assert {t for s, t in seen if s == 0} == {expect}
        assert {t for s, t in seen if s == 1} == {5.0}
    with pytest.raises(ValueError, match="atom_t_max"):
        anneal_multilevel(ml, Schedule(1.0), rng=np.random.default_rng(0), steps=10, atom_t_max=0)


def test_restricted_graph_is_the_subgraph():
    rng = np.random.default_rng(5)
    for lab in (np.arange(35).reshape(5, 7), rng.integers(0, 6, (9, 11))):
        g = RegionGraph.from_labels(compact(lab).reshape(lab.shape))
        keep = rng.random(g.n_edges) < 0.6
        a, b = g.subgraph(keep), restrict_graph(g, keep)
        for f in ("edges", "boundary_length", "indptr", "indices", "edge_ids", "pixel_index"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f


def test_bad_inputs_are_refused():
    model, img, q = two_region_image(8, 10)
    with pytest.raises(ValueError, match="features"):
        MultiLevel(model, q, 1.0 - img)
    ml = MultiLevel(model, q, img)
    with pytest.raises(ValueError):
        anneal_multilevel(ml, Schedule(1.0), rng=np.random.default_rng(0))
    with pytest.raises(ValueError):
        anneal_multilevel(ml, Schedule(1.0), rng=np.random.default_rng(0), steps=0)


def test_states_outside_the_space_are_refused():
    ml = sampler_for((2, 3), 2)
    one = np.zeros((2, 3), int)
    split = np.array([[0, 1, 0], [0, 1, 0]])  # label 0 in two pieces
    with pytest.raises(ValueError, match="connected"):
        ml.set_levels([split, one])
    across = np.array([[0, 0, 1], [0, 0, 1]])
    with pytest.raises(ValueError, match="connected"):
        ml.set_levels([one, across])  # one atom over two segments
    ml.set_levels([across, across])
    check_caches(ml)


def test_labels_stay_connected_and_nested_at_any_temperature():
    """The constraint is hard (target 0 outside the nested states), not a
    penalty that a high temperature could overcome."""
    model, img, q = two_region_image(12, 14)
    ml = MultiLevel(model, q, img, n_levels=3, start="blocks", block=2,
                    window_sizes=[1, 2, 4, 8])
    rng = np.random.default_rng(1)
    seed_compiled_rng(rng)
    for temperature in (1e6, 30.0, 1.0):
        for _ in range(20):
            ml.run_round(rng, [300, 200, 200], temperature)
        check_caches(ml)


class _Unconstrained(ConnectedMultigrid):
    """Wrong: plain multigrid moves, labels free to split or spread (what a
    finite penalty per extra region amounts to at a high temperature)."""

    def run(self, state, rng, temperatures):
        return Multigrid.run(self, state, rng, temperatures)[0]


class _SoftLevels(MultiLevel):
    constrained_kernel = _Unconstrained


def test_connectivity_check_catches_an_unconstrained_level_kernel():
    model, img, q = two_region_image(12, 14)
    ml = _SoftLevels(model, q, img, n_levels=3, start="blocks", block=2,
                    window_sizes=[1, 2, 4, 8])
    rng = np.random.default_rng(1)
    seed_compiled_rng(rng)
    for _ in range(20):
        ml.run_round(rng, [300, 200, 200], 1e6)
    assert not nested_and_connected(ml)
    # Then the top level's posterior on its graph is no longer π_img.
    assert ml.log_pi != pytest.approx(ml.model.log_target(ml.segments), abs=1e-6)
