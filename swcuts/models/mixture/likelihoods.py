"""Conjugate cluster likelihoods of the mixture model.

A likelihood maps items to sufficient statistics (``stats``), which add up
over a cluster, and a cluster's statistics to its log marginal likelihood
(``log_marginal``), the cluster parameters being integrated out. Four
built-in ones, the likelihoods of the seed papers' benchmarks:
:class:`BetaBernoulli`, :class:`NormalInverseWishart`, :class:`LineMixture`
and :class:`Multinomial`; they evaluate the marginal in compiled code
(:func:`~.marginals.log_marginal`). Also the checks of user data and
hyperparameters.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from swcuts.io.errors import InputError, InputTypeError, check_number, describe
from swcuts.models.mixture.marginals import (
    KIND_BETA_BERNOULLI, KIND_LINES, KIND_MULTINOMIAL, KIND_NIW, log_marginal)


def _data_matrix(data, allow_1d=True) -> np.ndarray:
    """A finite float64 (n, d) array from user data, or an InputError."""
    try:
        arr = np.asarray(data)
    except Exception as exc:  # ragged lists and the like
        raise InputError(f"mixture data must be a numeric array: {exc}".splitlines()[0]) from None
    if arr.dtype.kind not in "biuf":
        raise InputError(f"mixture data must be numeric (bool, int or float), got dtype {arr.dtype}")
    if arr.ndim == 1 and allow_1d:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise InputError(f"mixture data must be a 2-D array (n_items, n_features), "
                         f"got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise InputError(f"mixture data needs at least 2 items, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise InputError("mixture data needs at least 1 feature per item")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise InputError("mixture data contains NaN or infinite values")
    return arr


def _positive(value, name) -> float:
    """``value`` as a float, a finite number > 0
    (:func:`~swcuts.io.errors.check_number`: a string, a bool or an array is
    an :class:`~swcuts.io.errors.InputTypeError`)."""
    return float(check_number(name, value, minimum=0.0, exclusive=True, what="a finite number > 0"))


def _real_array(value, name) -> np.ndarray:
    """``value`` (a number or an array of numbers) as a float array; strings
    and bools are refused, not converted."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise InputTypeError(f"{name} must be a number or an array of numbers, got {describe(value)}")
    return arr.astype(np.float64)


def _spd(matrix, d, name) -> np.ndarray:
    """A symmetric positive definite (d, d) float matrix, or an InputError."""
    m = _real_array(matrix, name)
    if m.ndim == 0:
        m = float(m) * np.eye(d)
    elif m.ndim == 1 and m.size == d:
        m = np.diag(m)
    if m.shape != (d, d):
        raise InputError(f"{name} must be a scalar, a length-{d} diagonal or a {d}x{d} matrix, "
                         f"got shape {np.shape(matrix)}")
    if not np.all(np.isfinite(m)) or not np.allclose(m, m.T, rtol=1e-10, atol=1e-12):
        raise InputError(f"{name} must be a finite symmetric matrix")
    m = 0.5 * (m + m.T)
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        raise InputError(f"{name} must be positive definite") from None
    return m


class ConjugateLikelihood:
    """A likelihood whose cluster marginal depends on summed item statistics.

    Subclasses define :meth:`stats` and :meth:`log_marginal`. The built-in
    likelihoods also set ``kind`` and ``params`` so that compiled code can
    evaluate the marginal (:func:`log_marginal`); a subclass that leaves
    ``kind = None`` is evaluated through its Python :meth:`log_marginal`.
    """

    #: Name users type (``MixtureModel(data, likelihood=name)``).
    name = "custom"
    #: Compiled dispatch code, or None for a Python-only likelihood.
    kind = None
    #: Float parameters of the compiled marginal (set by :meth:`bind`).
    params = None

    def validate(self, data) -> np.ndarray:
        """Check user data and return it as a float64 (n, d) array.

        Raises
        ------
        InputError
            With a one-line reason.
        """
        return _data_matrix(data)

    def bind(self, data) -> "ConjugateLikelihood":
        """A copy with every data-dependent default resolved for ``data``
        (an array :meth:`validate` returned). The instance itself is left
        unchanged, so that it can be reused for other data."""
        return copy.copy(self)

    def stats(self, x) -> np.ndarray:
        """Sufficient statistics of items ``x`` (one item or an (n, d)
        array) as float64 vectors of length :attr:`stat_size`; a cluster's
        statistics are the sum over its items."""
        x = np.asarray(x, dtype=np.float64)
        st = self._row_stats(np.atleast_2d(x))
        return st[0] if x.ndim == 1 else st

    def _row_stats(self, x) -> np.ndarray:
        """:meth:`stats` of the rows of the float64 (n, d) array ``x``, (n, stat_size)."""
        raise NotImplementedError

    def log_marginal(self, stat) -> float:
        """Log marginal likelihood of a cluster from its summed statistics."""
        if self.kind is None:
            raise NotImplementedError
        return float(log_marginal(self.kind, np.ascontiguousarray(stat, dtype=np.float64),
                                  self.params))

    def __repr__(self):
        return f"{type(self).__name__}()"


class BetaBernoulli(ConjugateLikelihood):
    """Binary attributes, each Bernoulli(θ_i) with θ_i ~ Beta(a, b).

    A cluster of n items with s_i ones in attribute i has marginal likelihood
    Π_i B(a + s_i, b + n − s_i) / B(a, b) (Herlau et al. section 3.1; Jain &
    Neal section 5, with a = b = 1 there).

    Parameters
    ----------
    a, b : float
        Beta prior parameters (> 0).

    Notes
    -----
    Data: an (n, d) array of 0/1 values (bool, int or float). Statistics
    layout: [n, Σx_1, ..., Σx_d] — integers, so they never drift.
    """

    name = "beta-bernoulli"
    kind = KIND_BETA_BERNOULLI

    def __init__(self, a=1.0, b=1.0):
        self.a = _positive(a, "Beta-Bernoulli a")
        self.b = _positive(b, "Beta-Bernoulli b")
        self.params = np.array([self.a, self.b, math.lgamma(self.a) + math.lgamma(self.b)
                                - math.lgamma(self.a + self.b)])
        self.n_features = None

    def validate(self, data) -> np.ndarray:
        x = _data_matrix(data)
        if not np.all((x == 0.0) | (x == 1.0)):
            raise InputError("Beta-Bernoulli data must be binary (values 0 and 1 only)")
        return x

    def bind(self, data):
        new = copy.copy(self)
        new.n_features = int(np.shape(data)[1])
        return new

    @property
    def stat_size(self) -> int:
        return 1 + self.n_features

    def _row_stats(self, x) -> np.ndarray:
        st = np.empty((x.shape[0], 1 + x.shape[1]))
        st[:, 0] = 1.0
        st[:, 1:] = x
        return st

    def __repr__(self):
        return f"BetaBernoulli(a={self.a:g}, b={self.b:g})"


class NormalInverseWishart(ConjugateLikelihood):
    """Multivariate Gaussian N(μ, Σ) with the conjugate prior
    Σ ~ IW(ν0, Ψ0), μ | Σ ~ N(μ0, Σ / κ0).

    The marginal likelihood of a cluster of n items (Murphy 2007, eq. 266) is

        p(X) = π^(−nd/2) Γ_d(νn/2) / Γ_d(ν0/2) · |Ψ0|^(ν0/2) / |Ψn|^(νn/2)
               · (κ0/κn)^(d/2),

    κn = κ0 + n, νn = ν0 + n, Ψn = Ψ0 + S + κ0 n/κn (x̄ − μ0)(x̄ − μ0)ᵀ
    with S the scatter matrix about x̄. With y = x − μ0 this is
    Ψn = Ψ0 + Σ yyᵀ − (Σ y)(Σ y)ᵀ / κn, computed from the statistics
    [n, Σy, Σyyᵀ] (shifting by μ0 keeps the sums well conditioned).

    Parameters
    ----------
    mu0 : array_like of shape (d,), optional
        Prior mean of the cluster means. Default: the data mean.
    kappa0 : float, optional
        Prior pseudo-count of the mean (> 0). Default 0.1, Lee & Choi's r:
        with the default Ψ0 the prior spread of the cluster means is about
        the spread of the data.
    nu0 : float, optional
        Degrees of freedom (> d − 1). Default d + 2, the smallest integer for
        which the prior mean E[Σ] = Ψ0 / (ν0 − d − 1) exists.
    Psi0 : scalar, (d,) or (d, d) array, optional
        Scale matrix (scalar: times the identity; vector: diagonal). Default:
        (ν0 − d − 1) · Ĉ / 10 with Ĉ the data covariance, i.e. a prior mean
        cluster covariance of one tenth of the data covariance (Ĉ gets a
        1e-6 relative ridge; if the data are constant, Ĉ = I).
    preset : {None, "lee-choi"}
        ``"lee-choi"`` sets the defaults of Lee & Choi section 4.1:
        κ0 = 0.1, ν0 = d + 6, μ0 = data mean, Ψ0 = Ĉ / (10 det Ĉ)^(1/d)
        (their Gaussian-Wishart H(dμ, dΛ) = N(μ | m, (rΛ)⁻¹) W(Λ | Ψ⁻¹, ν) is
        this NIW on Σ = Λ⁻¹). Explicit arguments override the preset.
    """

    name = "gaussian"
    kind = KIND_NIW

    def __init__(self, mu0=None, kappa0=None, nu0=None, Psi0=None, preset=None):
        if preset not in (None, "lee-choi"):
            raise InputError(f"unknown NIW preset {preset!r}; use None or 'lee-choi'")
        self.preset = preset
        self.mu0 = mu0
        self.kappa0 = None if kappa0 is None else _positive(kappa0, "NIW kappa0")
        self.nu0 = None if nu0 is None else float(check_number("NIW nu0", nu0))
        self.Psi0 = Psi0
        self.bound = False

    @classmethod
    def lee_choi(cls, **overrides):
        """The base measure of Lee & Choi section 4.1 (see ``preset``)."""
        return cls(preset="lee-choi", **overrides)

    def bind(self, data):
        x = np.asarray(data, dtype=np.float64)
        n, d = x.shape
        new = copy.copy(self)
        if new.mu0 is None:
            mu0 = x.mean(axis=0)
        else:
            mu0 = _real_array(new.mu0, "NIW mu0").reshape(-1)
            if mu0.size == 1 and d > 1:
                mu0 = np.full(d, mu0[0])
            if mu0.shape != (d,) or not np.all(np.isfinite(mu0)):
                raise InputError(f"NIW mu0 must be a finite vector of length {d}")
        kappa0 = new.kappa0 if new.kappa0 is not None else 0.1
        if new.nu0 is not None:
            nu0 = new.nu0
        else:
            nu0 = d + 6.0 if new.preset == "lee-choi" else d + 2.0
        if not (math.isfinite(nu0) and nu0 > d - 1):
            raise InputError(f"NIW nu0 must exceed d - 1 = {d - 1}, got {nu0:g}")
        if new.Psi0 is None:
            cov = np.atleast_2d(np.cov(x, rowvar=False)) if n > 1 else np.zeros((d, d))
            scale = np.trace(cov) / d
            if not scale > 0.0:
                cov, scale = np.eye(d), 1.0
            cov = cov + 1e-6 * scale * np.eye(d)
            if new.preset == "lee-choi":
                sign, logdet = np.linalg.slogdet(cov)
                Psi0 = cov / math.exp((math.log(10.0) + logdet) / d)
            else:
                Psi0 = (nu0 - d - 1.0) * cov / 10.0 if nu0 > d + 1 else cov / 10.0
        else:
            Psi0 = new.Psi0
        Psi0 = _spd(Psi0, d, "NIW Psi0")
        new.mu0, new.kappa0, new.nu0, new.Psi0 = mu0, float(kappa0), float(nu0), Psi0
        new.n_features = d
        logdet0 = np.linalg.slogdet(Psi0)[1]
        c0 = (0.5 * nu0 * logdet0 + 0.5 * d * math.log(kappa0)
              - sum(math.lgamma(0.5 * (nu0 - j)) for j in range(d)))
        new.params = np.concatenate([[d, kappa0, nu0, logdet0], Psi0.ravel(), [c0]])
        new.bound = True
        return new

    @property
    def stat_size(self) -> int:
        d = self.n_features
        return 1 + d + d * d

    def _row_stats(self, x) -> np.ndarray:
        y = x - self.mu0
        n, d = y.shape
        st = np.empty((n, 1 + d + d * d))
        st[:, 0] = 1.0
        st[:, 1:1 + d] = y
        st[:, 1 + d:] = (y[:, :, None] * y[:, None, :]).reshape(n, d * d)
        return st

    def __repr__(self):
        if not self.bound:
            return f"NormalInverseWishart(preset={self.preset!r}, unbound)"
        return (f"NormalInverseWishart(mu0={np.round(self.mu0, 4).tolist()}, kappa0={self.kappa0:g}, "
                f"nu0={self.nu0:g}, Psi0={np.round(self.Psi0, 4).tolist()})")


#: Default prior standard deviation of line slopes and intercepts, shared
#: by :class:`LineMixture` and :func:`~swcuts.evaluation.synthetic.clusters.rossum_lines`.
LINE_PRIOR_SD = 3.0
#: Default vertical noise of points about their line.
LINE_NOISE_SD = 0.5


class LineMixture(ConjugateLikelihood):
    """Points (x, y) about a line: y = a x + b + N(0, σ²), (a, b) ~ N(m0, S0).

    The marginal likelihood of a cluster is the Bayesian linear-regression
    evidence with features φ = (x, 1) (x is treated as given):

        log p(y | x) = −n/2 log(2πσ²) − ½ log|S0| − ½ log|Λn|
                       − ½ (Σy²/σ² + m0ᵀΛ0 m0 − bnᵀ Λn⁻¹ bn),

    Λ0 = S0⁻¹, Λn = Λ0 + Σφφᵀ/σ², bn = Λ0 m0 + Σφ y/σ²; equal to the Gaussian
    density of y with mean X m0 and covariance σ²I + X S0 Xᵀ.

    Parameters
    ----------
    sigma : float
        Known noise standard deviation σ > 0 (vertical distance to the line).
        Default :data:`LINE_NOISE_SD`, the noise of
        :func:`~swcuts.evaluation.synthetic.clusters.rossum_lines`.
    prior_mean : scalar or (2,) array
        m0 = (slope, intercept) prior mean.
    prior_cov : scalar, (2,) or (2, 2) array, optional
        S0 (scalar: times the identity; vector: diagonal). Default
        ``LINE_PRIOR_SD**2 * I``, the generating prior of
        :func:`~swcuts.evaluation.synthetic.clusters.rossum_lines`.

    Notes
    -----
    Data: an (n, 2) array of points (x, y). Statistics layout:
    [n, Σx², Σx, Σxy, Σy, Σy²].
    """

    name = "lines"
    kind = KIND_LINES

    def __init__(self, sigma=LINE_NOISE_SD, prior_mean=0.0, prior_cov=None):
        self.sigma = _positive(sigma, "line noise sigma")
        m0 = _real_array(prior_mean, "line prior_mean").reshape(-1)
        if m0.size == 1:
            m0 = np.full(2, m0[0])
        if m0.shape != (2,) or not np.all(np.isfinite(m0)):
            raise InputError("line prior_mean must be a finite scalar or (slope, intercept) pair")
        self.prior_mean = m0
        self.prior_cov = _spd(LINE_PRIOR_SD ** 2 if prior_cov is None else prior_cov, 2,
                              "line prior_cov")
        lam = np.linalg.inv(self.prior_cov)
        h = lam @ m0
        self.params = np.array([self.sigma ** 2, lam[0, 0], lam[0, 1], lam[1, 1], h[0], h[1],
                                float(m0 @ h), np.linalg.slogdet(self.prior_cov)[1]])

    def validate(self, data) -> np.ndarray:
        x = _data_matrix(data, allow_1d=False)
        if x.shape[1] != 2:
            raise InputError(f"line data must have exactly 2 columns (x, y), got {x.shape[1]}")
        return x

    stat_size = 6

    def _row_stats(self, x) -> np.ndarray:
        u, y = x[:, 0], x[:, 1]
        return np.stack([np.ones_like(u), u * u, u, u * y, y, y * y], axis=1)

    def __repr__(self):
        return (f"LineMixture(sigma={self.sigma:g}, prior_mean={self.prior_mean.tolist()}, "
                f"prior_cov={self.prior_cov.tolist()})")


class Multinomial(ConjugateLikelihood):
    """Count vectors (e.g. bags of words), each Multinomial(N_i, θ) with a
    symmetric Dirichlet base measure θ ~ Dir(β, ..., β) over V categories
    (Lee & Choi section 4.3: the NIPS corpus with β = 0.1).

    A cluster of items with category counts s_v (summed over its items) and
    total count N = Σ_v s_v has the Dirichlet-multinomial marginal

        m = Π_i [N_i! / Π_v x_iv!] · Γ(Vβ) / Γ(Vβ + N) · Π_v Γ(β + s_v) / Γ(β),

    the probability of the count vectors themselves (the multinomial
    coefficients do not depend on the partition; they make ``m`` a
    normalised probability of the counts).

    Parameters
    ----------
    beta : float
        Concentration of the symmetric Dirichlet (> 0). Default 0.1.

    Notes
    -----
    Data: an (n, V) array of non-negative integer counts (V ≥ 2; an item
    may be all zeros). Statistics layout: [n, N, Σ log coefficients, s_1,
    ..., s_V]; the counts are integers, so they never drift.
    """

    name = "multinomial"
    kind = KIND_MULTINOMIAL

    def __init__(self, beta=0.1):
        self.beta = _positive(beta, "multinomial beta")
        self.n_categories = None
        self.params = None

    def validate(self, data) -> np.ndarray:
        x = _data_matrix(data)
        if x.shape[1] < 2:
            raise InputError(f"multinomial data needs at least 2 categories (columns), "
                             f"got {x.shape[1]}")
        if np.any(x < 0) or np.any(x != np.round(x)):
            raise InputError("multinomial data must be non-negative integer counts")
        if x.sum(axis=1).max() > 2.0 ** 52:
            raise InputError("multinomial counts too large for exact float64 sums")
        return x

    def bind(self, data):
        new = copy.copy(self)
        V = int(np.shape(data)[1])
        new.n_categories = V
        b = new.beta
        new.params = np.array([b, V * b, math.lgamma(V * b), math.lgamma(b)])
        return new

    @property
    def stat_size(self) -> int:
        return 3 + self.n_categories

    def _row_stats(self, x) -> np.ndarray:
        from scipy.special import gammaln

        st = np.empty((x.shape[0], 3 + x.shape[1]))
        st[:, 0] = 1.0
        st[:, 1] = x.sum(axis=1)
        st[:, 2] = gammaln(st[:, 1] + 1.0) - gammaln(x + 1.0).sum(axis=1)
        st[:, 3:] = x
        return st

    def __repr__(self):
        return f"Multinomial(beta={self.beta:g})"


#: Likelihoods by the names users type.
LIKELIHOODS = {
    "beta-bernoulli": BetaBernoulli,
    "gaussian": NormalInverseWishart,
    "lines": LineMixture,
    "multinomial": Multinomial,
}
