"""Pieces every kernel shares: the MH correction, cluster growth, cuts,
and the label proposal over "targets".

Targets. For a vertex set R in state X, the labels R can move to are the
labels k whose rest V_k \\ R is non-empty, plus one fresh label. The current
target of R is its own label ℓ, or the fresh label when R = V_ℓ. Because the
sets V_k \\ R are the same in X and in X' (R relabelled), the target set and
every quantity computed from it — adjacency to R, cut edges — are the same
in both states, which makes reverse proposals exact and cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from swcuts.models.image_kernels import new_region_index
from swcuts.models.partition import MemberIndex
from swcuts._numba.compiled_only import compiled_only
from swcuts._numba.primitives import number_components, union

__all__ = ["StepInfo", "metropolis_hastings", "seed_compiled_rng", "grow_component", "cut_summary",
           "TargetProposal", "propose_target"]


@dataclass
class StepInfo:
    """What one kernel step did."""

    accepted: bool
    log_accept_ratio: float = 0.0
    moved: int = 0
    delta: float = 0.0
    move: str = ""


def metropolis_hastings(log_alpha: float, rng) -> bool:
    """The Metropolis-Hastings decision: accept with probability min(1, e^log_alpha).

    Its compiled twins: :func:`swcuts._numba.primitives.mh_accept` (the same rule)
    and :func:`swcuts._numba.primitives.mh_threshold` (uniform first, for the
    bound-first shortcut)."""
    if log_alpha >= 0.0:
        return True
    if log_alpha == -math.inf or math.isnan(log_alpha):
        return False
    return rng.random() < math.exp(log_alpha)


#: Slack of the bound-first test: an exact log α summed along another path
#: (e.g. replayed tree paths) may sit a few ulps above its bound's terms.
BOUND_SLACK = 1e-9


def metropolis_hastings_bound_first(rng, bound: float, exact):
    """The Metropolis-Hastings decision with the uniform drawn first.

    Accept iff log u < log α. ``bound`` is an upper bound of log α and
    ``exact(stop)`` returns the exact log α; it is called only when log u
    falls below the bound (otherwise the move is rejected whatever its exact
    ratio: the same decision, for less work). ``stop`` is log u less
    :data:`BOUND_SLACK`: ``exact`` may return early any upper bound of
    log α that lies below ``stop`` (e.g. a partial sum of non-positive
    terms), which rejects the move as the exact value would.

    Returns
    -------
    accepted : bool
    log_alpha : float
        The exact log α, or the bound when a bound alone rejected.
    """
    u = rng.random()
    log_u = math.log(u) if u > 0.0 else -math.inf
    if log_u >= bound + BOUND_SLACK:
        return False, bound
    log_alpha = exact(log_u - BOUND_SLACK)
    return log_u < log_alpha, log_alpha


@njit(cache=True)
def _seed(seed):
    np.random.seed(seed)


def seed_compiled_rng(rng) -> None:
    """Seed the random generator that compiled code uses, from ``rng``: numba's
    ``rnd_init`` of this thread's NumPy state, as :func:`_seed` does, called from
    Python (no kernel to compile in a first run; :func:`_seed` on another numba)."""
    seed = int(rng.integers(0, 2**31 - 1))
    try:
        from numba import _helperlib

        _helperlib.rnd_seed(_helperlib.rnd_get_np_state_ptr(), seed)
    except (ImportError, AttributeError, TypeError):  # another numba
        _seed(seed)


@compiled_only
def grow_into(seed, labels, q, indptr, indices, edge_ids, mark, Rbuf, vy=None, vx=None, win=None):
    """Wolff growth: the connected component of ``seed`` when every edge
    between same-label vertices is turned on with probability q_ij.

    Writes the component to ``Rbuf[:n]`` and returns n. Edges are tested
    lazily, each at most once; untested edges do not change the probability
    of the component. ``mark`` must be zero on entry and is zero on return.
    With a window ``win`` = (y0, y1, x0, x1) and vertex coordinates ``vy``,
    ``vx``, only edges with both ends in the window are used (multigrid);
    without, numba compiles the test away.
    """
    lab = labels[seed]
    n = 1
    Rbuf[0] = seed
    mark[seed] = 1
    head = 0
    while head < n:
        v = Rbuf[head]
        head += 1
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if mark[u] or labels[u] != lab:
                continue
            if win is not None and not (win[0] <= vy[u] < win[1] and win[2] <= vx[u] < win[3]):
                continue
            if np.random.random() < q[edge_ids[p]]:
                mark[u] = 1
                Rbuf[n] = u
                n += 1
    for t in range(n):
        mark[Rbuf[t]] = 0
    return n


def grow_component(seed, labels, q, indptr, indices, edge_ids, mark, Rbuf):
    """:func:`grow_into`, returning the component as a new array."""
    n = grow_into(seed, labels, q, indptr, indices, edge_ids, mark, Rbuf)
    return Rbuf[:n].copy()


@compiled_only
def sample_components(labels, edges, q):
    """SW clustering of the whole graph: component id of every vertex when
    each same-label edge is on with probability q_ij (union-find)."""
    n = labels.size
    parent = np.arange(n)
    for e in range(edges.shape[0]):
        i = edges[e, 0]
        j = edges[e, 1]
        if labels[i] != labels[j]:
            continue
        if np.random.random() >= q[e]:
            continue
        union(parent, i, j)
    comp = np.empty(n, np.int64)
    n_comp = number_components(parent, comp)
    return comp, n_comp


@compiled_only
def cut_sums(R, n_r, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log, acc_q, acc_n, adj,
             vy=None, vx=None, win=None):
    """For every label k adjacent to R (through V_k \\ R), accumulate
    Σ log(1 - q_ij) and Σ q_ij over the cut C(R, V_k) and the number of cut
    edges into ``acc_*[k]``; the adjacent labels go to ``adj``. Returns their
    number. Clear with :func:`clear_cut_sums`. With a window ``win`` (and
    vertex coordinates ``vy``, ``vx``; R inside it), Σ log(1 - q_ij) runs
    over the cut edges with both ends in the window only (Prop. 9)."""
    for t in range(n_r):
        in_r[R[t]] = 1
    k = 0
    for t in range(n_r):
        v = R[t]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if in_r[u]:
                continue
            lab = labels[u]
            if acc_n[lab] == 0:
                adj[k] = lab
                k += 1
            e = edge_ids[p]
            if win is None or (win[0] <= vy[u] < win[1] and win[2] <= vx[u] < win[3]):
                acc_log[lab] += log1mq[e]
            acc_q[lab] += q[e]
            acc_n[lab] += 1
    for t in range(n_r):
        in_r[R[t]] = 0
    return k


@njit(cache=True, inline="always")
def clear_cut_sums(adj, n_adj, acc_log, acc_q, acc_n):
    for t in range(n_adj):
        lab = adj[t]
        acc_log[lab] = 0.0
        acc_q[lab] = 0.0
        acc_n[lab] = 0


@njit(cache=True)
def cut_summary(R, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log, acc_q, acc_n, out_labels):
    """:func:`cut_sums` returned as arrays (labels, Σlog(1-q), Σq, count)."""
    k = cut_sums(R, R.size, labels, indptr, indices, edge_ids, q, log1mq, in_r, acc_log, acc_q,
                 acc_n, out_labels)
    labs = out_labels[:k].copy()
    s_log = np.empty(k)
    s_q = np.empty(k)
    cnt = np.empty(k, np.int64)
    for t in range(k):
        lab = labs[t]
        s_log[t] = acc_log[lab]
        s_q[t] = acc_q[lab]
        cnt[t] = acc_n[lab]
    clear_cut_sums(labs, k, acc_log, acc_q, acc_n)
    return labs, s_log, s_q, cnt


@njit(cache=True)
def draw_normalized(x, lse, r):
    """Inverse-CDF draw of an index of ``x`` with probability
    ``exp(x[h] - lse)`` (``lse`` = log Σ exp x) from the uniform ``r``; the
    last index when rounding leaves ``r`` beyond the sum.

    Examples
    --------
    >>> x = np.log(np.array([0.25, 0.75]))
    >>> int(draw_normalized(x, 0.0, 0.2)), int(draw_normalized(x, 0.0, 0.3))
    (0, 1)
    """
    acc = 0.0
    for h in range(x.size):
        acc += math.exp(x[h] - lse)
        if r < acc:
            return h
    return x.size - 1


def edge_arrays(graph, q):
    """The edge probabilities ``q`` checked against ``graph`` (one per
    edge) as a float array, and log(1 - q) (−inf where q = 1)."""
    q = np.ascontiguousarray(q, dtype=np.float64)
    if q.shape != (graph.n_edges,):
        raise ValueError("q must have one probability per graph edge")
    with np.errstate(divide="ignore"):
        log1mq = np.log1p(-q)
    return q, log1mq


def draw_anchor_pair(edges, n, rng):
    """Two distinct vertices drawn independently of the state: a uniformly
    random edge in random order when ``edges`` is given, else a uniform
    ordered pair of 0..n-1. None when there is no such pair."""
    if edges is not None:
        if edges.shape[0] == 0:
            return None
        e = int(rng.integers(edges.shape[0]))
        i, j = int(edges[e, 0]), int(edges[e, 1])
        if rng.random() < 0.5:
            i, j = j, i
        return i, j
    if n < 2:
        return None
    i = int(rng.integers(n))
    j = int(rng.integers(n - 1))
    return i, (j + 1 if j >= i else j)


def refuse_fixed_labels(model, who_needs: str) -> None:
    """Refuse a model whose labels are values rather than names
    (``fixed_labels``, e.g. Potts): moves that create fresh labels need names.

    Parameters
    ----------
    model : partition model
    who_needs : str
        The start of the message's second half, e.g. ``"split-merge needs"``.

    Raises
    ------
    ValueError
        If ``model.fixed_labels`` is true.

    Examples
    --------
    >>> class Potts:
    ...     fixed_labels = True
    >>> refuse_fixed_labels(Potts(), "split-merge needs")
    Traceback (most recent call last):
    ...
    ValueError: Potts has a fixed label set; split-merge needs a partition model whose labels are names
    """
    if getattr(model, "fixed_labels", False):
        raise ValueError(f"{type(model).__name__} has a fixed label set; {who_needs} "
                         "a partition model whose labels are names")


def check_anchors(anchors, graph, without_graph: str, allowed: tuple) -> str:
    """The anchor rule of a split-merge-type kernel: ``anchors`` checked
    against ``allowed``, None meaning ``"edge"`` with a graph and
    ``without_graph`` without one.

    Parameters
    ----------
    anchors : str or None
    graph : RegionGraph or None
        The model's graph.
    without_graph : str
        The default when there is no graph.
    allowed : tuple of str
        The rules the kernel offers.

    Returns
    -------
    str
        The rule.

    Raises
    ------
    ValueError
        For a rule not in ``allowed``, or ``"edge"`` without a graph.

    Examples
    --------
    >>> check_anchors(None, None, "pair", ("edge", "pair"))
    'pair'
    >>> check_anchors("edge", None, "pair", ("edge", "pair"))
    Traceback (most recent call last):
    ...
    ValueError: edge anchors need a model with a graph
    """
    if anchors is None:
        anchors = "edge" if graph is not None else without_graph
    if anchors not in allowed:
        names = [f"'{a}'" for a in allowed]
        raise ValueError(f"anchors must be {', '.join(names[:-1])} or {names[-1]}, got {anchors!r}")
    if anchors == "edge" and graph is None:
        raise ValueError("edge anchors need a model with a graph")
    return anchors


def repeat_move(move, n, state, rng, temperature):
    """Make ``n`` moves ``move(state, rng, temperature)`` (each returning a
    :class:`StepInfo`), as an iteration of several updates does.

    Returns
    -------
    accepted : bool
        Whether any move was accepted.
    moved : int
        Vertices relabelled by the accepted moves.
    log_alpha : float
        The last move's log acceptance ratio (0.0 when n = 0).

    Examples
    --------
    >>> infos = iter([StepInfo(True, -0.5, 3), StepInfo(False, -2.0, 4)])
    >>> repeat_move(lambda state, rng, t: next(infos), 2, None, None, 1.0)
    (True, 3, -2.0)
    """
    accepted, moved, log_alpha = False, 0, 0.0
    for _ in range(n):
        info = move(state, rng, temperature)
        log_alpha = info.log_accept_ratio
        if info.accepted:
            accepted = True
            moved += info.moved
    return accepted, moved, log_alpha


def state_member_index(cache, state) -> MemberIndex:
    """The :class:`~swcuts.models.partition.MemberIndex` a kernel keeps for
    ``state`` in ``cache`` (a ``weakref.WeakKeyDictionary``), made on first use.

    Examples
    --------
    >>> import weakref
    >>> class State: ...
    >>> cache, state = weakref.WeakKeyDictionary(), State()
    >>> state_member_index(cache, state) is state_member_index(cache, state)
    True
    """
    idx = cache.get(state)
    if idx is None:
        idx = cache[state] = MemberIndex()
    return idx


def acceptance_rates(counts: dict, skip: str = None) -> dict:
    """Accepted / proposed per move type of a ``{move: [proposed,
    accepted]}`` record (NaN before any proposal), leaving out ``skip``.

    Examples
    --------
    >>> acceptance_rates({"split": [4, 1], "merge": [0, 0], "noop": [3, 0]}, skip="noop")
    {'split': 0.25, 'merge': nan}
    """
    return {k: (a / p if p else float("nan")) for k, (p, a) in counts.items() if k != skip}


class CutScratch:
    """Per-label accumulators for :func:`cut_summary`."""

    def __init__(self, n_slots):
        self.acc_log = np.zeros(n_slots)
        self.acc_q = np.zeros(n_slots)
        self.acc_n = np.zeros(n_slots, np.int64)
        self.out = np.empty(n_slots, np.int64)


class RelabelScratch:
    """The scratch arrays that the compiled relabelling runners share
    (:class:`~swcuts.samplers.compiled.CompiledWorkspace`,
    :class:`~swcuts.samplers.flips.FlipWorkspace`): marks, search buffers,
    per-label cut sums, statistics rows, the pieces search and the region
    index, zero (or −1) between calls."""

    def __init__(self, n_vertices, n_slots, n_stats):
        n = n_vertices
        self.in_r = np.zeros(n, np.int8)
        self.mark = np.zeros(n, np.int8)
        self.visited = np.empty(n, np.int64)
        self.roots = np.empty(n, np.int64)
        self.acc_q = np.zeros(n_slots)
        self.acc_n = np.zeros(n_slots, np.int64)
        self.sR = np.empty(n_stats)
        self.tmp = np.empty(n_stats)
        # pieces_interleaved: owner, queue, parent, count, area of searches
        self.pws = (-np.ones(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
                    np.zeros(n, np.int64), np.zeros(n))
        # The region index, loaded from the state's cache for every run.
        self.regions = new_region_index(n)


def cuts_of(state, R, graph, q, log1mq, scratch: CutScratch):
    """Cut summary of R in ``state`` as a dict label -> (Σlog(1-q), mean q)."""
    labs, s_log, s_q, cnt = cut_summary(R, state.partition.labels, graph.indptr, graph.indices,
                                        graph.edge_ids, q, log1mq, state.work.mark_c,
                                        scratch.acc_log, scratch.acc_q, scratch.acc_n, scratch.out)
    return labs, s_log, s_q / cnt


def numpy_sum(xs) -> float:
    """``float(np.sum(xs))`` of a list of floats; numpy adds fewer than 8 in order, as here."""
    total = 0.0
    for x in xs:
        total += x
    return total if len(xs) < 8 else float(np.sum(xs))


class TargetProposal:
    """Label proposal q(ℓ' | R, X) over targets (see the module docstring).

    Weights, after Barbu's practical proposal: a target adjacent to R gets
    ``adjacent * (floor + mean q over the cut)`` (the edge probabilities
    across the cut measure how alike R and the label are), a fresh label
    gets ``fresh``, every other existing label ``far``. The current target
    is never proposed. Because the weights depend only on R and the sets
    V_k \\ R, the reverse probability q(ℓ | R, X') uses the same weights.
    """

    def __init__(self, adjacent=1.0, floor=0.05, fresh=0.1, far=0.01):
        if min(adjacent, fresh, far) <= 0 or floor < 0:
            raise ValueError("proposal weights must be positive")
        self.adjacent = adjacent
        self.floor = floor
        self.fresh = fresh
        self.far = far

    def propose(self, state, R, cut_labels, cut_mean_q, rng):
        """Draw a target for R.

        Returns (new_label, log q(ℓ'|R,X), log q(ℓ|R,X')); ``new_label`` is a
        slot number (an unused slot for a fresh label). Python lists: a
        numpy call on the few labels next to R costs more than the arithmetic.
        """
        part = state.partition
        ell = int(part.labels[R[0]])
        whole = int(part.size[ell]) == len(R)
        n_exist = part.n_labels - (1 if whole else 0)
        w_arr = self.adjacent * (self.floor + cut_mean_q)
        labs = cut_labels.tolist()
        ws = w_arr.tolist()
        n_far = n_exist - len(labs)
        total = numpy_sum(ws) + self.fresh + n_far * self.far
        # Weight of the current target.
        w_cur = self.fresh if whole else (ws[labs.index(ell)] if ell in labs else self.far)
        avail = total - w_cur
        u = rng.random() * avail
        # Walk: adjacent labels, then fresh, then far labels.
        new_label = None
        for lab, w in zip(labs, ws):
            if lab == ell and not whole:
                continue
            if u < w:
                new_label, w_new = lab, w
                break
            u -= w
        if new_label is None:
            if not whole and u < self.fresh:
                new_label, w_new = part.fresh_label(), self.fresh
            else:
                # Existing labels not adjacent to R, other than R's own, ascending.
                adjacent = set(labs)
                far = [lab for lab in part.used_labels().tolist() if lab not in adjacent and lab != ell]
                if not far:  # only reachable through rounding
                    return ell, 0.0, 0.0
                new_label, w_new = far[rng.integers(len(far))], self.far
        log_fwd = math.log(w_new) - math.log(avail)
        log_rev = math.log(w_cur) - math.log(total - w_new)
        return int(new_label), log_fwd, log_rev


@njit(cache=True, inline="always")
def target_weight(lab, acc_q, acc_n, w_adj, w_floor):
    """Proposal weight of a label adjacent to R: ``adjacent * (floor + mean q
    over the cut)``, from the cut sums of :func:`cut_sums`."""
    return w_adj * (w_floor + acc_q[lab] / acc_n[lab])


@njit(cache=True, inline="always")
def _pick_far(free_stack, n_free, acc_n, ell, n_pick):
    """The n_pick-th used label that is not adjacent to R and is not ell."""
    seen = 0
    for t in range(n_free, free_stack.size):
        lab = free_stack[t]
        if acc_n[lab] == 0 and lab != ell:
            if seen == n_pick:
                return lab
            seen += 1
    return -1


@compiled_only
def propose_target(ell, whole, n_labels, adj, n_adj, acc_q, acc_n, free_stack, n_free, w_adj,
                   w_floor, w_fresh, w_far, far):
    """:meth:`TargetProposal.propose` in compiled code, from the cut sums of
    :func:`cut_sums` (``adj[:n_adj]``, ``acc_q``, ``acc_n``) of R, whose
    label is ``ell`` (all of it when ``whole``). The fresh label is the top
    of the free stack. With ``far`` False, labels not adjacent to R are not
    proposed (and get no weight); with ``w_fresh`` = 0 no fresh label is.

    Draws one uniform (two for a far label). Returns (new label, log q(ℓ |
    R, X') − log q(ℓ' | R, X)), new label −1 when there is none.
    """
    n_exist = n_labels - (1 if whole else 0)
    if far:
        total = w_fresh + (n_exist - n_adj) * w_far
    else:
        total = w_fresh
    for t in range(n_adj):
        total += target_weight(adj[t], acc_q, acc_n, w_adj, w_floor)
    if whole:
        w_cur = w_fresh
    elif acc_n[ell] > 0:
        w_cur = target_weight(ell, acc_q, acc_n, w_adj, w_floor)
    else:
        w_cur = w_far
    avail = total - w_cur
    u = np.random.random() * avail
    new_label = -1
    w_new = 0.0
    # Walk: adjacent labels, then fresh, then far labels.
    for t in range(n_adj):
        lab = adj[t]
        if lab == ell:
            continue
        w = target_weight(lab, acc_q, acc_n, w_adj, w_floor)
        if u < w:
            new_label = lab
            w_new = w
            break
        u -= w
    if new_label < 0:
        if (not whole) and w_fresh > 0.0 and (u < w_fresh or not far):
            new_label = free_stack[n_free - 1]
            w_new = w_fresh
        elif far:
            n_far = n_exist - n_adj - (0 if (whole or acc_n[ell] > 0) else 1)
            if n_far > 0:
                new_label = _pick_far(free_stack, n_free, acc_n, ell, int(np.random.random() * n_far))
                w_new = w_far
    if new_label < 0:
        return -1, 0.0
    return new_label, (math.log(w_cur) - math.log(total - w_new)) - (math.log(w_new) - math.log(avail))
