"""Restricted-Gibbs split-merge of Jain & Neal (seed 002), on any partition model.

Jain & Neal's Split-Merge(t, M, R) for Dirichlet-process mixtures carries
over to every swcuts model unchanged, because the only model quantity it
uses is the ratio π(X*)/π(X) and the restricted Gibbs conditionals, and a
model gives both through its exact ``delta`` (Δ log π of relabelling a
vertex set). One update (:meth:`SplitMerge.step`):

1. **Anchors.** Two distinct vertices i ≠ j, drawn independently of the
   state: on a model with a graph a uniformly random edge <i, j>, in random
   order (``anchors="edge"``); otherwise a uniformly random pair
   (``anchors="pair"``; the paper's rule).
2. **S** = the other vertices of the labels of i and j, visited in
   ascending vertex order (a function of S alone, so that the forward and
   the reverse move visit it in the same order).
3. **Launch state.** i and j get two labels (a fresh label for i when they
   share one, their own labels otherwise); every k in S joins one of them
   with probability 1/2; then ``t`` restricted Gibbs scans over S (only
   the two labels, i and j fixed), each drawing x_k from the paper's
   restricted conditional (for the conjugate DP mixture: prior count times
   posterior predictive, normalised over the two labels); here

       P(x_k = c | x_{-k}) ∝ π(x_k = c, x_{-k})^(1/T),  c ∈ {c_i, c_j},

   two-valued, so P(move to the other label) = σ(Δ/T) with Δ the exact
   ``model.delta`` of the move and σ the logistic function.
4. **Split** (c_i = c_j): one more restricted scan from the launch state
   gives X*, with q(X* | X) = Π of the probabilities drawn (the paper's
   restricted Gibbs transition probability);
   q(X | X*) = 1 (a merge is deterministic).
   **Merge** (c_i ≠ c_j): X* joins both labels, q(X* | X) = 1, and
   q(X | X*) is the probability that one restricted scan from the launch
   state reproduces the current split: S is visited in the same order,
   conditioning on the original values of the items already visited and on
   the launch values of the others.
5. Accept with the Metropolis-Hastings probability a(c*, c) of the paper

       α = min{1, [π(X*)/π(X)]^(1/T) · q(X | X*) / q(X* | X)},

   all in logarithms (log-sigmoids, no overflow at any temperature).

Because the launch state is drawn from a distribution that depends only on
(i, j, S) and the vertices outside S — the same in X and in X* — it is an
auxiliary variable of a valid MH update (the paper's "random launch
state": one of many valid MH updates chosen at random, after Tierney).

``random_split=True`` is the paper's simple random split-merge procedure:
each k in S joins i's or j's label with probability 1/2 and no restricted
scan is run, so q(X* | X) = (1/2)^|S| for a split and q(X | X*) = (1/2)^|S|
for a merge (the paper's ratios (1/2)^(n_ci + n_cj - 2), n the label sizes
in the split state). The seed text has lost its digits, so equations are
cited by content, not by number.

**Irreducibility.** With uniform-pair anchors split-merge alone is
irreducible (the paper's ergodicity argument). With edge anchors a merge
needs an edge between the two labels and a split of a label C into A ∪ B
needs an edge between A and B: each move and its reverse need the same
edge. On a
connected graph the labels of any partition form a connected quotient
graph, so a sequence of merges reaches the one-label partition and,
reversed, a sequence of splits reaches any partition from it: split-merge
alone is irreducible there too (the tests check it on the exact
transition matrix). It is slow, though, on partitions whose labels are not
connected in the graph: such a label can neither be split into its
pieces nor made by merging them (no edge joins the pieces), only through a
merge with a third label followed by a split, or the reverse. On the
6- and 7-atom test posteriors the exact relaxation time of split-merge
alone is about 1000 updates with edge anchors, against 22-34 with
uniform-pair anchors and 1.5 iterations of the paper's cycle with a Gibbs
scan. On a disconnected graph no edge anchor can join two
components. In both cases add Gibbs scans (:meth:`SplitMerge.iteration`)
or use ``anchors="pair"``.

**Implementation.** Moves run on the live state with ``model.delta`` /
``model.apply``, so π and every cache the model keeps stay exact; a rejected
proposal is undone by the inverse move and the cached log π restored. The
members of the two labels come from a per-state index of label members
that is checked in O(|label|) and rebuilt only after another kernel has
relabelled vertices; one update costs O((t + 1) |S|) model deltas, which is
linear in the size of the two labels touched (plus whatever the model's
``delta`` itself costs), never a pass over all N vertices or all labels.
On the image model the restricted scans run compiled (:func:`_scan_image`,
the same moves and random numbers as the generic path, which the tests
check move for move); the rest of an update is a handful of
``delta``/``apply`` calls. On the image model and the mixtures,
:meth:`SplitMerge.run` makes whole runs of updates in one compiled call
(:mod:`~swcuts.samplers.split_merge_run`): the moves of :meth:`~SplitMerge.step`
bit for bit, from the same generator, at ~10x the speed; the member
index then lives in the run's arrays (O(N) at a run's start and end, not
per update). The single-vertex Δ there needs the pieces of
the vertex's region once it leaves;
:func:`~swcuts.models.image_kernels.vertex_leave_pieces` stops searching
as soon as every same-label neighbour has been reached, which on image
graphs is usually after a few vertices rather than the whole region.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from swcuts.io.errors import check_number
from swcuts.samplers.common import (
    StepInfo, acceptance_rates, check_anchors, draw_anchor_pair, metropolis_hastings,
    refuse_fixed_labels, repeat_move, seed_compiled_rng)
from swcuts.samplers.compiled import CompiledWorkspace
from swcuts.samplers.gibbs import random_scan
from swcuts.samplers.split_merge_run import (
    _choose_side, _scan_image, _scan_mixture, run_split_merge)
from swcuts.samplers.run_lists import RunLists

__all__ = ["SplitMerge", "RandomSplit"]

_LOG2 = math.log(2.0)


class SplitMerge(RunLists):
    """Split-Merge(t, M, R) of Jain & Neal with restricted Gibbs proposals.

    Parameters
    ----------
    model : partition model
        Offers ``n_vertices``, ``graph`` (a RegionGraph or None),
        ``delta(state, R, new_label)`` and ``apply(state, R, new_label, d)``.
        Models whose labels are values rather than names (``fixed_labels``,
        e.g. Potts) are refused: a split creates a fresh label.
    q : array, optional
        Edge probabilities; accepted for a uniform kernel signature and
        unused (the anchors are uniform over edges).
    t : int
        Intermediate restricted Gibbs scans that lead to the launch state
        (the paper's first tuning parameter; t = 0 gives a launch state that
        is a uniformly random split).
    M : int
        Split-merge updates per :meth:`iteration`.
    R : int
        Single-site Gibbs scans per :meth:`iteration`.
    random_split : bool
        Use the paper's simple random split proposal instead
        (no restricted scans; ``t`` is ignored).
    anchors : {"edge", "pair"}, optional
        How i and j are drawn: a uniformly random graph edge (default when
        the model has a graph) or a uniformly random pair of vertices
        (default, and the only choice, without a graph).
    compiled : bool, optional
        Whether to use the compiled restricted Gibbs scans and Gibbs
        sweeps (image model, and mixture models with a built-in
        likelihood) in :meth:`step` and :meth:`iteration` (None: when the
        model offers them; False: the generic path through
        ``model.delta``/``model.apply``). Both restricted-scan paths draw
        the same random numbers and make the same moves. With the compiled
        path, :meth:`run` makes whole runs of updates in one compiled call
        (``self.compiled`` is then True and the annealing driver calls
        :meth:`run`): the moves of :meth:`step`, bit for bit.

    Attributes
    ----------
    counts : dict
        ``{"split": [proposed, accepted], "merge": [proposed, accepted]}``,
        the acceptance record per move type.

    Notes
    -----
    ``step`` performs ONE split-merge update; the paper's "iteration" (M
    updates, then R full Gibbs scans) is :meth:`iteration`. Under
    ``swcuts.segment(sampler="split-merge")`` the budget counts ``step``
    calls. Every update leaves π^(1/T) invariant; see the module docstring
    for irreducibility. With edge anchors, split-merge alone is slow to
    create or remove a label that is not connected in the graph (only a
    merge with a third label and a split can); :meth:`iteration`'s Gibbs
    scans, or ``anchors="pair"``, remove that bottleneck.
    """

    name = "split-merge"

    def __init__(self, model, q=None, *, t=5, M=1, R=1, random_split=False, anchors=None,
                 compiled=None):
        refuse_fixed_labels(model, "split-merge needs")
        for nm, val in (("t", t), ("M", M), ("R", R)):
            check_number(nm, val, integer=True, minimum=0)
        self.model = model
        self.graph = getattr(model, "graph", None)
        self.t, self.M, self.R = int(t), int(M), int(R)
        self.random_split = bool(random_split)
        if self.random_split:
            self.name = "random-split"
        self.anchors = check_anchors(anchors, self.graph, "pair", ("edge", "pair"))
        self._edges = self.graph.edges if self.anchors == "edge" else None
        mixture = bool(getattr(model, "compiled_likelihood", False))
        available = bool(getattr(model, "compiled", False))
        if compiled and not (available or mixture):
            raise ValueError(f"{type(model).__name__} has no compiled kernels")
        self._gibbs_compiled = available if compiled is None else (bool(compiled) and available)
        # Compiled restricted scans: the image model's (``model.compiled``) and the mixtures'.
        self._fast = available and compiled is not False
        self._mixture = mixture and compiled is not False
        self._no_u = np.zeros(0)
        self._no_side = np.zeros(0, dtype=np.int8)
        if self._fast:
            self._fp = model.kernel_params()
            self._labs = np.zeros(2, dtype=np.int64)
            self._f_state = np.zeros(1)
            self._no_target = np.zeros(0, dtype=np.int8)
        self._gibbs = None
        # run(): whole runs of updates compiled (split_merge_run), on the models above.
        self.compiled = self._fast or self._mixture
        self._index = weakref.WeakKeyDictionary()
        self._lists = weakref.WeakKeyDictionary()  # state -> the member lists of run()
        self._one = np.zeros(1, dtype=np.int64)
        self.counts = {"split": [0, 0], "merge": [0, 0]}

    # -------------------------------------------------------------- helpers
    def _draw_anchors(self, rng):
        """(i, j), independent of the state; None if no pair exists."""
        return draw_anchor_pair(self._edges if self.anchors == "edge" else None,
                                self.model.n_vertices, rng)

    def _move(self, state, R, label) -> float:
        """Relabel R on the live state; returns the Δ log π applied."""
        d = self.model.delta(state, R, label)
        self.model.apply(state, R, label, d)
        return d

    def _scan(self, state, S, side, labs, temperature, rng=None, target=None) -> float:
        """One restricted Gibbs scan over S (ascending order) on the live state.

        ``side[idx]`` is 0 when S[idx] carries ``labs[0]`` (i's label) and 1
        for ``labs[1]`` (j's); it is kept up to date. With ``target`` every
        item is forced to ``target[idx]`` (the reverse of a merge);
        otherwise it is drawn with ``rng``. Returns log of the probability
        of the outcome (the product of the restricted conditionals, the
        paper's restricted Gibbs transition probability).
        """
        u = rng.random(S.size) if target is None else None
        if self._fast:
            return self._scan_compiled(state, S, side, labs, temperature, u, target)
        if self._mixture:
            model = self.model
            log_q, d = _scan_mixture(S, side, np.array(labs, dtype=np.int64), 1.0 / temperature,
                                     self._no_u if u is None else u,
                                     self._no_side if target is None else target,
                                     *model.kernel_arrays(state))
            model.evaluations += S.size
            state.log_pi += d
            return float(log_q)
        model = self.model
        one = self._one
        forced = target is not None
        u = self._no_u if u is None else u
        target = self._no_side if target is None else target
        log_q = 0.0
        for idx in range(S.size):
            a = int(side[idx])
            b = 1 - a
            one[0] = S[idx]
            d = model.delta(state, one, labs[b])
            move, lp = _choose_side(d / temperature, a, forced, target, u, idx)
            log_q += lp
            if move:
                model.apply(state, one, labs[b], d)
                side[idx] = b
        return log_q

    def _scan_compiled(self, state, S, side, labs, temperature, u, target) -> float:
        model = self.model
        part = state.partition
        ws = state.workspace(CompiledWorkspace, part.n_vertices, part.size.size, model.n_stats)
        self._labs[0], self._labs[1] = labs
        self._f_state[0] = state.log_pi
        g = model.graph
        log_q = _scan_image(S, side, self._labs, 1.0 / temperature,
                            u if u is not None else np.zeros(0),
                            target if target is not None else self._no_target, self._f_state,
                            part.labels, part.size, part.free_stack, part.n_free, state.stats,
                            state.loglik, state.comp_root, state.comp_area, model.vstats,
                            g.indptr, g.indices, model.area, model.boundary_csr, model.use_family,
                            model.n_channels,
                            model.n_bins, self._fp, self._one, ws.in_r, ws.mark, ws.visited,
                            ws.roots, ws.sR, ws.tmp)
        state.log_pi = float(self._f_state[0])
        return float(log_q)

    # ----------------------------------------------------------------- step
    def step(self, state, rng, temperature=1.0) -> StepInfo:
        """One split-merge Metropolis-Hastings update at temperature T.

        Parameters
        ----------
        state : ModelState
            Mutated in place (left unchanged, with exact caches, on rejection).
        rng : numpy.random.Generator
        temperature : float
            The target is π^(1/T).

        Returns
        -------
        StepInfo
            ``move`` is "split" or "merge"; ``moved`` the number of vertices
            the proposal relabels; ``delta`` its Δ log π.
        """
        temperature = float(temperature)
        if not temperature > 0.0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        anchors = self._draw_anchors(rng)
        if anchors is None:
            return StepInfo(False, -math.inf, 0, 0.0, "none")
        i, j = anchors
        part = state.partition
        ci, cj = int(part.labels[i]), int(part.labels[j])
        index = self._members_index(state)
        if ci == cj:
            C = index.members(part, ci)
            S = np.sort(C[(C != i) & (C != j)])
            if self.random_split:
                return self._random_split(state, index, i, j, ci, S, rng, temperature)
            return self._split(state, index, i, j, ci, S, rng, temperature)
        A = index.members(part, ci)
        B = index.members(part, cj)
        S = np.sort(np.concatenate((A[A != i], B[B != j])))
        return self._merge(state, index, i, j, ci, cj, A, B, S, rng, temperature)

    def _launch(self, state, S, side, labs, temperature, rng) -> None:
        for _ in range(self.t):
            self._scan(state, S, side, labs, temperature, rng=rng)

    def _split(self, state, index, i, j, c, S, rng, temperature) -> StepInfo:
        self.counts["split"][0] += 1
        log_pi0 = state.log_pi
        f = state.partition.fresh_label()
        labs = (f, c)
        # Launch: i to the fresh label, each k in S with it with probability 1/2.
        side = rng.integers(0, 2, size=S.size).astype(np.int8)
        self._move(state, np.concatenate(([i], S[side == 0])).astype(np.int64), f)
        self._launch(state, S, side, labs, temperature, rng)
        # Final scan: the proposal X* and q(X* | X).
        log_q_fwd = self._scan(state, S, side, labs, temperature, rng=rng)
        d = state.log_pi - log_pi0
        log_alpha = d / temperature - log_q_fwd
        Ri = np.concatenate(([i], S[side == 0])).astype(np.int64)
        if metropolis_hastings(log_alpha, rng):
            self.counts["split"][1] += 1
            index.lists[f] = Ri
            index.lists[c] = np.concatenate(([j], S[side == 1])).astype(np.int64)
            return StepInfo(True, log_alpha, int(Ri.size), d, "split")
        self._move(state, Ri, c)
        state.log_pi = log_pi0
        return StepInfo(False, log_alpha, int(Ri.size), d, "split")

    def _random_split(self, state, index, i, j, c, S, rng, temperature) -> StepInfo:
        self.counts["split"][0] += 1
        f = state.partition.fresh_label()
        side = rng.integers(0, 2, size=S.size).astype(np.int8)
        Ri = np.concatenate(([i], S[side == 0])).astype(np.int64)
        d = self.model.delta(state, Ri, f)
        # q(X | X*) / q(X* | X) = 1 / (1/2)^|S|  (random split).
        log_alpha = d / temperature + S.size * _LOG2
        if metropolis_hastings(log_alpha, rng):
            self.counts["split"][1] += 1
            self.model.apply(state, Ri, f, d)
            index.lists[f] = Ri
            index.lists[c] = np.concatenate(([j], S[side == 1])).astype(np.int64)
            return StepInfo(True, log_alpha, int(Ri.size), d, "split")
        return StepInfo(False, log_alpha, int(Ri.size), d, "split")

    def _merge(self, state, index, i, j, ci, cj, A, B, S, rng, temperature) -> StepInfo:
        self.counts["merge"][0] += 1
        if self.random_split:
            # q(X | X*) / q(X* | X) = (1/2)^|S|  (random merge).
            log_q_rev = -S.size * _LOG2
        else:
            log_pi0 = state.log_pi
            labs = (ci, cj)
            orig = (state.partition.labels[S] == cj).astype(np.int8)
            side = rng.integers(0, 2, size=S.size).astype(np.int8)
            to_j = S[(orig == 0) & (side == 1)]
            to_i = S[(orig == 1) & (side == 0)]
            if to_j.size:
                self._move(state, to_j, cj)
            if to_i.size:
                self._move(state, to_i, ci)
            self._launch(state, S, side, labs, temperature, rng)
            # Forced scan back to the current split: q(X | X*); it leaves
            # the live state at X again.
            log_q_rev = self._scan(state, S, side, labs, temperature, target=orig)
            state.log_pi = log_pi0
        # Merge the smaller label into the larger (the partition is the same).
        if A.size <= B.size:
            src, dst = ci, cj
            Rm = A
        else:
            src, dst = cj, ci
            Rm = B
        Rm = np.ascontiguousarray(Rm, dtype=np.int64)
        d = self.model.delta(state, Rm, dst)
        log_alpha = d / temperature + log_q_rev
        if metropolis_hastings(log_alpha, rng):
            self.counts["merge"][1] += 1
            merged = np.concatenate((A, B)).astype(np.int64)
            self.model.apply(state, Rm, dst, d)
            index.lists.pop(src, None)
            index.lists[dst] = merged
            return StepInfo(True, log_alpha, int(Rm.size), d, "merge")
        return StepInfo(False, log_alpha, int(Rm.size), d, "merge")

    # ------------------------------------------------------------------ run
    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-math.inf, path=None):
        """One update per temperature; returns (accepted, best log π, best labels).

        On the compiled path (``self.compiled``) the updates run in one
        compiled call (:func:`~swcuts.samplers.split_merge_run.run_split_merge`)
        that draws the same numbers from ``rng`` and makes the same moves
        as :meth:`step` once per temperature; otherwise it calls
        :meth:`step`.

        Parameters
        ----------
        state : ModelState
        rng : numpy.random.Generator
        temperatures : (n,) float array
        best_labels : int array, optional
            Overwritten by states better than both ``best_log_pi`` and the
            state at the start (default: a copy of the state's labels).
        best_log_pi : float
            log π of ``best_labels``.
        path : (n, N) int array, optional
            Receives the labels after every update.

        Returns
        -------
        (accepted, best log π, best labels)
        """
        temps, best_labels = self._run_arguments(temperatures, state, best_labels)
        part = state.partition
        if not self.compiled:
            return self._run_steps(state, rng, temps, best_labels, best_log_pi, path)
        ws, f_state, path, (ma, mix) = self._start_run(state, best_log_pi, path)
        ws.counts[:] = 0
        opts = np.array([self.anchors == "pair", self.t, self.random_split], np.int64)
        edges = self._edges if self._edges is not None else np.zeros((0, 2), np.int64)
        img = None
        if self._fast:
            model = self.model
            sws = state.workspace(CompiledWorkspace, part.n_vertices, part.size.size, model.n_stats)
            img = (ma, (model.vstats, self._fp, self._one, sws.in_r, sws.mark, sws.visited,
                        sws.roots, sws.sR, sws.tmp))
        acc = run_split_merge(rng, temps, opts, edges, ws.counts, ws.ev, f_state, best_labels,
                              path, part.labels, part.size, part.free_stack, part.n_free, ws.head,
                              ws.nxt, ws.entry, ws.bufs, img, mix)
        self._end_run(state, ws, f_state)
        c = ws.counts.tolist()
        self.counts["split"][0] += c[0]
        self.counts["split"][1] += c[1]
        self.counts["merge"][0] += c[2]
        self.counts["merge"][1] += c[3]
        self._last = (c[4], float(f_state[2]))
        return int(acc), float(f_state[1]), best_labels

    # ------------------------------------------------------------ iteration
    def gibbs_scan(self, state, rng, temperature=1.0) -> None:
        """One single-site Gibbs scan: N updates at uniformly random vertices
        (a random scan, with the library's :class:`~swcuts.samplers.Gibbs`
        kernel, compiled when the model offers it), each over every label
        and a fresh one. The paper's scans are systematic; a random scan
        leaves π^(1/T) invariant just the same."""
        if self._mixture:
            random_scan(self.model, state, rng, temperature)
            return
        if self._gibbs is None:
            from swcuts.samplers.gibbs import Gibbs

            self._gibbs = Gibbs(self.model, compiled=self._gibbs_compiled)
        n = self.model.n_vertices
        if self._gibbs.compiled:
            seed_compiled_rng(rng)  # reproducible from rng alone
            self._gibbs.run(state, rng, np.full(n, float(temperature)))
        else:
            for _ in range(n):
                self._gibbs.step(state, rng, temperature)

    def iteration(self, state, rng, temperature=1.0) -> StepInfo:
        """One iteration of Split-Merge(t, M, R): M split-merge updates, then
        R single-site Gibbs scans (the paper's cycle of MH and Gibbs updates).

        Returns
        -------
        StepInfo
            ``accepted``: whether any split-merge update was accepted;
            ``moved``: vertices relabelled by the accepted updates;
            ``delta``: Δ log π over the whole iteration (Gibbs included);
            ``move``: "iteration".
        """
        before = state.log_pi
        if self.compiled and self.M:  # the same M updates in one compiled run
            acc, _, _ = self.run(state, rng, np.full(self.M, float(temperature)))
            any_acc, (moved, log_alpha) = acc > 0, self._last
        else:
            any_acc, moved, log_alpha = repeat_move(self.step, self.M, state, rng, temperature)
        for _ in range(self.R):
            self.gibbs_scan(state, rng, temperature)
        return StepInfo(any_acc, log_alpha, moved, state.log_pi - before, "iteration")

    def acceptance_rates(self) -> dict:
        """Accepted / proposed per move type (NaN before any proposal)."""
        return acceptance_rates(self.counts)


class RandomSplit(SplitMerge):
    """Jain & Neal's simple random split-merge procedure: the weak
    baseline. Each item of S joins i's or j's label with probability 1/2;
    no restricted Gibbs scans. Same parameters as :class:`SplitMerge`
    (``t`` is ignored)."""

    name = "random-split"

    def __init__(self, model, q=None, *, t=0, M=1, R=1, anchors=None, compiled=None):
        super().__init__(model, q, t=t, M=M, R=R, random_split=True, anchors=anchors,
                         compiled=compiled)
