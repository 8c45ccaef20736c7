"""The partition's free list as if a rejected proposal had been applied.

The tree-guided kernel prices a merge or a split from statistics and
applies it only when it is accepted (:mod:`.moves`). Applying a rejected
multi-part proposal item by item and undoing it used to permute the
partition's free list of label names (the swaps of
:func:`swcuts.models.partition.relabel_vertices`); names carry no meaning, but
they decide which label later draws pick, so these functions make the
same swaps (O(k L), no item) and seeded chains stay the same
(docs/algorithms/tree_guided.md, "The cost of a move").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.models.partition import _stack_index, _swap_in_stack


@njit(cache=True)
def _free_list_as_if_undone(stack, n_free, labels, k):
    """Leave the partition's free list of labels (``stack``, ``n_free``) as
    applying a rejected multi-part move item by item and undoing it would
    have (the swaps of :func:`swcuts.models.partition.relabel_vertices`): a
    split's ``k`` fresh labels taken from the top and given back (``labels``
    empty), or a merge's emptied ``labels`` freed and taken back, in that
    order. Label names carry no meaning, but they decide which label later
    draws pick, so this keeps a seeded chain the same as when every
    proposal was applied to the state to price it. O(k L), no item."""
    if labels.size == 0:
        fresh = stack[n_free[0] - k:n_free[0]][::-1].copy()
        n_free[0] -= k  # each fresh label is the top of the free part when taken
        for lab in fresh:  # each empties again, to the first used entry
            first = n_free[0]
            _swap_in_stack(stack, None, _stack_index(stack, None, lab, first, stack.size, 1),
                           first)
            n_free[0] = first + 1
        return
    for lab in labels:  # each label empties into the free part...
        first = n_free[0]
        _swap_in_stack(stack, None, _stack_index(stack, None, lab, first, stack.size, 1), first)
        n_free[0] = first + 1
    for lab in labels:  # ...and is taken back from the top
        top = n_free[0] - 1
        _swap_in_stack(stack, None, _stack_index(stack, None, lab, top, -1, -1), top)
        n_free[0] = top


@njit(cache=True)
def _free_list_after_merge(stack, n_free, P, keep):
    """:func:`_free_list_as_if_undone` of a rejected merge of the labels
    ``P`` into ``P[keep]``: the others, in P's order."""
    others = np.empty(P.shape[0] - 1, np.int64)
    t = 0
    for g in range(P.shape[0]):
        if g != keep:
            others[t] = P[g]
            t += 1
    _free_list_as_if_undone(stack, n_free, others, 0)
