"""Gibbs relabelling of a vertex set over all its targets.

Shared by single-site Gibbs (R = {v}) and cluster Gibbs (R grown by
Bernoulli edges, with the cut weights γ_k of eq. 48).
"""

from __future__ import annotations

import bisect
import math

import numpy as np
from numba import njit

from swcuts.models.image import set_move_apply, set_move_delta
from swcuts.samplers.common import StepInfo, numpy_sum
from swcuts._numba.primitives import np_sum

__all__ = ["targets_of", "gibbs_relabel"]


def targets_of(partition, R):
    """Targets of R: labels k with V_k \\ R non-empty, then one fresh label.

    Returns (labels, index of the current target). R must carry one label.
    """
    labels, cur = _targets(partition, R)
    return np.array(labels, dtype=np.int64), cur


def _targets(partition, R):
    """:func:`targets_of` as a list (ascending used labels, searched with bisect)."""
    ell = int(partition.labels[R[0]])
    used = partition.used_labels().tolist()
    if partition.size[ell] == len(R):
        # relabelling R to a fresh name is staying put: the fresh target is ell
        labels = [k for k in used if k != ell] + [ell]
        return labels, len(labels) - 1
    return used + [partition.fresh_label()], bisect.bisect_left(used, ell)


def gibbs_relabel(model, state, R, rng, temperature, cut_labels=None, cut_log=None):
    """Draw R's label ∝ γ_k π(X_R = k | rest)^(1/T) and apply it.

    Python lists over the few targets (numpy calls on them cost more than
    the arithmetic), with the floats numpy gave: exp is numpy's, sums and
    the cumulative sum are in order (:func:`~swcuts.samplers.common.numpy_sum`).
    """
    labs, cur = _targets(state.partition, R)
    deltas = [0.0 if t == cur else float(model.delta(state, R, lab)) for t, lab in enumerate(labs)]
    logw = [d / temperature for d in deltas]
    if cut_labels is not None and len(cut_labels):
        # log γ_k over the cut edges to V_k \ R (eq. 48); γ = 1 for labels
        # not adjacent to R and for the fresh label.
        lookup = dict(zip(cut_labels.tolist(), cut_log.tolist()))
        logw = [w + lookup.get(k, 0.0) for w, k in zip(logw, labs)]
    top = max(logw)
    p = np.exp(np.array([w - top for w in logw])).tolist()
    total = numpy_sum(p)
    u = rng.random() * 1.0
    t, acc = 0, 0.0
    for x in p:  # searchsorted(cumsum(p / total), u, side="right")
        acc += x / total
        if acc > u:
            break
        t += 1
    t = min(t, len(labs) - 1)
    if t == cur:
        return StepInfo(True, 0.0, 0, 0.0)
    model.apply(state, R, labs[t], deltas[t])
    return StepInfo(True, 0.0, len(R), deltas[t])


@njit(cache=True)
def gibbs_sweep_image(ma, labels, size, free_stack, n_free, items, u, temperature, log_pi):
    """:func:`gibbs_relabel` of each vertex of ``items`` in turn (R = {v}, no
    cut weights) on an image model's state, compiled: the same targets in
    the same order (:func:`_targets`), Δ log π by
    :func:`swcuts.models.image.set_move_delta` (the compiled form of
    ``ImageModel.delta``), the same floats (exp, the sum as numpy's,
    :func:`~swcuts._numba.primitives.np_sum`, the cumulative sum in
    order) and the uniform ``u[s]`` for the s-th vertex, so that the moves
    are those of the Python calls with ``rng.random()`` drawn in turn.
    ``ma``: ``ImageModel.set_move_arrays(state)``. Returns log π after the
    updates (``log_pi`` plus each applied Δ, in order, as ``apply`` adds them)."""
    n_slots = size.size
    cap = n_slots + 1
    labs = np.empty(cap, np.int64)
    deltas = np.empty(cap)
    p = np.empty(cap)
    R = np.empty(1, np.int64)
    for s in range(items.size):
        v = items[s]
        R[0] = v
        ell = labels[v]
        used = np.sort(free_stack[n_free[0]:])
        nt = 0
        cur = 0
        if size[ell] == 1:  # alone: relabelling to a fresh name is staying put
            for k in used:
                if k != ell:
                    labs[nt] = k
                    nt += 1
            labs[nt] = ell
            cur = nt
            nt += 1
        else:
            for k in used:
                if k < ell:
                    cur += 1
                labs[nt] = k
                nt += 1
            labs[nt] = free_stack[n_free[0] - 1]
            nt += 1
        top = -np.inf
        for t in range(nt):
            deltas[t] = 0.0 if t == cur else set_move_delta(ma, labels, size, R, labs[t])
            w = deltas[t] / temperature
            p[t] = w
            if t == 0 or w > top:
                top = w
        for t in range(nt):
            p[t] = math.exp(p[t] - top)
        total = np_sum(p[:nt])
        acc = 0.0
        g = 0
        for t in range(nt):  # searchsorted(cumsum(p / total), u, side="right")
            acc += p[t] / total
            if acc > u[s]:
                break
            g += 1
        g = min(g, nt - 1)
        if g == cur:
            continue
        set_move_apply(ma, labels, size, free_stack, n_free, R, labs[g])
        log_pi += deltas[g]
    return log_pi
