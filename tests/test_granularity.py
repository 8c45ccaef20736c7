"""The granularity mixture (swcuts.segmentation.granularity): its pooled
samples against the exact mixture of posteriors, by enumeration."""

import numpy as np
import pytest
from test_enumeration_kernels import colour_setting, edge_q, grey_setting
from test_posterior import Z_MAX, _exact

from swcuts.inference import diagnostics as dg
from swcuts.inference.posterior_samples import pixel_boundary_probability
from swcuts.io.errors import InputError
from swcuts.segmentation.granularity import (
    GRANULARITY,
    check_granularity,
    sample_granularities,
)
from swcuts.segmentation.posterior import sample_model, sample_posterior

LADDER = (1.0, 3.0, 10.0)
SETTINGS = {"grey": grey_setting, "colour": colour_setting}


def _indicators(ps):
    """(samples, statistics): co-assignment of every atom pair, then the
    boundary of every pixel."""
    lab = ps.labels.astype(np.int64)
    iu = np.triu_indices(lab.shape[1], 1)
    pix = np.stack([pixel_boundary_probability(lab[t:t + 1], ps.atoms).ravel() for t in range(lab.shape[0])])
    return np.concatenate([(lab[:, iu[0]] == lab[:, iu[1]]).astype(float), pix], axis=1), iu


def _z_scores(ps, exact_co, exact_pix):
    """|estimate - exact| / standard error of a stratified sample: each
    level's mean has the variance p_l(1 - p_l)/ESS_l of its own chains, and
    the mixture's estimate is the levels' mean (the correction of half a
    draw as in tests/test_posterior.py)."""
    ind, iu = _indicators(ps)
    exact = np.concatenate([exact_co[iu], exact_pix.ravel()])
    levels = len(ps.granularity)
    per = ind.reshape(levels, -1, ind.shape[1])                    # (levels, samples, statistics)
    chains = ps.n_chains // levels
    assert np.allclose(ind.mean(axis=0), per.mean(axis=(0, 1)))    # equal shares
    assert np.allclose(ind[:, iu[0].size:].mean(axis=0), ps.boundary_probability().ravel())
    z = []
    for k in range(ind.shape[1]):
        var, slack = 0.0, 0.0
        for lv in per[:, :, k]:
            p_l = lv.mean()
            ess = dg.effective_sample_size(lv.reshape(chains, -1))
            ess = lv.size if not np.isfinite(ess) else ess
            var += max(p_l * (1 - p_l), 1.0 / lv.size) / ess / levels ** 2
            slack += 0.5 / ess / levels
        z.append(max(abs(per[:, :, k].mean() - exact[k]) - slack, 0.0) / np.sqrt(var))
    return np.array(z)


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def mixture(request):
    model, img, atoms = SETTINGS[request.param]()
    exact = [_exact(model.with_prior(a0=g * model.a0, a1=g * model.a1), atoms) for g in LADDER]
    co = np.mean([e[0] for e in exact], axis=0)
    pix = np.mean([e[1] for e in exact], axis=0)
    ps = sample_granularities(model, edge_q(img, atoms, model.graph), granularity=LADDER, atoms=atoms,
                              n_samples=3000, chains=4, seed=3, anneal_steps=200, pilot_steps=2000)
    skewed = [np.average([e[i] for e in exact], axis=0, weights=[2, 1, 1]) for i in (0, 1)]
    return ps, co, pix, exact[0], skewed


def test_pooled_samples_match_the_exact_mixture(mixture):
    ps, co, pix, _, _ = mixture
    assert ps.granularity == LADDER and ps.n_samples == 3000 and ps.n_chains == 12
    assert [level["granularity"] for level in ps.levels] == list(LADDER)
    z = _z_scores(ps, co, pix)
    assert z.max() < Z_MAX, f"largest z-score {z.max():.2f}"


def test_the_same_samples_fail_against_other_targets(mixture):
    # Negative controls: the posterior at granularity 1 alone, and the
    # mixture with its first level weighted twice.
    ps, _, _, (co1, pix1), (co_skew, pix_skew) = mixture
    for co, pix in ((co1, pix1), (co_skew, pix_skew)):
        z = _z_scores(ps, co, pix)
        assert z.max() > Z_MAX, f"largest z-score {z.max():.2f}: the wrong target went unnoticed"


def test_one_level_is_the_posterior_itself():
    model, img, atoms = grey_setting()
    q = edge_q(img, atoms, model.graph)
    kw = dict(atoms=atoms, n_samples=40, chains=2, anneal_steps=50, pilot_steps=200)
    a = sample_granularities(model, q, granularity=1, seed=4, **kw)
    b = sample_model(model, q, seed=4, **kw)
    assert np.array_equal(a.labels, b.labels) and a.granularity == (1.0,) and not a.levels
    coarse = sample_granularities(model, q, granularity=3, seed=4, **kw)
    assert coarse.model.a0 == 3 * model.a0 and coarse.model.a1 == 3 * model.a1


def test_levels_are_reported_and_coarser_levels_have_fewer_segments():
    image = np.zeros((40, 48))
    image[:, 24:] = 0.6
    image[10:30, 6:18] += 0.3
    image += 0.08 * np.random.default_rng(0).standard_normal(image.shape)
    ps = sample_posterior(image, n_samples=24, chains=2, n_atoms=40, seed=0, granularity=(1, 100),
                          anneal_steps=200, pilot_steps=400, model="image")
    assert ps.n_samples == 24 and ps.energies.shape == (4, 6)
    fine, coarse = (ps.n_segments[:2].mean(), ps.n_segments[2:].mean())
    assert coarse < fine
    summary = ps.summary()
    assert summary["granularity"] == [1.0, 100.0] and len(summary["levels"]) == 2
    assert summary["levels"][1]["a0"] == pytest.approx(100 * summary["levels"][0]["a0"])


def test_default_ladder_and_bad_ladders():
    assert check_granularity(None) == GRANULARITY and check_granularity(2) == (2.0,)
    for bad in ([], [1, 0], [1, -2], [1, float("nan")], [1, 1], list(range(1, 13))):
        with pytest.raises(InputError):
            check_granularity(bad)
    for bad in ("1,3", [1, "3"], True, object()):
        with pytest.raises(TypeError):
            check_granularity(bad)
    with pytest.raises(InputError, match="granularity"):
        sample_posterior(np.zeros((20, 20)), granularity=[0])


def test_pooled_diagnostics_keep_a_level_without_variation_whatever_its_place():
    """The worst R-hat and the smallest ESS over the levels are ``nan`` when
    any level's is, in either order (Python's ``max`` drops a ``nan`` that
    comes after a number), and the largest/smallest number otherwise."""
    from swcuts.inference.posterior_samples import PosteriorSamples

    model, img, atoms = grey_setting()
    q = edge_q(img, atoms, model.graph)
    kw = dict(atoms=atoms, n_samples=16, chains=2, anneal_steps=20, pilot_steps=40, thin=5)
    a, b = (sample_model(model, q, seed=s, **kw) for s in (1, 2))
    a.r_hat, b.r_hat = {"energy": 1.5, "n_segments": 1.2}, {"energy": 1.1, "n_segments": float("nan")}
    a.ess, b.ess = {"energy": 30.0, "n_segments": 9.0}, {"energy": 12.0, "n_segments": float("nan")}
    for parts in ([a, b], [b, a]):
        ps = PosteriorSamples.pooled(parts, (1.0, 3.0))
        assert ps.r_hat["energy"] == 1.5 and np.isnan(ps.r_hat["n_segments"])
        assert ps.ess["energy"] == 12.0 and np.isnan(ps.ess["n_segments"])


def test_pooled_warnings_name_their_level():
    from swcuts.inference.posterior_samples import PosteriorSamples

    model, img, atoms = grey_setting()
    q = edge_q(img, atoms, model.graph)
    kw = dict(atoms=atoms, n_samples=16, chains=2, anneal_steps=20, pilot_steps=40, thin=5)
    a, b = (sample_model(model, q, seed=s, **kw) for s in (1, 2))
    a.warnings, b.warnings = ["stuck"], ["noisy"]
    assert PosteriorSamples.pooled([a, b], (1.0, 3.0)).warnings == ["granularity x1: stuck", "granularity x3: noisy"]
    named = PosteriorSamples.pooled([a, b], (4.0, 8.0), level_name="the {:g}-segment level")
    assert named.warnings == ["the 4-segment level: stuck", "the 8-segment level: noisy"]
