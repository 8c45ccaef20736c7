"""Multigrid SW cuts: clustering inside attention windows (section 6.2,
Props. 9-11).

A step picks a square window Λ of the image — its side drawn from a
pyramid of sizes (by default with frequency ∝ 1/side², so that every side
gets about the same share of the time), its position uniform among the
positions that overlap the image, clipped to the image — independently of
the state. A pixel of Λ
is drawn uniformly; its vertex v (when v lies in Λ: a pixel, or an atom
whose centroid is in Λ) grows its component R over the same-label edges
with both ends in Λ (Wolff growth), and R is relabelled as in
:mod:`.flips`. Only the cut edges with both ends in Λ enter the proposal
ratio (Prop. 9); the target ratio is the full π ratio, which equals the
ratio of π(X_Λ | X_Λ̄) (Prop. 10). Each window's kernel is π-invariant, so
the mixture over windows is too (Prop. 11).

The cost of a step is that of R and the regions it touches, never of the
whole graph, which is what makes pixel-level sampling affordable. On a
pixel lattice R grows by pixel arithmetic (:func:`grow_lattice`), its
statistics are summed from position, values and bins
(:func:`.flips.sum_stats`), and an accepted move updates the regions on
their smaller sides (:func:`.compiled.move_regions`).

Started from one label, the chain must form every region with windows
large enough to pay for a new region (a0 + a1 of the prior), which takes
long at pixel scale; started from a segmentation of atoms it refines
boundaries inside the atoms, where small windows (from side 2) and a low
start temperature (T0 = 1) do best (benchmarks/pixel_scale.py).
"""

from __future__ import annotations

import numbers

import numpy as np
from numba import njit

from swcuts.io.errors import InputError
from swcuts.samplers.common import grow_into
from swcuts.samplers.flips import (
    FlipKernel, finish_best, flip_set, model_params, record_move, vertex_coordinates)

__all__ = ["Multigrid", "window_pyramid", "default_window_weights", "check_window_count", "MAX_WINDOW_SIZES"]


def window_pyramid(shape, smallest=8):
    """Window sides 8, 16, 32, ... up to the image's longer side.

    An image smaller than ``smallest`` gets one window side, its longer side.
    """
    longest = int(max(shape))
    sizes = []
    s = int(smallest)
    while s <= longest:
        sizes.append(s)
        s *= 2
    return np.array(sizes or [longest], dtype=np.int64)


def default_window_weights(sizes):
    """Frequencies ∝ 1/side²: a step costs about the area of its window (its
    component grows over it), so every side gets about the same share of
    the time. Uniform frequencies would spend nearly all of it in the
    largest windows, which make coarse moves; the small ones refine
    boundaries (on 481x321 photos, uniform frequencies over 8..256 reached
    −log π 1.01e6 in 60 s on coffee, 1/side² 0.93e6)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    return (sizes.min() / sizes) ** 2


@njit(cache=True)
def _in(v, vy, vx, win):
    return win[0] <= vy[v] < win[1] and win[2] <= vx[v] < win[3]


def lattice_q(graph, q):
    """For a graph whose vertex v is pixel v (raster order): the edge
    probability to the right of and below every pixel, 0 where there is no
    edge (a border, or an edge the graph leaves out). Two empty arrays for
    other graphs."""
    h, w = graph.shape
    n = graph.n_vertices
    if n != h * w or not np.array_equal(graph.pixel_index, np.arange(n)):
        return np.zeros(0), np.zeros(0)
    i, j = graph.edges[:, 0], graph.edges[:, 1]
    right = (j == i + 1) & (j % w != 0)
    down = j == i + w
    if not np.all(right | down):
        return np.zeros(0), np.zeros(0)
    qr = np.zeros(n)
    qd = np.zeros(n)
    qr[i[right]] = q[right]
    qd[i[down]] = q[down]
    return qr, qd


@njit(cache=True)
def grow_lattice(seed, labels, qr, qd, w, win, mark, Rbuf):
    """:func:`.common.grow_into` with a window on a pixel lattice (see :func:`lattice_q`):
    the neighbours and the window test follow from the pixel's position."""
    lab = labels[seed]
    y0, y1, x0, x1 = win[0], win[1], win[2], win[3]
    n = 1
    Rbuf[0] = seed
    mark[seed] = 1
    head = 0
    while head < n:
        v = Rbuf[head]
        head += 1
        y = v // w
        x = v - y * w
        if x + 1 < x1:
            u = v + 1
            if not mark[u] and labels[u] == lab and np.random.random() < qr[v]:
                mark[u] = 1
                Rbuf[n] = u
                n += 1
        if x > x0:
            u = v - 1
            if not mark[u] and labels[u] == lab and np.random.random() < qr[u]:
                mark[u] = 1
                Rbuf[n] = u
                n += 1
        if y + 1 < y1:
            u = v + w
            if not mark[u] and labels[u] == lab and np.random.random() < qd[v]:
                mark[u] = 1
                Rbuf[n] = u
                n += 1
        if y > y0:
            u = v - w
            if not mark[u] and labels[u] == lab and np.random.random() < qd[u]:
                mark[u] = 1
                Rbuf[n] = u
                n += 1
    for t in range(n):
        mark[Rbuf[t]] = 0
    return n


@njit(cache=True)
def draw_weighted_window(sizes, cdf, h, w, win):
    """A window of side ``sizes[k]`` with probability ``cdf[k] - cdf[k-1]``
    (see :func:`place_window`)."""
    u = np.random.random() * cdf[-1]
    k = 0
    while k < sizes.size - 1 and u >= cdf[k]:
        k += 1
    place_window(sizes[k], h, w, win)


@njit(cache=True)
def place_window(s, h, w, win):
    """A window of side ``s``, uniform over the positions that overlap the
    image, clipped to it; every pixel is covered equally often."""
    y0 = int(np.random.random() * (h + s - 1)) - s + 1
    x0 = int(np.random.random() * (w + s - 1)) - s + 1
    win[0] = max(y0, 0)
    win[1] = min(y0 + s, h)
    win[2] = max(x0, 0)
    win[3] = min(x0 + s, w)


@njit(cache=True)
def window_component(fixed, sizes, cdf, h, w, pix2v, vy, vx, win, labels, q, qr, qd, indptr,
                     indices, edge_ids, mark, Rbuf):
    """The component R of one multigrid step: a window (a new one unless
    ``fixed``, see :func:`draw_weighted_window`), a uniform pixel of it, and
    its vertex's component grown inside the window (:func:`grow_lattice` on
    a pixel lattice, ``qr``/``qd`` of :func:`lattice_q`; else
    :func:`.common.grow_into`). Writes R to ``Rbuf`` and returns its size,
    0 when the pixel's vertex lies outside the window (no move)."""
    if not fixed:
        draw_weighted_window(sizes, cdf, h, w, win)
    y = win[0] + int(np.random.random() * (win[1] - win[0]))
    x = win[2] + int(np.random.random() * (win[3] - win[2]))
    v = pix2v[y * w + x]
    if not _in(v, vy, vx, win):
        return 0
    if qr.size > 0:
        return grow_lattice(v, labels, qr, qd, w, win, mark, Rbuf)
    return grow_into(v, labels, q, indptr, indices, edge_ids, mark, Rbuf, vy, vx, win)


@njit(cache=True)
def run_multigrid(temps, sizes, cdf, fixed, h, w, pix2v, vy, vx, f_state, best_labels, labels, size,
                  free_stack, n_free, lstats, lloglik, regions, vsrc, indptr, indices,
                  edge_ids, q, qr, qd, log1mq, area, bw, use_family, n_channels, n_bins, fp, win, Sbuf, ptr,
                  sid,
                  inside, inside_list, acc_q, acc_n, adj, new_lab, old_lab, in_r, mark, visited,
                  roots, sR, tmp, pws):
    """Run ``temps.size`` multigrid steps; returns the number accepted.

    With ``fixed`` the window ``win`` is kept; otherwise a new one is drawn
    every step. ``f_state`` and ``best_labels`` as in :func:`.run_multiflip`.
    ``qr``, ``qd``: :func:`lattice_q` (empty arrays: grow over the CSR lists).
    """
    accepted = 0
    pending = False
    ptr[0] = 0
    for step in range(temps.size):
        n_r = window_component(fixed, sizes, cdf, h, w, pix2v, vy, vx, win, labels, q, qr, qd,
                               indptr, indices, edge_ids, mark, Sbuf)
        if n_r == 0:
            continue
        ptr[1] = n_r
        for t in range(n_r):
            sid[Sbuf[t]] = 0
        # np.int64: a literal 1 would compile a signature of its own.
        d = flip_set(np.int64(1), ptr, Sbuf, sid, temps[step], labels, size, free_stack, n_free, lstats,
                     lloglik, regions, vsrc, indptr, indices, edge_ids, q, log1mq,
                     area, bw, use_family, n_channels, n_bins, fp, vy, vx, win, inside, inside_list,
                     acc_q, acc_n, adj, new_lab, old_lab, in_r, mark, visited, roots, sR, tmp, pws)
        if d != d:  # rejected
            continue
        accepted += 1
        pending = record_move(d, pending, f_state, best_labels, labels, 1, ptr, Sbuf, old_lab)
    finish_best(pending, best_labels, labels)
    return accepted


class Multigrid(FlipKernel):
    """Multigrid SW-cut kernel (attention windows) for the image posterior.

    Parameters
    ----------
    model : ImageModel
        A model with the compiled fast path; pixel graphs
        (``atoms="pixels"``) are what windows are for, atom graphs work too.
    q : (E,) array
        Edge probabilities.
    window_sizes : sequence of int, optional
        Sides of the square windows (default: :func:`window_pyramid`).
    window_weights : sequence of float, optional
        Relative frequency of each side (default
        :func:`default_window_weights`: ∝ 1/side², equal time per side).
    window : (y0, y1, x0, x1), optional
        One fixed window instead of random ones (the kernel then samples
        π(X_Λ | X_Λ̄), Prop. 10).
    proposal : TargetProposal, optional
        Weights of the label proposal.
    """

    name = "multigrid"

    def __init__(self, model, q, window_sizes=None, window=None, proposal=None, window_weights=None):
        super().__init__(model, q, proposal)
        g = self.graph
        h, w = g.shape
        if window_sizes is None:
            window_sizes = window_pyramid((h, w))
        sizes = np.asarray(window_sizes)
        if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
            raise ValueError("window_sizes must be a non-empty list of integers")
        if sizes.min() < 1:
            raise ValueError(f"window sizes must be at least 1 pixel, got {sizes.min()}")
        if sizes.max() > max(h, w):
            raise ValueError(f"window of {sizes.max()} pixels is larger than the {h}x{w} image")
        self.sizes = sizes.astype(np.int64)
        if window_weights is None:
            weights = default_window_weights(self.sizes)
        else:
            weights = np.asarray(window_weights, dtype=np.float64)
            if weights.shape != self.sizes.shape or not np.all(np.isfinite(weights)) \
                    or weights.min() < 0 or weights.sum() <= 0:
                raise ValueError("window_weights must be one non-negative weight per window size, "
                                 "not all zero")
        self.window_weights = weights / weights.sum()
        self.size_cdf = np.cumsum(self.window_weights)
        if window is not None:
            y0, y1, x0, x1 = (int(t) for t in window)
            if not (0 <= y0 < y1 <= h and 0 <= x0 < x1 <= w):
                raise ValueError(f"window {tuple(window)} does not lie in the {h}x{w} image")
            self.window = np.array([y0, y1, x0, x1], dtype=np.int64)
        else:
            self.window = None
        self.vy, self.vx, self.pix2v = vertex_coordinates(g)
        self.qr, self.qd = lattice_q(g, self.q)

    def _window(self):
        """(fixed, win) of a run: the fixed window (a copy), or room for drawn ones."""
        fixed = self.window is not None
        return fixed, (self.window.copy() if fixed else np.zeros(4, np.int64))

    def _run_steps(self, state, ws, temps, f_state, best_labels):
        part, m, g = state.partition, self.model, self.graph
        h, w = g.shape
        fixed, win = self._window()
        return run_multigrid(temps, self.sizes, self.size_cdf, fixed, h, w, self.pix2v, self.vy,
                             self.vx, f_state, best_labels, part.labels, part.size,
                             part.free_stack, part.n_free, state.stats, state.loglik, ws.regions,
                             self.vsrc, g.indptr, g.indices, g.edge_ids, self.q, self.qr, self.qd,
                             self.log1mq, m.area, m.boundary_csr, m.use_family, m.n_channels,
                             m.n_bins, model_params(m, self.proposal), win, ws.Sbuf, ws.ptr, ws.sid,
                             ws.inside, ws.inside_list, ws.acc_q, ws.acc_n, ws.adj, ws.new_lab,
                             ws.old_lab, ws.in_r, ws.mark, ws.visited, ws.roots, ws.sR, ws.tmp,
                             ws.pws)


#: Most window sides ``window_sizes`` may list.
MAX_WINDOW_SIZES = 64


def check_window_count(window_sizes) -> None:
    """At most :data:`MAX_WINDOW_SIZES` window sides (each is a pass of work per cycle)."""
    if window_sizes is not None and not isinstance(window_sizes, numbers.Integral):
        try:
            count = len(window_sizes)
        except TypeError:
            return
        if count > MAX_WINDOW_SIZES:
            raise InputError(f"window_sizes lists {count} window sides; at most {MAX_WINDOW_SIZES} are accepted")
