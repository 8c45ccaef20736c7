"""MCMC diagnostics for partition samplers.

Two kinds of tools live here.

*Scalar-series diagnostics*: the normalised autocorrelation of a series
(:func:`autocorrelation`), its integrated autocorrelation time
(:func:`integrated_autocorrelation_time`), the effective sample size
(:func:`effective_sample_size`, one chain or several) and the split
Gelman-Rubin potential scale reduction (:func:`r_hat`).

*Label-invariant statistics of partitions*. A draw of a partition is a label
vector ``x`` of length ``n_items``; labels are names only, so the raw label
values carry no information and their traces are meaningless to diagnose
(a sampler that merely renames labels would look like it mixes perfectly).
The statistics here depend on the partition only, not on the names:
the number of labels (:func:`n_labels`), the fraction of items in the
largest label (:func:`largest_label_fraction`), pairwise co-assignment
indicators ``[x_i == x_j]`` (:func:`coassignment`) and per-edge boundary
probabilities ``P(x_i != x_j)`` (:func:`edge_boundary_probability`).
:func:`summarize_chain` runs the scalar diagnostics on these statistics, and
:func:`acceptance_by_move` tabulates Metropolis-Hastings acceptance rates.

Conventions
-----------
* Autocorrelations use the biased (divisor ``n``) autocovariance estimator,
  computed by FFT in O(n log n); it is positive semi-definite, so
  ``|rho_k| <= 1``.
* The integrated autocorrelation time uses Geyer's *initial monotone
  sequence* estimator [1]_: the sum ``1 + 2 sum_k rho_k`` is truncated where
  the estimates reach (about) zero, detected on sums of adjacent pairs
  ``Gamma_m = rho_{2m} + rho_{2m+1}``, which are positive for any reversible
  chain; the sum stops before the first non-positive ``Gamma_m``, and the
  kept ``Gamma_m`` are made non-increasing. This is much less noisy than
  stopping at the first ``rho_k <= 0``.
* The autocorrelation time and effective sample size are Stan's, step for
  step as ArviZ computes them: :func:`effective_sample_size` equals
  ``arviz.ess(x, method="identity")`` (no splitting, no rank
  normalisation) and :func:`r_hat` equals ``arviz.rhat(x, method="split")``
  (BDA3's split-R-hat, not ArviZ's default rank-normalised ``"rank"``);
  ``tests/test_diagnostics.py`` checks both to 1e-8. They differ from ArviZ
  only where ArviZ has no answer or a degenerate one: see the functions'
  Notes.
* A series whose values are all equal has no defined autocorrelation (its
  variance is 0, so ``rho_k = 0/0``). Such a series gives ``nan``
  autocorrelations, ``nan`` autocorrelation time and ``nan`` effective sample
  size, on purpose: from the draws alone one cannot tell a chain that never
  moved (effective sample size ~ 1) from a statistic that is constant under
  the target (any sample size is "effective"), and neither 1 nor ``n`` would
  be an honest answer. ``nan`` propagates, so summaries show the problem.
* Bad input (wrong shape, too few values, NaN/inf, non-integer labels,
  out-of-range indices) raises ``ValueError`` with a one-line message.

References
----------
.. [1] C. J. Geyer, "Practical Markov chain Monte Carlo", Statistical
   Science 7(4), 1992.
.. [2] A. Gelman, J. B. Carlin, H. S. Stern, D. B. Dunson, A. Vehtari,
   D. B. Rubin, "Bayesian Data Analysis", 3rd ed., CRC Press, 2013, sec. 11.4-11.5.
.. [3] A. Vehtari, A. Gelman, D. Simpson, B. Carpenter, P.-C. Buerkner,
   "Rank-normalization, folding, and localization: an improved R-hat for
   assessing convergence of MCMC", Bayesian Analysis 16(2), 2021.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import fft as sp_fft

from swcuts.inference.partition_stats import (
    _as_pairs, _as_samples, coassignment, edge_boundary_probability, largest_label_fraction,
    n_labels)

__all__ = [
    "autocorrelation",
    "integrated_autocorrelation_time",
    "effective_sample_size",
    "r_hat",
    "n_labels",
    "largest_label_fraction",
    "coassignment",
    "edge_boundary_probability",
    "acceptance_by_move",
    "summarize_chain",
]


# ---------------------------------------------------------------------------
# Input checking
# ---------------------------------------------------------------------------


def _as_real(x, name: str) -> np.ndarray:
    """``x`` as a float64 array; rejects non-numeric dtypes and NaN/inf."""
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"{name} must be an array of real numbers ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _as_series(x, name: str = "x") -> np.ndarray:
    arr = _as_real(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D series, got an array of shape {arr.shape}")
    if arr.size < 2:
        raise ValueError(f"{name} must have at least 2 values, got {arr.size}")
    return arr


def _as_chains(x, name: str, min_draws: int) -> np.ndarray:
    arr = _as_real(x, name)
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (chains x draws), got an array of shape {arr.shape}"
        )
    if arr.shape[0] < 1 or arr.shape[1] < min_draws:
        raise ValueError(
            f"{name} needs at least 1 chain of at least {min_draws} draws, got shape {arr.shape}"
        )
    return arr


def _is_constant(arr: np.ndarray) -> bool:
    """True if every value is equal (exact test; no rounding from centring)."""
    return bool(np.all(arr == arr.flat[0]))


# ---------------------------------------------------------------------------
# Autocorrelation, autocorrelation time, ESS, R-hat
# ---------------------------------------------------------------------------


def _autocovariance(x: np.ndarray) -> np.ndarray:
    """Biased autocovariances (divisor n) along the last axis, lags 0..n-1, via FFT."""
    n = x.shape[-1]
    xc = x - x.mean(axis=-1, keepdims=True)
    nfft = sp_fft.next_fast_len(2 * n, real=True)  # zero-pad: no circular wrap-around
    f = sp_fft.rfft(xc, n=nfft, axis=-1)
    acov = sp_fft.irfft(f * np.conj(f), n=nfft, axis=-1)[..., :n]
    return acov / n


def autocorrelation(x, max_lag=None) -> np.ndarray:
    """Normalised autocorrelation of a 1-D series, computed by FFT.

    Parameters
    ----------
    x : array_like, shape (n,)
        Real series with at least 2 finite values.
    max_lag : int, optional
        Largest lag returned, ``0 <= max_lag <= n - 1``. Defaults to ``n - 1``.

    Returns
    -------
    rho : ndarray of float64, shape (max_lag + 1,)
        ``rho[k] = c_k / c_0`` with the biased autocovariance
        ``c_k = (1/n) sum_{t<n-k} (x_t - xbar)(x_{t+k} - xbar)``; ``rho[0] = 1``
        and ``|rho[k]| <= 1``. All ``nan`` if every value of ``x`` is equal
        (the variance is 0; see the module notes).

    Raises
    ------
    ValueError
        If ``x`` is not a 1-D real series of at least 2 finite values, or
        ``max_lag`` is not an integer in ``0..n-1``.

    Examples
    --------
    >>> autocorrelation([1.0, 2.0, 1.0, 2.0], max_lag=2)  # alternating: -0.75, then 0.5
    array([ 1.  , -0.75,  0.5 ])
    """
    x = _as_series(x)
    n = x.size
    if max_lag is None:
        max_lag = n - 1
    elif isinstance(max_lag, (bool, np.bool_)) or not isinstance(max_lag, numbers.Integral):
        raise ValueError(f"max_lag must be an integer, got {max_lag!r}")
    elif not 0 <= max_lag <= n - 1:
        raise ValueError(f"max_lag must be in 0..{n - 1}, got {max_lag}")
    max_lag = int(max_lag)
    if _is_constant(x):
        return np.full(max_lag + 1, np.nan)
    acov = _autocovariance(x)
    return acov[: max_lag + 1] / acov[0]


def _tau_floor(n_total: int) -> float:
    """Smallest autocorrelation time allowed: caps ESS at max(n, n log10 n), as Stan does."""
    return 1.0 if n_total < 10 else 1.0 / math.log10(n_total)


def _geyer_tau(rho: np.ndarray, n_total: int) -> float:
    """Geyer's initial monotone sequence estimate of ``1 + 2 sum_{k>=1} rho_k``,
    step for step as Stan and ArviZ compute it (see
    :func:`integrated_autocorrelation_time`)."""
    last = max((rho.size - 3) // 2, 0)  # the pairs examined reach lag n - 2 at most
    gamma = rho[0 : 2 * last + 1 : 2] + rho[1 : 2 * last + 2 : 2]
    nonpos = np.flatnonzero(gamma <= 0.0)
    stop = int(nonpos[0]) if nonpos.size else last
    kept = np.minimum.accumulate(gamma[:stop])  # initial monotone sequence
    # Stan's "improved estimate": the stopping pair's first term is added,
    # unless that pair is negative and the term not positive
    even = float(rho[2 * stop])
    tail = even if (even > 0.0 or gamma[stop] >= 0.0) else 0.0
    tau = -1.0 + 2.0 * float(kept.sum()) + tail
    return max(tau, _tau_floor(n_total))


def _combined_rho(chains: np.ndarray) -> np.ndarray:
    """Multi-chain autocorrelation estimate of Stan / ArviZ (see effective_sample_size)."""
    m, n = chains.shape
    mean_acov = _autocovariance(chains).mean(axis=0)  # divisor n, averaged over chains
    w = mean_acov[0] * n / (n - 1)  # within-chain variance, divisor n - 1
    var_plus = w * (n - 1) / n
    if m > 1:
        var_plus += chains.mean(axis=1).var(ddof=1)  # + B / n
    rho = 1.0 - (w - mean_acov) / var_plus
    rho[0] = 1.0
    return rho


def integrated_autocorrelation_time(x) -> float:
    """Integrated autocorrelation time ``tau = 1 + 2 sum_{k>=1} rho_k``.

    The autocorrelations ``rho_k`` are Stan's estimates described in
    :func:`effective_sample_size`; for one series of length ``n`` they are
    ``rho_k = c_k / c_0 - 1 / (n - 1)`` for ``k >= 1`` (``c_k`` the biased
    autocovariance of :func:`autocorrelation`, ``c_0 n / (n - 1)`` the
    unbiased variance). The infinite sum is truncated where they reach
    about zero, by Geyer's initial monotone sequence rule [1]_ as Stan and
    ArviZ apply it: with ``Gamma_m = rho_{2m} + rho_{2m+1}`` examined for
    ``2m + 1 <= n - 2`` and ``M`` the first ``m`` with ``Gamma_M <= 0`` (or
    the last examined), each ``Gamma_m`` with ``m < M`` is replaced by
    ``min(Gamma_0, ..., Gamma_m)`` and
    ``tau = -1 + 2 sum_{m<M} Gamma_m + rho_{2M}``, the last term left out
    when ``Gamma_M < 0`` and ``rho_{2M} <= 0``.
    The result is floored at ``1 / log10(N)`` for ``N >= 10`` total draws and
    at 1 below that (so an ESS never exceeds ``max(N, N log10 N)``, as in Stan).

    Parameters
    ----------
    x : array_like, shape (n,) or (chains, n)
        One series, or several chains of equal length (rows). One series is
        one chain: ``x`` and ``x[None, :]`` give the same ``tau``.

    Returns
    -------
    tau : float
        The autocorrelation time in units of draws: about 1 for independent
        draws, ``(1 + phi) / (1 - phi)`` for an AR(1) series. ``nan`` if every
        value is equal (see the module notes). It is ``N / ESS`` with
        :func:`effective_sample_size`.

    Raises
    ------
    ValueError
        If ``x`` is not 1-D or 2-D, has fewer than 2 draws (per chain), or
        contains NaN/inf.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.zeros(4000)
    >>> for t in range(1, x.size):  # AR(1) with phi = 0.5: tau = (1 + phi) / (1 - phi) = 3
    ...     x[t] = 0.5 * x[t - 1] + rng.standard_normal()
    >>> 2.5 < integrated_autocorrelation_time(x) < 3.5
    True
    """
    arr = _as_real(x, "x")
    if arr.ndim == 1:
        arr = _as_series(arr)
        if _is_constant(arr):
            return math.nan
        return _geyer_tau(_combined_rho(arr[None, :]), arr.size)
    if arr.ndim == 2:
        arr = _as_chains(arr, "x", min_draws=2)
        if _is_constant(arr):
            return math.nan
        return _geyer_tau(_combined_rho(arr), arr.size)
    raise ValueError(f"x must be a 1-D series or a 2-D array (chains x draws), got shape {arr.shape}")


def effective_sample_size(x) -> float:
    """Effective sample size ``N / tau`` of one series or several chains.

    This is Stan's effective sample size [2]_, without splitting the chains
    or rank normalisation: ``arviz.ess(x, method="identity")``. For ``m``
    chains of ``n`` draws, with the biased within-chain autocovariances
    ``c_{k,j}`` and their average ``cbar_k`` over chains, ``W = cbar_0 n /
    (n - 1)`` the within-chain variance and ``B/n`` the variance (divisor
    ``m - 1``) of the chain means, ``var_plus = (n - 1)/n W + B/n`` and
    ``rho_k = 1 - (W - cbar_k) / var_plus`` (``rho_0 = 1``); ``tau`` follows
    by Geyer's rule (:func:`integrated_autocorrelation_time`) and
    ``ESS = m n / tau``. Chains that disagree in location inflate
    ``var_plus`` and hence ``rho_k``, lowering the ESS -- unlike averaging
    per-chain ``tau``. A 1-D series is one chain.

    Parameters
    ----------
    x : array_like, shape (n,) or (chains, n)
        Real draws; at least 2 draws per chain.

    Returns
    -------
    ess : float
        Effective number of independent draws for estimating the mean; about
        ``m n`` for independent draws. ``nan`` if every value is equal (see
        the module notes).

    Raises
    ------
    ValueError
        If ``x`` is not 1-D or 2-D, has fewer than 2 draws (per chain), or
        contains NaN/inf.

    Notes
    -----
    Where this differs from ``arviz.ess(x, method="identity")``:

    * every value equal: ``nan`` here, ``m n`` in ArviZ (also when the values
      differ by less than ``1e-15``);
    * fewer than 10 draws in all: ``tau`` is floored at 1 here and at
      ``1 / log10(N) > 1`` in ArviZ, whose ESS would then stay below ``N``
      even for independent draws;
    * fewer than 4 draws per chain: a value here, ``nan`` in ArviZ.

    ArviZ's default ``method="bulk"`` is this estimator applied to the
    split, rank-normalised chains [3]_: the ESS of the ranks, robust to
    heavy tails, rather than that of the mean.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> 800 < effective_sample_size(rng.standard_normal(1000)) <= 1000  # iid: about n
    True
    >>> effective_sample_size(np.repeat(rng.standard_normal(100), 10)) < 200  # each value 10 times
    True
    """
    arr = _as_real(x, "x")
    tau = integrated_autocorrelation_time(arr)
    return arr.size / tau


def r_hat(chains) -> float:
    """Split Gelman-Rubin potential scale reduction factor (split-R-hat).

    Each chain is split into its first and second halves (the middle draw is
    dropped when the length is odd), giving ``2m`` sequences of ``n`` draws,
    so that a single drifting chain is also detected. With ``W`` the mean of
    the within-sequence variances and ``B/n`` the variance of the sequence
    means (both with divisor ``count - 1``),
    ``var_plus = (n - 1)/n W + B/n`` and ``R-hat = sqrt(var_plus / W)`` [2]_.
    This is ``arviz.rhat(chains, method="split")``. Values near 1 are
    consistent with convergence; the classic threshold is 1.1 [2]_. (The
    stricter 1.01 of [3]_ is stated for their rank-normalised R-hat,
    ArviZ's default ``method="rank"``: the larger of this statistic on the
    rank-normalised draws and on their folded ranks, which also catches
    chains that differ in scale or tails only.)

    Parameters
    ----------
    chains : array_like, shape (chains, draws)
        Real draws of one scalar, one row per chain; at least one chain of at
        least 4 draws.

    Returns
    -------
    rhat : float
        The potential scale reduction. If every split sequence is constant it
        is ``nan`` when they all share one value and ``inf`` when they do not.

    Raises
    ------
    ValueError
        If ``chains`` is not 2-D, has rows of fewer than 4 draws, or contains
        NaN/inf.

    Notes
    -----
    Where this differs from ``arviz.rhat(chains, method="split")``: one
    chain gives a value here (its two halves compared; ArviZ returns
    ``nan``, needing 2 chains before splitting -- the value equals
    ``arviz.rhat(halves, method="identity")`` on the two halves as chains),
    and constant split sequences give ``nan`` or ``inf`` exactly where
    ArviZ divides by a zero or rounding-sized ``W``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> round(r_hat(rng.standard_normal((4, 500))), 2)  # four chains on one target
    1.0
    >>> r_hat(rng.standard_normal((4, 500)) + np.arange(4)[:, None]) > 1.5  # they disagree
    True
    """
    arr = _as_chains(chains, "chains", min_draws=4)
    m, length = arr.shape
    half = length // 2
    seqs = np.concatenate([arr[:, :half], arr[:, length - half :]], axis=0)
    n = half
    if np.all(seqs == seqs[:, :1]):  # every sequence constant: W = 0
        return math.nan if _is_constant(seqs) else math.inf
    w = seqs.var(axis=1, ddof=1).mean()
    b_over_n = seqs.mean(axis=1).var(ddof=1)
    var_plus = (n - 1) / n * w + b_over_n
    return float(math.sqrt(var_plus / w))


# ---------------------------------------------------------------------------
# Acceptance rates and chain summaries
# ---------------------------------------------------------------------------


def acceptance_by_move(move_types, accepted) -> dict:
    """Metropolis-Hastings acceptance rate of each move type.

    Parameters
    ----------
    move_types : sequence of hashable, length n
        The type of each proposed move (e.g. ``StepInfo.move`` strings).
    accepted : sequence of bool or 0/1, length n
        Whether each move was accepted.

    Returns
    -------
    rates : dict
        ``{move type: accepted / proposed}`` for every type that occurs, in
        order of first occurrence. Empty input gives an empty dict.

    Raises
    ------
    ValueError
        If the lengths differ, either input is not 1-D, or ``accepted`` holds
        values other than booleans / 0 / 1.

    Examples
    --------
    >>> acceptance_by_move(["split", "merge", "split", "split"], [True, False, False, True])
    {'split': 0.666..., 'merge': 0.0}
    """
    try:
        moves = list(move_types)
    except TypeError:
        raise ValueError("move_types must be a sequence of move names") from None
    acc = np.asarray(accepted)
    if acc.ndim != 1:
        raise ValueError(f"accepted must be a 1-D sequence, got shape {acc.shape}")
    if len(moves) != acc.size:
        raise ValueError(
            f"move_types and accepted must have the same length, got {len(moves)} and {acc.size}"
        )
    if acc.size and (acc.dtype.kind not in "biuf" or not np.all((acc == 0) | (acc == 1))):
        raise ValueError("accepted must hold only booleans or 0/1")
    acc = acc.astype(bool)
    proposed: dict = {}
    taken: dict = {}
    for mv, a in zip(moves, acc.tolist()):
        try:
            proposed[mv] = proposed.get(mv, 0) + 1
        except TypeError:
            raise ValueError(f"move types must be hashable, got {type(mv).__name__}") from None
        taken[mv] = taken.get(mv, 0) + a
    return {mv: taken[mv] / proposed[mv] for mv in proposed}


def _series_summary(values: np.ndarray) -> dict:
    v = values.astype(np.float64)
    if v.size < 2:
        return {"mean": float(v.mean()), "tau": math.nan, "ess": math.nan}
    tau = integrated_autocorrelation_time(v)
    return {"mean": float(v.mean()), "tau": tau, "ess": v.size / tau}


def summarize_chain(samples, pairs=None) -> dict:
    """Autocorrelation times and effective sample sizes of label-invariant statistics.

    Parameters
    ----------
    samples : array_like of int, shape (draws, n_items)
        Successive label vectors of one chain (one row per draw).
    pairs : array_like of int, shape (n_pairs, 2), optional
        Item pairs whose co-assignment indicators are also summarised.

    Returns
    -------
    summary : dict
        ``{"n_draws": int,
        "n_labels": {"mean", "tau", "ess"},
        "largest_label_fraction": {"mean", "tau", "ess"},
        "coassignment": [{"pair": (i, j), "mean", "tau", "ess"}, ...]}``
        where ``mean`` is the chain average, ``tau`` the integrated
        autocorrelation time and ``ess`` the effective sample size. A
        statistic that never changes over the chain (or a chain of 1 draw)
        has ``tau = ess = nan`` (see the module notes); the ``coassignment``
        list is empty when ``pairs`` is None.

    Raises
    ------
    ValueError
        For the ``samples`` or ``pairs`` that :func:`coassignment` refuses.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> chain = rng.integers(0, 2, size=(200, 5))  # 200 draws of a 5-item labelling
    >>> s = summarize_chain(chain, pairs=[(0, 1)])
    >>> s["n_draws"], sorted(s["n_labels"]), s["coassignment"][0]["pair"]
    (200, ['ess', 'mean', 'tau'], (0, 1))
    >>> round(s["coassignment"][0]["mean"], 1)  # items 0 and 1 together about half the time
    0.5
    """
    samples = _as_samples(samples)
    p = (
        np.zeros((0, 2), dtype=np.int64)
        if pairs is None
        else _as_pairs(pairs, samples.shape[1], "pairs")
    )
    co = coassignment(samples, p)
    return {
        "n_draws": int(samples.shape[0]),
        "n_labels": _series_summary(n_labels(samples)),
        "largest_label_fraction": _series_summary(largest_label_fraction(samples)),
        "coassignment": [
            {"pair": (int(i), int(j)), **_series_summary(co[:, k])}
            for k, (i, j) in enumerate(p.tolist())
        ],
    }
