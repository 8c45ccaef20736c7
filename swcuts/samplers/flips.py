"""Compiled moves that relabel several SW components at once (Prop. 8).

Shared by :mod:`.multiflip` (all of the graph) and :mod:`.multigrid`
(attention windows). A step has a set S of connected components of the
on-edges, all inside the vertex set W being clustered (W = V, or a window
Λ); every component c in S draws a new label independently, and the move is
accepted with eq. 51:

    α = min{1, Π_{C(X→X')}(1-q) / Π_{C(X'→X)}(1-q)
              · Π_c q(X_c | c) / q(X'_c | c) · [π(X')/π(X)]^(1/T)},

where the cut sets run over edges with both ends in W (Prop. 9: edges
leaving the window are not clustered, so they do not enter the ratio).

Labels as names. Proposing a label for each of several components needs a
reverse proposal that is computable in X' as in X. swcuts runs these moves
on labelings with the N label slots of the partition as the label set,
with target π̃(x) = π(partition of x) / (N)_K, (N)_K = N!/(N-K)! the number
of labelings of a K-label partition; π̃ has marginal π over partitions, so a
π̃-invariant kernel on labelings is π-invariant on partitions (relabelling
symmetry). Each component's proposal depends only on the labels outside S,
which X and X' share, so q(· | c) is the same distribution in both states:

* a label used outside S and adjacent to c: ``adjacent * (floor + mean q)``
  over the edges from c to it;
* a label used outside S, not adjacent to c: ``far``;
* a slot not used outside S (|F| = N − K_out of them): ``fresh / |F|`` each;

c's current label is left out and the rest renormalised (the reverse leaves
out c's label in X'), so two components that draw the same free slot merge, exactly as the
labeling says. The target ratio gains the factor (N)_K / (N)_K'.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts.models.image_kernels import (
    N_MODEL_PARAMS, REG_AREA, REG_RID, join_delta, leave_regions, load_regions, move_regions,
    relabel, relabel_delta_bounded, store_regions)
from swcuts._numba.primitives import gather_marked, mh_accept, mh_threshold
from swcuts.samplers.common import (RelabelScratch, StepInfo, TargetProposal, edge_arrays,
                                    target_weight)

# fp layout of the proposal weights (after the model's own entries)
FW_ADJ, FW_FLOOR, FW_FRESH, FW_FAR = range(N_MODEL_PARAMS, N_MODEL_PARAMS + 4)


@njit(cache=True)
def log_falling(n_slots, k):
    """log (N)_k = log N!/(N-k)!."""
    s = 0.0
    for i in range(k):
        s += math.log(n_slots - i)
    return s


@njit(cache=True)
def _label_weight(lab, inside, size, acc_q, acc_n, n_f, fp):
    """Proposal weight of ``lab`` for the component whose cut sums are in acc_*."""
    if inside[lab] or size[lab] == 0:
        return fp[FW_FRESH] / n_f
    if acc_n[lab] > 0:
        return target_weight(lab, acc_q, acc_n, fp[FW_ADJ], fp[FW_FLOOR])
    return fp[FW_FAR]


@njit(cache=True)
def propose_labels(n_comp, ptr, Sbuf, sid, labels, size, free_stack, n_free, indptr, indices,
                   edge_ids, q, fp, inside, inside_list, acc_q, acc_n, adj, new_lab):
    """Draw a label for every component of S; returns Σ_c log q(x_c)/q(x'_c).

    ``sid[v]`` is the index in S of v's component (−1 outside S); ``inside``
    must be zero on entry (it is zero again on return).
    """
    n_slots = size.size
    # Labels used only inside S, and K_out = labels used outside S.
    n_in = 0
    for t in range(ptr[n_comp]):
        lab = labels[Sbuf[t]]
        if acc_n[lab] == 0:
            adj[n_in] = lab
            n_in += 1
        acc_n[lab] += 1
    for t in range(n_in):
        lab = adj[t]
        if acc_n[lab] == size[lab]:
            inside[lab] = 1
        acc_n[lab] = 0
    n_inside = gather_marked(adj, n_in, inside, inside_list)
    k_out = (n_slots - n_free) - n_inside
    n_f = n_slots - k_out
    log_ratio = 0.0
    for c in range(n_comp):
        n_adj = 0
        for t in range(ptr[c], ptr[c + 1]):
            v = Sbuf[t]
            for p in range(indptr[v], indptr[v + 1]):
                u = indices[p]
                if sid[u] >= 0:
                    continue
                lab = labels[u]
                if acc_n[lab] == 0:
                    adj[n_adj] = lab
                    n_adj += 1
                acc_q[lab] += q[edge_ids[p]]
                acc_n[lab] += 1
        z = (k_out - n_adj) * fp[FW_FAR]
        if n_f > 0:
            z += fp[FW_FRESH]
        for t in range(n_adj):
            lab = adj[t]
            z += target_weight(lab, acc_q, acc_n, fp[FW_ADJ], fp[FW_FLOOR])
        cur = labels[Sbuf[ptr[c]]]
        # The current label is never proposed: the proposal over the others
        # is w(ℓ') / (z - w(x_c)), and its reverse w(x_c) / (z - w(x'_c)).
        w_cur = _label_weight(cur, inside, size, acc_q, acc_n, n_f, fp)
        if z - w_cur <= 1e-12 * z:  # nowhere else to go
            new_lab[c] = cur
            for t in range(n_adj):
                acc_q[adj[t]] = 0.0
                acc_n[adj[t]] = 0
            continue
        cur_far = not inside[cur] and acc_n[cur] == 0
        cur_f = inside[cur] == 1
        u = np.random.random() * (z - w_cur)
        new = -1
        for t in range(n_adj):
            lab = adj[t]
            if lab == cur:
                continue
            w = target_weight(lab, acc_q, acc_n, fp[FW_ADJ], fp[FW_FLOOR])
            if u < w:
                new = lab
                break
            u -= w
        if new < 0:
            n_far = k_out - n_adj - (1 if cur_far else 0)
            n_fe = n_f - (1 if cur_f else 0)
            if n_far > 0 and (u < n_far * fp[FW_FAR] or n_fe == 0):
                new = _pick_far(free_stack, n_free, inside, acc_n, n_far, cur)
            else:
                j = int(np.random.random() * n_fe)
                if j < n_free:
                    # A uniform free slot, moved to the top of the free part
                    # so that relabelling finds it at once.
                    new = free_stack[j]
                    free_stack[j] = free_stack[n_free - 1]
                    free_stack[n_free - 1] = new
                else:
                    j -= n_free
                    for t in range(n_inside):
                        if inside_list[t] == cur:
                            continue
                        if j == 0:
                            new = inside_list[t]
                            break
                        j -= 1
        w_new = _label_weight(new, inside, size, acc_q, acc_n, n_f, fp)
        log_ratio += (math.log(w_cur) - math.log(z - w_new)) - (math.log(w_new) - math.log(z - w_cur))
        new_lab[c] = new
        for t in range(n_adj):
            lab = adj[t]
            acc_q[lab] = 0.0
            acc_n[lab] = 0
    for t in range(n_inside):
        inside[inside_list[t]] = 0
    return log_ratio


@njit(cache=True)
def _pick_far(free_stack, n_free, inside, acc_n, n_far, exclude):
    """A uniform label among the used labels that are neither inside S nor
    adjacent to the component nor ``exclude`` (``n_far`` of them)."""
    n_slots = free_stack.size
    n_used = n_slots - n_free
    for _ in range(32):  # rejection: uniform over the used labels, keep eligible ones
        lab = free_stack[n_free + int(np.random.random() * n_used)]
        if not inside[lab] and acc_n[lab] == 0 and lab != exclude:
            return lab
    pick = int(np.random.random() * n_far)
    for t in range(n_free, n_slots):
        lab = free_stack[t]
        if not inside[lab] and acc_n[lab] == 0 and lab != exclude:
            if pick == 0:
                return lab
            pick -= 1
    return -1


@njit(cache=True)
def cut_log_ratio(n_comp, ptr, Sbuf, sid, labels, new_lab, indptr, indices, edge_ids, log1mq,
                  vy, vx, win):
    """Σ log(1-q) over C(X→X') minus over C(X'→X), edges with both ends in
    the window ``win`` = (y0, y1, x0, x1) of vertex coordinates."""
    s = 0.0
    for c in range(n_comp):
        lc = labels[Sbuf[ptr[c]]]
        nc = new_lab[c]
        for t in range(ptr[c], ptr[c + 1]):
            v = Sbuf[t]
            for p in range(indptr[v], indptr[v + 1]):
                u = indices[p]
                su = sid[u]
                if su == c or (su >= 0 and su < c):
                    continue  # inside c, or counted from the other side
                if su < 0 and not (win[0] <= vy[u] < win[1] and win[2] <= vx[u] < win[3]):
                    continue
                lu = labels[u]
                nu = lu if su < 0 else new_lab[su]
                before = lc == lu
                after = nc == nu
                if after and not before:
                    s += log1mq[edge_ids[p]]
                elif before and not after:
                    s -= log1mq[edge_ids[p]]
    return s


@njit(cache=True)
def keep_best(best_labels, labels, n_comp, ptr, Sbuf, old_lab):
    """Copy the state before the accepted move of S into ``best_labels``."""
    finish_best(True, best_labels, labels)
    for c in range(n_comp):
        for t in range(ptr[c], ptr[c + 1]):
            best_labels[Sbuf[t]] = old_lab[c]


@njit(cache=True)
def record_move(d, pending, f_state, best_labels, labels, n_comp, ptr, Sbuf, old_lab):
    """Book an accepted move of S (Δ log π ``d``) in ``f_state`` = [log π,
    best log π]. The best labelling is copied to ``best_labels`` only when
    the chain leaves it for a worse state (``pending``: the current state
    is the best and not yet copied), so that a descent costs no copies;
    after the run, copy the labels if still pending. Returns ``pending``."""
    if pending and d < 0.0:
        keep_best(best_labels, labels, n_comp, ptr, Sbuf, old_lab)
        pending = False
    f_state[0] += d
    if f_state[0] > f_state[1] + 1e-9:
        f_state[1] = f_state[0]
        pending = True
    return pending


@njit(cache=True, inline="always")
def finish_best(pending, best_labels, labels):
    """End of a run booked with :func:`record_move`: copy the labels to
    ``best_labels`` if the current state is the best and not yet copied."""
    if pending:
        best_labels[:] = labels


@njit(cache=True)
def flip_set(n_comp, ptr, Sbuf, sid, T, labels, size, free_stack, n_free, lstats, lloglik,
             regions, vsrc, indptr, indices, edge_ids, q, log1mq, area, bw,
             use_family, n_channels, n_bins, fp, vy, vx, win, inside, inside_list, acc_q, acc_n,
             adj, new_lab, old_lab, in_r, mark, visited, roots, sR, tmp, pws):
    """One multiple-flipping move of the components of S (eq. 51).

    Returns Δ log π if accepted, NaN if rejected (the state is then as before).
    ``sid`` marks S on entry and is reset to −1 on return. ``vsrc`` holds
    the vertex statistics (``model.vsrc``, see :mod:`swcuts.models.vertex_stats`),
    ``regions`` the region index (:func:`load_regions`).
    """
    comp_root = regions[REG_RID]
    comp_area = regions[REG_AREA]
    n_slots = size.size
    log_prop = propose_labels(n_comp, ptr, Sbuf, sid, labels, size, free_stack, n_free[0],
                              indptr, indices, edge_ids, q, fp, inside, inside_list, acc_q, acc_n,
                              adj, new_lab)
    cut = cut_log_ratio(n_comp, ptr, Sbuf, sid, labels, new_lab, indptr, indices, edge_ids,
                        log1mq, vy, vx, win)
    for t in range(ptr[n_comp]):
        sid[Sbuf[t]] = -1
    k_before = n_slots - n_free[0]
    if n_comp == 1:
        # One component: decide before touching the state, with the MH
        # uniform drawn first and an upper bound that skips the search of
        # C \ R whenever it already rejects (same decision as the exact ratio).
        n_r = ptr[1]
        R = Sbuf[:n_r]
        ell = labels[R[0]]
        new = new_lab[0]
        old_lab[0] = ell
        if new == ell:
            return np.nan
        k_after = k_before + (1 if size[new] == 0 else 0) - (1 if size[ell] == n_r else 0)
        rest = log_falling(n_slots, k_before) - log_falling(n_slots, k_after) + log_prop + cut
        threshold = mh_threshold(T, rest)
        d, ll_rest, ll_new = relabel_delta_bounded(
            R, n_r, ell, new, threshold, labels, size, lstats, lloglik, comp_root, comp_area, vsrc,
            indptr, indices, area, bw, use_family, n_channels, n_bins, fp, in_r, mark, roots,
            sR, tmp, pws)
        if d != d:
            return np.nan
        move_regions(R, n_r, ell, new, labels, size, free_stack, n_free, lstats, lloglik, sR,
                     ll_rest, ll_new, regions, indptr, indices, area, in_r, pws, visited)
        return d
    d = 0.0
    n_moved = 0
    for c in range(n_comp):
        R = Sbuf[ptr[c]:ptr[c + 1]]
        n_r = ptr[c + 1] - ptr[c]
        ell = labels[R[0]]
        old_lab[c] = ell
        if new_lab[c] == ell:
            continue
        dc, ll_rest, ll_new, r_area, c_area = join_delta(
            R, n_r, ell, new_lab[c], labels, size, lstats, lloglik, comp_root, comp_area, vsrc,
            indptr, indices, area, bw, use_family, n_channels, n_bins, fp, in_r, mark, roots,
            sR, tmp)
        dc += leave_regions(R, n_r, ell, labels, indptr, indices, area, r_area, c_area, fp, in_r,
                            pws)
        move_regions(R, n_r, ell, new_lab[c], labels, size, free_stack, n_free, lstats, lloglik,
                     sR, ll_rest, ll_new, regions, indptr, indices, area, in_r, pws, visited)
        d += dc
        n_moved += 1
    if n_moved == 0:
        return np.nan
    k_after = n_slots - n_free[0]
    log_alpha = (d / T + log_falling(n_slots, k_before) - log_falling(n_slots, k_after)
                 + log_prop + cut)
    if mh_accept(log_alpha):
        return d
    # Rejected: undo the moves in reverse order, which restores every cache.
    for c in range(n_comp - 1, -1, -1):
        if new_lab[c] == old_lab[c]:
            continue
        R = Sbuf[ptr[c]:ptr[c + 1]]
        relabel(R, ptr[c + 1] - ptr[c], new_lab[c], old_lab[c], labels, size, free_stack, n_free,
                 lstats, lloglik, regions, vsrc, indptr, indices, area, use_family, n_channels,
                 n_bins, fp, in_r, pws, visited, sR, tmp)
    return np.nan


class FlipWorkspace(RelabelScratch):
    """Scratch arrays of :func:`flip_set` (restored between calls)."""

    def __init__(self, n_vertices, n_slots, n_stats):
        super().__init__(n_vertices, n_slots, n_stats)
        n = n_vertices
        self.Sbuf = np.empty(n, np.int64)
        self.ptr = np.zeros(n + 1, np.int64)
        self.sid = -np.ones(n, np.int64)
        self.inside = np.zeros(n_slots, np.int8)
        self.inside_list = np.empty(n_slots, np.int64)
        self.adj = np.empty(max(n_slots, n), np.int64)
        self.new_lab = np.empty(n, np.int64)
        self.old_lab = np.empty(n, np.int64)


class FlipKernel:
    """What the kernels built on :func:`flip_set` share (:class:`.Multiflip`,
    :class:`.Multigrid`): the model check, the edge arrays, the label
    proposal, and :meth:`run` around the subclass's compiled runner
    :meth:`_run_steps`.

    Parameters
    ----------
    model : ImageModel
        A model with the compiled fast path (``model.compiled``).
    q : (E,) array
        Edge probabilities.
    proposal : TargetProposal, optional
        Weights of the label proposal (adjacent, floor, fresh, far).
    """

    name = "flips"
    compiled = True

    def __init__(self, model, q, proposal=None):
        if not getattr(model, "compiled", False):
            raise ValueError(f"{self.name} runs on the image posterior; {type(model).__name__} "
                             "has no compiled path")
        self.model = model
        self.graph = model.graph
        self.q, self.log1mq = edge_arrays(self.graph, q)
        self.proposal = proposal or TargetProposal()
        self.vsrc = model.vsrc

    def _run_steps(self, state, ws, temps, f_state, best_labels):
        """Run the compiled steps (one per temperature); returns the number accepted."""
        raise NotImplementedError

    def run(self, state, rng, temperatures, best_labels=None, best_log_pi=-np.inf):
        """Run one step per temperature; returns (accepted, best log π, best labels)."""
        part = state.partition
        ws = state.workspace(FlipWorkspace, part.n_vertices, part.size.size, self.model.n_stats)
        if best_labels is None:
            best_labels = part.labels.copy()
        f_state = np.array([state.log_pi, max(state.log_pi, best_log_pi)])
        temps = np.ascontiguousarray(temperatures, dtype=np.float64)
        load_regions(state.comp_root, state.comp_area, ws.regions)
        acc = self._run_steps(state, ws, temps, f_state, best_labels)
        if acc or temps.size == 0:
            store_regions(ws.regions, state.comp_root, state.comp_area)
        state.log_pi = float(f_state[0])
        return int(acc), float(f_state[1]), best_labels

    def step(self, state, rng, temperature=1.0) -> StepInfo:
        """One step at ``temperature``."""
        before = state.log_pi
        acc = self.run(state, rng, np.array([temperature]))[0]
        return StepInfo(bool(acc), 0.0, int(acc), state.log_pi - before)


def model_params(model, proposal):
    """The fp vector of :func:`flip_set`: model weights, then proposal weights."""
    fp = model.kernel_params(4)
    fp[FW_ADJ], fp[FW_FLOOR] = proposal.adjacent, proposal.floor
    fp[FW_FRESH], fp[FW_FAR] = proposal.fresh, proposal.far
    return fp


def vertex_coordinates(graph):
    """Row and column of every vertex (its pixel for a pixel graph, else the
    rounded centroid of its pixels) and the vertex of every pixel."""
    h, w = graph.shape
    n = graph.n_vertices
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.pixel_ptr))
    pix2v = np.empty(h * w, np.int64)
    pix2v[graph.pixel_index] = owner
    ys, xs = np.divmod(graph.pixel_index, w)
    cnt = np.maximum(graph.pixel_count, 1)
    vy = np.rint(np.bincount(owner, weights=ys, minlength=n) / cnt).astype(np.int64)
    vx = np.rint(np.bincount(owner, weights=xs, minlength=n) / cnt).astype(np.int64)
    return vy, vx, pix2v
