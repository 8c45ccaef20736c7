"""The triadic split-merge kernel: anchors, move type, allocation, the
Metropolis-Hastings decision and the revert (the derivation is in
``docs/algorithms/triadic.md``)."""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from swcuts.io.errors import check_number
from swcuts.samplers.common import (
    StepInfo, acceptance_rates, check_anchors, draw_anchor_pair, metropolis_hastings, refuse_fixed_labels)
from swcuts.samplers.run_lists import RunLists
from swcuts.samplers.triadic.allocation import _allocate_mixture, choose_target
from swcuts.samplers.triadic.run import run_triadic

__all__ = ["Triadic", "Proposal", "MOVES"]

#: Move types, in the order of :attr:`Triadic.counts`.
MOVES = ("split12", "merge21", "split23", "merge32")


@dataclass
class Proposal:
    """A triadic proposal applied to the live state (see :meth:`Triadic.propose`).

    Attributes
    ----------
    move : str
        One of :data:`MOVES`.
    log_alpha : float
        Log of the Metropolis-Hastings ratio (before the min with 1).
    delta : float
        Δ log π of the proposal (at temperature 1).
    log_q_fwd, log_q_rev : float
        Log probabilities of the allocation outcome (forward) and of the
        replayed reverse allocation; 0 for a deterministic merge.
    items : ndarray of int64
        Every vertex of the labels touched.
    orig : ndarray of int64
        Their labels before the proposal.
    log_pi0 : float
        The cached log π before the proposal.
    before, after : tuple of int
        The labels of the touched vertices before and after the proposal.
    """

    move: str
    log_alpha: float
    delta: float
    log_q_fwd: float
    log_q_rev: float
    items: np.ndarray
    orig: np.ndarray
    log_pi0: float
    before: tuple
    after: tuple


class Triadic(RunLists):
    """Triadic split-merge with sequential (SAMS) allocation.

    Parameters
    ----------
    model, q :
        As for :class:`~swcuts.samplers.split_merge.SplitMerge` (``q`` is
        unused; models with ``fixed_labels`` are refused: splits create
        fresh labels).
    beta : float
        Probability of a 2→1 merge (rather than a 2→3 split) when the
        anchors span two labels with c_i ≠ c_j; 0 < β < 1. The paper ran
        β = 0.1.
    anchors : {"edge", "uniform"}, optional
        How (i, j, k) is drawn: a random graph edge <i, j> and k a random
        neighbour of i or j (default with a graph), or a uniformly random
        ordered triple (default, and the only choice, without a graph).
    compiled : bool, optional
        Whether the sequential allocations run compiled (mixture models with
        a built-in likelihood; other models always use the generic path).
        None or True: when available; False: through ``model.delta`` /
        ``model.apply``. Both make the same moves from the same random
        numbers. On the image model and those mixtures :meth:`run` makes
        whole runs of updates compiled (``self.compiled`` True: the
        annealing driver calls it), the moves of :meth:`step` bit for bit.

    Attributes
    ----------
    counts : dict
        ``{move: [proposed, accepted]}`` for every move in :data:`MOVES`,
        and ``"noop": [n, 0]``.

    Notes
    -----
    Every update leaves π^(1/T) invariant; see the module docstring for
    the derivation of the acceptance ratio and for irreducibility.
    """

    name = "triadic"

    def __init__(self, model, q=None, *, beta=0.5, anchors=None, compiled=None):
        refuse_fixed_labels(model, "the triadic sampler needs")
        beta = float(check_number("beta", beta, minimum=0, maximum=1, exclusive=True, exclusive_max=True))
        self.model = model
        self.graph = getattr(model, "graph", None)
        self.anchors = check_anchors(anchors, self.graph, "uniform", ("edge", "uniform"))
        self.beta = beta
        # log r(X | X') / r(X' | X) per move type (module docstring).
        self._log_r = {"split12": math.log(beta), "merge21": -math.log(beta),
                       "split23": -math.log1p(-beta), "merge32": math.log1p(-beta)}
        mixture = bool(getattr(model, "compiled_likelihood", False))
        # Compiled sequential allocation on mixtures with a built-in likelihood.
        self._mixture = mixture and compiled is not False
        self._no_u = np.zeros(0)
        self._no_forced = np.zeros(0, dtype=np.int64)
        # run(): whole runs compiled (triadic/run.py) on the image model and those mixtures.
        self.compiled = ((bool(getattr(model, "compiled", False)) and compiled is not False)
                         or self._mixture)
        self._index = weakref.WeakKeyDictionary()
        self._lists = weakref.WeakKeyDictionary()  # state -> member lists of run()
        self._one = np.zeros(1, dtype=np.int64)
        self._cand = {}  # edge -> candidates for k, filled as edges are drawn
        self.counts = {m: [0, 0] for m in MOVES}
        self.counts["noop"] = [0, 0]

    # ------------------------------------------------------------ anchors
    def _third_candidates(self, i: int, j: int) -> np.ndarray:
        """Where k is drawn from for the edge <i, j>: neighbours of i or j
        other than i and j, or every other vertex when there are none."""
        key = (i, j) if i < j else (j, i)
        nb = self._cand.get(key)
        if nb is None:
            g = self.graph
            nb = np.union1d(g.indices[g.indptr[i]:g.indptr[i + 1]],
                            g.indices[g.indptr[j]:g.indptr[j + 1]])
            nb = nb[(nb != i) & (nb != j)]
            if nb.size == 0:
                nb = np.arange(self.model.n_vertices)
                nb = nb[(nb != i) & (nb != j)]
            self._cand[key] = nb
        return nb

    def _draw_anchors(self, rng):
        """An ordered triple (i, j, k) of distinct vertices, independent of
        the state; None if there is none."""
        n = self.model.n_vertices
        if n < 3:
            return None
        pair = draw_anchor_pair(self.graph.edges if self.anchors == "edge" else None, n, rng)
        if pair is None:
            return None
        i, j = pair
        if self.anchors == "edge":
            cand = self._third_candidates(i, j)
            return i, j, int(cand[rng.integers(cand.size)])
        lo, hi = min(i, j), max(i, j)
        k = int(rng.integers(n - 2))
        k += k >= lo
        k += k >= hi
        return i, j, k

    def anchor_probabilities(self) -> dict:
        """The exact law of :meth:`step`'s anchors, ``{(i, j, k): P}``.

        For tests on small graphs (it lists every triple the rule can draw).
        """
        n = self.model.n_vertices
        out = {}
        if n < 3:
            return out
        if self.anchors == "uniform":
            p = 1.0 / (n * (n - 1) * (n - 2))
            for i in range(n):
                for j in range(n):
                    for k in range(n):
                        if len({i, j, k}) == 3:
                            out[(i, j, k)] = p
            return out
        edges = self.graph.edges
        for e in edges.tolist():
            for i, j in ((e[0], e[1]), (e[1], e[0])):
                cand = self._third_candidates(i, j)
                for k in cand.tolist():
                    key = (i, j, k)
                    out[key] = out.get(key, 0.0) + 0.5 / (edges.shape[0] * cand.size)
        return out

    def move_probabilities(self, ci: int, cj: int, ck: int) -> dict:
        """Law of the move type given the anchors' labels, ``{move: P}``
        (``{"noop": 1.0}`` when c_i = c_j ≠ c_k)."""
        if ci == cj:
            return {"split12": 1.0} if ck == ci else {"noop": 1.0}
        if ck == ci or ck == cj:
            return {"merge21": self.beta, "split23": 1.0 - self.beta}
        return {"merge32": 1.0}

    # ------------------------------------------------------------ helpers

    def touched(self, state, anchors) -> np.ndarray:
        """Every vertex of the labels of the anchors (each label once)."""
        part = state.partition
        index = self._members_index(state)
        labs = []
        for v in anchors:
            lab = int(part.labels[v])
            if lab not in labs:
                labs.append(lab)
        if len(labs) == 1:
            return index.members(part, labs[0])
        return np.concatenate([index.members(part, lab) for lab in labs])

    def allocated(self, state, anchors, move, touched=None) -> np.ndarray:
        """The items a move allocates, ascending: the touched vertices other
        than i, j (and k for ``split23``). ``touched``: :meth:`touched`, if
        already known."""
        i, j, k = anchors
        U = self.touched(state, anchors) if touched is None else touched
        keep = (U != i) & (U != j)
        if move == "split23":
            keep &= U != k
        return np.sort(U[keep])

    def _move_set(self, state, R, label: int) -> None:
        """Relabel R (possibly spanning labels) on the live state, one
        source label at a time."""
        R = np.asarray(R, dtype=np.int64)
        if R.size == 0:
            return
        src = state.partition.labels[R]
        model = self.model
        if R.size == 1 or src.min() == src.max():
            if int(src[0]) != label:
                d = model.delta(state, R, label)
                model.apply(state, R, label, d)
            return
        for lab in np.unique(src).tolist():
            if lab == label:
                continue
            Rl = np.ascontiguousarray(R[src == lab])
            d = model.delta(state, Rl, label)
            model.apply(state, Rl, label, d)

    def _allocate(self, state, items, targets, temperature, u=None, forced=None) -> float:
        """Sequential allocation of ``items`` (all in a holding label) to
        ``targets`` on the live state.

        Item ``items[s]`` joins ``targets[g]`` with probability
        ∝ exp(Δ_g / T). With ``forced`` the choices are ``forced[s]`` (a
        replay); otherwise drawn with the uniforms ``u``. Returns the log of
        the product of the probabilities of the choices (−inf if a choice
        had probability 0; a draw with no possible target stops early).
        """
        model = self.model
        if self._mixture:
            log_q, dsum = _allocate_mixture(
                items, np.array(targets, dtype=np.int64), 1.0 / temperature,
                self._no_u if u is None else u,
                self._no_forced if forced is None else np.asarray(forced, dtype=np.int64),
                *model.kernel_arrays(state))
            model.evaluations += items.size * len(targets)
            state.log_pi += dsum
            return float(log_q)
        one = self._one
        nt = len(targets)
        d = [0.0] * nt
        x = [0.0] * nt
        log_q = 0.0
        for s in range(items.size):
            one[0] = items[s]
            for g in range(nt):
                d[g] = model.delta(state, one, targets[g])
                x[g] = d[g] / temperature
            g, lp = choose_target(np.array(x), -1 if forced is None else int(forced[s]),
                                  0.0 if forced is not None else float(u[s]))
            if g < 0:
                return -math.inf
            g = int(g)
            log_q += lp
            model.apply(state, one, targets[g], d[g])
        return log_q

    def _hold(self, state, items, targets=()) -> None:
        """Move ``items`` to a holding label that is not one of ``targets``.

        The holding label only enters the allocation through the "leave"
        part of each Δ_g, which is the same for every target, so any
        non-target label gives the same allocation probabilities. A fresh
        label when one is free; otherwise (every slot used: only in a 3→2
        move among singletons, where ``items`` = [k]) one of the items' own
        labels outside ``targets``.
        """
        if not items.size:
            return
        part = state.partition
        if part.n_free[0] > 0:
            hold = part.fresh_label()
        else:
            spare = set(part.labels[items].tolist()) - set(targets)
            if not spare:
                raise RuntimeError("no label can hold the items being allocated")
            hold = min(spare)
        self._move_set(state, items, hold)

    def _replay(self, state, items, targets, temperature) -> float:
        """log q of the allocation that puts ``items`` back to their current
        labels (which are in ``targets``), from the state with the items
        held; the live state ends where it started."""
        labels = state.partition.labels
        cur = labels[items]
        forced = np.empty(items.size, dtype=np.int64)
        for g, lab in enumerate(targets):
            forced[cur == lab] = g
        self._hold(state, items, targets)
        return self._allocate(state, items, targets, temperature, forced=forced)

    def _log_proposal_ratio(self, move, log_q_fwd, log_q_rev, n_touched) -> float:
        """log [r(X | X') q(X | X')] − log [r(X' | X) q(X' | X)].

        ``n_touched`` (the number of vertices in the labels touched) is not
        needed here; it is passed so that tests can substitute the paper's
        uniform-allocation formula as a negative control.
        """
        return self._log_r[move] + log_q_rev - log_q_fwd

    # ------------------------------------------------------------ proposal
    def propose(self, state, anchors, move, order, temperature=1.0, *, kpos=0, rng=None,
                outcome=None, touched=None) -> Proposal:
        """Apply a triadic proposal to the live state.

        The lower-level half of :meth:`step` (which draws the arguments,
        then :meth:`commit`\\ s or :meth:`revert`\\ s); tests use it to
        enumerate the exact transition law.

        Parameters
        ----------
        state : ModelState
            Left at the proposed partition.
        anchors : tuple of int
            (i, j, k).
        move : str
            One of :data:`MOVES`, valid for the anchors' labels (see
            :meth:`move_probabilities`).
        order : array of int
            The allocation order: a permutation of :meth:`allocated` for
            ``move`` (for ``merge32`` it includes k).
        temperature : float
        kpos : int
            ``split23`` only: where k is inserted into ``order`` for the
            replayed 3→2 reverse (0..len(order)).
        rng : numpy.random.Generator, optional
            Draws the allocation (one uniform per item), unless ``outcome``
            is given.
        outcome : array of int, optional
            Forced allocation: the index of the target of each item of
            ``order`` (targets: i's label, j's label, and for ``split23``
            k's new label).
        touched : array of int, optional
            :meth:`touched` for these anchors, if already known.

        Returns
        -------
        Proposal
        """
        i, j, k = anchors
        part = state.partition
        labels = part.labels
        T = float(temperature)
        order = np.ascontiguousarray(order, dtype=np.int64)
        U = self.touched(state, anchors) if touched is None else touched
        orig = labels[U]  # a copy (fancy indexing)
        log_pi0 = state.log_pi
        u = None
        if outcome is None and move != "merge21":
            u = rng.random(order.size)
        ci, cj, ck = int(labels[i]), int(labels[j]), int(labels[k])
        if move == "split12":
            # One label c: i to a new label, the rest shared between i and j.
            self._hold(state, order)
            li = part.fresh_label()
            self._move_set(state, np.array([i]), li)
            log_q_fwd = self._allocate(state, order, (li, ci), T, u, outcome)
            log_q_rev = 0.0  # the merge of i's and j's labels is deterministic
            before, after = (ci,), (li, ci)
        elif move == "merge21":
            # Reverse: the split of the merged label that gives back X.
            log_q_rev = self._replay(state, order, (ci, cj), T)
            state.log_pi = log_pi0
            a_size, b_size = part.size[ci], part.size[cj]
            src, dst = (ci, cj) if a_size <= b_size else (cj, ci)
            self._move_set(state, U[orig == src], dst)
            log_q_fwd = 0.0
            before, after = (ci, cj), (dst,)
        elif move == "split23":
            # Reverse first (from X): the 3→2 replay over order + k.
            tau = np.insert(order, int(kpos), k)
            log_q_rev = self._replay(state, tau, (ci, cj), T)
            state.log_pi = log_pi0
            self._hold(state, order)
            lk = part.fresh_label()
            self._move_set(state, np.array([k]), lk)
            log_q_fwd = self._allocate(state, order, (ci, cj, lk), T, u, outcome)
            before, after = (ci, cj), (ci, cj, lk)
        elif move == "merge32":
            # Reverse first (from X): the 2→3 replay over order without k.
            sigma = order[order != k]
            log_q_rev = self._replay(state, sigma, (ci, cj, ck), T)
            state.log_pi = log_pi0
            self._hold(state, order, (ci, cj))
            log_q_fwd = self._allocate(state, order, (ci, cj), T, u, outcome)
            before, after = (ci, cj, ck), (ci, cj)
        else:
            raise ValueError(f"unknown move {move!r}; one of {', '.join(MOVES)}")
        d = state.log_pi - log_pi0
        if log_q_fwd == -math.inf:  # an outcome the allocation cannot produce
            log_alpha = -math.inf
        else:
            log_alpha = d / T + self._log_proposal_ratio(move, log_q_fwd, log_q_rev, U.size)
            if math.isnan(log_alpha):
                log_alpha = -math.inf
        return Proposal(move, log_alpha, d, log_q_fwd, log_q_rev, U, orig, log_pi0, before, after)

    def revert(self, state, prop: Proposal) -> None:
        """Undo a proposal: every touched item back to its original label
        (same label names), the cached log π restored."""
        wrong = state.partition.labels[prop.items] != prop.orig
        for lab in prop.before:
            R = prop.items[wrong & (prop.orig == lab)]
            if R.size:
                self._move_set(state, R, lab)
        state.log_pi = prop.log_pi0

    def commit(self, state, prop: Proposal) -> None:
        """Keep a proposal: bring the member index up to date."""
        index = self._members_index(state)
        labs = state.partition.labels[prop.items]
        for lab in prop.after:
            index.lists[lab] = prop.items[labs == lab]
        for lab in prop.before:
            if lab not in prop.after:
                index.lists.pop(lab, None)

    # ----------------------------------------------------------------- step
    def step(self, state, rng, temperature=1.0) -> StepInfo:
        """One triadic Metropolis-Hastings update at temperature T, as
        :meth:`SplitMerge.step <swcuts.samplers.split_merge.SplitMerge.step>`
        (a rejection also keeps the label names); the StepInfo's ``move`` is
        "split12", "merge21", "split23", "merge32" or "noop"."""
        temperature = float(temperature)
        if not temperature > 0.0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        anchors = self._draw_anchors(rng)
        if anchors is None:
            self.counts["noop"][0] += 1
            return StepInfo(False, -math.inf, 0, 0.0, "noop")
        labels = state.partition.labels
        i, j, k = anchors
        probs = self.move_probabilities(int(labels[i]), int(labels[j]), int(labels[k]))
        if "noop" in probs:
            self.counts["noop"][0] += 1
            return StepInfo(False, -math.inf, 0, 0.0, "noop")
        if len(probs) == 1:
            move = next(iter(probs))
        else:
            move = "merge21" if rng.random() < self.beta else "split23"
        U = self.touched(state, anchors)
        order = rng.permutation(self.allocated(state, anchors, move, touched=U))
        kpos = int(rng.integers(order.size + 1)) if move == "split23" else 0
        self.counts[move][0] += 1
        prop = self.propose(state, anchors, move, order, temperature, kpos=kpos, rng=rng,
                            touched=U)
        moved = int(np.count_nonzero(state.partition.labels[prop.items] != prop.orig))
        if metropolis_hastings(prop.log_alpha, rng):
            self.commit(state, prop)
            self.counts[move][1] += 1
            return StepInfo(True, prop.log_alpha, moved, prop.delta, move)
        self.revert(state, prop)
        return StepInfo(False, prop.log_alpha, moved, prop.delta, move)

    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-math.inf, path=None):
        """One update per temperature; returns (accepted, best log π, best labels).

        As :meth:`SplitMerge.run <swcuts.samplers.split_merge.SplitMerge.run>`:
        compiled (:func:`~swcuts.samplers.triadic.run.run_triadic`, the moves
        of :meth:`step` from the same generator) when ``self.compiled``,
        else :meth:`step` per temperature; ``path`` receives the labels
        after every update.
        """
        temps, best_labels = self._run_arguments(temperatures, state, best_labels)
        part = state.partition
        if not self.compiled:
            return self._run_steps(state, rng, temps, best_labels, best_log_pi, path)
        ws, f_state, path, (ma, mix) = self._start_run(state, best_log_pi, path)
        counts = np.zeros((5, 2), np.int64)
        log_r = np.array([self._log_r[m] for m in MOVES])
        g = self.graph
        uniform = self.anchors == "uniform"
        edges = g.edges if not uniform else np.zeros((0, 2), np.int64)
        indptr = g.indptr if g is not None else np.zeros(1, np.int64)
        indices = g.indices if g is not None else np.zeros(0, np.int64)
        acc = run_triadic(rng, temps, self.beta, log_r, uniform, edges, indptr, indices, counts,
                          ws.ev, f_state, best_labels, path, part.labels, part.size,
                          part.free_stack, part.n_free, ws.head, ws.nxt, ws.entry, ws.bufs,
                          None if ma is None else (ma,), mix)
        self._end_run(state, ws, f_state)
        for t, m in enumerate(MOVES + ("noop",)):
            self.counts[m][0] += int(counts[t, 0])
            self.counts[m][1] += int(counts[t, 1])
        return int(acc), float(f_state[1]), best_labels

    def acceptance_rates(self) -> dict:
        """Accepted / proposed per move type (NaN before any proposal)."""
        return acceptance_rates(self.counts, skip="noop")
