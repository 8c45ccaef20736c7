"""Tree-guided MCMC of Lee & Choi (seed 004), with an exact acceptance ratio.

The idea of the paper: every label (cluster) carries a binary tree over its
items, built by Bayesian hierarchical clustering; the trees say which labels
look alike (merge them) and where a label looks divided (split it there).
This module keeps the paper's moves and makes the Metropolis-Hastings ratio
exact. Everything below is at temperature T: the target is π^(1/T), and every
dissimilarity d enters the proposals as d^(1/T).

Dissimilarity
-------------
From the per-item sufficient statistics of the model (``model.vstats``,
summed over a set) a *cluster score* s(A) is the log of the paper's
potential φ(X_A | h_A) of "A is one cluster":

* mixture models (Dirichlet process): s(A) = log α + log Γ(|A|) + log m(x_A),
  the paper's κ(|A|) P(dX_A) for the DP;
* the image model: s(A) = L(A) - a0 - a1 - a2 area(A)^0.9, the penalised
  likelihood of A plus the prior of a label that is one region.

The dissimilarity of two disjoint sets is the paper's d (eq. 9 with
hypothesis potentials instead of tree potentials),

    log d(A, B) = s(A) + s(B) - s(A ∪ B),

large when A and B are better apart. It is symmetric and depends only on
the two sets. (Any other choice keeps the sampler exact; d only shapes the
proposals.)

Trees are a function of the vertex set
--------------------------------------
The tree of a label is built by greedy agglomerative clustering of the
label's items (:func:`_build_impl`): repeatedly join the pair of clusters
with the smallest log d, ties broken by node number (leaves are numbered by
ascending item, joined nodes in order of creation), so the tree is a
deterministic function of the label's vertex set and of the data only. It is
*not* part of the state: a label's tree is recomputed (or fetched from a
cache keyed by the vertex set, which is exact because the tree is a
function of the set) whenever it is needed. On a model with a graph only
adjacent clusters are joined, so every node of the tree of a connected
label is a connected set of atoms; a disconnected label is first reduced to
its connected pieces that way, and the pieces are then joined at the top by
the same greedy rule without the adjacency constraint (a deterministic
order). Mixture models have no graph: up to 100 items every pair is a
candidate (exactly the BHC tree); above that only pairs of a fixed k-nearest-
neighbour graph of the standardised data (k = 10) are candidates in the
first phase (same two-phase rule).

With the DP score the greedy rule favours the largest cluster (log Γ(|A|)
in s(A)), so the tree of a label of m items is close to a caterpillar and
the greedy build costs far more than O(m log m) (tens of milliseconds for
a label of 800 points). Mixtures above 100 items therefore use, by default
(``trees="auto"``, or ``trees="global"``), the tree *induced* on the set by
the fixed global tree of all items (the same greedy clustering, built once
from the data): its internal nodes are the nodes of the global tree under
which both children meet the set, each holding the set's items below it
(:func:`_induced_impl`, O(m log N) from the global tree's leaf order and
an ancestor table). It is again a function of the vertex set and of the
data only, so everything below stays exact; it costs no score evaluation
beyond one per node. ``trees="set"`` keeps the greedy tree of each set.

Global move (split or merge)
----------------------------
From X with L labels:

1. pick a label c uniformly (probability 1/L);
2. put every other label c' into a merge set M independently with probability
   p(c, c') = ε + (1 - 2ε) / (1 + d(c, c')^(1/T))  (the paper's 1/(1 + d), with a
   floor ε = ``merge_floor`` so that no probability underflows to 0);
3. M empty → **split** c (below); otherwise **merge** c with every label of M.

*Split* (the paper's SampleSub + StocInsert): draw an internal node ν of c's
tree with probability (1 - ε_s) · softmax(log d(l(ν), r(ν)) / T) + ε_s / (n - 1)
(``split_floor`` = ε_s); start two groups, the leaves of l(ν) and of r(ν); then
walk from ν to the root: the sibling subtree Q of every node on the way
(nearest first) joins an open group g with probability ∝ d(g, Q)^(-1/T) or
opens a new group with probability ∝ ``new_weight`` (the paper's weight 1),
the groups' statistics growing as subtrees join. The groups (two or more)
become the new labels.

*Merge*: the labels c ∪ M become one label.

Where the paper's ratio is not exact, and what is done instead
--------------------------------------------------------------
The paper's acceptance r = π(X*) q(X | X*) / (π(X) q(X* | X)) (section 3.2)
is not the Metropolis-Hastings ratio of its proposal, for three reasons:

(a) *Trees are part of the state.* The paper keeps, modifies and rebuilds the
    trees stochastically (StocInsert changes them, a merge builds a
    "cascading" tree), but its ratio contains only partition probabilities:
    the chain on (partition, trees) has no correct ratio, and neither has
    the chain on partitions. Here a tree is a deterministic function of a
    label's vertex set, so the state is the partition alone and every
    proposal probability below is a function of (X, X*).
(b) *One path of a split.* The paper prices the reverse of a merge along
    one constructed path through the "cascading" tree the merge has just
    built (eq. 12: SampleSub must pick "the parent of c", then every other
    merged label must open a new cluster), although the split move that
    would reverse it draws its node and its insertions on the tree of the
    merged label, through any path that yields the same labels. Here the
    split probability of an outcome is the sum over every node ν of the
    tree that the split would actually use (the deterministic tree of the
    label being split: for the reverse of a merge, the tree of the merged
    set) whose two children and every off-path subtree lie within single
    parts of the outcome, each term replayed exactly through the sequential
    StocInsert choices (:func:`_split_logsum_impl`). With deterministic trees
    this sum has at most one term: if ν1 ≠ ν2 both qualified, either one is
    inside a child of the other (a child kept whole by ν1's path, yet split
    by ν2's), or neither is, and then the subtree below their common
    ancestor holding ν2 is an off-path subtree of ν1's walk, kept whole, yet
    split by ν2. It is zero when the tree of the merged set cannot reproduce
    the original labels: such a merge is rejected, which is exact, since its
    reverse is never proposed. (The tests check the one-path property by
    enumeration.)
(c) *One anchor forward, a sum in reverse.* A merge of the labels P can start
    from any of them as the anchor c (with M = the others). The paper sums
    over the anchors for the reverse of a split (eq. 11) but counts only the
    drawn anchor for a forward merge. Here both directions use the total

        q_merge(X → X*) = Σ_{c ∈ P} (1/L) Π_{c' ∈ P \\ c} p(c, c') Π_{c' ∉ P} (1 - p(c, c')),

    and a split's probability carries its own anchor term
    (1/L) Π_{c' ≠ c} (1 - p(c, c')) (the anchor of a split is unique).

With these, q(X* | X) is the total probability of every random path from X
to X*, q(X | X*) likewise from X* to X, and

    α = min{1, [π(X*)/π(X)]^(1/T) · q(X | X*) / q(X* | X)}

is the ordinary Metropolis-Hastings acceptance: detailed balance holds
exactly (the tests build the whole transition matrix on 5-6 items and check
π_i K_ij = π_j K_ji to 1e-10; the paper's one-path ratio fails that check).
``ratio="paper"`` reproduces the paper's bookkeeping — the drawn path's
probability forward (for a merge: the drawn anchor only), the sum over
anchors (reverse of a split, eq. 11) or the single most probable split path
(reverse of a merge) — as a negative control only; with deterministic trees
its error is (c).

Split-merge alone is irreducible when π > 0 everywhere: cutting a single item
i off a label is always possible (ν = the parent of leaf i; every off-path
subtree avoids i), and its reverse merge goes through the same node of the
same tree, so every partition reaches the all-singletons partition and back.

Local move (Gibbs on the leaves of a subtree)
---------------------------------------------
The paper draws a subtree of every label's tree and runs Gibbs on its leaves.
Choosing the items to update from the trees of the *current* labels makes
the choice depend on the labels of the very items updated, and a mixture of
Gibbs updates is only invariant when the choice of the updated set S does
not depend on x_S (more precisely: P(S | x) may depend on x_{V \\ S} only).
Correcting it by Metropolis-Hastings needs P(S | X*), which is zero as soon
as one item of S changes label (S is then no longer a node of any tree), so
almost every such move would be rejected. Instead the subtree is drawn from
one *fixed* tree over all items (the same greedy clustering of the whole
vertex set, built once, a function of the data only): pick an item i
uniformly, pick one of its ancestors with at most ``local_max`` leaves with
probability (1 - ε_l) · softmax(log d / T) + ε_l / m over those m ancestors
(``local_floor`` = ε_l), and update every leaf of the chosen node, in
ascending order, by single-site Gibbs over every label and a fresh one
(:func:`~swcuts.samplers.targets.gibbs_relabel`). The choice of S is
independent of the state, so the local move is a mixture of compositions of
exact Gibbs updates: π^(1/T) is invariant, no acceptance test is needed, and
single-site Gibbs moves make it irreducible on its own.

Implementation
--------------
Trees, walks and sums are compiled with numba, or run as plain Python (the
same functions with their score rebound: ``compiled=False``, a user
likelihood, a user ``score``). Moves are applied to the live
state with ``model.delta`` / ``model.apply`` (a multi-part move applies part
after part, accumulating the exact Δ log π) and undone on rejection.
Statistics of sets and trees are cached by vertex set, so a label's tree is
rebuilt only when the label changes. The merge probabilities come from the
state's per-label statistics and the members of the labels split or merged
from a member index that the kernel keeps current (global and local moves
update it), so no step passes over all N items. One global step costs O(L)
cluster scores for the merge probabilities (O(|P| L) for a merge of |P|
labels), one walk up the anchor's tree, and for the exact ratio one pass
over the tree(s) involved plus one replayed walk per compatible node; a
proposed merge builds the tree of the merged set.
"""

from __future__ import annotations

import heapq
import math
import types
import weakref
from collections import OrderedDict

import numpy as np
from numba import njit

from ..models.image import ImageModel, label_loglik
from ..models.mixture import MixtureModel, log_marginal
from ..partition import MemberIndex
from .common import StepInfo, metropolis_hastings
from .targets import gibbs_relabel

__all__ = ["TreeGuided", "Tree"]


# ---------------------------------------------------------------------------
# Cluster scores s(A) from summed statistics (first-class functions)
# ---------------------------------------------------------------------------


SCORE_IMAGE = 0.0
SCORE_MIXTURE = 1.0


@njit(cache=True)
def _score_any(st, n, sp):
    """Cluster score of a set with summed statistics ``st`` and ``n`` items.

    ``sp[0]`` selects the model: SCORE_IMAGE, sp[1:] = [C, B, use_hist,
    use_lin, use_quad, kappa, ridge, a0 + a1, a2, exponent]; SCORE_MIXTURE,
    sp[1:] = [likelihood kind, log α, likelihood params...] (the DP
    potential κ(n) m(x)). The plain-Python helpers rebind this name to a
    user's score.
    """
    if sp[0] == SCORE_IMAGE:
        uf = np.empty(3, np.bool_)
        uf[0] = sp[3] > 0.5
        uf[1] = sp[4] > 0.5
        uf[2] = sp[5] > 0.5
        ll = label_loglik(st, int(sp[1]), int(sp[2]), uf, sp[6], sp[7])
        return ll - sp[8] - sp[9] * st[0] ** sp[10]
    return log_marginal(int(sp[1]), st, sp[3:]) + sp[2] + math.lgamma(n)


# ---------------------------------------------------------------------------
# Tree construction (greedy agglomeration), plain Python; compiled below
# ---------------------------------------------------------------------------


def _build_impl(sp, items, local, indptr, indices, use_graph, vstats):
    """Greedy agglomerative tree of ``items`` (ascending vertex ids).

    Nodes 0..n-1 are the leaves (item ``items[k]``), n..2n-2 the joined
    clusters in order of creation; the root is 2n-2. Phase 1 (``use_graph``)
    joins only clusters linked by an edge of the CSR graph (indptr,
    indices); phase 2 joins whatever is left, every pair a candidate. Each
    phase joins the candidate pair of smallest log d first, ties broken by
    the node numbers (a, b), a < b, so the tree is a function of the set.
    ``local`` (size N, all -1) is scratch and is restored.

    Returns (left, right, parent, stats, score, size, lo, order): children
    of internal node n + j, parent of every node (-1 at the root), summed
    statistics, cluster score and number of leaves of every node; the
    leaves of node v are ``items[order[lo[v]:lo[v] + size[v]]]``.
    """
    n = items.shape[0]
    D = vstats.shape[1]
    nn = 2 * n - 1
    stats = np.zeros((nn, D))
    size = np.zeros(nn, np.int64)
    sc = np.zeros(nn)
    left = np.full(max(n - 1, 0), -1, np.int64)
    right = np.full(max(n - 1, 0), -1, np.int64)
    parent = np.full(nn, -1, np.int64)
    active = np.zeros(nn, np.bool_)
    for k in range(n):
        stats[k, :] = vstats[items[k]]
        size[k] = 1
        sc[k] = _score_any(stats[k], 1, sp)
        active[k] = True
    tmp = np.empty(D)
    next_id = n
    heap = [(0.0, 0, 0)]
    heap.pop()
    if use_graph and n > 1:
        for k in range(n):
            local[items[k]] = k
        ne = 0
        for k in range(n):
            v = items[k]
            for p in range(indptr[v], indptr[v + 1]):
                u = local[indices[p]]
                if u >= 0 and u != k:
                    ne += 1
        head = np.full(nn, -1, np.int64)
        nxt = np.empty(ne + 1, np.int64)
        val = np.empty(ne + 1, np.int64)
        free = np.empty(ne + 1, np.int64)
        buf = np.empty(ne + 1, np.int64)
        n_free = 0
        top = 0
        for k in range(n):
            v = items[k]
            for p in range(indptr[v], indptr[v + 1]):
                u = local[indices[p]]
                if u < 0 or u == k:
                    continue
                e = top
                top += 1
                val[e] = u
                nxt[e] = head[k]
                head[k] = e
                if k < u:
                    np.add(stats[k], stats[u], tmp)
                    heapq.heappush(heap, (sc[k] + sc[u] - _score_any(tmp, 2, sp), k, u))
        for k in range(n):
            local[items[k]] = -1
        uf = np.arange(nn)
        stamp = np.full(nn, -1, np.int64)
        while len(heap) > 0:
            item = heapq.heappop(heap)
            a = item[1]
            b = item[2]
            if not (active[a] and active[b]):
                continue
            m = next_id
            next_id += 1
            np.add(stats[a], stats[b], stats[m])
            size[m] = size[a] + size[b]
            sc[m] = _score_any(stats[m], size[m], sp)
            left[m - n] = a
            right[m - n] = b
            parent[a] = m
            parent[b] = m
            active[a] = False
            active[b] = False
            active[m] = True
            uf[a] = m
            uf[b] = m
            # Neighbours of the new cluster: the current roots of the
            # neighbour entries of a and b, once each; the entries are freed.
            nb = 0
            for x in (a, b):
                e = head[x]
                while e >= 0:
                    r = val[e]
                    while uf[r] != r:
                        r = uf[r]
                    y = val[e]
                    while uf[y] != r:
                        z = uf[y]
                        uf[y] = r
                        y = z
                    if r != m and stamp[r] != m:
                        stamp[r] = m
                        buf[nb] = r
                        nb += 1
                    e2 = nxt[e]
                    free[n_free] = e
                    n_free += 1
                    e = e2
                head[x] = -1
            for t in range(nb):
                r = buf[t]
                n_free -= 1
                e = free[n_free]
                val[e] = r
                nxt[e] = head[m]
                head[m] = e
                np.add(stats[r], stats[m], tmp)
                heapq.heappush(heap, (sc[r] + sc[m] - _score_any(tmp, size[r] + size[m], sp), r, m))
    # Phase 2: every remaining pair is a candidate.
    alive = np.empty(n, np.int64)
    n_alive = 0
    for v in range(next_id):
        if active[v]:
            alive[n_alive] = v
            n_alive += 1
    if n_alive > 1:
        for i in range(n_alive):
            for j in range(i + 1, n_alive):
                a = alive[i]
                b = alive[j]
                np.add(stats[a], stats[b], tmp)
                heapq.heappush(heap, (sc[a] + sc[b] - _score_any(tmp, size[a] + size[b], sp), a, b))
        while len(heap) > 0:
            item = heapq.heappop(heap)
            a = item[1]
            b = item[2]
            if not (active[a] and active[b]):
                continue
            m = next_id
            next_id += 1
            np.add(stats[a], stats[b], stats[m])
            size[m] = size[a] + size[b]
            sc[m] = _score_any(stats[m], size[m], sp)
            left[m - n] = a
            right[m - n] = b
            parent[a] = m
            parent[b] = m
            active[a] = False
            active[b] = False
            active[m] = True
            w = 0
            for i in range(n_alive):
                r = alive[i]
                if active[r]:
                    alive[w] = r
                    w += 1
            n_alive = w
            for i in range(n_alive):
                r = alive[i]
                np.add(stats[r], stats[m], tmp)
                heapq.heappush(heap, (sc[r] + sc[m] - _score_any(tmp, size[r] + size[m], sp), r, m))
            alive[n_alive] = m
            n_alive += 1
    # Leaf order: the leaves of every node are contiguous.
    lo = np.zeros(nn, np.int64)
    for v in range(nn - 1, n - 1, -1):
        j = v - n
        lo[left[j]] = lo[v]
        lo[right[j]] = lo[v] + size[left[j]]
    order = np.empty(n, np.int64)
    for k in range(n):
        order[lo[k]] = k
    return left, right, parent, stats, sc, size, lo, order


def _walk_impl(sp, left, right, parent, stats, size, sc, n, nu, inv_t, log_wnew,
               pure, k, forced, u, assign):
    """StocInsert from node ``nu`` to the root: the split's group choices.

    Groups start as the leaves of the two children of ``nu``; the sibling
    subtree Q of every node on the way up (nearest first) joins an open
    group g with probability ∝ exp(-log d(g, Q) / T) or opens a new group
    with probability ∝ exp(log_wnew). ``forced``: the choices are those that
    reproduce the parts ``pure`` (part of every node, which must be ≥ 0 for
    the children of ``nu`` and every Q; ``k`` parts, group id = part id,
    open groups visited in ascending id); otherwise the choices are drawn
    with the uniforms ``u`` (group ids in order of opening). The group of
    the t-th Q goes to ``assign[t]``. Returns (log probability of the
    choices, number of Qs, number of groups).
    """
    D = stats.shape[1]
    depth = 0
    v = parent[nu]
    while v >= 0:
        depth += 1
        v = parent[v]
    cap = k if forced else depth + 2
    gstats = np.zeros((cap, D))
    gsize = np.zeros(cap, np.int64)
    gsc = np.zeros(cap)
    gopen = np.zeros(cap, np.bool_)
    logits = np.empty(cap + 1)
    gid = np.empty(cap + 1, np.int64)
    usc = np.empty(cap + 1)
    tmp = np.empty(D)
    j = nu - n
    cl = left[j]
    cr = right[j]
    if forced:
        gl = pure[cl]
        gr = pure[cr]
    else:
        gl = 0
        gr = 1
    gstats[gl, :] = stats[cl]
    gsize[gl] = size[cl]
    gsc[gl] = sc[cl]
    gopen[gl] = True
    gstats[gr, :] = stats[cr]
    gsize[gr] = size[cr]
    gsc[gr] = sc[cr]
    gopen[gr] = True
    n_open = 2
    logp = 0.0
    child = nu
    v = parent[nu]
    t = 0
    while v >= 0:
        jv = v - n
        Q = left[jv]
        if Q == child:
            Q = right[jv]
        m = 0
        top = k if forced else n_open
        for g in range(top):
            if gopen[g]:
                np.add(gstats[g], stats[Q], tmp)
                s_u = _score_any(tmp, gsize[g] + size[Q], sp)
                logits[m] = -(gsc[g] + sc[Q] - s_u) * inv_t
                gid[m] = g
                usc[m] = s_u
                m += 1
        logits[m] = log_wnew
        gid[m] = -1
        m += 1
        mx = logits[0]
        for i in range(1, m):
            if logits[i] > mx:
                mx = logits[i]
        acc = 0.0
        for i in range(m):
            acc += math.exp(logits[i] - mx)
        lse = mx + math.log(acc)
        target = -1
        idx = m - 1
        if forced:
            target = pure[Q]
            for i in range(m - 1):
                if gid[i] == target:
                    idx = i
                    break
        else:
            x = u[t]
            cum = 0.0
            for i in range(m):
                cum += math.exp(logits[i] - lse)
                if x < cum:
                    idx = i
                    break
        logp += logits[idx] - lse
        g = gid[idx]
        if g >= 0:
            np.add(gstats[g], stats[Q], gstats[g])
            gsize[g] += size[Q]
            gsc[g] = usc[idx]
        else:
            g = target if forced else n_open
            gstats[g, :] = stats[Q]
            gsize[g] = size[Q]
            gsc[g] = sc[Q]
            gopen[g] = True
            n_open += 1
        assign[t] = g
        child = v
        v = parent[v]
        t += 1
    return logp, t, n_open


def _split_logsum_impl(sp, left, right, parent, stats, size, sc, n, leafpart, k,
                       node_logw, inv_t, log_wnew, best):
    """log Σ over every path of the split procedure on this tree that yields
    the parts ``leafpart`` (part id of every leaf, 0..k-1): the nodes ν whose
    children and off-path subtrees each lie in one part (children in two
    different parts), each weighted by its node probability and its replayed
    StocInsert choices. ``best``: the largest single path instead (the
    negative control). -inf when no path yields the parts."""
    nn = 2 * n - 1
    pure = np.empty(nn, np.int64)
    for v in range(n):
        pure[v] = leafpart[v]
    for j in range(n - 1):
        a = pure[left[j]]
        b = pure[right[j]]
        pure[n + j] = a if (a >= 0 and a == b) else -1
    ok = np.zeros(nn, np.bool_)
    ok[nn - 1] = True
    for v in range(nn - 1, n - 1, -1):
        j = v - n
        ok[left[j]] = ok[v] and pure[right[j]] >= 0
        ok[right[j]] = ok[v] and pure[left[j]] >= 0
    acc = -np.inf
    no_u = np.empty(0)
    assign = np.empty(max(n, 1), np.int64)
    for j in range(n - 1):
        v = n + j
        if not ok[v]:
            continue
        a = pure[left[j]]
        b = pure[right[j]]
        if a < 0 or b < 0 or a == b:
            continue
        res = _walk(sp, left, right, parent, stats, size, sc, n, v, inv_t, log_wnew,
                    pure, k, True, no_u, assign)
        lp = node_logw[j] + res[0]
        if best:
            if lp > acc:
                acc = lp
        else:
            acc = np.logaddexp(acc, lp)
    return acc


def _logd_matrix_impl(sp, SA, sA, nA, SB, sB, nB):
    """log d between every set of A and every set of B, from their statistics."""
    out = np.empty((SA.shape[0], SB.shape[0]))
    tmp = np.empty(SA.shape[1])
    for i in range(SA.shape[0]):
        for j in range(SB.shape[0]):
            np.add(SA[i], SB[j], tmp)
            out[i, j] = sA[i] + sB[j] - _score_any(tmp, nA[i] + nB[j], sp)
    return out


def _scores_impl(sp, S, n):
    """Cluster scores of sets with statistics ``S`` (rows) and sizes ``n``."""
    out = np.empty(S.shape[0])
    for i in range(S.shape[0]):
        out[i] = _score_any(S[i], n[i], sp)
    return out


def _induced_impl(sp, items, gpos, gdepth, up, vstats):
    """The tree of ``items`` (ascending) induced by the global tree.

    Every internal node of the induced tree is a node of the global tree
    (given by its leaf positions ``gpos``, node depths ``gdepth`` and the
    ancestor table ``up``, ``up[j, v]`` = the 2^j-th ancestor of v) under
    which both children hold items of the set; the other nodes are
    contracted. In the depth-first leaf order of the global tree the split
    between consecutive items s-1 and s is their lowest common ancestor,
    and the induced tree is the Cartesian tree (smallest depth at the root)
    of those depths. Statistics and scores are those of the induced nodes'
    item sets. Same output as :func:`_build_impl` (internal nodes numbered
    children first, root last).
    """
    m = items.shape[0]
    D = vstats.shape[1]
    nn = 2 * m - 1
    stats = np.zeros((nn, D))
    size = np.zeros(nn, np.int64)
    sc = np.zeros(nn)
    left = np.full(max(m - 1, 0), -1, np.int64)
    right = np.full(max(m - 1, 0), -1, np.int64)
    parent = np.full(nn, -1, np.int64)
    lo = np.zeros(nn, np.int64)
    for k in range(m):
        stats[k, :] = vstats[items[k]]
        size[k] = 1
        sc[k] = _score_any(stats[k], 1, sp)
    keys = np.empty(m, np.int64)
    for k in range(m):
        keys[k] = gpos[items[k]]
    dord = np.argsort(keys)
    if m == 1:
        return left, right, parent, stats, sc, size, lo, dord
    for t in range(m):
        lo[dord[t]] = t
    K = up.shape[0]
    h = np.empty(m, np.int64)  # h[s]: depth of the split between positions s-1 and s
    for s in range(1, m):
        u = items[dord[s - 1]]
        v = items[dord[s]]
        if gdepth[u] < gdepth[v]:
            u, v = v, u
        diff = gdepth[u] - gdepth[v]
        j = 0
        while diff > 0:
            if diff & 1:
                u = up[j, u]
            diff >>= 1
            j += 1
        if u != v:
            for j in range(K - 1, -1, -1):
                if up[j, u] != up[j, v]:
                    u = up[j, u]
                    v = up[j, v]
            u = up[0, u]
        h[s] = gdepth[u]
    # Cartesian tree of h[1..m-1] (minimum at the root).
    lch = np.full(m, -1, np.int64)
    rch = np.full(m, -1, np.int64)
    stack = np.empty(m, np.int64)
    top = 0
    for s in range(1, m):
        last = -1
        while top > 0 and h[stack[top - 1]] > h[s]:
            top -= 1
            last = stack[top]
        lch[s] = last
        if top > 0:
            rch[stack[top - 1]] = s
        stack[top] = s
        top += 1
    root = stack[0]
    # Post-order numbering: internal node ids m, m+1, ..., root = 2m-2.
    node = np.full(m, -1, np.int64)  # node id of split s
    a_of = np.empty(m, np.int64)  # range start (position) of split s
    st_s = np.empty(m, np.int64)
    st_state = np.empty(m, np.int64)
    a_of[root] = 0
    top = 0
    st_s[0] = root
    st_state[0] = 0
    top = 1
    next_id = m
    while top > 0:
        s = st_s[top - 1]
        if st_state[top - 1] == 0:
            st_state[top - 1] = 1
            if lch[s] >= 0:
                a_of[lch[s]] = a_of[s]
                st_s[top] = lch[s]
                st_state[top] = 0
                top += 1
            continue
        if st_state[top - 1] == 1:
            st_state[top - 1] = 2
            if rch[s] >= 0:
                a_of[rch[s]] = s
                st_s[top] = rch[s]
                st_state[top] = 0
                top += 1
            continue
        top -= 1
        lc = node[lch[s]] if lch[s] >= 0 else dord[s - 1]
        rc = node[rch[s]] if rch[s] >= 0 else dord[s]
        v = next_id
        next_id += 1
        node[s] = v
        left[v - m] = lc
        right[v - m] = rc
        parent[lc] = v
        parent[rc] = v
        for q in range(D):
            stats[v, q] = stats[lc, q] + stats[rc, q]
        size[v] = size[lc] + size[rc]
        sc[v] = _score_any(stats[v], size[v], sp)
        lo[v] = a_of[s]
    return left, right, parent, stats, sc, size, lo, dord


@njit(cache=True)
def _leaf_groups(left, right, parent, lo, order, size, n, nu, assign):
    """Group of every leaf after a split at ``nu``: 0 and 1 for the leaves
    of its two children, ``assign[t]`` for the t-th sibling subtree on the
    way to the root (as :func:`_walk_impl` numbers them)."""
    out = np.empty(n, np.int64)
    j = nu - n
    for side in range(2):
        c = left[j] if side == 0 else right[j]
        for p in range(lo[c], lo[c] + size[c]):
            out[order[p]] = side
    child = nu
    v = parent[nu]
    t = 0
    while v >= 0:
        jv = v - n
        Q = left[jv]
        if Q == child:
            Q = right[jv]
        for p in range(lo[Q], lo[Q] + size[Q]):
            out[order[p]] = assign[t]
        child = v
        v = parent[v]
        t += 1
    return out


@njit(cache=True)
def _merge_lp(logd, inv_t, eps):
    """log p and log(1 - p), p = eps + (1 - 2 eps) σ(-logd / T), elementwise."""
    lp = np.empty(logd.size)
    l1p = np.empty(logd.size)
    le = math.log(eps) if eps > 0.0 else -np.inf
    lr = math.log1p(-2.0 * eps)
    for t in range(logd.size):
        x = -logd[t] * inv_t
        if x >= 0.0:
            ls = -math.log1p(math.exp(-x))
            l1s = -x - math.log1p(math.exp(-x))
        else:
            ls = x - math.log1p(math.exp(x))
            l1s = -math.log1p(math.exp(x))
        if eps > 0.0:
            a = lr + ls
            lp[t] = max(a, le) + math.log1p(math.exp(-abs(a - le)))
            a = lr + l1s
            l1p[t] = max(a, le) + math.log1p(math.exp(-abs(a - le)))
        else:
            lp[t] = ls
            l1p[t] = l1s
    return lp, l1p


_build = njit(cache=True)(_build_impl)
_walk = njit(cache=True)(_walk_impl)
_split_logsum = njit(cache=True)(_split_logsum_impl)
_logd_matrix = njit(cache=True)(_logd_matrix_impl)
_scores = njit(cache=True)(_scores_impl)
_induced = njit(cache=True)(_induced_impl)


class _Fns:
    """The helpers: compiled (the module's numba functions, scores by
    ``_score_any``) or plain Python — the same functions with the global
    names ``_score_any`` and ``_walk`` rebound, to a user's score if given."""

    def __init__(self, compiled, sp, score=None):
        self.sp = sp
        if compiled and score is None:
            self.score = _score_any
            self.build, self.walk = _build, _walk
            self.logsum, self.logd = _split_logsum, _logd_matrix
            self.scores, self.induced = _scores, _induced
            return
        g = dict(globals())
        g["_score_any"] = _score_any.py_func if score is None else score
        self.score = g["_score_any"]

        def copy(fn):
            return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__)

        self.build, self.walk = copy(_build_impl), copy(_walk_impl)
        g["_walk"] = self.walk
        self.logsum, self.logd = copy(_split_logsum_impl), copy(_logd_matrix_impl)
        self.scores, self.induced = copy(_scores_impl), copy(_induced_impl)


# ---------------------------------------------------------------------------
# Trees and per-set information
# ---------------------------------------------------------------------------


class Tree:
    """The deterministic tree of one vertex set (see the module docstring).

    Attributes
    ----------
    items : ndarray of int64
        The vertex set, ascending; leaf k is ``items[k]``.
    n : int
    left, right : ndarray (n - 1,)
        Children of internal node n + j.
    parent : ndarray (2n - 1,)
        Parent of every node, -1 at the root (node 2n - 2).
    stats, score, size : per node statistics, cluster score s, leaf count.
    logd : ndarray (n - 1,)
        log d(l(ν), r(ν)) of internal node n + j.
    """

    def __init__(self, items, out):
        self.items = items
        self.n = int(items.size)
        (self.left, self.right, self.parent, self.stats, self.score, self.size, self.lo,
         self.order) = out
        n = self.n
        self.logd = self.score[self.left] + self.score[self.right] - self.score[n:]
        self._logw = None

    @property
    def root(self) -> int:
        return 2 * self.n - 2

    def leaves(self, node) -> np.ndarray:
        """Items under ``node``, ascending."""
        lo = self.lo[node]
        return np.sort(self.items[self.order[lo:lo + self.size[node]]])

    def children(self, node):
        j = node - self.n
        return int(self.left[j]), int(self.right[j])

    def node_log_weights(self, temperature, floor) -> np.ndarray:
        """log probability of drawing internal node n + j for a split."""
        key = (float(temperature), float(floor))
        if self._logw is None or self._logw[0] != key:  # one entry: T changes when annealing
            self._logw = (key, _floored_log_softmax(self.logd / temperature, floor))
        return self._logw[1]

    @property
    def nbytes(self) -> int:
        return int(self.stats.nbytes + 8 * 8 * self.n)


def _floored_log_softmax(x, floor) -> np.ndarray:
    """log of (1 - floor) softmax(x) + floor / len(x)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.copy()
    lsm = x - (x.max() + math.log(np.exp(x - x.max()).sum()))
    if floor <= 0.0:
        return lsm
    return np.logaddexp(math.log1p(-floor) + lsm, math.log(floor / x.size))


class _SetInfo:
    """Statistics, score, size and smallest item of one vertex set."""

    __slots__ = ("items", "key", "stats", "score", "n", "first")

    def __init__(self, items, key, stats, score):
        self.items = items
        self.key = key
        self.stats = stats
        self.score = score
        self.n = int(items.size)
        self.first = int(items[0])


class _Rest:
    """Statistics, scores and sizes of the labels a move leaves alone, as
    arrays (one row per label)."""

    __slots__ = ("stats", "score", "n")

    def __init__(self, stats, score, n):
        self.stats = stats
        self.score = score
        self.n = n

    def __len__(self):
        return int(self.n.size)

    @classmethod
    def of(cls, infos, D):
        if not infos:
            return cls(np.zeros((0, D)), np.zeros(0), np.zeros(0, np.int64))
        return cls(np.array([a.stats for a in infos]), np.array([a.score for a in infos]),
                   np.array([a.n for a in infos], np.int64))


def _knn_csr(data, k):
    """Symmetrised k-nearest-neighbour graph of the standardised rows, CSR."""
    from scipy.spatial import cKDTree

    X = np.asarray(data, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    X = (X - X.mean(axis=0)) / sd
    n = X.shape[0]
    kk = min(k + 1, n)
    _, idx = cKDTree(X).query(X, k=kk)
    idx = np.asarray(idx).reshape(n, kk)
    src = np.repeat(np.arange(n), kk)
    dst = idx.ravel()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    a = np.concatenate((src, dst))
    b = np.concatenate((dst, src))
    pairs = np.unique(np.stack((a, b), axis=1), axis=0)
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, pairs[:, 0] + 1, 1)
    return np.cumsum(indptr).astype(np.int64), pairs[:, 1].astype(np.int64)


def _logsumexp(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return -math.inf
    m = float(x.max())
    if m == -math.inf:
        return -math.inf
    return m + math.log(float(np.exp(x - m).sum()))


# ---------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------


class TreeGuided:
    """Tree-guided MCMC (Lee & Choi) with an exact acceptance ratio.

    Parameters
    ----------
    model : partition model
        Needs ``vstats`` (per-vertex sufficient statistics) and a cluster
        score: built in for :class:`~swcuts.models.ImageModel` and
        :class:`~swcuts.models.MixtureModel`; any other model needs
        ``score``. Models with a fixed label set (Potts) are refused.
    q : array, optional
        Edge probabilities; accepted for a uniform kernel signature, unused.
    moves : {"both", "global", "local"}
        Which moves :meth:`step` makes.
    global_prob : float
        With ``moves="both"``, probability that a step is a global move
        (otherwise a local move).
    G : int
        Global moves per :meth:`iteration` (the paper's G = 20).
    merge_floor : float
        ε in the merge probability ε + (1 - 2ε)/(1 + d^(1/T)), in [0, 0.5).
    split_floor : float
        Share of the uniform distribution in the choice of the split node.
    new_weight : float
        Weight of "open a new group" in StocInsert (the paper's 1).
    local_max : int
        Largest subtree (in leaves) updated by one local move.
    local_floor : float
        Share of the uniform distribution in the choice of that subtree.
    neighbours : int, None or "auto"
        Models without a graph: candidate pairs of the tree construction
        from a k-nearest-neighbour graph of the data (int k), every pair
        (None), or "auto": every pair up to 100 items, else k = 10.
    trees : {"auto", "set", "global"}
        The tree of a label: the greedy tree of its vertex set ("set"), or
        the tree induced on it by the fixed global tree ("global", models
        without a graph only); "auto": "global" for models without a graph
        above 100 items, else "set".
    ratio : {"exact", "paper"}
        "paper" is the paper's printed ratio, kept as a negative control for
        the tests; it does not leave π invariant.
    score : callable, optional
        ``score(stats, n, params) -> float``: the log potential of a set with
        summed statistics ``stats`` and ``n`` items (runs as plain Python).
    compiled : bool, optional
        Compiled helpers (default) or plain Python (same results). The
        driver-facing flag ``self.compiled`` is always False: the driver
        calls :meth:`step`.

    Attributes
    ----------
    counts : dict
        ``{"split": [proposed, accepted], "merge": [...], "local": [...]}``.
    """

    name = "tree-guided"

    def __init__(self, model, q=None, *, moves="both", global_prob=0.5, G=20, merge_floor=1e-3,
                 split_floor=0.05, new_weight=1.0, local_max=16, local_floor=0.5,
                 neighbours="auto", trees="auto", ratio="exact", score=None, compiled=None):
        if getattr(model, "fixed_labels", False):
            raise ValueError(f"{type(model).__name__} has a fixed label set; tree-guided MCMC "
                             "needs a partition model whose labels are names")
        if moves not in ("both", "global", "local"):
            raise ValueError(f"moves must be 'both', 'global' or 'local', got {moves!r}")
        if ratio not in ("exact", "paper"):
            raise ValueError(f"ratio must be 'exact' or 'paper', got {ratio!r}")
        if trees not in ("auto", "set", "global"):
            raise ValueError(f"trees must be 'auto', 'set' or 'global', got {trees!r}")
        if not 0.0 <= merge_floor < 0.5:
            raise ValueError("merge_floor must lie in [0, 0.5)")
        for nm, val in (("split_floor", split_floor), ("local_floor", local_floor),
                        ("global_prob", global_prob)):
            if not 0.0 <= val <= 1.0:
                raise ValueError(f"{nm} must lie in [0, 1]")
        if not new_weight > 0:
            raise ValueError("new_weight must be positive")
        if isinstance(local_max, bool) or int(local_max) < 1:
            raise ValueError("local_max must be a positive integer")
        if isinstance(G, bool) or int(G) < 0:
            raise ValueError("G must be a non-negative integer")
        self.model = model
        self.graph = getattr(model, "graph", None)
        self.moves = moves
        self.global_prob = float(global_prob)
        self.G = int(G)
        self.merge_floor = float(merge_floor)
        self.split_floor = float(split_floor)
        self.log_wnew = math.log(float(new_weight))
        self.local_max = int(local_max)
        self.local_floor = float(local_floor)
        self.ratio = ratio
        vstats = getattr(model, "vstats", None)
        if vstats is None:
            raise TypeError(f"{type(model).__name__} has no per-vertex statistics (vstats)")
        self.vstats = np.ascontiguousarray(vstats, dtype=np.float64)
        use_compiled = True if compiled is None else bool(compiled)
        if score is not None:
            fns = _Fns(False, np.zeros(1), score)
        elif isinstance(model, ImageModel):
            sp = np.array([SCORE_IMAGE, model.n_channels, model.n_bins,
                           *model.use_family.astype(float), model.kappa, model.ridge,
                           model.a0 + model.a1, model.a2, model.exponent], dtype=np.float64)
            fns = _Fns(use_compiled, sp)
        elif isinstance(model, MixtureModel):
            lik = model.likelihood
            kind = getattr(lik, "kind", None)
            if kind is None:
                log_alpha = math.log(model.alpha)

                def custom(st, n, sp, _lm=lik.log_marginal):
                    return float(_lm(st)) + log_alpha + math.lgamma(n)

                fns = _Fns(False, np.zeros(1), custom)
            else:
                sp = np.concatenate(([SCORE_MIXTURE, float(kind), math.log(model.alpha)],
                                     np.asarray(lik.params, dtype=np.float64)))
                fns = _Fns(use_compiled, sp)
        else:
            raise TypeError(f"no built-in cluster score for {type(model).__name__}; pass score=")
        self._f = fns
        self._mixture_gibbs = (isinstance(model, MixtureModel) and model.compiled_likelihood
                               and compiled is not False)
        # Candidate graph of the tree construction.
        n = model.n_vertices
        if self.graph is not None:
            self._indptr = np.ascontiguousarray(self.graph.indptr, dtype=np.int64)
            self._indices = np.ascontiguousarray(self.graph.indices, dtype=np.int64)
            self._use_graph = True
        else:
            k = neighbours
            if k == "auto":
                k = 10 if n > 100 else None
            data = getattr(model, "data", None)
            if k is not None and data is not None and n > k + 1:
                self._indptr, self._indices = _knn_csr(data, int(k))
                self._use_graph = True
            else:
                self._indptr = np.zeros(n + 1, np.int64)
                self._indices = np.zeros(0, np.int64)
                self._use_graph = False
        self._local = np.full(n, -1, np.int64)
        if trees == "global" and self.graph is not None:
            raise ValueError("trees='global' is for models without a graph (on a graph "
                             "every node of a label's tree must be connected)")
        if trees == "auto":
            trees = "global" if self.graph is None and n > 100 else "set"
        self.trees = trees
        self._lift = None
        self._index = weakref.WeakKeyDictionary()
        # Caches keyed by vertex set (exact: trees and statistics are functions of the set).
        self._infos = OrderedDict()
        self._trees = OrderedDict()
        self._tree_bytes = 0
        self.tree_cache_bytes = 64 << 20
        self.info_cache_size = max(4096, 4 * n)
        self._gtree = None
        self._last_local_size = 1
        self.compiled = False
        self.counts = {"split": [0, 0], "merge": [0, 0], "local": [0, 0]}

    # ------------------------------------------------------------ sets
    def _info(self, items) -> _SetInfo:
        key = items.tobytes()
        info = self._infos.get(key)
        if info is not None:
            self._infos.move_to_end(key)
            return info
        st = self.vstats[items].sum(axis=0)
        info = _SetInfo(items, key, st, float(self._f.score(st, int(items.size), self._f.sp)))
        self._infos[key] = info
        if len(self._infos) > self.info_cache_size:
            self._infos.popitem(last=False)
        return info

    def tree(self, items) -> Tree:
        """The tree of a vertex set (ascending int64 items), from the cache."""
        items = np.ascontiguousarray(items, dtype=np.int64)
        key = items.tobytes()
        t = self._trees.get(key)
        if t is not None:
            self._trees.move_to_end(key)
            return t
        f = self._f
        if self.trees == "global":
            gpos, gdepth, up = self._lifting()
            t = Tree(items, f.induced(f.sp, items, gpos, gdepth, up, self.vstats))
        else:
            t = Tree(items, f.build(f.sp, items, self._local, self._indptr, self._indices,
                                    self._use_graph, self.vstats))
        self._trees[key] = t
        self._tree_bytes += t.nbytes
        while self._tree_bytes > self.tree_cache_bytes and len(self._trees) > 1:
            _, old = self._trees.popitem(last=False)
            self._tree_bytes -= old.nbytes
        return t

    def global_tree(self) -> Tree:
        """The fixed tree over all vertices that guides the local moves."""
        if self._gtree is None:
            f = self._f
            items = np.arange(self.model.n_vertices, dtype=np.int64)
            self._gtree = Tree(items, f.build(f.sp, items, self._local, self._indptr,
                                              self._indices, self._use_graph, self.vstats))
        return self._gtree

    def _lifting(self):
        """(leaf position, node depth, ancestor table) of the global tree,
        for the induced trees (``trees="global"``)."""
        if self._lift is None:
            g = self.global_tree()
            nn = 2 * g.n - 1
            depth = np.zeros(nn, np.int64)
            for v in range(nn - 2, -1, -1):  # parents have larger ids
                depth[v] = depth[g.parent[v]] + 1
            K = max(1, int(depth.max()).bit_length())
            up = np.empty((K, nn), np.int64)
            up[0] = np.where(g.parent >= 0, g.parent, np.arange(nn))
            for j in range(1, K):
                up[j] = up[j - 1][up[j - 1]]
            self._lift = (np.ascontiguousarray(g.lo[:g.n]), depth, up)
        return self._lift

    def _arrays(self, A):
        """(stats, scores, sizes) of a list of infos or a :class:`_Rest`."""
        if isinstance(A, _Rest):
            return A.stats, A.score, A.n
        return (np.array([a.stats for a in A]), np.array([a.score for a in A]),
                np.array([a.n for a in A], np.int64))

    def _logd(self, A, B) -> np.ndarray:
        """log d between every set of A and every set of B (lists of infos
        or :class:`_Rest`)."""
        if len(A) == 0 or len(B) == 0:
            return np.zeros((len(A), len(B)))
        f = self._f
        return f.logd(f.sp, *self._arrays(A), *self._arrays(B))

    def _merge_logp(self, logd, temperature):
        """(log p, log(1 - p)) of the merge probability
        p = ε + (1 - 2ε) σ(-log d / T), elementwise."""
        ld = np.ascontiguousarray(logd, dtype=np.float64)
        lp, l1p = _merge_lp(ld.reshape(-1), 1.0 / temperature, self.merge_floor)
        return lp.reshape(ld.shape), l1p.reshape(ld.shape)

    # ------------------------------------------------ proposal probabilities
    def _split_tree_logsum(self, tree, parts, temperature, best=False) -> float:
        """log Σ over the split paths of ``tree`` that yield ``parts``."""
        if tree.n < 2:
            return -math.inf
        leafpart = np.empty(tree.n, np.int64)
        for g, p in enumerate(parts):
            leafpart[np.searchsorted(tree.items, p)] = g
        f = self._f
        return float(f.logsum(f.sp, tree.left, tree.right, tree.parent,
                              tree.stats, tree.size, tree.score, tree.n, leafpart, len(parts),
                              tree.node_log_weights(temperature, self.split_floor),
                              1.0 / temperature, self.log_wnew, best))

    def _log_q_split(self, c_info, rest, parts, temperature, best=False) -> float:
        """log q of splitting the label ``c_info`` into ``parts`` (infos sorted
        by smallest item), the other labels being ``rest``."""
        L = len(rest) + 1
        lq = -math.log(L)
        if len(rest):
            _, l1p = self._merge_logp(self._logd([c_info], rest)[0], temperature)
            lq += float(l1p.sum())
        tree = self.tree(c_info.items)
        return lq + self._split_tree_logsum(tree, [p.items for p in parts], temperature, best)

    def _log_q_merge(self, P, rest, temperature) -> float:
        """log q of merging the labels ``P`` into one, summed over anchors."""
        L = len(P) + len(rest)
        lpP, _ = self._merge_logp(self._logd(P, P), temperature)
        if len(rest):
            _, l1R = self._merge_logp(self._logd(P, rest), temperature)
            outside = l1R.sum(axis=1)
        else:
            outside = np.zeros(len(P))
        terms = np.empty(len(P))
        for i in range(len(P)):
            terms[i] = -math.log(L) + (lpP[i].sum() - lpP[i, i]) + outside[i]
        return _logsumexp(terms)

    def _log_qs(self, kind, before, after, rest, temperature, path_lq):
        """(log q(X* | X), log q(X | X*)) of a split (before = [c], after =
        parts) or a merge (before = P, after = [U]); infos sorted by first item."""
        if kind == "split":
            rev = self._log_q_merge(after, rest, temperature)
            if self.ratio == "paper":
                return path_lq, rev
            return self._log_q_split(before[0], rest, after, temperature), rev
        if self.ratio == "paper":
            return path_lq, self._log_q_split(after[0], rest, before, temperature, best=True)
        return (self._log_q_merge(before, rest, temperature),
                self._log_q_split(after[0], rest, before, temperature))

    # ------------------------------------------------------ public helpers
    def merge_log_prob(self, items_a, items_b, temperature=1.0):
        """(log p, log(1 - p)): probability that an anchor with vertex set
        ``items_a`` puts the label ``items_b`` into its merge set."""
        a = self._info(np.ascontiguousarray(np.sort(items_a), dtype=np.int64))
        b = self._info(np.ascontiguousarray(np.sort(items_b), dtype=np.int64))
        lp, l1p = self._merge_logp(self._logd([a], [b])[0], temperature)
        return float(lp[0]), float(l1p[0])

    @staticmethod
    def _groups(labels):
        labels = np.asarray(labels)
        order = np.argsort(labels, kind="stable")
        _, starts = np.unique(labels[order], return_index=True)
        groups = [np.sort(g).astype(np.int64) for g in np.split(order, starts[1:])]
        return sorted(groups, key=lambda g: int(g[0]))

    def _classify(self, labels, new_labels):
        """("split" | "merge" | None, before, after, rest) as infos."""
        A = {g.tobytes(): g for g in self._groups(labels)}
        B = {g.tobytes(): g for g in self._groups(new_labels)}
        gone = [A[k] for k in A if k not in B]
        new = [B[k] for k in B if k not in A]
        rest = [A[k] for k in A if k in B]

        def infos(gs):
            return sorted((self._info(g) for g in gs), key=lambda i: i.first)

        if len(gone) == 1 and len(new) >= 2:
            kind = "split"
        elif len(new) == 1 and len(gone) >= 2:
            kind = "merge"
        else:
            return None, None, None, None
        return kind, infos(gone), infos(new), _Rest.of(infos(rest), self.vstats.shape[1])

    def log_q(self, labels, new_labels, temperature=1.0) -> float:
        """Exact log probability that one global move proposed from the
        partition ``labels`` yields the partition ``new_labels`` (labels are
        names only), summed over every path; -inf if no path does."""
        kind, before, after, rest = self._classify(labels, new_labels)
        if kind is None:
            return -math.inf
        if kind == "split":
            return self._log_q_split(before[0], rest, after, temperature)
        return self._log_q_merge(before, rest, temperature)

    def log_acceptance(self, labels, new_labels, temperature=1.0, path_log_q=None) -> float:
        """log of the Metropolis-Hastings ratio this kernel uses for the
        global move ``labels`` → ``new_labels`` (Δ log π from the model's
        ``log_target``). ``path_log_q`` (the drawn path's probability) is
        used by ``ratio="paper"`` only."""
        kind, before, after, rest = self._classify(labels, new_labels)
        if kind is None:
            raise ValueError("not a split or a merge")
        fwd, rev = self._log_qs(kind, before, after, rest, temperature, path_log_q)
        d = self.model.log_target(np.asarray(new_labels)) - self.model.log_target(
            np.asarray(labels))
        return d / temperature + rev - fwd

    # ------------------------------------------------------- label members
    def _members_index(self, state) -> MemberIndex:
        idx = self._index.get(state)
        if idx is None:
            idx = self._index[state] = MemberIndex()
        return idx

    def _members(self, state, label) -> np.ndarray:
        """Items of ``label``, ascending; O(|label|) while the member index
        is current (this kernel keeps it so; after another kernel's moves
        it is rebuilt once)."""
        lst = self._members_index(state).members(state.partition, int(label))
        if lst.size > 1 and np.any(lst[1:] < lst[:-1]):
            lst = np.sort(lst)
        return np.ascontiguousarray(lst, dtype=np.int64)

    def _index_moved(self, state, items, old, new) -> None:
        """Bring the member index up to date after ``items`` moved from the
        labels ``old`` to ``new`` (removals first: a freed slot may be
        reused by a later item)."""
        lists = self._members_index(state).lists
        for lab in np.unique(old).tolist():
            lst = lists.get(lab)
            if lst is not None:
                lists[lab] = lst[~np.isin(lst, items[old == lab])]
        for lab in np.unique(new).tolist():
            lst = lists.get(lab)
            add = items[new == lab]
            lists[lab] = np.sort(add) if lst is None else np.union1d(lst, add)
        size = state.partition.size
        for lab in np.unique(old).tolist():
            if size[lab] == 0:
                lists.pop(lab, None)

    def _rest_of(self, state, labs) -> _Rest:
        """Statistics, scores and sizes of the labels ``labs`` from the
        state's per-label caches (O(len(labs) · D), no pass over items)."""
        part = state.partition
        D = self.vstats.shape[1]
        stats = getattr(state, "stats", None)
        if isinstance(stats, np.ndarray) and stats.ndim == 2 and stats.shape[1] == D:
            S = np.ascontiguousarray(stats[labs])
        else:
            S = np.array([self.vstats[self._members(state, lab)].sum(axis=0)
                          for lab in labs.tolist()]).reshape(len(labs), D)
        n = np.ascontiguousarray(part.size[labs], dtype=np.int64)
        f = self._f
        return _Rest(S, np.asarray(f.scores(f.sp, S, n), dtype=np.float64), n)

    # ----------------------------------------------------------------- step
    def step(self, state, rng, temperature=1.0) -> StepInfo:
        """One move at temperature T: a global move (split or merge) or a
        local move, chosen by ``moves`` / ``global_prob``.

        Returns
        -------
        StepInfo
            ``move`` is "split", "merge" or "local"; ``moved`` the number of
            vertices relabelled (proposed, for a global move); ``delta`` the
            Δ log π of the proposal (global) or of the local updates.
        """
        temperature = float(temperature)
        if not temperature > 0.0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if self.moves == "global" or (self.moves == "both" and rng.random() < self.global_prob):
            return self.global_move(state, rng, temperature)
        return self.local_move(state, rng, temperature)

    def global_move(self, state, rng, temperature=1.0) -> StepInfo:
        """One split-or-merge Metropolis-Hastings update.

        Cost: O(L · D) for the merge probabilities of the L labels (from the
        state's per-label statistics), plus the members and the tree of the
        labels split or merged (cached by vertex set).
        """
        part = state.partition
        labs = part.used_labels()
        L = labs.size
        a = int(rng.integers(L))
        c = int(labs[a])
        cinfo = self._info(self._members(state, c))
        other_labs = np.delete(labs, a)
        others = self._rest_of(state, other_labs)
        if L > 1:
            lp, l1p = self._merge_logp(self._logd([cinfo], others)[0], temperature)
            inM = np.log(rng.random(L - 1)) < lp
        else:
            lp = l1p = np.zeros(0)
            inM = np.zeros(0, bool)
        anchor_lq = -math.log(L) + float(lp[inM].sum() + l1p[~inM].sum())
        if not inM.any():
            return self._split(state, c, cinfo, others, anchor_lq, rng, temperature)
        m_labs = other_labs[inM].tolist()
        P_labs = [c] + m_labs
        P = [cinfo] + [self._info(self._members(state, lab)) for lab in m_labs]
        keep = ~inM
        rest = _Rest(others.stats[keep], others.score[keep], others.n[keep])
        return self._merge(state, P_labs, P, rest, anchor_lq, temperature, rng)

    def _split(self, state, c, cinfo, rest, anchor_lq, rng, temperature) -> StepInfo:
        self.counts["split"][0] += 1
        tree = self.tree(cinfo.items)
        n = tree.n
        if n < 2:
            return StepInfo(False, -math.inf, 0, 0.0, "split")
        logw = tree.node_log_weights(temperature, self.split_floor)
        w = np.exp(logw)
        j = int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right"))
        j = min(j, n - 2)
        nu = n + j
        f = self._f
        assign = np.empty(n, np.int64)
        lp_walk, n_q, n_groups = f.walk(f.sp, tree.left, tree.right, tree.parent,
                                        tree.stats, tree.size, tree.score, n, nu,
                                        1.0 / temperature, self.log_wnew,
                                        np.zeros(1, np.int64), 0, False, rng.random(n), assign)
        path_lq = anchor_lq + float(logw[j]) + float(lp_walk)
        leafgroup = _leaf_groups(tree.left, tree.right, tree.parent, tree.lo, tree.order,
                                 tree.size, n, nu, assign)
        order = np.argsort(leafgroup, kind="stable")  # items ascending within a group
        bounds = np.cumsum(np.bincount(leafgroup, minlength=int(n_groups)))[:-1]
        parts = [tree.items[g] for g in np.split(order, bounds)]
        parts.sort(key=lambda p: int(p[0]))
        pinfos = [self._info(p) for p in parts]
        fwd, rev = self._log_qs("split", [cinfo], pinfos, rest, temperature, path_lq)
        moved = n - max(p.size for p in parts)
        if rev == -math.inf:
            return StepInfo(False, -math.inf, moved, 0.0, "split")
        # The largest part keeps the label c; the others get fresh labels.
        keep = max(range(len(parts)), key=lambda g: parts[g].size)
        movers = [parts[g] for g in range(len(parts)) if g != keep]
        log_pi0 = state.log_pi
        model = self.model
        lists = self._members_index(state).lists
        if len(movers) == 1:
            fresh = state.partition.fresh_label()
            d = model.delta(state, movers[0], fresh)
            log_alpha = d / temperature + rev - fwd
            if metropolis_hastings(log_alpha, rng):
                model.apply(state, movers[0], fresh, d)
                lists[c], lists[fresh] = parts[keep], movers[0]
                self.counts["split"][1] += 1
                return StepInfo(True, log_alpha, moved, d, "split")
            return StepInfo(False, log_alpha, moved, d, "split")
        fresh_labels = []
        for R in movers:
            fresh = state.partition.fresh_label()
            dd = model.delta(state, R, fresh)
            model.apply(state, R, fresh, dd)
            fresh_labels.append(fresh)
        d = state.log_pi - log_pi0
        log_alpha = d / temperature + rev - fwd
        if metropolis_hastings(log_alpha, rng):
            self.counts["split"][1] += 1
            lists[c] = parts[keep]
            for fresh, R in zip(fresh_labels, movers):
                lists[fresh] = R
            return StepInfo(True, log_alpha, moved, d, "split")
        for R in movers:
            dd = model.delta(state, R, c)
            model.apply(state, R, c, dd)
        state.log_pi = log_pi0
        return StepInfo(False, log_alpha, moved, d, "split")

    def _merge(self, state, P_labs, P, rest, anchor_lq, temperature, rng) -> StepInfo:
        self.counts["merge"][0] += 1
        U = np.sort(np.concatenate([p.items for p in P]))
        uinfo = self._info(U)
        Ps = sorted(P, key=lambda i: i.first)
        # The largest label keeps its name; the others move into it.
        keep = max(range(len(P)), key=lambda g: P[g].n)
        dst = P_labs[keep]
        movers = [(P_labs[g], P[g].items) for g in range(len(P)) if g != keep]
        moved = int(sum(R.size for _, R in movers))
        fwd, rev = self._log_qs("merge", Ps, [uinfo], rest, temperature, anchor_lq)
        if rev == -math.inf:
            return StepInfo(False, -math.inf, moved, 0.0, "merge")
        model = self.model
        log_pi0 = state.log_pi
        lists = self._members_index(state).lists

        def commit():
            lists[dst] = U
            for lab, _ in movers:
                lists.pop(lab, None)

        if len(movers) == 1:
            R = movers[0][1]
            d = model.delta(state, R, dst)
            log_alpha = d / temperature + rev - fwd
            if metropolis_hastings(log_alpha, rng):
                model.apply(state, R, dst, d)
                commit()
                self.counts["merge"][1] += 1
                return StepInfo(True, log_alpha, moved, d, "merge")
            return StepInfo(False, log_alpha, moved, d, "merge")
        for _, R in movers:
            dd = model.delta(state, R, dst)
            model.apply(state, R, dst, dd)
        d = state.log_pi - log_pi0
        log_alpha = d / temperature + rev - fwd
        if metropolis_hastings(log_alpha, rng):
            commit()
            self.counts["merge"][1] += 1
            return StepInfo(True, log_alpha, moved, d, "merge")
        # Every mover's label is empty now: each returns to its own label.
        for lab, R in movers:
            dd = model.delta(state, R, lab)
            model.apply(state, R, lab, dd)
        state.log_pi = log_pi0
        return StepInfo(False, log_alpha, moved, d, "merge")

    def local_subtree(self, item, temperature=1.0):
        """(candidate nodes, their log probabilities) of the local move
        seeded at ``item`` in the fixed global tree: the internal ancestors
        of the item with at most ``local_max`` leaves (empty: the item alone)."""
        g = self.global_tree()
        cand = []
        v = int(g.parent[item]) if g.n > 1 else -1
        while v >= 0 and g.size[v] <= self.local_max:
            cand.append(v)
            v = int(g.parent[v])
        if not cand:
            return np.zeros(0, np.int64), np.zeros(0)
        cand = np.array(cand, np.int64)
        return cand, _floored_log_softmax(g.logd[cand - g.n] / temperature, self.local_floor)

    def local_move(self, state, rng, temperature=1.0) -> StepInfo:
        """Single-site Gibbs over the leaves of a subtree of the fixed global
        tree (state-independent choice; always accepted)."""
        self.counts["local"][0] += 1
        self.counts["local"][1] += 1
        n = self.model.n_vertices
        i = int(rng.integers(n))
        cand, logw = self.local_subtree(i, temperature)
        if cand.size == 0:
            S = np.array([i], np.int64)
        else:
            w = np.exp(logw)
            k = min(int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(), side="right")),
                    cand.size - 1)
            S = self.global_tree().leaves(int(cand[k]))
        self._last_local_size = int(S.size)
        before = state.log_pi
        labels = state.partition.labels
        old = labels[S]
        if self._mixture_gibbs:
            # The same Gibbs updates, compiled (one uniform per leaf).
            self.model.gibbs_sweep_items(state, S, rng.random(S.size), temperature)
        else:
            one = np.empty(1, np.int64)
            for v in S.tolist():
                one[0] = v
                gibbs_relabel(self.model, state, one, rng, temperature)
        new = labels[S]
        ch = np.flatnonzero(new != old)
        if ch.size:
            self._index_moved(state, S[ch], old[ch], new[ch])
        return StepInfo(True, 0.0, int(ch.size), state.log_pi - before, "local")

    # ------------------------------------------------------------ iteration
    def iteration(self, state, rng, temperature=1.0) -> StepInfo:
        """The paper's cycle: G global moves, then local moves until about
        as many vertices as there are have been updated (one sweep)."""
        before = state.log_pi
        any_acc = False
        moved = 0
        log_alpha = 0.0
        for _ in range(self.G):
            info = self.global_move(state, rng, temperature)
            log_alpha = info.log_accept_ratio
            if info.accepted:
                any_acc = True
                moved += info.moved
        n = self.model.n_vertices
        done = 0
        while done < n:
            info = self.local_move(state, rng, temperature)
            done += max(1, self._last_local_size)
            moved += info.moved
        return StepInfo(any_acc, log_alpha, moved, state.log_pi - before, "iteration")

    def acceptance_rates(self) -> dict:
        """Accepted / proposed per move type (NaN before any proposal)."""
        return {k: (a / p if p else float("nan")) for k, (p, a) in self.counts.items()}
