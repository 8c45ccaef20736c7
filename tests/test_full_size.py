"""Large images on a reduced working image (swcuts.image.full_size,
``segment(work_pixels=...)``), the convergence stop of the annealing
driver, and the fast overlays and PNGs of the outputs."""

from __future__ import annotations

import numpy as np
import pytest

import swcuts
from swcuts.image.full_size import carry_atoms, working_size
from swcuts.inference.anneal import Converged, Schedule, anneal
from swcuts.io.image_write import boundary_overlay, encode_pngs, png_bytes_of


def _scene(h, w, seed=0, truth=False):
    """A colour image of three regions with sharp edges that fall between
    the working pixels, and a little noise (and its partition)."""
    rng = np.random.default_rng(seed)
    colours = np.array([(0.8, 0.2, 0.2), (0.2, 0.3, 0.8), (0.9, 0.9, 0.3)])
    parts = np.zeros((h, w), np.int64)
    parts[:, int(0.37 * w):] = 1
    yy, xx = np.mgrid[0:h, 0:w]
    parts[(yy - 0.6 * h) ** 2 + (xx - 0.7 * w) ** 2 < (0.2 * h) ** 2] = 2
    img = np.clip(colours[parts] + rng.normal(0, 0.02, (h, w, 3)), 0, 1)
    return (img, parts) if truth else img


def test_working_size_keeps_the_aspect_and_leaves_small_images():
    assert working_size(321, 481) is None
    assert working_size(700, 700, 250_000) is None  # under twice the working pixels
    h, w = working_size(3000, 4000, 250_000)
    assert abs(h * w - 250_000) < 1000 and abs(w / h - 4 / 3) < 0.01
    assert working_size(3000, 4000, None) is None


def test_carry_atoms_follows_the_edge_of_the_full_image():
    display = np.zeros((60, 90, 3))
    display[:, 37:] = 1.0  # the edge at column 37; upsampled x6 from column 6 or 7 it is off by 1-5
    small = np.zeros((10, 15), np.int64)
    small[:, 6:] = 1
    big = carry_atoms(small, display)
    assert big.shape == (60, 90)
    assert (big[:, :37] == 0).all() and (big[:, 37:] == 1).all()


def test_carry_atoms_keeps_every_atom():
    rng = np.random.default_rng(1)
    small = np.arange(30 * 40).reshape(30, 40) // 3  # thin atoms, 3 working pixels wide
    display = rng.random((240, 320, 3))
    big = carry_atoms(small, display)
    np.testing.assert_array_equal(np.unique(big), np.arange(small.max() + 1))


def test_segment_on_a_working_image_gives_full_size_results():
    image, parts = _scene(240, 360, truth=True)
    seg = swcuts.segment(image, seed=0, steps=3000, n_atoms=60, work_pixels=20_000)
    h, w = seg.work_shape
    assert abs(h * w - 20_000) < 400
    assert seg.labels.shape == seg.atoms.shape == (240, 360)
    n = seg.graph.n_vertices
    np.testing.assert_array_equal(np.unique(seg.atoms), np.arange(n))
    np.testing.assert_array_equal(seg.labels, seg.vertex_labels[seg.atoms])
    assert seg.summary()["work_shape"] == [h, w]
    assert "full size" in seg.phase_seconds
    # The segments follow the image's edges at full size, to the pixel
    # almost everywhere (the working pixels are 3.3 pixels wide).
    assert seg.n_labels == 3
    table = np.zeros((3, 3), int)
    np.add.at(table, (parts.ravel(), seg.labels.ravel()), 1)
    assert table.max(axis=1).sum() / parts.size > 0.998


def test_work_pixels_none_and_small_images_are_segmented_at_their_size():
    image = _scene(60, 90)
    a = swcuts.segment(image, seed=3, steps=500, n_atoms=30)
    b = swcuts.segment(image, seed=3, steps=500, n_atoms=30, work_pixels=None)
    assert a.work_shape is None and b.work_shape is None
    np.testing.assert_array_equal(a.labels, b.labels)
    with pytest.raises(ValueError, match="work_pixels"):
        swcuts.segment(image, work_pixels=10)


def _run(stop, steps=4000, seed=5):
    image = _scene(48, 64, seed=1)
    seg = swcuts.segment(image, seed=seed, steps=10, n_atoms=40)
    state = seg.model.new_state(np.zeros(seg.graph.n_vertices, dtype=np.int64))
    kernel = swcuts.samplers.registry.sampler_spec("swc").kernel(seg.model, seg.edge_probabilities)
    result = anneal(kernel, state, Schedule(10.0, 0.05), rng=np.random.default_rng(seed), steps=steps,
                    stop=stop)
    return result, state


def test_converged_stop_is_a_prefix_of_the_full_run():
    full, _ = _run(None)
    stopped, state = _run(Converged(patience=0.1, below=0.5))
    assert stopped.steps < full.steps == 4000
    n = len(stopped.trace)
    # The same chain up to the stop: the same trace rows.
    for column in ("step", "temperature", "energy", "labels", "accepted"):
        assert getattr(stopped.trace, column) == getattr(full.trace, column)[:n]
    # Its result is the best state so far, and no better than the full run's.
    assert stopped.best_energy == pytest.approx(min(stopped.trace.energy), abs=1e-6) or \
        stopped.best_energy <= min(stopped.trace.energy)
    assert stopped.best_energy >= full.best_energy - 1e-9
    assert -state.log_pi == pytest.approx(stopped.best_energy)


def test_converged_waits_for_the_cold_chain_and_its_patience():
    never, _ = _run(Converged(patience=1.0, below=0.5))  # patience of the whole budget: never met
    assert never.steps == 4000
    hot, _ = _run(Converged(patience=0.01, below=1e-9))  # never cold enough
    assert hot.steps == 4000
    with pytest.raises(ValueError):
        Converged(patience=0)


def test_boundary_overlay_marks_both_sides_of_every_boundary():
    from skimage.segmentation import find_boundaries

    rng = np.random.default_rng(2)
    labels = np.repeat(np.repeat(rng.integers(0, 6, (8, 10)), 5, axis=0), 5, axis=1)
    image = rng.random(labels.shape + (3,))
    out = boundary_overlay(image, labels, (1.0, 0.0, 0.0))
    marked = find_boundaries(labels, mode="thick")
    assert out.dtype == np.uint8 and out.shape == image.shape
    assert (out[marked] == (255, 0, 0)).all()
    assert np.abs(out[~marked].astype(int) - np.round(image[~marked] * 255)).max() <= 1


@pytest.mark.parametrize("data", [np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000,
                                  np.arange(36, dtype=np.uint8).reshape(3, 4, 3),
                                  np.arange(48, dtype=np.uint8).reshape(3, 4, 4)],
                         ids=["labels16", "rgb", "rgba"])
def test_png_bytes_round_trip(data):
    import imageio.v3 as iio

    for encoded in [png_bytes_of(data)] + encode_pngs([data, data]):
        np.testing.assert_array_equal(iio.imread(encoded, extension=".png"), data)
