"""Conjugate Dirichlet-process mixtures: the split-merge samplers' own targets.

The target is the posterior over partitions of n items under a Dirichlet
process (Chinese restaurant process) prior with concentration α and a
conjugate likelihood whose cluster parameters are integrated out:

    log π(X) = L log α + Σ_k lgamma(n_k) + lgamma(α) − lgamma(α + n)
               + Σ_k log m(x_{V_k}),

with L clusters of sizes n_k. The prior part is normalised (it sums to one
over every partition of the n items). The log marginal likelihood m of a
cluster is a function of the cluster's sufficient statistics, which are sums
over its items, so that the model caches one statistics vector per label and
the change of log π when a set R of items is relabelled costs
O(|R| · statistics size), whatever the sizes of the clusters involved.

Three likelihoods, the ones of the seed papers' benchmarks:

* :class:`BetaBernoulli` — binary attributes, independent Beta priors
  (Jain & Neal; Herlau et al. section 3.1);
* :class:`NormalInverseWishart` — multivariate Gaussian with unknown mean and
  covariance (Lee & Choi section 4.1; Murphy 2007);
* :class:`LineMixture` — points scattered about lines y = a x + b with known
  noise and a Gaussian prior on (a, b) (van Rossum et al. section 3).

Each likelihood is a small class with ``stats(x)`` (per item sufficient
statistics, summed over a cluster) and ``log_marginal(stat)``. The built-in
ones also evaluate ``log_marginal`` in compiled code (a ``kind`` code and a
float ``params`` vector, see :func:`log_marginal`), which is what
:meth:`MixtureModel.delta` uses; a user subclass of
:class:`ConjugateLikelihood` with ``kind = None`` works through a slower
Python path.

Data generators reproduce the papers' synthetic benchmarks:
:func:`jain_neal_bernoulli`, :func:`lee_choi_gaussians`, :func:`rossum_lines`.
Their docstrings say which parts the papers specify and which are guesses.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from numba import njit

from ..imageio import InputError
from ..partition import Partition, relabel_vertices
from .base import ModelState

__all__ = [
    "MixtureModel",
    "ConjugateLikelihood",
    "BetaBernoulli",
    "NormalInverseWishart",
    "LineMixture",
    "LIKELIHOODS",
    "crp_log_prior",
    "log_marginal",
    "item_leave",
    "item_join",
    "item_move",
    "gibbs_sweep",
    "jain_neal_bernoulli",
    "lee_choi_gaussians",
    "rossum_lines",
    "JAIN_NEAL_PROBABILITIES",
    "LEE_CHOI_MEANS",
]

KIND_BETA_BERNOULLI = 0
KIND_NIW = 1
KIND_LINES = 2

_LOG_PI = math.log(math.pi)
_LOG_2PI = math.log(2.0 * math.pi)
_LOG2 = math.log(2.0)


# ---------------------------------------------------------------------------
# Compiled log marginal likelihoods
# ---------------------------------------------------------------------------


@njit(cache=True)
def _lm_beta_bernoulli(st, p):
    """Layout of ``st``: [n, Σx_1, ..., Σx_d]; ``p`` = [a, b, ln B(a, b)]."""
    n = st[0]
    a = p[0]
    b = p[1]
    lgab = math.lgamma(a + b + n)
    s = 0.0
    for i in range(1, st.size):
        k = st[i]
        s += math.lgamma(a + k) + math.lgamma(b + n - k) - lgab - p[2]
    return s


@njit(cache=True)
def _lm_niw(st, p):
    """Layout of ``st``: [n, Σy (d), Σyyᵀ (d·d, row-major)] with y = x − μ0;
    ``p`` = [d, κ0, ν0, log|Ψ0|, Ψ0 (d·d), c0] with the constant
    c0 = ½ ν0 log|Ψ0| + ½ d log κ0 − Σ_j log Γ((ν0 − j)/2), j = 0..d−1."""
    n = st[0]
    d = int(p[0])
    kappa0 = p[1]
    nn = p[2] + n
    kn = kappa0 + n
    # Ψn = Ψ0 + Σyyᵀ − (Σy)(Σy)ᵀ / κn (Murphy 2007 with μ0 = 0 after shifting).
    if d == 1:
        det = p[4] + st[2] - st[1] * st[1] / kn
        if det <= 0.0:
            return -np.inf
        logdet = math.log(det)
    elif d == 2:
        # Cholesky of [[a, b], [b, c]] by hand (no allocation).
        a = p[4] + st[3] - st[1] * st[1] / kn
        b = p[6] + st[5] - st[2] * st[1] / kn
        c = p[7] + st[6] - st[2] * st[2] / kn
        if a <= 0.0:
            return -np.inf
        r = c - b * b / a
        if r <= 0.0:
            return -np.inf
        logdet = math.log(a * r)
    else:
        # Cholesky of the lower triangle, in place in a small matrix.
        L = np.empty((d, d))
        for i in range(d):
            for j in range(i + 1):
                L[i, j] = p[4 + i * d + j] + st[1 + d + i * d + j] - st[1 + i] * st[1 + j] / kn
        logdet = 0.0
        for j in range(d):
            s = L[j, j]
            for k in range(j):
                s -= L[j, k] * L[j, k]
            if s <= 0.0:
                return -np.inf
            s = math.sqrt(s)
            L[j, j] = s
            logdet += 2.0 * math.log(s)
            for i in range(j + 1, d):
                t = L[i, j]
                for k in range(j):
                    t -= L[i, k] * L[j, k]
                L[i, j] = t / s
    # Σ_j log Γ((νn − j)/2), the factors paired by the
    # duplication formula Γ(z)Γ(z + ½) = 2^(1−2z) √π Γ(2z), z = (νn − j − 1)/2.
    lg = 0.0
    j = 0
    while j + 1 < d:
        lg += math.lgamma(nn - j - 1.0) + (2.0 - nn + j) * _LOG2 + 0.5 * _LOG_PI
        j += 2
    if j < d:
        lg += math.lgamma(0.5 * (nn - j))
    return -0.5 * n * d * _LOG_PI + lg - 0.5 * nn * logdet - 0.5 * d * math.log(kn) + p[4 + d * d]


@njit(cache=True)
def _lm_lines(st, p):
    """Layout of ``st``: [n, Σx², Σx, Σxy, Σy, Σy²]; ``p`` = [σ², Λ0 (3:
    00, 01, 11), Λ0 m0 (2), m0ᵀΛ0 m0, log|S0|] with Λ0 = S0⁻¹."""
    n = st[0]
    s2 = p[0]
    l00 = p[1] + st[1] / s2
    l01 = p[2] + st[2] / s2
    l11 = p[3] + st[0] / s2
    b0 = p[4] + st[3] / s2
    b1 = p[5] + st[4] / s2
    det = l00 * l11 - l01 * l01
    quad = (l11 * b0 * b0 - 2.0 * l01 * b0 * b1 + l00 * b1 * b1) / det
    return (-0.5 * n * (_LOG_2PI + math.log(s2)) - 0.5 * p[7] - 0.5 * math.log(det)
            - 0.5 * (st[5] / s2 + p[6] - quad))


@njit(cache=True)
def log_marginal(kind, st, params):
    """Log marginal likelihood of one cluster from its statistics vector.

    Parameters
    ----------
    kind : int
        ``KIND_BETA_BERNOULLI``, ``KIND_NIW`` or ``KIND_LINES``.
    st : ndarray of float64
        The cluster's sufficient statistics (the likelihood's layout).
    params : ndarray of float64
        The likelihood's ``params`` vector.

    Returns
    -------
    float
    """
    if kind == KIND_BETA_BERNOULLI:
        return _lm_beta_bernoulli(st, params)
    if kind == KIND_NIW:
        return _lm_niw(st, params)
    return _lm_lines(st, params)


# ---------------------------------------------------------------------------
# Compiled move bookkeeping
# ---------------------------------------------------------------------------


@njit(cache=True)
def _gather(labels, size, R, new_label, vstats, lstats, mark, slot_of,
            out_labels, out_stats, out_counts):
    """Statistics of every label that relabelling R to ``new_label`` touches.

    Fills ``out_labels[:k]`` (``new_label`` first), ``out_stats[:k]`` and
    ``out_counts[:k]`` with the labels, their statistics after the move and
    their sizes after the move; returns k. Duplicates in R count once.
    ``mark`` and ``slot_of`` (−1 everywhere) are restored before returning.
    Cost O(|R| · D).
    """
    n = labels.size
    D = vstats.shape[1]
    for v in R:
        if v < 0 or v >= n:
            raise IndexError("an item of R lies outside 0..n-1")
    out_labels[0] = new_label
    for q in range(D):
        out_stats[0, q] = lstats[new_label, q]
    out_counts[0] = size[new_label]
    k = 1
    for v in R:
        if mark[v]:
            continue
        mark[v] = 1
        old = labels[v]
        if old == new_label:
            continue
        slot = slot_of[old]
        if slot < 0:
            slot = k
            slot_of[old] = k
            out_labels[k] = old
            for q in range(D):
                out_stats[k, q] = lstats[old, q]
            out_counts[k] = size[old]
            k += 1
        # Explicit loops: slice arithmetic would allocate a temporary per item.
        for q in range(D):
            out_stats[slot, q] -= vstats[v, q]
            out_stats[0, q] += vstats[v, q]
        out_counts[slot] -= 1
        out_counts[0] += 1
    for v in R:
        mark[v] = 0
    for t in range(1, k):
        slot_of[out_labels[t]] = -1
    return k


@njit(cache=True)
def _prior_change(k, out_labels, out_counts, size, log_alpha):
    """Change of the CRP log prior for the touched labels."""
    d = 0.0
    for t in range(k):
        before = size[out_labels[t]]
        after = out_counts[t]
        if after > 0:
            d += math.lgamma(after)
            if before == 0:
                d += log_alpha
        if before > 0:
            d -= math.lgamma(before)
            if after == 0:
                d -= log_alpha
    return d


@njit(cache=True)
def mixture_delta(labels, size, R, new_label, vstats, lstats, lloglik, kind, params, log_alpha,
                  mark, slot_of, out_labels, out_stats, out_counts):
    """Exact change of log π when the items R get ``new_label`` (compiled).

    Arrays as in :class:`MixtureModel` (``lstats``/``lloglik`` per label slot);
    ``mark``, ``slot_of`` and the ``out_*`` arrays are scratch space (see
    :func:`_gather`). Nothing else is modified.
    """
    k = _gather(labels, size, R, new_label, vstats, lstats, mark, slot_of,
                out_labels, out_stats, out_counts)
    if k == 1:
        return 0.0
    d = _prior_change(k, out_labels, out_counts, size, log_alpha)
    for t in range(k):
        lab = out_labels[t]
        if out_counts[t] > 0:
            d += log_marginal(kind, out_stats[t], params)
        if size[lab] > 0:
            d -= lloglik[lab]
    return d


@njit(cache=True)
def _store(k, out_labels, out_stats, out_counts, lstats, lloglik, kind, params):
    """Write the gathered statistics back and refresh the cached marginals."""
    for t in range(k):
        lab = out_labels[t]
        if out_counts[t] > 0:
            lstats[lab, :] = out_stats[t]
            lloglik[lab] = log_marginal(kind, out_stats[t], params)
        else:  # an emptied label starts again from exact zeros
            lstats[lab, :] = 0.0
            lloglik[lab] = 0.0


# ---------------------------------------------------------------------------
# Compiled single-item moves (the hot path of every mixture sampler)
# ---------------------------------------------------------------------------
#
# The state arrays, in the order every compiled sampler takes them (see
# MixtureModel.kernel_arrays): labels, size, free_stack, n_free (the
# Partition's), lstats, lloglik (the per-label caches), vstats, kind,
# params, log_alpha (the model's). Moving item v from label a to label b
# changes log π by a "leave" part that depends on a only and a "join" part
# that depends on b only, which is what makes a restricted scan or a Gibbs
# update cost O(D) per candidate label.


@njit(cache=True)
def item_leave(v, a, size, lstats, lloglik, vstats, kind, params, log_alpha, st_out):
    """Change of log π from item ``v`` leaving its label ``a``.

    Parameters
    ----------
    v, a : int
        The item and its current label.
    size, lstats, lloglik, vstats, kind, params, log_alpha
        State and model arrays (see :meth:`MixtureModel.kernel_arrays`).
    st_out : ndarray of float64, shape (D,)
        Receives the statistics of ``a`` without ``v`` (exact zeros when
        ``a`` empties).

    Returns
    -------
    d : float
        The leave part of Δ log π (CRP prior and marginal of ``a``).
    ll : float
        The log marginal of ``a`` without ``v`` (0 when it empties).
    """
    n_after = size[a] - 1
    if n_after > 0:
        for q in range(st_out.size):
            st_out[q] = lstats[a, q] - vstats[v, q]
        ll = log_marginal(kind, st_out, params)
        # lgamma(n − 1) − lgamma(n) = −log(n − 1)
        return ll - lloglik[a] - math.log(n_after), ll
    st_out[:] = 0.0
    return -lloglik[a] - log_alpha, 0.0  # lgamma(1) = 0


@njit(cache=True)
def item_join(v, b, size, lstats, lloglik, vstats, kind, params, log_alpha, st_out):
    """Change of log π from item ``v`` (not in ``b``) joining label ``b``.

    ``b`` may be an unused slot (a new cluster; its statistics are exact
    zeros). Arguments as in :func:`item_leave`; ``st_out`` receives the
    statistics of ``b`` with ``v``. Returns (join part of Δ log π, log
    marginal of ``b`` with ``v``). Together with :func:`item_leave` this is
    the log posterior predictive of ``v`` under ``b`` times the CRP weight.
    """
    for q in range(st_out.size):
        st_out[q] = lstats[b, q] + vstats[v, q]
    ll = log_marginal(kind, st_out, params)
    nb = size[b]
    if nb > 0:
        return ll - lloglik[b] + math.log(nb), ll
    return ll + log_alpha, ll


@njit(cache=True)
def item_move(v, a, b, labels, size, free_stack, n_free, lstats, lloglik, st_a, ll_a, st_b,
              ll_b, one):
    """Move item ``v`` from ``a`` to ``b`` with the statistics and marginals
    that :func:`item_leave` / :func:`item_join` computed; keeps the
    partition's sizes and free stack consistent. ``one`` is an int64
    scratch array of length 1."""
    lstats[a, :] = st_a
    lloglik[a] = ll_a
    lstats[b, :] = st_b
    lloglik[b] = ll_b
    one[0] = v
    relabel_vertices(labels, size, free_stack, n_free, one, 1, b)


@njit(cache=True)
def _sorted_insert(arr, n, x):
    """Insert x into the ascending ``arr[:n]``; returns the new length."""
    t = n
    while t > 0 and arr[t - 1] > x:
        arr[t] = arr[t - 1]
        t -= 1
    arr[t] = x
    return n + 1


@njit(cache=True)
def _sorted_remove(arr, n, x):
    """Remove x from the ascending ``arr[:n]``; returns the new length."""
    t = 0
    while arr[t] != x:
        t += 1
    for r in range(t, n - 1):
        arr[r] = arr[r + 1]
    return n - 1


@njit(cache=True)
def gibbs_sweep(items, u, inv_t, labels, size, free_stack, n_free, lstats, lloglik, vstats, kind,
                params, log_alpha):
    """Single-site Gibbs updates of ``items`` in turn (compiled).

    Item v is relabelled from π(x_v = k | rest)^(1/T) over every existing
    label and one fresh label (when v is alone, the fresh label is staying
    put), the conditional of :func:`swcuts.samplers.targets.gibbs_relabel`,
    with its candidates in its order (existing labels ascending, then the
    fresh one; when v is alone, its own label last) and its inverse-CDF
    draw, so that the same uniforms ``u`` (one per item) give the same
    moves. Cost O(L · D) per item, L the number of labels.

    Returns
    -------
    delta : float
        Total Δ log π.
    evaluations : int
        Number of (item, label) predictive evaluations.
    """
    D = vstats.shape[1]
    n_slots = size.size
    st_a = np.empty(D)
    st_b = np.empty(D)
    n_used = n_slots - n_free[0]
    cap = min(n_slots, n_used + items.size) + 1
    used = np.empty(cap, np.int64)  # the used labels, ascending
    used[:n_used] = np.sort(free_stack[n_free[0]:])
    logw = np.empty(cap + 1)
    tlab = np.empty(cap + 1, np.int64)
    one = np.empty(1, np.int64)
    total = 0.0
    evals = 0
    for s in range(items.size):
        v = items[s]
        a = labels[v]
        whole = size[a] == 1
        d_leave, ll_a = item_leave(v, a, size, lstats, lloglik, vstats, kind, params, log_alpha,
                                   st_a)
        nt = 0
        mx = 0.0
        for t in range(n_used):
            b = used[t]
            if b == a:
                if whole:
                    continue  # staying alone is the "fresh label", listed last
                logw[nt] = 0.0
            else:
                d_join, _ = item_join(v, b, size, lstats, lloglik, vstats, kind, params,
                                      log_alpha, st_b)
                logw[nt] = (d_leave + d_join) * inv_t
                evals += 1
            tlab[nt] = b
            if logw[nt] > mx:
                mx = logw[nt]
            nt += 1
        if whole:
            tlab[nt] = a
            logw[nt] = 0.0
        else:
            b = free_stack[n_free[0] - 1]
            d_join, _ = item_join(v, b, size, lstats, lloglik, vstats, kind, params,
                                  log_alpha, st_b)
            tlab[nt] = b
            logw[nt] = (d_leave + d_join) * inv_t
            evals += 1
            if logw[nt] > mx:
                mx = logw[nt]
        nt += 1
        z = 0.0
        for t in range(nt):
            logw[t] = math.exp(logw[t] - mx)
            z += logw[t]
        r = u[s] * z
        g = nt - 1
        for t in range(nt):
            r -= logw[t]
            if r < 0.0:
                g = t
                break
        b = tlab[g]
        if b == a:
            continue
        fresh = size[b] == 0
        d_join, ll_b = item_join(v, b, size, lstats, lloglik, vstats, kind, params, log_alpha,
                                 st_b)
        item_move(v, a, b, labels, size, free_stack, n_free, lstats, lloglik, st_a, ll_a, st_b,
                  ll_b, one)
        if fresh:
            n_used = _sorted_insert(used, n_used, b)
        if size[a] == 0:
            n_used = _sorted_remove(used, n_used, a)
        total += d_leave + d_join
    return total, evals


# ---------------------------------------------------------------------------
# The CRP prior
# ---------------------------------------------------------------------------


def crp_log_prior(sizes, alpha: float) -> float:
    """Log probability of a partition with the given cluster sizes under the
    Chinese restaurant process with concentration ``alpha``.

    Parameters
    ----------
    sizes : array_like of int
        Sizes n_k of the non-empty clusters (zeros are ignored).
    alpha : float
        Concentration α > 0.

    Returns
    -------
    float
        L log α + Σ_k lgamma(n_k) + lgamma(α) − lgamma(α + n).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    n = int(sizes.sum())
    return float(sizes.size * math.log(alpha) + sum(math.lgamma(s) for s in sizes.tolist())
                 + math.lgamma(alpha) - math.lgamma(alpha + n))


# ---------------------------------------------------------------------------
# Likelihoods
# ---------------------------------------------------------------------------


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
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0.0):
        raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def _spd(matrix, d, name) -> np.ndarray:
    """A symmetric positive definite (d, d) float matrix, or an InputError."""
    m = np.asarray(matrix, dtype=np.float64)
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

    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        one = x.ndim == 1
        x = np.atleast_2d(x)
        st = np.empty((x.shape[0], 1 + x.shape[1]))
        st[:, 0] = 1.0
        st[:, 1:] = x
        return st[0] if one else st

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
        self.nu0 = None if nu0 is None else float(nu0)
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
            mu0 = np.asarray(new.mu0, dtype=np.float64).reshape(-1)
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

    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        one = x.ndim == 1
        y = np.atleast_2d(x) - self.mu0
        n, d = y.shape
        st = np.empty((n, 1 + d + d * d))
        st[:, 0] = 1.0
        st[:, 1:1 + d] = y
        st[:, 1 + d:] = (y[:, :, None] * y[:, None, :]).reshape(n, d * d)
        return st[0] if one else st

    def __repr__(self):
        if not self.bound:
            return f"NormalInverseWishart(preset={self.preset!r}, unbound)"
        return (f"NormalInverseWishart(mu0={np.round(self.mu0, 4).tolist()}, kappa0={self.kappa0:g}, "
                f"nu0={self.nu0:g}, Psi0={np.round(self.Psi0, 4).tolist()})")


#: Default prior standard deviation of line slopes and intercepts, shared
#: by :class:`LineMixture` and :func:`rossum_lines`.
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
        Default :data:`LINE_NOISE_SD`, the noise of :func:`rossum_lines`.
    prior_mean : scalar or (2,) array
        m0 = (slope, intercept) prior mean.
    prior_cov : scalar, (2,) or (2, 2) array, optional
        S0 (scalar: times the identity; vector: diagonal). Default
        ``LINE_PRIOR_SD**2 * I``, the generating prior of :func:`rossum_lines`.

    Notes
    -----
    Data: an (n, 2) array of points (x, y). Statistics layout:
    [n, Σx², Σx, Σxy, Σy, Σy²].
    """

    name = "lines"
    kind = KIND_LINES

    def __init__(self, sigma=LINE_NOISE_SD, prior_mean=0.0, prior_cov=None):
        self.sigma = _positive(sigma, "line noise sigma")
        m0 = np.asarray(prior_mean, dtype=np.float64).reshape(-1)
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

    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        one = x.ndim == 1
        x = np.atleast_2d(x)
        u, y = x[:, 0], x[:, 1]
        st = np.stack([np.ones_like(u), u * u, u, u * y, y, y * y], axis=1)
        return st[0] if one else st

    def __repr__(self):
        return (f"LineMixture(sigma={self.sigma:g}, prior_mean={self.prior_mean.tolist()}, "
                f"prior_cov={self.prior_cov.tolist()})")


#: Likelihoods by the names users type.
LIKELIHOODS = {
    "beta-bernoulli": BetaBernoulli,
    "gaussian": NormalInverseWishart,
    "lines": LineMixture,
}


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class _FixedUniform:
    """A stand-in generator whose ``random()`` returns one given uniform."""

    def __init__(self, u):
        self.u = float(u)

    def random(self):
        return self.u


class MixtureModel:
    """Dirichlet-process mixture posterior over partitions of data items.

    Parameters
    ----------
    data : array_like, shape (n, d)
        The items (rows). A 1-D array is n items with one feature (not for
        ``"lines"``, which needs exactly two columns x, y).
    likelihood : {"beta-bernoulli", "gaussian", "lines"} or ConjugateLikelihood
        The cluster likelihood, by name or as an instance (which may be
        unbound; the model binds a copy to the data).
    alpha : float
        CRP concentration α > 0.
    **likelihood_kwargs
        Passed to the likelihood class when it is given by name, e.g.
        ``a``, ``b`` (Beta-Bernoulli), ``mu0``, ``kappa0``, ``nu0``,
        ``Psi0``, ``preset`` (Gaussian), ``sigma``, ``prior_mean``,
        ``prior_cov`` (lines).

    Attributes
    ----------
    data : ndarray, float64 (n, d)
    likelihood : ConjugateLikelihood
        The bound likelihood.
    alpha : float
    vstats : ndarray (n, D)
        Per-item sufficient statistics.
    graph : None
        Mixture items have no graph; kernels use their graph-free paths.

    Notes
    -----
    The model interface is that of every swcuts model: :meth:`new_state`,
    :meth:`log_target` (slow, from scratch), :meth:`delta` (exact change of
    log π for a relabelling, O(|R| · D), state unchanged) and :meth:`apply`.
    A state caches per label slot the summed statistics (``state.stats``) and
    the log marginal likelihood (``state.loglik``, 0 for empty slots).

    Raises
    ------
    InputError
        Bad data, alpha or hyperparameters (one-line message).
    TypeError
        ``likelihood`` of the wrong type, or keyword arguments that the
        likelihood does not take.
    """

    graph = None

    def __init__(self, data, likelihood="beta-bernoulli", alpha=1.0, **likelihood_kwargs):
        if isinstance(likelihood, str):
            cls = LIKELIHOODS.get(likelihood)
            if cls is None:
                raise InputError(f"unknown mixture likelihood {likelihood!r}; choose from "
                                 f"{', '.join(LIKELIHOODS)}")
            try:
                lik = cls(**likelihood_kwargs)
            except TypeError as exc:
                raise TypeError(f"{likelihood} likelihood: {exc}".splitlines()[0]) from None
        elif (callable(getattr(likelihood, "stats", None))
              and callable(getattr(likelihood, "log_marginal", None))):
            if likelihood_kwargs:
                raise TypeError("likelihood keyword arguments apply only to a likelihood given by name")
            lik = likelihood
        else:
            raise TypeError(f"likelihood must be one of {', '.join(LIKELIHOODS)} or a "
                            f"ConjugateLikelihood, got {type(likelihood).__name__}")
        self.alpha = _positive(alpha, "alpha")
        self.log_alpha = math.log(self.alpha)
        validate = getattr(lik, "validate", None)
        self.data = validate(data) if callable(validate) else _data_matrix(data)
        bind = getattr(lik, "bind", None)
        self.likelihood = bind(self.data) if callable(bind) else lik
        self.vstats = np.ascontiguousarray(self.likelihood.stats(self.data), dtype=np.float64)
        if self.vstats.ndim != 2 or self.vstats.shape[0] != self.data.shape[0]:
            raise TypeError("likelihood.stats must return one statistics row per item")
        kind = getattr(self.likelihood, "kind", None)
        self._kind = -1 if kind is None else int(kind)
        self._params = (np.zeros(1) if kind is None
                        else np.ascontiguousarray(self.likelihood.params, dtype=np.float64))
        self._const = math.lgamma(self.alpha) - math.lgamma(self.alpha + self.n_vertices)
        #: Item evaluations so far: |R| per :meth:`delta` call, one per
        #: (item, label) predictive in the compiled sampler paths (for
        #: benchmarks: the work a move does).
        self.evaluations = 0

    # ------------------------------------------------------------ helpers
    @property
    def n_vertices(self) -> int:
        """Number of items n (the vertices of the partition)."""
        return self.data.shape[0]

    @property
    def n_items(self) -> int:
        return self.data.shape[0]

    @property
    def n_stats(self) -> int:
        """Length of a statistics row."""
        return self.vstats.shape[1]

    def _lm(self, st) -> float:
        if self._kind < 0:
            return float(self.likelihood.log_marginal(st))
        return float(log_marginal(self._kind, st, self._params))

    def _labels(self, labels) -> np.ndarray:
        labels = np.asarray(labels)
        if labels.shape != (self.n_vertices,) or labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be {self.n_vertices} integers, got shape {labels.shape} "
                             f"dtype {labels.dtype}")
        return labels.astype(np.int64)

    def cluster_stats(self, items) -> np.ndarray:
        """Summed sufficient statistics of a set of items."""
        return self.vstats[np.asarray(items, dtype=np.int64)].sum(axis=0)

    def log_prior(self, labels) -> float:
        """CRP log prior of a labelling (labels are names only)."""
        labels = self._labels(labels)
        return crp_log_prior(np.bincount(labels), self.alpha)

    def log_likelihood(self, labels) -> float:
        """Σ_k log m(x_{V_k}) of a labelling, from scratch."""
        labels = self._labels(labels)
        _, inv = np.unique(labels, return_inverse=True)
        lstats = np.zeros((inv.max() + 1, self.vstats.shape[1]))
        np.add.at(lstats, inv, self.vstats)
        return float(sum(self._lm(s) for s in lstats))

    @property
    def compiled_likelihood(self) -> bool:
        """Whether the likelihood has a compiled marginal, so that samplers
        can run their restricted scans and sweeps compiled
        (:meth:`kernel_arrays`)."""
        return self._kind >= 0

    def kernel_arrays(self, state) -> tuple:
        """The arrays compiled mixture samplers take, in their order.

        Returns
        -------
        tuple
            ``(labels, size, free_stack, n_free, lstats, lloglik, vstats,
            kind, params, log_alpha)``: the partition's arrays, the state's
            per-label caches (all updated in place by the compiled moves)
            and the model's constants. Only for :attr:`compiled_likelihood`.
        """
        part = state.partition
        return (part.labels, part.size, part.free_stack, part.n_free, state.stats, state.loglik,
                self.vstats, self._kind, self._params, self.log_alpha)

    def gibbs_sweep(self, state, rng, temperature=1.0, n_updates=None) -> float:
        """Random-scan single-site Gibbs: ``n_updates`` (default n) updates
        at uniformly random items, compiled when the likelihood is.

        Each update draws the item's label from π(x_v = k | rest)^(1/T) over
        every label and a fresh one. Returns the Δ log π (also added to
        ``state.log_pi``).
        """
        n = self.n_vertices if n_updates is None else int(n_updates)
        items = rng.integers(0, self.n_vertices, size=n)
        u = rng.random(n)
        if not self.compiled_likelihood:
            from ..samplers.targets import gibbs_relabel

            before = state.log_pi
            for s in range(n):
                gibbs_relabel(self, state, items[s:s + 1], _FixedUniform(u[s]), temperature)
            return state.log_pi - before
        return self.gibbs_sweep_items(state, items, u, temperature)

    def gibbs_sweep_items(self, state, items, u, temperature=1.0) -> float:
        """Single-site Gibbs updates of ``items`` in the given order, with
        one uniform of ``u`` per update (compiled likelihoods only; see
        :meth:`gibbs_sweep`). Returns the Δ log π (also added to
        ``state.log_pi``)."""
        d, evals = gibbs_sweep(np.ascontiguousarray(items, dtype=np.int64),
                               np.ascontiguousarray(u, dtype=np.float64),
                               1.0 / float(temperature), *self.kernel_arrays(state))
        self.evaluations += int(evals)
        state.log_pi += d
        return float(d)

    # ---------------------------------------------------------- interface
    def log_target(self, labels) -> float:
        """log π of a labelling, computed from scratch (the slow path)."""
        return self.log_prior(labels) + self.log_likelihood(labels)

    def new_state(self, labels) -> ModelState:
        """A chain state for ``labels`` (one label per item, values 0..n-1)."""
        labels = self._labels(labels)
        part = Partition(labels)
        n = part.n_vertices
        D = self.vstats.shape[1]
        lstats = np.zeros((n, D))
        np.add.at(lstats, part.labels, self.vstats)
        loglik = np.zeros(n)
        for lab in part.used_labels().tolist():
            loglik[lab] = self._lm(lstats[lab])
        log_pi = crp_log_prior(part.size, self.alpha) + float(loglik.sum())
        state = ModelState(part, lstats, loglik, log_pi)
        state.scratch = (np.full(n, -1, np.int64), np.empty(n + 1, np.int64),
                         np.empty((n + 1, D)), np.empty(n + 1, np.int64))
        return state

    def _check_move(self, R, new_label):
        R = np.ascontiguousarray(R, dtype=np.int64).reshape(-1)
        new_label = int(new_label)
        n = self.n_vertices
        if not 0 <= new_label < n:
            raise IndexError(f"new_label {new_label} outside the label slots 0..{n - 1}")
        return R, new_label

    def delta(self, state: ModelState, R, new_label: int) -> float:
        """Exact change of log π when the items ``R`` get ``new_label``.

        ``R`` may span several labels and contain items that already carry
        ``new_label`` (they stay); ``new_label`` is an existing label or an
        unused slot (a new cluster). The state is not modified. Cost
        O(|R| · D) plus one marginal per touched label.
        """
        R, new_label = self._check_move(R, new_label)
        self.evaluations += R.size
        part = state.partition
        slot_of, out_labels, out_stats, out_counts = state.scratch
        if self._kind >= 0:
            return mixture_delta(part.labels, part.size, R, new_label, self.vstats, state.stats,
                                 state.loglik, self._kind, self._params, self.log_alpha,
                                 state.work.mark_c, slot_of, out_labels, out_stats, out_counts)
        k = _gather(part.labels, part.size, R, new_label, self.vstats, state.stats,
                    state.work.mark_c, slot_of, out_labels, out_stats, out_counts)
        if k == 1:
            return 0.0
        d = _prior_change(k, out_labels, out_counts, part.size, self.log_alpha)
        for t in range(k):
            lab = int(out_labels[t])
            if out_counts[t] > 0:
                d += self._lm(out_stats[t])
            if part.size[lab] > 0:
                d -= state.loglik[lab]
        return float(d)

    def apply(self, state: ModelState, R, new_label: int, delta: float) -> None:
        """Relabel ``R`` to ``new_label``, update the per-label caches, and
        add ``delta`` (what :meth:`delta` returned for this move) to log π."""
        R, new_label = self._check_move(R, new_label)
        part = state.partition
        slot_of, out_labels, out_stats, out_counts = state.scratch
        k = _gather(part.labels, part.size, R, new_label, self.vstats, state.stats,
                    state.work.mark_c, slot_of, out_labels, out_stats, out_counts)
        if k == 1:
            return
        if self._kind >= 0:
            _store(k, out_labels, out_stats, out_counts, state.stats, state.loglik,
                   self._kind, self._params)
        else:
            for t in range(k):
                lab = int(out_labels[t])
                if out_counts[t] > 0:
                    state.stats[lab] = out_stats[t]
                    state.loglik[lab] = self._lm(out_stats[t])
                else:
                    state.stats[lab] = 0.0
                    state.loglik[lab] = 0.0
        part.relabel(R, new_label)
        state.log_pi += float(delta)

    def __repr__(self):
        n, d = self.data.shape
        return f"MixtureModel(n={n}, d={d}, likelihood={self.likelihood!r}, alpha={self.alpha:g})"


# ---------------------------------------------------------------------------
# The papers' synthetic data
# ---------------------------------------------------------------------------

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
    fit is :class:`BetaBernoulli` with a = b = α = 1.

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
      :class:`LineMixture`, whose defaults match these values;
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
