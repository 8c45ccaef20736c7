"""The two forms of the image model's vertex statistics agree."""

import numpy as np
import pytest

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.vertex_stats import add_vertex, label_sums, row_source, sum_stats


def _pixel_model(h=7, w=11, channels=3, seed=0, permute=False):
    rng = np.random.default_rng(seed)
    img = rng.random((h, w, channels))
    atoms = np.arange(h * w)
    if permute:  # vertex numbers need not follow the raster order
        atoms = rng.permutation(h * w)
    atoms = atoms.reshape(h, w)
    g = RegionGraph.from_labels(atoms)
    return img, atoms, ImageModel(img, atoms, g, bins=6, a0=3.0, a1=2.0, a2=0.5)


@pytest.mark.parametrize("permute", [False, True])
def test_pixel_rows_equal_the_rows_computed_from_the_image(permute):
    img, atoms, model = _pixel_model(permute=permute)
    assert model.vsrc[1].size == model.n_vertices  # the pixel form is in use
    ref = model._vertex_stats(img, atoms, model.n_vertices)
    np.testing.assert_array_equal(model.vstats, ref)
    assert model.vstats.shape[1] == model.n_stats


def test_atom_graph_keeps_rows():
    rng = np.random.default_rng(1)
    img = rng.random((6, 9))
    atoms = np.repeat(np.arange(18), 3).reshape(6, 9)
    model = ImageModel(img, atoms, RegionGraph.from_labels(atoms), bins=5)
    assert model.vsrc[1] is None and model.vsrc[0] is model.vstats
    assert model.vstats[:, 0].tolist() == [3.0] * 18


def test_sums_and_single_vertex_updates_match_the_rows():
    _, _, model = _pixel_model(seed=2)
    rows = model.vstats
    C, B = model.n_channels, model.n_bins
    rng = np.random.default_rng(3)
    for vsrc in (model.vsrc, row_source(rows, C)):
        out = np.empty(model.n_stats)
        for _ in range(10):
            R = rng.choice(model.n_vertices, int(rng.integers(1, model.n_vertices)), replace=False)
            sum_stats(R, R.size, vsrc, C, B, out)
            np.testing.assert_allclose(out, rows[R].sum(axis=0), rtol=1e-12, atol=1e-12)
            acc = out.copy()
            for v in R[:5]:
                add_vertex(vsrc, v, -1.0, C, B, acc)
            np.testing.assert_allclose(acc, rows[R[5:]].sum(axis=0), rtol=1e-10, atol=1e-10)
        labels = rng.integers(0, 4, model.n_vertices)
        sums = label_sums(labels, vsrc, C, B, 6)
        ref = np.zeros_like(sums)
        np.add.at(ref, labels, rows)
        np.testing.assert_allclose(sums, ref, rtol=1e-12, atol=1e-12)


def test_pixel_model_energies_equal_the_row_model():
    """log π, new_state and delta/apply give the same numbers whether a
    pixel graph's statistics are kept as rows or made from the pixels."""
    img, atoms, model = _pixel_model(seed=4)
    rows_model = ImageModel(img, atoms, model.graph, bins=6, a0=3.0, a1=2.0, a2=0.5)
    rows_model.vsrc = row_source(rows_model.vstats, rows_model.n_channels)
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, model.n_vertices)
    assert model.log_target(labels) == pytest.approx(rows_model.log_target(labels), rel=1e-12)
    s1, s2 = model.new_state(labels), rows_model.new_state(labels)
    for _ in range(30):
        R = rng.choice(model.n_vertices, int(rng.integers(1, 6)), replace=False)
        new = int(rng.integers(0, 4))
        d1, d2 = model.delta(s1, R, new), rows_model.delta(s2, R, new)
        assert d1 == pytest.approx(d2, rel=1e-9, abs=1e-9)
        model.apply(s1, R, new, d1)
        rows_model.apply(s2, R, new, d2)
    assert s1.log_pi == pytest.approx(model.log_target(s1.labels), rel=1e-9)
    np.testing.assert_allclose(s1.stats, s2.stats, rtol=1e-9, atol=1e-9)
