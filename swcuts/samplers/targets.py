"""Gibbs relabelling of a vertex set over all its targets.

Shared by single-site Gibbs (R = {v}) and cluster Gibbs (R grown by
Bernoulli edges, with the cut weights γ_k of eq. 48).
"""

from __future__ import annotations

import bisect

import numpy as np

from swcuts.samplers.common import StepInfo, numpy_sum

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
