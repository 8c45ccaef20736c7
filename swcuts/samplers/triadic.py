"""Triadic split-merge of van Rossum et al. (seed 000), on any partition model.

The dyadic split-merge sampler moves between one and two labels; the
triadic sampler also moves between two and three, so that a label can be
assembled from parts of two others in one step. One update
(:meth:`Triadic.step`):

1. **Anchors.** An ordered triple t = (i, j, k) of distinct vertices, drawn
   independently of the state: on a model with a graph a uniformly random
   edge <i, j> in random orientation and k uniform over the neighbours of i
   or j other than i and j (``anchors="edge"``, the default there; if that
   set is empty, k is uniform over the other vertices); otherwise a
   uniformly random ordered triple (``anchors="uniform"``; the paper's
   rule).
2. **Move type**, from the labels c_i, c_j, c_k of the anchors:

   * c_i = c_j = c_k (N_S = 1): ``split12``, split the label into one
     holding i and one holding j;
   * c_i ≠ c_j and c_k ∈ {c_i, c_j} (N_S = 2): with probability β
     ``merge21``, join the labels of i and j; otherwise ``split23``,
     re-divide the items of both labels over three labels, one holding
     each of i, j, k;
   * c_i = c_j ≠ c_k (N_S = 2): ``noop``; no move has this case as its
     reverse (see below);
   * c_i, c_j, c_k distinct (N_S = 3): ``merge32``, re-divide the items
     of the three labels between two, one holding i, one holding j.

3. **Allocation** (sequential allocation, SAMS). The items of the labels
   touched, other than the anchors of the move (i, j for 1↔2 and for the
   3→2 move, i, j, k for the 2→3 split), are first moved to a holding
   label H, which leaves every anchor alone in its target label; then
   they leave H one at a time in a uniformly random order ω, item m
   joining target g with probability

       p(g) = exp(Δ_g / T) / Σ_h exp(Δ_h / T),
       Δ_g  = log π(m → g) − log π   (the exact ``model.delta``).

   For every model whose log π is a sum of per-label terms (plus terms in
   the number of labels), Δ_g is "H without m" (the same for every g) plus
   "g with m", so p(g) is the usual SAMS conditional of m given the items
   already allocated. q(X' | X) = Π p of the choices made.
4. **Accept** with the Metropolis-Hastings probability

       α = min{1, [π(X')/π(X)]^(1/T) · r(X | X') q(X | X') / (r(X' | X) q(X' | X))}.

**Derivation of the acceptance ratio.** The update is a mixture, over the
anchors t and the order ω, of Metropolis-Hastings updates. Fix t and ω.
The move type is a function of (c_i, c_j, c_k) and its reverse is a move of
the same t:

* split12 turns N_S = 1 into c_i ≠ c_j with c_k in one of them (k is an
  allocated item); merge21 maps that class back to N_S = 1;
* split23 turns c_i ≠ c_j, c_k ∈ {c_i, c_j} into N_S = 3; merge32 divides the
  three labels between i's and j's, so it always ends with c_i ≠ c_j,
  c_k ∈ {c_i, c_j}, the class split23 starts from;
* no move ends with c_i = c_j ≠ c_k (split12 separates i and j, merge21
  ends with N_S = 1, split23 with N_S = 3, merge32 with c_i ≠ c_j). So a
  move leaving that class would have no reverse: the step is a no-op
  there, which is trivially reversible. (A 2→3 split there, as a literal
  reading of the paper's pseudo-code would do, produces N_S = 3 whose
  3→2 reverse can never bring i and j back together.)

Inside each pair of classes only one move type connects two given states
X, X' (the label counts differ by one and say which), and the allocation
outcome determines X' (every allocated item lands in a block with exactly
one anchor). The selection probabilities r of the move type are: split12
from N_S = 1 with probability 1, merge21 β, split23 1 − β, merge32 1.
Hence

    split12:  r(X | X') / r(X' | X) = β / 1          (paper's ratio β)
    merge21:                          1 / β
    split23:                          1 / (1 − β)    (paper's 1/(1 − β))
    merge32:                          (1 − β) / 1

and 0 < β < 1 keeps every ratio finite. The reverse proposal probability
q(X | X') replays the allocation: a merge is deterministic (q = 1 for
merge21's forward step and for split12's reverse, whose merge joins the
labels of i and j), and for the other direction the same sequential
procedure is run from the same intermediate partition, forcing every item
to its block in the current state, multiplying the probabilities it would
have had. The intermediate partition (anchors alone, the allocated items
in H, everything else unchanged) depends only on t, on the set S of
allocated items and on the labels not touched, which are the same in X
and X' (the union of the touched labels is preserved), so the replay
gives exactly the forward probability of the reverse move. This is the
paper's "q as the product of the sequential probabilities", not its
uniform-allocation formula (1/2)^(n−2) / (1/3)^(n−3), which holds only
for uniformly random allocation. (The paper's pseudo-code also passes
two targets to the split procedure where its own q of the 2→3 split
needs three; here the 2→3 split allocates over i's, j's and k's labels.)

The order: split12 and merge21 allocate the same set S = (touched labels)
∖ {i, j} and draw ω uniformly over its orders in both directions.
split23 allocates S₂₃ = (touched) ∖ {i, j, k} and merge32 allocates
S₃₂ = S₂₃ ∪ {k}: split23 draws an order σ of S₂₃ and a position
p ∈ {0, …, |S₂₃|} (both uniform) and its reverse replay uses σ with k
inserted at p; merge32 draws an order τ of S₃₂ and its reverse replay uses
τ without k. (σ, p) ↔ τ is a bijection and P(σ, p) = 1/|S₂₃|! · 1/|S₃₂|
= 1/|S₃₂|! = P(τ), so the order probabilities cancel. With the anchor
probability P(t) (the reverse uses the same ordered t, so P(t) cancels
too and needs no symmetry), each (t, ω) sub-update satisfies detailed
balance with respect to π^(1/T), and so does their mixture. The kernel's
exact transition matrix is checked against this on small spaces in
``tests/test_triadic.py``.

**Irreducibility.** With uniform anchors, or edge anchors on a connected
graph with at least three vertices: from any partition with two or more
labels, some anchor triple has c_i ≠ c_j (an edge across labels), and
then either merge21 (N_S = 2) or merge32 (N_S = 3) proposes, with positive
probability, a partition with one label fewer; so the one-label partition
is reachable from everywhere, and, every move having a reverse of
positive probability, everything is reachable from it. The triadic kernel
alone is irreducible there (aperiodic by its rejections). On a
disconnected graph edge anchors cannot join labels that never touch; use
``anchors="uniform"`` or interleave :class:`~swcuts.samplers.Gibbs`.

**Implementation.** Moves run on the live state with ``model.delta`` /
``model.apply`` (exact Δ log π, exact model caches); merges and the
reverse replays too, so the state is at the proposal when α is decided,
and a rejection moves the touched items back to their original labels
(label names included) and restores the cached log π. Members of labels
come from a per-state index checked in O(|label|) (rebuilt in O(N log N)
only after another kernel relabelled vertices). One update makes
O(|touched labels|) calls of ``model.delta``/``apply`` (at most 3 deltas
and one apply per allocated item, forward and replay), never a pass over
all vertices or all labels; each call costs what the model's ``delta``
costs (for the image model, a search of the regions the item touches).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..models.mixture import MixtureModel, item_join, item_leave, item_move
from ..partition import MemberIndex
from .common import StepInfo, draw_anchor_pair, metropolis_hastings, require_no_boundary

__all__ = ["Triadic", "Proposal", "MOVES"]

#: Move types, in the order of :attr:`Triadic.counts`.
MOVES = ("split12", "merge21", "split23", "merge32")


@njit(cache=True)
def _allocate_mixture(items, targets, inv_t, u, forced, labels, size, free_stack, n_free, lstats,
                      lloglik, vstats, kind, params, prior):
    """Sequential allocation of ``items`` to ``targets`` on a mixture-model
    state, compiled: the same allocation as :meth:`Triadic._allocate` (same
    uniforms ``u``, or the forced choices ``forced``; the other one empty),
    with Δ_g = leave part of the holding label + join part of target g
    (:func:`~swcuts.models.mixture.item_leave`, :func:`~swcuts.models.mixture.item_join`).
    The state arrays are those of
    :meth:`~swcuts.models.mixture.MixtureModel.kernel_arrays`.

    Returns
    -------
    log_q : float
        Log of the product of the probabilities of the choices (−inf as in
        :meth:`Triadic._allocate`).
    delta : float
        Δ log π of the moves made.
    """
    is_forced = forced.size > 0
    D = vstats.shape[1]
    nt = targets.size
    st_a = np.empty(D)
    st_t = np.empty((nt, D))
    ll_t = np.empty(nt)
    d = np.empty(nt)
    x = np.empty(nt)
    one = np.empty(1, np.int64)
    log_q = 0.0
    total = 0.0
    for s in range(items.size):
        v = items[s]
        a = labels[v]
        d_leave, ll_a = item_leave(v, a, size, lstats, lloglik, vstats, kind, params, prior,
                                   st_a)
        mx = -np.inf
        for g in range(nt):
            d_join, ll_t[g] = item_join(v, targets[g], size, lstats, lloglik, vstats, kind,
                                        params, prior, st_t[g])
            d[g] = d_leave + d_join
            x[g] = d[g] * inv_t
            if x[g] > mx or math.isnan(x[g]):
                mx = x[g]
        if mx == -np.inf or math.isnan(mx):
            if not is_forced:
                return -np.inf, total
            lse = mx
        else:
            z = 0.0
            for g in range(nt):
                z += math.exp(x[g] - mx)
            lse = mx + math.log(z)
        if is_forced:
            g = forced[s]
        else:
            r = u[s]
            g = nt - 1
            acc = 0.0
            for h in range(nt):
                acc += math.exp(x[h] - lse)
                if r < acc:
                    g = h
                    break
        lp = x[g] - lse
        log_q += lp if not math.isnan(lp) else -np.inf
        item_move(v, a, targets[g], labels, size, free_stack, n_free, lstats, lloglik, st_a,
                  ll_a, st_t[g], ll_t[g], one)
        total += d[g]
    return log_q, total


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


class Triadic:
    """Triadic split-merge with sequential (SAMS) allocation.

    Parameters
    ----------
    model : partition model
        Offers ``n_vertices``, ``graph`` (a RegionGraph or None),
        ``delta(state, R, new_label)`` and ``apply(state, R, new_label, d)``.
        Models whose labels are values rather than names (``fixed_labels``,
        e.g. Potts) are refused: splits create fresh labels.
    q : array, optional
        Edge probabilities; accepted for a uniform kernel signature and
        unused.
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
        numbers. ``self.compiled`` is always False: the update
        is orchestrated in Python, so the annealing driver calls
        :meth:`step`.

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
        require_no_boundary(model, "triadic")
        if getattr(model, "fixed_labels", False):
            raise ValueError(f"{type(model).__name__} has a fixed label set; the triadic sampler "
                             "needs a partition model whose labels are names")
        if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)):
            raise ValueError(f"beta must be a number in (0, 1), got {beta!r}")
        beta = float(beta)
        if not 0.0 < beta < 1.0:
            raise ValueError(f"beta must lie strictly between 0 and 1, got {beta}")
        self.model = model
        self.graph = getattr(model, "graph", None)
        if anchors is None:
            anchors = "edge" if self.graph is not None else "uniform"
        if anchors not in ("edge", "uniform"):
            raise ValueError(f"anchors must be 'edge' or 'uniform', got {anchors!r}")
        if anchors == "edge" and self.graph is None:
            raise ValueError("edge anchors need a model with a graph")
        self.anchors = anchors
        self.beta = beta
        # log r(X | X') / r(X' | X) per move type (module docstring).
        self._log_r = {"split12": math.log(beta), "merge21": -math.log(beta),
                       "split23": -math.log1p(-beta), "merge32": math.log1p(-beta)}
        mixture = isinstance(model, MixtureModel) and model.compiled_likelihood
        # Compiled sequential allocation on mixtures with a built-in likelihood.
        self._mixture = mixture and compiled is not False
        self._no_u = np.zeros(0)
        self._no_forced = np.zeros(0, dtype=np.int64)
        self.compiled = False
        self._index = weakref.WeakKeyDictionary()
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
    def _members_index(self, state) -> MemberIndex:
        idx = self._index.get(state)
        if idx is None:
            idx = self._index[state] = MemberIndex()
        return idx

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
            mx = max(x)
            if mx == -math.inf or math.isnan(mx):
                if forced is None:
                    return -math.inf
                lse = mx
            else:
                lse = mx + math.log(sum(math.exp(v - mx) for v in x))
            if forced is None:
                # Inverse CDF on the normalised probabilities.
                r = u[s]
                g = nt - 1
                acc = 0.0
                for h in range(nt):
                    acc += math.exp(x[h] - lse)
                    if r < acc:
                        g = h
                        break
            else:
                g = int(forced[s])
            lp = x[g] - lse
            log_q += lp if not math.isnan(lp) else -math.inf
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
        """One triadic Metropolis-Hastings update at temperature T.

        Parameters
        ----------
        state : ModelState
            Mutated in place (left unchanged, with exact caches and the
            same label names, on rejection).
        rng : numpy.random.Generator
        temperature : float
            The target is π^(1/T).

        Returns
        -------
        StepInfo
            ``move`` is "split12", "merge21", "split23", "merge32" or
            "noop"; ``moved`` the number of vertices whose label the
            proposal changes; ``delta`` its Δ log π.
        """
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

    def acceptance_rates(self) -> dict:
        """Accepted / proposed per move type (NaN before any proposal)."""
        return {m: (a / p if p else float("nan")) for m, (p, a) in self.counts.items()
                if m != "noop"}
