"""Model "window": the histogram likelihood counts each pixel through the
histogram of the window around it (ImageModel(window=r))."""

import numpy as np
import pytest

import swcuts
from swcuts.graph.region_graph import RegionGraph
from swcuts.io.errors import InputError
from swcuts.models.image import ImageModel
from swcuts.models.vertex_stats import window_histograms
from swcuts.segmentation.image_models import BINS, MODELS, model_bins, model_window
from swcuts.segmentation.options import resolve_options


def _brute_force(features, atoms, n, bins, radius):
    """Every pixel's window histogram by loops (mirrored border), summed per atom."""
    h, w, C = features.shape
    idx = np.clip((features * bins).astype(int), 0, bins - 1)
    pad = np.pad(idx, ((radius, radius), (radius, radius), (0, 0)), mode="symmetric")
    out = np.zeros((n, C * bins))
    for y in range(h):
        for x in range(w):
            win = pad[y:y + 2 * radius + 1, x:x + 2 * radius + 1]
            for c in range(C):
                counts = np.bincount(win[..., c].ravel(), minlength=bins) / win[..., c].size
                out[atoms[y, x], c * bins:(c + 1) * bins] += counts
    return out


@pytest.mark.parametrize("radius", [1, 2, 3])
def test_window_histograms_match_the_windows_counted_pixel_by_pixel(radius):
    rng = np.random.default_rng(radius)
    features = rng.random((7, 9, 2))
    atoms = (np.arange(7)[:, None] // 3) * 3 + np.arange(9)[None, :] // 4
    n = int(atoms.max()) + 1
    got = window_histograms(features, atoms, n, 5, radius)
    np.testing.assert_allclose(got, _brute_force(features, atoms, n, 5, radius), atol=1e-12)
    # every channel block of an atom sums to its pixel count
    np.testing.assert_allclose(got.reshape(n, 2, 5).sum(-1), np.bincount(atoms.ravel())[:, None].repeat(2, 1))


def test_window_likelihood_ranks_a_texture_as_one_region():
    """A checkerboard of 4x4 squares beside a flat grey: with pixel counts
    the checkerboard's atoms (one colour each) are best apart; counted
    through 9x9 windows every atom holds the mixture, and the texture is
    one region. (The surface families still see the pixels' own values,
    so the histogram family is compared alone.)"""
    img = np.full((16, 32), 0.5)
    yy, xx = np.indices((16, 16))
    img[:, :16] = np.where((yy // 4 + xx // 4) % 2, 0.1, 0.9)
    atoms = (np.arange(16)[:, None] // 4) * 8 + np.arange(32)[None, :] // 4
    g = RegionGraph.from_labels(atoms)
    texture = (atoms % 8) < 4
    by_colour = np.where(texture, (np.arange(32)[None, :] // 4 + np.arange(16)[:, None] // 4) % 2, 2)
    as_one = np.where(texture, 0, 1)
    vertex = lambda lab: np.array([lab[atoms == v][0] for v in range(g.n_vertices)])
    for window, better in ((0, by_colour), (4, as_one)):
        m = ImageModel(img, atoms, g, bins=8, families=("histogram",), a0=1.0, a1=0.0, a2=0.0,
                       window=window)
        other = as_one if better is by_colour else by_colour
        assert m.log_target(vertex(better)) > m.log_target(vertex(other))


def test_window_radius_grows_with_the_image_side():
    assert model_window("contrast", 321, 481) == 0
    r = [model_window("window", h, w) for h, w in ((160, 240), (321, 481), (642, 962))]
    assert r[0] < r[1] < r[2] and abs(r[2] / r[1] - 2) < 0.1


def test_window_model_energy_on_pixels_equals_the_samplers_energy_on_atoms():
    rng = np.random.default_rng(4)
    image = np.clip(np.repeat(rng.random((6, 8, 3)), 6, axis=0).repeat(6, axis=1)
                    + 0.05 * rng.standard_normal((36, 48, 3)), 0, 1)
    seg = swcuts.segment(image, seed=0, steps=3000, model="window", n_atoms=60)
    assert seg.posterior == "window" and seg.model.window >= 1
    assert swcuts.energy(image, seg.labels, model="window") == pytest.approx(seg.energy, rel=1e-9)


def test_each_model_has_its_likelihood_bins_unless_given():
    # bins=None (the default) is the model's: 24 for "window", BINS for the
    # others; an explicit value wins everywhere (segment, energy, options).
    # An image with one varying channel keeps BINS (the models' bins were
    # chosen on colour photos).
    assert MODELS["window"]["bins"] == 24 != BINS
    colour, grey = np.zeros((24, 32, 3)), np.zeros((24, 32))
    colour[:, 16:] = (0.7, 0.2, 0.4)
    grey[:, 16:] = 0.7
    assert resolve_options().bins is None
    assert resolve_options().on_image(colour).bins == model_bins("window") == 24
    # on_image reads features (H, W, C); a grey photo has one channel, and
    # so does an RGB grey one after prepare_image (its chroma is constant).
    assert resolve_options().on_image(grey[..., None]).bins == model_bins("window", channels=1) == BINS
    for opts in (resolve_options(model="contrast"), resolve_options(sampler="multigrid")):
        assert opts.on_image(colour).bins == BINS
    assert resolve_options(bins=40).on_image(colour).bins == resolve_options(bins=40).on_image(grey[..., None]).bins == 40
    grey_rgb = np.repeat(grey[..., None], 3, axis=2)
    for image, model, bins, want in ((colour, "window", None, 24), (grey_rgb, "window", None, BINS),
                                     (colour, "paper", None, BINS), (colour, "window", 12, 12)):
        seg = swcuts.segment(image, seed=0, steps=200, model=model, bins=bins)
        assert seg.model.n_bins == want
        assert swcuts.energy(image, seg.labels, model=model, bins=bins) == pytest.approx(seg.energy, rel=1e-9)
    # The energy at other bins differs, so the checks above can fail.
    assert swcuts.energy(colour, seg.labels, model="window") != pytest.approx(seg.energy, rel=1e-9)


def test_window_model_refuses_pixel_atoms():
    image = np.zeros((16, 16))
    with pytest.raises(InputError, match="atoms larger than pixels"):
        swcuts.segment(image, sampler="multigrid", model="window")
    with pytest.raises(InputError, match="atoms larger than pixels"):
        swcuts.segment(image, atoms="pixels", model="window")


def test_window_counts_on_atoms_that_are_single_pixels():
    # A small image with n_atoms >= its pixels: every atom is a pixel, and
    # the window model keeps a statistics row per pixel.
    rng = np.random.default_rng(2)
    features = rng.random((5, 6, 1))
    pixels = np.arange(30).reshape(5, 6)
    m = ImageModel(features, pixels, RegionGraph.from_labels(pixels), window=1)
    np.testing.assert_allclose(m.vstats[:, 1:1 + m.n_bins],
                               window_histograms(features, pixels, 30, m.n_bins, 1))
    labels = (np.arange(30) % 6 >= 3).astype(np.int64)
    two = ImageModel(features, labels.reshape(5, 6), RegionGraph.from_labels(labels.reshape(5, 6)),
                     window=1)
    assert m.log_target(labels) == pytest.approx(two.log_target(np.array([0, 1])), rel=1e-12)
