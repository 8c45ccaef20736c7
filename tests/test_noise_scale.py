"""The edge scale on noisy images (swcuts.graph.edge_probabilities.noise_sigma, noise_edge_scale)."""

import numpy as np
import pytest

from swcuts import segment
from swcuts.graph.edge_probabilities import (
    NOISE_REF, kl_edge_probabilities, noise_edge_scale, noise_sigma, vertex_histograms)
from swcuts.image.prepare import prepare_image


@pytest.mark.parametrize("sigma", [0.01, 0.05, 0.1])
def test_noise_sigma_reads_additive_noise_through_edges(sigma):
    """Immerkær's estimate ignores a step edge and a smooth ramp and reads the
    noise, in every channel."""
    rng = np.random.default_rng(3)
    x = np.linspace(0, 1, 160)
    clean = np.where(x[None, :] > 0.5, 0.8, 0.2) * np.ones((120, 1)) + 0.1 * x[None, :]
    image = np.stack([clean, clean[:, ::-1], np.full_like(clean, 0.5)], axis=-1)
    image[..., :2] += sigma * rng.standard_normal((120, 160, 2))
    assert noise_sigma(image) == pytest.approx(sigma, rel=0.1)
    assert noise_sigma(clean) < 0.01


def test_noise_edge_scale_shrinks_only_above_the_reference():
    rng = np.random.default_rng(4)
    quiet = 0.5 + 0.5 * NOISE_REF * rng.standard_normal((100, 100))
    loud = 0.5 + 3 * NOISE_REF * rng.standard_normal((100, 100))
    assert noise_edge_scale(quiet) == 1.0
    assert noise_edge_scale(loud) == pytest.approx(1 / 3, rel=0.1)


def test_segment_uses_the_noise_scaled_edge_probabilities():
    """The q of a run is eq. 53's at edge_scale times the noise factor."""
    rng = np.random.default_rng(5)
    img = np.where(np.arange(48)[None, :] < 24, 0.3, 0.7) * np.ones((40, 1))
    img = np.clip(img + 0.15 * rng.standard_normal(img.shape), 0, 1)
    seg = segment(img, seed=0, steps=50, n_atoms=30, model="window")  # eq. 53's q ("learned": its own)
    features, _ = prepare_image(img)
    factor = noise_edge_scale(features)
    assert factor < 0.5
    hist = vertex_histograms(features, seg.atoms, seg.graph.n_vertices, bins=15)
    expected = np.minimum(kl_edge_probabilities(hist, seg.graph.edges, scale=factor), 0.95)
    np.testing.assert_allclose(seg.edge_probabilities, expected)


def noisy_halves(seed=6):
    rng = np.random.default_rng(seed)
    img = np.where(np.arange(48)[None, :] < 24, 0.3, 0.7) * np.ones((40, 1))
    return np.clip(img + 0.15 * rng.standard_normal(img.shape), 0, 1)


def test_the_noise_rule_is_applied_once_per_image():
    """RunOptions.on_image scales edge_scale by the factor (every run of
    segment, the multi-level one too, reads it from there), once."""
    from swcuts.segmentation import options

    features, _ = prepare_image(noisy_halves())
    factor = noise_edge_scale(features)
    opts = options.resolve_options(sampler="swc", edge_scale=2.0).on_image(features)
    assert factor < 0.5 and opts.posterior_params()["edge_scale"] == pytest.approx(2.0 * factor)


def test_sample_posterior_uses_the_noise_scaled_edge_scale(monkeypatch):
    import swcuts.segmentation.segment
    from swcuts import sample_posterior

    seen = {}

    def capture(*args, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr(swcuts.segmentation.build, "build_posterior", capture)
    img = noisy_halves()
    with pytest.raises(RuntimeError, match="stop"):
        sample_posterior(img, n_samples=2, seed=0, model="image")
    features, _ = prepare_image(img)
    assert seen["edge_scale"] == pytest.approx(noise_edge_scale(features))
