"""Compiled moves of the mixture model: the exact Δ log π of a relabelling,
the single-item leave / join / move updates that every compiled mixture
sampler uses, and single-site Gibbs sweeps.

The change of log π is assembled from the per-label caches (summed
statistics and log marginal of every label), so that its cost is
O(|R| · D) whatever the cluster sizes (``docs/algorithms/mixture.md``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only
from swcuts.models.partition import relabel_vertices
from swcuts.models.mixture.marginals import log_marginal
from swcuts.models.mixture.priors import prior_item_join, prior_item_leave, prior_size_change


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
def _prior_change(k, out_labels, out_counts, size, prior):
    """Change of the partition's log prior for the touched labels
    (``prior``: the state's prior parameters, :mod:`.priors`)."""
    d = 0.0
    for t in range(k):
        d += prior_size_change(prior, size[out_labels[t]], out_counts[t])
    return d


@njit(cache=True)
def mixture_delta(labels, size, R, new_label, vstats, lstats, lloglik, kind, params, prior,
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
    d = _prior_change(k, out_labels, out_counts, size, prior)
    for t in range(k):
        lab = out_labels[t]
        if out_counts[t] > 0:
            d += log_marginal(kind, out_stats[t], params)
        if size[lab] > 0:
            d -= lloglik[lab]
    return d


@njit(cache=True)
def regroup_delta(old_labels, size, lloglik, new_stats, new_counts, kind, params, prior):
    """Exact change of log π when the items of the labels ``old_labels``
    (whole labels, distinct) become ``len(new_counts)`` labels with summed
    statistics ``new_stats`` (rows) and ``new_counts`` items (compiled).

    Σ_g [f(n_g) + log m(S_g)] − Σ_l [f(n_l) + log m(S_l)] with the prior's
    cluster factor f (:func:`.priors.prior_size_change`) and the cached
    marginals ``lloglik`` of the old labels: O((|old| + |new|) · D),
    whatever the labels' sizes (the statistics of a merge or a split are
    sums of label or tree statistics, not of items).
    """
    d = 0.0
    for t in range(old_labels.size):
        lab = old_labels[t]
        d += prior_size_change(prior, size[lab], 0) - lloglik[lab]
    for g in range(new_counts.size):
        if new_counts[g] > 0:
            d += prior_size_change(prior, 0, new_counts[g]) + log_marginal(kind, new_stats[g],
                                                                             params)
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



@compiled_only
def mixture_apply(labels, size, free_stack, n_free, R, new_label, vstats, lstats, lloglik, kind,
                  params, mark, slot_of, out_labels, out_stats, out_counts):
    """:meth:`MixtureModel.apply` for a compiled likelihood (without the
    change of log π, which is the caller's): relabel the items R to
    ``new_label`` and refresh the touched labels' caches. Scratch as in
    :func:`mixture_delta`."""
    k = _gather(labels, size, R, new_label, vstats, lstats, mark, slot_of, out_labels, out_stats,
                out_counts)
    if k == 1:
        return
    _store(k, out_labels, out_stats, out_counts, lstats, lloglik, kind, params)
    relabel_vertices(labels, size, free_stack, n_free, R, R.size, new_label)


# ---------------------------------------------------------------------------
# Compiled single-item moves (the hot path of every mixture sampler)
# ---------------------------------------------------------------------------
#
# The state arrays, in the order every compiled sampler takes them (see
# MixtureModel.kernel_arrays): labels, size, free_stack, n_free (the
# Partition's), lstats, lloglik (the per-label caches), vstats, kind,
# params (the model's), prior (the state's prior parameters [c, σ,
# lgamma(1 − σ)], :mod:`.priors`). Moving item v from label a to label b
# changes log π by a "leave" part that depends on a only and a "join" part
# that depends on b only, which is what makes a restricted scan or a Gibbs
# update cost O(D) per candidate label.


@njit(cache=True)
def item_leave(v, a, size, lstats, lloglik, vstats, kind, params, prior, st_out):
    """Change of log π from item ``v`` leaving its label ``a``.

    Parameters
    ----------
    v, a : int
        The item and its current label.
    size, lstats, lloglik, vstats, kind, params, prior
        State and model arrays (see :meth:`MixtureModel.kernel_arrays`).
    st_out : ndarray of float64, shape (D,)
        Receives the statistics of ``a`` without ``v`` (exact zeros when
        ``a`` empties).

    Returns
    -------
    d : float
        The leave part of Δ log π (partition prior and marginal of ``a``).
    ll : float
        The log marginal of ``a`` without ``v`` (0 when it empties).
    """
    n_after = size[a] - 1
    if n_after > 0:
        for q in range(st_out.size):
            st_out[q] = lstats[a, q] - vstats[v, q]
        ll = log_marginal(kind, st_out, params)
        return ll - lloglik[a] + prior_item_leave(prior, size[a]), ll
    st_out[:] = 0.0
    return -lloglik[a] + prior_item_leave(prior, 1), 0.0


@njit(cache=True)
def item_join(v, b, size, lstats, lloglik, vstats, kind, params, prior, st_out):
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
        return ll - lloglik[b] + prior_item_join(prior, nb), ll
    return ll + prior_item_join(prior, 0), ll


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
                params, prior):
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
        d_leave, ll_a = item_leave(v, a, size, lstats, lloglik, vstats, kind, params, prior,
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
                                      prior, st_b)
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
                                  prior, st_b)
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
        d_join, ll_b = item_join(v, b, size, lstats, lloglik, vstats, kind, params, prior,
                                 st_b)
        item_move(v, a, b, labels, size, free_stack, n_free, lstats, lloglik, st_a, ll_a, st_b,
                  ll_b, one)
        if fresh:
            n_used = _sorted_insert(used, n_used, b)
        if size[a] == 0:
            n_used = _sorted_remove(used, n_used, a)
        total += d_leave + d_join
    return total, evals


@njit(cache=True)
def gibbs_run(items, u, inv_t, log_pi, best_log_pi, best_labels, labels, size, free_stack, n_free,
              lstats, lloglik, vstats, kind, params, prior):
    """The single-site updates of :func:`gibbs_sweep`, one at a time with
    its own inverse temperature ``inv_t[s]``, keeping the best state seen
    (the compiled loop of ``Gibbs.run`` on mixtures).

    ``log_pi`` is the state's log π before the updates; after an update that
    raises it above ``best_log_pi`` by more than 1e-9 (the driver's rule)
    the labels are copied into ``best_labels``.

    Returns
    -------
    log_pi, best_log_pi : float
    moved : int
        Updates that changed the item's label.
    evaluations : int
    """
    moved = 0
    evals = 0
    for s in range(items.size):
        v = items[s]
        old = labels[v]
        d, e = gibbs_sweep(items[s:s + 1], u[s:s + 1], inv_t[s], labels, size, free_stack, n_free,
                           lstats, lloglik, vstats, kind, params, prior)
        evals += e
        log_pi += d
        if labels[v] != old:
            moved += 1
        if log_pi > best_log_pi + 1e-9:
            best_log_pi = log_pi
            best_labels[:] = labels
    return log_pi, best_log_pi, moved, evals
