"""The reconfiguration kernels: :class:`Reconfiguration` (ARM) and :class:`SRM`.

The kernel draws φ = (i, j, z^a, z^b, item order) independently of the
state (anchors by edge, pair or the paper's disagreement rule; past states
from the pooled or the chain's own :class:`~.history.History`), computes
the cells of D = c(i) ∪ c(j), runs the forward pass and the forced reverse
pass (:mod:`.passes`, or :mod:`.compiled_pass` on mixture models) and
accepts with min{1, [π(z*)/π(z)]^(1/T) T(z | z*) / T(z* | z)}. It also
offers the multi-chain API (:meth:`Reconfiguration.init_chains`,
:meth:`Reconfiguration.step_all`) and the single-chain :meth:`step` that
the annealing driver calls (one move + ``gibbs_sweeps`` Gibbs scans).

The derivation (cells, parking, the sweep, the reverse move, the
differences from the paper, exactness under graph restrictions and
adaptivity) is in ``docs/algorithms/reconfiguration.md``.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
from numba import njit

from swcuts.io.errors import check_number
from swcuts.samplers.common import (
    StepInfo, acceptance_rates, check_anchors, draw_anchor_pair, refuse_fixed_labels,
    seed_compiled_rng)
from swcuts.samplers.gibbs import random_scan
from swcuts.samplers.reconfiguration.compiled_pass import _CompiledPass
from swcuts.samplers.reconfiguration.history import HISTORY_BYTES, History
from swcuts.samplers.reconfiguration.passes import _NEG_INF, _Order, _Pass, _RngChooser, _ranges


def _next_prime(n: int) -> int:
    """Smallest prime >= max(n, 2)."""
    p = max(int(n), 2)
    while True:
        if p < 4 or all(p % d for d in range(2, int(math.isqrt(p)) + 1)):
            return p
        p += 1


@njit(cache=True)
def _pieces(D, groups, indptr, indices, pos):
    """Connected pieces of the cells: component id (0..k-1, by first
    occurrence in D) of every item of D, where an edge joins two items of D
    with the same ``groups`` value. ``pos`` is -1 everywhere on entry and
    on return. Union-find, O(Σ degrees)."""
    m = D.size
    for t in range(m):
        pos[D[t]] = t
    parent = np.arange(m)
    for t in range(m):
        v = D[t]
        for p in range(indptr[v], indptr[v + 1]):
            s = pos[indices[p]]
            if s < 0 or groups[s] != groups[t]:
                continue
            a = t
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            b = s
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            if a != b:
                if a < b:
                    parent[b] = a
                else:
                    parent[a] = b
    for t in range(m):
        pos[D[t]] = -1
    comp = np.empty(m, np.int64)
    ids = -np.ones(m, np.int64)
    k = 0
    for t in range(m):
        r = t
        while parent[r] != r:
            r = parent[r]
        if ids[r] < 0:
            ids[r] = k
            k += 1
        comp[t] = ids[r]
    return comp


# ---------------------------------------------------------------------------
# The pass compiled, for mixture models without a graph (every outside item
# visited): the same procedure as :class:`_Pass`, the same candidates in the
# same order, the same draws (one uniform per choice, in order) and the same
# forced replay, on the model's arrays (MixtureModel.kernel_arrays).


class Reconfiguration:
    """Adaptive reconfiguration moves (ARM) with S chains.

    Parameters
    ----------
    model : partition model
        Offers ``n_vertices``, ``graph`` (a RegionGraph or None),
        ``delta`` and ``apply``. Models with a fixed label set (Potts) are
        refused.
    q : array, optional
        Edge probabilities; accepted for the uniform kernel signature,
        unused.
    n_chains : int
        Number of chains S of the multi-chain API (:meth:`init_chains`,
        :meth:`step_all`); at least 2 unless ``srm`` or a fixed history.
    history : {"second-half", "all"} or sequence of label arrays
        Which pooled past states φ draws from: the states of iterations
        >= t/2 (the paper), all stored states, or a fixed list (frozen:
        the kernel is then a fixed Markov kernel).
    srm : bool
        The simplified moves (Algorithm 2): single-item cells, no history.
    compiled : bool, optional
        Whether to use the compiled paths (None: when available): the
        image model's compiled Gibbs kernel for the Gibbs scans; on a
        mixture model with a built-in likelihood and ``outside="all"``, the
        compiled pass (:func:`_arm_pass`; the same moves as the generic
        pass from the same random numbers) and the compiled Gibbs sweep.
        False: the generic paths through ``model.delta``/``model.apply``.
        ``self.compiled`` (the driver flag) is False: the driver calls
        :meth:`step`.
    gibbs_sweeps : int
        Single-site Gibbs scans after each move in :meth:`step` and
        :meth:`step_all` (the paper: 1).
    anchors : {"edge", "pair", "disagree"}, optional
        A uniform graph edge (default with a graph) or a uniform pair
        (default for sRM without a graph), then z^a, z^b from the history (a
        no-op when it has no state joining or no state separating them); or
        "disagree", the paper's rule (default for ARM without a graph): two
        distinct past states first, then (i, j) uniform over the pairs
        (graph: edges) on which they disagree — never a no-op once the
        history holds two different states. Both are state-independent. On
        Jain & Neal's data (``benchmarks/papers.py``, section 1; 2 data sets
        x 4 chains, so noisy) the paper's rule gave lower autocorrelation
        times per iteration than the pair rule at d = 6, 8, 10, and per unit
        of work at d = 6 and 8; near the mode of the Gaussian toy the pair
        rule is a no-op in more than 99 % of the moves.
    outside : {"frontier", "all", "knn"}, optional
        Which outside items the sweep visits: the frontier of the labels of
        i and j (default with a graph; needs one), every item (the paper;
        default without a graph; O(N) per move), or "knn" (models without a
        graph that have ``data``): the graph variant on a k-nearest-neighbour
        graph of the data -- only the outside items next to the two labels
        may join them, and a moving set chooses among the labels next to it
        (and the labels of i and j) rather than among all labels -- so a
        move costs O(k (|labels touched| + frontier)) instead of
        O(N + L |labels touched|). Still an exact MH move (the restrictions
        are replayed on the reverse path; a proposal whose reverse they
        cannot reach is rejected); a different proposal from the paper's.
    neighbours : int
        k of the graph of ``outside="knn"`` (symmetrised, on standardised
        data).
    order : {"random", "index"}
        Item order of the sweep: a fresh random permutation per move (the
        paper's random relabelling) or the item indices.
    max_history : int
        Capacity of each history (states stored); lowered, if need be, so
        that a history takes at most ``HISTORY_BYTES`` (64 MB), but never
        below 2 * n_chains.

    Attributes
    ----------
    counts : dict
        ``{"split": [proposed, accepted], "merge": [...], "none": [n, 0]}``.
    history : History
        The pooled history of the chains (or the frozen one).
    """

    name = "reconfiguration"

    def __init__(self, model, q=None, *, n_chains=4, history="second-half", srm=False,
                 compiled=None, gibbs_sweeps=1, anchors=None, outside=None, order="random",
                 max_history=256, neighbours=10):
        refuse_fixed_labels(model, "reconfiguration moves need")
        for nm, val, lo in (("n_chains", n_chains, 1), ("gibbs_sweeps", gibbs_sweeps, 0),
                            ("max_history", max_history, 1), ("neighbours", neighbours, 1)):
            check_number(nm, val, integer=True, minimum=lo)
        self.model = model
        self.graph = getattr(model, "graph", None)
        self.srm = bool(srm)
        if self.srm:
            self.name = "srm"
        n = int(model.n_vertices)
        self.n = n
        if isinstance(history, str):
            self._fixed = None
            self.history_mode = history
            if history not in ("second-half", "all"):
                raise ValueError(f"history must be 'second-half', 'all' or a list of label "
                                 f"arrays, got {history!r}")
        else:
            self._fixed = History(n, states=history)
            self.history_mode = "fixed"
        if not self.srm and self._fixed is None and n_chains < 2:
            raise ValueError(f"reconfiguration moves pool the histories of several chains: "
                             f"n_chains must be >= 2, got {n_chains}")
        self.n_chains = int(n_chains)
        # Keep each history within HISTORY_BYTES (int32 labels).
        self.max_history = int(min(max_history, max(2 * self.n_chains, HISTORY_BYTES // (4 * n))))
        if self._fixed is None and self.max_history < 2 * self.n_chains:
            raise ValueError(f"max_history ({max_history}) must be >= 2 * n_chains ({n_chains})")
        self.gibbs_sweeps = int(gibbs_sweeps)
        anchors = check_anchors(anchors, self.graph, "pair" if self.srm else "disagree",
                                ("edge", "pair", "disagree"))
        if anchors == "disagree" and self.srm:
            raise ValueError("anchors='disagree' needs a history; sRM has none")
        self.anchors = anchors
        if outside is None:
            outside = "frontier" if self.graph is not None else "all"
        if outside not in ("frontier", "all", "knn"):
            raise ValueError(f"outside must be 'frontier', 'all' or 'knn', got {outside!r}")
        if outside == "frontier" and self.graph is None:
            raise ValueError("outside='frontier' needs a model with a graph")
        if outside == "knn" and (self.graph is not None or getattr(model, "data", None) is None):
            raise ValueError("outside='knn' is for models without a graph that have data")
        self.outside = outside
        # The graph of the frontier: the model's, or k nearest neighbours.
        if outside == "knn":
            from swcuts.samplers.tree_guided.trees import _knn_csr

            self._fgraph = _knn_csr(model.data, int(neighbours))
        elif self.graph is not None:
            self._fgraph = (np.ascontiguousarray(self.graph.indptr, dtype=np.int64),
                            np.ascontiguousarray(self.graph.indices, dtype=np.int64))
        else:
            self._fgraph = (np.zeros(n + 1, np.int64), np.zeros(0, np.int64))
        # Candidate labels of a moving set: the labels next to it on that
        # graph (a graph model, or "knn"), else every label.
        self._adjacent = self.graph is not None or outside == "knn"
        if order not in ("random", "index"):
            raise ValueError(f"order must be 'random' or 'index', got {order!r}")
        self.order = order
        self._P = _next_prime(n)
        available = bool(getattr(model, "compiled", False))
        mixture = bool(getattr(model, "compiled_likelihood", False)) and self.graph is None
        if compiled and not (available or mixture):
            raise ValueError(f"{type(model).__name__} has no compiled kernels")
        self._gibbs_compiled = available if compiled is None else (bool(compiled) and available)
        # The compiled pass: mixtures (every outside item, or the kNN frontier).
        self._mixture = mixture and compiled is not False
        self._compiled_pass = self._mixture and outside in ("all", "knn")
        self._gibbs = None
        self.compiled = False  # the move is orchestrated in Python: the driver calls step()
        self._pool = self._fixed if self._fixed is not None else None
        self._iteration = 0
        self._own = weakref.WeakKeyDictionary()
        self._pos = np.full(n, -1, dtype=np.int64)
        self.counts = {"split": [0, 0], "merge": [0, 0], "none": [0, 0]}

    # ---------------------------------------------------------- history API
    @property
    def history(self):
        return self._pool

    def freeze(self) -> None:
        """Stop recording into the pooled history: from now on every move
        draws φ from a fixed set of states (a fixed Markov kernel)."""
        if self._pool is not None:
            self._pool.frozen = True

    def _new_history(self):
        return History(self.n, capacity=self.max_history, mode=self.history_mode)

    def init_chains(self, states) -> None:
        """Register the S chain states (``n_chains`` of them) and record
        them as iteration 0 of the pooled history."""
        states = list(states)
        if len(states) != self.n_chains:
            raise ValueError(f"expected {self.n_chains} chain states, got {len(states)}")
        if self._fixed is None:
            self._pool = self._new_history()
            self._pool.record([s.partition.labels for s in states], 0)
        self._iteration = 0
        self._n_registered = len(states)

    def step_all(self, states, rng, temperature=1.0) -> list:
        """One iteration of every chain: a reconfiguration move, then
        ``gibbs_sweeps`` Gibbs scans; then the states join the history.

        Returns the list of the moves' StepInfo.
        """
        if getattr(self, "_n_registered", None) is None:
            raise ValueError("call init_chains(states) before step_all")
        states = list(states)
        if len(states) != self._n_registered:
            raise ValueError(f"expected {self._n_registered} chain states, got {len(states)}")
        seed_compiled_rng(rng)
        infos = []
        for s, state in enumerate(states):
            infos.append(self.move(state, s, rng, temperature))
            for _ in range(self.gibbs_sweeps):
                self.gibbs_sweep(state, rng, temperature)
        self._iteration += 1
        if self._pool is not None:
            self._pool.record([s.partition.labels for s in states], self._iteration)
        return infos

    # ----------------------------------------------------------------- move
    def _draw_anchors(self, rng):
        return draw_anchor_pair(self.graph.edges if self.anchors == "edge" else None, self.n, rng)

    def _draw_disagreement(self, pool, rng):
        """The paper's φ: two distinct past states, then (i, j) uniform over
        the pairs (graph: the edges, both orders) that exactly one of them
        joins; z^a is the one that joins. None if there is no such pair.
        Depends on the history only: O(N) (graph: O(E)) numpy work."""
        pair = pool.draw_pair(rng) if pool is not None else None
        if pair is None:
            return None
        A, B = pair
        if self.graph is not None:
            e = self.graph.edges
            ja = A[e[:, 0]] == A[e[:, 1]]
            dis = np.flatnonzero(ja != (B[e[:, 0]] == B[e[:, 1]]))
            if dis.size == 0:
                return None
            t = int(dis[rng.integers(dis.size)])
            i, j = int(e[t, 0]), int(e[t, 1])
            if rng.random() < 0.5:
                i, j = j, i
            return (i, j, A, B) if ja[t] else (i, j, B, A)
        n = self.n
        _, inv_ab, n_ab = np.unique(A * n + B, return_inverse=True, return_counts=True)
        n_ab = n_ab[inv_ab.reshape(-1)]
        # w_i: partners of i joined by one state only, per kind (A not B, B not A).
        w_a = np.bincount(A, minlength=n)[A] - n_ab
        w_b = np.bincount(B, minlength=n)[B] - n_ab
        total_a, total_b = int(w_a.sum()), int(w_b.sum())
        if total_a + total_b == 0:
            return None
        if rng.random() * (total_a + total_b) < total_a:
            w, X, Y = w_a, A, B
        else:
            w, X, Y = w_b, B, A
        c = np.cumsum(w)
        i = int(np.searchsorted(c, rng.random() * c[-1], side="right"))
        partners = np.flatnonzero((X == X[i]) & (Y != Y[i]))
        j = int(partners[rng.integers(partners.size)])
        return i, j, X, Y

    def _draw_order(self, rng) -> _Order:
        if self.order == "index":
            return _Order(self._P)
        return _Order(self._P, int(rng.integers(1, self._P)) if self._P > 1 else 1,
                      int(rng.integers(self._P)))

    def move(self, state, chain_index, rng, temperature=1.0) -> StepInfo:
        """One reconfiguration move of chain ``chain_index`` at temperature T,
        with φ drawn from the pooled history (or the fixed one).

        Returns
        -------
        StepInfo
            ``move`` is "split", "merge" or "none" (no usable past states).
        """
        if self._pool is None and not self.srm:
            raise ValueError("call init_chains(states) before move, or give a fixed history")
        n_ch = getattr(self, "_n_registered", None) or self.n_chains
        if not 0 <= int(chain_index) < n_ch:
            raise ValueError(f"chain_index {chain_index} outside 0..{n_ch - 1}")
        return self._move(state, self._pool, rng, temperature)

    def _move(self, state, pool, rng, temperature) -> StepInfo:
        temperature = float(temperature)
        if not temperature > 0.0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if self.anchors == "disagree":
            phi = self._draw_disagreement(pool, rng)
            if phi is None:
                self.counts["none"][0] += 1
                return StepInfo(False, _NEG_INF, 0, 0.0, "none")
            i, j, za, zb = phi
            return self.attempt(state, i, j, za, zb, self._draw_order(rng), temperature,
                                self._chooser(rng))
        anchors = self._draw_anchors(rng)
        if anchors is None:
            self.counts["none"][0] += 1
            return StepInfo(False, _NEG_INF, 0, 0.0, "none")
        i, j = anchors
        za = zb = None
        if not self.srm:
            phi = pool.draw(i, j, rng) if pool is not None else None
            if phi is None:
                self.counts["none"][0] += 1
                return StepInfo(False, _NEG_INF, 0, 0.0, "none")
            za, zb = phi
        order = self._draw_order(rng)
        return self.attempt(state, i, j, za, zb, order, temperature, self._chooser(rng))

    def _chooser(self, rng) -> _RngChooser:
        # One block of N uniforms per pass wherever the pass may run
        # compiled (the compiled pass needs them up front).
        return _RngChooser(rng, self.n if self.outside in ("all", "knn") else None)

    def attempt(self, state, i, j, za, zb, order, temperature, chooser) -> StepInfo:
        """The MH move for a given φ = (i, j, z^a, z^b, order).

        ``chooser`` supplies the random choices: ``choose(logw) -> index``,
        ``accept(log_alpha) -> bool`` and ``proposed(labels)`` (called with
        the live labels of z*). Leaves the state at z* if accepted, else at
        z (the same partition, possibly with other label names).
        """
        part = state.partition
        split = part.labels[i] == part.labels[j]
        kind = "split" if split else "merge"
        self.counts[kind][0] += 1
        zlab = part.labels.copy()
        zsize = part.size.copy()
        lp0 = state.log_pi
        Pass = _Pass
        if self._compiled_pass and (isinstance(chooser, _RngChooser)
                                    or callable(getattr(chooser, "script", None))):
            Pass = _CompiledPass
        if isinstance(chooser, _RngChooser):
            chooser.begin()
        fwd = Pass(self, state, i, j, za, zb, order, temperature, chooser=chooser)
        log_f = fwd.run()
        if log_f == _NEG_INF:  # only if every choice had probability 0
            fwd.undo()
            state.log_pi = lp0
            return StepInfo(False, _NEG_INF, 0, 0.0, kind)
        lp1 = state.log_pi
        d = lp1 - lp0
        chooser.proposed(part.labels)
        M = fwd.moved_items()
        n_moved = int(np.count_nonzero(part.labels[M] != zlab[M]))
        rev = Pass(self, state, i, j, za, zb, order, temperature, target=zlab,
                   target_size=zsize, changed=M)
        log_r = rev.run()
        if log_r == _NEG_INF:
            log_alpha = _NEG_INF
        else:
            log_alpha = d / temperature + log_r - log_f
        accepted = bool(chooser.accept(log_alpha))
        if accepted:
            rev.undo()
            state.log_pi = lp1
            self.counts[kind][1] += 1
        else:
            if log_r == _NEG_INF:
                rev.undo()
                fwd.undo()
            state.log_pi = lp0
        return StepInfo(accepted, float(log_alpha), n_moved, float(d), kind)

    def _cell_arrays(self, D, labels, za, zb, order, i, j):
        """The cells of D, vectorised: (others concatenated, their offsets,
        c_i, c_j). Each cell is sorted by the order (earmark first); the
        other cells come by decreasing size, ties by the earmark's key."""
        m = D.size
        if self.srm:
            groups = np.arange(m)
        else:
            n = self.n
            key = (za[D].astype(np.int64) * n + zb[D]) * n + labels[D]
            _, groups = np.unique(key, return_inverse=True)
            groups = groups.reshape(-1)
            g = self.graph
            if g is not None and m > 1:
                groups = _pieces(D, groups.astype(np.int64), g.indptr, g.indices, self._pos)
        k = order.keys(D)
        idx = np.lexsort((k, groups))
        Ds = D[idx]
        gs = groups[idx]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(gs)) + 1))
        sizes = np.diff(np.append(starts, m))
        cell_of = np.empty(m, np.int64)
        cell_of[idx] = np.repeat(np.arange(starts.size), sizes)
        pos = np.searchsorted(D, [i, j])  # D is ascending
        gi, gj = int(cell_of[pos[0]]), int(cell_of[pos[1]])
        ci = Ds[starts[gi]:starts[gi] + sizes[gi]]
        cj = Ds[starts[gj]:starts[gj] + sizes[gj]]
        keep = np.ones(starts.size, bool)
        keep[[gi, gj]] = False
        o = np.flatnonzero(keep)
        o = o[np.lexsort((k[idx][starts[o]], -sizes[o]))]
        flat = Ds[_ranges(starts[o], sizes[o])]
        ptr = np.concatenate(([0], np.cumsum(sizes[o]))).astype(np.int64)
        return flat, ptr, ci, cj

    def _cells(self, D, labels, za, zb, order, i, j):
        """(other cells, c_i, c_j) as :meth:`_cell_arrays`, the others as a list."""
        flat, ptr, ci, cj = self._cell_arrays(D, labels, za, zb, order, i, j)
        return [flat[ptr[t]:ptr[t + 1]] for t in range(ptr.size - 1)], ci, cj

    # ------------------------------------------------------------ iteration
    def gibbs_sweep(self, state, rng, temperature=1.0) -> None:
        """One single-site Gibbs scan: N updates at uniformly random items
        (the library's Gibbs kernel, compiled when the model offers it; on
        a mixture the model's compiled sweep)."""
        if self._mixture:
            random_scan(self.model, state, rng, temperature)
            return
        if self._gibbs is None:
            from swcuts.samplers.gibbs import Gibbs

            self._gibbs = Gibbs(self.model, compiled=self._gibbs_compiled)
        n = self.n
        if self._gibbs.compiled:
            self._gibbs.run(state, rng, np.full(n, float(temperature)))
        else:
            for _ in range(n):
                self._gibbs.step(state, rng, temperature)

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        """Single-chain use (the annealing driver): one move with φ from this
        chain's own history (or the fixed one), then ``gibbs_sweeps`` Gibbs
        scans, then the state joins its own history.

        Returns the move's StepInfo (``delta`` is the Δ log π of the move
        alone; ``state.log_pi`` includes the Gibbs scans).
        """
        if self._fixed is not None:
            pool = self._fixed
        elif self.srm:
            pool = None
        else:
            entry = self._own.get(state)
            if entry is None:
                entry = [self._new_history(), 0]
                entry[0].record([state.partition.labels], 0)
                self._own[state] = entry
            pool = entry[0]
        info = self._move(state, pool, rng, temperature)
        for _ in range(self.gibbs_sweeps):
            self.gibbs_sweep(state, rng, temperature)
        if pool is not None and not pool.frozen:
            entry[1] += 1
            pool.record([state.partition.labels], entry[1])
        return info

    def acceptance_rates(self) -> dict:
        """Accepted / proposed per move type (NaN before any proposal)."""
        return acceptance_rates(self.counts, skip="none")


class SRM(Reconfiguration):
    """Simplified reconfiguration moves (Algorithm 2): every item of the two
    labels is re-placed on its own, outside items may join; no history.
    Same parameters as :class:`Reconfiguration` (``history`` is unused)."""

    name = "srm"

    def __init__(self, model, q=None, *, srm=True, **kwargs):
        if not srm:
            raise ValueError("SRM is the simplified move; use Reconfiguration")
        kwargs.setdefault("n_chains", 1)
        super().__init__(model, q, srm=True, **kwargs)
