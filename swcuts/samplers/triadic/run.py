"""Whole runs of triadic updates, compiled (the moves of :meth:`Triadic.step`, bit for bit).

As :mod:`swcuts.samplers.split_merge_run` does for split-merge: the same
numbers drawn from the caller's ``numpy.random.Generator`` in the same order
(anchors, the move type, ``rng.permutation`` of the allocated items, k's
place in a 3→2 replay, one uniform per allocated item, the MH uniform), the
same model functions called in the same order on the same arrays (the
model's set moves :func:`~swcuts.samplers.split_merge_run._move_delta` /
``_move_apply``; on a mixture the compiled allocation
:func:`~swcuts.samplers.triadic.allocation._allocate_mixture`, elsewhere the
generic allocation of :meth:`Triadic._allocate` through the set moves of
single items), and the member lists of the kernel's
:class:`~swcuts.models.partition.MemberIndex`, order included.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import compiled_only
from swcuts._numba.primitives import mh_decide
from swcuts.samplers.compiled import _book
from swcuts.samplers.run_lists import _members, _set_list, draw_pair, export_lists
from swcuts.samplers.split_merge_run import _move, _move_apply, _move_delta
from swcuts.samplers.triadic.allocation import _allocate_mixture, choose_target

__all__ = ["run_triadic", "SPLIT12", "MERGE21", "SPLIT23", "MERGE32", "NOOP"]

#: Move codes, in the order of :data:`~swcuts.samplers.triadic.MOVES` (then the no-op).
SPLIT12, MERGE21, SPLIT23, MERGE32, NOOP = range(5)


@compiled_only
def _move_set(img, mix, f_state, labels, size, free_stack, n_free, R, label, ev):
    """:meth:`Triadic._move_set`: relabel R one source label at a time
    (ascending), skipping items already on ``label``."""
    if R.size == 0:
        return
    same = True
    for t in range(1, R.size):
        if labels[R[t]] != labels[R[0]]:
            same = False
            break
    if same:
        if labels[R[0]] != label:
            _move(img, mix, f_state, labels, size, free_stack, n_free, R, label, ev)
        return
    src = np.empty(R.size, np.int64)
    for t in range(R.size):
        src[t] = labels[R[t]]
    labs = np.unique(src)
    Rl = np.empty(R.size, np.int64)
    for lab in labs:
        if lab == label:
            continue
        n = 0
        for t in range(R.size):
            if src[t] == lab:
                Rl[n] = R[t]
                n += 1
        _move(img, mix, f_state, labels, size, free_stack, n_free, Rl[:n], label, ev)


@compiled_only
def _hold(img, mix, f_state, labels, size, free_stack, n_free, items, targets, ev):
    """:meth:`Triadic._hold`: ``items`` to a fresh label, or (every slot
    used) to the smallest of their labels that is not a target (no literal
    arguments: one signature per model kind)."""
    if items.size == 0:
        return
    if n_free[0] > 0:
        hold = free_stack[n_free[0] - 1]
    else:
        hold = -1
        for t in range(items.size):
            lab = labels[items[t]]
            spare = True
            for g in range(targets.size):
                if targets[g] == lab:
                    spare = False
            if spare and (hold < 0 or lab < hold):
                hold = lab
        if hold < 0:
            raise RuntimeError("no label can hold the items being allocated")
    _move_set(img, mix, f_state, labels, size, free_stack, n_free, items, hold, ev)


@compiled_only
def _allocate(img, mix, f_state, labels, size, free_stack, n_free, items, targets, T, u, forced,
              one, ev):
    """:meth:`Triadic._allocate`: the log probability of the choices (−inf
    when a drawn item has no possible target: stops there)."""
    nt = targets.size
    if mix is not None:
        (lstats, lloglik, vstats, kind, params, prior, mark, slot_of, out_labels, out_stats,
         out_counts) = mix
        log_q, dsum = _allocate_mixture(items, targets, 1.0 / T, u, forced, labels, size,
                                        free_stack, n_free, lstats, lloglik, vstats, kind,
                                        params, prior)
        ev[0] += items.size * nt
        f_state[0] += dsum
        return log_q
    is_forced = forced.size > 0
    d = np.empty(nt)
    x = np.empty(nt)
    log_q = 0.0
    for s in range(items.size):
        one[0] = items[s]
        for g in range(nt):
            d[g] = _move_delta(img, mix, labels, size, one, targets[g], ev)
            x[g] = d[g] / T
        g, lp = choose_target(x, forced[s] if is_forced else -1, u[s] if u.size else 0.0)
        if g < 0:
            return -math.inf
        log_q += lp
        _move_apply(img, mix, labels, size, free_stack, n_free, one, targets[g])
        f_state[0] += d[g]
    return log_q


@compiled_only
def _replay(img, mix, f_state, labels, size, free_stack, n_free, items, targets, T, no_u, one,
            ev):
    """:meth:`Triadic._replay`: log q of the allocation that puts ``items``
    back to their labels (``targets``), from the items held."""
    forced = np.empty(items.size, np.int64)
    for t in range(items.size):
        for g in range(targets.size):
            if labels[items[t]] == targets[g]:
                forced[t] = g
    _hold(img, mix, f_state, labels, size, free_stack, n_free, items, targets, ev)
    return _allocate(img, mix, f_state, labels, size, free_stack, n_free, items, targets, T, no_u,
                     forced, one, ev)


@compiled_only
def _third(i, j, n, indptr, indices, uniform, rng):
    """k of :meth:`Triadic._draw_anchors` given (i, j)."""
    if uniform:
        lo = min(i, j)
        hi = max(i, j)
        k = rng.integers(0, n - 2)
        k += 1 if k >= lo else 0
        k += 1 if k >= hi else 0
        return k
    nb = np.empty(indptr[i + 1] - indptr[i] + indptr[j + 1] - indptr[j], np.int64)
    m = 0
    for v in (i, j):
        for p in range(indptr[v], indptr[v + 1]):
            nb[m] = indices[p]
            m += 1
    cand = np.unique(nb)
    c = 0
    for t in range(cand.size):
        if cand[t] != i and cand[t] != j:
            cand[c] = cand[t]
            c += 1
    if c == 0:
        cand = np.arange(n)
        for t in range(n):
            if t != i and t != j:
                cand[c] = t
                c += 1
    return cand[rng.integers(0, c)]


@njit(cache=True, nogil=True, no_cfunc_wrapper=True)
def run_triadic(rng, temps, beta, log_r, uniform, edges, indptr, indices, counts, ev, f_state,
                best_labels, path, labels, size, free_stack, n_free, head, nxt, entry, bufs, img,
                mix):
    """``temps.size`` triadic updates (:meth:`Triadic.step` each, the same
    moves and random numbers) on an image-model state (``img``) or a mixture
    state (``mix``), arrays as for
    :func:`~swcuts.samplers.split_merge_run.run_split_merge`. ``log_r``:
    log r(X | X') / r(X' | X) per move code; ``counts`` (5, 2): [proposed,
    accepted] per move code; ``f_state`` = [log π, best log π, log α of the
    last update]. Returns the number of accepted updates."""
    n = labels.size
    C, A, U, orig = bufs[0], bufs[1], bufs[3], bufs[5]
    no_u = np.zeros(0)
    no_forced = np.zeros(0, np.int64)
    one = np.zeros(1, np.int64)
    tg = np.zeros(3, np.int64)
    accepted = 0
    for step in range(temps.size):
        T = temps[step]
        f_state[2] = -np.inf
        move = NOOP
        i = 0
        j = 0
        k = 0
        ok = False
        if n >= 3:
            ok, i, j = draw_pair(rng, uniform, n, edges)
        if ok:
            k = _third(i, j, n, indptr, indices, uniform, rng)
            ci = labels[i]
            cj = labels[j]
            ck = labels[k]
            if ci == cj:
                if ck == ci:
                    move = SPLIT12
            elif ck == ci or ck == cj:
                move = MERGE21 if rng.random() < beta else SPLIT23
            else:
                move = MERGE32
        if move == NOOP:
            counts[NOOP, 0] += 1
        else:
            # U: the members of the anchors' labels, label by label.
            nu = _members(ci, labels, free_stack, n_free, head, nxt, entry, U)
            nlab = 1
            tg[0] = ci
            if cj != ci:
                A_n = _members(cj, labels, free_stack, n_free, head, nxt, entry, A)
                for t in range(A_n):
                    U[nu + t] = A[t]
                nu += A_n
                tg[nlab] = cj
                nlab += 1
            if ck != ci and ck != cj:
                A_n = _members(ck, labels, free_stack, n_free, head, nxt, entry, A)
                for t in range(A_n):
                    U[nu + t] = A[t]
                nu += A_n
                tg[nlab] = ck
                nlab += 1
            m = 0
            for t in range(nu):
                v = U[t]
                if v != i and v != j and (move != SPLIT23 or v != k):
                    A[m] = v
                    m += 1
            alloc = A[:m].copy()
            alloc.sort()
            order = rng.permutation(alloc)
            kpos = rng.integers(0, order.size + 1) if move == SPLIT23 else 0
            counts[move, 0] += 1
            # propose
            for t in range(nu):
                orig[t] = labels[U[t]]
            log_pi0 = f_state[0]
            u = rng.random(order.size) if move != MERGE21 else no_u
            if move == SPLIT12:
                _hold(img, mix, f_state, labels, size, free_stack, n_free, order, tg[:0], ev)
                li = free_stack[n_free[0] - 1]
                one[0] = i
                _move_set(img, mix, f_state, labels, size, free_stack, n_free, one, li, ev)
                t2 = np.array([li, ci])
                log_q_fwd = _allocate(img, mix, f_state, labels, size, free_stack, n_free, order,
                                      t2, T, u, no_forced, one, ev)
                log_q_rev = 0.0
            elif move == MERGE21:
                t2 = np.array([ci, cj])
                log_q_rev = _replay(img, mix, f_state, labels, size, free_stack, n_free, order,
                                    t2, T, no_u, one, ev)
                f_state[0] = log_pi0
                if size[ci] <= size[cj]:
                    src = ci
                    dst = cj
                else:
                    src = cj
                    dst = ci
                c = 0
                for t in range(nu):
                    if orig[t] == src:
                        A[c] = U[t]
                        c += 1
                _move_set(img, mix, f_state, labels, size, free_stack, n_free, A[:c], dst, ev)
                log_q_fwd = 0.0
            elif move == SPLIT23:
                tau = np.empty(order.size + 1, np.int64)
                for t in range(kpos):
                    tau[t] = order[t]
                tau[kpos] = k
                for t in range(kpos, order.size):
                    tau[t + 1] = order[t]
                t2 = np.array([ci, cj])
                log_q_rev = _replay(img, mix, f_state, labels, size, free_stack, n_free, tau, t2,
                                    T, no_u, one, ev)
                f_state[0] = log_pi0
                _hold(img, mix, f_state, labels, size, free_stack, n_free, order, tg[:0], ev)
                lk = free_stack[n_free[0] - 1]
                one[0] = k
                _move_set(img, mix, f_state, labels, size, free_stack, n_free, one, lk, ev)
                t3 = np.array([ci, cj, lk])
                log_q_fwd = _allocate(img, mix, f_state, labels, size, free_stack, n_free, order,
                                      t3, T, u, no_forced, one, ev)
            else:  # MERGE32
                sigma = np.empty(order.size, np.int64)
                c = 0
                for t in range(order.size):
                    if order[t] != k:
                        sigma[c] = order[t]
                        c += 1
                t3 = np.array([ci, cj, ck])
                log_q_rev = _replay(img, mix, f_state, labels, size, free_stack, n_free,
                                    sigma[:c], t3, T, no_u, one, ev)
                f_state[0] = log_pi0
                t2 = np.array([ci, cj])
                _hold(img, mix, f_state, labels, size, free_stack, n_free, order, t2, ev)
                log_q_fwd = _allocate(img, mix, f_state, labels, size, free_stack, n_free, order,
                                      t2, T, u, no_forced, one, ev)
            d = f_state[0] - log_pi0
            if log_q_fwd == -math.inf:
                log_alpha = -math.inf
            else:
                log_alpha = d / T + (log_r[move] + log_q_rev - log_q_fwd)
                if log_alpha != log_alpha:
                    log_alpha = -math.inf
            f_state[2] = log_alpha
            if mh_decide(log_alpha, rng):
                counts[move, 1] += 1
                accepted += 1
                # commit: the lists of the labels after, in U's order.
                for t in range(nlab):
                    entry[tg[t]] = 0
                for t in range(nu):
                    lab = labels[U[t]]
                    if entry[lab] != 3:
                        c = 0
                        for s in range(nu):
                            if labels[U[s]] == lab:
                                A[c] = U[s]
                                c += 1
                        _set_list(lab, A, c, head, nxt, entry)
                        entry[lab] = 3
                for t in range(nu):
                    if entry[labels[U[t]]] == 3:
                        entry[labels[U[t]]] = 2
            else:
                # revert: the items on another label back, label by label (before).
                for b in range(nlab):
                    lab = tg[b]
                    c = 0
                    for t in range(nu):
                        if labels[U[t]] != orig[t] and orig[t] == lab:
                            A[c] = U[t]
                            c += 1
                    if c:
                        _move_set(img, mix, f_state, labels, size, free_stack, n_free, A[:c],
                                  lab, ev)
                f_state[0] = log_pi0
        _book(0.0, f_state, labels, best_labels)
        if path.shape[0] > 0:
            for v in range(n):
                path[step, v] = labels[v]
    export_lists(head, nxt, entry, C)  # for Triadic's MemberIndex
    return accepted
