"""Compiled primitives that models and samplers share, written once.

* :func:`find` — the root of a union-find forest, with path halving;
* :func:`union` — join two trees of a union-find forest (the larger root
  under the smaller);
* :func:`number_components` — the components of a union-find forest,
  numbered in the order of their first vertex;
* :func:`mh_accept` — the Metropolis-Hastings decision of compiled code,
  the twin of :func:`swcuts.samplers.common.metropolis_hastings` (no
  uniform is drawn when the ratio is at least 1);
* :func:`mh_decide` — the same rule as
  :func:`~swcuts.samplers.common.metropolis_hastings` exactly, drawing from a
  ``numpy.random.Generator`` (the caller's stream, not the compiled one);
* :func:`mh_threshold` — the bound-first form of that decision: the
  uniform is drawn first and turned into the smallest Δ log π that is
  accepted, so that a model can reject from an upper bound of Δ without
  computing it exactly (the decision is the same as with the exact ratio);
* :func:`draw_log_weights` — a draw from weights given by their logarithms
  (the Gibbs draw over labels);
* :func:`largest` — the largest of the first entries of an array;
* :func:`log_sum_exp` — log Σ exp of the first entries of an array;
* :func:`gather_marked` — the entries of a list that a mark array flags,
  in order;
* :func:`compiled_only` — the decorator of kernels that compiled code calls.

This module depends on numpy and numba only, so that both
:mod:`swcuts.models` and :mod:`swcuts.samplers` can import it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only

__all__ = ["find", "union", "number_components", "mh_accept", "mh_decide", "mh_threshold", "draw_log_weights", "largest", "log_sum_exp",
           "gather_marked", "compiled_only"]


@njit(cache=True, inline="always")
def find(parent, g):
    """Root of ``g`` in the union-find forest ``parent`` (path halving)."""
    while parent[g] != g:
        parent[g] = parent[parent[g]]
        g = parent[g]
    return g


@njit(cache=True, inline="always")
def union(parent, i, j):
    """Join the trees of ``i`` and ``j`` in the union-find forest ``parent``
    (the larger root goes under the smaller)."""
    ri = find(parent, i)
    rj = find(parent, j)
    if ri < rj:
        parent[rj] = ri
    elif rj < ri:
        parent[ri] = rj


@njit(cache=True, inline="always")
def number_components(parent, comp):
    """Fill ``comp`` with the component of every vertex of the union-find
    forest ``parent``, numbered 0, 1, ... in the order of each component's
    smallest vertex (scipy's ``connected_components`` numbering); returns
    the number of components."""
    n = parent.size
    n_comp = 0
    root_id = -np.ones(n, np.int64)
    for v in range(n):
        r = find(parent, v)
        if root_id[r] < 0:
            root_id[r] = n_comp
            n_comp += 1
        comp[v] = root_id[r]
    return n_comp


@njit(cache=True, inline="always")
def mh_accept(log_alpha):
    """Accept with probability min(1, e^log_alpha); a uniform is drawn only
    when log_alpha < 0. Unlike :func:`~swcuts.samplers.common.metropolis_hastings`
    it draws one also at log_alpha = −inf or NaN (and rejects), which keeps
    the random stream of the compiled kernels as it has always been."""
    return log_alpha >= 0.0 or np.random.random() < math.exp(log_alpha)


@njit(cache=True, inline="always")
def mh_decide(log_alpha, rng):
    """:func:`~swcuts.samplers.common.metropolis_hastings` in compiled code:
    accept with probability min(1, e^log_alpha), the uniform drawn from the
    Generator ``rng`` only when −inf < log_alpha < 0 (so a compiled run and
    the Python steps draw the same numbers from the same generator)."""
    if log_alpha >= 0.0:
        return True
    if log_alpha == -math.inf or log_alpha != log_alpha:
        return False
    return rng.random() < math.exp(log_alpha)


@njit(cache=True, inline="always")
def mh_threshold(T, log_rest):
    """The bound-first MH decision: draws the uniform u now and returns
    T · (log u − log_rest). A move whose Δ log π is ``d`` is accepted iff
    ``d > threshold`` (⇔ u < e^(d/T + log_rest)), so any upper bound of d
    at or below the threshold rejects it with the same decision."""
    return T * (math.log(np.random.random()) - log_rest)


@compiled_only
def draw_log_weights(logw, n, best):
    """Draw an index of ``logw[:n]`` with probability ∝ exp(logw), ``best``
    the largest of them. Overwrites ``logw[:n]`` with exp(logw − best);
    draws one uniform."""
    z = 0.0
    for t in range(n):
        logw[t] = math.exp(logw[t] - best)
        z += logw[t]
    u = np.random.random() * z
    pick = n - 1
    for t in range(n):
        if u < logw[t]:
            pick = t
            break
        u -= logw[t]
    return pick


@njit(cache=True, inline="always")
def largest(logw, n):
    """The largest of ``logw[:n]`` (the first of equals; ``logw[0]`` when n ≤ 1)."""
    mx = logw[0]
    for i in range(1, n):
        if logw[i] > mx:
            mx = logw[i]
    return mx


@njit(cache=True)
def log_sum_exp(logw, n):
    """log Σ_{i<n} exp(logw[i]), with the largest term factored out."""
    mx = largest(logw, n)
    acc = 0.0
    for i in range(n):
        acc += math.exp(logw[i] - mx)
    return mx + math.log(acc)



@njit(cache=True, inline="always")
def gather_marked(items, n, marked, out):
    """Copy the entries x of ``items[:n]`` with ``marked[x]`` set to the
    front of ``out``, in order; returns how many."""
    k = 0
    for t in range(n):
        x = items[t]
        if marked[x]:
            out[k] = x
            k += 1
    return k


@njit(cache=True)
def _block_sum(a, lo, n):
    """numpy's sum of a block of at most 128 (``pairwise_sum_DOUBLE``):
    one accumulator below 8 items, else eight, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise_sum(a, lo, n):
    """numpy's pairwise sum of ``a[lo:lo + n]``: blocks of at most 128
    (:func:`_block_sum`), larger ranges halved (the first half a multiple
    of 8) and the halves' sums added, left + right. Without recursion (a
    recursive function compiled with ``cache=True`` is not safe to load):
    a stack of ranges, -1 marking an addition of the last two sums."""
    if n <= 128:
        return _block_sum(a, lo, n)
    todo_lo = np.empty(256, np.int64)
    todo_n = np.empty(256, np.int64)
    vals = np.empty(128)
    nt = 1
    nv = 0
    todo_lo[0] = lo
    todo_n[0] = n
    while nt > 0:
        nt -= 1
        start = todo_lo[nt]
        m = todo_n[nt]
        if m < 0:  # both halves summed: add them
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
        elif m <= 128:
            vals[nv] = _block_sum(a, start, m)
            nv += 1
        else:
            m2 = m // 2
            m2 -= m2 % 8
            todo_lo[nt] = 0
            todo_n[nt] = -1  # the addition, after both halves
            todo_lo[nt + 1] = start + m2
            todo_n[nt + 1] = m - m2  # the right half, after the left
            todo_lo[nt + 2] = start
            todo_n[nt + 2] = m2
            nt += 3
    return vals[0]


@njit(cache=True)
def np_sum(a):
    """``a.sum()`` of a contiguous 1-D float64 array, bit for bit: the
    identity 0 plus numpy's pairwise sum."""
    return 0.0 + _pairwise_sum(a, 0, a.shape[0])
