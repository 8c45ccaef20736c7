"""Gibbs relabelling of a vertex set over all its targets.

Shared by single-site Gibbs (R = {v}) and cluster Gibbs (R grown by
Bernoulli edges, with the cut weights γ_k of eq. 48).
"""

from __future__ import annotations


import numpy as np

from swcuts.samplers.common import StepInfo

__all__ = ["targets_of", "gibbs_relabel"]


def targets_of(partition, R):
    """Targets of R: labels k with V_k \\ R non-empty, then one fresh label.

    Returns (labels, index of the current target). R must carry one label.
    """
    ell = int(partition.labels[R[0]])
    whole = partition.size[ell] == len(R)
    used = partition.used_labels()
    if whole:
        existing = used[used != ell]
        fresh = ell  # relabelling R to a fresh name is staying put
        labels = np.append(existing, fresh)
        return labels, labels.size - 1
    labels = np.append(used, partition.fresh_label())
    return labels, int(np.searchsorted(used, ell))


def gibbs_relabel(model, state, R, rng, temperature, cut_labels=None, cut_log=None):
    """Draw R's label ∝ γ_k π(X_R = k | rest)^(1/T) and apply it."""
    labels, cur = targets_of(state.partition, R)
    logw = np.empty(labels.size)
    deltas = np.zeros(labels.size)
    for t, lab in enumerate(labels.tolist()):
        if t != cur:
            deltas[t] = model.delta(state, R, lab)
    logw[:] = deltas / temperature
    if cut_labels is not None and len(cut_labels):
        # log γ_k over the cut edges to V_k \ R (eq. 48); γ = 1 for labels
        # not adjacent to R and for the fresh label.
        lookup = dict(zip(cut_labels.tolist(), cut_log.tolist()))
        logw += np.array([lookup.get(k, 0.0) for k in labels.tolist()])
    logw -= logw.max()
    p = np.exp(logw)
    p /= p.sum()
    t = int(np.searchsorted(np.cumsum(p), rng.random() * 1.0, side="right"))
    t = min(t, labels.size - 1)
    if t == cur:
        return StepInfo(True, 0.0, 0, 0.0)
    model.apply(state, R, int(labels[t]), float(deltas[t]))
    return StepInfo(True, 0.0, len(R), float(deltas[t]))
