"""Posterior samples (swcuts.segmentation.posterior): the estimated marginals match the
exactly enumerated ones within Monte Carlo error, a biased kernel fails the
same test, chains that have not mixed are reported, and the maps are right."""

import json
import math

import numpy as np
import pytest

from enumeration import exact_distribution, set_partitions
from swcuts.inference import diagnostics as dg
from swcuts.inference.posterior_samples import (
    PosteriorSamples, pixel_boundary_probability, segment_stability)
from swcuts.segmentation.posterior import sample_model, sample_posterior
from swcuts.samplers.swc import SWC2
from test_enumeration_kernels import colour_setting, edge_q, grey_setting

#: Largest allowed |estimate - exact| / Monte Carlo standard error over all
#: statistics of one run (36 co-assignments and pixels). The ESS is itself
#: estimated, so the tails are heavier than normal: over 9 seeds x 3 correct
#: kernels x 2 settings the largest z was 4.6 (median 2.0); the kernel
#: without the cut ratio gave 31-51.
Z_MAX = 5.0
N_SAMPLES = 2000


class _SWC2WithoutCuts(SWC2):
    """A wrong kernel (the negative control of the enumeration tests): the
    cut ratio of Theorem 4 dropped."""

    name = "swc2-without-cuts"

    def __init__(self, model, q, compiled=None):
        super().__init__(model, q, compiled=compiled)
        self.log1mq = np.zeros_like(self.log1mq)


def _exact(model, atoms):
    """Exact co-assignment matrix and pixel boundary map."""
    states = np.array(set_partitions(model.n_vertices))
    p = exact_distribution(model, [tuple(s) for s in states])
    co = np.einsum("s,sij->ij", p, (states[:, :, None] == states[:, None, :]).astype(float))
    pix = pixel_boundary_probability(states, atoms, weights=p)
    return co, pix


def _z_scores(ps, exact_co, exact_pix):
    """|estimate - exact| / standard error for every atom pair and pixel; the
    error's variance p(1-p)/ESS with the ESS of the statistic's own chains
    (:func:`swcuts.inference.diagnostics.effective_sample_size`, all chains)."""
    chains = ps.n_chains
    lab = ps.labels.astype(np.int64)
    n = lab.shape[1]
    iu = np.triu_indices(n, 1)
    ind = (lab[:, iu[0]] == lab[:, iu[1]]).astype(float)            # (S, pairs)
    exact = exact_co[iu]
    pix_ind = np.stack([pixel_boundary_probability(lab[t:t + 1], ps.atoms).ravel()
                        for t in range(lab.shape[0])])              # (S, pixels)
    ind = np.concatenate([ind, pix_ind], axis=1)
    exact = np.concatenate([exact, exact_pix.ravel()])
    est = ind.mean(axis=0)
    # The methods under test give the same estimates.
    assert np.allclose(est[:iu[0].size], np.array([ps.coassignment(i)[j] for i, j in zip(*iu)]))
    assert np.allclose(est[iu[0].size:], ps.boundary_probability().ravel())
    z = []
    for k in range(ind.shape[1]):
        p = exact[k]
        if p < 1e-9 or p > 1 - 1e-9:
            z.append(0.0 if abs(est[k] - p) < 1e-9 else math.inf)
            continue
        ess = dg.effective_sample_size(ind[:, k].reshape(chains, -1))
        ess = ind.shape[0] if not math.isfinite(ess) else ess
        # With a continuity correction of half a draw: for p near 0 or 1
        # (pixels next to a near-certain boundary) one draw more or less
        # than expected is no evidence of bias.
        z.append(max(abs(est[k] - p) - 0.5 / ess, 0.0) / math.sqrt(p * (1 - p) / ess))
    return np.array(z)


SETTINGS = {"grey": grey_setting, "colour": colour_setting}


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def setting(request):
    model, img, atoms = SETTINGS[request.param]()
    co, pix = _exact(model, atoms)
    return model, edge_q(img, atoms, model.graph), atoms, co, pix


def _run(setting, sampler, seed, n_samples=N_SAMPLES):
    model, q, atoms, co, pix = setting
    ps = sample_model(model, q, atoms=atoms, n_samples=n_samples, chains=4, sampler=sampler,
                      seed=seed, anneal_steps=200, pilot_steps=2000)
    return ps, _z_scores(ps, co, pix)


@pytest.mark.parametrize("sampler", ["swc2", "gibbs", "swc"])
def test_marginals_match_the_exact_posterior(setting, sampler):
    ps, z = _run(setting, sampler, seed=11)
    assert ps.n_samples == N_SAMPLES and ps.labels.dtype == np.int16
    assert ps.thin >= 1 and math.isfinite(ps.tau_steps)
    assert z.max() < Z_MAX, f"largest z-score {z.max():.2f}"
    assert not [w for w in ps.warnings if "R-hat" in w]
    # Edge boundary probabilities are 1 - co-assignment of the edge's atoms.
    _, _, _, co, _ = setting
    e = ps.graph.edges
    assert np.allclose(ps.edge_probability(), 1 - np.array([ps.coassignment(i)[j] for i, j in e]))


def test_a_biased_kernel_fails_the_same_test(setting):
    ps, z = _run(setting, lambda m, q: _SWC2WithoutCuts(m, q), seed=11)
    assert z.max() > Z_MAX, f"largest z-score {z.max():.2f}: the bias went unnoticed"


def test_chains_that_have_not_mixed_are_reported():
    model, img, atoms = colour_setting()
    q = edge_q(img, atoms, model.graph)
    n = model.n_vertices
    # One chain from one label, one from every atom alone; a few Gibbs steps each.
    ps = sample_model(model, q, atoms=atoms, n_samples=16, chains=2, sampler="gibbs", seed=3,
                      t0=1.0, pilot_steps=0, thin=1,
                      starts=[np.zeros(n, dtype=np.int64), np.arange(n)])
    assert ps.r_hat["n_segments"] > 1.1
    assert any("R-hat of n_segments" in w for w in ps.warnings)
    assert ps.summary()["warnings"] == ps.warnings


def test_summary_tells_an_infinite_r_hat_from_a_nan_one():
    # JSON writes both as null; "nonfinite" keeps which it was (stuck chains vs no move).
    from dataclasses import replace
    from swcuts.segmentation.posterior import _demo
    ps = _demo()
    odd = replace(ps, r_hat={"energy": math.inf, "n_segments": math.nan}, ess={"energy": 3.0, "n_segments": math.nan})
    summary = json.loads(json.dumps(odd.summary(), allow_nan=False))
    assert summary["r_hat"] == {"energy": None, "n_segments": None}
    want = {"r_hat/energy": "inf", "r_hat/n_segments": "nan", "ess/n_segments": "nan"}
    assert {k: v for k, v in summary["nonfinite"].items() if "/" in k} == want
    assert ("tau_steps" in summary["nonfinite"]) == (summary["tau_steps"] is None)


def test_pixel_boundary_probability_matches_a_loop_over_pixels():
    rng = np.random.default_rng(0)
    atoms = np.array([[0, 0, 1, 1, 2],
                      [3, 0, 1, 4, 2],
                      [3, 5, 5, 4, 6]])
    labels = rng.integers(0, 3, size=(50, 7))
    h, w = atoms.shape
    for mode, offsets in (("any", [(0, 1), (1, 0), (0, -1), (-1, 0)]), ("thin", [(0, 1), (1, 0)])):
        want = np.zeros((h, w))
        for r in range(h):
            for c in range(w):
                for lab in labels:
                    own = lab[atoms[r, c]]
                    want[r, c] += any(0 <= r + dr < h and 0 <= c + dc < w and lab[atoms[r + dr, c + dc]] != own
                                      for dr, dc in offsets)
        want /= len(labels)
        assert np.allclose(pixel_boundary_probability(labels, atoms, mode=mode), want)


def test_segment_stability_is_the_mean_best_match_iou():
    best = np.array([0, 0, 1, 1])
    labels = np.array([[0, 0, 1, 1],     # identical: IoU 1, 1
                       [0, 0, 0, 0],     # merged: IoU 1/2, 1/2
                       [0, 1, 2, 2]])    # first split: 1/2; second: 1
    area = np.array([1, 3, 1, 1])        # atom 1 is larger: IoU in pixels
    got = segment_stability(labels, best, area)
    # merged: 4/6 and 2/6; split: best match of {0,1} is {1}: 3/4.
    assert np.allclose(got, [(1 + 4 / 6 + 3 / 4) / 3, (1 + 2 / 6 + 1) / 3])


def test_stability_can_describe_another_segmentation():
    # refer_to: each atom takes the segment of most of its pixels; the
    # stability then describes that labelling's segments, not the best state's.
    from swcuts.io.errors import InputError
    from swcuts.segmentation.posterior import _demo

    ps = _demo()
    atoms = ps.atoms
    thirds = np.repeat([[5, 9, 2]], 8, axis=1).repeat(24, axis=0)  # any label values
    thirds[0, 0] = 2                                                 # a stray pixel does not move its atom
    ref = ps.refer_to(thirds).reference
    major = [np.bincount(thirds[atoms == a]).argmax() for a in range(ps.graph.n_vertices)]
    assert ref.max() == 2 and [len(set(np.asarray(major)[ref == k])) for k in range(3)] == [1, 1, 1]
    assert ref[0] == 0 and ps.best_labels.max() + 1 != 3                           # not the best state
    assert np.array_equal(ps.reference_segmentation, ref[atoms])
    assert np.allclose(ps.segment_stability(), segment_stability(ps.labels, ref, ps.graph.pixel_count))
    assert ps.stability_map().shape == atoms.shape
    with pytest.raises(InputError, match="shape"):
        ps.refer_to(thirds[:, :10])


def test_sample_posterior_on_an_image_is_reproducible_and_consistent():
    image = np.zeros((30, 40))
    image[:, 20:] = 0.8
    image += 0.15 * np.random.default_rng(2).standard_normal(image.shape)
    # One posterior (granularity 1); the mixture's pooling: tests/test_granularity.py.
    kw = dict(n_samples=12, chains=2, n_atoms=24, anneal_steps=300, pilot_steps=400, granularity=1, model="image")
    a = sample_posterior(image, seed=5, **kw)
    b = sample_posterior(image, seed=5, **kw)
    assert isinstance(a, PosteriorSamples)
    assert np.array_equal(a.labels, b.labels) and a.thin == b.thin
    bp = a.boundary_probability()
    assert bp.shape == (30, 40) and bp.min() >= 0 and bp.max() <= 1
    assert a.energies.shape == (2, 6) and a.n_segments.shape == (2, 6)
    k, p = a.n_segments_distribution()
    assert np.isclose(p.sum(), 1) and set(k) <= set(a.n_segments.ravel())
    assert a.segment_stability().shape == (a.best_labels.max() + 1,)
    # The best state is no worse than any sample.
    assert a.best_energy <= a.energies.min() + 1e-6
    c = a.coassignment(int(a.atoms[0, 0]))
    assert c[a.atoms[0, 0]] == 1.0 and c.shape == (a.graph.n_vertices,)


def test_write_posterior_outputs(tmp_path):
    from swcuts.cli.posterior_outputs import POSTERIOR_FILES, write_posterior_outputs

    model, img, atoms = colour_setting()
    ps = sample_model(model, edge_q(img, atoms, model.graph), atoms=atoms, n_samples=40, chains=2,
                      sampler="swc2", seed=1, anneal_steps=100, pilot_steps=400)
    paths = write_posterior_outputs(ps, tmp_path / "out")
    assert sorted(p.name for p in paths) == sorted(POSTERIOR_FILES)
    assert np.allclose(np.load(tmp_path / "out" / "boundary_prob.npy"), ps.boundary_probability())
    for name in ("boundary_prob.png", "stability.png", "segments_hist.png"):
        assert (tmp_path / "out" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    summary = json.loads((tmp_path / "out" / "posterior_summary.json").read_text())
    assert summary["n_samples"] == 40 and summary["warnings"] == ps.warnings


@pytest.mark.parametrize("name", ["swcuts.segmentation.posterior", "swcuts.inference.posterior_samples",
                                  "swcuts.cli.posterior_outputs"])
def test_examples_run(name):
    import doctest
    import importlib

    import swcuts

    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"np": np, "swcuts": swcuts},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_public_names():
    import swcuts

    assert swcuts.sample_posterior is sample_posterior and swcuts.PosteriorSamples is PosteriorSamples


@pytest.mark.parametrize("kw", [dict(n_samples=0), dict(chains=0), dict(thin=0), dict(t0=0.5),
                                dict(time_budget=-1.0), dict(pilot_steps=0)])
def test_bad_options_are_refused(kw):
    model, img, atoms = grey_setting()
    with pytest.raises(ValueError):
        sample_model(model, edge_q(img, atoms, model.graph), atoms=atoms, n_samples=kw.pop("n_samples", 8),
                     chains=kw.pop("chains", 2), seed=0, anneal_steps=10, **kw)


def test_cli_segment_writes_posterior_maps_with_its_outputs(tmp_path, capsys):
    import skimage.io

    from swcuts.cli.app import SEGMENT_OUTPUTS, main
    from swcuts.cli.posterior_outputs import POSTERIOR_FILES

    rng = np.random.default_rng(0)
    img = np.zeros((24, 32), np.uint8)
    img[:, 16:] = 200
    img = np.clip(img + rng.normal(0, 10, img.shape), 0, 255).astype(np.uint8)
    skimage.io.imsave(tmp_path / "a.png", img, check_contrast=False)
    out = tmp_path / "out"
    assert main(["segment", str(tmp_path / "a.png"), "-o", str(out), "--seed", "0", "--steps", "500",
                 "--posterior-samples", "5", "--no-progress"]) == 0
    names = {p.name for p in out.iterdir()}
    assert set(SEGMENT_OUTPUTS) <= names and set(POSTERIOR_FILES) <= names
    bp = np.load(out / "boundary_prob.npy")
    assert bp.shape == (24, 32) and 0 <= bp.min() and bp.max() <= 1
    # The step edge between the halves is a boundary in (nearly) every sample.
    assert bp[:, 15:17].mean() > 0.5 > bp[:, :10].mean()
    assert main(["segment", str(tmp_path / "a.png"), "-o", str(tmp_path / "bad"),
                 "--posterior-samples", "0"]) == 2
    assert "--posterior-samples" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    # --granularity: one posterior (the summary says which), or a one-line error before any work.
    assert main(["segment", str(tmp_path / "a.png"), "-o", str(tmp_path / "one"), "--seed", "0",
                 "--steps", "500", "--posterior-samples", "4", "--granularity", "1", "--no-progress"]) == 0
    assert json.loads((tmp_path / "one" / "posterior_summary.json").read_text())["granularity"] == [1.0]
    for extra in (["--granularity", "1,3"], ["--posterior-samples", "4", "--granularity", "1,-3"],
                  ["--posterior-samples", "4", "--granularity", "1,x"]):
        capsys.readouterr()
        assert main(["segment", str(tmp_path / "a.png"), "-o", str(tmp_path / "bad"), *extra]) == 2
        err = capsys.readouterr().err
        assert "--granularity" in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "bad").exists()


def _two_halves(shape=(24, 32)):
    img = np.zeros(shape)
    img[:, shape[1] // 2:] = 1.0
    return img + 0.1 * np.random.default_rng(2).standard_normal(shape)


def test_chains_in_threads_give_the_same_samples():
    # Each chain draws from its own generator (numba's is per thread and
    # reseeded from it before every run), so the number of threads changes
    # nothing; 3 chains on 2 threads also checks chains that change thread.
    runs = [sample_posterior(_two_halves(), n_samples=12, chains=3, n_atoms=24, seed=5, workers=w,
                             anneal_steps=300, pilot_steps=400, model="image") for w in (1, 2)]
    assert np.array_equal(runs[0].labels, runs[1].labels)
    assert np.array_equal(runs[0].energies, runs[1].energies) and runs[0].thin == runs[1].thin
    with pytest.raises(ValueError, match="workers"):
        sample_posterior(_two_halves(), n_samples=4, chains=1, n_atoms=24, seed=0, workers=0)


def test_segment_samples_the_posterior_it_segmented():
    # segment(posterior_samples=...) passes its posterior's parameters on:
    # the samples' model gives the segmentation the energy segment reports.
    import swcuts

    seg = swcuts.segment(_two_halves(), n_atoms=24, seed=0, steps=300, a0=3.0, edge_scale=2.0,
                         posterior_samples=4, posterior_model="image")
    ps = seg.samples
    atom_labels = np.zeros(ps.graph.n_vertices, np.int64)
    atom_labels[ps.atoms.ravel()] = seg.labels.ravel()
    assert np.isclose(-ps.model.log_target(atom_labels), seg.energy, rtol=1e-9, atol=1e-6)
    default = swcuts.segment(_two_halves(), n_atoms=24, seed=0, steps=300, posterior_samples=4,
                             posterior_model="image").samples
    assert not np.isclose(-default.model.log_target(atom_labels), seg.energy)


def test_progress_bar_only_on_a_terminal(capsys, monkeypatch):
    import sys

    kw = dict(n_samples=8, chains=2, n_atoms=24, seed=0, anneal_steps=50, pilot_steps=100, model="image")
    sample_posterior(_two_halves(), progress=True, **kw)
    assert capsys.readouterr().err == ""  # stderr is not a terminal here
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    sample_posterior(_two_halves(), progress=False, **kw)
    assert capsys.readouterr().err == ""
    sample_posterior(_two_halves(), progress=True, **kw)
    err = capsys.readouterr().err
    assert "0/8" in err and "sampling 2 chains at T = 1" in err  # a bar over the 8 kept samples


def test_samples_of_a_clear_image_cut_only_its_edges():
    # Three flat, noisy regions (two halves and a disc, steps of 10 noise
    # SDs), large enough for the default posterior ("learned"): away from
    # the true boundaries no sample draws one, and along them most do. (A
    # posterior that coarsens its evidence until the partitions' entropy
    # wins, such as "calibrated" on the mix4 branch, cuts the flat regions
    # in 30-45 % of its samples here.)
    from scipy.ndimage import distance_transform_edt
    from skimage.draw import disk
    from skimage.segmentation import find_boundaries

    img = np.zeros((64, 80))
    img[:, 40:] = 200
    img[disk((32, 20), 12)] = 100
    truth = (img > 0).astype(int) + (img == 100)
    img = np.clip(img + np.random.default_rng(1).normal(0, 10, img.shape), 0, 255) / 255
    ps = sample_posterior(img, n_samples=10, chains=2, seed=1)
    bp = ps.boundary_probability()
    far = distance_transform_edt(~find_boundaries(truth)) > 3
    assert bp[far].mean() < 0.02
    assert bp[~far].mean() > 0.15
