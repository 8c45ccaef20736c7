"""The exact proposal probabilities of the tree-guided global move.

:class:`_ProposalProbabilities` (a base class of
:class:`~.kernel.TreeGuided`) computes log q(X* | X) of a split — the
anchor term times the sum over every node of the label's tree whose split
path yields the parts — and of a merge — summed over every label of the
merge as the anchor — and the Metropolis-Hastings ratio built from them;
``ratio="paper"`` gives the paper's one-path bookkeeping (a negative
control). It also offers the public helpers :meth:`log_q`,
:meth:`log_acceptance` and :meth:`merge_log_prob`. Why the paper's ratio is
not exact and why these sums are: ``docs/algorithms/tree_guided.md`` ("Where the paper's ratio is
not exact, and what is done instead").
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.primitives import np_sum
from swcuts.samplers.tree_guided.trees import _Rest


@njit(cache=True)
def merge_lp1(logd, inv_t, eps):
    """(log p, log(1 - p)) of the merge probability
    p = eps + (1 - 2 eps) σ(-logd / T) of one pair of labels."""
    le = math.log(eps) if eps > 0.0 else -np.inf
    lr = math.log1p(-2.0 * eps)
    x = -logd * inv_t
    if x >= 0.0:
        ls = -math.log1p(math.exp(-x))
        l1s = -x - math.log1p(math.exp(-x))
    else:
        ls = x - math.log1p(math.exp(x))
        l1s = -math.log1p(math.exp(x))
    if eps > 0.0:
        a = lr + ls
        lp = max(a, le) + math.log1p(math.exp(-abs(a - le)))
        a = lr + l1s
        l1p = max(a, le) + math.log1p(math.exp(-abs(a - le)))
        return lp, l1p
    return ls, l1s


@njit(cache=True)
def _merge_lp(logd, inv_t, eps):
    """:func:`merge_lp1` elementwise."""
    lp = np.empty(logd.size)
    l1p = np.empty(logd.size)
    for t in range(logd.size):
        lp[t], l1p[t] = merge_lp1(logd[t], inv_t, eps)
    return lp, l1p


_NO_TRACE = np.zeros(0)


@njit(cache=True)
def _logsumexp(x):
    """log Σ exp(x) of a contiguous 1-D float64 array, the largest term
    factored out, as numpy computes ``m + log(np.exp(x - m).sum())`` (the
    sum by :func:`swcuts._numba.primitives.np_sum`, numpy's pairwise sum, so the same bits):
    -inf when x is empty or all -inf."""
    if x.shape[0] == 0:
        return -math.inf
    m = x.max()
    if m == -math.inf:
        return -math.inf
    e = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        e[i] = math.exp(x[i] - m)
    return m + math.log(np_sum(e))


@njit(cache=True)
def merge_anchor_sum(lpP, l1R):
    """log q of merging the labels P into one, summed over every label of P
    as the anchor: log Σ_i (1/L) Π_{j ∈ P, j ≠ i} p_ij Π_{r ∉ P} (1 - p_ir),
    from ``lpP`` (log p between the labels of P, |P| x |P|) and ``l1R``
    (log(1 - p) from each to every other label, |P| x (L - |P|)); C-contiguous.
    Each row is summed as numpy sums it (:func:`swcuts._numba.primitives.np_sum`)."""
    m = lpP.shape[0]
    L = m + l1R.shape[1]
    terms = np.empty(m)
    for i in range(m):
        terms[i] = -math.log(L) + (np_sum(lpP[i]) - lpP[i, i]) + np_sum(l1R[i])
    return _logsumexp(terms)


class _ProposalProbabilities:
    """Proposal probabilities of :class:`~.kernel.TreeGuided` (its base class).

    Uses the kernel's ``_f`` (the helpers of :mod:`.algorithms`),
    ``_info``, ``tree``, ``model``, ``ratio``, ``merge_floor``,
    ``split_floor`` and ``log_wnew``.
    """

    def _arrays(self, A):
        """(stats, scores, sizes) of a list of infos or a :class:`_Rest`."""
        if isinstance(A, _Rest):
            return A.stats, A.score, A.n
        return (np.array([a.stats for a in A]), np.array([a.score for a in A]),
                np.array([a.n for a in A], np.int64))

    @staticmethod
    def _arrays1(a):
        """(stats, score, size) of one info, for the compiled helpers."""
        return np.ascontiguousarray(a.stats, dtype=np.float64), float(a.score), int(a.n)

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
    def _split_tree_logsum(self, tree, parts, temperature, best=False, stop=-math.inf) -> float:
        """log Σ over the split paths of ``tree`` that yield ``parts``; with
        a finite ``stop``, possibly an upper bound of it below ``stop``
        (replays are given up once they fall below it)."""
        if tree.n < 2:
            return -math.inf
        big = max(range(len(parts)), key=lambda g: parts[g].size)
        if self.trees == "global" and not best and stop > -math.inf and tree.hkey is not None:
            # The root bound first, as the merges priced around their added
            # items (.around) take it: the same value, a function of the parts.
            gpos = self._lifting()[0]
            rest = [g for g in range(len(parts)) if g != big]
            A = parts[big].astype(np.int64)
            a = np.argsort(gpos[A], kind="stable")
            bound = self._root_bound(
                np.ascontiguousarray(gpos[A][a]), self.vstats, np.ascontiguousarray(A[a]),
                np.zeros(A.size, np.bool_), np.concatenate([parts[g] for g in rest]),
                np.repeat(np.array(rest, np.int64), [parts[g].size for g in rest]), big,
                len(parts), temperature)
            if bound < stop:
                return bound
        # The leaves of the other parts; every other leaf is in the largest part.
        others = [g for g in range(len(parts)) if g != big]
        leaves = np.concatenate([np.searchsorted(tree.items, parts[g]) for g in others])
        part_of = np.repeat(np.array(others, np.int64), [parts[g].size for g in others])
        return self._logsum(tree.left, tree.right, tree.parent, tree.stats, tree.size, tree.score,
                            tree.n, leaves.astype(np.int64), part_of, big, len(parts),
                            tree.node_log_weights(temperature, self.split_floor), temperature,
                            best, stop)

    def _root_bound(self, gp, a_stats, a_row, dead, b_items, part_of, big, k,
                    temperature) -> float:
        """An upper bound of the log probability of a split of the merged
        set U that yields its k parts, from its first choice alone, the
        root's (:func:`.walks._root_bound_impl`; A's leaves at the ascending
        global positions ``gp``, not ``dead``, statistics
        ``a_stats[a_row[t]]``; the other items ``b_items`` and their parts,
        A's ``big``): -inf when no split path yields the parts, 0 when the
        split node is the root. A function of the parts alone: the
        whole-tree path and the contracted one (:mod:`.around`) return the
        same value."""
        f = self._f
        gpos, hmin, lg, _ = self._lifting()
        return float(f.root_bound(f.sp, gp, a_stats, a_row, dead, gpos,
                                  np.ascontiguousarray(b_items, np.int64),
                                  np.ascontiguousarray(part_of, np.int64), int(big), int(k),
                                  self.vstats, hmin, lg, 1.0 / temperature, self.log_wnew))

    def _logsum(self, left, right, parent, stats, size, score, n, leaves, part_of, big, k,
                node_logw, temperature, best, stop, trace=None, found=None) -> float:
        """:func:`.walks._split_logsum_impl` on a tree given by its arrays
        (a label's tree or the contracted tree of :mod:`.merged`): log Σ
        over the split paths that put ``leaves`` into the parts ``part_of``
        and every other leaf into part ``big`` (k parts), with the node
        weights ``node_logw``; with a finite ``stop``, possibly an upper
        bound of it below ``stop``. ``trace`` and ``found``: outputs of the
        paths (:func:`.walks._split_logsum_impl`), for the last call."""
        f = self._f
        if found is None:
            trace, found = _NO_TRACE, np.zeros(3, np.int64)
        args = (f.sp, left, right, parent, stats, size, score, n, leaves, part_of, big, k,
                node_logw, 1.0 / temperature, self.log_wnew, best)
        acc, complete = f.logsum(*args, stop, trace, found)
        if not complete and acc >= stop:  # several unfinished paths (not with these trees)
            found[:] = 0
            acc, complete = f.logsum(*args, -math.inf, trace, found)
        return float(acc)

    def _log_q_anchor(self, c_info, rest, temperature) -> float:
        """log probability that a global move picks ``c_info`` as its anchor
        and merges nothing into it: -log L + Σ log(1 - p(c, c')) over
        ``rest``. An upper bound of :meth:`_log_q_split` (the split path's
        probability is at most 1) that needs no tree. One call of
        :func:`.pairs._log_q_anchor_impl`."""
        f = self._f
        return float(f.log_q_anchor(f.sp, *self._arrays1(c_info), *self._arrays(rest),
                                    1.0 / temperature, self.merge_floor))

    def _log_q_split(self, c_info, rest, parts, temperature, best=False) -> float:
        """log q of splitting the label ``c_info`` into ``parts`` (infos sorted
        by smallest item), the other labels being ``rest``."""
        tree = self.tree(c_info.items)
        return (self._log_q_anchor(c_info, rest, temperature)
                + self._split_tree_logsum(tree, [p.items for p in parts], temperature, best))

    def _log_q_merge(self, P, rest, temperature) -> float:
        """log q of merging the labels ``P`` into one, summed over anchors
        (one call of :func:`.pairs._log_q_merge_impl`)."""
        f = self._f
        return float(f.log_q_merge(f.sp, *self._arrays(P), *self._arrays(rest), 1.0 / temperature,
                                   self.merge_floor))

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
