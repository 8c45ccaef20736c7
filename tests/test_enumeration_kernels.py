"""Every kernel leaves π invariant: visit frequencies at T = 1 against the
exactly enumerated posterior over all partitions of small graphs."""

import numpy as np
import pytest

from enumeration import compare, iid_tv, exact_distribution, labelings, set_partitions, visit_counts
from swcuts.graph.edge_probabilities import kl_edge_probabilities, vertex_histograms
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.potts import PottsModel
from swcuts.samplers.swc import SWC, SWC1, SWC2, ClusterGibbs
from swcuts.samplers.gibbs import Gibbs
from swcuts.samplers.sw_potts import SwendsenWang
from swcuts.samplers.common import seed_compiled_rng


def grey_setting():
    """2x3 lattice of atoms (1x2 pixels each), two grey populations."""
    atoms = np.repeat(np.arange(6).reshape(2, 3), 2, axis=1)
    img = np.array([[0.2, 0.25, 0.3, 0.2, 0.8, 0.7],
                     [0.3, 0.2, 0.75, 0.8, 0.8, 0.9]])[..., None]
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05)
    return model, img, atoms


def colour_setting():
    """Seven atoms of an irregular colour image, three colours."""
    atoms = np.array([[0, 0, 1, 1, 2],
                      [3, 0, 1, 4, 2],
                      [3, 5, 5, 4, 6]])
    rng = np.random.default_rng(7)
    base = np.array([[0.2, 0.5, 0.5], [0.25, 0.55, 0.5], [0.7, 0.3, 0.6],
                     [0.2, 0.5, 0.45], [0.7, 0.35, 0.6], [0.5, 0.5, 0.2], [0.65, 0.3, 0.65]])
    img = np.clip(base[atoms] + 0.03 * rng.standard_normal(atoms.shape + (3,)), 0, 1)
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=1.0, a1=0.5, a2=0.05, kappa=0.02)
    return model, img, atoms


def boundary_setting():
    """The colour setting with the contrast-sensitive boundary term."""
    _, img, atoms = colour_setting()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=1.0, a1=0.5, a2=0.05, kappa=0.02, boundary=0.8)
    return model, img, atoms


def grey_boundary_setting():
    """The grey setting with the boundary term (6 atoms, 203 partitions: the
    cheap boundary setting of the samplers whose tests build exact kernels).
    Without the term, π is 0.37 away in total variation."""
    _, img, atoms = grey_setting()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05, boundary=0.7)
    return model, img, atoms


def image4_boundary():
    """Four atoms of a 2x4 grey image (a 4-cycle) with the boundary term
    (15 partitions: the setting of the exact transition matrices; without
    the term π is 0.23 away in total variation)."""
    atoms = np.array([[0, 0, 1, 1], [2, 2, 3, 3]])
    img = np.array([[0.2, 0.3, 0.7, 0.8], [0.3, 0.75, 0.8, 0.9]])[..., None]
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05, boundary=0.5)
    return model, img, atoms


def grey_window_setting():
    """The grey setting with the boundary term and window histograms (model
    "window": every atom's histogram counts are sums of its pixels' 3x3
    window histograms, fractional). 6 atoms, 203 partitions: the cheap
    window setting. λ = 0.5 (0.7 in :func:`grey_boundary_setting`) keeps π
    spread over more than 10 partitions; the plain counts' π is 0.13 away
    in total variation."""
    _, img, atoms = grey_setting()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05, boundary=0.5,
                       window=1)
    return model, img, atoms


def image4_window():
    """:func:`image4_boundary` with window histograms (4 atoms, 15
    partitions: the window setting of the exact transition matrices; the
    plain counts' π is 0.05 away in total variation)."""
    _, img, atoms = image4_boundary()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=0.5, a1=0.5, a2=0.1, kappa=0.05, boundary=0.5,
                       window=1)
    return model, img, atoms


def _learned_map(atoms):
    """A boundary probability map for the learned evidence: high (0.9) on the
    pixels right of the atom boundary between columns of atoms 1|2 (and
    4|5 where present), low (0.1) elsewhere, so that the pixel-pair weights
    −logit(p) take both signs."""
    prob = np.full(atoms.shape, 0.1)
    cols = np.flatnonzero(np.diff(atoms[0]) != 0) + 1
    prob[:, cols[len(cols) // 2]] = 0.9
    return prob


def grey_learned_setting():
    """The grey setting under the "learned" posterior: window counts,
    the coarsened likelihood (ζ = 0.4: every statistics row scaled) and
    the learned boundary evidence, whose weights take both signs (a cut on
    the detected boundary earns). 6 atoms, 203 partitions; π is 0.33 away in
    total variation from the posterior that counts every pixel (ζ = 1,
    :func:`uncoarsened_twin`)."""
    _, img, atoms = grey_setting()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=0.3, a1=0.3, a2=0.05, kappa=0.05, boundary=0.3,
                       window=1, likelihood_weight=0.4, evidence="learned", boundary_map=_learned_map(atoms))
    return model, img, atoms


def image4_learned():
    """:func:`image4_boundary` under the "learned" posterior (4 atoms, 15
    partitions: the setting of the exact transition matrices)."""
    _, img, atoms = image4_boundary()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=0.3, a1=0.3, a2=0.05, kappa=0.05, boundary=0.3,
                       window=1, likelihood_weight=0.4, evidence="learned", boundary_map=_learned_map(atoms))
    return model, img, atoms


def uncoarsened_twin(model, img, atoms):
    """``model`` (a "learned" model of ``img`` on ``atoms``) with the rows of
    ζ = 1: the negative control of the learned settings (a kernel built on it
    samples the posterior that counts every pixel)."""
    import copy

    from swcuts.models.vertex_stats import row_source

    twin = copy.copy(model)
    twin.likelihood_weight = 1.0
    twin._vstats = twin._vertex_stats(np.asarray(img, dtype=np.float64), atoms, model.n_vertices)
    twin.vsrc = row_source(twin._vstats, model.n_channels)
    return twin


def plain_rows_twin(model, img, atoms):
    """``model`` (a window model of ``img`` on ``atoms``) with its statistics
    rows replaced by the rows counted pixel by pixel (window 0): the negative
    control of the window settings (a kernel built on it samples the
    posterior without window counts)."""
    import copy

    from swcuts.models.vertex_stats import row_source

    twin = copy.copy(model)
    twin.window = 0
    twin._vstats = twin._vertex_stats(np.asarray(img, dtype=np.float64), atoms, model.n_vertices)
    twin.vsrc = row_source(twin._vstats, model.n_channels)
    return twin


def paper_twin(model):
    """``model`` with λ forced to 0 (the negative control of the boundary
    settings: a kernel built on it leaves out the boundary term)."""
    import copy

    twin = copy.copy(model)
    twin.set_boundary(0.0)
    return twin


SETTINGS = {"grey": grey_setting, "colour": colour_setting, "boundary": boundary_setting}


def edge_q(img, atoms, g):
    # A ceiling below 1 keeps the small chains mixing quickly.
    return np.minimum(kl_edge_probabilities(vertex_histograms(img, atoms, bins=4), g.edges), 0.7)


#: The settings of the generic (pure-Python) chains. The colour setting is
#: the boundary setting without its boundary term: on it the Python kernels
#: take no branch that the boundary setting (the same image, the term on)
#: and the grey setting (the term off) do not take, and the colour data
#: stay covered by the compiled chains, the colour ``compiled`` cases. Its
#: generic chains (5 tests, ~45 CPU s) are not run; the negative control
#: (:func:`test_enumeration_test_catches_a_wrong_acceptance_ratio`) keeps
#: every setting.
GENERIC_SETTINGS = ("boundary", "grey")


def settings_and_paths(generic=GENERIC_SETTINGS):
    """``(setting, compiled)`` cases: every setting compiled, those of
    ``generic`` also generic (ids ``<setting>-compiled``, ``<setting>-generic``)."""
    return [pytest.param(name, compiled, id=f"{name}-{'compiled' if compiled else 'generic'}")
            for name in sorted(SETTINGS) for compiled in (True, False)
            if compiled or name in generic]


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def setting(request):
    model, img, atoms = SETTINGS[request.param]()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    # The test is only informative if π is spread over many partitions.
    assert 1.0 / np.sum(p ** 2) > 10
    return model, edge_q(img, atoms, model.graph), states, p


# Steps between recorded samples: enough that the chi-square test, which
# assumes independent draws, is not fooled by autocorrelation.
THIN = {"swc": 40, "swc1": 40, "swc2": 40, "cluster-gibbs": 20, "gibbs": 20}


def _assert_visits_match(kernel, model, rng, states, p, thin, n_samples=8000):
    """Run ``kernel`` from one label; its visits must match the exact
    distribution ``p`` over ``states`` (total variation within 1.5 times
    the iid noise floor, chi-square p-value above 1e-3). Returns the state."""
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=n_samples, thin=thin)
    tv, pvalue = compare(counts, states, p)
    floor = iid_tv(p, n_samples)
    assert tv < 1.5 * floor, f"total variation {tv:.3f} (iid noise floor {floor:.3f})"
    assert pvalue > 1e-3, f"chi-square p-value {pvalue:.2g}"
    return state


@pytest.mark.parametrize("kernel_cls", [SWC1, SWC2, ClusterGibbs, Gibbs], ids=lambda k: k.name)
@pytest.mark.parametrize("setting, compiled", settings_and_paths(), indirect=["setting"])
def test_kernel_leaves_posterior_invariant(setting, kernel_cls, compiled):
    model, q, states, p = setting
    rng = np.random.default_rng(2024)
    seed_compiled_rng(rng)
    kernel = kernel_cls(model, q, compiled=compiled)
    state = _assert_visits_match(kernel, model, rng, states, p, THIN[kernel_cls.name])
    # The cached log π stays exact along the chain.
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-6)


class _SWC2WithoutCuts(SWC2):
    """A wrong kernel: drops the cut ratio of Theorem 4."""

    def __init__(self, model, q, compiled=None):
        super().__init__(model, q, compiled=compiled)
        self.log1mq = np.zeros_like(self.log1mq)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "generic"])
def test_enumeration_test_catches_a_wrong_acceptance_ratio(setting, compiled):
    model, q, states, p = setting
    rng = np.random.default_rng(5)
    seed_compiled_rng(rng)
    kernel = _SWC2WithoutCuts(model, q, compiled=compiled)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=8000, thin=40)
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3


@pytest.mark.parametrize("kernel_cls", [SWC, SWC1, SWC2, ClusterGibbs, Gibbs], ids=lambda k: k.name)
def test_compiled_steps_one_by_one_make_the_moves_of_one_run(kernel_cls):
    """``visit_counts`` drives a compiled kernel ``thin`` steps per
    ``run`` call (``enumeration._compiled_run``); that tests ``step`` too
    only because steps one by one make exactly the same moves."""
    model, img, atoms = boundary_setting()
    kernel = kernel_cls(model, edge_q(img, atoms, model.graph), compiled=True)
    paths = []
    for by_step in (True, False):
        rng = np.random.default_rng(11)
        seed_compiled_rng(rng)
        state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
        path = []
        for _ in range(50):
            if by_step:
                for _ in range(40):
                    kernel.step(state, rng, 1.0)
            else:
                kernel.run(state, rng, np.full(40, 1.0))
            path.append((state.labels.tolist(), state.log_pi))
        paths.append(path)
    assert paths[0] == paths[1]
    assert len({tuple(labels) for labels, _ in paths[0]}) > 5  # the chain moved


def test_temperature_targets_tempered_posterior():
    model, img, atoms = grey_setting()
    states = set_partitions(6)
    logp = np.array([model.log_target(np.array(s)) for s in states]) / 2.0
    p = np.exp(logp - logp.max())
    p /= p.sum()
    rng = np.random.default_rng(3)
    seed_compiled_rng(rng)
    kernel = SWC2(model, edge_q(img, atoms, model.graph))
    state = model.new_state(np.zeros(6, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=8000, thin=40, temperature=2.0)
    tv, pvalue = compare(counts, states, p)
    assert tv < 1.5 * iid_tv(p, 8000) and pvalue > 1e-3


def _lattice(h, w):
    return RegionGraph.from_labels(np.arange(h * w).reshape(h, w))


def test_swendsen_wang_potts_full_distribution():
    g = _lattice(2, 3)
    model = PottsModel(g, n_labels=3, beta=0.8)
    states = labelings(6, 3)
    p = exact_distribution(model, states)
    rng = np.random.default_rng(11)
    seed_compiled_rng(rng)
    kernel = SwendsenWang(model)
    state = model.new_state(np.zeros(6, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=20000, thin=1, key=tuple)
    tv, pvalue = compare(counts, states, p)
    assert tv < 1.5 * iid_tv(p, 20000) and pvalue > 1e-3


def test_swendsen_wang_potts_energy_and_magnetisation():
    g = _lattice(3, 3)
    model = PottsModel(g, n_labels=2, beta=0.9)
    states = np.array(labelings(9, 2))
    p = exact_distribution(model, [tuple(s) for s in states])
    e = g.edges
    energy = np.count_nonzero(states[:, e[:, 0]] != states[:, e[:, 1]], axis=1)
    mag2 = (2 * states.mean(axis=1) - 1) ** 2
    exact_e, exact_m2 = float(p @ energy), float(p @ mag2)
    rng = np.random.default_rng(12)
    seed_compiled_rng(rng)
    kernel = SwendsenWang(model)
    state = model.new_state(np.zeros(9, dtype=np.int64))
    es, ms = [], []
    for _ in range(200):
        kernel.step(state, rng)
    for _ in range(20000):
        kernel.step(state, rng)
        en, m0 = model.energy_and_magnetisation(state.labels)
        es.append(en)
        ms.append((2 * m0 - 1) ** 2)
    es, ms = np.array(es), np.array(ms)
    # Standard errors with a generous allowance for autocorrelation.
    assert abs(es.mean() - exact_e) < 4 * 3 * es.std() / np.sqrt(es.size)
    assert abs(ms.mean() - exact_m2) < 4 * 3 * ms.std() / np.sqrt(ms.size)


@pytest.mark.parametrize("setting, compiled", settings_and_paths(), indirect=["setting"])
def test_swc2_with_single_vertex_steps_leaves_posterior_invariant(setting, compiled):
    """The default ``swc`` kernel mixes SWC-2 with single-vertex steps."""
    model, q, states, p = setting
    rng = np.random.default_rng(77)
    seed_compiled_rng(rng)
    kernel = SWC2(model, q, compiled=compiled, p_single=0.5)
    state = model.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=8000, thin=40)
    tv, pvalue = compare(counts, states, p)
    assert tv < 1.5 * iid_tv(p, 8000), f"total variation {tv:.3f}"
    assert pvalue > 1e-3, f"chi-square p-value {pvalue:.2g}"


def texture_setting():
    """The colour setting with the texture-robust boundary weights (model
    "texture": the kernels only see other weights w_ij)."""
    _, img, atoms = colour_setting()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=1.0, a1=0.5, a2=0.05, kappa=0.02, boundary=0.8,
                       evidence="texture")
    return model, img, atoms


def window_setting():
    """The boundary setting with window histograms (model "window": the
    kernels only see other, fractional, histogram counts)."""
    _, img, atoms = colour_setting()
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=4, a0=1.0, a1=0.5, a2=0.05, kappa=0.02, boundary=0.8,
                       window=1)
    return model, img, atoms


def _assert_compiled_kernel_invariant(kernel_cls, model, img, atoms, seed):
    """The compiled kernel's visits match the exact posterior of ``model``."""
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 10
    rng = np.random.default_rng(seed)
    seed_compiled_rng(rng)
    kernel = kernel_cls(model, edge_q(img, atoms, model.graph), compiled=True)
    _assert_visits_match(kernel, model, rng, states, p, THIN[kernel_cls.name])


def assert_window_counts(model, plain):
    """``model``'s histogram counts are window counts: fractional, and not
    those of ``plain`` (the same image counted pixel by pixel)."""
    hist = slice(1, 1 + model.n_channels * model.n_bins)
    assert model.window > 0 and plain.window == 0
    rows = model.vstats[:, hist]
    assert not np.allclose(rows, plain.vstats[:, hist])
    assert not np.allclose(rows, np.round(rows))  # fractional counts
    # Each channel block still sums to the atom's pixel count.
    np.testing.assert_allclose(rows.reshape(model.n_vertices, model.n_channels, -1).sum(-1),
                               np.repeat(model.vstats[:, :1], model.n_channels, axis=1))


#: The window settings and the same images without window counts.
WINDOW_SETTINGS = {"colour": (window_setting, colour_setting),
                   "grey": (grey_window_setting, grey_boundary_setting),
                   "image4": (image4_window, image4_boundary)}


@pytest.mark.parametrize("name", sorted(WINDOW_SETTINGS))
def test_window_settings_count_fractional_window_histograms(name):
    make, make_plain = WINDOW_SETTINGS[name]
    model, img, atoms = make()
    assert_window_counts(model, make_plain()[0])
    # The negative control's twin has the plain rows and nothing else changed.
    twin = plain_rows_twin(model, img, atoms)
    plain = ImageModel(img, atoms, model.graph, bins=model.n_bins, a0=model.a0, a1=model.a1,
                       a2=model.a2, kappa=model.kappa, boundary=model.boundary)
    np.testing.assert_allclose(twin.vstats, plain.vstats, atol=1e-12)
    labels = np.arange(model.n_vertices) % 2
    assert twin.log_target(labels) == pytest.approx(plain.log_target(labels), abs=1e-9)
    assert model.window == 1 and twin.window == 0


@pytest.mark.parametrize("kernel_cls", [SWC, SWC1, SWC2, ClusterGibbs, Gibbs], ids=lambda k: k.name)
def test_kernel_leaves_the_window_posterior_invariant(kernel_cls):
    """Every SW-cut kernel on atoms (swc: SWC-2 with single-vertex steps,
    the default) and Gibbs on the "window" posterior (colour setting)."""
    model, img, atoms = window_setting()
    assert_window_counts(model, colour_setting()[0])
    _assert_compiled_kernel_invariant(kernel_cls, model, img, atoms, 2026)


def test_enumeration_test_catches_a_kernel_without_window_counts():
    """Negative control of every window test: on the grey window setting
    (the closest of the window settings to its plain twin) SWC-2 passes the
    visit test, and SWC-2 built on the twin with the plain rows (it samples
    the posterior without window counts, 0.13 away in total variation)
    fails it (seed 6: TV 0.044 and p 0.22, then TV 0.13 and p 1e-127; iid
    noise floor 0.039)."""
    model, img, atoms = grey_window_setting()
    twin = plain_rows_twin(model, img, atoms)
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    assert 1.0 / np.sum(p ** 2) > 10
    q = edge_q(img, atoms, model.graph)
    rng = np.random.default_rng(6)
    seed_compiled_rng(rng)
    _assert_visits_match(SWC2(model, q, compiled=True), model, rng, states, p, THIN["swc2"])
    kernel = SWC2(twin, q, compiled=True)
    state = twin.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=8000, thin=THIN["swc2"])
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3 and tv > 1.5 * iid_tv(p, 8000), f"TV {tv:.3f}, p {pvalue:.2g}"


def test_learned_setting_is_coarsened_with_signed_boundary_weights():
    """The learned settings exercise what is new: rows scaled by ζ (the
    fits unchanged, the likelihood ζ times), weights of both signs, and a
    posterior far from its ζ = 1 twin."""
    model, img, atoms = grey_learned_setting()
    twin = uncoarsened_twin(model, img, atoms)
    np.testing.assert_allclose(model.vstats, 0.4 * twin.vstats)
    w = model.boundary_weights
    assert w.min() < 0 < w.max()
    states = set_partitions(model.n_vertices)
    p, p_twin = exact_distribution(model, states), exact_distribution(twin, states)
    assert 1.0 / np.sum(p ** 2) > 10
    assert 0.5 * np.abs(p - p_twin).sum() > 0.1


@pytest.mark.parametrize("kernel_cls", [SWC, SWC1, SWC2, ClusterGibbs, Gibbs], ids=lambda k: k.name)
def test_kernel_leaves_the_learned_posterior_invariant(kernel_cls):
    """Every SW-cut kernel on atoms and Gibbs on the "learned" posterior."""
    model, img, atoms = grey_learned_setting()
    _assert_compiled_kernel_invariant(kernel_cls, model, img, atoms, 2027)


def test_enumeration_test_catches_a_kernel_without_the_coarsening():
    """Negative control of the learned settings: SWC-2 built on the ζ = 1
    twin fails the visit test against the coarsened posterior."""
    model, img, atoms = grey_learned_setting()
    twin = uncoarsened_twin(model, img, atoms)
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    q = edge_q(img, atoms, model.graph)
    rng = np.random.default_rng(6)
    seed_compiled_rng(rng)
    kernel = SWC2(twin, q, compiled=True)
    state = twin.new_state(np.zeros(model.n_vertices, dtype=np.int64))
    counts = visit_counts(kernel, state, rng, n_samples=8000, thin=THIN["swc2"])
    tv, pvalue = compare(counts, states, p)
    assert pvalue < 1e-3 and tv > 1.5 * iid_tv(p, 8000), f"TV {tv:.3f}, p {pvalue:.2g}"
