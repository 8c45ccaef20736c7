"""The sampler state: a partition of the graph's vertices into labels.

Labels are names only. They live in slots ``0..N-1`` (there can never be
more labels than vertices). ``free_stack`` is a permutation of the slots:
the unused ones first (``free_stack[:n_free]``, the last of them is the next
fresh label, found in O(1)), then the used ones (``free_stack[n_free:]``), so
that kernels can walk the L used labels in O(L) instead of O(N).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only

__all__ = ["Partition", "MemberIndex", "canonical", "relabel_vertices"]


@njit(cache=True, inline="always")
def _stack_index(free_stack, pos, label, start, stop, step):
    """Index of ``label`` in ``free_stack``: ``pos[label]``, or without
    ``pos`` searched over ``range(start, stop, step)`` (−1 if not there)."""
    if pos is not None:
        return pos[label]
    for t in range(start, stop, step):
        if free_stack[t] == label:
            return t
    return -1


@njit(cache=True, inline="always")
def _swap_in_stack(free_stack, pos, t, dest):
    """Swap the entries ``t`` and ``dest`` of ``free_stack`` (nothing when
    t < 0), keeping ``pos`` current when given."""
    if t < 0:
        return
    label = free_stack[t]
    other = free_stack[dest]
    free_stack[t] = other
    free_stack[dest] = label
    if pos is not None:
        pos[other] = t
        pos[label] = dest


@compiled_only
def relabel_vertices(labels, size, free_stack, n_free, R, n_r, new_label, pos=None):
    """Move the first ``n_r`` vertices of R to ``new_label``, keeping the
    label sizes and the free stack of unused labels consistent (compiled;
    :meth:`Partition.relabel` is the same from Python).

    Parameters
    ----------
    labels, size, free_stack, n_free : ndarray of int64
        The arrays of a :class:`Partition`, updated in place (``n_free[1]``,
        when there, is the partition's version: every call that moves
        vertices adds one).
    R : ndarray of int64
        Vertices; the first ``n_r`` of them move.
    n_r : int
        How many vertices of ``R`` move.
    new_label : int
        Their new label, used or unused.
    pos : ndarray of int64, optional
        ``pos[label]`` = the label's index in ``free_stack``, looked up and
        kept current instead of searched (O(|R|) whatever the number of
        labels); the swaps, and so the label names afterwards, are the same.

    Returns
    -------
    None

    Examples
    --------
    >>> part = Partition([0, 0, 1])
    >>> relabel_vertices(part.labels, part.size, part.free_stack, part.n_free,
    ...                  np.array([2, 0]), 1, 0)  # only vertex 2 moves
    >>> part.labels.tolist(), part.n_labels
    ([0, 0, 0], 1)
    """
    if n_r == 0:  # nothing moves: a fresh new_label must stay on the free stack
        return
    if n_free.size > 1:  # the partition's version (Partition.version)
        n_free[1] += 1
    if size[new_label] == 0:
        # Swap new_label to the top of the free part, which then becomes the
        # first entry of the used part.
        top = n_free[0] - 1
        _swap_in_stack(free_stack, pos, _stack_index(free_stack, pos, new_label, top, -1, -1), top)
        n_free[0] = top
    for i in range(n_r):
        v = R[i]
        old = labels[v]
        if old == new_label:
            continue
        size[old] -= 1
        size[new_label] += 1
        labels[v] = new_label
        if size[old] == 0:
            # Swap old to the first entry of the used part, which then
            # becomes the top of the free part (O(L) search, once per label).
            first = n_free[0]
            _swap_in_stack(free_stack, pos, _stack_index(free_stack, pos, old, first,
                                                         free_stack.size, 1), first)
            n_free[0] = first + 1


def canonical(labels) -> tuple:
    """Relabel by order of first occurrence; a hashable key of the partition.

    Parameters
    ----------
    labels : array_like of int
        A label per item; labels are names only.

    Returns
    -------
    tuple of int
        The labels renamed ``0, 1, ...`` in order of first occurrence: equal
        for two labellings exactly when they describe the same partition.

    Examples
    --------
    >>> canonical([7, 7, 3, 9, 3])
    (0, 0, 1, 2, 1)
    >>> canonical([1, 1, 0, 2, 0]) == canonical([7, 7, 3, 9, 3])
    True
    """
    labels = np.asarray(labels)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return tuple(rank[inverse].tolist())


class Partition:
    """Labels of the vertices, label sizes and a free list of unused labels.

    Parameters
    ----------
    labels : array of int, shape (N,)
        Initial label of every vertex, values in ``0..n_slots-1``.
    n_slots : int, optional
        Number of label slots; defaults to N, enough for any partition.

    Examples
    --------
    >>> part = Partition([0, 0, 2, 2])
    >>> part.n_labels, part.used_labels().tolist(), part.fresh_label()
    (2, [0, 2], 1)
    >>> part.relabel([2, 3], 1)
    >>> part.labels.tolist(), part.compact_labels().tolist()
    ([0, 0, 1, 1], [0, 0, 1, 1])
    """

    def __init__(self, labels, n_slots=None):
        labels = np.asarray(labels, dtype=np.int64).copy()
        n = labels.size if n_slots is None else int(n_slots)
        if labels.size == 0:
            raise ValueError("a partition needs at least one vertex")
        if labels.min() < 0 or labels.max() >= n:
            raise ValueError(f"labels must lie in 0..{n - 1}")
        self.labels = labels
        self.size = np.bincount(labels, minlength=n).astype(np.int64)
        self._rebuild_free()

    def _rebuild_free(self):
        unused = np.flatnonzero(self.size == 0)[::-1]
        self.free_stack = np.concatenate([unused, np.flatnonzero(self.size)]).astype(np.int64)
        # [number of unused labels, version]: an array, so that compiled
        # kernels can update it in place. The version counts the changes of
        # the labels (relabel_vertices adds one per call that moves
        # vertices, and so does this rebuild), so that a cache of the
        # labels' members can tell in O(1) that nothing moved since it was
        # exact (MemberIndex).
        old = getattr(self, "n_free", None)
        version = int(old[1]) + 1 if old is not None and old.size > 1 else 0
        self.n_free = np.array([unused.size, version], dtype=np.int64)

    @property
    def free(self) -> list:
        """Unused labels; the last one is the next fresh label."""
        return self.free_stack[:self.n_free[0]].tolist()

    @property
    def version(self) -> int:
        """Number of changes of the labels so far: every call of
        :func:`relabel_vertices` that moves vertices (and so every
        :meth:`relabel`) adds one. Code that writes ``labels`` in another
        way must call :meth:`touch`. -1 for a partition made without one."""
        return _version(self)

    def touch(self) -> None:
        """Record a change of ``labels`` made without :func:`relabel_vertices`."""
        if self.n_free.size > 1:
            self.n_free[1] += 1

    @property
    def n_vertices(self) -> int:
        return self.labels.size

    @property
    def n_labels(self) -> int:
        """Number of non-empty labels L."""
        return int(self.size.size - self.n_free[0])

    def used_labels(self) -> np.ndarray:
        """The non-empty labels, ascending."""
        return np.sort(self.free_stack[self.n_free[0]:])

    def fresh_label(self) -> int:
        """An unused label (not removed from the free list until used).

        Raises RuntimeError when every slot is in use (rather than return
        a used label).
        """
        if self.n_free[0] == 0:
            raise RuntimeError("no unused label: every slot of the partition is in use")
        return int(self.free_stack[self.n_free[0] - 1])

    def relabel(self, vertices, new_label: int) -> None:
        """Give every vertex of ``vertices`` the label ``new_label``."""
        vertices = np.ascontiguousarray(vertices, dtype=np.int64)
        relabel_vertices(self.labels, self.size, self.free_stack, self.n_free, vertices,
                         vertices.size, int(new_label))

    def members(self, label: int) -> np.ndarray:
        """Vertices with the given label."""
        return np.flatnonzero(self.labels == label)

    def compact_labels(self) -> np.ndarray:
        """Labels renumbered to ``0..L-1`` in order of first occurrence."""
        return np.asarray(canonical(self.labels), dtype=np.int64)

    def copy(self) -> "Partition":
        return Partition(self.labels, n_slots=self.size.size)


class MemberIndex:
    """Vertices of every label of one partition, checked before use.

    An entry is trusted when it has as many vertices as the label and all
    of them carry the label (O(|label|)); entries hold distinct vertices,
    so that check proves it is exactly the label's member set. A failed
    check (some other kernel moved vertices) rebuilds every entry in one
    O(N log N) pass. Kernels that move vertices update ``lists``.

    The check is skipped (O(1)) while the partition's :attr:`~Partition.version`
    shows that no vertex moved since the entries were known exact: after a
    rebuild, after an entry's own check (that entry), and after a kernel's
    own moves when it declares that it updated ``lists`` for them
    (:meth:`updated`). Any other move changes the version, and the entries
    are checked again.

    The index takes no parameters; :meth:`members` fills it on first use.

    Examples
    --------
    >>> part = Partition([0, 1, 0, 1])
    >>> index = MemberIndex()
    >>> index.members(part, 1).tolist()
    [1, 3]
    >>> index.current(part)
    True
    >>> part.relabel([3], 0)  # another kernel moves a vertex: the entry is rebuilt
    >>> index.current(part)
    False
    >>> index.members(part, 0).tolist()
    [0, 2, 3]
    """

    def __init__(self):
        self.lists = {}
        self._part = None  # the partition that the marks below refer to
        self._exact = -1  # every entry is exact at this version (-1: not known)
        self._checked = {}  # label -> version at which its entry passed the check

    def members(self, part, label: int) -> np.ndarray:
        """The vertices of ``label``: O(1) while the entries are known exact,
        else O(|label|) (the check), or a rebuild when the check fails."""
        lst = self.lists.get(label)
        ver = _version(part)
        if (lst is not None and part is self._part and ver >= 0
                and (self._exact == ver or self._checked.get(label) == ver)):
            return lst
        if lst is None or lst.size != part.size[label] or not np.all(part.labels[lst] == label):
            self.rebuild(part)
            return self.lists[label]
        if part is not self._part:
            self._part, self._exact, self._checked = part, -1, {}
        if ver >= 0:
            if len(self._checked) > len(self.lists):
                self._checked = {}
            self._checked[label] = ver
        return lst

    def current(self, part) -> bool:
        """Whether every entry is known to be exact for ``part`` now (O(1))."""
        return part is self._part and self._exact >= 0 and self._exact == _version(part)

    def updated(self, part, since: int) -> None:
        """Declare that ``lists`` has been brought up to date for every move
        of ``part`` since its version was ``since``: if the entries were all
        exact then, they are now (otherwise nothing changes)."""
        if part is self._part and self._exact >= 0 and self._exact == since:
            self._exact = _version(part)

    def replace(self, part, lists: dict) -> None:
        """Take ``lists`` (label -> vertices, e.g. from a compiled kernel that
        kept the index's lists in its own arrays) as the entries; each is
        checked against ``part`` before its first use."""
        self.lists = lists
        self._part, self._exact, self._checked = part, -1, {}

    def rebuild(self, part) -> None:
        """Rebuild every entry from the labels (O(N log N))."""
        order = np.argsort(part.labels, kind="stable")
        used = part.used_labels()
        bounds = np.cumsum(part.size[used])[:-1]
        self.lists = dict(zip(used.tolist(), np.split(order, bounds)))
        self._part, self._exact, self._checked = part, _version(part), {}


def _version(part) -> int:
    """The partition's version, or -1 when it has none (then every use of an
    index entry is checked)."""
    nf = getattr(part, "n_free", None)
    return int(nf[1]) if nf is not None and nf.size > 1 else -1
