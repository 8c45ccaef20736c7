"""Split-merge of Jain & Neal (restricted Gibbs) and the random-split baseline.

The correctness contract (DESIGN.md) on the small image posteriors of
``test_enumeration_kernels`` (6 and 7 atoms, Bell numbers 203 and 877):

* **Exact kernels.** For these sizes every random choice of one update can
  be enumerated: anchors (ordered edges or pairs), launch side vectors
  (2^|S| of them), t restricted scans (a 2^|S| x 2^|S| matrix) and the
  final scan. :func:`exact_split_merge_matrix` builds the transition matrix
  P of split-merge *alone* from the algorithm as specified (written
  independently of the kernel code), and the tests check πP = π to
  rounding and that P is irreducible with graph-edge anchors.
* **Code against the exact kernel.** The kernel's observed transition
  counts along a chain are compared with the rows of P by a pooled
  chi-square. Given the visits, rows are independent multinomials, so this
  test needs no thinning, whatever the mixing time.
* **Visit frequencies** (the pattern of ``test_enumeration_kernels``):
  TV < 1.5 x the iid noise floor and chi-square p > 1e-3, with thinning
  chosen from the exact relaxation time 1 / (1 − |λ₂|) of P.

Why not visit frequencies for split-merge alone with edge anchors: it is
irreducible (merges reach the one-label partition on a connected graph,
splits undo merges), but a label that is not connected in the graph, like
{2, 3} on the 2x3 lattice, can only be created or removed through a merge
with a third label followed by a split. The exact relaxation time is about
1000 updates on both settings (random split: 240 and 740), against 22-36
with uniform-pair anchors and 1.5 iterations for the paper's cycle with a
Gibbs scan. A valid thinned chi-square would need ~10^7 updates; the exact
matrix and the transition test prove invariance instead, and the visit
tests run on uniform-pair anchors and on ``iteration()``.
"""


import numpy as np
import pytest
from scipy import stats
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from enumeration import (_compiled_run, assert_matches, chain_visits, exact_distribution, iid_tv,
                         set_partitions)
from test_enumeration_kernels import (colour_setting, grey_boundary_setting, grey_learned_setting,
                                      grey_setting, grey_window_setting, plain_rows_twin, window_setting)

import swcuts
import swcuts.segmentation.segment
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.potts import PottsModel
from swcuts.models.image_kernels import FP_BOUNDARY
from swcuts.samplers import KERNELS
from swcuts.samplers.gibbs import Gibbs
from swcuts.samplers.split_merge import RandomSplit, SplitMerge
from swcuts.samplers.common import seed_compiled_rng

SETTINGS = {"grey": grey_setting, "colour": colour_setting}
N_SAMPLES = 4000


def _key(labels):
    """Canonical form (labels by first occurrence), fast for short arrays."""
    seen = {}
    return tuple(seen.setdefault(x, len(seen)) for x in labels.tolist())


# ------------------------------------------------------- exact reference
def _anchor_pairs(model, anchors):
    if anchors == "edge":
        e = model.graph.edges.tolist()
        return [(a, b) for a, b in e] + [(b, a) for a, b in e]
    n = model.n_vertices
    return [(a, b) for a in range(n) for b in range(n) if a != b]


def exact_split_merge_matrix(model, states, logp, *, t=5, anchors="edge", random_split=False):
    """Transition matrix of ONE split-merge update targeting exp(logp).

    ``logp`` is the (tempered) log target over ``states``. Written from the
    algorithm, not from the kernel: for ordered anchors (i, j) and the side
    vectors v ∈ {0, 1}^|S| (item k of S, ascending, on bit |S|-1-k; side 0
    = i's label), one restricted scan is the matrix
    K[v, v'] = Π_k P(x_k = v'_k | v'_{<k}, v_{>k}); the launch distribution
    is uniform·K^t. A split to v' from launch v moves with probability
    K[v, v'] · min(1, π(v')/π(X) / K[v, v']) = min(K[v, v'], π(v')/π(X)); a
    merge with min(1, π(X*)/π(X) · K[v, v_X]). Random split: K uniform, t = 0.
    """
    index = {s: k for k, s in enumerate(states)}
    n = model.n_vertices
    pairs = _anchor_pairs(model, anchors)
    w_pair = 1.0 / len(pairs)
    P = np.zeros((len(states), len(states)))
    for si, s in enumerate(states):
        lab = np.array(s)
        lt_s = logp[si]
        for i, j in pairs:
            S = np.flatnonzero((lab == lab[i]) | (lab == lab[j]))
            S = S[(S != i) & (S != j)]
            m = S.size
            V = 1 << m
            pos_bit = 1 << (m - 1 - np.arange(m))
            codes = np.arange(V)
            bits = (codes[:, None] & pos_bit[None, :]) > 0
            same = lab[i] == lab[j]
            li, lj = (n, lab[j]) if same else (lab[i], lab[j])  # n: a fresh label
            W = np.tile(lab, (V, 1))
            W[:, i] = li
            W[:, j] = lj
            W[:, S] = np.where(bits, lj, li)
            q_idx = np.array([index[_key(w)] for w in W])
            lt = logp[q_idx]
            L = np.full(V, 1.0 / V)
            if random_split:
                K = np.full((V, V), 1.0 / V)
            else:
                flip = codes[:, None] ^ pos_bit[None, :]
                cond = expit(lt[:, None] - lt[flip])  # P(x_k = its value | the rest)
                K = np.ones((V, V))
                r, q = codes[:, None], codes[None, :]
                for k in range(m):
                    hi = (V - 1) ^ (int(pos_bit[k]) - 1)  # bits of items 0..k
                    K *= cond[(q & hi) | (r & ~hi & (V - 1)), k]
                for _ in range(t):
                    L = L @ K
            if same:
                moved = L @ np.minimum(K, np.exp(lt - lt_s)[None, :])
                np.add.at(P[si], q_idx, w_pair * moved)
                P[si, si] += w_pair * (1.0 - moved.sum())
            else:
                o = int(np.sum(pos_bit[lab[S] == lab[j]]))
                merged = lab.copy()
                merged[lab == lab[i]] = lab[j]
                mi = index[_key(merged)]
                moved = L @ np.minimum(1.0, np.exp(logp[mi] - lt_s) * K[:, o])
                P[si, mi] += w_pair * moved
                P[si, si] += w_pair * (1.0 - moved)
    return P


def relaxation_time(P):
    ev = np.sort(np.abs(np.linalg.eigvals(P)))[::-1]
    return 1.0 / (1.0 - ev[1])


def _log_target(model, states, temperature=1.0):
    logp = np.array([model.log_target(np.array(s)) for s in states]) / temperature
    return logp - np.logaddexp.reduce(logp)


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def exact(request):
    """(model, states, log π, {kernel name: exact P}) at T = 1."""
    model, _, _ = SETTINGS[request.param]()
    states = set_partitions(model.n_vertices)
    logp = _log_target(model, states)
    assert 1.0 / np.sum(np.exp(2 * logp)) > 10  # π spread over many partitions
    mats = {"split-merge": exact_split_merge_matrix(model, states, logp, t=5),
            "random-split": exact_split_merge_matrix(model, states, logp, random_split=True)}
    return model, states, logp, mats


def test_exact_kernels_are_invariant_and_irreducible(exact):
    model, states, logp, mats = exact
    p = np.exp(logp)
    for name, P in mats.items():
        assert np.allclose(P.sum(axis=1), 1.0, atol=1e-12), name
        assert np.abs(p @ P - p).max() < 1e-12, name
        # Split-merge alone, edge anchors: one communicating class.
        n_comp, _ = connected_components(csr_matrix(P > 0), directed=True, connection="strong")
        assert n_comp == 1, name


def test_exact_kernel_at_temperature_2_is_invariant():
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    logp = _log_target(model, states, temperature=2.0)
    p = np.exp(logp)
    for kw in (dict(t=5), dict(random_split=True)):
        P = exact_split_merge_matrix(model, states, logp, **kw)
        assert np.abs(p @ P - p).max() < 1e-12


def _transition_counts(kernel, model, states, seed, n_steps, temperature=1.0, check_cache=True):
    """Transition counts of ``n_steps`` updates from the one-label state:
    one compiled run that records the path (the moves of the steps one by
    one, ``test_compiled_run_makes_the_moves_of_the_steps``), or the
    steps themselves for a kernel without it (a negative control's)."""
    index = {s: k for k, s in enumerate(states)}
    rng = np.random.default_rng(seed)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = np.zeros((len(states), len(states)))
    cur = index[_key(state.labels)]
    run = _compiled_run(kernel)
    if run is not None:
        path = np.empty((n_steps, model.n_vertices), np.int64)
        run(state, rng, np.full(n_steps, float(temperature)), path=path)
    for s in range(n_steps):
        if run is None:
            kernel.step(state, rng, temperature)
        nxt = index[_key(path[s] if run is not None else state.labels)]
        counts[cur, nxt] += 1
        cur = nxt
    if check_cache:
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    return counts


def transition_test(counts, P, min_expected=5.0, min_visits=30):
    """Pooled chi-square p-value of transition counts against the rows of P.

    Each row with at least ``min_visits`` departures is binned by expected
    count (largest first, cells pooled until a bin expects ``min_expected``).
    A transition that P forbids gives p = 0.
    """
    if np.any((counts > 0) & (P == 0)):
        return 0.0
    chi = 0.0
    dof = 0
    for s in np.flatnonzero(counts.sum(axis=1) >= min_visits):
        n = counts[s].sum()
        order = np.argsort(-P[s])
        exp_, obs_ = n * P[s][order], counts[s][order]
        bins_e, bins_o, acc_e, acc_o = [], [], 0.0, 0.0
        for e, o in zip(exp_, obs_):
            acc_e += e
            acc_o += o
            if acc_e >= min_expected:
                bins_e.append(acc_e)
                bins_o.append(acc_o)
                acc_e = acc_o = 0.0
        if not bins_e:
            continue
        bins_e[-1] += acc_e
        bins_o[-1] += acc_o
        bins_e, bins_o = np.array(bins_e), np.array(bins_o)
        chi += float(np.sum((bins_o - bins_e) ** 2 / bins_e))
        dof += bins_e.size - 1
    return float(stats.chi2.sf(chi, dof)) if dof else 1.0


@pytest.mark.parametrize("cls", [SplitMerge, RandomSplit], ids=lambda c: c.name)
def test_kernel_transitions_match_the_exact_kernel(exact, cls):
    model, states, _, mats = exact
    kernel = cls(model)  # defaults: t = 5, edge anchors, compiled restricted scans
    counts = _transition_counts(kernel, model, states, seed=2024, n_steps=30000)
    pvalue = transition_test(counts, mats[cls.name])
    assert pvalue > 1e-3, f"transition chi-square p-value {pvalue:.2g}"


def test_kernel_transitions_at_temperature_2():
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    P = exact_split_merge_matrix(model, states, _log_target(model, states, 2.0), t=5)
    counts = _transition_counts(SplitMerge(model), model, states, seed=8, n_steps=20000,
                                temperature=2.0)
    assert transition_test(counts, P) > 1e-3


# The "contrast" posterior: the restricted scans' Δ log π includes the
# boundary term (split and merge use model.delta, which has it). The
# "window" posterior: the same with fractional (window) histogram counts.
BOUNDARY_STEPS = 8000
BOUNDARY_SETTINGS = {"boundary": grey_boundary_setting, "window": grey_window_setting,
                     "learned": grey_learned_setting}


@pytest.fixture(scope="module", params=sorted(BOUNDARY_SETTINGS))
def exact_boundary(request):
    model, _, _ = BOUNDARY_SETTINGS[request.param]()
    states = set_partitions(model.n_vertices)
    logp = _log_target(model, states)
    return model, states, {"split-merge": exact_split_merge_matrix(model, states, logp, t=5),
                           "random-split": exact_split_merge_matrix(model, states, logp,
                                                                    random_split=True)}


@pytest.mark.parametrize("cls", [SplitMerge, RandomSplit], ids=lambda c: c.name)
def test_boundary_setting_transitions_match_the_exact_kernel(exact_boundary, cls):
    model, states, mats = exact_boundary
    counts = _transition_counts(cls(model), model, states, seed=2024, n_steps=BOUNDARY_STEPS)
    assert transition_test(counts, mats[cls.name]) > 1e-3


# λ = 0.7 here; at the window setting's λ = 0.5, 8,000 steps do not always
# tell the scans without the term (p 0.006-0.07 over three seeds).
@pytest.mark.parametrize("exact_boundary", ["boundary"], indirect=True)
def test_transition_test_catches_scans_without_the_boundary_term(exact_boundary):
    model, states, mats = exact_boundary
    kernel = SplitMerge(model)
    kernel._fp[FP_BOUNDARY] = 0.0  # λ forced to 0 in the restricted scans
    counts = _transition_counts(kernel, model, states, seed=2024, n_steps=BOUNDARY_STEPS,
                                check_cache=False)
    assert transition_test(counts, mats["split-merge"]) < 1e-3


@pytest.mark.parametrize("exact_boundary", ["window"], indirect=True)
def test_transition_test_catches_scans_without_window_counts(exact_boundary):
    """The window setting's transition test fails for the kernel built on
    the twin with the plain (pixel by pixel) histogram rows."""
    model, states, mats = exact_boundary
    _, img, atoms = grey_window_setting()
    twin = plain_rows_twin(model, img, atoms)
    counts = _transition_counts(SplitMerge(twin), twin, states, seed=2024, n_steps=BOUNDARY_STEPS,
                                check_cache=False)
    assert transition_test(counts, mats["split-merge"]) < 1e-3


class _WithoutProposalRatio(SplitMerge):
    """A wrong kernel: drops q(X|X*)/q(X*|X) from the acceptance ratio."""

    def _scan(self, *args, **kwargs):
        super()._scan(*args, **kwargs)
        return 0.0


def test_transition_test_catches_a_dropped_proposal_ratio():
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    P = exact_split_merge_matrix(model, states, _log_target(model, states), t=5)
    counts = _transition_counts(_WithoutProposalRatio(model), model, states, seed=2024,
                                n_steps=30000)
    assert transition_test(counts, P) < 1e-3


# ------------------------------------------------------- visit frequencies
def _visits(kernel, model, states, p, seed, thin, temperature=1.0, n_samples=N_SAMPLES):
    return chain_visits(kernel, model, states, p, seed, n_samples, thin, temperature)


def _assert_matches(tv, pvalue, p, n_samples=N_SAMPLES):
    assert_matches(tv, pvalue, p, n_samples)


class _Iteration:
    """Adapter: one ``step`` = one iteration of Split-Merge(t, M, R)."""

    def __init__(self, kernel):
        self.kernel = kernel

    def step(self, state, rng, temperature=1.0):
        return self.kernel.iteration(state, rng, temperature)


# Thinning: about 2 exact relaxation times (grey, uniform-pair anchors:
# split-merge t=2 22.4 updates, random split 25.8, split-merge at T = 2 12.8;
# colour iteration M=2, R=1: 1.43 iterations).
@pytest.mark.parametrize("cls,thin", [(SplitMerge, 50), (RandomSplit, 60)],
                         ids=["split-merge", "random-split"])
def test_alone_with_pair_anchors_visits_match_posterior(cls, thin):
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    kernel = cls(model, t=2, anchors="pair")
    tv, pvalue = _visits(kernel, model, states, p, seed=2024, thin=thin)
    _assert_matches(tv, pvalue, p)
    rates = kernel.acceptance_rates()
    assert 0.02 < rates["split"] < 1 and 0.02 < rates["merge"] < 1


def test_visit_test_catches_a_dropped_proposal_ratio():
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    kernel = _WithoutProposalRatio(model, t=2, anchors="pair")
    tv, pvalue = _visits(kernel, model, states, p, seed=2024, thin=50, n_samples=1000)
    assert pvalue < 1e-3 and tv > 1.5 * iid_tv(p, 1000)


def test_tempered_visits_match_posterior():
    model, _, _ = grey_setting()
    states = set_partitions(model.n_vertices)
    p = np.exp(_log_target(model, states, 2.0))
    kernel = SplitMerge(model, t=2, anchors="pair")
    tv, pvalue = _visits(kernel, model, states, p, seed=3, thin=30, temperature=2.0)
    _assert_matches(tv, pvalue, p)


@pytest.mark.parametrize("make", [colour_setting, window_setting], ids=["colour", "window"])
@pytest.mark.parametrize("cls", [SplitMerge, RandomSplit], ids=lambda c: c.name)
def test_iteration_with_gibbs_scans_visits_match_posterior(cls, make):
    """The paper's cycle with the default edge anchors: M updates + R Gibbs
    scans (also on the "window" posterior of the colour setting)."""
    model, _, _ = make()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    kernel = _Iteration(cls(model, t=2, M=2, R=1))
    tv, pvalue = _visits(kernel, model, states, p, seed=5, thin=4)
    _assert_matches(tv, pvalue, p)


def test_uniform_pair_anchors_on_a_model_without_graph():
    """The paper's own setting: a conjugate DP mixture (relaxation time 6)."""
    mixture = pytest.importorskip("swcuts.models.mixture")
    data = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [1, 0, 0, 0],
                     [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 0]], dtype=float)
    model = mixture.MixtureModel(data, "beta-bernoulli", alpha=1.0)
    assert model.graph is None
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    kernel = SplitMerge(model, t=2)
    assert kernel.anchors == "pair"
    tv, pvalue = _visits(kernel, model, states, p, seed=21, thin=15)
    _assert_matches(tv, pvalue, p)


# ------------------------------------------------------------ unit checks
def _pixel_model(h=12, w=12, seed=0, likelihood_weight=1.0):
    """Every pixel an atom: regions that split into several pieces.
    (``likelihood_weight`` < 1: the model keeps statistics rows, as on
    atoms, instead of reading the pixels.)"""
    rng = np.random.default_rng(seed)
    img = np.where(np.add.outer(np.arange(h), np.arange(w)) % 7 < 3, 0.3, 0.7)
    img = np.clip(img + 0.1 * rng.standard_normal((h, w)), 0, 1)
    atoms = np.arange(h * w).reshape(h, w)
    return ImageModel(img, atoms, RegionGraph.from_labels(atoms), bins=4, a0=2.0, a1=1.0,
                      a2=0.1, kappa=0.05, likelihood_weight=likelihood_weight)


@pytest.mark.parametrize("which", ["colour", "boundary", "window", "pixels"])
def test_compiled_and_generic_scans_make_the_same_moves(which):
    """The compiled restricted scan (with its early-stopping region search)
    makes exactly the moves of the generic path through model.delta."""
    if which in ("colour", "boundary", "window"):
        make = {"colour": colour_setting, "boundary": grey_boundary_setting,
                "window": grey_window_setting}[which]
        model, n_steps = make()[0], 1500
        init = np.zeros(model.n_vertices, dtype=np.int64)
    else:
        model, n_steps = _pixel_model(), 60
        init = np.random.default_rng(1).integers(0, 4, model.n_vertices)
    paths = []
    for compiled in (True, False):
        rng = np.random.default_rng(99)
        kernel = SplitMerge(model, compiled=compiled)
        state = model.new_state(init)
        traj = []
        for step in range(n_steps):
            kernel.step(state, rng, temperature=1.0 + (step % 3))
            traj.append(state.labels.copy())
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
        paths.append(np.array(traj))
    np.testing.assert_array_equal(paths[0], paths[1])
    assert len({_key(x) for x in paths[0]}) > 5  # the chain did move


def _path_hash(kernel, model, init, mode, n_steps, gibbs=None, seed=99):
    """sha256 of the labels and log π after every update (``mode``:
    "step", or "run" one update per call), or of the labels alone and the
    last log π ("path": one run recording the path); with ``gibbs``, three
    of its steps before every fifth update (stale member lists)."""
    import hashlib

    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    state = model.new_state(init)
    temps = 1.0 + np.arange(n_steps) % 3
    h = hashlib.sha256()
    if mode == "path":
        path = np.empty((n_steps, model.n_vertices), np.int64)
        kernel.run(state, rng, temps, path=path)
        h.update(path.tobytes())
        h.update(np.float64(state.log_pi).tobytes())
        return h.hexdigest(), state
    for s in range(n_steps):
        if gibbs is not None and s % 5 == 0:
            for _ in range(3):
                gibbs.step(state, rng, 1.0)
        if mode == "step":
            kernel.step(state, rng, float(temps[s]))
        else:
            kernel.run(state, rng, temps[s:s + 1])
        h.update(state.labels.tobytes())
        if mode != "path":
            h.update(np.float64(state.log_pi).tobytes())
    return h.hexdigest(), state


def _mixture_model():
    mixture = pytest.importorskip("swcuts.models.mixture")
    data = np.random.default_rng(3).normal(size=(14, 2)) + np.repeat([[0, 0], [3, 3]], 7, axis=0)
    return mixture.MixtureModel(data, "gaussian", alpha=1.0)


@pytest.mark.parametrize("which", ["colour", "boundary", "window", "pixels", "mixture"])
@pytest.mark.parametrize("cls,kw", [(SplitMerge, {}), (RandomSplit, {}),
                                    (SplitMerge, dict(t=2, anchors="pair"))],
                         ids=["split-merge", "random-split", "pair"])
def test_compiled_run_makes_the_moves_of_the_steps(which, cls, kw):
    """The compiled run and the Python steps draw the same numbers and make
    the same moves, bit for bit: the labels and log π after every update
    (one update per call, and one run of them all), the acceptance counts,
    also with another kernel moving vertices in between (the member
    lists then fail their check and are rebuilt)."""
    if which == "pixels":
        # Statistics rows: the run's signature of every other image test
        # (on a pixel source it would compile another, ~6 s).
        model, n_steps = _pixel_model(likelihood_weight=0.999), 40
        from numba import typeof
        assert typeof(model.vsrc) == typeof(colour_setting()[0].vsrc)
        init = np.random.default_rng(1).integers(0, 4, model.n_vertices)
    elif which == "mixture":
        model, n_steps = _mixture_model(), 300
        init = np.zeros(model.n_vertices, dtype=np.int64)
        if kw.get("anchors") is None:
            kw = dict(kw, anchors="pair")
    else:
        make = {"colour": colour_setting, "boundary": grey_boundary_setting,
                "window": grey_window_setting}[which]
        model, n_steps = make()[0], 600
        init = np.zeros(model.n_vertices, dtype=np.int64)
    for gibbs in (None, Gibbs(model, compiled=False)):
        got = {}
        for mode in ("step", "run") + (("path",) if gibbs is None else ()):
            kernel = cls(model, **kw)
            assert kernel.compiled
            h, state = _path_hash(kernel, model, init, mode, n_steps, gibbs)
            got[mode] = (h, state.labels.tolist(), state.log_pi, kernel.counts)
            assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
        assert got["run"] == got["step"]
        if gibbs is None:
            assert got["path"][1:] == got["step"][1:]
            acc = got["step"][3]
            assert acc["split"][1] > 0 and (acc["merge"][1] > 0 or which == "pixels")


@pytest.mark.parametrize("make", [colour_setting, _mixture_model], ids=["colour", "mixture"])
def test_iteration_runs_its_updates_compiled_as_the_steps_make_them(make):
    """iteration(): the M updates in one compiled run, the same as M steps
    (the kernel with ``compiled`` switched off calls step), Gibbs scans
    between them; the same StepInfo."""
    model = make()
    model = model[0] if isinstance(model, tuple) else model
    out = []
    for fast in (True, False):
        kernel = SplitMerge(model, t=2, M=3, R=1)
        kernel.compiled = fast
        rng = np.random.default_rng(12)
        seed_compiled_rng(rng)
        state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
        infos = [kernel.iteration(state, rng, 1.0 + (it % 2)) for it in range(150)]
        out.append(([(i.accepted, i.moved, i.log_accept_ratio, i.delta) for i in infos],
                    state.labels.tolist(), state.log_pi, kernel.counts))
    assert out[0] == out[1]
    assert any(i[0] for i in out[0][0])


def test_compiled_run_keeps_the_best_state_and_leaves_the_member_index_exact():
    model, _, _ = colour_setting()
    kernel = SplitMerge(model)
    rng = np.random.default_rng(7)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    start = state.log_pi
    best_labels = state.labels.copy()
    acc, best, out = kernel.run(state, rng, np.full(300, 1.0), best_labels, start)
    assert out is best_labels and acc > 0
    assert best >= state.log_pi and best == pytest.approx(model.log_target(best_labels), abs=1e-6)
    index = kernel._members_index(state)
    for lab in state.partition.used_labels():
        np.testing.assert_array_equal(np.sort(index.members(state.partition, int(lab))),
                                      np.flatnonzero(state.labels == lab))
    assert kernel.run(state, rng, np.zeros(0))[0] == 0
    with pytest.raises(ValueError):
        kernel.run(state, rng, np.array([1.0, 0.0]))


@pytest.mark.parametrize("cls", [SplitMerge, RandomSplit], ids=lambda c: c.name)
def test_moves_and_rejections(cls):
    """An accepted split adds a label, an accepted merge removes one, a
    rejection leaves the labelling untouched; caches stay exact."""
    model, _, _ = grey_setting()
    kernel = cls(model)
    rng = np.random.default_rng(1)
    state = model.new_state(np.array([0, 0, 1, 1, 2, 2]))
    seen = set()
    for _ in range(400):
        before = state.labels.copy()
        n_before = state.partition.n_labels
        log_pi = state.log_pi
        info = kernel.step(state, rng, 1.0)
        seen.add((info.move, info.accepted))
        if not info.accepted:
            np.testing.assert_array_equal(state.labels, before)
            assert state.log_pi == log_pi
        else:
            assert state.partition.n_labels == n_before + (1 if info.move == "split" else -1)
            assert state.log_pi == pytest.approx(log_pi + info.delta, abs=1e-9)
        assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)
    assert seen == {("split", True), ("split", False), ("merge", True), ("merge", False)}


def test_member_index_survives_other_kernels():
    """Vertices relabelled by another kernel between updates."""
    model, _, _ = colour_setting()
    kernel = SplitMerge(model)
    gibbs = Gibbs(model, compiled=False)
    rng = np.random.default_rng(4)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    for _ in range(300):
        for _ in range(3):
            gibbs.step(state, rng, 1.0)
        kernel.step(state, rng, 1.0)
        index = kernel._index[state]
        for lab in state.partition.used_labels():
            np.testing.assert_array_equal(np.sort(index.members(state.partition, int(lab))),
                                          np.flatnonzero(state.labels == lab))
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)


def test_edge_anchors_are_uniform_over_edges():
    model, _, _ = grey_setting()
    kernel = SplitMerge(model)
    rng = np.random.default_rng(0)
    edges = {tuple(e) for e in model.graph.edges.tolist()}
    counts = {}
    for _ in range(7000):
        i, j = kernel._draw_anchors(rng)
        assert (min(i, j), max(i, j)) in edges
        counts[(i, j)] = counts.get((i, j), 0) + 1
    assert len(counts) == 2 * len(edges)  # both orders of every edge
    expected = 7000 / (2 * len(edges))
    assert all(abs(c - expected) < 5 * np.sqrt(expected) for c in counts.values())


def test_options_and_registry():
    model, _, _ = grey_setting()
    assert KERNELS["split-merge"] is SplitMerge and KERNELS["random-split"] is RandomSplit
    for name in ("split-merge", "random-split"):
        assert name in swcuts.SAMPLERS
        assert name in swcuts.segmentation.options.STEPS_PER_ATOM and name in swcuts.segmentation.options.DEFAULT_T0
    assert SplitMerge(model, random_split=True).name == "random-split"
    assert SplitMerge(model).compiled is True  # the driver calls run()
    assert SplitMerge(model, compiled=False).compiled is False  # ... step()
    assert SplitMerge(model, anchors="pair").anchors == "pair"
    with pytest.raises(ValueError):
        SplitMerge(PottsModel(model.graph, n_labels=3, beta=0.5))
    with pytest.raises(ValueError):
        SplitMerge(model, t=-1)
    with pytest.raises(ValueError):
        SplitMerge(model, anchors="triangle")
    state = model.new_state(np.zeros(6, dtype=np.int64))
    with pytest.raises(ValueError):
        SplitMerge(model).step(state, np.random.default_rng(0), temperature=0.0)


def test_single_vertex_and_edgeless_graphs_are_no_ops():
    atoms = np.zeros((2, 2), dtype=np.int64)
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(np.full((2, 2), 0.5), atoms, g, bins=4)
    state = model.new_state(np.zeros(1, dtype=np.int64))
    info = SplitMerge(model).step(state, np.random.default_rng(0))
    assert not info.accepted and state.labels.tolist() == [0]


# ------------------------------------------------------------ image scale
def _image(h=60, w=80, seed=0):
    rng = np.random.default_rng(seed)
    img = np.full((h, w), 0.25)
    img[:, w // 2:] = 0.75
    img[h // 4: 3 * h // 4, w // 8: w // 3] = 0.5
    return np.clip(img + 0.04 * rng.standard_normal((h, w)), 0.0, 1.0)


@pytest.mark.parametrize("cls", [SplitMerge, RandomSplit], ids=lambda c: c.name)
def test_steps_on_a_segment_sized_image_model(cls):
    # atoms, graph and the default ("contrast") model
    seg = swcuts.segment(_image(), sampler="swc", steps=10, seed=0)
    assert seg.model.boundary > 0
    model = seg.model
    kernel = cls(model)
    rng = np.random.default_rng(0)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    for step in range(300):
        kernel.step(state, rng, temperature=10.0 * 0.98 ** step)
    for _ in range(2):
        kernel.iteration(state, rng, temperature=1.0)
    assert state.log_pi == pytest.approx(model.log_target(state.labels), rel=1e-9, abs=1e-6)
    if cls is SplitMerge:
        assert state.partition.n_labels > 1  # it does split the one-label start


@pytest.mark.parametrize("sampler", ["split-merge", "random-split"])
def test_segment_api(sampler):
    img = _image(40, 50)
    a = swcuts.segment(img, sampler=sampler, steps=200, seed=0)
    b = swcuts.segment(img, sampler=sampler, steps=200, seed=0)
    assert a.sampler == sampler and a.steps == 200
    assert a.labels.shape == img.shape
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.energy == pytest.approx(-a.model.log_target(a.vertex_labels), rel=1e-9, abs=1e-6)
