"""Partition priors of the mixture model: the Dirichlet process and the
normalized generalized gamma process (NGGP).

Every mixture sampler gets the prior's weights from one place: the compiled
helpers of this module (:func:`prior_item_join`, :func:`prior_item_leave`,
:func:`prior_size_change`, :func:`prior_log_factor`) evaluated on a small
float vector, the state's *prior parameters* (``state.prior``,
:meth:`PartitionPrior.params`)

    prior = [c, σ, lgamma(1 − σ)],   c = log α + σ log(1 + u),

so that a cluster of m > 0 items carries the log factor

    f(m) = c + lgamma(m − σ) − lgamma(1 − σ)

(f(0) = 0) and the partition's log prior given u is Σ_k f(n_k) plus terms
that do not depend on the partition. For the Dirichlet process σ = 0 and
c = log α: f(m) = log α + lgamma(m), the Chinese restaurant process. The
derivation (Lee & Choi eqs. 4-6) is in ``docs/algorithms/mixture.md``.

The NGGP's auxiliary variable u is part of the chain's state
(``state.u``); :meth:`NGGP.update_u` is its exact move (a slice sampler on
log u whose target is p(u | partition)). With σ = 0 the partition's
conditional does not depend on u, the NGGP *is* the Dirichlet process and
no u is kept or drawn.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts.io.errors import InputError, check_number
from swcuts.models.mixture.likelihoods import _positive

__all__ = ["PartitionPrior", "DirichletProcess", "NGGP", "make_prior", "prior_item_join",
           "prior_item_leave", "prior_size_change", "prior_log_factor", "PRIORS"]


# ---------------------------------------------------------------------------
# Compiled prior weights (the one home of the formulas the samplers use)
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def prior_log_factor(prior, m, base=0.0):
    """``base`` + f(m), f(m) = c + lgamma(m − σ) − lgamma(1 − σ) the log
    prior factor of a cluster of ``m`` items (f(0) = 0); ``prior`` =
    [c, σ, lgamma(1 − σ)]. (``base`` first keeps a sum such as log m(x) +
    f(m) in the DP's order of operations.)"""
    if m > 0:
        return base + prior[0] - prior[2] + math.lgamma(m - prior[1])
    return base


@njit(cache=True, inline="always")
def prior_size_change(prior, before, after):
    """f(after) − f(before): the change of the log prior when a cluster
    goes from ``before`` to ``after`` items (either may be 0)."""
    d = 0.0
    if after > 0:
        d += math.lgamma(after - prior[1])
        if before == 0:
            d += prior[0] - prior[2]
    if before > 0:
        d -= math.lgamma(before - prior[1])
        if after == 0:
            d -= prior[0] - prior[2]
    return d


@njit(cache=True, inline="always")
def prior_item_join(prior, nb):
    """f(nb + 1) − f(nb): one item joining a cluster of ``nb`` items,
    log(nb − σ), or a new cluster (nb = 0), c = log α + σ log(1 + u)."""
    if nb > 0:
        return math.log(nb - prior[1])
    return prior[0]


@njit(cache=True, inline="always")
def prior_item_leave(prior, na):
    """f(na − 1) − f(na): one item leaving a cluster of ``na`` items,
    −log(na − 1 − σ), or −c when the cluster empties (na = 1)."""
    if na > 1:
        return -math.log(na - 1 - prior[1])
    return -prior[0]


# ---------------------------------------------------------------------------
# The prior objects
# ---------------------------------------------------------------------------


class PartitionPrior:
    """A prior over partitions of n items whose weights factorise over the
    clusters given an auxiliary variable u (module docstring).

    Attributes
    ----------
    name : str
    alpha : float
        Concentration / total mass parameter α > 0.
    sigma : float
        Discount σ ∈ [0, 1) (0 for the Dirichlet process).
    has_auxiliary : bool
        Whether u is part of the chain's state (σ > 0).
    """

    name = "prior"
    sigma = 0.0
    has_auxiliary = False

    def __init__(self, alpha=1.0):
        self.alpha = _positive(alpha, "alpha")
        self.log_alpha = math.log(self.alpha)

    def params(self, u=None) -> np.ndarray:
        """The prior parameters [c, σ, lgamma(1 − σ)] at ``u`` (see the
        module docstring), the vector the compiled helpers take."""
        c = self.log_alpha
        if self.has_auxiliary:
            c = self.log_alpha + self.sigma * math.log1p(u)
        return np.array([c, self.sigma, math.lgamma(1.0 - self.sigma)])

    def log_factor(self, m, u=None) -> float:
        """f(m) of a cluster of ``m`` > 0 items at ``u``."""
        return float(prior_log_factor(self.params(u), int(m)))

    def log_prior(self, sizes, u=None) -> float:
        """log p(partition) (u integrated out) when ``u`` is None, else
        log p(partition, u); ``sizes`` are the cluster sizes (zeros ignored)."""
        raise NotImplementedError

    def initial_u(self, n):
        """The auxiliary variable of a new state of n items (None without one)."""
        return None

    def update_u(self, u, n, k, rng, temperature=1.0):
        """Exact move of u given a partition of n items into k clusters;
        returns (new u, Δ log p(partition, u))."""
        return u, 0.0


class DirichletProcess(PartitionPrior):
    """The Dirichlet process (Chinese restaurant process) with concentration α.

    log p(partition) = K log α + Σ_k lgamma(n_k) + lgamma(α) − lgamma(α + n).
    """

    name = "dp"

    def log_prior(self, sizes, u=None) -> float:
        sizes = np.asarray(sizes, dtype=np.int64)
        sizes = sizes[sizes > 0]
        n = int(sizes.sum())
        return float(sizes.size * self.log_alpha + sum(math.lgamma(s) for s in sizes.tolist())
                     + math.lgamma(self.alpha) - math.lgamma(self.alpha + n))

    def __repr__(self):
        return f"DirichletProcess(alpha={self.alpha:g})"


class NGGP(PartitionPrior):
    """Normalized generalized gamma process with Lévy intensity
    ρ(dw) = α / Γ(1 − σ) · w^(−1−σ) e^(−w) dw (Lee & Choi section 2.1).

    Given the auxiliary variable u (their Theorem 1) the partition of n items
    into clusters of sizes n_k has

        log p(partition, u) = (n − 1) log u − lgamma(n) − ψ(u) − n log(1 + u)
                              + Σ_k [log α + σ log(1 + u) + lgamma(n_k − σ)
                                     − lgamma(1 − σ)],

    ψ(u) = (α/σ)((1 + u)^σ − 1); σ = 0 is the Dirichlet process DP(α)
    (ψ(u) = α log(1 + u)), for which the partition does not depend on u.

    Parameters
    ----------
    alpha : float
        Total mass parameter α > 0.
    sigma : float
        Discount σ ∈ [0, 1).
    """

    name = "nggp"

    def __init__(self, alpha=1.0, sigma=0.0):
        super().__init__(alpha)
        s = float(check_number("NGGP sigma", sigma))
        if not (0.0 <= s < 1.0):
            raise InputError(f"NGGP sigma must lie in [0, 1), got {sigma!r}")
        self.sigma = s
        self.has_auxiliary = s > 0.0
        self._dp = DirichletProcess(alpha)
        self._integrals = {}

    # ------------------------------------------------------------ density
    def psi(self, u) -> float:
        """Laplace exponent ψ(u) = (α/σ)((1 + u)^σ − 1) (α log(1 + u) at σ = 0)."""
        if self.sigma == 0.0:
            return self.alpha * math.log1p(u)
        return self.alpha / self.sigma * math.expm1(self.sigma * math.log1p(u))

    def log_u_density(self, u, n, k) -> float:
        """The u-dependent part of log p(partition, u) for n items in k
        clusters: (n − 1) log u − ψ(u) + (kσ − n) log(1 + u)."""
        if not u > 0.0:
            return -math.inf
        return (n - 1) * math.log(u) - self.psi(u) + (k * self.sigma - n) * math.log1p(u)

    def log_u_integral(self, n, k) -> float:
        """log ∫ u^(n−1)/Γ(n) (1 + u)^(kσ − n) e^(−ψ(u)) du, by adaptive
        quadrature in v = log u over ±60 about the mode of the integrand
        (relative error about 1e-10); cached per (n, k)."""
        key = (int(n), int(k))
        if key not in self._integrals:
            from scipy import integrate, optimize

            def g(v):  # log integrand in v = log u (Jacobian e^v included)
                return self.log_u_density(math.exp(v), n, k) + v

            res = optimize.minimize_scalar(lambda v: -g(v), bounds=(-50.0, 50.0),
                                           method="bounded", options={"xatol": 1e-10})
            v0 = float(res.x)
            g0 = g(v0)
            val, _ = integrate.quad(lambda v: math.exp(g(v) - g0), v0 - 60.0, v0 + 60.0,
                                    points=[v0], epsabs=0.0, epsrel=1e-11, limit=400)
            self._integrals[key] = g0 + math.log(val) - math.lgamma(n)
        return self._integrals[key]

    def log_prior(self, sizes, u=None) -> float:
        if not self.has_auxiliary:
            return self._dp.log_prior(sizes)
        sizes = np.asarray(sizes, dtype=np.int64)
        sizes = sizes[sizes > 0]
        n, k = int(sizes.sum()), int(sizes.size)
        s = self.sigma
        part = k * (self.log_alpha - math.lgamma(1.0 - s)) + sum(math.lgamma(m - s)
                                                                 for m in sizes.tolist())
        if u is None:
            return float(part + self.log_u_integral(n, k))
        return float(part + self.log_u_density(u, n, k) - math.lgamma(n))

    # ----------------------------------------------------------- u moves
    def initial_u(self, n):
        """n / α, about the mode of p(u | partition) for the DP (σ = 0)."""
        return float(n) / self.alpha if self.has_auxiliary else None

    def update_u(self, u, n, k, rng, temperature=1.0, width=1.0, max_steps=64):
        """Slice-sampling update of v = log u (Neal 2003, stepping out and
        shrinkage) with target p(u | partition)^(1/T) · u (the Jacobian).

        Parameters
        ----------
        u : float
            Current value (> 0).
        n, k : int
            Number of items and of clusters.
        rng : numpy.random.Generator
        temperature : float
        width, max_steps :
            Initial bracket width in log u and the stepping-out limit.

        Returns
        -------
        u_new : float
        delta : float
            Change of log p(partition, u) (untempered).
        """
        if not self.has_auxiliary:
            return u, 0.0
        inv_t = 1.0 / float(temperature)

        def g(v):
            return self.log_u_density(math.exp(v), n, k) * inv_t + v

        v0 = math.log(u)
        level = g(v0) + math.log(rng.random())
        left = v0 - width * rng.random()
        right = left + width
        j = int(rng.random() * max_steps)
        m = max_steps - 1 - j
        while j > 0 and g(left) > level:
            left -= width
            j -= 1
        while m > 0 and g(right) > level:
            right += width
            m -= 1
        while True:
            v1 = left + (right - left) * rng.random()
            if g(v1) > level:
                break
            if v1 < v0:
                left = v1
            else:
                right = v1
        u1 = math.exp(v1)
        d = self.log_u_density(u1, n, k) - self.log_u_density(u, n, k)
        return u1, d

    def __repr__(self):
        return f"NGGP(alpha={self.alpha:g}, sigma={self.sigma:g})"


#: Partition priors by the names users type.
PRIORS = {"dp": DirichletProcess, "nggp": NGGP}


def make_prior(prior="dp", alpha=1.0, sigma=None) -> PartitionPrior:
    """A :class:`PartitionPrior` from a name (``"dp"`` or ``"nggp"``) and
    its parameters, or ``prior`` itself when it is one already.

    Raises
    ------
    InputError
        An unknown name, bad parameters, or ``sigma`` with the DP.
    """
    if isinstance(prior, PartitionPrior):
        return prior
    if prior == "dp":
        if sigma not in (None, 0, 0.0):
            raise InputError("the Dirichlet-process prior has no sigma; use prior='nggp'")
        return DirichletProcess(alpha)
    if prior == "nggp":
        return NGGP(alpha, 0.0 if sigma is None else sigma)
    raise InputError(f"unknown partition prior {prior!r}; choose 'dp' or 'nggp'")
