"""Multiple flipping (Barbu & Zhu, section 4.2, Prop. 8).

One step samples every edge of the graph (the SWC-1 clustering), keeps
each connected component with probability p = min(1, n_flip / #components)
— a choice that depends on the clustering only, so it is the same from X
and X' — and relabels the kept components at once, each by an independent
label proposal, accepted with eq. 51 (see :mod:`.flips`, which also says
why the move is defined on labelings with the partition's label slots).
With ``n_flip="all"`` every component is relabelled: one step can then go
from any partition to any other (eq. 52), but at low temperature almost
every such proposal is rejected.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.samplers.common import sample_components
from swcuts.samplers.flips import FlipKernel, finish_best, flip_set, model_params, record_move

__all__ = ["Multiflip"]

_WHOLE = np.array([-1, 2**62, -1, 2**62], dtype=np.int64)


@njit(cache=True)
def run_multiflip(temps, n_flip, f_state, best_labels, labels, size, free_stack, n_free, lstats,
                  lloglik, regions, vsrc, indptr, indices, edge_ids, edges, q, log1mq,
                  area, bw, use_family, n_channels, n_bins, fp, vcoord, win, Sbuf, ptr, sid, inside,
                  inside_list, acc_q, acc_n, adj, new_lab, old_lab, in_r, mark, visited, roots, sR, tmp, pws):
    """Run ``temps.size`` multiple-flipping steps; returns the accepted count.

    ``n_flip`` <= 0 flips every component. ``f_state`` = [log π, best log π];
    ``best_labels`` receives the best labelling (copied only when the chain
    leaves it for a worse state, so that a descent costs no copies).
    """
    n = labels.size
    accepted = 0
    pending = False
    for step in range(temps.size):
        comp, n_comp = sample_components(labels, edges, q)
        p = 1.0 if n_flip <= 0 else min(1.0, n_flip / n_comp)
        pick = -np.ones(n_comp, np.int64)
        n_s = np.int64(0)  # not a literal 0: numba would compile flip_set for it too
        for c in range(n_comp):
            if np.random.random() < p:
                pick[c] = n_s
                n_s += 1
        if n_s == 0:
            continue
        ptr[: n_s + 1] = 0
        for v in range(n):
            s = pick[comp[v]]
            if s >= 0:
                ptr[s + 1] += 1
        for s in range(n_s):
            ptr[s + 1] += ptr[s]
        fill = ptr[:n_s].copy()
        for v in range(n):
            s = pick[comp[v]]
            if s >= 0:
                Sbuf[fill[s]] = v
                fill[s] += 1
                sid[v] = s
        d = flip_set(n_s, ptr, Sbuf, sid, temps[step], labels, size, free_stack, n_free, lstats,
                     lloglik, regions, vsrc, indptr, indices, edge_ids, q, log1mq,
                     area, bw, use_family, n_channels, n_bins, fp, vcoord, vcoord, win, inside,
                     inside_list, acc_q, acc_n, adj, new_lab, old_lab, in_r, mark, visited, roots,
                     sR, tmp, pws)
        if d != d:  # rejected
            continue
        accepted += 1
        pending = record_move(d, pending, f_state, best_labels, labels, n_s, ptr, Sbuf, old_lab)
    finish_best(pending, best_labels, labels)
    return accepted


class Multiflip(FlipKernel):
    """Multiple-flipping SW-cut kernel (Prop. 8) for the image posterior.

    Parameters
    ----------
    model, q, proposal :
        As for :class:`~swcuts.samplers.flips.FlipKernel`.
    n_flip : float or "all"
        Expected number of components relabelled per step.
    """

    name = "multiflip"

    def __init__(self, model, q, n_flip=2.0, proposal=None):
        super().__init__(model, q, proposal)
        if n_flip == "all":
            n_flip = 0.0
        elif isinstance(n_flip, bool) or not isinstance(n_flip, (int, float)) or not n_flip > 0:
            raise ValueError(f"n_flip must be a positive number or 'all', got {n_flip!r}")
        self.n_flip = float(n_flip)
        self._vcoord = np.zeros(self.graph.n_vertices, np.int64)

    def _run_steps(self, state, ws, temps, f_state, best_labels):
        part, m, g = state.partition, self.model, self.graph
        return run_multiflip(temps, self.n_flip, f_state,
                             best_labels, part.labels, part.size, part.free_stack, part.n_free,
                             state.stats, state.loglik, ws.regions, self.vsrc,
                             g.indptr, g.indices, g.edge_ids, g.edges, self.q, self.log1mq, m.area,
                             m.boundary_csr, m.use_family, m.n_channels, m.n_bins,
                             model_params(m, self.proposal), self._vcoord, _WHOLE, ws.Sbuf, ws.ptr,
                             ws.sid, ws.inside, ws.inside_list, ws.acc_q, ws.acc_n, ws.adj,
                             ws.new_lab, ws.old_lab, ws.in_r, ws.mark, ws.visited, ws.roots, ws.sR,
                             ws.tmp, ws.pws)
