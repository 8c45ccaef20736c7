"""Calibration scores (swcuts.evaluation.calibration): the boundary-proximity
maps against loops over pixels, the ECE of calibrated and miscalibrated
predictions, and the spread-error correlation."""

import numpy as np
import pytest

from swcuts.evaluation.calibration import (annotator_proximity, boundary_proximity, coassignment_pairs,
                                           near_boundary, pooled_reliability, reliability, reliability_png,
                                           spread_error_correlation)
from swcuts.evaluation.metrics.boundaries import boundary_map


def _near_loop(labels, radius):
    b = np.argwhere(boundary_map(labels))
    out = np.zeros(labels.shape, dtype=bool)
    for r in range(labels.shape[0]):
        for c in range(labels.shape[1]):
            if b.size and (np.hypot(b[:, 0] - r, b[:, 1] - c) <= radius).any():
                out[r, c] = True
    return out


@pytest.mark.parametrize("radius", [0, 1, 2, 2.5])
def test_near_boundary_is_the_distance_to_the_nearest_boundary_pixel(radius):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=(7, 9)) // 2
    assert np.array_equal(near_boundary(labels, radius), _near_loop(labels, radius))
    assert not near_boundary(np.zeros((4, 4), dtype=int)).any()


def test_boundary_proximity_is_the_mean_over_samples():
    rng = np.random.default_rng(1)
    atoms = np.repeat(np.repeat(np.arange(12).reshape(3, 4), 3, axis=0), 2, axis=1)
    labels = rng.integers(0, 3, size=(9, 12))
    labels[3] = labels[2]  # repeated samples count every time
    p = boundary_proximity(labels, atoms)
    loop = np.mean([_near_loop(row[atoms], 2) for row in labels], axis=0)
    assert np.allclose(p, loop)
    truths = [row[atoms] for row in labels[:3]]
    assert np.allclose(annotator_proximity(truths), np.mean([_near_loop(t, 2) for t in truths], axis=0))


def test_calibrated_predictions_have_a_small_ece_and_biased_ones_do_not():
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, 20000)
    outcome = (rng.uniform(size=p.size) < p).astype(float)
    good = reliability(p, outcome)
    assert good["ece"] < 0.03 and good["count"].sum() == good["n"] == int((p >= 0.05).sum())
    bad = reliability(p, outcome * 0.5)
    mean_gap = 0.5 * p[p >= 0.05].mean()
    assert bad["ece"] == pytest.approx(mean_gap, abs=0.03)
    # Bins by hand: the pixel-weighted mean gap.
    keep = p >= 0.05
    idx = np.minimum((p[keep] * 10).astype(int), 9)
    gaps = [abs(p[keep][idx == b].mean() - outcome[keep][idx == b].mean()) * (idx == b).sum()
            for b in range(10) if (idx == b).any()]
    assert good["ece"] == pytest.approx(sum(gaps) / keep.sum())
    pooled = pooled_reliability([(p[:10000], outcome[:10000]), (p[10000:], outcome[10000:])])
    assert pooled["ece"] == pytest.approx(good["ece"])
    assert reliability_png(good, "t")[:4] == b"\x89PNG"


def test_coassignment_pairs_count_shared_segments_of_samples_and_annotators():
    # 6x8 pixels, each its own atom; two annotators: left/right halves and top/bottom.
    atoms = np.arange(48).reshape(6, 8)
    lr = (np.arange(8) >= 4)[None, :].repeat(6, 0).astype(int)
    tb = (np.arange(6) >= 3)[:, None].repeat(8, 1).astype(int)
    # Samples that are the annotators themselves, half each: p equals the truth exactly.
    samples = np.array([lr.ravel(), tb.ravel()] * 3)
    p, t = coassignment_pairs(samples, atoms, [lr, tb], n_pairs=3000, seed=1)
    np.testing.assert_array_equal(p, t)
    assert reliability(p, t, min_p=0)["ece"] == 0.0
    # By hand, pair by pair, with the same draws.
    rng = np.random.default_rng(1)
    i = rng.integers(0, 48, 3000)
    j = (i + rng.integers(1, 48, 3000)) % 48
    assert (i != j).all()
    want = ((lr.ravel()[i] == lr.ravel()[j]).astype(float) + (tb.ravel()[i] == tb.ravel()[j])) / 2
    np.testing.assert_array_equal(t, want)
    # Negative control: samples that join everything are far from the annotators.
    p1, t1 = coassignment_pairs(np.zeros((4, 48), int), atoms, [lr, tb], n_pairs=3000, seed=1)
    assert (p1 == 1).all() and reliability(p1, t1, min_p=0)["ece"] > 0.4
    with pytest.raises(ValueError):
        coassignment_pairs(samples, atoms, [lr[:, :4]])


def test_no_pixel_above_min_p_gives_nan():
    assert np.isnan(reliability([0.0, 0.01], [0.0, 1.0])["ece"])
    with pytest.raises(ValueError):
        reliability([0.1, 0.2], [0.1])


def test_spread_error_correlation():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=(10, 12, 2))
    err = rng.uniform(0, 2, size=(10, 12))
    ang = rng.uniform(0, 2 * np.pi, size=(10, 12))
    flow = truth + np.stack([err * np.cos(ang), err * np.sin(ang)], axis=-1)
    unknown = np.zeros((10, 12), dtype=bool)
    unknown[0] = True
    spread = err.copy()
    spread[0] = -5  # an unknown row: left out, or it would break the ranks
    r = spread_error_correlation(spread, flow, truth, unknown)
    assert r["spearman"] == pytest.approx(1.0) and r["n"] == 108
    r = spread_error_correlation(rng.uniform(size=(10, 12)), flow, truth)
    assert abs(r["spearman"]) < 0.3
    assert np.isnan(spread_error_correlation(np.zeros((10, 12)), flow, truth)["spearman"])
