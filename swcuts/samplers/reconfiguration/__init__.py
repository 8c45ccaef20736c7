"""Adaptive reconfiguration moves of Herlau, Mørup, Schmidt & Teh (seed 001).

ARM runs S chains side by side and keeps a pooled history of their past
states; one move of a chain re-places the items of two labels (anchors i
and j), cell by cell and item by item, against a background φ drawn from
that history, and corrects the proposal exactly by Metropolis-Hastings
with a forced reverse sweep. sRM (:class:`SRM`) is the paper's simplified
move: single-item cells, no history.

The algorithm, its differences from the paper, why the graph restrictions
and the adaptive history keep it exact, and its cost are derived in
``docs/algorithms/reconfiguration.md``.

Modules
-------
:mod:`.kernel`
    :class:`Reconfiguration` and :class:`SRM`: options, φ (anchors, past
    states, item order), the MH move, the Gibbs scans, the chains.
:mod:`.history`
    :class:`History`, the bounded, thinned store of past states.
:mod:`.passes`
    The proposal procedure in Python (:class:`_Pass`, forward and forced),
    the item order and the random chooser.
:mod:`.compiled_moves`, :mod:`.compiled_pass`
    The same procedure compiled with numba for mixture models.
"""

from swcuts.samplers.reconfiguration.history import HISTORY_BYTES, History
from swcuts.samplers.reconfiguration.kernel import SRM, Reconfiguration
from swcuts.samplers.reconfiguration.passes import _Order, _Pass  # noqa: F401

__all__ = ["Reconfiguration", "SRM", "History"]
