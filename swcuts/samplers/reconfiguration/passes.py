"""One run of the reconfiguration proposal procedure, in Python.

:class:`_Pass` runs the sweep of one move on the live state: park the other
cells, set up the labels of i and j, update the cells (phase 1), the other
items of D (phase 2a) and the outside items (phase 2b: all of them, or the
frontier on a graph). Forward it draws z* with a :class:`_RngChooser` and
accumulates log T(z* | z); forced it replays the only choices that end at a
given target and returns log T(target | start) (-inf when unreachable).
Every move goes through ``model.delta`` / ``model.apply`` and is logged so
that a rejected proposal is undone exactly.

:class:`_Order` is the random item order (an affine permutation) that is
part of φ. The compiled equivalent for mixture models is
:mod:`.compiled_pass`. The procedure and its exactness are derived in
``docs/algorithms/reconfiguration.md`` (steps 4-6).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from swcuts.samplers.common import metropolis_hastings

_NEG_INF = -math.inf


def _logsumexp(values) -> float:
    m = max(values)
    if m == _NEG_INF:
        return _NEG_INF
    return m + math.log(sum(math.exp(v - m) for v in values))


def _ranges(starts, lens):
    """Concatenation of arange(s, s + l) over (starts, lens), vectorised."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - np.cumsum(lens) + lens, lens)
    return offs + np.arange(total)


class _Order:
    """A permutation of 0..N-1 given by an affine map x -> (x + b) a mod P
    (P prime >= N, 1 <= a < P): drawn in O(1), evaluated per item."""

    def __init__(self, P: int, a: int = 1, b: int = 0):
        self.P, self.a, self.b = int(P), int(a), int(b)

    def key(self, x: int) -> int:
        return ((int(x) + self.b) * self.a) % self.P

    def keys(self, arr) -> np.ndarray:
        return ((np.asarray(arr, dtype=np.int64) + self.b) * self.a) % self.P

    def inverse(self) -> int:
        """a^-1 mod P: item = (key a^-1 - b) mod P."""
        return pow(self.a, self.P - 2, self.P) if self.P > 2 else 1


class _RngChooser:
    """Draws the sweep's choices and the MH decision with a numpy Generator.

    The choices use uniforms drawn in blocks: with ``per_pass`` = N (a pass
    makes at most N - 2 choices) one block of N at the start of every
    forward pass (:meth:`begin`), which the compiled pass uses as is, so
    that the compiled and the generic pass make the same moves (mixtures);
    otherwise blocks of 64 as needed.
    """

    def __init__(self, rng, per_pass=None):
        self.rng = rng
        self.per_pass = per_pass
        self.buf = np.zeros(0)
        self.pos = 0

    def begin(self) -> None:
        if self.per_pass is not None:
            self.buf = self.rng.random(self.per_pass)
            self.pos = 0

    def _uniform(self) -> float:
        if self.pos >= self.buf.size:
            self.buf = self.rng.random(64)
            self.pos = 0
        self.pos += 1
        return float(self.buf[self.pos - 1])

    def choose(self, logw) -> int:
        m = max(logw)
        p = [math.exp(v - m) for v in logw]
        u = self._uniform() * sum(p)
        for k, w in enumerate(p):
            u -= w
            if u < 0.0:
                return k
        return max(k for k, w in enumerate(p) if w > 0.0)

    def proposed(self, labels) -> None:
        pass

    def accept(self, log_alpha: float) -> bool:
        return metropolis_hastings(log_alpha, self.rng)


class _PassArgs:
    """The arguments a pass keeps (:class:`_Pass`, and
    :class:`.compiled_pass._CompiledPass`, which share its constructor)."""

    def __init__(self, kern, state, i, j, za, zb, order, temperature, chooser=None,
                 target=None, target_size=None, changed=None):
        self.kern = kern
        self.model = kern.model
        self.state = state
        self.i, self.j = int(i), int(j)
        self.za, self.zb = za, zb
        self.order = order
        self.inv_t = 1.0 / temperature
        self.chooser = chooser
        self.target = target
        self.target_size = target_size
        self.changed = changed
        self.forced = target is not None


class _Pass(_PassArgs):
    """One run of the proposal procedure on the live state.

    Forward (``chooser`` given): draws z* and accumulates log T(z* | z).
    Forced (``target`` given): replays the procedure choosing, at every
    step, the only label compatible with ending at ``target``; returns
    log T(target | start), or -inf when the target is out of reach.
    ``changed`` (forced) holds every item whose label slot may differ
    between the start state and ``target``; ``target_size`` the label sizes
    of ``target``.
    """

    def __init__(self, *args, **kwargs):
        _PassArgs.__init__(self, *args, **kwargs)
        self.part = self.state.partition
        self.log = []
        self.logT = 0.0
        self.joined = {}
        self.mem = {}
        self.bi = self.bj = -1

    # --------------------------------------------------------- bookkeeping
    def _apply(self, R, new, d, d_items) -> None:
        labels = self.part.labels
        old = int(labels[R[0]])
        self.model.apply(self.state, R, new, d)
        R = R.copy()  # R may be a reused buffer
        self.log.append((R, old, new, d))
        if d_items:
            n = len(R)
            self.joined[old] = self.joined.get(old, 0) - n
            self.joined[new] = self.joined.get(new, 0) + n
        if old in self.mem:
            self.mem[old].difference_update(R.tolist())
        if new in self.mem:
            self.mem[new].update(R.tolist())

    def undo(self) -> None:
        """Undo every move of this pass, last first."""
        for R, old, new, d in reversed(self.log):
            self.model.apply(self.state, R, old, -d)
        self.log.clear()

    def moved_items(self) -> np.ndarray:
        if not self.log:
            return np.zeros(0, dtype=np.int64)
        return np.array(sorted(set().union(*(m[0].tolist() for m in self.log))), dtype=np.int64)

    # --------------------------------------------------------------- choose
    def _choose(self, R, cands, target, d_items) -> bool:
        """Move R to one of ``cands`` (cands[0] is R's own label: stay).

        Forward: draw; forced: ``target`` (a label of ``cands``). Adds the
        log probability of the outcome to ``logT``; False when the target
        is not a candidate.
        """
        if self.forced:
            try:
                k = cands.index(target)
            except ValueError:
                return False
        if len(cands) == 1:
            return True
        model, state = self.model, self.state
        logw = [0.0]
        ds = [0.0]
        for lab in cands[1:]:
            d = float(model.delta(state, R, lab))
            ds.append(d)
            logw.append(d * self.inv_t)
        if not self.forced:
            k = self.chooser.choose(logw)
        lw = logw[k]
        if lw == _NEG_INF:
            return False
        self.logT += lw - _logsumexp(logw)
        if k:
            self._apply(R, cands[k], ds[k], d_items)
        return True

    # ------------------------------------------------------- forced targets
    def _setup_forced(self, li, lj) -> bool:
        t = self.target
        labels = self.part.labels
        self.zi, self.zj = int(t[self.i]), int(t[self.j])
        self.size_start = self.part.size.copy()
        M = np.asarray(self.changed, dtype=np.int64)
        sM = labels[M].tolist()
        tM = t[M].tolist()
        cnt = {}
        stay = {}
        for xs, xt in zip(sM, tM):
            cnt[xs] = cnt.get(xs, 0) + 1
            if xs == li or xs == lj or xt == self.zi or xt == self.zj:
                continue
            if stay.setdefault(xt, xs) != xs:
                return False  # two original members of one target label in two labels
        self.cnt_changed = cnt
        self.stay = stay
        self.placed = {}
        self.li, self.lj = li, lj
        return True

    def _stayer(self, Lz):
        """Label holding the unvisited outside items whose target label is Lz
        (they can only stay or join i/j); None if there are none; -1 if they
        are split over two labels."""
        b = self.stay.get(Lz)
        if (Lz != self.li and Lz != self.lj
                and self.size_start[Lz] - self.cnt_changed.get(Lz, 0) > 0):
            if b is not None and b != Lz:
                return -1
            b = Lz
        return b

    def _forced_target(self, a1, own, whole, fresh):
        Lz = int(self.target[a1])
        if Lz == self.zi:
            return self.bi
        if Lz == self.zj:
            return self.bj
        b1 = self.placed.get(Lz)
        b2 = self._stayer(Lz)
        if b2 == -1 or (b1 is not None and b2 is not None and b1 != b2):
            return None
        b = b1 if b1 is not None else b2
        if b is None:
            return own if whole else fresh
        if self.part.size[b] == 0:
            return None
        return b

    def _record_placed(self, a1) -> bool:
        Lz = int(self.target[a1])
        if Lz == self.zi or Lz == self.zj:
            return True
        lab = int(self.part.labels[a1])
        if self.placed.setdefault(Lz, lab) != lab:
            return False
        return True

    def _final_check(self) -> bool:
        """Whether the live partition equals ``target`` (only items moved by
        either pass can differ)."""
        labels = self.part.labels
        parts = [np.asarray(self.changed, dtype=np.int64), self.moved_items()]
        T = np.unique(np.concatenate(parts))
        if T.size == 0:
            return True
        F = labels[T].tolist()
        Z = self.target[T].tolist()
        fz, zf, cf, cz = {}, {}, {}, {}
        for f, z in zip(F, Z):
            if fz.setdefault(f, z) != z or zf.setdefault(z, f) != f:
                return False
            cf[f] = cf.get(f, 0) + 1
            cz[z] = cz.get(z, 0) + 1
        size = self.part.size
        for f, c in cf.items():
            if size[f] > c and fz[f] != f:
                return False
        for z, c in cz.items():
            if self.target_size[z] > c and zf[z] != z:
                return False
        return True

    # ------------------------------------------------------------------ run
    def _candidates(self, R, own, parked):
        """Candidate labels of the set R (own label first), without fresh."""
        kern = self.kern
        part = self.part
        if not kern._adjacent:
            labs = set(part.used_labels().tolist())
        else:
            indptr, indices = kern._fgraph
            nb = indices[_ranges(indptr[R], indptr[R + 1] - indptr[R])]
            labs = set(part.labels[nb].tolist())
            labs.add(self.bi)
            labs.add(self.bj)
        labs -= parked
        labs.discard(own)
        return [own] + sorted(labs)

    def _update_set(self, R, parked) -> bool:
        part = self.part
        own = int(part.labels[R[0]])
        whole = part.size[own] == R.size
        cands = self._candidates(R, own, parked)
        fresh = None
        if not whole:
            fresh = part.fresh_label()
            cands.append(fresh)
        target = None
        if self.forced:
            target = self._forced_target(int(R[0]), own, whole, fresh)
            if target is None:
                return False
        if not self._choose(R, cands, target, True):
            return False
        if self.forced:
            return self._record_placed(int(R[0]))
        return True

    def _update_outside(self, h, one) -> bool:
        part = self.part
        own = int(part.labels[h])
        size = part.size
        locked = size[own] >= 2 and size[own] - self.joined.get(own, 0) == 1
        if locked:
            cands = [own]
        elif self.bi == self.bj:
            cands = [own, self.bi]
        else:
            cands = [own, self.bi, self.bj]
        target = None
        if self.forced:
            Lz = int(self.target[h])
            target = self.bi if Lz == self.zi else (self.bj if Lz == self.zj else own)
        one[0] = h
        return self._choose(one, cands, target, False)

    def run(self) -> float:
        """Run the procedure; returns log T (−inf: forced target unreachable)."""
        kern = self.kern
        part = self.part
        labels = part.labels
        i, j = self.i, self.j
        li, lj = int(labels[i]), int(labels[j])
        split = li == lj
        self.split = split
        if self.forced:
            if (int(self.target[i]) == int(self.target[j])) == split:
                return _NEG_INF
            if not self._setup_forced(li, lj):
                return _NEG_INF
        if split:
            D = np.flatnonzero(labels == li)
            self.joined = {li: D.size}
        else:
            D = np.flatnonzero((labels == li) | (labels == lj))
            self.joined = {li: int(part.size[li]), lj: int(part.size[lj])}
        cells, ci, cj = kern._cells(D, labels, self.za, self.zb, self.order, i, j)
        # Initial state: park the other cells, set up the labels of i and j.
        parked = set()
        for cell in cells:
            f = part.fresh_label()
            self._apply(cell, f, float(self.model.delta(self.state, cell, f)), True)
            parked.add(f)
        if split:
            f = part.fresh_label()
            self._apply(cj, f, float(self.model.delta(self.state, cj, f)), True)
            self.bi, self.bj = li, f
            self.mem = {li: set(ci.tolist()), f: set(cj.tolist())}
        else:
            self._apply(cj, li, float(self.model.delta(self.state, cj, li)), True)
            self.bi = self.bj = li
            self.mem = {li: set(ci.tolist()) | set(cj.tolist())}
        # Phase 1: the cells, whole.
        for cell in cells:
            own = int(labels[cell[0]])
            if not self._update_set(cell, parked):
                return _NEG_INF
            parked.discard(own)
        # Phase 2a: every other item of D, one at a time.
        skip = {i, j}
        skip.update(int(c[0]) for c in cells)
        rest = [x for x in D.tolist() if x not in skip]
        rest.sort(key=self.order.key)
        for x in rest:
            if not self._update_set(np.array([x], dtype=np.int64), parked):
                return _NEG_INF
        # Phase 2b: the outside items.
        one = np.zeros(1, dtype=np.int64)
        if kern.outside == "all":
            out = np.ones(part.n_vertices, dtype=bool)
            out[D] = False
            items = np.flatnonzero(out)
            items = items[np.argsort(self.order.keys(items), kind="stable")]
            for h in items.tolist():
                if not self._update_outside(h, one):
                    return _NEG_INF
        else:
            self._frontier(set(D.tolist()), one)
            if self.failed:
                return _NEG_INF
        if self.forced and not self._final_check():
            return _NEG_INF
        return self.logT

    def _frontier(self, inD, one) -> None:
        """Breadth-first visit of the outside items adjacent to the labels of
        i and j; an item that moves in adds its outside neighbours."""
        indptr, indices = self.kern._fgraph
        key = self.order.key
        self.failed = False
        seen = set()

        def outside_neighbours(items):
            new = []
            for v in items:
                for u in indices[indptr[v]:indptr[v + 1]].tolist():
                    if u not in inD and u not in seen:
                        seen.add(u)
                        new.append(u)
            new.sort(key=key)
            return new

        members = set()
        for b in {self.bi, self.bj}:
            members |= self.mem[b]
        queue = deque(outside_neighbours(sorted(members)))
        while queue:
            h = queue.popleft()
            if not self._update_outside(h, one):
                self.failed = True
                return
            lab = int(self.part.labels[h])
            if lab == self.bi or lab == self.bj:
                queue.extend(outside_neighbours([h]))
