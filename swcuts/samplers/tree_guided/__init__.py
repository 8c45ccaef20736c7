"""Tree-guided MCMC of Lee & Choi (seed 004), with an exact acceptance ratio.

Every label carries a binary tree over its items, built by greedy
agglomerative clustering with the dissimilarity log d(A, B) = s(A) + s(B)
- s(A ∪ B) of cluster scores; the trees propose which labels to merge and
where to split a label (global move), and a fixed tree over all items
chooses the sets that single-site Gibbs updates (local move). Trees are a
deterministic function of a label's vertex set, so the state is the
partition alone and the Metropolis-Hastings ratio is exact.

The dissimilarity, the trees, both moves, where the paper's ratio is not
exact and what is done instead, and the cost are derived in ``docs/algorithms/tree_guided.md``.

Modules
-------
:mod:`.kernel`
    :class:`TreeGuided`: options, caches, the global and local moves.
:mod:`.ratio`
    The exact proposal probabilities q(X* | X) of splits and merges.
:mod:`.trees`
    :class:`Tree`, per-set information, the kNN candidate graph.
:mod:`.scores`
    Cluster scores s(A) and log d between sets.
:mod:`.walks`
    StocInsert walks (drawn), their replays (root first, with an early
    stop) and the sums over a tree's split paths.
:mod:`.merged`
    The tree of a merged set contracted around the items the merge adds,
    for the reverse split of a merge without the merged set's whole tree.
:mod:`.pairs`
    Scores and merge probabilities between the labels, kept while the
    labels are unchanged.
:mod:`.rebuild`
    A label's induced tree rebuilt from its tree before a few items moved.
:mod:`.algorithms`
    Tree construction, and the helpers handed to the kernel (numba, or
    plain Python with a rebound score).
:mod:`.balanced`
    Balanced global trees (``tree_build="balanced"``: the greedy tree with
    its heavy paths rebalanced; ``"matching"``: joins by matching rounds).
"""

from swcuts.samplers.tree_guided.kernel import TreeGuided
from swcuts.samplers.tree_guided.trees import Tree

__all__ = ["TreeGuided", "Tree"]
