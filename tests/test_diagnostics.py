import math

import numpy as np
import pytest
from scipy.signal import lfilter

from swcuts.inference.diagnostics import (
    acceptance_by_move, autocorrelation, effective_sample_size, integrated_autocorrelation_time,
    r_hat, summarize_chain)
from swcuts.inference.partition_stats import (
    coassignment, edge_boundary_probability, largest_label_fraction, n_labels)


def ar1(phi, n, rng, chains=None):
    """Stationary AR(1) x_t = phi x_{t-1} + e_t (started from the stationary law)."""
    shape = (n,) if chains is None else (chains, n)
    e = rng.standard_normal(shape)
    e[..., 0] /= math.sqrt(1.0 - phi**2)
    return lfilter([1.0], [1.0, -phi], e, axis=-1)


# ---------------------------------------------------------------------------
# Autocorrelation
# ---------------------------------------------------------------------------


def test_autocorrelation_matches_direct_sum():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(57)
    xc = x - x.mean()
    direct = np.array([xc[: x.size - k] @ xc[k:] for k in range(x.size)]) / (xc @ xc)
    np.testing.assert_allclose(autocorrelation(x), direct, atol=1e-12)
    np.testing.assert_allclose(autocorrelation(x, max_lag=5), direct[:6], atol=1e-12)
    assert autocorrelation(x, max_lag=0).tolist() == [1.0]


def test_autocorrelation_of_ar1_is_geometric():
    rng = np.random.default_rng(1)
    rho = autocorrelation(ar1(0.7, 200_000, rng), max_lag=4)
    np.testing.assert_allclose(rho, 0.7 ** np.arange(5), atol=0.02)


def test_autocorrelation_accepts_integer_and_bool_series():
    x = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    np.testing.assert_allclose(autocorrelation(x), autocorrelation(x.astype(float)))
    np.testing.assert_allclose(autocorrelation(x.astype(bool)), autocorrelation(x.astype(float)))


def test_constant_series_gives_nan():
    x = np.full(100, 0.1)
    assert np.all(np.isnan(autocorrelation(x)))
    assert math.isnan(integrated_autocorrelation_time(x))
    assert math.isnan(effective_sample_size(x))
    assert math.isnan(effective_sample_size(np.full((3, 50), 2.0)))


# ---------------------------------------------------------------------------
# Autocorrelation time and ESS
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("phi", [0.5, 0.9])
def test_ar1_autocorrelation_time(phi):
    rng = np.random.default_rng(2)
    n = 200_000
    x = ar1(phi, n, rng)
    expected = (1 + phi) / (1 - phi)
    tau = integrated_autocorrelation_time(x)
    assert tau == pytest.approx(expected, rel=0.15)
    assert effective_sample_size(x) == pytest.approx(n / expected, rel=0.15)


def test_iid_series_tau_one_and_ess_n():
    rng = np.random.default_rng(3)
    n = 50_000
    x = rng.standard_normal(n)
    assert integrated_autocorrelation_time(x) == pytest.approx(1.0, abs=0.1)
    assert effective_sample_size(x) == pytest.approx(n, rel=0.1)


def test_multichain_ess_iid_and_ar1():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 20_000))
    assert effective_sample_size(x) == pytest.approx(x.size, rel=0.1)
    y = ar1(0.9, 50_000, rng, chains=4)
    assert integrated_autocorrelation_time(y) == pytest.approx(19.0, rel=0.15)
    assert effective_sample_size(y) == pytest.approx(y.size / 19.0, rel=0.15)


def test_single_chain_2d_equals_1d():
    rng = np.random.default_rng(5)
    x = ar1(0.5, 5_000, rng)
    assert integrated_autocorrelation_time(x[None, :]) == pytest.approx(
        integrated_autocorrelation_time(x), rel=1e-12
    )
    assert effective_sample_size(x[None, :]) == pytest.approx(effective_sample_size(x), rel=1e-12)


def test_multichain_ess_penalises_disagreeing_chains():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 2_000))
    shifted = x + np.array([0.0, 0.0, 3.0, 3.0])[:, None]
    assert effective_sample_size(shifted) < 0.1 * effective_sample_size(x)
    # each chain constant but chains disagree: almost no information
    stuck = np.repeat(np.array([[0.0], [1.0]]), 100, axis=1)
    assert effective_sample_size(stuck) < 2.0


def test_antithetic_series_ess_capped():
    x = np.tile([1.0, -1.0], 500)
    tau = integrated_autocorrelation_time(x)
    assert tau == pytest.approx(1.0 / math.log10(x.size))
    assert effective_sample_size(x) <= x.size * math.log10(x.size) + 1e-9


# ---------------------------------------------------------------------------
# R-hat
# ---------------------------------------------------------------------------


def test_rhat_same_distribution_near_one():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 5_000))
    assert r_hat(x) == pytest.approx(1.0, abs=0.01)
    assert r_hat(ar1(0.5, 20_000, rng, chains=4)) == pytest.approx(1.0, abs=0.02)


def test_rhat_different_means_large():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 1_000)) + np.array([0.0, 0.0, 2.0, 2.0])[:, None]
    assert r_hat(x) > 1.1


def test_split_rhat_detects_drift_in_one_chain():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 2_000)) + np.linspace(0.0, 5.0, 2_000)
    assert r_hat(x) > 1.1


def test_rhat_matches_hand_computation():
    x = np.array([[1.0, 2.0, 3.0, 4.0, 9.0], [2.0, 0.0, 1.0, 5.0, 3.0]])
    seqs = np.array([[1.0, 2.0], [2.0, 0.0], [4.0, 9.0], [5.0, 3.0]])  # middle draw dropped
    n = 2
    w = seqs.var(axis=1, ddof=1).mean()
    b_over_n = seqs.mean(axis=1).var(ddof=1)
    assert r_hat(x) == pytest.approx(math.sqrt(((n - 1) / n * w + b_over_n) / w))


def test_rhat_constant_chains():
    assert math.isnan(r_hat(np.ones((3, 10))))
    assert r_hat(np.array([[0.0] * 10, [1.0] * 10])) == math.inf


# ---------------------------------------------------------------------------
# Against ArviZ (test extra): ESS = arviz.ess(method="identity"),
# R-hat = arviz.rhat(method="split"), to 1e-8 on the same seeded draws
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def az():
    """ArviZ, imported by the tests that use it only (about 1.6 s)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # its notice of a coming refactor
        return pytest.importorskip("arviz")


def _held(rng, shape, hold):
    """0/1 draws that repeat the previous one with probability ``hold``:
    an indicator chain like a co-assignment trace."""
    fresh = rng.integers(0, 2, size=shape).astype(float)
    keep = rng.random(shape) < hold
    keep[:, 0] = False
    idx = np.where(keep, 0, np.arange(shape[1]))
    return np.take_along_axis(fresh, np.maximum.accumulate(idx, axis=1), axis=1)


ARVIZ_CASES = {
    "iid 4x1000": lambda rng: rng.standard_normal((4, 1000)),
    "ar1 0.5 4x2000": lambda rng: ar1(0.5, 2000, rng, chains=4),
    "ar1 0.9 4x2000": lambda rng: ar1(0.9, 2000, rng, chains=4),
    "ar1 0.99 3x1001": lambda rng: ar1(0.99, 1001, rng, chains=3),
    "ar1 -0.6 4x999": lambda rng: ar1(-0.6, 999, rng, chains=4),
    "ar1 0.9 one chain": lambda rng: ar1(0.9, 3000, rng)[None, :],
    "held indicators 4x500": lambda rng: _held(rng, (4, 500), 0.8),
    # not mixing: chains that disagree, random walks, chains stuck at their starts
    "shifted 4x500": lambda rng: rng.standard_normal((4, 500)) + np.array([0, 0, 3, 3])[:, None],
    "random walks 3x300": lambda rng: np.cumsum(rng.standard_normal((3, 300)), axis=1),
    "stuck 3x50": lambda rng: np.repeat(rng.standard_normal((3, 1)), 50, axis=1)
    + 1e-3 * rng.standard_normal((3, 50)),
    # short chains: Stan's pair loop stops at lag n - 2
    "short 2x7": lambda rng: rng.standard_normal((2, 7)),
    "short random walks 3x6": lambda rng: np.cumsum(rng.standard_normal((3, 6)), axis=1),
    "short 5x4": lambda rng: rng.standard_normal((5, 4)),
}


@pytest.mark.parametrize("case", sorted(ARVIZ_CASES))
@pytest.mark.parametrize("seed", range(3))
def test_ess_and_tau_equal_arviz_identity(az, case, seed):
    x = ARVIZ_CASES[case](np.random.default_rng(1000 + seed))
    expected = az.ess(x, method="identity")
    assert effective_sample_size(x) == pytest.approx(expected, rel=1e-8)
    assert integrated_autocorrelation_time(x) == pytest.approx(x.size / expected, rel=1e-8)
    if x.shape[0] == 1:  # a 1-D series is one chain
        assert effective_sample_size(x[0]) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("case", sorted(c for c in ARVIZ_CASES if "one chain" not in c))
@pytest.mark.parametrize("seed", range(3))
def test_rhat_equals_arviz_split(az, case, seed):
    x = ARVIZ_CASES[case](np.random.default_rng(2000 + seed))
    assert r_hat(x) == pytest.approx(az.rhat(x, method="split"), rel=1e-8)


def test_rhat_of_one_chain_compares_its_halves_as_arviz_would(az):
    x = ar1(0.9, 3001, np.random.default_rng(3))  # odd: the middle draw is dropped
    halves = np.stack([x[:1500], x[-1500:]])
    assert r_hat(x[None, :]) == pytest.approx(az.rhat(halves, method="identity"), rel=1e-8)
    drifting = x + np.linspace(0.0, 20.0, x.size)
    halves = np.stack([drifting[:1500], drifting[-1500:]])
    assert r_hat(drifting[None, :]) == pytest.approx(az.rhat(halves, method="identity"), rel=1e-8)
    assert r_hat(drifting[None, :]) > 1.1


def test_non_mixing_chains_flagged_like_arviz(az):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 1000)) + np.array([0.0, 0.0, 1.0, 1.0])[:, None]
    assert r_hat(x) > 1.1 and az.rhat(x, method="split") > 1.1
    assert effective_sample_size(x) < 0.1 * x.size
    assert effective_sample_size(x) == pytest.approx(az.ess(x, method="identity"), rel=1e-8)


def test_documented_differences_from_arviz(az):
    """Constant draws: nan here, the draw count in ArviZ; fewer than 10 draws
    in all: tau floored at 1 here (ESS <= N), at 1 / log10 N > 1 in ArviZ."""
    flat = np.full((2, 20), 0.5)
    assert math.isnan(effective_sample_size(flat)) and az.ess(flat, method="identity") == 40
    anti = np.array([[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, -1.0, 1.0]])  # tau hits the floor
    assert effective_sample_size(anti) == 8.0
    assert az.ess(anti, method="identity") == pytest.approx(8 * math.log10(8))


# ---------------------------------------------------------------------------
# Label-invariant statistics
# ---------------------------------------------------------------------------

SAMPLES = np.array(
    [
        [0, 0, 1, 1, 2],
        [5, 5, 5, 5, 5],
        [3, 1, 3, 1, 3],
        [0, 1, 2, 3, 4],
    ]
)
PAIRS = [(0, 1), (0, 2), (1, 3), (2, 4)]


def relabel_each_draw(samples, rng):
    """Rename the labels of every draw by its own random injective map to odd names."""
    out = np.empty_like(samples, dtype=np.int64)
    for t, row in enumerate(samples):
        uniq, inv = np.unique(row, return_inverse=True)
        names = rng.choice(np.arange(-1000, 1000), size=uniq.size, replace=False) * 7 + 10**9
        out[t] = names[inv]
    return out


def test_statistics_on_hand_made_labels():
    assert n_labels(SAMPLES).tolist() == [3, 1, 2, 5]
    np.testing.assert_allclose(largest_label_fraction(SAMPLES), [0.4, 1.0, 0.6, 0.2])
    c = coassignment(SAMPLES, PAIRS)
    assert c.shape == (4, 4)
    assert c.tolist() == [
        [1, 0, 0, 0],
        [1, 1, 1, 1],
        [0, 1, 1, 1],
        [0, 0, 0, 0],
    ]
    np.testing.assert_allclose(edge_boundary_probability(SAMPLES, PAIRS), [0.5, 0.5, 0.5, 0.5])
    np.testing.assert_allclose(
        edge_boundary_probability(SAMPLES, [(2, 3), (3, 4)]), [0.5, 0.75]
    )


def test_statistics_invariant_under_relabelling():
    rng = np.random.default_rng(10)
    samples = rng.integers(0, 4, size=(200, 30))
    relabelled = relabel_each_draw(samples, rng)
    pairs = rng.integers(0, 30, size=(25, 2))
    np.testing.assert_array_equal(n_labels(samples), n_labels(relabelled))
    np.testing.assert_array_equal(largest_label_fraction(samples), largest_label_fraction(relabelled))
    np.testing.assert_array_equal(coassignment(samples, pairs), coassignment(relabelled, pairs))
    np.testing.assert_array_equal(
        edge_boundary_probability(samples, pairs), edge_boundary_probability(relabelled, pairs)
    )
    a, b = summarize_chain(samples, pairs), summarize_chain(relabelled, pairs)
    assert repr(a) == repr(b)  # repr: nan entries compare equal


def test_statistics_match_per_row_reference():
    rng = np.random.default_rng(11)
    samples = rng.integers(-3, 3, size=(50, 12)).astype(np.int16)
    for t, row in enumerate(samples):
        _, counts = np.unique(row, return_counts=True)
        assert n_labels(samples)[t] == counts.size
        assert largest_label_fraction(samples)[t] == counts.max() / row.size


def test_empty_pairs_and_self_pairs():
    assert coassignment(SAMPLES, []).shape == (4, 0)
    assert edge_boundary_probability(SAMPLES, np.zeros((0, 2), int)).shape == (0,)
    assert coassignment(SAMPLES, [(2, 2)]).ravel().tolist() == [1, 1, 1, 1]


# ---------------------------------------------------------------------------
# Acceptance and summaries
# ---------------------------------------------------------------------------


def test_acceptance_by_move():
    rates = acceptance_by_move(["swc", "gibbs", "swc", "swc", "gibbs"], [1, 0, 0, True, False])
    assert rates == {"swc": pytest.approx(2 / 3), "gibbs": 0.0}
    assert list(rates) == ["swc", "gibbs"]
    assert acceptance_by_move([], []) == {}
    assert acceptance_by_move(np.array(["a", "a"]), np.array([True, True])) == {"a": 1.0}


def lazy_partition_chain(n, hold, n_items, n_values, rng):
    """Each draw keeps the previous labels with probability ``hold``, else draws
    fresh iid labels; every statistic then has rho_k = hold**k."""
    fresh = rng.integers(0, n_values, size=(n, n_items))
    keep = rng.random(n) < hold
    keep[0] = False
    source = np.maximum.accumulate(np.where(keep, 0, np.arange(n)))
    return fresh[source]


def test_summarize_chain():
    rng = np.random.default_rng(12)
    n = 50_000
    samples = lazy_partition_chain(n, 0.8, 6, 3, rng)
    s = summarize_chain(samples, pairs=[(0, 1), (2, 5)])
    assert s["n_draws"] == n
    for entry in [s["n_labels"], s["largest_label_fraction"], *s["coassignment"]]:
        assert set(entry) == {"mean", "tau", "ess"} | ({"pair"} if "pair" in entry else set())
        # holding with probability 0.8: tau = (1 + 0.8) / (1 - 0.8) = 9
        assert entry["tau"] == pytest.approx(9.0, rel=0.25)
        assert entry["ess"] == pytest.approx(n / entry["tau"])
    assert [e["pair"] for e in s["coassignment"]] == [(0, 1), (2, 5)]
    assert s["coassignment"][0]["mean"] == pytest.approx(1 / 3, abs=0.03)
    assert s["n_labels"]["mean"] == pytest.approx(np.mean(n_labels(samples)))
    assert summarize_chain(samples)["coassignment"] == []


def test_summarize_chain_constant_statistic_is_nan():
    samples = np.array([[0, 0, 1], [4, 4, 2], [7, 7, 7], [1, 1, 3]])
    s = summarize_chain(samples, pairs=[(0, 1)])
    assert s["coassignment"][0]["mean"] == 1.0
    assert math.isnan(s["coassignment"][0]["tau"]) and math.isnan(s["coassignment"][0]["ess"])
    one = summarize_chain(samples[:1])
    assert one["n_labels"]["mean"] == 2 and math.isnan(one["n_labels"]["ess"])


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: autocorrelation([1.0]),
        lambda: autocorrelation([]),
        lambda: autocorrelation(np.ones((3, 3))),
        lambda: autocorrelation([1.0, np.nan, 2.0]),
        lambda: autocorrelation([1.0, np.inf, 2.0]),
        lambda: autocorrelation(["a", "b"]),
        lambda: autocorrelation([1.0, 2.0, 3.0], max_lag=3),
        lambda: autocorrelation([1.0, 2.0, 3.0], max_lag=-1),
        lambda: autocorrelation([1.0, 2.0, 3.0], max_lag=1.5),
        lambda: autocorrelation([1.0, 2.0, 3.0], max_lag=True),
        lambda: integrated_autocorrelation_time(np.ones((2, 2, 2))),
        lambda: integrated_autocorrelation_time(np.ones((3, 1))),
        lambda: effective_sample_size([[1.0, np.nan], [1.0, 2.0]]),
        lambda: effective_sample_size([1.0 + 1j, 2.0]),
        lambda: r_hat([1.0, 2.0, 3.0, 4.0]),
        lambda: r_hat(np.ones((2, 3))),
        lambda: r_hat(np.empty((0, 10))),
        lambda: n_labels([0, 1, 2]),
        lambda: n_labels(np.empty((0, 3), int)),
        lambda: n_labels(np.empty((3, 0), int)),
        lambda: largest_label_fraction([[0.0, 1.0]]),
        lambda: coassignment(SAMPLES, [(0, 5)]),
        lambda: coassignment(SAMPLES, [(-1, 2)]),
        lambda: coassignment(SAMPLES, [0, 1]),
        lambda: coassignment(SAMPLES, [(0, 1, 2)]),
        lambda: coassignment(SAMPLES, [(0.0, 1.0)]),
        lambda: edge_boundary_probability(SAMPLES, [(0, 99)]),
        lambda: acceptance_by_move(["a", "b"], [True]),
        lambda: acceptance_by_move(["a", "b"], [1, 2]),
        lambda: acceptance_by_move(["a"], [np.nan]),
        lambda: acceptance_by_move(["a"], [[1]]),
        lambda: acceptance_by_move([["a"]], [1]),
        lambda: acceptance_by_move(3, [1]),
        lambda: summarize_chain(SAMPLES, pairs=[(0, 7)]),
        lambda: summarize_chain(SAMPLES.astype(float)),
    ],
)
def test_bad_input_raises_one_line_value_error(call):
    with pytest.raises(ValueError) as info:
        call()
    assert "\n" not in str(info.value)
