"""Burn-in by a rule, and thinning from the autocorrelation of what is left.

A chain started away from where π has its mass first *descends* (−log π
falls, the number of segments drifts) and only then fluctuates about a
level. Its autocorrelation time, measured with the descent, is that of the
trend, not of the chain; the descent must be dropped first, by a rule that
looks at the series.

The rule here is MSER (White 1997; "MSER-5" of White, Cobb & Spratt 2000):
with the series averaged in batches of ``batch`` draws, ``Y_1 .. Y_m``, the
truncation point is the ``d`` minimising

    MSER(d) = Σ_{i>d} (Y_i − Ȳ_d)² / (m − d)²,   Ȳ_d = mean of Y_{d+1} .. Y_m,

the squared standard error of the mean of what is kept: dropping the
descent lowers the sum of squares much faster than it shrinks the count,
and dropping draws past it raises the error again. Only ``d ≤ m/2`` is
searched (the statistic is unstable near the end of the series, a known
weakness of MSER), so at least half the series is kept.

:func:`burn_in` applies it to several statistics of several chains (the
largest truncation of any, so that every kept series has stopped
descending), and :func:`thinning` measures the integrated autocorrelation
time of the kept draws (:func:`swcuts.inference.diagnostics.integrated_autocorrelation_time`,
per chain, median over chains, largest over statistics).
"""

from __future__ import annotations

import math

import numpy as np

from swcuts.inference import diagnostics as dg

__all__ = ["mser_truncation", "burn_in", "thinning"]

#: Draws per batch of the MSER rule (MSER-5).
MSER_BATCH = 5


def mser_truncation(x, batch=MSER_BATCH) -> int:
    """Draws to drop from the start of ``x`` by the MSER rule.

    Parameters
    ----------
    x : (n,) array_like
        One chain's series of one statistic.
    batch : int
        Draws averaged per batch.

    Returns
    -------
    int
        A multiple of ``batch``, at most half the series; 0 for a series too
        short for four batches, or constant.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[np.linspace(50, 0, 100), np.zeros(400)] + rng.standard_normal(500)
    >>> 80 <= mser_truncation(x) <= 120   # the descent of 100 draws is dropped
    True
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    batch = max(1, int(batch))
    m = x.size // batch
    if m < 4 or not np.isfinite(x).all():
        return 0
    y = x[: m * batch].reshape(m, batch).mean(axis=1)
    # Suffix sums give every MSER(d) at once.
    s1 = np.cumsum(y[::-1])[::-1]
    s2 = np.cumsum((y * y)[::-1])[::-1]
    d = np.arange(m // 2 + 1)
    k = m - d
    ss = s2[d] - s1[d] ** 2 / k
    stat = np.maximum(ss, 0.0) / (k * k)
    return int(np.argmin(stat)) * batch


def burn_in(series, batch=MSER_BATCH) -> int:
    """The draws to drop from every chain: the largest MSER truncation over
    the statistics and chains in ``series`` (each a ``(chains, n)`` array).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> energy = np.r_[np.linspace(30, 0, 60), np.zeros(240)] + rng.standard_normal((2, 300))
    >>> 40 <= burn_in([energy]) <= 80
    True
    """
    d = 0
    for arr in series:
        arr = np.atleast_2d(np.asarray(arr, dtype=np.float64))
        for row in arr:
            d = max(d, mser_truncation(row, batch))
    return d


def thinning(series, burn=None, batch=MSER_BATCH) -> tuple:
    """(thin, burn): the autocorrelation time of the draws after the burn-in.

    Parameters
    ----------
    series : list of (chains, n) arrays
        Statistics (−log π, the number of segments) of the same draws.
    burn : int, optional
        Draws dropped from every chain (default :func:`burn_in`).

    Returns
    -------
    (float, int)
        The largest over statistics of the median over chains of the
        integrated autocorrelation time of the kept draws, in draws (nan
        when every kept series is constant or shorter than 4), and ``burn``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.zeros((2, 3000))
    >>> for t in range(1, 3000):  # AR(1), phi = 0.5: tau = 3
    ...     x[:, t] = 0.5 * x[:, t - 1] + rng.standard_normal(2)
    >>> x[:, :200] += np.linspace(40, 0, 200)   # a descent first
    >>> tau, burn = thinning([x])
    >>> 150 <= burn <= 260 and 2.5 < tau < 3.6
    True
    """
    burn = burn_in(series, batch) if burn is None else int(burn)
    taus = []
    for arr in series:
        arr = np.atleast_2d(np.asarray(arr, dtype=np.float64))[:, burn:]
        per_chain = [dg.integrated_autocorrelation_time(row) for row in arr
                     if row.size >= 4 and np.isfinite(row).all()]
        per_chain = [t for t in per_chain if math.isfinite(t)]
        if per_chain:
            taus.append(float(np.median(per_chain)))
    return (max(taus) if taus else math.nan), burn
