"""The pooled history of past states from which ARM draws φ.

:class:`History` stores label arrays (int32) up to a capacity; once full,
every other stored iteration is dropped and the recording interval doubles,
so a new state enters at iteration t with probability O(capacity / t) and
the adaptation vanishes. Only the second half of the iterations is eligible
by default (the paper's choice). A fixed list of states gives a frozen
history (a fixed Markov kernel). See ``docs/algorithms/reconfiguration.md`` (section "Adaptivity").
"""

from __future__ import annotations

import numpy as np

#: Memory bound of one history (label arrays stored as int32).
HISTORY_BYTES = 64 << 20


class History:
    """Past states (label arrays) from which φ draws z^a and z^b.

    Parameters
    ----------
    n_vertices : int
    capacity : int
        At most this many states are stored (int32 labels, storage grown on
        demand). When full, every other stored iteration is dropped and the
        recording interval doubles.
    mode : {"second-half", "all"}
        Which stored states are eligible: those of iterations >= t/2 (the
        paper's choice; older ones are discarded) or all of them.
    states : sequence of label arrays, optional
        A fixed set of past states: the history is frozen (never recorded
        into), and every state is eligible.
    """

    def __init__(self, n_vertices, capacity=256, mode="second-half", states=None):
        if mode not in ("second-half", "all"):
            raise ValueError(f"history mode must be 'second-half' or 'all', got {mode!r}")
        self.n = int(n_vertices)
        self.mode = mode
        self.interval = 1
        self.latest = 0
        if states is not None:
            arr = np.asarray([np.asarray(s) for s in states])
            if arr.ndim != 2 or arr.shape[1] != self.n or arr.shape[0] == 0:
                raise ValueError("history must be a non-empty list of label arrays of "
                                 f"length {self.n}")
            if arr.dtype.kind not in "iu":
                raise ValueError("history states must be integer label arrays")
            self.data = arr.astype(np.int64)
            self.stamps = np.zeros(arr.shape[0], dtype=np.int64)
            self.count = arr.shape[0]
            self.capacity = self.count
            self.frozen = True
            self.mode = "all"
        else:
            self.capacity = int(capacity)
            self.data = None
            self.stamps = np.zeros(self.capacity, dtype=np.int64)
            self.count = 0
            self.frozen = False

    def __len__(self) -> int:
        return self.count

    def states(self) -> np.ndarray:
        """The eligible states, one label array per row (a copy)."""
        if not self.count:
            return np.zeros((0, self.n), np.int64)
        return self.data[self._eligible()].copy()

    def _eligible(self) -> np.ndarray:
        rows = np.arange(self.count)
        if self.mode == "second-half":
            rows = rows[self.stamps[:self.count] >= self.latest // 2]
        return rows

    def _keep(self, mask) -> None:
        idx = np.flatnonzero(mask)
        self.data[:idx.size] = self.data[idx]
        self.stamps[:idx.size] = self.stamps[idx]
        self.count = idx.size

    def record(self, labels_list, stamp: int) -> None:
        """Store the states of one iteration ``stamp`` (thinned)."""
        if self.frozen:
            return
        stamp = int(stamp)
        self.latest = max(self.latest, stamp)
        if self.data is None:
            self.data = np.zeros((min(self.capacity, 16), self.n), dtype=np.int32)
        if self.mode == "second-half" and self.count:
            self._keep(self.stamps[:self.count] >= self.latest // 2)
        if stamp % self.interval:
            return
        k = len(labels_list)
        if 2 * k > self.capacity:
            raise ValueError(f"history capacity {self.capacity} is below twice the number "
                             f"of chains {k}")
        while self.count + k > self.capacity:
            self._keep(self.stamps[:self.count] % (2 * self.interval) == 0)
            self.interval *= 2
            if stamp % self.interval:
                return
        if self.count + k > self.data.shape[0]:  # grow the storage, up to capacity
            rows = min(self.capacity, max(2 * self.data.shape[0], self.count + k))
            data = np.zeros((rows, self.n), dtype=np.int32)
            data[:self.count] = self.data[:self.count]
            self.data = data
        for lab in labels_list:
            self.data[self.count] = lab
            self.stamps[self.count] = stamp
            self.count += 1

    def draw_pair(self, rng):
        """Two distinct eligible states, uniformly (ordered); None if fewer
        than two."""
        rows = self._eligible() if self.count else np.zeros(0, np.int64)
        if rows.size < 2:
            return None
        a = int(rng.integers(rows.size))
        b = int(rng.integers(rows.size - 1))
        b = b + 1 if b >= a else b
        return (self.data[rows[a]].astype(np.int64), self.data[rows[b]].astype(np.int64))

    def draw(self, i, j, rng):
        """(z^a, z^b): uniform among eligible states with i ~ j, resp. i ≁ j;
        None when either kind is missing."""
        if not self.count:
            return None
        rows = self._eligible()
        same = self.data[rows, i] == self.data[rows, j]
        ra = rows[same]
        rb = rows[~same]
        if ra.size == 0 or rb.size == 0:
            return None
        za = self.data[ra[int(rng.integers(ra.size))]].astype(np.int64)
        zb = self.data[rb[int(rng.integers(rb.size))]].astype(np.int64)
        return za, zb
