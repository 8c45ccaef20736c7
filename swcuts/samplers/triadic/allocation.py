"""Sequential (SAMS) allocation of the triadic kernel, compiled for
mixture-model states (the Python path for any model is
:meth:`~swcuts.samplers.triadic.Triadic._allocate`)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.primitives import largest, log_sum_exp
from swcuts.models.mixture.moves import item_join, item_leave, item_move
from swcuts.samplers.common import draw_normalized


@njit(cache=True)
def choose_target(x, forced_g, u):
    """One choice of the sequential allocation: the target g drawn with
    probability exp(x[g] − log Σ exp x) from the uniform ``u`` (or ``forced_g``
    when it is not −1), and the log of that probability (−inf if NaN). With
    no possible target (the largest x −inf or NaN, as Python's ``max``
    reads it) and none forced: (−1, −inf).

    Examples
    --------
    >>> g, lp = choose_target(np.log(np.array([0.25, 0.75])), -1, 0.3)
    >>> int(g), round(float(lp), 4)
    (1, -0.2877)
    """
    mx = largest(x, x.size)
    if mx == -math.inf or mx != mx:
        if forced_g < 0:
            return -1, -math.inf
        lse = mx
    else:
        lse = log_sum_exp(x, x.size)
    g = forced_g if forced_g >= 0 else draw_normalized(x, lse, u)
    lp = x[g] - lse
    return g, (lp if lp == lp else -math.inf)


@njit(cache=True)
def _allocate_mixture(items, targets, inv_t, u, forced, labels, size, free_stack, n_free, lstats,
                      lloglik, vstats, kind, params, prior):
    """Sequential allocation of ``items`` to ``targets`` on a mixture-model
    state, compiled: the same allocation as :meth:`Triadic._allocate` (same
    uniforms ``u``, or the forced choices ``forced``; the other one empty),
    with Δ_g = leave part of the holding label + join part of target g
    (:func:`~swcuts.models.mixture.item_leave`, :func:`~swcuts.models.mixture.item_join`).
    The state arrays are those of
    :meth:`~swcuts.models.mixture.MixtureModel.kernel_arrays`.

    Returns
    -------
    log_q : float
        Log of the product of the probabilities of the choices (−inf as in
        :meth:`Triadic._allocate`).
    delta : float
        Δ log π of the moves made.
    """
    is_forced = forced.size > 0
    D = vstats.shape[1]
    nt = targets.size
    st_a = np.empty(D)
    st_t = np.empty((nt, D))
    ll_t = np.empty(nt)
    d = np.empty(nt)
    x = np.empty(nt)
    one = np.empty(1, np.int64)
    log_q = 0.0
    total = 0.0
    for s in range(items.size):
        v = items[s]
        a = labels[v]
        d_leave, ll_a = item_leave(v, a, size, lstats, lloglik, vstats, kind, params, prior,
                                   st_a)
        for g in range(nt):
            d_join, ll_t[g] = item_join(v, targets[g], size, lstats, lloglik, vstats, kind,
                                        params, prior, st_t[g])
            d[g] = d_leave + d_join
            x[g] = d[g] * inv_t
        g, lp = choose_target(x, forced[s] if is_forced else -1, u[s] if u.size else 0.0)
        if g < 0:
            return -np.inf, total
        log_q += lp
        item_move(v, a, targets[g], labels, size, free_stack, n_free, lstats, lloglik, st_a,
                  ll_a, st_t[g], ll_t[g], one)
        total += d[g]
    return log_q, total
