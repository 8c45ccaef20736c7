"""The member lists of the compiled split-merge-type runs, and their plumbing.

:class:`~swcuts.samplers.split_merge.SplitMerge` and
:class:`~swcuts.samplers.triadic.Triadic` keep a
:class:`~swcuts.models.partition.MemberIndex` of the labels' vertices; their
compiled runs (:mod:`swcuts.samplers.split_merge_run`,
:mod:`swcuts.samplers.triadic.run`) follow it exactly, list order included:
singly linked lists (``head``, ``nxt``) with ``entry[label]`` 0 (no list), 1
(a list that failed the index's check: another kernel moved vertices; the
Python list is kept) or 2 (an exact list). Reading a label without an exact
list rebuilds every list in ascending vertex order, as
``MemberIndex.rebuild`` does. :class:`RunLists` moves the lists between the
index and the run's arrays: read at a run's start when a vertex moved since
the last run, written back only when Python asks the index again.
"""

from __future__ import annotations

import math

import numpy as np

from swcuts._numba.compiled_only import compiled_only
from swcuts.models.partition import MemberIndex, _version
from swcuts.samplers.common import state_member_index

__all__ = ["RunLists", "SplitMergeWorkspace", "load_lists", "store_lists"]


# ---------------------------------------------------------- member lists
@compiled_only
def _rebuild(labels, free_stack, n_free, head, nxt, entry):
    """``MemberIndex.rebuild``: an exact list for every used label, its
    vertices in ascending order; no list for the others."""
    for s in range(free_stack.size):
        head[free_stack[s]] = -1
        entry[free_stack[s]] = 0
    for v in range(labels.size - 1, -1, -1):
        lab = labels[v]
        nxt[v] = head[lab]
        head[lab] = v
    for s in range(n_free[0], free_stack.size):
        entry[free_stack[s]] = 2


@compiled_only
def _members(c, labels, free_stack, n_free, head, nxt, entry, out):
    """``MemberIndex.members``: the vertices of label c into ``out`` in
    the list's order (after a rebuild when c has no exact list); returns
    how many."""
    if entry[c] != 2:
        _rebuild(labels, free_stack, n_free, head, nxt, entry)
    return _walk(head[c], nxt, out, 0)


@compiled_only
def _walk(v, nxt, out, at):
    """The list that starts at vertex v into ``out[at:]``; returns the end."""
    while v >= 0:
        out[at] = v
        at += 1
        v = nxt[v]
    return at


@compiled_only
def _set_list(lab, items, n, head, nxt, entry):
    """The exact list of ``lab`` := ``items[:n]`` (n > 0), in that order."""
    head[lab] = items[0]
    for t in range(n - 1):
        nxt[items[t]] = items[t + 1]
    nxt[items[n - 1]] = -1
    entry[lab] = 2



class SplitMergeWorkspace:
    """Scratch of :func:`run_split_merge` for one chain: the member lists
    and the buffers of one update."""

    def __init__(self, n_vertices, n_slots):
        n = n_vertices
        self.head = np.full(n_slots, -1, np.int64)
        self.nxt = np.full(n, -1, np.int64)
        self.entry = np.zeros(n_slots, np.int8)
        self.bufs = (np.empty(n, np.int64), np.empty(2 * n, np.int64), np.empty(n, np.int64),
                     np.empty(n, np.int64), np.empty(n + 1, np.int64), np.empty(n + 1, np.int64),
                     np.zeros(n, np.int8), np.zeros(n, np.int8), np.zeros(2, np.int64))
        self.counts = np.zeros(5, np.int64)
        self.ev = np.zeros(1, np.int64)
        self.no_path = np.zeros((0, n), np.int64)
        # The lists are newer than the member index's (SplitMerge.run) and
        # exact at the partition version ``version``.
        self.pending = False
        self.version = -1
        self.part = None
        self.sizes = None  # the labels' sizes then

    def current(self, part) -> bool:
        """Whether the lists here are newer than the member index's and
        still exact: no vertex of ``part`` has moved since the run."""
        ver = _version(part)
        return self.pending and ver >= 0 and ver == self.version and self.part is part


def load_lists(index, part, ws) -> None:
    """The member index's lists into the workspace's linked lists, each
    marked exact or not by the index's own check
    (:meth:`~swcuts.models.partition.MemberIndex.members`)."""
    ws.entry[:] = 0
    for lab, lst in index.lists.items():
        if lst.size == part.size[lab] and np.all(part.labels[lst] == lab):
            ws.head[lab] = lst[0]
            ws.nxt[lst[:-1]] = lst[1:]
            ws.nxt[lst[-1]] = -1
            ws.entry[lab] = 2
        else:
            ws.entry[lab] = 1


def store_lists(index, ws) -> None:
    """The workspace's lists (left one after another in its first buffer
    by the run) back into the member index: exact lists anew, the others
    as they were."""
    old = index.lists
    flat = ws.bufs[0].copy()
    lists = {}
    at = 0
    for lab in np.flatnonzero(ws.entry).tolist():
        if ws.entry[lab] == 1:
            lists[lab] = old[lab]
            continue
        n = int(ws.sizes[lab])
        lists[lab] = flat[at:at + n]
        at += n
    index.replace(ws.part, lists)
    ws.pending = False


class RunLists:
    """The plumbing of a compiled ``run`` that keeps the kernel's member
    index in its own arrays (split-merge, triadic): the per-state workspace,
    the index (the run's newer lists written back first), the start and the
    end of a run. The kernel has ``_index`` and ``_lists`` (weak
    dictionaries keyed by state) and ``model``."""

    def _members_index(self, state) -> MemberIndex:
        index = state_member_index(self._index, state)
        ws = self._lists.get(state)
        if ws is not None and ws.pending:
            store_lists(index, ws)
        return index

    def _workspace(self, state) -> SplitMergeWorkspace:
        part = state.partition
        ws = self._lists.get(state)
        if ws is None or ws.nxt.size != part.n_vertices or ws.head.size != part.size.size:
            ws = self._lists[state] = SplitMergeWorkspace(part.n_vertices, part.size.size)
        return ws

    def _run_steps(self, state, rng, temps, best_labels, best_log_pi, path):
        """:meth:`run` through :meth:`step` (models without compiled moves)."""
        best = max(state.log_pi, best_log_pi)
        acc = 0
        for s, temp in enumerate(temps.tolist()):
            info = self.step(state, rng, temp)
            acc += bool(info.accepted and info.moved)
            if state.log_pi > best + 1e-9:
                best = state.log_pi
                best_labels[:] = state.partition.labels
            if path is not None:
                path[s] = state.partition.labels
        return acc, best, best_labels

    def _run_arguments(self, temperatures, state, best_labels):
        """The temperatures checked (positive) and the best labels (a copy
        of the state's by default)."""
        temps = np.ascontiguousarray(temperatures, dtype=np.float64)
        if temps.size and not np.all(temps > 0.0):
            raise ValueError("temperatures must be positive")
        if best_labels is None:
            best_labels = state.partition.labels.copy()
        return temps, best_labels

    def _start_run(self, state, best_log_pi, path):
        """(workspace, f_state, path, (set-move arrays or None, mixture
        arrays or None)), the lists loaded."""
        part = state.partition
        if path is None:
            path = np.zeros((0, part.n_vertices), np.int64)
        ws = self._workspace(state)
        if not ws.current(part):
            load_lists(self._members_index(state), part, ws)  # writes pending lists back first
        ws.ev[0] = 0
        f_state = np.array([state.log_pi, max(state.log_pi, best_log_pi), -math.inf])
        model = self.model
        if getattr(model, "compiled", False):
            arrays = (model.set_move_arrays(state), None)
        else:
            (_, _, _, _, lstats, lloglik, vstats, kind, params, prior) = model.kernel_arrays(state)
            arrays = (None, (lstats, lloglik, vstats, kind, params, prior, state.work.mark_c,
                             *state.scratch))
        return ws, f_state, path, arrays

    def _end_run(self, state, ws, f_state) -> None:
        part = state.partition
        state.log_pi = float(f_state[0])
        if arrays_of_mixture(self.model):
            self.model.evaluations += int(ws.ev[0])
        ws.pending, ws.version, ws.part, ws.sizes = True, _version(part), part, part.size.copy()


def arrays_of_mixture(model) -> bool:
    """Whether a compiled run on ``model`` takes the mixture's arrays."""
    return not getattr(model, "compiled", False)


@compiled_only
def export_lists(head, nxt, entry, out):
    """The exact lists one after another, label by label, into ``out``
    (what :func:`store_lists` reads back)."""
    k = 0
    for lab in range(entry.size):
        if entry[lab] == 2:
            k = _walk(head[lab], nxt, out, k)


@compiled_only
def draw_pair(rng, uniform, n, edges):
    """:func:`~swcuts.samplers.common.draw_anchor_pair` in compiled code,
    from the same generator: (drawn, i, j), a uniform ordered pair of
    0..n-1 (``uniform``) or a uniformly random edge in random order."""
    if uniform:
        if n < 2:
            return False, 0, 0
        i = rng.integers(0, n)
        j = rng.integers(0, n - 1)
        if j >= i:
            j += 1
        return True, i, j
    if edges.shape[0] == 0:
        return False, 0, 0
    e = rng.integers(0, edges.shape[0])
    i = edges[e, 0]
    j = edges[e, 1]
    if rng.random() < 0.5:
        return True, j, i
    return True, i, j
