"""Synthetic clustering data: the seed papers' benchmarks for the mixture
model (:mod:`swcuts.models.mixture`), next to the synthetic images of
:mod:`swcuts.evaluation.synthetic.images`.

* :func:`jain_neal_bernoulli` — binary data from 5 components (Jain &
  Neal; Herlau et al. section 3.1);
* :func:`lee_choi_gaussians` — 2-D points from 13 Gaussians (Lee & Choi
  section 4.1);
* :func:`rossum_lines` — points scattered about lines (van Rossum et al.
  section 3).

Their docstrings say which parts the papers specify and which are guesses.
Each returns ``(data, labels)`` with the true labels; they are also
importable from :mod:`swcuts.models.mixture`.
"""

from __future__ import annotations

import numpy as np

from swcuts.io.errors import InputError
from swcuts.models.mixture.likelihoods import LINE_NOISE_SD, LINE_PRIOR_SD, _positive

__all__ = [
    "jain_neal_bernoulli",
    "lee_choi_gaussians",
    "rossum_lines",
    "JAIN_NEAL_PROBABILITIES",
    "LEE_CHOI_MEANS",
]


#: P(attribute i = 1 | component k), rows k = 1..5, columns i = 1..6: Table 1
#: of Herlau et al. (seed 001), their restatement of Jain & Neal's data.
JAIN_NEAL_PROBABILITIES = np.array([
    [0.95, 0.95, 0.95, 0.95, 0.95, 0.95],
    [0.05, 0.05, 0.05, 0.05, 0.95, 0.95],
    [0.95, 0.05, 0.05, 0.95, 0.95, 0.95],
    [0.05, 0.05, 0.05, 0.05, 0.05, 0.05],
    [0.95, 0.95, 0.95, 0.95, 0.05, 0.05],
])


def _sizes(n, k):
    """n items over k groups, as equal as possible (the first get the extra)."""
    base, extra = divmod(n, k)
    return np.array([base + (1 if i < extra else 0) for i in range(k)], dtype=np.int64)


def _count(value, name, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise InputError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def jain_neal_bernoulli(n=100, d=6, seed=None):
    """Jain & Neal's synthetic binary data, as re-specified by Herlau et al.

    n items are divided into K = 5 components of equal size (n = 100: five
    of 20, Herlau et al. section 3.1); item j of component k has attribute
    i = 1 with probability ``JAIN_NEAL_PROBABILITIES[k, i]`` (their Table 1)
    for i ≤ 6, and for d > 6 the last column is "simply copied the
    remaining number of times" (attributes 7..d repeat attribute 6). Herlau
    et al.'s Examples 1-3 are d = 6, 8, 10. (Jain & Neal's own text, which
    lost its digits, also grows d by replicating attributes.) The model they
    fit is :class:`~swcuts.models.mixture.BetaBernoulli` with a = b = α = 1.

    Parameters
    ----------
    n : int
        Number of items (≥ 5); components get n // 5 items, the first n % 5
        components one more.
    d : int
        Number of attributes (≥ 6).
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    data : ndarray of uint8, shape (n, d)
    labels : ndarray of int64, shape (n,)
        True component 0..4 of each item (items are ordered by component).
    """
    n = _count(n, "n", 5)
    d = _count(d, "d", 6)
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(5), _sizes(n, 5))
    cols = np.minimum(np.arange(d), 5)
    p = JAIN_NEAL_PROBABILITIES[labels][:, cols]
    data = (rng.random((n, d)) < p).astype(np.uint8)
    return data, labels


#: Component means of :func:`lee_choi_gaussians`: the centre, an inner ring
#: of 4 at radius 4 and an outer ring of 8 at radius 8 (a guess; the paper
#: only says "predefined means").
LEE_CHOI_MEANS = np.concatenate([
    np.zeros((1, 2)),
    4.0 * np.stack([np.cos(np.arange(4) * np.pi / 2), np.sin(np.arange(4) * np.pi / 2)], axis=1),
    8.0 * np.stack([np.cos(np.arange(8) * np.pi / 4 + np.pi / 8),
                    np.sin(np.arange(8) * np.pi / 4 + np.pi / 8)], axis=1),
])


def lee_choi_gaussians(n=1300, seed=None):
    """The toy data of Lee & Choi section 4.1: 2-D points from 13 Gaussians.

    The paper specifies 1,300 two-dimensional points in 13 clusters
    "sampled from the mixture of Gaussians with predefined means and
    covariances", and that the clusters are well enough separated for IBHC
    to find an almost perfect partition. The means and covariances are not
    given; swcuts uses (documented guesses):

    * means :data:`LEE_CHOI_MEANS`: one at the origin, 4 on a circle of
      radius 4 (angles 0°, 90°, …), 8 on a circle of radius 8 (angles
      22.5° + 45° j), so that neighbouring means are 4 to 6.1 apart;
    * covariances R diag(s1², s2²) Rᵀ with s1, s2 ~ U(0.35, 0.8) and a
      uniform rotation R, drawn from the same seed — elongated clusters that
      a spherical model would not fit;
    * equal weights: n // 13 points per cluster (100 for n = 1300), the first
      n % 13 clusters one more, rather than multinomial counts.

    Fit it with ``MixtureModel(data, "gaussian", preset="lee-choi")`` for
    the paper's base measure (r = 0.1, ν = d + 6, m = data mean, Ψ =
    Ĉ / (10 det Ĉ)^(1/d)).

    Parameters
    ----------
    n : int
        Number of points (≥ 13).
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    data : ndarray of float64, shape (n, 2)
    labels : ndarray of int64, shape (n,)
        True cluster 0..12 (points are ordered by cluster).
    """
    n = _count(n, "n", 13)
    rng = np.random.default_rng(seed)
    k = LEE_CHOI_MEANS.shape[0]
    sizes = _sizes(n, k)
    labels = np.repeat(np.arange(k), sizes)
    data = np.empty((n, 2))
    start = 0
    for c in range(k):
        s = rng.uniform(0.35, 0.8, size=2)
        t = rng.uniform(0.0, np.pi)
        rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
        z = rng.standard_normal((sizes[c], 2)) * s
        data[start:start + sizes[c]] = LEE_CHOI_MEANS[c] + z @ rot.T
        start += sizes[c]
    return data, labels


def rossum_lines(n_lines=5, points_per_line=20, *, sigma0=LINE_PRIOR_SD, sigma1=LINE_NOISE_SD,
                 length=20.0, seed=None, return_params=False):
    """Line-extraction data after van Rossum et al. section 3.

    The paper draws the line parameters (slope, intercept) from N(0, σ0),
    places points uniformly along a line of length 20 and lets them deviate
    from the line by N(0, σ1); the number of lines and points, σ0 and σ1 are
    not given. swcuts uses:

    * (a, b) ~ N(0, σ0² I) per line, σ0 = :data:`LINE_PRIOR_SD` = 3 (so
      lines range from flat to steep and cross inside the data window);
    * points at arc length t ~ U(−length/2, length/2) from (0, b) along the
      line: x = t / √(1 + a²), y = a x + b + N(0, σ1²), σ1 =
      :data:`LINE_NOISE_SD` = 0.5 — vertical noise, the noise model of
      :class:`~swcuts.models.mixture.LineMixture`, whose defaults match these
      values;
    * 5 lines of 20 points (n = 100).

    Parameters
    ----------
    n_lines : int
        Number of lines (≥ 1).
    points_per_line : int
        Points per line (≥ 1); n = n_lines · points_per_line ≥ 2.
    sigma0 : float
        Prior standard deviation of slope and intercept.
    sigma1 : float
        Vertical noise standard deviation.
    length : float
        Length of every line segment.
    seed : int or numpy.random.Generator, optional
    return_params : bool
        Also return the (n_lines, 2) array of true (slope, intercept).

    Returns
    -------
    data : ndarray of float64, shape (n, 2)
        Points (x, y), ordered by line.
    labels : ndarray of int64, shape (n,)
    params : ndarray, shape (n_lines, 2)
        Only with ``return_params``.
    """
    n_lines = _count(n_lines, "n_lines", 1)
    points_per_line = _count(points_per_line, "points_per_line", 1)
    if n_lines * points_per_line < 2:
        raise InputError("rossum_lines needs at least 2 points in all")
    sigma0 = _positive(sigma0, "sigma0")
    sigma1 = _positive(sigma1, "sigma1")
    length = _positive(length, "length")
    rng = np.random.default_rng(seed)
    coef = rng.normal(0.0, sigma0, size=(n_lines, 2))
    labels = np.repeat(np.arange(n_lines), points_per_line)
    a = coef[labels, 0]
    b = coef[labels, 1]
    t = rng.uniform(-0.5 * length, 0.5 * length, size=labels.size)
    x = t / np.sqrt(1.0 + a * a)
    y = a * x + b + rng.normal(0.0, sigma1, size=labels.size)
    data = np.stack([x, y], axis=1)
    if return_params:
        return data, labels, coef
    return data, labels
