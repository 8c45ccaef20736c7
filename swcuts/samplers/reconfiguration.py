"""Adaptive reconfiguration moves of Herlau, Mørup, Schmidt & Teh (seed 001).

ARM runs S chains side by side and keeps a pooled history of their past
states. One move (:meth:`Reconfiguration.move`) of a chain in state z:

1. **Anchors** i ≠ j, drawn independently of the state: a uniformly random
   graph edge in random order on a model with a graph, else a uniformly
   random ordered pair (the rule of :mod:`~swcuts.samplers.split_merge`).
2. **Background** φ = (i, j, z^a, z^b): z^a is drawn uniformly among the
   eligible past states (the second half of the pooled history, see
   :class:`History`) that put i and j together, z^b among those that
   separate them. When the history has no such pair the move is a no-op
   (``move="none"``). A random order of the items (an affine permutation
   of the indices drawn afresh for each move, the paper's "random
   relabelling") is part of φ too. Nothing of φ depends on z, so every
   φ defines its own Metropolis-Hastings kernel, reversible with respect to
   π^(1/T) (the argument of Tierney / Jain & Neal for random launch states).
3. **Cells.** D = c(i) ∪ c(j), the items of the labels of i and j. The
   cells are the coarsest common refinement z ∨ z^a ∨ z^b restricted to D;
   on a graph each cell is further split into its connected pieces (a
   deterministic function of (z, φ), so the reverse move computes its own
   cells from z* by the same rule). c_i, c_j are the cells of i and j.
4. **Initial state.** The other cells are "removed" — each is parked in a
   label of its own, where it is not a candidate for anything — and the
   labels of i and j become c_i, c_j (split, when i and j share a label)
   or c_i ∪ c_j (merge). Parking instead of removing is exact: the
   conditionals below are those of the parked state, computed identically
   forward and backward. (For the product-form DP mixture, parking is the
   paper's removal up to a constant factor.)
5. **Sweep** (Algorithm 3 with the paper's earmarks). Every step moves a
   set A whose first item A(1) in the random order is its *earmark*,
   to a label drawn from the tempered conditional
   P(k) ∝ π(X_A = k | rest)^(1/T) — the exact Δ log π of ``model.delta``
   — over a candidate set:

   * phase 1, the other cells, by decreasing size, ties by earmark: the
     labels of i and j, every other non-parked label (on a graph: the
     non-parked labels adjacent to A), or a new label (stay parked);
   * phase 2a, every item of D that is neither i, j nor an earmark, one at
     a time in the random order (unrestricted Gibbs): as in phase 1 plus
     its own label, and a new label when it is not alone;
   * phase 2b, the items outside D ("outside items"): an outside item may
     stay or move into the label of i or of j, except that **the last
     original member of a label that has received items stays** (eq. 17).
     Without a graph every outside item is visited, in the random order
     (the paper's algorithm; O(N) deltas). On a graph only the *frontier*
     is visited: the outside items adjacent to the labels of i and j,
     breadth first (an outside item that moves in adds its outside
     neighbours to the queue, in the random order).

   Each item is updated at most once (a cell's earmark in phase 1, every
   other item of D in phase 2a, an outside item in phase 2b), never moves
   after its update, and i, j never move; with the last-original rule,
   every label present when A(1) is updated holds an item that ends with
   A(1) if and only if A(1) joins that label. So two different choice
   sequences give two different z* (the paper's section 2.3), and
   T(z* | z) is the product of the probabilities drawn.
6. **Reverse.** T(z | z*) is the probability that the same procedure run
   from z* (with the same φ: its own D*, cells and frontier, all computed
   from z*) produces z: a *forced sweep* whose every choice is read off z
   — the label that holds (or will hold) the items that end with the
   earmark in z — and whose result is compared with z at the end
   (T(z | z*) = 0 when z is out of reach: the move is rejected). Because
   the procedure from z* is a merge when z → z* was a split and vice
   versa, this single routine gives the reverse of both.
7. Accept with min{1, [π(z*)/π(z)]^(1/T) · T(z | z*) / T(z* | z)}.

**Differences from the paper** (all keep T exact; the exact tests decide):

* φ: without a graph the default is the paper's rule, ``anchors=
  "disagree"``: z^a ≠ z^b first, then (i, j) among the pairs where they
  disagree (the paper also takes one of them from the chain's own past;
  here both come from the pooled history). On a graph (and on request,
  ``anchors="pair"``) the anchors are drawn first (an edge, resp. a
  uniform pair), then z^a and z^b uniformly among the eligible past states
  joining / separating them — once the chains agree, most anchors find no
  such pair and the move is a no-op.
* Removed cells are parked in labels of their own (see 4).
* The sweep visits D first (cells, then items) and the outside items
  after; Algorithm 3 interleaves items of D and outside items in one loop.
  Any fixed order is valid.
* The graph variant (connected pieces, adjacent candidates, frontier).
* No warm-up: the paper starts ARM after 50 Gibbs iterations of every
  chain; here the moves are no-ops until the history can separate the
  anchors (run Gibbs first, or let :meth:`step_all` do it).

**Mixtures without a graph, ``outside="knn"``.** The graph variant on a
k-nearest-neighbour graph of the data (a function of the data only): the
frontier replaces the visit of all N outside items, and a moving set
chooses among the labels next to it and those of i and j. A move then
costs O(k (|D| + frontier)) instead of O(N + L |D|): independent of N. It
is not the paper's proposal (an item far from both labels can no longer
join them in one move), but it is exact for the reason below.

**Graph restrictions.** Every restriction used here — connected pieces of
cells, candidate labels adjacent to the moving set, the frontier — is a
function of the intermediate state of the sweep, so the forced reverse sweep
replays it exactly on its own path: restrictions only remove choice
sequences, which keeps the path unique, and T stays exact. They may make
the reverse of a proposal unreachable (for example a cell that leaves D and
is not adjacent to D* any more); such a proposal is rejected (exact, only
wasteful). The labels of i and j are always candidates.

**Adaptivity.** Given the history, a move is an exact MH kernel for
π^(1/T). The history, though, is made of the chains' own past states, so
the chains together are an *adaptive* MCMC scheme, not a time-homogeneous
Markov chain, and exact invariance at finite time does not hold in general.
The paper appeals to diminishing adaptation (Roberts & Rosenthal 2007):
the distribution of (z^a, z^b) changes by O(1/|history|) per recorded state.
With the bounded memory used here (:class:`History`: once full, every other
state is dropped and the recording interval doubles) a new state enters at
iteration t with probability O(capacity / t) per iteration, so the
adaptation still vanishes in probability. For exact, non-adaptive sampling
after a burn-in, call :meth:`Reconfiguration.freeze` (the history stops
changing and the kernel is a fixed Markov kernel), or give a fixed list of
past states as ``history`` — which is what the enumeration tests do.

**Single-chain use** (:meth:`Reconfiguration.step`, what the annealing
driver calls): φ is drawn from the chain's *own* thinned history (or from
the frozen history if one is set), then ``gibbs_sweeps`` single-site Gibbs
scans follow, then the state is recorded in that history — one step is the
paper's "iteration" (one move + one Gibbs sweep). Starting from a single
label the own history cannot yet separate any pair, so the first moves are
no-ops until the Gibbs scans have produced a split.

**sRM** (:class:`SRM`, ``srm=True``): the paper's simplified moves
(Algorithm 2): every cell is a single item, no history is needed (φ = (i,
j) and the order), and the move runs from the first step.

**Cost.** On a mixture model with a built-in likelihood (no graph, every
outside item visited) the whole pass runs compiled (:func:`_arm_pass`:
the same candidates in the same order, the same uniforms, the same forced
replay as the generic :class:`_Pass`, which the tests check move for
move). A pass costs O(|D| L) marginal evaluations for the items of the two
labels (L candidate labels each; parked cells are kept out of the
candidate lists, so sRM's |D| parked singletons do not make it quadratic)
plus three per outside item: O(N) per move, by the paper's design (every
outside item may join, and T(z|z*) multiplies the probabilities that each
of them stays); with ``outside="knn"`` O(k (|D| + frontier)) marginal
evaluations, plus a few O(N) array initialisations. Elsewhere (the image model, user likelihoods) the pass is
plain Python through ``model.delta``/``model.apply``, linear in the items
the move touches (the two labels, the cells, the frontier) times the
number of candidate labels (all labels without a graph, the adjacent ones
on a graph), plus a few vectorised O(N) numpy passes (label look-ups and a
snapshot of the labels for the forced sweep). Moves run on the live state;
a rejected proposal is undone move by move and log π restored exactly.
"""

from __future__ import annotations

import math
import weakref
from collections import deque

import numpy as np
from numba import njit

from ..models.mixture import MixtureModel, _sorted_insert, _sorted_remove, log_marginal
from .common import StepInfo, draw_anchor_pair, metropolis_hastings, seed_compiled_rng

__all__ = ["Reconfiguration", "SRM", "History"]

_NEG_INF = -math.inf

#: Memory bound of one history (label arrays stored as int32).
HISTORY_BYTES = 64 << 20


def _logsumexp(values) -> float:
    m = max(values)
    if m == _NEG_INF:
        return _NEG_INF
    return m + math.log(sum(math.exp(v - m) for v in values))


def _next_prime(n: int) -> int:
    """Smallest prime >= max(n, 2)."""
    p = max(int(n), 2)
    while True:
        if p < 4 or all(p % d for d in range(2, int(math.isqrt(p)) + 1)):
            return p
        p += 1


def _ranges(starts, lens):
    """Concatenation of arange(s, s + l) over (starts, lens), vectorised."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - np.cumsum(lens) + lens, lens)
    return offs + np.arange(total)


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
# ---------------------------------------------------------------------------

_FAIL = -3
# Slots of the int64 counter array of a compiled pass.
_C_POS, _C_NLOG, _C_NITEMS, _C_EVALS, _C_NUSED, _C_BI, _C_BJ = range(7)
# Slots of the int64 array of forced-pass labels.
_F_ZI, _F_ZJ, _F_LI, _F_LJ = range(4)


@njit(cache=True, inline="always")
def _set_stats(R, vstats, out):
    out[:] = 0.0
    for t in range(R.size):
        for q in range(out.size):
            out[q] += vstats[R[t], q]


@njit(cache=True, inline="always")
def _set_leave(stR, nR, a, size, lstats, lloglik, kind, params, log_alpha, st_out):
    """Δ log π of the nR items with statistics stR leaving label a (the
    "leave" part) and a's log marginal afterwards (0 when it empties)."""
    n_after = size[a] - nR
    if n_after > 0:
        for q in range(st_out.size):
            st_out[q] = lstats[a, q] - stR[q]
        ll = log_marginal(kind, st_out, params)
        if nR == 1:  # lgamma(n - 1) - lgamma(n)
            return ll - lloglik[a] - math.log(n_after), ll
        return ll - lloglik[a] + math.lgamma(n_after) - math.lgamma(size[a]), ll
    st_out[:] = 0.0
    return -lloglik[a] - log_alpha - math.lgamma(size[a]), 0.0


@njit(cache=True, inline="always")
def _set_join(stR, nR, b, size, lstats, lloglik, kind, params, log_alpha, st_out):
    """The "join" part of the same items joining label b (an unused slot:
    a new label)."""
    for q in range(st_out.size):
        st_out[q] = lstats[b, q] + stR[q]
    ll = log_marginal(kind, st_out, params)
    nb = size[b]
    if nb > 0:
        if nR == 1:
            return ll - lloglik[b] + math.log(nb), ll
        return ll - lloglik[b] + math.lgamma(nb + nR) - math.lgamma(nb), ll
    return ll + log_alpha + math.lgamma(nR), ll


@njit(cache=True)
def _stack_positions(free_stack):
    """pos[label] = index of the label in the partition's free stack."""
    pos = np.empty(free_stack.size, np.int64)
    for t in range(free_stack.size):
        pos[free_stack[t]] = t
    return pos


@njit(cache=True)
def _relabel(labels, size, free_stack, n_free, pos, R, new_label):
    """:func:`swcuts.partition.relabel_vertices` (the same swaps in the
    free stack, so the same label names afterwards) with the stack
    positions ``pos`` looked up and kept current instead of searched:
    O(|R|) whatever the number of labels."""
    if R.size == 0:
        return
    if size[new_label] == 0:
        top = n_free[0] - 1
        t = pos[new_label]
        other = free_stack[top]
        free_stack[t] = other
        pos[other] = t
        free_stack[top] = new_label
        pos[new_label] = top
        n_free[0] = top
    for r in range(R.size):
        v = R[r]
        old = labels[v]
        if old == new_label:
            continue
        size[old] -= 1
        size[new_label] += 1
        labels[v] = new_label
        if size[old] == 0:
            first = n_free[0]
            t = pos[old]
            other = free_stack[first]
            free_stack[t] = other
            pos[other] = t
            free_stack[first] = old
            pos[old] = first
            n_free[0] = first + 1


@njit(cache=True)
def _move_set(R, stR, new, st, mp, tmp_a, tmp_b):
    """Move the items R (one label) to ``new``; returns the Δ log π."""
    labels, size, free_stack, n_free, lstats, lloglik, vstats, pos = st
    kind, params, log_alpha = mp
    own = labels[R[0]]
    nR = R.size
    d1, ll_a = _set_leave(stR, nR, own, size, lstats, lloglik, kind, params, log_alpha, tmp_a)
    d2, ll_b = _set_join(stR, nR, new, size, lstats, lloglik, kind, params, log_alpha, tmp_b)
    lstats[own, :] = tmp_a
    lloglik[own] = ll_a
    lstats[new, :] = tmp_b
    lloglik[new] = ll_b
    _relabel(labels, size, free_stack, n_free, pos, R, new)
    return d1 + d2


@njit(cache=True)
def _logged_move(R, new, d_items, st, mp, cnt, fl, log, joined, used, parked, tmp):
    """:func:`_move_set` with the bookkeeping of :meth:`_Pass._apply`: the
    undo log, ``joined`` (items of D moved in/out, ``d_items``) and the
    ascending list ``used[:cnt[_C_NUSED]]`` of the used labels that are not
    parked (so that a candidate list costs O(L), however many cells are
    parked)."""
    labels, size = st[0], st[1]
    log_ptr, log_old, log_new, log_d, log_items = log
    own = labels[R[0]]
    was_empty = size[new] == 0
    t0, t1, t2 = tmp
    _set_stats(R, st[6], t0)
    d = _move_set(R, t0, new, st, mp, t1, t2)
    e = cnt[_C_NLOG]
    p = cnt[_C_NITEMS]
    log_items[p:p + R.size] = R
    log_ptr[e + 1] = p + R.size
    log_old[e] = own
    log_new[e] = new
    log_d[e] = d
    cnt[_C_NLOG] = e + 1
    cnt[_C_NITEMS] = p + R.size
    fl[1] += d
    if d_items:
        joined[own] -= R.size
        joined[new] += R.size
    if was_empty and not parked[new]:
        cnt[_C_NUSED] = _sorted_insert(used, cnt[_C_NUSED], new)
    if size[own] == 0 and not parked[own]:
        cnt[_C_NUSED] = _sorted_remove(used, cnt[_C_NUSED], own)
    return d


@njit(cache=True)
def _undo_log(log, n_log, st, mp, tmp):
    """Undo the first ``n_log`` logged moves, last first; returns Σ Δ undone."""
    log_ptr, log_old, log_new, log_d, log_items = log
    total = 0.0
    t0, t1, t2 = tmp
    for e in range(n_log - 1, -1, -1):
        R = log_items[log_ptr[e]:log_ptr[e + 1]]
        _set_stats(R, st[6], t0)
        _move_set(R, t0, log_old[e], st, mp, t1, t2)
        total += log_d[e]
    return total


@njit(cache=True, inline="always")
def _choose_c(logw, nc, forced_k, mode, u, script, branch, cnt, fl):
    """The choice among ``logw[:nc]`` (forced: ``forced_k``; mode 0: the
    next uniform, as :class:`_RngChooser`; mode 1: the next scripted index,
    recording the branching factor). Adds its log probability to fl[0];
    returns the index, or -1 if it had probability 0. ``logw[nc:2 nc]``
    is scratch."""
    m = logw[0]
    for t in range(1, nc):
        if logw[t] > m:
            m = logw[t]
    z = 0.0
    for t in range(nc):
        w = math.exp(logw[t] - m)
        logw[nc + t] = w
        z += w
    if forced_k >= 0:
        k = forced_k
    elif mode == 0:
        r = u[cnt[_C_POS]] * z
        cnt[_C_POS] += 1
        k = -1
        for t in range(nc):
            r -= logw[nc + t]
            if r < 0.0:
                k = t
                break
        if k < 0:
            for t in range(nc):
                if logw[nc + t] > 0.0:
                    k = t
    else:
        pos = cnt[_C_POS]
        k = script[pos] if pos < script.size else 0
        branch[pos] = nc
        cnt[_C_POS] = pos + 1
    lw = logw[k]
    if lw == -np.inf:
        return -1
    fl[0] += lw - (m + math.log(z))
    return k


@njit(cache=True, inline="always")
def _forced_target_c(a1, own, whole, fresh, size, bi, bj, target, zi, zj, li, lj, placed, stay,
                     cntc, size_start):
    """:meth:`_Pass._forced_target` (with :meth:`_Pass._stayer`); _FAIL
    when no label fits."""
    Lz = target[a1]
    if Lz == zi:
        return bi
    if Lz == zj:
        return bj
    b1 = placed[Lz]
    b2 = stay[Lz]
    if Lz != li and Lz != lj and size_start[Lz] - cntc[Lz] > 0:
        if b2 >= 0 and b2 != Lz:
            return _FAIL
        b2 = Lz
    if b1 >= 0 and b2 >= 0 and b1 != b2:
        return _FAIL
    b = b1 if b1 >= 0 else b2
    if b < 0:
        return own if whole else fresh
    if size[b] == 0:
        return _FAIL
    return b


@njit(cache=True)
def _update_set_c(R, forced, labels, size, free_stack, n_free, lstats, lloglik, vstats, kind,
                  params, log_alpha, mode, u, script, branch, inv_t, cnt, fl, joined, used,
                  target, zi, zj, li, lj, placed, stay, cntc, size_start, cands, logw, t0, t1, t2,
                  st, mp, log, parked, adjacent, indptr, indices, mark):
    """One update of the set R (:meth:`_Pass._update_set`): its own label,
    every used label that is not parked (``adjacent``: only those next to R
    on the graph (indptr, indices), and the labels of i and j), ascending,
    and a fresh label unless R is its whole label. Arrays one by one (see
    :func:`_outside_one`). False when the forced target is not a candidate
    or a choice had probability 0."""
    own = labels[R[0]]
    nR = R.size
    nc = 1
    cands[0] = own
    fresh = -1
    whole = size[own] == nR
    if adjacent:
        for r in range(nR):
            v = R[r]
            for p in range(indptr[v], indptr[v + 1]):
                lab = labels[indices[p]]
                if lab != own and not parked[lab] and not mark[lab]:
                    mark[lab] = True
                    cands[nc] = lab
                    nc += 1
        for lab in (cnt[_C_BI], cnt[_C_BJ]):
            if lab != own and not parked[lab] and not mark[lab]:
                mark[lab] = True
                cands[nc] = lab
                nc += 1
        for t in range(1, nc):
            mark[cands[t]] = False
        cands[1:nc] = np.sort(cands[1:nc])
    else:
        for t in range(cnt[_C_NUSED]):
            lab = used[t]
            if lab != own:
                cands[nc] = lab
                nc += 1
    if not whole:
        fresh = free_stack[n_free[0] - 1]
        cands[nc] = fresh
        nc += 1
    forced_k = -1
    if forced:
        tgt = _forced_target_c(R[0], own, whole, fresh, size, cnt[_C_BI], cnt[_C_BJ], target,
                               zi, zj, li, lj, placed, stay, cntc, size_start)
        if tgt == _FAIL:
            return False
        for t in range(nc):
            if cands[t] == tgt:
                forced_k = t
                break
        if forced_k < 0:
            return False
    if nc > 1:
        _set_stats(R, vstats, t0)
        d_leave, _ = _set_leave(t0, nR, own, size, lstats, lloglik, kind, params, log_alpha, t1)
        logw[0] = 0.0
        for t in range(1, nc):
            d_join, _ = _set_join(t0, nR, cands[t], size, lstats, lloglik, kind, params,
                                  log_alpha, t2)
            logw[t] = (d_leave + d_join) * inv_t
        cnt[_C_EVALS] += nR * (nc - 1)
        k = _choose_c(logw, nc, forced_k, mode, u, script, branch, cnt, fl)
        if k < 0:
            return False
        if k > 0:
            _logged_move(R, cands[k], True, st, mp, cnt, fl, log, joined, used, parked,
                         (t0, t1, t2))
    if forced:  # _Pass._record_placed
        Lz = target[R[0]]
        if Lz != zi and Lz != zj:
            lab = labels[R[0]]
            if placed[Lz] < 0:
                placed[Lz] = lab
            elif placed[Lz] != lab:
                return False
    return True


@njit(cache=True)
def _d_phase(cells, cell_ptr, rest, forced, st, mp, ch, cnt, fl, log, joined, used, parked, fo,
             work, adjacent, indptr, indices):
    """Phases 1 and 2a of :meth:`_Pass.run`: the other cells whole (a cell's
    parked label becomes an ordinary label once it is updated), then every
    other item of D alone. False when the forced target is out of reach."""
    labels, size, free_stack, n_free, lstats, lloglik, vstats, _ = st
    kind, params, log_alpha = mp
    mode, u, script, branch, inv_t = ch
    cands, logw, t0, t1, t2 = work
    target, target_size, fx, placed, stay, cntc, size_start = fo
    zi, zj, li, lj = fx[_F_ZI], fx[_F_ZJ], fx[_F_LI], fx[_F_LJ]
    mark = np.zeros(size.size, np.bool_)
    for c in range(cell_ptr.size - 1):
        cell = cells[cell_ptr[c]:cell_ptr[c + 1]]
        own = labels[cell[0]]
        if not _update_set_c(cell, forced, labels, size, free_stack, n_free, lstats, lloglik,
                             vstats, kind, params, log_alpha, mode, u, script, branch, inv_t, cnt,
                             fl, joined, used, target, zi, zj, li, lj, placed, stay, cntc,
                             size_start, cands, logw, t0, t1, t2, st, mp, log, parked, adjacent,
                             indptr, indices, mark):
            return False
        parked[own] = False
        if size[own] > 0:  # the cell stayed: its label is an ordinary label now
            cnt[_C_NUSED] = _sorted_insert(used, cnt[_C_NUSED], own)
    for t in range(rest.size):
        if not _update_set_c(rest[t:t + 1], forced, labels, size, free_stack, n_free, lstats,
                             lloglik, vstats, kind, params, log_alpha, mode, u, script, branch,
                             inv_t, cnt, fl, joined, used, target, zi, zj, li, lj, placed, stay,
                             cntc, size_start, cands, logw, t0, t1, t2, st, mp, log, parked,
                             adjacent, indptr, indices, mark):
            return False
    return True


@njit(cache=True)
def _setup_forced_c(li, lj, changed, labels, fo):
    """:meth:`_Pass._setup_forced` on arrays; False when two original
    members of one target label sit in two labels."""
    target, target_size, fx, placed, stay, cntc, size_start = fo
    fx[_F_LI] = li
    fx[_F_LJ] = lj
    for t in range(changed.size):
        v = changed[t]
        xs = labels[v]
        xt = target[v]
        cntc[xs] += 1
        if xs == li or xs == lj or xt == fx[_F_ZI] or xt == fx[_F_ZJ]:
            continue
        if stay[xt] < 0:
            stay[xt] = xs
        elif stay[xt] != xs:
            return False
    return True


@njit(cache=True)
def _final_check_c(changed, log, n_items, labels, size, target, target_size):
    """:meth:`_Pass._final_check`: whether the live partition equals the
    target (only items moved by either pass can differ)."""
    n_slots = size.size
    fz = np.full(n_slots, -1, np.int64)
    zf = np.full(n_slots, -1, np.int64)
    cf = np.zeros(n_slots, np.int64)
    cz = np.zeros(n_slots, np.int64)
    seen = np.zeros(labels.size, np.bool_)
    log_items = log[4]
    for part in range(2):
        arr = changed if part == 0 else log_items[:n_items]
        for t in range(arr.size):
            v = arr[t]
            if seen[v]:
                continue
            seen[v] = True
            f = labels[v]
            z = target[v]
            if fz[f] < 0:
                fz[f] = z
            elif fz[f] != z:
                return False
            if zf[z] < 0:
                zf[z] = f
            elif zf[z] != f:
                return False
            cf[f] += 1
            cz[z] += 1
    for f in range(n_slots):
        if cf[f] > 0 and size[f] > cf[f] and fz[f] != f:
            return False
    for z in range(n_slots):
        if cz[z] > 0 and target_size[z] > cz[z] and zf[z] != z:
            return False
    return True


@njit(cache=True)
def _outside_one(x, forced, target, zi, zj, labels, size, lstats, lloglik, vstats, kind, params,
                 log_alpha, joined, mode, u, script, branch, inv_t, cnt, fl, logw, t0, t1, t2, st,
                 mp, log, used, parked, one):
    """:meth:`_Pass._update_outside` of the outside item x: stay, or join
    the label of i or of j, unless eq. 17 locks it (the last original
    member of a label that received items). Arrays are passed one by one:
    unpacking tuples per item would cost more than the item's three
    marginals. False when a forced target is not a candidate."""
    bi = cnt[_C_BI]
    bj = cnt[_C_BJ]
    own = labels[x]
    if size[own] >= 2 and size[own] - joined[own] == 1:
        nc = 1
    else:
        nc = 2 if bj == bi else 3
    forced_k = -1
    if forced:
        Lz = target[x]
        tgt = bi if Lz == zi else (bj if Lz == zj else own)
        if tgt == own:
            forced_k = 0
        elif nc >= 2 and tgt == bi:
            forced_k = 1
        elif nc == 3 and tgt == bj:
            forced_k = 2
        else:
            return False
    if nc == 1:
        return True
    for q in range(t0.size):
        t0[q] = vstats[x, q]
    d_leave, _ = _set_leave(t0, 1, own, size, lstats, lloglik, kind, params, log_alpha, t1)
    logw[0] = 0.0
    d_join, _ = _set_join(t0, 1, bi, size, lstats, lloglik, kind, params, log_alpha, t2)
    logw[1] = (d_leave + d_join) * inv_t
    if nc == 3:
        d_join, _ = _set_join(t0, 1, bj, size, lstats, lloglik, kind, params, log_alpha, t2)
        logw[2] = (d_leave + d_join) * inv_t
    cnt[_C_EVALS] += nc - 1
    k = _choose_c(logw, nc, forced_k, mode, u, script, branch, cnt, fl)
    if k < 0:
        return False
    if k > 0:
        one[0] = x
        _logged_move(one, bi if k == 1 else bj, False, st, mp, cnt, fl, log, joined, used,
                     parked, (t0, t1, t2))
    return True


@njit(cache=True)
def _outside_phase(D, P, a_inv, b_shift, forced, target, zi, zj, labels, size, lstats, lloglik,
                   vstats, kind, params, log_alpha, joined, mode, u, script, branch, inv_t, cnt,
                   fl, logw, t0, t1, t2, st, mp, log, used, parked):
    """Phase 2b for every item outside D, in the item order (the affine
    permutation key x -> ((x + b) a) mod P, walked by its inverse without
    a division). False when a forced target is not a candidate."""
    n = labels.size
    inD = np.zeros(n, np.bool_)
    for t in range(D.size):
        inD[D[t]] = True
    one = np.empty(1, np.int64)
    y = 0  # key * a_inv mod P
    for key in range(P):
        x = y - b_shift
        if x < 0:
            x += P
        y += a_inv
        if y >= P:
            y -= P
        if x >= n or inD[x]:
            continue
        if not _outside_one(x, forced, target, zi, zj, labels, size, lstats, lloglik, vstats,
                            kind, params, log_alpha, joined, mode, u, script, branch, inv_t, cnt,
                            fl, logw, t0, t1, t2, st, mp, log, used, parked, one):
            return False
    return True


@njit(cache=True)
def _push_neighbours(v, indptr, indices, inD, seen, queue, tail):
    """Append the unseen outside neighbours of v to ``queue``; new tail."""
    for p in range(indptr[v], indptr[v + 1]):
        w = indices[p]
        if not inD[w] and not seen[w]:
            seen[w] = True
            queue[tail] = w
            tail += 1
    return tail


@njit(cache=True)
def _sort_by_key(queue, lo, hi, P, a, b):
    """Sort ``queue[lo:hi]`` by the item order key ((x + b) a) mod P."""
    if hi - lo < 2:
        return
    seg = queue[lo:hi].copy()
    keys = ((seg + b) * a) % P
    queue[lo:hi] = seg[np.argsort(keys)]


@njit(cache=True)
def _frontier_phase(D, indptr, indices, P, a, b, forced, target, zi, zj, labels, size, lstats,
                    lloglik, vstats, kind, params, log_alpha, joined, mode, u, script, branch,
                    inv_t, cnt, fl, logw, t0, t1, t2, st, mp, log, used, parked):
    """Phase 2b on a graph of the items (:meth:`_Pass._frontier`): breadth
    first from the outside neighbours of the labels of i and j (each batch
    in the item order); an item that moves in adds its unseen outside
    neighbours. Cost O(frontier x degree), independent of N but for the
    scratch flags."""
    n = labels.size
    inD = np.zeros(n, np.bool_)
    seen = np.zeros(n, np.bool_)
    queue = np.empty(n, np.int64)
    for t in range(D.size):
        inD[D[t]] = True
    bi = cnt[_C_BI]
    bj = cnt[_C_BJ]
    tail = 0
    for t in range(D.size):  # D ascending: the members of bi, bj in ascending order
        v = D[t]
        if labels[v] == bi or labels[v] == bj:
            tail = _push_neighbours(v, indptr, indices, inD, seen, queue, tail)
    _sort_by_key(queue, 0, tail, P, a, b)
    one = np.empty(1, np.int64)
    head = 0
    while head < tail:
        h = queue[head]
        head += 1
        if not _outside_one(h, forced, target, zi, zj, labels, size, lstats, lloglik, vstats,
                            kind, params, log_alpha, joined, mode, u, script, branch, inv_t, cnt,
                            fl, logw, t0, t1, t2, st, mp, log, used, parked, one):
            return False
        if labels[h] == bi or labels[h] == bj:
            lo = tail
            tail = _push_neighbours(h, indptr, indices, inD, seen, queue, tail)
            _sort_by_key(queue, lo, tail, P, a, b)
    return True


@njit(cache=True)
def _arm_pass(i, j, D, cells, cell_ptr, ci, cj, rest, P, a, a_inv, b_shift, frontier, f_indptr,
              f_indices, forced, changed, st, mp, ch, cnt, fl, log, fo):
    """One run of the proposal procedure (:meth:`_Pass.run`) on a mixture
    state, every outside item visited. The D-side structure (D ascending,
    the other cells in processing order, each earmark first, c_i, c_j, the
    other items of D in the item order) comes from Python; the outside
    items are visited in the order of the affine permutation (key x ->
    ((x + b) a) mod P, walked by its inverse). Returns False when the
    forced target is out of reach (or a drawn choice had probability 0);
    log T is fl[0], Σ Δ log π fl[1]."""
    labels, size, free_stack, n_free, lstats, lloglik, vstats, _ = st
    n = labels.size
    n_slots = size.size
    D_items = vstats.shape[1]
    li = labels[i]
    lj = labels[j]
    split = li == lj
    if forced:
        target = fo[0]
        if (target[i] == target[j]) == split:
            return False
        if not _setup_forced_c(li, lj, changed, labels, fo):
            return False
    joined = np.zeros(n_slots, np.int64)
    parked = np.zeros(n_slots, np.bool_)
    used = np.empty(n_slots, np.int64)
    n_used = n_slots - n_free[0]
    used[:n_used] = np.sort(free_stack[n_free[0]:])
    cnt[_C_NUSED] = n_used
    tmp = (np.empty(D_items), np.empty(D_items), np.empty(D_items))
    work = (np.empty(n_slots + 1, np.int64), np.empty(2 * n_slots + 2)) + tmp
    if split:
        joined[li] = D.size
    else:
        joined[li] = size[li]
        joined[lj] = size[lj]
    # Initial state: park the other cells, set up the labels of i and j.
    n_cells = cell_ptr.size - 1
    for c in range(n_cells):
        cell = cells[cell_ptr[c]:cell_ptr[c + 1]]
        f = free_stack[n_free[0] - 1]
        parked[f] = True
        _logged_move(cell, f, True, st, mp, cnt, fl, log, joined, used, parked, tmp)
    if split:
        f = free_stack[n_free[0] - 1]
        _logged_move(cj, f, True, st, mp, cnt, fl, log, joined, used, parked, tmp)
        cnt[_C_BI] = li
        cnt[_C_BJ] = f
    else:
        _logged_move(cj, li, True, st, mp, cnt, fl, log, joined, used, parked, tmp)
        cnt[_C_BI] = li
        cnt[_C_BJ] = li
    # Phases 1 and 2a: the cells, whole, then every other item of D.
    if not _d_phase(cells, cell_ptr, rest, forced, st, mp, ch, cnt, fl, log, joined, used, parked,
                    fo, work, frontier, f_indptr, f_indices):
        return False
    # Phase 2b: the outside items (every one, or the frontier on a graph).
    mode, u, script, branch, inv_t = ch
    kind, params, log_alpha = mp
    fx = fo[2]
    if frontier:
        ok = _frontier_phase(D, f_indptr, f_indices, P, a, b_shift, forced, fo[0], fx[_F_ZI],
                             fx[_F_ZJ], labels, size, lstats, lloglik, vstats, kind, params,
                             log_alpha, joined, mode, u, script, branch, inv_t, cnt, fl, work[1],
                             work[2], work[3], work[4], st, mp, log, used, parked)
    else:
        ok = _outside_phase(D, P, a_inv, b_shift, forced, fo[0], fx[_F_ZI], fx[_F_ZJ], labels,
                            size, lstats, lloglik, vstats, kind, params, log_alpha, joined, mode,
                            u, script, branch, inv_t, cnt, fl, work[1], work[2], work[3], work[4],
                            st, mp, log, used, parked)
    if not ok:
        return False
    if forced:
        return _final_check_c(changed, log, cnt[_C_NITEMS], labels, size, fo[0], fo[1])
    return True


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


class _Pass:
    """One run of the proposal procedure on the live state.

    Forward (``chooser`` given): draws z* and accumulates log T(z* | z).
    Forced (``target`` given): replays the procedure choosing, at every
    step, the only label compatible with ending at ``target``; returns
    log T(target | start), or -inf when the target is out of reach.
    ``changed`` (forced) holds every item whose label slot may differ
    between the start state and ``target``; ``target_size`` the label sizes
    of ``target``.
    """

    def __init__(self, kern, state, i, j, za, zb, order, temperature, chooser=None,
                 target=None, target_size=None, changed=None):
        self.kern = kern
        self.model = kern.model
        self.state = state
        self.part = state.partition
        self.i, self.j = int(i), int(j)
        self.za, self.zb = za, zb
        self.order = order
        self.inv_t = 1.0 / temperature
        self.chooser = chooser
        self.target = target
        self.target_size = target_size
        self.changed = changed
        self.forced = target is not None
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


class _CompiledPass:
    """:class:`_Pass` run by the compiled :func:`_arm_pass` (mixture models
    with a built-in likelihood, every outside item visited). Same
    interface: :meth:`run`, :meth:`undo`, :meth:`moved_items`.

    The chooser is a :class:`_RngChooser` (its uniforms of the pass), or
    offers ``script()`` (the branch indices to follow, extended with zeros)
    and ``record(branch, log_p)`` (the branching factors met and the log
    probability of the path): the enumeration tests' scripted chooser.
    """

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
        self.cnt = np.zeros(7, np.int64)
        self.fl = np.zeros(2)
        self.log = None

    def _arrays(self):
        model, state = self.model, self.state
        return model.kernel_arrays(state)

    def run(self) -> float:
        kern = self.kern
        part = self.state.partition
        labels = part.labels
        n = part.n_vertices
        i, j = self.i, self.j
        li, lj = int(labels[i]), int(labels[j])
        if li == lj:
            D = np.flatnonzero(labels == li)
        else:
            D = np.flatnonzero((labels == li) | (labels == lj))
        flat, ptr, ci, cj = kern._cell_arrays(D, labels, self.za, self.zb, self.order, i, j)
        earmarks = flat[ptr[:-1]]
        rest = D[~(np.isin(D, earmarks) | (D == i) | (D == j))]
        rest = np.ascontiguousarray(rest[np.argsort(self.order.keys(rest), kind="stable")])
        flat = np.ascontiguousarray(flat, dtype=np.int64)
        cap = 2 * n + 4
        self.log = (np.empty(cap + 1, np.int64), np.empty(cap, np.int64),
                    np.empty(cap, np.int64), np.empty(cap), np.empty(3 * n + 4, np.int64))
        self.log[0][0] = 0
        scripted = False
        u, script = _NO_U, _NO_INT
        branch = _NO_INT
        mode = 0
        if not self.forced:
            if isinstance(self.chooser, _RngChooser):
                u = self.chooser.buf
                if u.size < n:
                    raise RuntimeError("the chooser's block of uniforms is shorter than N")
            else:
                scripted = True
                mode = 1
                script = np.asarray(self.chooser.script(), dtype=np.int64)
                branch = np.zeros(n + 1, np.int64)
        if self.forced:
            n_slots = part.size.size
            fo = (np.ascontiguousarray(self.target, dtype=np.int64),
                  np.ascontiguousarray(self.target_size, dtype=np.int64),
                  np.array([self.target[i], self.target[j], -1, -1], np.int64),
                  np.full(n_slots, -1, np.int64), np.full(n_slots, -1, np.int64),
                  np.zeros(n_slots, np.int64), part.size.copy())
            changed = np.ascontiguousarray(self.changed, dtype=np.int64)
        else:
            fo = (_NO_INT, _NO_INT, np.zeros(4, np.int64), _NO_INT, _NO_INT, _NO_INT, _NO_INT)
            changed = _NO_INT
        st = self._arrays()
        ok = _arm_pass(i, j, np.ascontiguousarray(D, dtype=np.int64), flat, ptr,
                       np.ascontiguousarray(ci, dtype=np.int64),
                       np.ascontiguousarray(cj, dtype=np.int64), rest, self.order.P,
                       self.order.a, self.order.inverse(), self.order.b, kern.outside != "all",
                       kern._fgraph[0], kern._fgraph[1], self.forced, changed,
                       st[:7] + (_stack_positions(st[2]),), st[7:],
                       (mode, u, script, branch, self.inv_t),
                       self.cnt, self.fl, self.log, fo)
        self.state.log_pi += float(self.fl[1])
        self.model.evaluations += int(self.cnt[_C_EVALS])
        log_t = float(self.fl[0]) if ok else _NEG_INF
        if scripted:
            self.chooser.record(branch[:self.cnt[_C_POS]].tolist(), log_t)
        elif not self.forced:
            self.chooser.pos = int(self.cnt[_C_POS])
        return log_t

    def undo(self) -> None:
        """Undo every move of this pass, last first."""
        if self.log is None or not self.cnt[_C_NLOG]:
            return
        st = self._arrays()
        D = self.model.vstats.shape[1]
        tmp = (np.empty(D), np.empty(D), np.empty(D))
        d = _undo_log(self.log, int(self.cnt[_C_NLOG]), st[:7] + (_stack_positions(st[2]),),
                      st[7:], tmp)
        self.state.log_pi -= d
        self.fl[1] -= d
        self.cnt[_C_NLOG] = 0
        self.cnt[_C_NITEMS] = 0

    def moved_items(self) -> np.ndarray:
        if self.log is None:
            return np.zeros(0, dtype=np.int64)
        return np.unique(self.log[4][:self.cnt[_C_NITEMS]])


_NO_U = np.zeros(0)
_NO_INT = np.zeros(0, np.int64)


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
        if getattr(model, "fixed_labels", False):
            raise ValueError(f"{type(model).__name__} has a fixed label set; reconfiguration "
                             "moves need a partition model whose labels are names")
        for nm, val, lo in (("n_chains", n_chains, 1), ("gibbs_sweeps", gibbs_sweeps, 0),
                            ("max_history", max_history, 1)):
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < lo:
                raise ValueError(f"{nm} must be an integer >= {lo}, got {val!r}")
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
        if anchors is None:
            anchors = "edge" if self.graph is not None else ("pair" if self.srm else "disagree")
        if anchors not in ("edge", "pair", "disagree"):
            raise ValueError(f"anchors must be 'edge', 'pair' or 'disagree', got {anchors!r}")
        if anchors == "disagree" and self.srm:
            raise ValueError("anchors='disagree' needs a history; sRM has none")
        if anchors == "edge" and self.graph is None:
            raise ValueError("edge anchors need a model with a graph")
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
            from .tree_guided import _knn_csr

            if isinstance(neighbours, bool) or not isinstance(neighbours, (int, np.integer)) \
                    or neighbours < 1:
                raise ValueError(f"neighbours must be a positive integer, got {neighbours!r}")
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
        mixture = (isinstance(model, MixtureModel) and model.compiled_likelihood
                   and self.graph is None)
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
            self.model.gibbs_sweep(state, rng, temperature)
            return
        if self._gibbs is None:
            from .gibbs import Gibbs

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
        return {k: (a / p if p else float("nan")) for k, (p, a) in self.counts.items()
                if k != "none"}


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
