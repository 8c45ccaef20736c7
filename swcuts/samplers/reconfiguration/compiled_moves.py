"""Compiled primitives of the reconfiguration pass on a mixture's arrays.

Numba functions on the arrays of ``MixtureModel.kernel_arrays``: summed
statistics of a set, the Δ log π of a set leaving or joining a label, the
relabelling (the partition's free-stack swaps, kept O(|R|)), a move with
its undo-log entry and bookkeeping, the undo of a log, and one choice
(drawn from a uniform, scripted, or forced) with its log probability.
They are the building blocks of :mod:`.compiled_pass`; the slot constants
below index its counter and forced-label arrays. See ``docs/algorithms/reconfiguration.md``
(section "Cost").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only
from swcuts._numba.primitives import largest
from swcuts.models.mixture.moves import _sorted_insert, _sorted_remove
from swcuts.models.mixture.marginals import log_marginal
from swcuts.models.mixture.priors import prior_item_join, prior_item_leave, prior_size_change
from swcuts.models.partition import relabel_vertices

# Returned by a forced target that no label fits.
_FAIL = -3
# Slots of the int64 counter array of a compiled pass.
_C_POS, _C_NLOG, _C_NITEMS, _C_EVALS, _C_NUSED, _C_BI, _C_BJ = range(7)
# Slots of the int64 array of forced-pass labels.
_F_ZI, _F_ZJ, _F_LI, _F_LJ = range(4)


@njit(cache=True, inline="always")
def _set_stats(R, vstats, out):
    out[:] = 0.0
    for t in range(R.size):
        for q in range(out.size):
            out[q] += vstats[R[t], q]


@compiled_only
def _set_leave(stR, nR, a, size, lstats, lloglik, kind, params, prior, st_out):
    """Δ log π of the nR items with statistics stR leaving label a (the
    "leave" part) and a's log marginal afterwards (0 when it empties)."""
    n_after = size[a] - nR
    if n_after > 0:
        for q in range(st_out.size):
            st_out[q] = lstats[a, q] - stR[q]
        ll = log_marginal(kind, st_out, params)
        if nR == 1:
            return ll - lloglik[a] + prior_item_leave(prior, size[a]), ll
        return ll - lloglik[a] + prior_size_change(prior, size[a], n_after), ll
    st_out[:] = 0.0
    return -lloglik[a] + prior_size_change(prior, size[a], 0), 0.0


@compiled_only
def _set_join(stR, nR, b, size, lstats, lloglik, kind, params, prior, st_out):
    """The "join" part of the same items joining label b (an unused slot:
    a new label)."""
    for q in range(st_out.size):
        st_out[q] = lstats[b, q] + stR[q]
    ll = log_marginal(kind, st_out, params)
    nb = size[b]
    if nb > 0:
        if nR == 1:
            return ll - lloglik[b] + prior_item_join(prior, nb), ll
        return ll - lloglik[b] + prior_size_change(prior, nb, nb + nR), ll
    return ll + prior_size_change(prior, 0, nR), ll


@njit(cache=True)
def _stack_positions(free_stack):
    """pos[label] = index of the label in the partition's free stack."""
    pos = np.empty(free_stack.size, np.int64)
    for t in range(free_stack.size):
        pos[free_stack[t]] = t
    return pos


@compiled_only
def _move_set(R, stR, new, st, mp, tmp_a, tmp_b):
    """Move the items R (one label) to ``new``; returns the Δ log π."""
    labels, size, free_stack, n_free, lstats, lloglik, vstats, pos = st
    kind, params, prior = mp
    own = labels[R[0]]
    nR = R.size
    d1, ll_a = _set_leave(stR, nR, own, size, lstats, lloglik, kind, params, prior, tmp_a)
    d2, ll_b = _set_join(stR, nR, new, size, lstats, lloglik, kind, params, prior, tmp_b)
    lstats[own, :] = tmp_a
    lloglik[own] = ll_a
    lstats[new, :] = tmp_b
    lloglik[new] = ll_b
    relabel_vertices(labels, size, free_stack, n_free, R, R.size, new, pos)
    return d1 + d2


@compiled_only
def _logged_move(R, new, d_items, st, mp, cnt, fl, log, joined, used, parked, tmp):
    """:func:`_move_set` with the bookkeeping of :meth:`_Pass._apply`: the
    undo log, ``joined`` (items of D moved in/out, ``d_items``) and the
    ascending list ``used[:cnt[_C_NUSED]]`` of the used labels that are not
    parked (so that a candidate list costs O(L), however many cells are
    parked)."""
    labels, size = st[0], st[1]
    log_ptr, log_old, log_new, log_d, log_items = log
    own = labels[R[0]]
    was_empty = size[new] == 0
    t0, t1, t2 = tmp
    _set_stats(R, st[6], t0)
    d = _move_set(R, t0, new, st, mp, t1, t2)
    e = cnt[_C_NLOG]
    p = cnt[_C_NITEMS]
    log_items[p:p + R.size] = R
    log_ptr[e + 1] = p + R.size
    log_old[e] = own
    log_new[e] = new
    log_d[e] = d
    cnt[_C_NLOG] = e + 1
    cnt[_C_NITEMS] = p + R.size
    fl[1] += d
    if d_items:
        joined[own] -= R.size
        joined[new] += R.size
    if was_empty and not parked[new]:
        cnt[_C_NUSED] = _sorted_insert(used, cnt[_C_NUSED], new)
    if size[own] == 0 and not parked[own]:
        cnt[_C_NUSED] = _sorted_remove(used, cnt[_C_NUSED], own)
    return d


@njit(cache=True)
def _undo_log(log, n_log, st, mp, tmp):
    """Undo the first ``n_log`` logged moves, last first; returns Σ Δ undone."""
    log_ptr, log_old, log_new, log_d, log_items = log
    total = 0.0
    t0, t1, t2 = tmp
    for e in range(n_log - 1, -1, -1):
        R = log_items[log_ptr[e]:log_ptr[e + 1]]
        _set_stats(R, st[6], t0)
        _move_set(R, t0, log_old[e], st, mp, t1, t2)
        total += log_d[e]
    return total


@njit(cache=True, inline="always")
def _choose_c(logw, nc, forced_k, mode, u, script, branch, cnt, fl):
    """The choice among ``logw[:nc]`` (forced: ``forced_k``; mode 0: the
    next uniform, as :class:`_RngChooser`; mode 1: the next scripted index,
    recording the branching factor). Adds its log probability to fl[0];
    returns the index, or -1 if it had probability 0. ``logw[nc:2 nc]``
    is scratch."""
    m = largest(logw, nc)
    z = 0.0
    for t in range(nc):
        w = math.exp(logw[t] - m)
        logw[nc + t] = w
        z += w
    if forced_k >= 0:
        k = forced_k
    elif mode == 0:
        r = u[cnt[_C_POS]] * z
        cnt[_C_POS] += 1
        k = -1
        for t in range(nc):
            r -= logw[nc + t]
            if r < 0.0:
                k = t
                break
        if k < 0:
            for t in range(nc):
                if logw[nc + t] > 0.0:
                    k = t
    else:
        pos = cnt[_C_POS]
        k = script[pos] if pos < script.size else 0
        branch[pos] = nc
        cnt[_C_POS] = pos + 1
    lw = logw[k]
    if lw == -np.inf:
        return -1
    fl[0] += lw - (m + math.log(z))
    return k
