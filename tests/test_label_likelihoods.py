"""Models: the per-label likelihoods (label_loglik) against independent
references, and the region terms. The fast delta/apply path against
log_target is in test_models.py."""

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import FAMILIES, ImageModel
from swcuts.models.image_kernels import label_loglik
from swcuts.models.regions import region_change, region_terms

from test_models import random_atoms, random_features, random_subset

# ---------------------------------------------------------------------------
# label_loglik against independent references
# ---------------------------------------------------------------------------


def normalised_coords(h, w, pix):
    """The pixel coordinates of ImageModel._vertex_stats."""
    scale = max(h, w) / 2.0
    r, c = np.divmod(np.asarray(pix), w)
    return (c - (w - 1) / 2.0) / scale, (r - (h - 1) / 2.0) / scale


def bic_log(n):
    """BIC's log n, below n = e its tangent through 0 (concave from 0)."""
    return math.log(n) if n >= math.e else n / math.e


def reference_loglik(features, pix, family, bins, kappa, ridge=0.0):
    """Penalised log-likelihood of the pixels ``pix`` from first principles."""
    h, w, C = features.shape
    vals = features.reshape(-1, C)[pix]
    n = len(pix)
    width = 1.0 / bins
    if family == "histogram":
        ll = 0.0
        for c in range(C):
            idx = np.minimum((vals[:, c] * bins).astype(int), bins - 1)
            for count in np.bincount(idx, minlength=bins):
                if count:
                    ll += count * math.log(count / n)
        return ll - kappa * 0.5 * C * (bins - 1) * bic_log(n)
    x, y = normalised_coords(h, w, pix)
    cols = [np.ones(n), x, y]
    if family == "quadratic":
        cols += [x * x, x * y, y * y]
    X = np.stack(cols, axis=1)
    p = X.shape[1]
    H = 0.0
    for c in range(C):
        if ridge:
            # Ridge regression as an augmented least-squares problem.
            Xa = np.vstack([X, math.sqrt(ridge * n) * np.eye(p)])
            ya = np.concatenate([vals[:, c], np.zeros(p)])
            beta = np.linalg.lstsq(Xa, ya, rcond=None)[0]
        else:
            beta = np.linalg.lstsq(X, vals[:, c], rcond=None)[0]
        rss = float(np.sum((vals[:, c] - X @ beta) ** 2))
        H += 0.5 * math.log(2 * math.pi * math.e * (rss / n + width**2 / 12)) - math.log(width)
    dim = 4 if family == "linear" else 7
    return -n * H - kappa * 0.5 * C * dim * bic_log(n)


def well_posed(h, w, pix, family, ridge):
    """The ridge does not shift the fit: every non-zero singular direction of
    the design is far stronger than ridge*n (exact rank deficiency is fine)."""
    x, y = normalised_coords(h, w, pix)
    n = len(pix)
    cols = [np.ones(n), x, y] + ([x * x, x * y, y * y] if family == "quadratic" else [])
    s = np.linalg.svd(np.stack(cols, axis=1), compute_uv=False)
    s = s[s > 1e-9 * s[0]]
    return s[-1] ** 2 >= 1e4 * ridge * n


def loglik_case(seed):
    rng = np.random.default_rng(seed)
    h, w = (int(v) for v in rng.integers(1, 9, size=2))
    while h * w < 2:
        w += 1
    C = int(rng.choice([1, 3]))
    kind = rng.integers(4)
    if kind == 3:  # an exact quadratic surface: zero residual
        yy, xx = np.mgrid[0:h, 0:w]
        feats = np.repeat((0.3 + 0.02 * xx + 0.01 * xx * yy - 0.004 * yy**2)[..., None], C, axis=2)
    else:
        feats = random_features(rng, h, w, colour=True)[..., :C]
    atoms = np.arange(h * w).reshape(h, w)  # one atom per pixel
    graph = RegionGraph.from_labels(atoms)
    n = h * w
    pix = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
    return rng, feats, atoms, graph, pix


def model_loglik(feats, atoms, graph, pix, families, bins, kappa):
    model = ImageModel(feats, atoms, graph, bins=bins, families=families, kappa=kappa)
    in_label = np.zeros(graph.n_vertices, bool)
    in_label[np.unique(atoms.ravel()[pix])] = True
    st = model.vstats[in_label].sum(axis=0)
    direct = label_loglik(st, model.n_channels, model.n_bins, model.use_family, model.kappa, model.ridge)
    # The same value through a state whose label 1 holds exactly these pixels.
    labels = np.where(in_label, 1, 0) if not in_label.all() else np.ones(graph.n_vertices, np.int64)
    state = model.new_state(labels)
    assert state.loglik[1] == pytest.approx(direct, rel=1e-12, abs=1e-12)
    return direct, model.ridge


@pytest.mark.parametrize("seed", range(60))
def test_label_loglik_against_reference(seed):
    rng, feats, atoms, graph, pix = loglik_case(seed)
    h, w, _ = feats.shape
    bins = int(rng.choice([4, 15, 32, 256]))
    kappa = float(rng.uniform(0, 2))
    values = {}
    for fam in FAMILIES:
        got, ridge = model_loglik(feats, atoms, graph, pix, [fam], bins, kappa)
        values[fam] = got
        if fam == "histogram":
            ref = reference_loglik(feats, pix, fam, bins, kappa)
            assert got == pytest.approx(ref, rel=1e-10, abs=1e-10)
            continue
        # Exactly the fit the model makes (ridge regression, true residual).
        ref_ridge = reference_loglik(feats, pix, fam, bins, kappa, ridge=ridge)
        assert got == pytest.approx(ref_ridge, rel=1e-7, abs=1e-7), (fam, len(pix))
        # Ordinary least squares: the ridge is negligible unless the design is
        # nearly (but not exactly) degenerate.
        if well_posed(h, w, pix, fam, ridge):
            ref_ols = reference_loglik(feats, pix, fam, bins, kappa)
            assert got == pytest.approx(ref_ols, rel=1e-4, abs=1e-4), (fam, len(pix))
    # Every family together: the best one.
    best, _ = model_loglik(feats, atoms, graph, pix, list(FAMILIES), bins, kappa)
    assert best == pytest.approx(max(values.values()), rel=1e-12, abs=1e-12)
    for pair in itertools.combinations(FAMILIES, 2):
        got, _ = model_loglik(feats, atoms, graph, pix, list(pair), bins, kappa)
        assert got == pytest.approx(max(values[f] for f in pair), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_label_loglik_ols_on_rectangles(seed):
    """Rectangular labels of at least 3x3 pixels: plain least squares."""
    rng = np.random.default_rng(500 + seed)
    h, w = (int(v) for v in rng.integers(3, 10, size=2))
    feats = random_features(rng, h, w, colour=bool(seed % 2))
    if feats.ndim == 2:
        feats = feats[..., None]
    atoms = np.arange(h * w).reshape(h, w)
    graph = RegionGraph.from_labels(atoms)
    r0, c0 = rng.integers(0, h - 2), rng.integers(0, w - 2)
    r1, c1 = rng.integers(r0 + 3, h + 1), rng.integers(c0 + 3, w + 1)
    pix = atoms[r0:r1, c0:c1].ravel()
    for fam in ("linear", "quadratic"):
        got, _ = model_loglik(feats, atoms, graph, np.sort(pix), [fam], 32, 1.0)
        ref = reference_loglik(feats, np.sort(pix), fam, 32, 1.0)
        assert got == pytest.approx(ref, rel=1e-4, abs=1e-4)


def test_label_loglik_perfect_fit_is_the_floor():
    """A label that lies exactly on a plane has residual variance w^2/12."""
    h, w, bins = 5, 7, 32
    yy, xx = np.mgrid[0:h, 0:w]
    feats = (0.2 + 0.05 * xx + 0.03 * yy).astype(float)
    atoms = np.arange(h * w).reshape(h, w)
    graph = RegionGraph.from_labels(atoms)
    pix = np.arange(h * w)
    got, _ = model_loglik(feats[..., None], atoms, graph, pix, ["linear"], bins, 1.0)
    width = 1.0 / bins
    n = h * w
    expect = -n * (0.5 * math.log(2 * math.pi * math.e * width**2 / 12) - math.log(width)) \
        - 0.5 * 4 * math.log(n)
    assert got == pytest.approx(expect, rel=1e-6)


def test_label_loglik_empty_label_is_zero():
    feats = np.random.default_rng(0).random((2, 3))
    atoms = np.arange(6).reshape(2, 3)
    model = ImageModel(feats, atoms, RegionGraph.from_labels(atoms))
    st = np.zeros(model.vstats.shape[1])
    assert label_loglik(st, 1, model.n_bins, model.use_family, model.kappa, model.ridge) == 0.0


def test_unknown_family_raises():
    feats = np.zeros((2, 3))
    atoms = np.arange(6).reshape(2, 3)
    graph = RegionGraph.from_labels(atoms)
    with pytest.raises(ValueError):
        ImageModel(feats, atoms, graph, families=["histogram", "cubic"])
    with pytest.raises(ValueError):
        ImageModel(feats, atoms, graph, families=[])
    ImageModel(feats, atoms, graph, families=["quadratic"])  # fine


# ---------------------------------------------------------------------------
# Region terms
# ---------------------------------------------------------------------------


def reference_region_terms(labels, edges, area, exponent):
    """Connected regions by networkx, one label at a time."""
    g = nx.Graph()
    g.add_nodes_from(range(len(labels)))
    g.add_edges_from((int(i), int(j)) for i, j in edges if labels[i] == labels[j])
    comps = list(nx.connected_components(g))
    return len(comps), sum(sum(area[v] for v in c) ** exponent for c in comps)


def random_graph(rng):
    if rng.random() < 0.5:
        atoms = random_atoms(rng, int(rng.integers(2, 6)), int(rng.integers(2, 7)))
        graph = RegionGraph.from_labels(atoms)
    else:
        n = int(rng.integers(1, 14))
        raw = rng.integers(0, n, size=(int(rng.integers(0, 3 * n + 1)), 2))
        graph = RegionGraph.from_edges(n, raw[raw[:, 0] != raw[:, 1]])
    return graph


@pytest.mark.parametrize("seed", range(80))
def test_region_change_matches_region_terms(seed):
    rng = np.random.default_rng(seed)
    graph = random_graph(rng)
    n = graph.n_vertices
    area = rng.integers(1, 5, size=n).astype(float)
    exponent = float(rng.choice([0.9, 0.5, 1.0, 2.0]))
    in_r = np.zeros(n, np.int8)
    mark_a = np.zeros(n, np.int8)
    mark_b = np.zeros(n, np.int8)
    stack = np.empty(n, np.int64)
    visited = np.empty(2 * n, np.int64)
    labels = rng.integers(0, int(rng.integers(1, n + 1)), size=n)
    for _ in range(20):
        m0, s0 = region_terms(labels, graph.edges, area, exponent)
        rm, rs = reference_region_terms(labels, graph.edges, area, exponent)
        assert m0 == rm
        assert s0 == pytest.approx(rs, rel=1e-12)
        R = random_subset(rng, np.arange(n)).astype(np.int64)  # any labels, often not connected
        free = np.setdiff1d(np.arange(n), labels)
        if free.size and rng.random() < 0.3:
            new = int(rng.choice(free))
        else:
            new = int(rng.choice(labels))
        labels_before = labels.copy()
        dm, ds = region_change(labels, R, new, graph.indptr, graph.indices, area, exponent,
                               in_r, mark_a, mark_b, stack, visited)
        np.testing.assert_array_equal(labels, labels_before)  # read only
        assert not in_r.any() and not mark_a.any() and not mark_b.any()
        after = labels.copy()
        after[R] = new
        m1, s1 = region_terms(after, graph.edges, area, exponent)
        assert dm == m1 - m0
        assert ds == pytest.approx(s1 - s0, rel=1e-9, abs=1e-9 * max(1.0, s0, s1))
        if rng.random() < 0.7:
            labels = after


def _scipy_components(labels, edges, area):
    """What ``regions._components`` computed with scipy before session 13."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = labels.size
    e = edges[labels[edges[:, 0]] == labels[edges[:, 1]]] if len(edges) else np.zeros((0, 2), int)
    m, comp = connected_components(coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n)),
                                   directed=False)
    return m, comp, np.bincount(comp, weights=area, minlength=m)


@pytest.mark.parametrize("seed", range(40))
def test_components_are_scipys_bit_for_bit(seed):
    """The compiled regions of a labelling (region_terms, region_cache) are
    scipy's: the same count, the same numbering, the same float areas."""
    from swcuts.models.regions import _components, region_cache

    rng = np.random.default_rng(seed)
    graph = random_graph(rng)
    n = graph.n_vertices
    area = rng.random(n) * rng.choice([1.0, 1e3])
    for _ in range(10):
        labels = rng.integers(0, int(rng.integers(1, n + 1)), size=n)
        m, comp, areas = _components(labels, graph.edges, area)
        want_m, want_comp, want_areas = _scipy_components(labels, graph.edges, area)
        assert m == want_m
        np.testing.assert_array_equal(comp, want_comp)
        assert areas.tobytes() == want_areas.tobytes()
        root, root_area = region_cache(labels, graph.edges, area)
        assert (labels[root] == labels).all() and root_area.tobytes() == want_areas[want_comp].tobytes()


def test_region_change_by_hand():
    # Path 0-1-2-3-4 with labels a a b a a: moving 2 to a joins two regions.
    g = RegionGraph.from_edges(5, [(0, 1), (1, 2), (2, 3), (3, 4)])
    labels = np.array([0, 0, 1, 0, 0])
    area = np.ones(5)
    args = (g.indptr, g.indices, area, 1.0, np.zeros(5, np.int8), np.zeros(5, np.int8),
            np.zeros(5, np.int8), np.empty(5, np.int64), np.empty(10, np.int64))
    dm, ds = region_change(labels, np.array([2]), 0, *args)
    assert (dm, ds) == (-2, 0.0)
    # Moving 2 to a fresh label: one region renamed, nothing changes.
    dm, ds = region_change(labels, np.array([2]), 3, *args)
    assert (dm, ds) == (0, 0.0)
    # Moving 1 and 3 (not connected) to label 1: 0 and 4 become singletons.
    dm, ds = region_change(labels, np.array([1, 3]), 1, *args)
    assert dm == 0  # {0,1},{2},{3,4} -> {0},{1,2,3},{4}
    assert region_terms(labels, g.edges, area, 1.0) == (3, 5.0)
