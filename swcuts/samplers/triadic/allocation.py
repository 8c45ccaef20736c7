"""Sequential (SAMS) allocation of the triadic kernel, compiled for
mixture-model states (the Python path for any model is
:meth:`~swcuts.samplers.triadic.Triadic._allocate`)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts.models.mixture.moves import item_join, item_leave, item_move
from swcuts.samplers.common import draw_normalized


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
        mx = -np.inf
        for g in range(nt):
            d_join, ll_t[g] = item_join(v, targets[g], size, lstats, lloglik, vstats, kind,
                                        params, prior, st_t[g])
            d[g] = d_leave + d_join
            x[g] = d[g] * inv_t
            if x[g] > mx or math.isnan(x[g]):
                mx = x[g]
        if mx == -np.inf or math.isnan(mx):
            if not is_forced:
                return -np.inf, total
            lse = mx
        else:
            z = 0.0
            for g in range(nt):
                z += math.exp(x[g] - mx)
            lse = mx + math.log(z)
        g = forced[s] if is_forced else draw_normalized(x, lse, u[s])
        lp = x[g] - lse
        log_q += lp if not math.isnan(lp) else -np.inf
        item_move(v, a, targets[g], labels, size, free_stack, n_free, lstats, lloglik, st_a,
                  ll_a, st_t[g], ll_t[g], one)
        total += d[g]
    return log_q, total
