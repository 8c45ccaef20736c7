"""Scores against several annotators: covering, one-to-one boundary matching, benchmark_scores."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from skimage.metrics import variation_of_information as sk_voi

from swcuts.evaluation.metrics.scores import benchmark_scores
from swcuts.evaluation.metrics.boundaries import (
    boundary_map, boundary_precision_recall, boundary_scores)
from swcuts.evaluation.metrics.regions import (
    mean_variation_of_information, probabilistic_rand_index, segmentation_covering)


def covering_reference(seg, truth):
    """Arbelaez's covering of ``truth`` by ``seg`` from explicit pixel sets."""
    s, t = np.ravel(seg), np.ravel(truth)
    total = 0.0
    for r in np.unique(t):
        R = set(np.flatnonzero(t == r))
        best = max(len(R & set(np.flatnonzero(s == q))) / len(R | set(np.flatnonzero(s == q)))
                   for q in np.unique(s))
        total += len(R) * best
    return total / s.size


def test_covering_hand_computed():
    seg = np.array([[0, 0, 1, 1],
                    [0, 0, 1, 1]])
    truth = np.array([[0, 0, 0, 1],
                      [0, 0, 0, 1]])
    # truth region 0 (6 px) best IoU with seg 0: 4/6; truth region 1 (2 px) with seg 1: 2/4.
    assert segmentation_covering(seg, [truth]) == pytest.approx((6 * 4 / 6 + 2 * 2 / 4) / 8)
    other = np.zeros_like(seg)  # one region: IoU with seg 0 or 1 is 4/8
    both = [truth, other]
    assert segmentation_covering(seg, both, reduce="mean") == pytest.approx((0.625 + 0.5) / 2)
    assert segmentation_covering(seg, both, reduce="best") == pytest.approx(0.625)
    assert segmentation_covering(seg, [seg]) == 1.0


def test_covering_matches_reference_and_ignores_label_names():
    rng = np.random.default_rng(4)
    for _ in range(20):
        seg = rng.integers(0, 4, size=(5, 6))
        truth = rng.integers(0, 3, size=(5, 6))
        assert segmentation_covering(seg, [truth]) == pytest.approx(covering_reference(seg, truth))
        assert segmentation_covering(7 - 2 * seg, [truth + 10]) == pytest.approx(
            segmentation_covering(seg, [truth]))


def test_pri_is_the_pooled_pair_probability():
    """Unnikrishnan's definition: mean over pairs of c p + (1 - c)(1 - p),
    p the fraction of truths putting the pair together."""
    rng = np.random.default_rng(1)
    seg = rng.integers(0, 3, size=(3, 4)).ravel()
    truths = [rng.integers(0, 3, size=(3, 4)).ravel() for _ in range(3)]
    vals = []
    for i, j in itertools.combinations(range(seg.size), 2):
        p = np.mean([t[i] == t[j] for t in truths])
        c = seg[i] == seg[j]
        vals.append(c * p + (1 - c) * (1 - p))
    assert probabilistic_rand_index(seg, truths) == pytest.approx(np.mean(vals))


def test_mean_voi_agrees_with_scikit_image():
    rng = np.random.default_rng(2)
    seg = rng.integers(0, 4, size=(16, 16))
    truths = [rng.integers(0, 3, size=(16, 16)) for _ in range(3)]
    # scikit-image returns (H(A|B), H(B|A)) in bits; swcuts' VoI is in nats.
    expected = np.mean([sum(sk_voi(t, seg)) for t in truths]) * math.log(2)
    assert mean_variation_of_information(seg, truths) == pytest.approx(expected, rel=1e-9)


def test_one_to_one_matching_counts_a_double_boundary_once():
    """Two seg boundaries next to one truth boundary: many-to-one matching
    gives precision 1, one-to-one matching 1/2."""
    truth = np.zeros((40, 40), int)
    truth[:, 20:] = 1
    seg = np.zeros((40, 40), int)
    seg[:, 20:] = 1
    seg[:, 21:] = 2  # a second boundary one pixel to the right
    assert boundary_precision_recall(seg, truth, tolerance=2)[0] == 1.0
    s = boundary_scores(seg, [truth], max_dist=2 / math.hypot(40, 40))
    assert s["bp"] == pytest.approx(0.5) and s["br"] == 1.0
    assert (s["match_p"], s["total_p"], s["match_r"], s["total_r"]) == (40, 80, 40, 40)


def test_tolerance_scales_with_the_diagonal():
    truth = np.zeros((100, 100), int)
    truth[:, 50:] = 1
    seg = np.zeros((100, 100), int)
    seg[:, 53:] = 1  # 3 px off; BSDS tolerance 0.0075 * 141 = 1.06 px
    assert boundary_scores(seg, [truth])["bf"] == 0.0
    assert boundary_scores(seg, [truth], max_dist=3 / math.hypot(100, 100))["bf"] == 1.0
    big_t = np.kron(truth, np.ones((4, 4), int))  # 400x400: 4.2 px tolerance, 12 px off
    big_s = np.kron(seg, np.ones((4, 4), int))
    assert boundary_scores(big_s, [big_t])["bf"] == 0.0


def test_matching_size_equals_networkx_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(10):
        seg = rng.integers(0, 3, size=(8, 9))
        truth = rng.integers(0, 2, size=(8, 9))
        max_dist = 1.5 / math.hypot(8, 9)
        ps = np.argwhere(boundary_map(seg))
        pt = np.argwhere(boundary_map(truth))
        g = nx.Graph()
        g.add_nodes_from(("s", i) for i in range(len(ps)))
        g.add_nodes_from(("t", j) for j in range(len(pt)))
        for i, j in itertools.product(range(len(ps)), range(len(pt))):
            if np.hypot(*(ps[i] - pt[j])) <= 1.5:
                g.add_edge(("s", i), ("t", j))
        size = len(nx.bipartite.maximum_matching(g, top_nodes=[("s", i) for i in range(len(ps))])) // 2
        s = boundary_scores(seg, [truth], max_dist=max_dist)
        assert s["match_p"] == s["match_r"] == size


def test_several_annotators_pool_as_bsds():
    truth = np.zeros((30, 30), int)
    truth[:, 15:] = 1
    other = truth.T.copy()
    s = boundary_scores(truth, [truth, other], max_dist=0.01)
    # precision: every seg pixel matches the first annotator; recall: 30 of 60 truth pixels.
    assert s["bp"] == 1.0 and (s["match_r"], s["total_r"]) == (30 + 1, 60)


def test_benchmark_scores_identical_and_errors():
    rng = np.random.default_rng(5)
    seg = rng.integers(0, 3, size=(12, 14))
    s = benchmark_scores(seg, [seg, seg + 5])
    assert s["pri"] == 1.0 and s["voi"] == 0.0 and s["covering"] == s["covering_best"] == 1.0
    assert s["bp"] == s["br"] == s["bf"] == 1.0 and s["n_segments"] == 3
    with pytest.raises(ValueError, match="same shape"):
        benchmark_scores(seg, [seg[:-1]])
    with pytest.raises(ValueError, match="empty"):
        benchmark_scores(seg, [])
