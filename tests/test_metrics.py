import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from swcuts.evaluation.metrics.contingency import _contingency
from swcuts.evaluation.metrics.regions import (
    adjusted_rand_index, global_consistency_error, mean_variation_of_information,
    probabilistic_rand_index, rand_index, segmentation_covering, variation_of_information, snap_to_atoms)
from swcuts.evaluation.metrics.boundaries import (
    boundary_f_measure, boundary_map, boundary_precision_recall)
from swcuts.evaluation.metrics.scores import benchmark_scores, segmentation_scores

# ---------------------------------------------------------------------------
# Brute-force references
# ---------------------------------------------------------------------------


def rand_reference(seg, truth):
    """O(n^2) loop over all unordered pixel pairs."""
    s, t = np.ravel(seg), np.ravel(truth)
    n = s.size
    agree = total = 0
    for p, q in itertools.combinations(range(n), 2):
        total += 1
        agree += (s[p] == s[q]) == (t[p] == t[q])
    return 1.0 if total == 0 else agree / total


def ari_reference(seg, truth):
    """Hubert-Arabie ARI from pair counts over all unordered pairs."""
    s, t = np.ravel(seg), np.ravel(truth)
    both = in_s = in_t = total = 0
    for p, q in itertools.combinations(range(s.size), 2):
        total += 1
        in_s += s[p] == s[q]
        in_t += t[p] == t[q]
        both += (s[p] == s[q]) and (t[p] == t[q])
    expected = in_s * in_t / total if total else 0.0
    spread = (in_s + in_t) / 2 - expected
    return 1.0 if spread == 0 else (both - expected) / spread


def gce_reference(seg, truth):
    """Martin et al. GCE from the per-pixel definition, with explicit sets."""
    s, t = np.ravel(seg), np.ravel(truth)
    n = s.size

    def lre(s1, s2, p):
        r1 = set(np.flatnonzero(s1 == s1[p]))
        r2 = set(np.flatnonzero(s2 == s2[p]))
        return len(r1 - r2) / len(r1)

    e12 = sum(lre(s, t, p) for p in range(n))
    e21 = sum(lre(t, s, p) for p in range(n))
    return min(e12, e21) / n


def voi_reference(seg, truth):
    """H(A) + H(B) - 2 I(A;B) from explicit probability tables."""
    s, t = np.ravel(seg), np.ravel(truth)
    n = s.size
    la, lb = np.unique(s), np.unique(t)
    pa = np.array([np.mean(s == i) for i in la])
    pb = np.array([np.mean(t == j) for j in lb])
    pab = np.array([[np.mean((s == i) & (t == j)) for j in lb] for i in la])
    h = lambda p: -sum(x * math.log(x) for x in p.ravel() if x > 0)  # noqa: E731
    mi = sum(
        pab[i, j] * math.log(pab[i, j] / (pa[i] * pb[j]))
        for i in range(la.size)
        for j in range(lb.size)
        if pab[i, j] > 0
    )
    assert n > 0
    return h(pa) + h(pb) - 2 * mi


def boundary_reference(labels):
    """Pixel (r, c) is boundary iff it differs from (r, c+1) or (r+1, c)."""
    h, w = labels.shape
    out = np.zeros((h, w), dtype=bool)
    for r in range(h):
        for c in range(w):
            if c + 1 < w and labels[r, c] != labels[r, c + 1]:
                out[r, c] = True
            if r + 1 < h and labels[r, c] != labels[r + 1, c]:
                out[r, c] = True
    return out


def bf_reference(seg, truth, tol):
    bs, bt = boundary_reference(seg), boundary_reference(truth)
    ps, pt = np.argwhere(bs), np.argwhere(bt)
    if len(ps) == 0 and len(pt) == 0:
        return 1.0, 1.0, 1.0

    def matched(src, dst):
        if len(src) == 0:
            return 1.0
        if len(dst) == 0:
            return 0.0
        hits = [min(math.dist(p, q) for q in dst) <= tol for p in src]
        return sum(hits) / len(hits)

    p, r = matched(ps, pt), matched(pt, ps)
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


label_images = st.tuples(st.integers(1, 5), st.integers(1, 5)).flatmap(
    lambda shape: st.tuples(
        arrays(np.int64, shape, elements=st.integers(0, 3)),
        arrays(np.int64, shape, elements=st.integers(0, 3)),
    )
)


# ---------------------------------------------------------------------------
# Hand-computed values
# ---------------------------------------------------------------------------

# 2x2, seg splits rows, truth splits columns:
#   seg = [[0, 0],    truth = [[0, 1],
#          [1, 1]]             [0, 1]]
# pixels p0 p1 / p2 p3. Contingency table: every cell n_ij = 1, a = b = (2, 2).
SEG_2x2 = np.array([[0, 0], [1, 1]])
TRUTH_2x2 = np.array([[0, 1], [0, 1]])

# 1x4:
#   seg   = [0, 0, 1, 1]
#   truth = [0, 0, 0, 1]
# Contingency: n(0,0) = 2, n(1,0) = 1, n(1,1) = 1; a = (2, 2), b = (3, 1).
SEG_1x4 = np.array([[0, 0, 1, 1]])
TRUTH_1x4 = np.array([[0, 0, 0, 1]])


def test_rand_2x2_by_hand():
    # C(4,2) = 6 pairs. Same-in-seg pairs: (p0,p1), (p2,p3); same-in-truth
    # pairs: (p0,p2), (p1,p3); these four disagree. (p0,p3), (p1,p2) are apart
    # in both and agree. RI = 2/6.
    # Formula: 6 + 2*sum C(n_ij,2) - sum C(a,2) - sum C(b,2) = 6 + 0 - 2 - 2 = 2.
    assert rand_index(SEG_2x2, TRUTH_2x2) == pytest.approx(1 / 3)
    assert probabilistic_rand_index(SEG_2x2, TRUTH_2x2) == pytest.approx(1 / 3)


def test_rand_1x4_by_hand():
    # pairs: (0,1) together/together agree; (0,2) apart/together no;
    # (0,3) apart/apart agree; (1,2) apart/together no; (1,3) apart/apart
    # agree; (2,3) together/apart no. RI = 3/6.
    # Formula: 6 + 2*1 - (1+1) - (3+0) = 3.
    assert rand_index(SEG_1x4, TRUTH_1x4) == pytest.approx(0.5)


def test_voi_2x2_by_hand():
    # H(A) = H(B) = log 2; p_ij = 1/4 = p_i p_j so I = 0; VoI = 2 log 2.
    assert variation_of_information(SEG_2x2, TRUTH_2x2) == pytest.approx(2 * math.log(2))


def test_voi_1x4_by_hand():
    # H(A) = log 2
    # H(B) = -(3/4 log 3/4 + 1/4 log 1/4) = 2 log 2 - 3/4 log 3
    # H(A,B): p = (1/2, 1/4, 1/4) -> 3/2 log 2
    # I = H(A) + H(B) - H(A,B) = 3/2 log 2 - 3/4 log 3
    # VoI = H(A) + H(B) - 2I = 3 log 2 - 3/4 log 3 - 3 log 2 + 3/2 log 3 = 3/4 log 3
    assert variation_of_information(SEG_1x4, TRUTH_1x4) == pytest.approx(0.75 * math.log(3))


def test_gce_2x2_by_hand():
    # Every pixel: R(seg, p) has 2 pixels, shares only p with R(truth, p),
    # so LRE = 1/2 both ways. Sum = 4 * 1/2 = 2; GCE = 2/4.
    assert global_consistency_error(SEG_2x2, TRUTH_2x2) == pytest.approx(0.5)


def test_gce_1x4_by_hand():
    # LRE(seg, truth, p): p0, p1: {0,1} \ {0,1,2} = {} -> 0
    #                     p2: {2,3} \ {0,1,2} = {3} -> 1/2
    #                     p3: {2,3} \ {3} = {2}     -> 1/2      sum = 1
    # LRE(truth, seg, p): p0, p1: {0,1,2} \ {0,1} = {2} -> 1/3 each
    #                     p2: {0,1,2} \ {2,3} = {0,1}   -> 2/3
    #                     p3: {3} \ {2,3} = {}          -> 0    sum = 4/3
    # GCE = min(1, 4/3) / 4 = 1/4.
    assert global_consistency_error(SEG_1x4, TRUTH_1x4) == pytest.approx(0.25)


def test_boundary_map_2x2_by_hand():
    # seg: top row differs from the row below -> top row is boundary.
    # truth: left column differs from its right neighbour -> left column.
    np.testing.assert_array_equal(boundary_map(SEG_2x2), [[True, True], [False, False]])
    np.testing.assert_array_equal(boundary_map(TRUTH_2x2), [[True, False], [True, False]])


def test_bf_2x2_by_hand():
    # tol 0: seg boundary {(0,0),(0,1)}, truth boundary {(0,0),(1,0)};
    # one of two matches each way -> P = R = F = 1/2.
    assert boundary_precision_recall(SEG_2x2, TRUTH_2x2, 0) == pytest.approx((0.5, 0.5, 0.5))
    # tol 1: (0,1) and (1,0) are at distance 1 from (0,0) -> everything matches.
    assert boundary_precision_recall(SEG_2x2, TRUTH_2x2, 1) == pytest.approx((1, 1, 1))


def test_bf_1x4_by_hand():
    # seg boundary: pixel 1 (0 != 1 to its right); truth boundary: pixel 2.
    np.testing.assert_array_equal(boundary_map(SEG_1x4), [[False, True, False, False]])
    np.testing.assert_array_equal(boundary_map(TRUTH_1x4), [[False, False, True, False]])
    # Distance 1 apart: no match at tol 0 (F = 0, P + R = 0), full match at tol 1.
    assert boundary_precision_recall(SEG_1x4, TRUTH_1x4, 0) == (0.0, 0.0, 0.0)
    assert boundary_f_measure(SEG_1x4, TRUTH_1x4, tolerance=1) == 1.0
    # sqrt(2) > 1.4: diagonal neighbours need tolerance >= sqrt(2).
    seg = np.array([[0, 1], [1, 1]])  # boundary {(0,0)}
    truth = np.array([[1, 1], [1, 0]])  # boundary {(0,1), (1,0)}
    assert boundary_f_measure(seg, truth, tolerance=1) == 1.0
    seg = np.array([[0, 1, 1], [1, 1, 1], [1, 1, 1]])  # boundary {(0,0)}
    truth = np.array([[1, 1, 1], [1, 1, 1], [1, 1, 0]])  # boundary {(1,2), (2,1)}
    assert boundary_f_measure(seg, truth, tolerance=2) == 0.0  # dist sqrt(5)
    assert boundary_f_measure(seg, truth, tolerance=math.sqrt(5)) == 1.0


def test_bf_edge_cases():
    flat = np.zeros((3, 3), dtype=int)
    other = np.full((3, 3), 7)
    split = np.array([[0, 0, 1]] * 3)
    assert boundary_precision_recall(flat, other) == (1.0, 1.0, 1.0)
    assert boundary_f_measure(flat, other) == 1.0
    assert boundary_precision_recall(flat, split) == (1.0, 0.0, 0.0)
    assert boundary_precision_recall(split, flat) == (0.0, 1.0, 0.0)
    assert boundary_f_measure(flat, split) == 0.0
    assert boundary_f_measure(split, flat) == 0.0
    with pytest.raises(ValueError):
        boundary_f_measure(split, split, tolerance=-1)


def test_single_pixel():
    one = np.array([[5]])
    assert segmentation_scores(one, np.array([[2]])) == {
        "pri": 1.0,
        "voi": 0.0,
        "gce": 0.0,
        "bf": 1.0,
    }


# ---------------------------------------------------------------------------
# Structural properties
# ---------------------------------------------------------------------------


def _random_pair(rng, shape=(6, 7), k=4):
    return rng.integers(0, k, shape), rng.integers(0, k, shape)


@pytest.mark.parametrize("seed", range(5))
def test_identity(seed):
    seg, _ = _random_pair(np.random.default_rng(seed))
    scores = segmentation_scores(seg, seg.copy())
    assert scores["pri"] == 1.0
    assert scores["voi"] == 0.0
    assert scores["gce"] == 0.0
    assert scores["bf"] == 1.0
    assert probabilistic_rand_index(seg, [seg, seg]) == 1.0
    assert variation_of_information(seg, seg) == 0.0
    assert global_consistency_error(seg, seg) == 0.0
    assert boundary_f_measure(seg, seg, tolerance=0) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_label_permutation_invariance(seed):
    rng = np.random.default_rng(seed)
    seg, truth = _random_pair(rng)
    # map labels 0..3 to arbitrary, non-consecutive values, including 0
    names_s = np.array([0, 10**12, 3, 99])[rng.permutation(4)]
    names_t = np.array([7, 0, 123456, 1])[rng.permutation(4)]
    seg2, truth2 = names_s[seg], names_t[truth]
    base = segmentation_scores(seg, truth)
    moved = segmentation_scores(seg2, truth2)
    assert moved == pytest.approx(base, abs=1e-12)
    for tol in (0, 1, 1.5):
        assert boundary_precision_recall(seg2, truth2, tol) == pytest.approx(
            boundary_precision_recall(seg, truth, tol)
        )


@pytest.mark.parametrize("seed", range(10))
def test_symmetry(seed):
    seg, truth = _random_pair(np.random.default_rng(seed), k=3 + seed % 4)
    assert variation_of_information(seg, truth) == pytest.approx(
        variation_of_information(truth, seg), abs=1e-12
    )
    assert rand_index(seg, truth) == rand_index(truth, seg)
    assert global_consistency_error(seg, truth) == pytest.approx(
        global_consistency_error(truth, seg), abs=1e-12
    )
    p, r, f = boundary_precision_recall(seg, truth)
    assert boundary_precision_recall(truth, seg) == pytest.approx((r, p, f))


def test_gce_zero_for_refinement():
    truth = np.array([[0, 0, 1, 1], [0, 0, 1, 1]])
    seg = np.array([[0, 2, 1, 1], [0, 2, 3, 3]])  # refines truth
    assert global_consistency_error(seg, truth) == 0.0
    assert global_consistency_error(truth, seg) == 0.0
    assert variation_of_information(seg, truth) > 0


def test_pri_mean_over_truths():
    rng = np.random.default_rng(3)
    seg = rng.integers(0, 3, (4, 5))
    truths = [rng.integers(0, 3, (4, 5)) for _ in range(3)]
    expected = np.mean([rand_reference(seg, t) for t in truths])
    assert probabilistic_rand_index(seg, truths) == pytest.approx(expected)
    assert probabilistic_rand_index(seg, tuple(truths)) == pytest.approx(expected)
    assert probabilistic_rand_index(seg, np.stack(truths)) == pytest.approx(expected)
    assert probabilistic_rand_index(seg, truths[0]) == pytest.approx(rand_reference(seg, truths[0]))


def test_pri_from_pair_probabilities():
    # PRI as defined by Unnikrishnan et al.: mean over pairs of
    # c p + (1 - c)(1 - p), p = fraction of truths putting the pair together.
    rng = np.random.default_rng(11)
    seg = rng.integers(0, 3, (3, 4)).ravel()
    truths = [rng.integers(0, 3, (3, 4)).ravel() for _ in range(4)]
    vals = []
    for i, j in itertools.combinations(range(seg.size), 2):
        c = seg[i] == seg[j]
        p = np.mean([t[i] == t[j] for t in truths])
        vals.append(c * p + (1 - c) * (1 - p))
    assert probabilistic_rand_index(seg, truths) == pytest.approx(np.mean(vals))


# ---------------------------------------------------------------------------
# Brute-force comparisons
# ---------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, derandomize=True)
@given(label_images)
def test_rand_matches_pair_loop(pair):
    seg, truth = pair
    assert rand_index(seg, truth) == pytest.approx(rand_reference(seg, truth), abs=1e-12)
    assert probabilistic_rand_index(seg, [truth]) == pytest.approx(
        rand_reference(seg, truth), abs=1e-12
    )


@settings(max_examples=100, deadline=None, derandomize=True)
@given(label_images)
def test_ari_matches_pair_count_reference(pair):
    seg, truth = pair
    assert adjusted_rand_index(seg, truth) == pytest.approx(ari_reference(seg, truth), abs=1e-12)


def test_ari_by_hand():
    # 2x2: s(nij) = 0, s(a) = s(b) = 2, C(4,2) = 6: E = 2/3, M = 2,
    # ARI = (0 - 2/3) / (2 - 2/3) = -1/2.
    assert adjusted_rand_index(SEG_2x2, TRUTH_2x2) == pytest.approx(-0.5)
    assert adjusted_rand_index(SEG_2x2, SEG_2x2 + 7) == 1.0
    # 1x4: s(nij) = 1, s(a) = 2, s(b) = 3: E = 1, M = 5/2, ARI = 0.
    assert adjusted_rand_index(SEG_1x4, TRUTH_1x4) == pytest.approx(0.0)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(label_images)
def test_voi_matches_entropy_reference(pair):
    seg, truth = pair
    assert variation_of_information(seg, truth) == pytest.approx(
        voi_reference(seg, truth), abs=1e-12
    )


@pytest.mark.parametrize("seed", range(30))
def test_gce_matches_per_pixel_reference(seed):
    rng = np.random.default_rng(seed)
    k = 2 + seed % 5
    seg, truth = rng.integers(0, k, (5, 5)), rng.integers(0, k + 1, (5, 5))
    assert global_consistency_error(seg, truth) == pytest.approx(
        gce_reference(seg, truth), abs=1e-12
    )


@settings(max_examples=100, deadline=None, derandomize=True)
@given(label_images)
def test_gce_matches_per_pixel_reference_hypothesis(pair):
    seg, truth = pair
    assert global_consistency_error(seg, truth) == pytest.approx(
        gce_reference(seg, truth), abs=1e-12
    )


@settings(max_examples=100, deadline=None, derandomize=True)
@given(label_images, st.sampled_from([0, 1, 1.5, 2, 3]))
def test_boundaries_match_loop_reference(pair, tol):
    seg, truth = pair
    np.testing.assert_array_equal(boundary_map(seg), boundary_reference(seg))
    assert boundary_precision_recall(seg, truth, tol) == pytest.approx(
        bf_reference(seg, truth, tol)
    )


# ---------------------------------------------------------------------------
# Errors and output types
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        probabilistic_rand_index,
        rand_index,
        adjusted_rand_index,
        variation_of_information,
        global_consistency_error,
        boundary_f_measure,
        boundary_precision_recall,
        segmentation_scores,
    ],
)
def test_shape_mismatch_raises(fn):
    with pytest.raises(ValueError, match="shape"):
        fn(np.zeros((2, 2), int), np.zeros((1, 4), int))


def test_pri_input_errors():
    seg = np.zeros((2, 2), int)
    with pytest.raises(ValueError):
        probabilistic_rand_index(seg, [])
    with pytest.raises(ValueError, match="shape"):
        probabilistic_rand_index(seg, [seg, np.zeros((2, 3), int)])
    with pytest.raises(ValueError, match="shape"):
        probabilistic_rand_index(seg, np.zeros((3, 2, 3), int))


def test_bad_inputs():
    with pytest.raises(ValueError):
        variation_of_information(np.zeros((0, 3), int), np.zeros((0, 3), int))
    with pytest.raises(TypeError):
        rand_index(np.zeros((2, 2)), np.zeros((2, 2)))


def test_scores_dict():
    scores = segmentation_scores(SEG_1x4, TRUTH_1x4)
    assert set(scores) == {"pri", "voi", "gce", "bf"}
    assert all(isinstance(v, float) for v in scores.values())
    assert scores["pri"] == pytest.approx(0.5)
    assert scores["voi"] == pytest.approx(0.75 * math.log(3))
    assert scores["gce"] == pytest.approx(0.25)
    assert scores["bf"] == 1.0  # default tolerance 2


def test_large_image_runs_vectorised():
    rng = np.random.default_rng(0)
    seg = rng.integers(0, 50, (300, 400))
    truth = seg // 5
    scores = segmentation_scores(seg, truth)
    assert scores["gce"] == 0.0  # seg refines truth
    assert 0 < scores["pri"] < 1
    # VoI = H(seg | truth) here: each truth label splits into 5 ~equal parts
    assert scores["voi"] == pytest.approx(math.log(5), abs=0.01)


# ---------------------------------------------------------------------------
# Against scikit-image, on seeded random label images
# ---------------------------------------------------------------------------


def _random_label_images(seed, count=40):
    """(seg, truths) pairs of 1-D to 3-D label images with 1..12 labels."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        shape = tuple(int(s) for s in rng.integers(1, 25, size=rng.integers(1, 4)))
        ks, kt = rng.integers(1, 13, size=2)
        seg = rng.integers(0, ks, shape)
        yield seg, [rng.integers(0, kt, shape) for _ in range(int(rng.integers(1, 6)))]


def _renamed(labels, rng):
    """``labels`` (0..11) under arbitrary names, negative and huge ones included."""
    names = np.array([-7, 0, 10**12, 3, -2**40, 99, 5, 6, 8, 11, 13, 17])
    return rng.permutation(names)[labels]


@pytest.mark.parametrize("seed", range(3))
def test_voi_equals_scikit_image(seed):
    from skimage.metrics import variation_of_information as sk_voi

    rng = np.random.default_rng(100 + seed)
    for seg, truths in _random_label_images(seed):
        for truth in truths:
            # skimage: (H(truth | seg), H(seg | truth)) in bits; swcuts: their sum in nats
            expected = float(np.sum(sk_voi(truth, seg))) * math.log(2)
            assert variation_of_information(seg, truth) == pytest.approx(expected, rel=0, abs=1e-12)
            assert variation_of_information(truth, seg) == pytest.approx(expected, rel=0, abs=1e-12)
            got = variation_of_information(_renamed(seg, rng), _renamed(truth, rng))
            assert got == pytest.approx(expected, rel=0, abs=1e-12)
        expected = np.mean([np.sum(sk_voi(t, seg)) for t in truths]) * math.log(2)
        assert mean_variation_of_information(seg, truths) == pytest.approx(expected, rel=0, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_contingency_table_equals_scikit_image(seed):
    from skimage.metrics import contingency_table

    for seg, truths in _random_label_images(seed):
        truth = truths[0]
        # skimage indexes its table by the labels themselves: drop the empty rows / columns
        dense = contingency_table(seg, truth).toarray()
        dense = dense[np.unique(seg)][:, np.unique(truth)]
        # names in increasing order (negative and huge ones too) keep the rows' order
        sorted_names = np.array([-2**40, -7, 0, 3, 5, 6, 8, 11, 13, 17, 99, 10**12])
        t = _contingency(sorted_names[seg] if seed % 2 else seg, truth)
        ours = np.zeros((t.a.size, t.b.size))
        ours[t.row, t.col] = t.nij
        assert np.array_equal(ours, dense)
        assert np.array_equal(t.a, dense.sum(axis=1)) and np.array_equal(t.b, dense.sum(axis=0))
        assert t.n == seg.size


def _pair_counts_from_scikit_image(seg, truth):
    """(s(n_ij), s(a), s(b), C(n, 2)) with s(n_ij), the pairs together in both
    images, from skimage's adapted Rand precision ``s(n_ij) / s(truth sizes)``
    (no label ignored: skimage ignores label 0 of the truth by default)."""
    from skimage.metrics import adapted_rand_error

    pairs = lambda x: int(np.sum(x * (x - 1) // 2))  # noqa: E731
    sa = pairs(np.unique(seg, return_counts=True)[1])
    sb = pairs(np.unique(truth, return_counts=True)[1])
    _, precision, _ = adapted_rand_error(truth, seg, ignore_labels=())
    n = seg.size
    return precision * sb, sa, sb, n * (n - 1) // 2


@pytest.mark.parametrize("seed", range(3))
def test_rand_and_ari_agree_with_scikit_image_pair_counts(seed):
    for seg, truths in _random_label_images(300 + seed):
        truth = truths[0]
        if np.unique(truth).size == seg.size:  # no pair together in truth: skimage divides by 0
            continue
        both, sa, sb, total = _pair_counts_from_scikit_image(seg, truth)
        if total == 0:
            continue
        assert rand_index(seg, truth) == pytest.approx(
            (total + 2 * both - sa - sb) / total, rel=0, abs=1e-12)
        expected = sa * sb / total
        spread = 0.5 * (sa + sb) - expected
        if spread != 0:
            assert adjusted_rand_index(seg, truth) == pytest.approx(
                (both - expected) / spread, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_shared_tables_equal_the_metric_functions(seed):
    """benchmark_scores / segmentation_scores share one table per annotator;
    they give exactly what the metric functions give one at a time."""
    for seg, truths in _random_label_images(400 + seed, count=20):
        if seg.size > 2000:  # the boundary matching of noise images is slow; not under test here
            continue
        s = benchmark_scores(seg, truths, max_dist=0.05)
        assert s["pri"] == probabilistic_rand_index(seg, truths)
        assert s["voi"] == mean_variation_of_information(seg, truths)
        assert s["covering"] == segmentation_covering(seg, truths)
        assert s["covering_best"] == segmentation_covering(seg, truths, reduce="best")
        one = segmentation_scores(seg, truths[0])
        assert one["pri"] == rand_index(seg, truths[0])
        assert one["voi"] == variation_of_information(seg, truths[0])
        assert one["gce"] == global_consistency_error(seg, truths[0])


def test_snap_to_atoms_keeps_a_segmentation_the_atoms_refine_and_moves_the_rest_to_their_majority():
    rng = np.random.default_rng(0)
    atoms = np.arange(48).reshape(6, 8) // 2          # 24 atoms of two pixels
    coarse = rng.integers(0, 3, 24)[atoms] + 10       # constant on every atom
    np.testing.assert_array_equal(snap_to_atoms(coarse, atoms), coarse)
    noisy = coarse.copy()
    noisy[0, 0] = 99                                  # one pixel of a two-pixel atom: a tie
    assert snap_to_atoms(noisy, atoms)[0, 0] == min(99, coarse[0, 1])
    blocks = np.arange(48).reshape(6, 8) // 4         # atoms of four pixels
    noisy = coarse.copy()
    noisy[0, 0] = 99
    snapped = snap_to_atoms(noisy, blocks)
    assert 99 not in snapped                          # outvoted 3 to 1 (or 2-1-1)
    assert all(np.unique(snapped[blocks == b]).size == 1 for b in range(12))
