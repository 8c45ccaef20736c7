"""swcuts.cluster: the Python API for mixture data."""

import numpy as np
import pytest

import swcuts
from swcuts.evaluation.synthetic.clusters import jain_neal_bernoulli, lee_choi_gaussians
from swcuts.evaluation.metrics.regions import adjusted_rand_index
from swcuts.models.partition import canonical


@pytest.mark.parametrize("sampler, min_ari", [("gibbs", 0.5), ("split-merge", 0.8)])
def test_cluster_finds_well_separated_gaussians(sampler, min_ari):
    x, truth = lee_choi_gaussians(130, seed=1)
    res = swcuts.cluster(x, model="gaussian", sampler=sampler, seed=0, steps=4000, init="random")
    # The clusters found are the true ones, mostly (seed 0 reaches an ARI of
    # 0.63 with single-site Gibbs and 0.93 with split-merge in 4000 steps),
    # where a random labelling is at about 0.
    assert adjusted_rand_index(res.labels, truth) >= min_ari
    assert abs(adjusted_rand_index(np.random.default_rng(0).integers(0, 11, 130), truth)) < 0.1
    assert res.labels.shape == (130,)
    assert set(res.labels.tolist()) == set(range(res.n_clusters))
    # The best state is at least as probable as the truth's neighbourhood start.
    assert res.log_posterior >= res.model.log_target(np.zeros(130, dtype=np.int64))
    assert res.log_posterior == pytest.approx(res.model.log_target(res.best_labels))
    assert len(res.trace) >= 2


def test_cluster_is_reproducible_and_samples_at_temperature_one():
    x, _ = jain_neal_bernoulli(40, d=6, seed=3)
    a = swcuts.cluster(x, model="beta-bernoulli", sampler="gibbs", seed=5, steps=500)
    b = swcuts.cluster(x, model="beta-bernoulli", sampler="gibbs", seed=5, steps=500)
    assert np.array_equal(a.labels, b.labels)
    assert a.labels.tolist() == list(canonical(a.labels))
    assert np.allclose(a.trace.temperature, 1.0)


@pytest.mark.parametrize("kwargs, exc", [
    (dict(sampler="nope"), ValueError),
    (dict(sampler="swc"), ValueError),
    (dict(sampler=3), TypeError),
    (dict(steps=0), ValueError),
    (dict(steps=-5), ValueError),
    (dict(time_budget=-1.0), ValueError),
    (dict(alpha=0.0), ValueError),
    (dict(temperature=0.0), ValueError),
    (dict(init="bad"), ValueError),
    (dict(sampler="multigrid"), ValueError),
    (dict(sampler="multilevel"), ValueError),
    (dict(sampler="reconfiguration", sampler_options={"n_chains": 1}), ValueError),
    (dict(sampler="triadic", sampler_options={"beta": 1.5}), ValueError),
    (dict(sampler="triadic", sampler_options={"chains": 2}), ValueError),
    (dict(sampler="split-merge", sampler_options=[("t", 3)]), TypeError),
])
def test_cluster_bad_options(kwargs, exc):
    x, _ = lee_choi_gaussians(26, seed=0)
    with pytest.raises(exc) as err:
        swcuts.cluster(x, **kwargs)
    assert "\n" not in str(err.value)


def test_cluster_bad_data():
    with pytest.raises(ValueError):
        swcuts.cluster(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError):
        swcuts.cluster(np.zeros((1, 2)))
    with pytest.raises(ValueError):
        swcuts.cluster(np.full((5, 3), 0.5), model="beta-bernoulli")


def test_cluster_passes_sampler_options():
    x, _ = lee_choi_gaussians(26, seed=0)
    res = swcuts.cluster(x, sampler="reconfiguration", sampler_options={"n_chains": 3}, seed=0,
                         steps=20)
    assert res.steps == 20
    assert res.log_posterior == pytest.approx(res.model.log_target(res.best_labels))


def test_cluster_errors_speak_of_what_the_user_gave():
    x = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(TypeError, match="seed must be"):
        swcuts.cluster(x, steps=10, seed=1.5)
    with pytest.raises(ValueError, match="rescale the data"):
        swcuts.cluster(np.full((20, 2), 1e300), steps=10)


def test_importing_the_clustering_module_keeps_swcuts_cluster_the_function():
    import importlib

    import swcuts

    importlib.import_module("swcuts.clustering")
    assert callable(swcuts.cluster)
    res = swcuts.cluster(np.array([[0, 1], [0, 1], [1, 0]]), model="beta-bernoulli", seed=0, steps=10)
    assert res.labels.shape == (3,)
