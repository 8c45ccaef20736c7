"""The "superatoms" sampling posterior (swcuts.segmentation.superatom_posterior):
the swc kernel, run by sample_posterior's engine over its granularity ladder,
samples it exactly (co-assignment and pixel-boundary frequencies against exact
enumeration on a tiny super-atom graph), and the same samples fail against the
posterior that counts the boundary evidence once per pixel pair."""

import numpy as np
import pytest
from test_granularity import _z_scores
from test_posterior import Z_MAX, _exact

from swcuts.graph.learned_edges import learned_edge_probabilities
from swcuts.graph.region_graph import RegionGraph
from swcuts.graph.superatoms import merge_weakest, pair_strengths
from swcuts.models.boundary import edge_weights, learned_pair_weights
from swcuts.segmentation.granularity import sample_granularities
from swcuts.segmentation.superatom_posterior import (
    BOUNDARY_ZETA,
    EDGE_OFFSET,
    OFFSET,
    SUPERATOM_GRANULARITY,
    superatom_edge_weights,
    superatom_model,
)


def _setting():
    """A 6x8 colour image of two materials, 12 atoms of 2x2 pixels, a
    boundary map with a ridge between the materials, merged to 6 super-atoms."""
    rng = np.random.default_rng(11)
    left = np.zeros((6, 8), dtype=bool)
    left[:, :4] = True
    left[:2, 4:6] = True
    img = np.where(left[..., None], [0.3, 0.5, 0.4], [0.6, 0.4, 0.5]) + 0.08 * rng.standard_normal((6, 8, 3))
    img = np.clip(img, 0, 1)
    atoms = np.kron(np.arange(12).reshape(3, 4), np.ones((2, 2), dtype=np.int64))
    prob = np.clip(0.1 + 0.15 * rng.random((6, 8)), 0, 1)
    prob[2:, 3] = prob[2:, 4] = 0.7
    prob[:2, 5] = 0.6
    sa = merge_weakest(atoms, RegionGraph.from_labels(atoms), pair_strengths(prob), n_regions=6)
    model = superatom_model(img, sa.labels, sa.graph, prob, bins=4, window=0, a2=0.05, kappa=0.02, zeta=0.05)
    q = np.minimum(learned_edge_probabilities(img, sa.labels, sa.graph, prob), 0.7)
    return model, q, sa, img, prob


def _mixture(model, atoms):
    exact = [_exact(model.with_prior(a0=g * model.a0, a1=g * model.a1), atoms) for g in SUPERATOM_GRANULARITY]
    return np.mean([e[0] for e in exact], axis=0), np.mean([e[1] for e in exact], axis=0)


@pytest.fixture(scope="module")
def sampled():
    model, q, sa, img, prob = _setting()
    ps = sample_granularities(model, q, granularity=SUPERATOM_GRANULARITY, atoms=sa.labels, n_samples=3000,
                              chains=4, seed=5, anneal_steps=200, pilot_steps=2000)
    return ps, model, sa, img, prob


def test_the_edge_weights_are_coarsened_sums_or_means():
    model, _, sa, img, prob = _setting()
    pairs = learned_pair_weights(img, prob, 0.0)
    total = edge_weights(pairs, sa.labels, sa.graph)
    assert np.allclose(model.boundary_weights, BOUNDARY_ZETA * (total + OFFSET * sa.graph.boundary_length))
    mean = total / sa.graph.boundary_length
    assert np.allclose(superatom_edge_weights(prob, sa.labels, sa.graph, per="edge"), mean + EDGE_OFFSET)
    with pytest.raises(ValueError):
        superatom_edge_weights(prob, sa.labels, sa.graph, per="atom")


def test_samples_match_the_exact_superatom_posterior(sampled):
    ps, model, sa, _, _ = sampled
    co, pix = _mixture(model, sa.labels)
    # Informative: the exact posterior's boundary probabilities are spread.
    assert np.sum((pix > 0.05) & (pix < 0.95)) >= 6
    z = _z_scores(ps, co, pix)
    assert z.max() < Z_MAX, f"largest z-score {z.max():.2f}"


@pytest.mark.parametrize("evidence", [{"zeta": 1.0}, {"per": "edge"}])
def test_the_same_samples_fail_against_other_boundary_evidence(sampled, evidence):
    # Negative controls: the posterior that counts every pixel pair of a
    # boundary as independent (as the atom posterior does), and the one that
    # counts the evidence once per edge.
    ps, model, sa, _, prob = sampled
    other = model.with_prior()
    other.set_boundary(model.boundary, superatom_edge_weights(prob, sa.labels, sa.graph, **evidence))
    co, pix = _mixture(other, sa.labels)
    assert _z_scores(ps, co, pix).max() > 2 * Z_MAX


def test_sample_posterior_on_superatoms():
    from swcuts.segmentation.posterior import sample_posterior

    rng = np.random.default_rng(2)
    image = np.zeros((40, 48, 3))
    image[:, 24:] = [0.9, 0.6, 0.2]
    image[10:30, 4:16] = [0.2, 0.3, 0.8]
    image = np.clip(image + 0.03 * rng.standard_normal(image.shape), 0, 1)
    ps = sample_posterior(image, superatoms=8, n_samples=24, n_atoms=60, seed=0, model="image")
    assert ps.posterior == "superatoms" and ps.granularity == SUPERATOM_GRANULARITY
    assert ps.atoms.shape == (40, 48) and ps.atoms.max() + 1 <= 8 and ps.graph.n_vertices == ps.atoms.max() + 1
    assert ps.labels.shape[1] == ps.graph.n_vertices and ps.boundary_probability().shape == (40, 48)


@pytest.mark.parametrize("bad", [1, 0, 2.5])
def test_bad_superatoms(bad):
    from swcuts.io.errors import InputError
    from swcuts.segmentation.posterior import sample_posterior

    with pytest.raises(InputError):
        sample_posterior(np.zeros((40, 40)), superatoms=bad)
