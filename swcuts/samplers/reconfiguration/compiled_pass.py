"""The reconfiguration pass compiled, for mixture models.

:func:`_arm_pass` runs the whole proposal procedure of :class:`~.passes._Pass`
in numba on a mixture state (every outside item visited, or the kNN
frontier): the same candidates in the same order, the same uniforms (one
per choice, in order) and the same forced replay, so the compiled and the
generic pass make the same moves from the same random numbers (the tests
check it move for move). :class:`_CompiledPass` wraps it behind the
interface of ``_Pass`` (:meth:`run`, :meth:`undo`, :meth:`moved_items`).
See ``docs/algorithms/reconfiguration.md`` (steps 5-6 and "Cost").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only
from swcuts.models.mixture.moves import _sorted_insert
from swcuts.samplers.reconfiguration.compiled_moves import (
    _C_BI, _C_BJ, _C_EVALS, _C_NITEMS, _C_NLOG, _C_NUSED, _C_POS, _F_LI, _F_LJ, _F_ZI, _F_ZJ,
    _FAIL, _choose_c, _logged_move, _set_join, _set_leave, _set_stats, _stack_positions, _undo_log)
from swcuts.samplers.reconfiguration.passes import _NEG_INF, _PassArgs, _RngChooser


@njit(cache=True, inline="always")
def _pin(mapping, key, value):
    """A one-to-one rule between labels: ``mapping[key]`` (−1: unset)
    takes ``value`` if unset; False when it already holds another value."""
    if mapping[key] < 0:
        mapping[key] = value
        return True
    return mapping[key] == value


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


@compiled_only
def _update_set_c(R, forced, labels, size, free_stack, n_free, lstats, lloglik, vstats, kind,
                  params, prior, mode, u, script, branch, inv_t, cnt, fl, joined, used,
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
        d_leave, _ = _set_leave(t0, nR, own, size, lstats, lloglik, kind, params, prior, t1)
        logw[0] = 0.0
        for t in range(1, nc):
            d_join, _ = _set_join(t0, nR, cands[t], size, lstats, lloglik, kind, params,
                                  prior, t2)
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
            if not _pin(placed, Lz, labels[R[0]]):
                return False
    return True


@compiled_only
def _d_phase(cells, cell_ptr, rest, forced, st, mp, ch, cnt, fl, log, joined, used, parked, fo,
             work, adjacent, indptr, indices):
    """Phases 1 and 2a of :meth:`_Pass.run`: the other cells whole (a cell's
    parked label becomes an ordinary label once it is updated), then every
    other item of D alone. False when the forced target is out of reach."""
    labels, size, free_stack, n_free, lstats, lloglik, vstats, _ = st
    kind, params, prior = mp
    mode, u, script, branch, inv_t = ch
    cands, logw, t0, t1, t2 = work
    target, target_size, fx, placed, stay, cntc, size_start = fo
    zi, zj, li, lj = fx[_F_ZI], fx[_F_ZJ], fx[_F_LI], fx[_F_LJ]
    mark = np.zeros(size.size, np.bool_)
    for c in range(cell_ptr.size - 1):
        cell = cells[cell_ptr[c]:cell_ptr[c + 1]]
        own = labels[cell[0]]
        if not _update_set_c(cell, forced, labels, size, free_stack, n_free, lstats, lloglik,
                             vstats, kind, params, prior, mode, u, script, branch, inv_t, cnt,
                             fl, joined, used, target, zi, zj, li, lj, placed, stay, cntc,
                             size_start, cands, logw, t0, t1, t2, st, mp, log, parked, adjacent,
                             indptr, indices, mark):
            return False
        parked[own] = False
        if size[own] > 0:  # the cell stayed: its label is an ordinary label now
            cnt[_C_NUSED] = _sorted_insert(used, cnt[_C_NUSED], own)
    for t in range(rest.size):
        if not _update_set_c(rest[t:t + 1], forced, labels, size, free_stack, n_free, lstats,
                             lloglik, vstats, kind, params, prior, mode, u, script, branch,
                             inv_t, cnt, fl, joined, used, target, zi, zj, li, lj, placed, stay,
                             cntc, size_start, cands, logw, t0, t1, t2, st, mp, log, parked,
                             adjacent, indptr, indices, mark):
            return False
    return True


@compiled_only
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
        if not _pin(stay, xt, xs):
            return False
    return True


@compiled_only
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
            if not (_pin(fz, f, z) and _pin(zf, z, f)):
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


@compiled_only
def _outside_one(x, forced, target, zi, zj, labels, size, lstats, lloglik, vstats, kind, params,
                 prior, joined, mode, u, script, branch, inv_t, cnt, fl, logw, t0, t1, t2, st,
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
    n_one = np.int64(1)  # not Literal[int](1): the same compile as the set moves' calls
    d_leave, _ = _set_leave(t0, n_one, own, size, lstats, lloglik, kind, params, prior, t1)
    logw[0] = 0.0
    d_join, _ = _set_join(t0, n_one, bi, size, lstats, lloglik, kind, params, prior, t2)
    logw[1] = (d_leave + d_join) * inv_t
    if nc == 3:
        d_join, _ = _set_join(t0, n_one, bj, size, lstats, lloglik, kind, params, prior, t2)
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


@compiled_only
def _outside_phase(D, P, a_inv, b_shift, forced, target, zi, zj, labels, size, lstats, lloglik,
                   vstats, kind, params, prior, joined, mode, u, script, branch, inv_t, cnt,
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
                            kind, params, prior, joined, mode, u, script, branch, inv_t, cnt,
                            fl, logw, t0, t1, t2, st, mp, log, used, parked, one):
            return False
    return True


@compiled_only
def _push_neighbours(v, indptr, indices, inD, seen, queue, tail):
    """Append the unseen outside neighbours of v to ``queue``; new tail."""
    for p in range(indptr[v], indptr[v + 1]):
        w = indices[p]
        if not inD[w] and not seen[w]:
            seen[w] = True
            queue[tail] = w
            tail += 1
    return tail


@compiled_only
def _sort_by_key(queue, lo, hi, P, a, b):
    """Sort ``queue[lo:hi]`` by the item order key ((x + b) a) mod P."""
    if hi - lo < 2:
        return
    seg = queue[lo:hi].copy()
    keys = ((seg + b) * a) % P
    queue[lo:hi] = seg[np.argsort(keys)]


@compiled_only
def _frontier_phase(D, indptr, indices, P, a, b, forced, target, zi, zj, labels, size, lstats,
                    lloglik, vstats, kind, params, prior, joined, mode, u, script, branch,
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
                            kind, params, prior, joined, mode, u, script, branch, inv_t, cnt,
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
    kind, params, prior = mp
    fx = fo[2]
    if frontier:
        ok = _frontier_phase(D, f_indptr, f_indices, P, a, b_shift, forced, fo[0], fx[_F_ZI],
                             fx[_F_ZJ], labels, size, lstats, lloglik, vstats, kind, params,
                             prior, joined, mode, u, script, branch, inv_t, cnt, fl, work[1],
                             work[2], work[3], work[4], st, mp, log, used, parked)
    else:
        ok = _outside_phase(D, P, a_inv, b_shift, forced, fo[0], fx[_F_ZI], fx[_F_ZJ], labels,
                            size, lstats, lloglik, vstats, kind, params, prior, joined, mode,
                            u, script, branch, inv_t, cnt, fl, work[1], work[2], work[3], work[4],
                            st, mp, log, used, parked)
    if not ok:
        return False
    if forced:
        return _final_check_c(changed, log, cnt[_C_NITEMS], labels, size, fo[0], fo[1])
    return True


_NO_U = np.zeros(0)
_NO_INT = np.zeros(0, np.int64)


class _CompiledPass(_PassArgs):
    """:class:`_Pass` run by the compiled :func:`_arm_pass` (mixture models
    with a built-in likelihood, every outside item visited). Same
    interface: :meth:`run`, :meth:`undo`, :meth:`moved_items`.

    The chooser is a :class:`_RngChooser` (its uniforms of the pass), or
    offers ``script()`` (the branch indices to follow, extended with zeros)
    and ``record(branch, log_p)`` (the branching factors met and the log
    probability of the path): the enumeration tests' scripted chooser.
    """

    def __init__(self, *args, **kwargs):
        _PassArgs.__init__(self, *args, **kwargs)
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
