"""Tests of swcuts.image.atoms: every method gives a clean label image."""

import numpy as np
import pytest
from skimage.measure import label

from swcuts.image.atoms import ATOM_METHODS, compute_atoms, pixel_atoms
from swcuts.evaluation.synthetic.images import make_synthetic

H, W = 40, 60
N_ATOMS = 100


def _image(channels, seed=0):
    img, _ = make_synthetic((H, W), colour=channels == 3, noise="medium", seed=seed)
    return img if channels == 3 else img[:, :, None]


def _check_labels(lab, shape):
    assert lab.shape == shape
    assert lab.dtype == np.int64
    n = int(lab.max()) + 1
    assert lab.min() == 0
    assert np.all(np.bincount(lab.ravel(), minlength=n) > 0), "labels must be 0..N-1, all used"
    # Every region is one 4-connected component: the number of 4-connected
    # components of equal labels equals the number of labels.
    assert int(label(lab, background=-1, connectivity=1).max()) == n
    return n


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("method", ATOM_METHODS)
def test_labels_are_clean(method, channels):
    img = _image(channels)
    lab = compute_atoms(img, method, N_ATOMS, seed=0)
    n = _check_labels(lab, (H, W))
    if method in ("slic", "felzenszwalb", "watershed"):
        assert N_ATOMS / 3 <= n <= N_ATOMS * 3, n
    elif method == "edges":
        assert n >= N_ATOMS / 5, n
    else:
        assert n == H * W


@pytest.mark.parametrize("method", ["slic", "felzenszwalb", "watershed", "edges"])
def test_no_tiny_fragments(method):
    img = _image(3, seed=1)
    lab = compute_atoms(img, method, N_ATOMS)
    sizes = np.bincount(lab.ravel())
    assert sizes.min() >= int(0.25 * H * W / N_ATOMS)


@pytest.mark.parametrize("method", ATOM_METHODS)
def test_deterministic_and_2d_input(method):
    img = _image(1, seed=2)
    a = compute_atoms(img, method, N_ATOMS, seed=1)
    b = compute_atoms(img[:, :, 0], method, N_ATOMS, seed=2)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ATOM_METHODS)
def test_noise_and_flat_images(method):
    rng = np.random.default_rng(3)
    for img in (rng.random((H, W, 3)), np.full((H, W, 1), 0.5)):
        lab = compute_atoms(img, method, N_ATOMS)
        n = _check_labels(lab, (H, W))
        if method != "pixels":
            assert n >= N_ATOMS / 5, (method, n)


@pytest.mark.parametrize("method", ATOM_METHODS)
@pytest.mark.parametrize("n_atoms", [1, 7, H * W, 4 * H * W])
def test_extreme_atom_counts(method, n_atoms):
    img = _image(3, seed=4)
    lab = compute_atoms(img, method, n_atoms)
    n = _check_labels(lab, (H, W))
    if n_atoms >= H * W and method in ("slic", "watershed", "edges", "pixels"):
        assert n >= H * W / 2


def test_pixels_layout():
    lab = pixel_atoms(np.zeros((3, 5, 1)))
    np.testing.assert_array_equal(lab, np.arange(15).reshape(3, 5))
    lab = compute_atoms(_image(3), "pixels", 5)
    assert lab[2, 7] == 2 * W + 7


def test_bad_arguments():
    img = _image(1)
    with pytest.raises(ValueError, match="slic"):
        compute_atoms(img, "quickshift")
    with pytest.raises(ValueError):
        compute_atoms(img, "slic", 0)
    with pytest.raises(ValueError):
        compute_atoms(img, "slic", -5)
    with pytest.raises(ValueError):
        compute_atoms(np.zeros((2, 3, 4, 5)), "slic", 10)


@pytest.mark.parametrize("n_atoms", [40, 90])
def test_watershed_atoms_keep_to_a_sharp_edge(n_atoms):
    """A watershed of the gradient leaves the edge's ridge pixels to whichever
    basin floods first; the snapping pass gives them back, so no atom holds
    pixels on both sides of a step (without it, some do on this image)."""
    from swcuts.image.atoms import watershed_atoms

    img = np.zeros((24, 32))
    img[:, 16:] = 1.0
    img += 0.02 * np.random.default_rng(1).standard_normal(img.shape)

    def straddling(atoms):
        return set(np.unique(atoms[:, :16])) & set(np.unique(atoms[:, 16:]))

    assert straddling(watershed_atoms(img, n_atoms)) == set()
    assert straddling(watershed_atoms(img, n_atoms, refine=False))


def test_watershed_atoms_follow_the_relief_they_are_given():
    # A flat image whose relief has a ridge down column 21: with the relief,
    # no atom crosses the ridge; with the (flat) gradient, atoms are cells
    # of the seed grid and some do. Another method refuses a relief.
    img = np.full((40, 60), 0.5)
    relief = np.zeros((40, 60))
    relief[:, 21] = 1.0
    atoms = compute_atoms(img, "watershed", 24, relief=relief)
    assert not np.intersect1d(atoms[:, :21], atoms[:, 22:]).size
    plain = compute_atoms(img, "watershed", 24)
    assert np.intersect1d(plain[:, :21], plain[:, 22:]).size
    with pytest.raises(ValueError, match="relief"):
        compute_atoms(img, "slic", 24, relief=relief)
    with pytest.raises(ValueError, match="shape"):
        compute_atoms(img, "watershed", 24, relief=relief[:, :-1])


def test_the_learned_posterior_floods_the_detectors_boundary_map():
    from swcuts.image.boundary_detector import boundary_probability
    from swcuts.image.prepare import prepare_image
    from swcuts.segmentation.build import build_posterior
    from swcuts.segmentation.options import resolve_options

    features, _ = prepare_image(np.random.default_rng(0).random((48, 64, 3)), channel_axis=-1)
    built = {}
    for model, relief in (("learned", boundary_probability(features)), ("window", None)):
        run = resolve_options(model=model, seed=0).on_image(features)
        built[model] = build_posterior(features, run.atoms, run.n_atoms, seed=0, **run.posterior_params())[0]
        np.testing.assert_array_equal(built[model],
                                      compute_atoms(features, "watershed", run.n_atoms, relief=relief))
    assert not np.array_equal(built["learned"], built["window"])
