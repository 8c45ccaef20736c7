"""The contrast-sensitive boundary term (swcuts.models.boundary)."""

import numpy as np
import pytest

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.boundary import boundary_change, contrast_weights, cut_weight


def test_boundary_change_is_the_difference_of_cut_weights():
    rng = np.random.default_rng(3)
    atoms = np.arange(42).reshape(6, 7)
    g = RegionGraph.from_labels(atoms)
    w = rng.random(g.n_edges)
    in_r = np.zeros(g.n_vertices, np.int64)
    for _ in range(400):
        labels = rng.integers(0, 4, g.n_vertices)
        R = np.unique(rng.integers(0, g.n_vertices, rng.integers(1, 9)))
        new = int(rng.integers(0, 5))
        after = labels.copy()
        after[R] = new
        d = boundary_change(R, R.size, new, labels, g.indptr, g.indices, w[g.edge_ids], in_r)
        assert d == pytest.approx(cut_weight(after, g.edges, w) - cut_weight(labels, g.edges, w), abs=1e-9)
        assert not in_r.any()


def test_weights_are_cheap_along_an_edge_and_full_across_flat_areas():
    image = np.zeros((8, 8))
    image[:, 4:] = 1.0
    atoms = np.repeat([[0, 0, 1, 1, 2, 2, 3, 3]], 8, axis=0)
    g = RegionGraph.from_labels(atoms)
    w = contrast_weights(image, atoms, g, sigma=0)
    per_pair = w / g.boundary_length
    assert per_pair[0] == pytest.approx(1.0) and per_pair[2] == pytest.approx(1.0)
    assert per_pair[1] < 0.05


def test_weights_of_a_constant_image_are_the_boundary_lengths():
    atoms = np.repeat(np.arange(5)[None, :], 4, axis=0).repeat(2, axis=1)
    g = RegionGraph.from_labels(atoms)
    w = contrast_weights(np.full((4, 10, 3), 0.3), atoms, g)
    np.testing.assert_allclose(w, g.boundary_length)


def _photo():
    from skimage import data

    return data.coffee()[::8, ::8]


def test_energy_on_pixels_equals_the_samplers_energy_on_atoms():
    # The boundary weight of an atom edge is the sum over its pixel pairs,
    # so the pixel-graph energy of the result equals the run's own.
    import swcuts

    image = _photo()
    seg = swcuts.segment(image, seed=0, steps=3000, model="contrast")
    assert seg.posterior == "contrast" and seg.model.boundary > 0
    assert swcuts.energy(image, seg.labels, model="contrast") == pytest.approx(seg.energy, rel=1e-9)
    assert swcuts.energy(image, seg.labels, model="paper") != pytest.approx(seg.energy, rel=1e-6)


def test_default_energy_scores_the_default_segment():
    import swcuts

    image = _photo()
    seg = swcuts.segment(image, seed=0, steps=3000)
    assert seg.posterior == "learned" and seg.model.boundary > 0 and seg.model.window > 0
    assert swcuts.energy(image, seg.labels) == pytest.approx(seg.energy, rel=1e-9)
    assert swcuts.energy(image, seg.labels, model="contrast") != pytest.approx(seg.energy, rel=1e-6)
    # Below MIN_LEARNED_SIDE the default is "window", for segment() and energy() alike.
    small = image[:24, :40]
    seg = swcuts.segment(small, seed=0, steps=300)
    assert seg.posterior == "window"
    assert swcuts.energy(small, seg.labels) == pytest.approx(seg.energy, rel=1e-9)


def test_learned_on_atoms_contrast_on_pixels_by_default_and_paper_stays_available():
    from swcuts.segmentation import options
    from swcuts.samplers.registry import REGISTRY

    names = [spec.name for spec in REGISTRY]
    on_pixels = {spec.name for spec in REGISTRY if spec.default_atoms == "pixels"}
    assert on_pixels and on_pixels != set(names)
    for name in names:
        want = "contrast" if name in on_pixels else "learned"
        assert options.resolve_model(name, None) == want
        assert options.resolve_model(name, None, atoms="pixels") == "contrast"
    atom_samplers = [n for n in names if n not in on_pixels]
    assert options.common_model(atom_samplers) is None      # each image's default on atoms
    assert options.common_model(names) == "contrast"
    assert options.common_model(atom_samplers, atoms="pixels") == "contrast"
    assert all(options.resolve_model(name, "paper") == "paper" for name in names)


@pytest.mark.parametrize("sampler,steps", [("split-merge", 20), ("multilevel", 3000)])
def test_samplers_energy_is_the_pixel_graph_energy(sampler, steps):
    # The samplers that refused "contrast" before; multilevel's result is
    # described on its own atoms, with the boundary weights summed there.
    import swcuts

    image = _photo()
    seg = swcuts.segment(image, sampler=sampler, seed=0, steps=steps)
    assert seg.posterior == swcuts.segmentation.options.resolve_model(sampler, None) and seg.model.boundary > 0
    assert swcuts.energy(image, seg.labels, model=seg.posterior) == pytest.approx(seg.energy, rel=1e-9)
    contrast = swcuts.segment(image, sampler=sampler, seed=0, steps=steps, model="contrast")
    assert swcuts.energy(image, contrast.labels, model="contrast") == pytest.approx(contrast.energy,
                                                                                     rel=1e-9)
    paper = swcuts.segment(image, sampler=sampler, seed=0, steps=steps, model="paper")
    assert paper.posterior == "paper" and paper.model.boundary == 0
    assert swcuts.energy(image, paper.labels, model="paper") == pytest.approx(paper.energy, rel=1e-9)


def _two_textures(seed=0):
    """24 x 48: a fine two-colour texture (left) beside a smooth grey
    (right), both with a little noise; atoms are strips 6 pixels wide."""
    rng = np.random.default_rng(seed)
    image = 0.5 + 0.02 * rng.standard_normal((24, 48))
    image[:, :24] = np.where(rng.random((24, 24)) < 0.5, 0.15, 0.85) + 0.02 * rng.standard_normal((24, 24))
    atoms = np.repeat(np.arange(8)[None, :], 24, axis=0).repeat(6, axis=1)
    return np.clip(image, 0, 1), atoms, RegionGraph.from_labels(atoms)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_texture_evidence_makes_a_cut_inside_a_texture_dearer_than_one_between_materials(seed):
    image, atoms, g = _two_textures(seed)
    inside = [0, 1, 2]         # edges (0, 1), (1, 2), (2, 3): strips inside the texture
    between = 3                # edge (3, 4): the texture's edge with the grey
    assert tuple(g.edges[between]) == (3, 4)
    w = contrast_weights(image, atoms, g, evidence="texture") / g.boundary_length
    assert w[inside].min() > 1.1 * w[between]
    # What the histograms add: inside the texture the weights rise well
    # above the pixel contrast's, whose many strong pixel edges make cuts
    # there cheap; at the material edge they stay the pixel contrast's.
    c = contrast_weights(image, atoms, g) / g.boundary_length
    assert (w / c)[inside].min() > 1.1
    assert w[between] == pytest.approx(c[between], rel=0.05)


def test_texture_weights_are_the_contrast_weights_or_more():
    from swcuts.models.boundary import pair_weights, texture_pair_weights

    image, _, _ = _two_textures(3)
    t = texture_pair_weights(image)
    assert t.shape == pair_weights(image).shape
    assert np.all(t >= pair_weights(image)) and np.all(t <= 1.0)


def test_histogram_gradient_is_symmetric_and_zero_on_a_constant_image():
    from swcuts.models.boundary import histogram_gradient

    image, _, _ = _two_textures(4)
    g = histogram_gradient(image, radius=3, bins=6)
    n_hor = 24 * 47
    mirrored = histogram_gradient(image[:, ::-1], radius=3, bins=6)
    np.testing.assert_allclose(g[:n_hor].reshape(24, 47)[:, ::-1], mirrored[:n_hor].reshape(24, 47),
                               atol=1e-12)
    assert np.all(g >= 0)
    np.testing.assert_array_equal(histogram_gradient(np.full((6, 7, 3), 0.4)), 0.0)


def test_texture_model_energy_on_pixels_equals_the_samplers_energy_on_atoms():
    import swcuts

    image = _photo()
    seg = swcuts.segment(image, seed=0, steps=3000, model="texture")
    assert seg.posterior == "texture" and seg.model.evidence == "texture"
    assert swcuts.energy(image, seg.labels, model="texture") == pytest.approx(seg.energy, rel=1e-9)
    assert swcuts.energy(image, seg.labels) != pytest.approx(seg.energy, rel=1e-6)


def test_unknown_evidence_is_refused():
    from swcuts.models.image import ImageModel

    atoms = np.array([[0, 0, 1]] * 2)
    with pytest.raises(ValueError, match="evidence"):
        ImageModel(np.full((2, 3), 0.5), atoms, RegionGraph.from_labels(atoms), boundary=1.0,
                   evidence="sobel")
