"""Block flips: relabel a whole fixed vertex set at once (issue 35, round 9).

An SW-cut step flips the boundary between two regions A and B at a rate
of about exp(−min(Σ w⁺, Σ w⁻)) over the edges of the boundary (the merge
is accepted with exp(Σ w⁻), the split proposed with probability exp(−Σ w⁺)),
so a long boundary of strongly mixed evidence is a trap even when its net
cost Σ w is small (docs/algorithms/posterior.md, rounds 8 and 9). A *block
flip* proposes the whole region at once: with a fixed list of vertex sets
(blocks, chosen before the chain runs and never changed by it), one step

1. draws a block S uniformly;
2. if the vertices of S do not share one label x, does nothing;
3. draws the new label y uniformly from the m(X) candidates: the labels
   of S's outside neighbours other than x, and a fresh label unless S is
   all of x (then a fresh label would be the same partition);
4. accepts with the Metropolis-Hastings probability

       min{1, [π(X')/π(X)]^(1/T) · m(X) / m(X')},

   where m(X') counts the candidates of S in X' (the reverse move relabels
   S from y back to x: x must be among them, i.e. a neighbour of S, or
   have vanished, when the fresh label gives X back; otherwise the move has
   no reverse and is rejected). Whenever the reverse exists m(X') = m(X)
   (a neighbour label y leaves the candidates and x joins them, or a fresh
   y takes the fresh label's place), so the ratio is 1; it is kept for clarity.

The reverse of (S, y) is (S, x), so detailed balance holds move by move
and the kernel leaves π^(1/T) invariant; two blocks that give the same
partition are two routes, each balanced on its own. The kernel is not
irreducible alone: it runs mixed with another kernel
(:class:`BlockMixture`: ``every`` steps of an inner kernel, then
``n_flips`` block flips), and the composition leaves π invariant. If S is the region A of a
trap, a merge of A into B is accepted with exp(Σ w) · m(X)/m(X') and the
split back with its inverse: the net cost, not the mixed sums.
``tests/test_blocks.py`` checks π P = π on the exact transition matrix of
all 877 partitions of 7 vertices (and a version that takes the moves
without a reverse fails), and the mixture with the compiled ``swc`` kernel
by sampling.
"""

from __future__ import annotations

import math

import numpy as np

from swcuts.samplers.common import StepInfo, metropolis_hastings

__all__ = ["BlockFlip", "BlockMixture", "block_outsides", "region_blocks", "merge_blocks"]


def block_outsides(graph, blocks) -> list:
    """For every block, its outside neighbours (with repeats), as an int array.

    Examples
    --------
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> g = RegionGraph.from_labels(np.array([[0, 1, 2, 3]]))
    >>> [sorted(o.tolist()) for o in block_outsides(g, [np.array([1, 2])])]
    [[0, 3]]
    """
    u, v = graph.edges[:, 0], graph.edges[:, 1]
    out = []
    inside = np.zeros(graph.n_vertices, dtype=bool)
    for s in blocks:
        inside[s] = True
        a, b = inside[u], inside[v]
        out.append(np.concatenate([v[a & ~b], u[b & ~a]]).astype(np.int64))
        inside[s] = False
    return out


def region_blocks(graph, labellings, min_size=2, max_share=0.95) -> list:
    """The connected regions of ``labellings`` as blocks (sorted vertex
    arrays), each once, with at least ``min_size`` vertices and at most
    ``max_share`` of them.

    Examples
    --------
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> g = RegionGraph.from_labels(np.array([[0, 1, 2, 3]]))
    >>> [b.tolist() for b in region_blocks(g, [np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1])])]
    [[0, 1], [2, 3], [0, 1, 2]]
    """
    from swcuts.models.regions import _components

    n = graph.n_vertices
    edges, unit = np.ascontiguousarray(graph.edges, dtype=np.int64), np.ones(n)
    seen, out = set(), []
    for labels in labellings:
        k, comp, _ = _components(np.asarray(labels, dtype=np.int64), edges, unit)
        order = np.argsort(comp, kind="stable")
        bounds = np.searchsorted(comp[order], np.arange(k + 1))
        for c in range(k):
            s = order[bounds[c]:bounds[c + 1]]
            key = s.tobytes()
            if min_size <= s.size <= max_share * n and key not in seen:
                seen.add(key)
                out.append(s.astype(np.int64))
    return out


def merge_blocks(graph, weights, min_size=2, max_share=0.95) -> list:
    """The clusters of single-linkage merging: the edges in decreasing
    ``weights`` join their ends' clusters (union-find); every cluster made,
    with at least ``min_size`` vertices and at most ``max_share`` of them,
    is a block.

    Examples
    --------
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> g = RegionGraph.from_labels(np.array([[0, 1, 2, 3]]))
    >>> [b.tolist() for b in merge_blocks(g, np.array([3.0, -1.0, 2.0]), max_share=1.0)]
    [[0, 1], [2, 3], [0, 1, 2, 3]]
    """
    from swcuts._numba.primitives import find

    n = graph.n_vertices
    parent = np.arange(n)
    members = {v: [v] for v in range(n)}
    out = []
    for e in np.argsort(-np.asarray(weights), kind="stable"):
        a, b = find(parent, graph.edges[e, 0]), find(parent, graph.edges[e, 1])
        if a == b:
            continue
        if len(members[a]) < len(members[b]):
            a, b = b, a
        parent[b] = a
        members[a] += members.pop(b)
        if min_size <= len(members[a]) <= max_share * n:
            out.append(np.sort(np.array(members[a], dtype=np.int64)))
    return out


class BlockFlip:
    """One block flip per step (see the module docstring).

    Parameters
    ----------
    model : partition model
        With ``delta``, ``apply`` and ``graph``.
    blocks : list of int arrays
        The fixed vertex sets (each nonempty).
    reverse : bool
        Reject the moves that have no reverse (False: a deliberately wrong
        kernel, the tests' negative control).
    """

    name = "block-flip"
    compiled = False

    def __init__(self, model, blocks, reverse=True):
        self.model = model
        self.blocks = [np.asarray(b, dtype=np.int64) for b in blocks]
        if not self.blocks or any(b.size == 0 for b in self.blocks):
            raise ValueError("block flips need at least one nonempty block")
        self.outside = block_outsides(model.graph, self.blocks)
        self.reverse = bool(reverse)
        self.tried = self.accepted = 0

    def proposal(self, labels, size, i):
        """(x, candidate labels of S = block i: the neighbours' labels other
        than x, whether a fresh label is one) or None when S has two labels."""
        s = self.blocks[i]
        x = int(labels[s[0]])
        if not np.all(labels[s] == x):
            return None
        near = np.unique(labels[self.outside[i]])
        return x, near[near != x], bool(size[x] > s.size)

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        part = state.partition
        i = int(rng.integers(len(self.blocks)))
        prop = self.proposal(part.labels, part.size, i)
        if prop is None:
            return StepInfo(False)
        x, near, fresh = prop
        m = near.size + fresh
        if m == 0:
            return StepInfo(False)
        r = int(rng.integers(m))
        y = int(near[r]) if r < near.size else part.fresh_label()
        x_near = bool(np.any(part.labels[self.outside[i]] == x))
        # Reverse candidates (outside S nothing moves): the neighbours' labels
        # but y, plus x if it is a neighbour, plus a fresh label unless S is
        # all of y (y existing: one less and one more; y fresh: neither).
        m_rev = near.size + x_near
        if fresh and not x_near and self.reverse:  # x keeps vertices away from S: no move gives X back
            return StepInfo(False)
        self.tried += 1
        s = self.blocks[i]
        d = self.model.delta(state, s, y)
        log_a = d / temperature + math.log(m) - math.log(max(m_rev, 1))
        if metropolis_hastings(log_a, rng):
            self.model.apply(state, s, y, d)  # updates log π too
            self.accepted += 1
            return StepInfo(True, log_a, int(s.size), d, "block")
        return StepInfo(False, log_a, 0, 0.0, "block")


class BlockMixture:
    """``every`` steps of ``inner`` (any kernel; a compiled one runs compiled),
    then ``flips`` :class:`BlockFlip` steps, in turn: each leaves π^(1/T)
    invariant, so does the cycle. A step of this kernel is one inner step;
    the block flips are extra. (Long runs of the inner kernel: a compiled
    call costs ~0.5 ms of set-up on a 1,000-atom photo.)"""

    def __init__(self, inner, flips: BlockFlip, every=20, n_flips=1):
        from swcuts.models.protocols import is_compiled

        self.inner, self.flips, self.every, self.n_flips = inner, flips, max(1, int(every)), max(1, int(n_flips))
        self.name = f"{getattr(inner, 'name', type(inner).__name__)}+blocks"
        self.compiled = is_compiled(inner)
        self._count = 0

    def _flip(self, state, rng, temperature):
        accepted = False
        for _ in range(self.n_flips):
            accepted |= self.flips.step(state, rng, temperature).accepted
        return accepted

    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-np.inf):
        """As a compiled kernel's ``run``: one inner step per temperature and
        the block flips after every ``every`` of them."""
        temperatures = np.asarray(temperatures, dtype=np.float64)
        acc, best = 0, best_log_pi
        if best_labels is None:
            best_labels = state.partition.labels.copy()
        done = 0
        while done < temperatures.size:
            k = min(self.every - self._count, temperatures.size - done)
            a, b, _ = self.inner.run(state, rng, temperatures[done:done + k], best_labels, best)
            acc, best = acc + a, max(best, b)
            done += k
            self._count += k
            if self._count >= self.every:
                self._count = 0
                if self._flip(state, rng, float(temperatures[done - 1])) and state.log_pi > best:
                    best = state.log_pi
                    best_labels[:] = state.partition.labels
        return acc, best, best_labels

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        info = self.inner.step(state, rng, temperature)
        self._count += 1
        if self._count >= self.every:
            self._count = 0
            if self._flip(state, rng, temperature):
                return StepInfo(True, 0.0, 1, 0.0, "block")
        return info
