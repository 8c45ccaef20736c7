"""Triadic split-merge of van Rossum et al. (seed 000), on any partition model.

The dyadic split-merge sampler moves between one and two labels; the
triadic sampler also moves between two and three, so that a label can be
assembled from parts of two others in one step. One update draws an
ordered anchor triple (i, j, k), picks the move type from the labels of
the anchors (``split12``, ``merge21``, ``split23``, ``merge32`` or a
no-op), re-allocates the items of the labels touched one at a time by
sequential allocation (SAMS), replays the reverse allocation for its
probability, and accepts by Metropolis-Hastings.

The moves, the acceptance ratio and why it is exact (detailed balance for
every anchor triple and allocation order, the no-op class, irreducibility)
and the cost of an update are derived in ``docs/algorithms/triadic.md``.

Modules
-------
:mod:`.kernel`
    :class:`Triadic` (the kernel) and :class:`Proposal` (a proposal applied
    to the live state, for tests that enumerate the transition law).
:mod:`.allocation`
    The sequential allocation compiled with numba for mixture models.
:mod:`.run`
    Whole runs of updates compiled (:meth:`Triadic.run`), the moves of
    :meth:`Triadic.step` bit for bit.
"""

from swcuts.samplers.triadic.allocation import _allocate_mixture  # noqa: F401
from swcuts.samplers.triadic.kernel import MOVES, Proposal, Triadic

__all__ = ["Triadic", "Proposal", "MOVES"]
