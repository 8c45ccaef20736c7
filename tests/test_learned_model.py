"""The "learned" image posterior: the coarsened likelihood (ζ from the
image), the learned boundary evidence, and one energy for every caller.
Its kernels' exactness is in tests/test_enumeration_kernels.py and each
sampler's test file (the learned settings)."""

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter

import swcuts
from swcuts.graph.region_graph import RegionGraph
from swcuts.io.errors import InputError
from swcuts.models.boundary import learned_pair_weights
from swcuts.models.coarsening import effective_pixel_fraction
from swcuts.models.image import ImageModel
from swcuts.segmentation.build import build_posterior
from swcuts.segmentation.image_models import (
    MODELS,
    ZETA_REFERENCE,
    model_edge_power,
    model_likelihood_weight,
)
from swcuts.segmentation.options import resolve_options


def two_regions(seed=0, shape=(40, 56)):
    """A colour image of two halves with a little pixel noise."""
    rng = np.random.default_rng(seed)
    img = np.empty(shape + (3,))
    img[:, : shape[1] // 2] = (0.7, 0.3, 0.2)
    img[:, shape[1] // 2:] = (0.2, 0.4, 0.7)
    return np.clip(img + 0.04 * rng.normal(size=img.shape), 0, 1)


def test_zeta_is_the_images_and_smaller_for_correlated_pixels(monkeypatch):
    monkeypatch.setitem(MODELS, "learned", {**MODELS["learned"], "coarsened": True, "zeta_power": 1.0})
    rng = np.random.default_rng(1)
    white = rng.random((48, 48))
    smooth = gaussian_filter(white, 1.5)
    assert effective_pixel_fraction(white) > 0.8
    assert effective_pixel_fraction(smooth) < 0.1
    # ζ depends on the image only: a model without coarsening counts every pixel.
    assert model_likelihood_weight("window", smooth) == 1.0
    assert model_likelihood_weight("learned", smooth) == effective_pixel_fraction(smooth)


def test_coarsened_rows_scale_the_likelihood_and_keep_the_fits():
    img = two_regions()
    atoms = np.repeat(np.arange(20), img.size // 3 // 20).reshape(img.shape[:2])
    g = RegionGraph.from_labels(atoms)
    plain = ImageModel(img, atoms, g, bins=8, kappa=0.0, a0=0.0, a1=0.0, a2=0.0)
    coarse = ImageModel(img, atoms, g, bins=8, kappa=0.0, a0=0.0, a1=0.0, a2=0.0, likelihood_weight=0.25)
    labels = (np.arange(20) >= 10).astype(np.int64)
    # κ = 0: no complexity term, so the likelihood is exactly ζ times.
    assert coarse.log_target(labels) == pytest.approx(0.25 * plain.log_target(labels), rel=1e-9)
    with pytest.raises(ValueError, match="likelihood_weight"):
        ImageModel(img, atoms, g, likelihood_weight=0.0)


def test_learned_weights_reward_cuts_on_detected_boundaries_only():
    prob = np.full((6, 8), 0.02)
    prob[:, 4] = 0.95
    w = learned_pair_weights(np.zeros((6, 8)), probability=prob)
    hor = w[: 6 * 7].reshape(6, 7)
    assert (hor[:, 3] < 0).all() and (hor[:, 4] < 0).all()     # pairs touching column 4
    assert (hor[:, :3] > 0).all() and (hor[:, 5:] > 0).all()
    # The offset is a cost per pixel pair whatever the evidence.
    np.testing.assert_allclose(learned_pair_weights(None, probability=prob, offset=1.5), w + 1.5)


def test_segment_and_energy_agree_under_the_learned_model():
    img = two_regions()
    seg = swcuts.segment(img, seed=0, steps=300, model="learned")
    assert seg.posterior == "learned"
    assert 0.0 < seg.model.likelihood_weight < 1.0
    assert seg.model.evidence == "learned"
    assert swcuts.energy(img, seg.labels, model="learned") == pytest.approx(seg.energy, rel=1e-9)
    # The two halves are found.
    left, right = seg.labels[:, :20], seg.labels[:, 36:]
    assert np.bincount(left.ravel()).argmax() != np.bincount(right.ravel()).argmax()


def test_learned_model_runs_on_grey_photos():
    img = two_regions()[..., 0]
    seg = swcuts.segment(img, seed=0, steps=200, model="learned")
    assert seg.labels.shape == img.shape
    assert swcuts.energy(img, seg.labels, model="learned") == pytest.approx(seg.energy, rel=1e-9)


def test_learned_model_refuses_pixel_graphs():
    with pytest.raises(InputError, match="atoms larger than pixels"):
        swcuts.segment(np.zeros((16, 16)), sampler="multigrid", model="learned")


def test_a_missing_weights_file_fails_in_one_line(monkeypatch, tmp_path):
    from swcuts.image import boundary_detector

    missing = tmp_path / "gone.npz"
    monkeypatch.setattr(boundary_detector, "DEFAULT_PATH", missing, raising=False)
    boundary_detector.load_detector.cache_clear() if hasattr(boundary_detector.load_detector, "cache_clear") else None
    with pytest.raises(InputError) as err:
        boundary_detector.load_detector(missing)
    assert "\n" not in str(err.value) and "gone.npz" in str(err.value)


def test_zeta_power_and_factor_set_the_likelihood_weight(monkeypatch):
    rng = np.random.default_rng(2)
    images = [gaussian_filter(rng.random((48, 48)), s) for s in (0.7, 1.5)]
    zetas = [effective_pixel_fraction(im) for im in images]
    assert zetas[0] > 2 * zetas[1]

    def weights(**entry):
        monkeypatch.setitem(MODELS, "learned", {**MODELS["learned"], **entry})
        return [model_likelihood_weight("learned", im) for im in images]

    assert weights(coarsened=True, zeta_power=1.0) == zetas
    assert weights(coarsened=2.0, zeta_power=1.0) == pytest.approx([min(1.0, 2 * z) for z in zetas])
    # γ = 0: every image gets f ζ0 whatever its ζ; γ = 1/2 halves the log-ratio between images.
    assert weights(coarsened=1.5, zeta_power=0.0) == pytest.approx([1.5 * ZETA_REFERENCE] * 2)
    half = weights(coarsened=True, zeta_power=0.5)
    assert np.log(half[0] / half[1]) == pytest.approx(0.5 * np.log(zetas[0] / zetas[1]))
    assert weights(coarsened=False) == [1.0, 1.0]
    assert weights(coarsened=100.0, zeta_power=0.0) == [1.0, 1.0]     # at most 1


def test_edge_power_raises_the_learned_edge_probabilities(monkeypatch):
    from swcuts.image.prepare import prepare_image

    features = prepare_image(two_regions())[0]
    qs = []
    for power in (1.0, 3.0):
        monkeypatch.setitem(MODELS, "learned", {**MODELS["learned"], "edges": "learned", "edge_power": power})
        run = resolve_options(model="learned", n_atoms=40).on_image(features)
        assert run.posterior_params()["edge_power"] == power
        qs.append(build_posterior(features, run.atoms, run.n_atoms, seed=0, **run.posterior_params())[2])
    below = qs[0] < run.q_max                       # the others were capped before the power
    assert below.any() and (~below).any()
    np.testing.assert_allclose(qs[1][below], qs[0][below] ** 3, rtol=1e-9)
    assert (qs[1] <= run.q_max).all() and (qs[1] <= qs[0]).all()
    assert model_edge_power("window") == 1.0


def test_options_carry_the_models_likelihood_weight(monkeypatch):
    monkeypatch.setitem(MODELS, "learned", {**MODELS["learned"], "coarsened": True, "zeta_power": 1.0})
    img = two_regions()
    from swcuts.image.prepare import prepare_image

    features = prepare_image(img)[0]
    run = resolve_options(model="learned").on_image(features)
    assert run.likelihood_weight == pytest.approx(effective_pixel_fraction(features))
    assert run.posterior_params()["evidence"] == "learned"
    assert resolve_options(model="window").on_image(features).likelihood_weight == 1.0
    assert MODELS["learned"].get("coarsened")


@pytest.mark.parametrize("shape", [(3, 3), (4, 4), (6, 5)])
def test_a_flat_tiny_image_is_one_segment_under_the_coarsened_likelihood(shape):
    """Under ζ = 0.1 a label of fewer than 10 pixels has n = ζ·pixels < 1: the
    BIC penalty's log n is held at 0 there, else every extra label earned
    a bonus for its parameters and a flat 3x3 image split into many."""
    rng = np.random.default_rng(0)
    flat = 0.5 + 0.01 * rng.standard_normal(shape)
    assert swcuts.segment(flat, seed=0, model="learned").n_labels == 1
