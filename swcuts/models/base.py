"""What every model shares: the per-chain state and scratch space."""

from __future__ import annotations

import numpy as np

from swcuts.models.partition import Partition

__all__ = ["ModelState", "Workspace", "SCORE_IMAGE", "SCORE_MIXTURE"]

#: First entry of the parameter vector a model's ``cluster_score()`` returns:
#: which cluster score the compiled tree-guided helpers evaluate
#: (:func:`swcuts.samplers.tree_guided.scores._score_any` reads the rest).
SCORE_IMAGE = 0.0
SCORE_MIXTURE = 1.0


class Workspace:
    """Scratch arrays for compiled graph searches, all zero between calls.

    Compiled functions that use them restore every entry they touch, so the
    arrays never need clearing (O(touched) instead of O(N) per call).
    """

    def __init__(self, n_vertices: int):
        self.mark_a = np.zeros(n_vertices, dtype=np.int8)
        self.mark_b = np.zeros(n_vertices, dtype=np.int8)
        self.mark_c = np.zeros(n_vertices, dtype=np.int8)
        self.stack = np.empty(n_vertices, dtype=np.int64)
        self.visited = np.empty(2 * n_vertices, dtype=np.int64)


class ModelState:
    """One chain's state: the partition plus the model's per-label caches.

    Models make states (``model.new_state(labels)``); kernels read and
    change them through the model (``delta``, ``apply``) or, in compiled
    code, through the arrays below. Every attribute is declared here (or in
    a model's subclass); a kernel keeps its scratch space in
    :meth:`workspace`, not in attributes of its own on the state.

    Attributes
    ----------
    partition : Partition
    stats : ndarray, shape (n_slots, D)
        Per-label sufficient statistics (model-specific layout).
    loglik : ndarray, shape (n_slots,)
        Cached per-label log-likelihood terms.
    log_pi : float
        log π of the current partition (unnormalised), kept up to date by
        :meth:`apply`.
    work : Workspace
    scratch : tuple of ndarray or None
        The model's own scratch arrays for ``delta`` and ``apply``.
    """

    def __init__(self, partition: Partition, stats, loglik, log_pi: float, scratch=None):
        self.partition = partition
        self.stats = stats
        self.loglik = loglik
        self.log_pi = float(log_pi)
        self.work = Workspace(partition.n_vertices)
        self.scratch = scratch
        self._workspaces = {}

    def store_label_stats(self, k, out_labels, out_stats, out_counts, loglik) -> None:
        """Write the statistics of the ``k`` labels a move changed into the
        caches: label ``out_labels[t]`` gets ``out_stats[t]`` and
        ``loglik(out_stats[t])``, or zeros when it is left empty
        (``out_counts[t] == 0``)."""
        for t in range(k):
            lab = int(out_labels[t])
            if out_counts[t] > 0:
                self.stats[lab] = out_stats[t]
                self.loglik[lab] = loglik(out_stats[t])
            else:
                self.stats[lab] = 0.0
                self.loglik[lab] = 0.0

    def workspace(self, kind, *args):
        """The scratch object ``kind(*args)`` of this chain, made on first use.

        Kernels keep their compiled scratch arrays here, one object per
        ``kind`` (kernels that use the same kind share it, as they share
        the chain). It is made anew when ``args`` (sizes) differ from those
        it was made with.

        Parameters
        ----------
        kind : type
            The workspace class, e.g. :class:`~swcuts.samplers.compiled.CompiledWorkspace`.
        *args
            Its constructor's arguments.

        Returns
        -------
        object
            An instance of ``kind``.
        """
        made = self._workspaces.get(kind)
        if made is None or made[0] != args:
            made = self._workspaces[kind] = (args, kind(*args))
        return made[1]

    @property
    def labels(self) -> np.ndarray:
        return self.partition.labels

    @property
    def energy(self) -> float:
        """−log π of the current state."""
        return -self.log_pi
