"""The "edges" posterior (swcuts.segmentation.edge_posterior): the model is
the formula, its pooled samples over the levels match the exact mixture by
enumeration (and fail against other targets and with a biased kernel), the
offset fit reaches its target numbers of segments, and bad input is refused."""

import numpy as np
import pytest
from enumeration import exact_distribution, set_partitions
from test_granularity import _indicators
from test_posterior import Z_MAX, _exact, _SWC2WithoutCuts

from swcuts.graph.region_graph import RegionGraph
from swcuts.inference import diagnostics as dg
from swcuts.io.errors import InputError
from swcuts.segmentation import edge_posterior
from swcuts.segmentation.edge_posterior import (
    bond_probabilities, edge_model, edge_weights, fit_offsets, sample_edge_posterior, sample_edges, THIN_PER_ATOM, DETECTOR_SCALES)
from swcuts.samplers.blocks import region_blocks
from swcuts.segmentation.posterior import sample_posterior

#: Seven atoms of an irregular image (the colour setting of the kernel tests).
ATOMS = np.array([[0, 0, 1, 1, 2],
                  [3, 0, 1, 4, 2],
                  [3, 5, 5, 4, 6]])
OFFSETS = (-0.5, 1.0)
#: γ of the pooled enumeration (w = γ · logit q + b; round 10's coarsened evidence);
#: the level-share and biased-kernel tests run at γ = 1.
POWER = 0.5


def _setting():
    graph = RegionGraph.from_labels(ATOMS)
    q = np.random.default_rng(2).uniform(0.15, 0.9, graph.n_edges)
    return graph, q


def _z_scores(ps, exact_co, exact_pix):
    """|estimate - exact| / standard error of a stratified sample whose
    levels hold shares h_l of the samples (as tests/test_granularity.py for
    equal shares): the estimate Σ h_l p_l has variance Σ h_l² p_l(1 - p_l)/ESS_l."""
    ind, iu = _indicators(ps)
    exact = np.concatenate([exact_co[iu], exact_pix.ravel()])
    sizes = [level["samples"] for level in ps.levels]
    chains = [level["chains"] for level in ps.levels]
    h = np.array(sizes) / sum(sizes)
    bounds = np.cumsum([0] + sizes)
    assert np.allclose(ind[:, iu[0].size:].mean(axis=0), ps.boundary_probability().ravel())
    z = []
    for k in range(ind.shape[1]):
        est, var, slack = 0.0, 0.0, 0.0
        for lv_i in range(len(sizes)):
            lv = ind[bounds[lv_i]:bounds[lv_i + 1], k]
            p_l = lv.mean()
            ess = dg.effective_sample_size(lv.reshape(chains[lv_i], -1))
            ess = lv.size if not np.isfinite(ess) else ess
            est += h[lv_i] * p_l
            var += h[lv_i] ** 2 * max(p_l * (1 - p_l), 1.0 / lv.size) / ess
            slack += h[lv_i] * 0.5 / ess
        z.append(max(abs(est - exact[k]) - slack, 0.0) / np.sqrt(var))
    return np.array(z)


def _mixture(graph, q, offsets, weights=None, power=1.0):
    exact = [_exact(edge_model(ATOMS, graph, edge_weights(q, b, power)), ATOMS) for b in offsets]
    return [np.average([e[i] for e in exact], axis=0, weights=weights) for i in (0, 1)]


def test_the_model_is_the_product_over_cut_edges():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph, q = _setting()
    w = edge_weights(q, 0.3)
    model = edge_model(ATOMS, graph, w, a1=0.7)
    states = np.array(set_partitions(graph.n_vertices))
    cut = states[:, graph.edges[:, 0]] != states[:, graph.edges[:, 1]]
    n = graph.n_vertices
    regions = np.array([connected_components(coo_matrix((np.ones((~c).sum()), tuple(graph.edges[~c].T)),
                                                         shape=(n, n)), directed=False)[0] for c in cut])
    log_pi = np.array([model.log_target(s) for s in states])
    assert np.allclose(log_pi, -(cut * w).sum(axis=1) - 0.7 * regions)
    p = exact_distribution(model, [tuple(s) for s in states])
    assert 1.0 / np.sum(p ** 2) > 10                       # spread over many partitions
    assert np.allclose(bond_probabilities(w), np.where(w > 0, 1 - np.exp(-w), 0.0))


@pytest.fixture(scope="module", params=[5, 6])
def pooled(request):
    # With block flips (swcuts.samplers.blocks) mixed in, as the module runs
    # them: the regions of a few labellings and a disconnected set as blocks;
    # the evidence at the power γ = POWER.
    graph, q = _setting()
    rng = np.random.default_rng(3)
    blocks = region_blocks(graph, [rng.integers(0, 3, graph.n_vertices) for _ in range(4)]) + [[0, 6]]
    ps = sample_edges(ATOMS, graph, q, targets=(2, 4), offsets=OFFSETS, n_samples=3000, chains=4,
                      seed=request.param, pilot_steps=700, thin=14, blocks=blocks, block_every=1,
                      block_flips=2, power=POWER)
    assert ps.sampler == "swc+blocks" and [level["power"] for level in ps.levels] == [POWER] * 2
    return ps, graph, q


def test_pooled_samples_match_the_exact_mixture(pooled):
    ps, graph, q = pooled
    co, pix = _mixture(graph, q, OFFSETS, power=POWER)
    assert ps.n_samples == 3000 and ps.n_chains == 8 and ps.posterior == "edges"
    assert [level["offset"] for level in ps.levels] == list(OFFSETS)
    # Informative: many pixel-boundary probabilities strictly inside (0.05, 0.95).
    assert ((pix > 0.05) & (pix < 0.95)).sum() >= 8
    z = _z_scores(ps, co, pix)
    assert z.max() < Z_MAX, f"largest z-score {z.max():.2f}"


def test_the_same_samples_fail_against_other_targets(pooled):
    # Negative controls: one level alone, the levels weighted 2:1, and the
    # evidence at γ = 1 (the samples are of the mixture at γ = POWER).
    ps, graph, q = pooled
    for offsets, weights, power in (((OFFSETS[0],), None, POWER), (OFFSETS, [2, 1], POWER), (OFFSETS, None, 1.0)):
        co, pix = _mixture(graph, q, offsets, weights, power)
        z = _z_scores(ps, co, pix)
        assert z.max() > Z_MAX, f"largest z-score {z.max():.2f}: the wrong target went unnoticed"


def test_level_shares_weigh_the_mixture():
    # Shares (2, 1): the first level runs twice the chains, so the samples
    # follow the mixture weighted 2:1, and fail against the equal one.
    graph, q = _setting()
    ps = sample_edges(ATOMS, graph, q, targets=(2, 4), offsets=OFFSETS, n_samples=3000, chains=2, seed=5,
                      pilot_steps=700, thin=14, shares=(2, 1), power=1.0)
    assert [level["chains"] for level in ps.levels] == [4, 2] and ps.n_samples == 3000
    z = _z_scores(ps, *_mixture(graph, q, OFFSETS, [2, 1]))
    assert z.max() < Z_MAX, f"largest z-score {z.max():.2f}"
    z = _z_scores(ps, *_mixture(graph, q, OFFSETS))
    assert z.max() > Z_MAX, f"largest z-score {z.max():.2f}: the equal mixture went unnoticed"
    with pytest.raises(InputError):
        sample_edges(ATOMS, graph, q, targets=(2, 4), offsets=OFFSETS, n_samples=8, shares=(1,))


def test_a_kernel_without_the_cut_ratio_fails():
    # Negative control of the kernel: with the Potts bond probabilities,
    # dropping the cut ratio of Theorem 4 samples another distribution.
    graph, q = _setting()
    ps = sample_edges(ATOMS, graph, q, targets=(2, 4), offsets=OFFSETS, n_samples=3000, chains=4, seed=5,
                      pilot_steps=700, thin=14, sampler=lambda m, qq: _SWC2WithoutCuts(m, qq), power=1.0)
    co, pix = _mixture(graph, q, OFFSETS)
    z = _z_scores(ps, co, pix)
    assert z.max() > Z_MAX, f"largest z-score {z.max():.2f}: the biased kernel went unnoticed"


def test_default_steps_are_in_the_samplers_own_steps():
    # thin and the pilot default to steps per atom of SW cuts, converted to
    # the sampler's steps by the registry's budgets (a Gibbs step moves one atom).
    from swcuts.samplers.registry import steps_for

    graph, q = _setting()
    n = graph.n_vertices
    for sampler in ("swc", "gibbs"):
        ps = sample_edges(ATOMS, graph, q, targets=(2, 4), offsets=OFFSETS, n_samples=8, seed=0,
                          sampler=sampler, power=1.0)
        assert ps.thin == steps_for(sampler, THIN_PER_ATOM, n)
    assert steps_for("gibbs", THIN_PER_ATOM, n) != THIN_PER_ATOM * n == steps_for("swc", THIN_PER_ATOM, n)


@pytest.mark.parametrize("power", [1.0, POWER])
def test_fitted_offsets_reach_their_targets(power):
    graph, q = _setting()
    states = np.array(set_partitions(graph.n_vertices))
    k = np.array([len(set(s)) for s in states])
    offsets, ends, history = fit_offsets(ATOMS, graph, edge_weights(q, 0.0, power), (2.0, 4.0),
                                         rng=np.random.default_rng(0), steps=2000, rounds=8, power=power)
    means = []
    for b in offsets:
        p = exact_distribution(edge_model(ATOMS, graph, edge_weights(q, b, power)), [tuple(s) for s in states])
        means.append(float(p @ k))
    assert offsets[0] > offsets[1] and means[0] < means[1]
    for m, t in zip(means, (2.0, 4.0)):
        assert abs(np.log(m / t)) < 0.35, (means, offsets, history)
    assert len(ends) == 2 and all(e.shape == (graph.n_vertices,) for e in ends)


@pytest.mark.parametrize("power", [1.0, POWER])
def test_the_fit_tries_no_offset_below_its_floor(power, monkeypatch):
    graph, q = _setting()
    strong = np.full_like(q, 0.99)  # every edge says "same segment": 6 segments need a b below the floor
    floor = edge_posterior.FIT_FLOOR * power
    fit = dict(rng=np.random.default_rng(0), steps=500, rounds=8, power=power)
    offsets, _, history = fit_offsets(ATOMS, graph, edge_weights(strong, 0.0, power), (2.0, 6.0), **fit)
    tried = [b for level in history for b, _ in level]
    assert min(tried) == pytest.approx(floor) and min(offsets) >= floor - 1e-12
    assert history[-1][-1] == (pytest.approx(floor), history[-1][-1][1]) and history[-1][-1][1] < 6.0
    monkeypatch.setattr(edge_posterior, "FIT_FLOOR", -np.inf)  # negative control: without it the fit goes lower
    fit["rng"] = np.random.default_rng(0)
    _, _, history = fit_offsets(ATOMS, graph, edge_weights(strong, 0.0, power), (2.0, 6.0), **fit)
    assert min(b for level in history for b, _ in level) < floor


def test_no_boundaries_where_an_image_has_none():
    # Two even halves: the levels may not reach 8 and 16 segments by cutting
    # the flat parts (before the fit's floor: p up to 0.5 there).
    image = np.zeros((64, 96))
    image[:, 48:] = 1.0
    image += 0.05 * np.random.default_rng(0).standard_normal(image.shape)
    p = sample_posterior(image, model="edges", n_samples=20, seed=0).boundary_probability()
    assert p[:, 46:50].max() > 0.9
    assert p[:, 5:40].max() < 0.05 and p[:, 58:91].max() < 0.05


def _blocks(seed=0):
    """A 4 x 6 grid of flat blocks (24 segments), each block at least 0.4 from its neighbours, with noise."""
    i, j = np.indices((4, 6))
    levels = 0.1 + 0.6 * ((i + j) % 2) + 0.2 * np.random.default_rng(seed).random((4, 6))
    image = np.kron(levels, np.ones((12, 12)))
    return image + 0.02 * np.random.default_rng(seed + 1).standard_normal(image.shape)


def test_the_default_samples_merged_atoms_unless_too_few_are_left():
    import swcuts

    image = _blocks()
    kw = dict(n_samples=8, n_atoms=150, seed=0, granularity=(2, 4))
    merged = sample_posterior(image, **kw)  # the default: model="edges" on merged atoms
    atoms = sample_edge_posterior(image, merged=False, **kw)
    assert merged.posterior == "edges" and edge_posterior.DEFAULT_SAMPLING_MODEL == "edges"
    assert 4 <= merged.graph.n_vertices < atoms.graph.n_vertices
    # Each merged atom is a union of atoms.
    assert all(len(np.unique(merged.atoms[atoms.atoms == v])) == 1 for v in range(atoms.graph.n_vertices))
    # Fewer merged atoms than the finest target (a two-tone image: 2): the atoms themselves.
    two = np.zeros((48, 72))
    two[:, 36:] = 1.0
    two += 0.05 * np.random.default_rng(0).standard_normal(two.shape)
    ps = sample_posterior(two, **{**kw, "granularity": (4, 8)})
    assert ps.graph.n_vertices == sample_edge_posterior(two, merged=False, **{**kw, "granularity": (4, 8)}).graph.n_vertices
    assert swcuts.segment(image, seed=0, steps=50, n_atoms=150, posterior_samples=4,
                          granularity=(2, 4)).samples.posterior == "edges"


def test_sample_posterior_edges_and_bad_input():
    image = np.zeros((30, 36))
    image[:, 18:] = 1.0
    ps = sample_posterior(image, model="edges", n_samples=16, n_atoms=24, seed=0, granularity=(1, 3))
    assert ps.posterior == "edges" and ps.n_samples == 16 and ps.granularity == (1.0, 3.0)
    assert ps.boundary_probability().shape == image.shape
    again = sample_posterior(image, model="edges", n_samples=16, n_atoms=24, seed=0, granularity=(1, 3))
    assert np.array_equal(ps.labels, again.labels)
    # Round 9's option: block flips from the fit's pilot states, R-hat on 3 records a sample.
    flips = sample_edge_posterior(image, n_samples=16, n_atoms=24, seed=0, granularity=(1, 3),
                                  blocks=("pilots",), records=3)
    assert flips.sampler == "swc+blocks" and flips.n_samples == 16
    with pytest.raises(InputError):
        sample_edge_posterior(image, n_samples=8, n_atoms=24, blocks=("tiles",))
    for records in (0, 1.5, "3"):  # a one-line error before any chain runs
        with pytest.raises(InputError, match="records"):
            sample_edge_posterior(image, n_samples=8, n_atoms=24, records=records)
    for power in (0, -0.5, "0.5", float("nan")):
        with pytest.raises(InputError, match="power"):
            sample_edge_posterior(image, n_samples=8, n_atoms=24, power=power)
    for scales in ((0,), (), (1, "2")):
        with pytest.raises(InputError, match="scales"):
            sample_edge_posterior(image, n_samples=8, n_atoms=24, detector_scales=scales)


def test_the_detector_scales_reach_the_detector(monkeypatch):
    import swcuts.image.boundary_detector as bd

    seen, real = [], bd.boundary_probability
    monkeypatch.setattr(bd, "boundary_probability", lambda f, **kw: seen.append(kw.get("scales")) or real(f, **kw))
    image = np.zeros((30, 36))
    image[:, 18:] = 1.0
    for scales in (None, (1.0, 2.0)):
        sample_edge_posterior(image, n_samples=8, n_atoms=24, seed=0, granularity=(1, 2), detector_scales=scales)
    assert seen == [DETECTOR_SCALES, (1.0, 2.0)]


def test_the_detector_forest_reaches_the_detector(monkeypatch):
    import swcuts.image.boundary_detector as bd
    from swcuts.segmentation.edge_posterior import DETECTOR_FOREST

    seen, real = [], bd.boundary_probability
    monkeypatch.setattr(bd, "boundary_probability", lambda f, **kw: seen.append(kw.get("forest")) or real(f, **kw))
    image = np.zeros((30, 36, 3))
    image[:, 18:] = 1.0
    for forest in (None, True, False):
        sample_edge_posterior(image, n_samples=8, n_atoms=24, seed=0, granularity=(1, 2), detector_forest=forest)
    assert seen == [DETECTOR_FOREST, True, False]
    for bad in (1, "", 0.5, "no-such-forest.yml.gz"):  # a one-line error before the detector runs
        with pytest.raises(InputError, match="forest"):
            sample_edge_posterior(image, n_samples=8, n_atoms=24, detector_forest=bad)
    assert len(seen) == 3
    for bad in (dict(a0=3.0), dict(superatoms=10), dict(granularity=0), dict(granularity=list(range(1, 13))),
                dict(chains=0), dict(atoms="pixels"), dict(anneal_steps=10)):
        with pytest.raises(InputError):
            sample_posterior(image, model="edges", n_samples=8, n_atoms=24, **bad)


def test_segment_and_the_cli_sample_the_edges_posterior(tmp_path, capsys):
    import json

    import skimage.io

    from swcuts.cli.app import main
    from swcuts.segmentation.segment import segment

    rng = np.random.default_rng(0)
    img = np.zeros((30, 36), np.uint8)
    img[:, 18:] = 200
    img = np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)
    seg = segment(img, seed=0, steps=300, n_atoms=24, posterior_samples=8, posterior_model="edges",
                  granularity=(1, 2))
    assert seg.samples.posterior == "edges" and seg.samples.granularity == (1.0, 2.0)
    assert [round(level["target"]) for level in seg.samples.levels] == [1, 2]
    # The stability map describes the answer's segments (the pooled best state is the coarsest level's).
    ref = seg.samples.reference
    assert ref is not None and seg.samples.reference_labels is ref
    assert np.array_equal(seg.samples.refer_to(seg.labels).reference, ref)
    for bad in (dict(posterior_model="edge"), dict(posterior_model="edges", granularity=0),
                dict(posterior_model="edges")):  # the last: no posterior_samples
        with pytest.raises(InputError):
            segment(img, seed=0, steps=10, n_atoms=24, **({"posterior_samples": 4} if len(bad) > 1 or
                                                         bad["posterior_model"] != "edges" else {}), **bad)
    skimage.io.imsave(tmp_path / "a.png", img, check_contrast=False)
    out = tmp_path / "out"
    assert main(["segment", str(tmp_path / "a.png"), "-o", str(out), "--seed", "0", "--steps", "300",
                 "--n-atoms", "24", "--posterior-samples", "8", "--posterior-model", "edges",
                 "--granularity", "1,2", "--no-progress"]) == 0
    summary = json.loads((out / "posterior_summary.json").read_text())
    assert summary["granularity"] == [1.0, 2.0]
    assert [round(level["target"]) for level in summary["levels"]] == [1, 2]  # the edges posterior's levels
    bp = np.load(out / "boundary_prob.npy")
    assert bp.shape == img.shape and 0 <= bp.min() and bp.max() <= 1
    for extra in (["--posterior-samples", "4", "--posterior-model", "edgy"], ["--posterior-model", "edges"],
                  ["--posterior-samples", "4", "--posterior-model", "edges", "--granularity", "0.5"]):
        capsys.readouterr()
        assert main(["segment", str(tmp_path / "a.png"), "-o", str(tmp_path / "bad"), *extra]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--" in err, err
        assert not (tmp_path / "bad").exists()
