"""Multi-level cluster sampling (Barbu & Zhu, section 6.3, Prop. 12, Fig. 13).

A hierarchy of label levels over the pixels: level 0 groups the pixels
into atoms, each level above groups the regions of the one below, and the
top level holds the segments. The joint target is

    π(x⁽⁰⁾, …, x⁽ⁿ⁻¹⁾) ∝ π_img(x⁽ⁿ⁻¹⁾) · Π_{s<n−1} π_s(x⁽ˢ⁾) · 1[nested],

π_img the segmentation posterior every sampler anneals, π_s the same
family with its own prior weights, and "nested" that every label below the
top is one connected region inside one label of the level above. A round
visits the levels in increasing order; below the top the constrained SW
cuts of :mod:`swcuts.samplers.connected` sample each level's conditional,
at the top the ``swc`` kernel (or, with one level, multigrid on the
pixels). Every round leaves π invariant (tests/test_multilevel.py checks
it by exact enumeration).

The derivation (the conditionals, why a move that splits a label is
rejected outright, how the levels are rebuilt) is in
``docs/algorithms/multilevel.md``.
"""

from __future__ import annotations

import copy
import numbers

import numpy as np

from swcuts.image.atoms import compute_atoms
from swcuts.graph.edge_probabilities import kl_edge_probabilities, vertex_histograms
from swcuts.graph.region_graph import RegionGraph
from swcuts.models.boundary import cut_weight, edge_weights, evidence_pairs
from swcuts.models.image import FAMILIES, ImageModel
from swcuts.models.regions import region_cache_terms
from swcuts.models.vertex_stats import label_sums
from swcuts.samplers.swc import SWC
from swcuts.samplers.connected import (
    ConnectedMultigrid, restrict_graph)
from swcuts.samplers.multigrid import Multigrid

__all__ = ["MultiLevel", "TwoLevel", "Level",
           "ATOM_DEFAULTS", "block_atoms"]

#: Prior of the levels below the top: per label, on Σ area^0.9, complexity weight.
ATOM_DEFAULTS = dict(atom_a0=20.0, atom_a2=0.0, atom_kappa=1.0)
#: Initial labels of level 0: SLIC superpixels or square blocks.
START_METHODS = ("slic", "blocks")
#: The SLIC start's number of atoms: one per this many pixels.
PIXELS_PER_ATOM = 80
#: ``start="blocks"``: level s < n − 1 starts from squares of side ``block * BLOCK_GROWTH**s``.
BLOCK_GROWTH = 4
#: Highest temperature of the levels below the top in :func:`~swcuts.inference.multilevel_anneal.anneal_multilevel`.
ATOM_T_MAX = 1.0
# Level states: up to date, to be restricted anew, to be rebuilt.
_REBIND, _REBUILD = 1, 2


# --------------------------------------------------------------- label helpers
def _total_stats(model):
    """Σ of the statistics rows of every vertex (without making the rows)."""
    one = np.zeros(model.n_vertices, dtype=np.int64)
    return label_sums(one, model.vsrc, model.n_channels, model.n_bins, 1)[0]


def block_atoms(shape, block):
    """Square blocks of side ``block`` (state-independent initial labels)."""
    h, w = shape
    by = np.arange(h) // block
    bx = np.arange(w) // block
    return (by[:, None] * ((w + block - 1) // block) + bx[None, :]).ravel().astype(np.int64)


def compact(labels):
    """Labels renamed 0..K-1 in order of first occurrence (a function of the
    partition only)."""
    labels = np.asarray(labels).ravel()
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def _first_pixels(graph):
    """One pixel (flat index) of every vertex."""
    return graph.pixel_index[graph.pixel_ptr[:-1]]


def _connected_labels(labels, graph):
    """Whether every label is one connected region of ``graph``."""
    n = labels.size
    m, _ = region_cache_terms(labels, graph.indptr, graph.indices, np.ones(n), 1.0,
                              np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64))
    return m == np.unique(labels).size


class Level:
    """One level of the hierarchy.

    Attributes
    ----------
    graph : RegionGraph
        G⁽ˢ⁾: its vertices are the regions of level s − 1 (pixels at s = 0).
    vert : (H*W,) int array
        The vertex of G⁽ˢ⁾ of every pixel.
    q : (E,) array
        Edge probabilities of ``graph``.
    base : ImageModel
        The level's posterior on ``graph`` (π_img at the top, π_s below).
    model : ImageModel
        ``base`` on the graph the kernel runs on (below the top: the edges
        inside the labels of the level above).
    state : ModelState
        The labels x⁽ˢ⁾ of the vertices and their caches.
    kernel : object
        The level's kernel (``run(state, rng, temperatures, ...)``).
    """

    def __init__(self, graph, vert, q, base):
        self.graph, self.vert, self.q, self.base = graph, vert, q, base
        self.model = base
        self.state = None
        self.kernel = None


class MultiLevel:
    """The multi-level state (nested labels of ``n_levels`` levels over the
    pixels) and its kernels (section 6.3, Prop. 12).

    Parameters
    ----------
    model : ImageModel
        The segmentation posterior π_img on the pixel graph (``atoms="pixels"``).
    q : (E,) array
        Edge probabilities of the pixel graph.
    features : (H, W, C) array
        The image features ``model`` was built from (the histograms of eq. 53
        and the statistics of the levels above the pixels).
    n_levels : int
        Number of levels, at least 1. 1: the segments are sampled on the
        pixels (plain multigrid SW cuts); 2: atoms on the pixels and segments
        on the atoms (the paper's two-level run); 3 and more: further
        groupings in between.
    start : {"slic", "blocks"}
        Initial labels of level 0 (the segments start as one label).
        ``"slic"``: SLIC superpixels of ``features`` (about ``start_atoms``
        of them, each connected), every level in between one label per
        atom; ``"blocks"``: squares of side ``block`` at level 0 and of side
        ``block * 4**s`` at level s < n − 1. Any start is a valid state of
        the chain; from blocks, level 1 sees atoms that straddle the image's
        edges, so its edge probabilities percolate and its SW cuts hardly
        move until level 0 has reshaped the atoms (see :func:`~swcuts.inference.multilevel_anneal.anneal_multilevel`).
    start_atoms : int, optional
        Number of SLIC atoms of the ``"slic"`` start (default one per 80
        pixels).
    block : int
        Side of the squares of the ``"blocks"`` start.
    window_sizes : sequence of int, optional
        Windows of the multigrid kernel on the pixels (default 8, 16, ... up
        to the longer side); a window larger than the image is refused.
    atom_a0 : float or sequence of float
        Per-label prior weight of each level below the top (a sequence: one
        value per level, level 0 first). A number sets level 0; level s
        then gets ``atom_a0 * (model.a0 / atom_a0) ** (s / (n_levels - 1))``,
        rising geometrically towards the segments' a0.
    atom_a2, atom_kappa : float
        Prior weight on Σ area^0.9 and complexity weight of those levels.
    atom_boundary : float, optional
        Weight λ of the boundary term (:mod:`swcuts.models.boundary`) of
        those levels; default: the model's (``model.boundary``). The top
        always has the model's. Its weights w_ij are the sums over the
        pixel pairs across each edge, at every level.
    q_max, edge_scale : float
        Edge probabilities above the pixels: eq. 53 on 15-bin histograms,
        divergences divided by ``edge_scale``, clipped at ``q_max``.

    Attributes
    ----------
    n_levels : int
    top : int
        Index of the segments' level, ``n_levels - 1``.
    model, graph : ImageModel, RegionGraph
        π_img and the pixel graph.
    hierarchy : list of Level
        Graph, model, state and kernel of every level, level 0 first.
    segments : (H*W,) int array
        Segment of every pixel in the current state.
    best_levels : list of (H, W) int arrays
        Set by :func:`~swcuts.inference.multilevel_anneal.anneal_multilevel`: the label images of every level at
        the best segmentation found.
    """

    #: Kernel of the levels below the top (replaceable, e.g. by tests).
    constrained_kernel = ConnectedMultigrid

    def __init__(self, model, q, features, *, n_levels=2, start="slic", start_atoms=None, block=8,
                 window_sizes=None, atom_a0=ATOM_DEFAULTS["atom_a0"],
                 atom_a2=ATOM_DEFAULTS["atom_a2"], atom_kappa=ATOM_DEFAULTS["atom_kappa"],
                 atom_boundary=None, q_max=0.95, edge_scale=1.0):
        if isinstance(n_levels, bool) or not isinstance(n_levels, numbers.Integral) or n_levels < 1:
            raise ValueError(f"n_levels must be an integer >= 1, got {n_levels!r}")
        if isinstance(block, bool) or not isinstance(block, numbers.Integral) or block < 1:
            raise ValueError(f"block must be an integer >= 1, got {block!r}")
        if start not in START_METHODS:
            raise ValueError(f"start must be one of {', '.join(START_METHODS)}, got {start!r}")
        if start_atoms is not None and (isinstance(start_atoms, bool) or not isinstance(
                start_atoms, numbers.Integral) or start_atoms < 1):
            raise ValueError(f"start_atoms must be an integer >= 1, got {start_atoms!r}")
        g = model.graph
        if g.n_vertices != g.shape[0] * g.shape[1]:
            raise ValueError("multi-level sampling runs on a pixel graph (atoms='pixels')")
        if not q_max > 0 or not edge_scale > 0:
            raise ValueError(f"q_max and edge_scale must be positive, got {q_max}, {edge_scale}")
        atom_boundary = model.boundary if atom_boundary is None else atom_boundary
        if isinstance(atom_boundary, bool) or not isinstance(atom_boundary, numbers.Real) \
                or not atom_boundary >= 0:
            raise ValueError(f"atom_boundary must be a non-negative number, got {atom_boundary!r}")
        features = np.asarray(features, dtype=np.float64)
        if features.ndim == 2:
            features = features[..., None]
        if features.shape[:2] != g.shape:
            raise ValueError(f"features of shape {features.shape[:2]} do not match the "
                             f"{g.shape[0]}x{g.shape[1]} pixel graph")
        self.n_levels = int(n_levels)
        self.top = self.n_levels - 1
        # Validates q and the windows (refused before any work).
        self._pixel_multigrid = Multigrid(model, q, window_sizes=window_sizes)
        self.window_sizes = self._pixel_multigrid.sizes
        self.model = model
        self.graph = g
        self.q = self._pixel_multigrid.q
        self.features = features
        self.q_max, self.edge_scale = float(q_max), float(edge_scale)
        self.atom_a0 = self._level_a0(atom_a0)
        self.atom_a2, self.atom_kappa = float(atom_a2), float(atom_kappa)
        self.atom_boundary = float(atom_boundary)
        # The model's pixel-pair weights (exp(−β‖z_p − z_q‖²) for the
        # contrast evidence) of every pixel pair, once: the boundary
        # weights of every level's graph are sums of them.
        self._pairs = (evidence_pairs(features, model.evidence) if model.boundary or self.atom_boundary
                       else None)
        self.families = [f for f, u in zip(FAMILIES, model.use_family) if u]
        h, w = g.shape
        if start == "slic" and self.top >= 1:
            n_atoms = start_atoms if start_atoms is not None else max(1, round(h * w / PIXELS_PER_ATOM))
            atoms = compute_atoms(features, "slic", min(int(n_atoms), h * w)).ravel().astype(np.int64)
            pix = [atoms] * self.top
        else:
            pix = [block_atoms((h, w), block * BLOCK_GROWTH ** s) for s in range(self.top)]
        self._build_all(pix + [np.zeros(h * w, dtype=np.int64)])
        if self.top >= 1:
            if not np.allclose(_total_stats(self._levels[1].base), _total_stats(model),
                               rtol=1e-9, atol=1e-6):
                raise ValueError("features do not match the model's image")
        self.best_levels = self.levels()

    # ------------------------------------------------------------ set-up
    def _level_a0(self, atom_a0):
        n = self.top
        if np.ndim(atom_a0) == 0:
            a = float(atom_a0)
            if n <= 1:
                return [a] * n
            ratio = self.model.a0 / a if a > 0 and self.model.a0 > 0 else 1.0
            return [a * ratio ** (s / n) for s in range(n)]
        vals = [float(v) for v in atom_a0]
        if len(vals) != n:
            raise ValueError(f"atom_a0 needs one value per level below the top ({n}), got {len(vals)}")
        return vals

    def _level_model(self, s, atoms_img, graph):
        """π_s (below the top, a1 = 0) or π_img (top) on the vertices ``atoms_img``."""
        m = self.model
        if s == self.top:
            a0, a1, a2, kappa, lam = m.a0, m.a1, m.a2, m.kappa, m.boundary
        else:
            a0, a1, a2, kappa = self.atom_a0[s], 0.0, self.atom_a2, self.atom_kappa
            lam = self.atom_boundary
        if s == 0:
            base = copy.copy(m)
            base.a0, base.a1, base.a2, base.kappa = a0, a1, a2, kappa
            if lam != m.boundary:
                atoms_img = np.arange(graph.n_vertices).reshape(graph.shape)
                base.set_boundary(lam, edge_weights(self._pairs, atoms_img, graph) if lam else None)
            return base
        base = ImageModel(self.features, atoms_img, graph, bins=m.n_bins, families=self.families,
                          a0=a0, a1=a1, a2=a2, kappa=kappa, exponent=m.exponent)
        base.ridge = m.ridge
        if lam:
            base.set_boundary(lam, edge_weights(self._pairs, atoms_img, graph))
        return base

    def _build_all(self, pix):
        """All levels from the label of every pixel at every level (nested)."""
        self._pix = [np.asarray(p, dtype=np.int64).ravel().copy() for p in pix]
        self._pix_dirty = [False] * self.n_levels
        g = self.graph
        lv = Level(g, np.arange(g.n_vertices, dtype=np.int64), self.q, self._level_model(0, None, g))
        self._levels = [lv]
        self._stale = [0] * self.n_levels
        self._pix[0] = compact(self._pix[0])
        lv.state = lv.base.new_state(self._pix[0])
        if self.top == 0:
            lv.kernel = self._pixel_multigrid
        for s in range(1, self.n_levels):
            self._levels.append(None)
            self._build(s)
        if self.top >= 1:
            self._bind(0)

    def _build(self, s):
        """Level s >= 1 on the regions of level s − 1, its labels carried over."""
        h, w = self.graph.shape
        vert = compact(self._pixels(s - 1))
        atoms_img = vert.reshape(h, w)
        g = RegionGraph.from_labels(atoms_img)
        hist = vertex_histograms(self.features, atoms_img, g.n_vertices, bins=15)
        q = np.minimum(kl_edge_probabilities(hist, g.edges, scale=self.edge_scale), self.q_max)
        lv = Level(g, vert, q, self._level_model(s, atoms_img, g))
        labels = compact(self._pixels(s)[_first_pixels(g)])
        self._pix[s] = labels[vert]
        self._pix_dirty[s] = False
        self._levels[s] = lv
        lv.state = lv.base.new_state(labels)
        if s == self.top:
            lv.kernel = SWC(lv.base, q)
        else:
            self._bind(s)

    def _bind(self, s):
        """Restrict level s < top to the edges inside the labels of level s + 1
        (the graph of the conditional of eq. 70) and refresh its caches."""
        lv = self._levels[s]
        g = lv.graph
        up = self._pixels(s + 1)[_first_pixels(g)]
        keep = up[g.edges[:, 0]] == up[g.edges[:, 1]]
        sub = restrict_graph(g, keep)
        m = copy.copy(lv.base)
        m.graph = sub
        if m.boundary:
            m.set_boundary(m.boundary, lv.base.boundary_weights[keep])
        lv.model = m
        st = lv.state
        n_reg, s_area = region_cache_terms(st.labels, sub.indptr, sub.indices, m.area, m.exponent,
                                           st.comp_root, st.comp_area, st.work.stack)
        L = st.partition.n_labels
        b = m.boundary * cut_weight(st.labels, sub.edges, m.boundary_weights) if m.boundary else 0.0
        st.log_pi = float(st.loglik.sum() - m.a0 * L - m.a1 * n_reg - m.a2 * s_area - b)
        if s == 0:
            lv.kernel = self.constrained_kernel(m, lv.q[keep], window_sizes=self.window_sizes)
        else:
            h, w = g.shape
            lv.kernel = self.constrained_kernel(m, lv.q[keep], window=(0, h, 0, w))

    def set_levels(self, levels):
        """Set the state from a label image (or flat labels) per level.

        Parameters
        ----------
        levels : sequence of ``n_levels`` (H, W) int arrays
            Level 0 first; every label below the top must be one connected
            region inside one label of the level above.
        """
        h, w = self.graph.shape
        if len(levels) != self.n_levels:
            raise ValueError(f"need {self.n_levels} label images, got {len(levels)}")
        pix = []
        for s, lab in enumerate(levels):
            lab = np.asarray(lab)
            if lab.size != h * w or not np.issubdtype(lab.dtype, np.integer):
                raise ValueError(f"level {s}: need an integer label image of {h}x{w} pixels")
            pix.append(lab.astype(np.int64).ravel())
        g = self.graph
        for s in range(self.top):
            same_up = pix[s + 1][g.edges[:, 0]] == pix[s + 1][g.edges[:, 1]]
            if not _connected_labels(pix[s], g.subgraph(same_up)):
                raise ValueError(f"level {s}: every label must be one connected region inside "
                                 f"one label of level {s + 1}")
        self._build_all(pix)

    # ------------------------------------------------------------ sampling
    def _pixels(self, s):
        """Label of every pixel at level s (flat), brought up to date on
        demand after the level moved (not after every run: O(pixels))."""
        if self._pix_dirty[s]:
            lv = self._levels[s]
            self._pix[s] = lv.state.labels[lv.vert]
            self._pix_dirty[s] = False
        return self._pix[s]

    def _level(self, s):
        """Level s, rebuilt or restricted anew if a neighbouring level moved."""
        if self._stale[s] == _REBUILD:
            self._build(s)
        elif self._stale[s] == _REBIND:
            self._bind(s)
        self._stale[s] = 0
        return self._levels[s]

    @property
    def hierarchy(self):
        """Every :class:`Level`, level 0 first, up to date."""
        return [self._level(s) for s in range(self.n_levels)]

    @property
    def log_pi(self) -> float:
        """log π_img(S): the segmentation posterior of the current segments.

        (Moves below the top keep the segments' pixels, hence this value.)
        """
        return self._levels[self.top].state.log_pi

    @property
    def n_segments(self) -> int:
        """Number of segments (read without rebuilding any level)."""
        return self._levels[self.top].state.partition.n_labels

    @property
    def segments(self) -> np.ndarray:
        """Segment of every pixel (flat, labels as the state names them)."""
        return self._pixels(self.top)

    def run_level(self, s, rng, temperatures, best_log_pi=-np.inf):
        """Run ``len(temperatures)`` steps of level s, the other levels fixed.

        Returns (accepted, best log π_img seen, its segments on the pixels or
        None): the best is only reported at the top and only when better
        than ``best_log_pi``.
        """
        lv = self._level(s)
        found, best_seen = None, best_log_pi
        if s == self.top:
            best = lv.state.labels.copy()
            acc, best_seen, best = lv.kernel.run(lv.state, rng, temperatures, best, best_log_pi)
            if best_seen > best_log_pi + 1e-9:
                found = best[lv.vert]
        else:
            acc = lv.kernel.run(lv.state, rng, temperatures)
        if acc:
            # Level s + 1 stands on the regions of level s, and level s − 1
            # is restricted to the edges inside them: both are redone before
            # they next run.
            self._pix_dirty[s] = True
            if s < self.top:
                self._stale[s + 1] = _REBUILD
            if s > 0:
                self._stale[s - 1] = max(self._stale[s - 1], _REBIND)
        return acc, best_seen, found

    def run_round(self, rng, steps_per_level, temperature=1.0):
        """One round: ``steps_per_level[s]`` steps at every level s in turn."""
        acc = 0
        for s, k in enumerate(steps_per_level):
            acc += self.run_level(s, rng, np.full(int(k), float(temperature)))[0]
        return acc

    def default_steps(self, s) -> int:
        """Steps of level s in one round of :func:`~swcuts.inference.multilevel_anneal.anneal_multilevel`."""
        n = self._level(s).graph.n_vertices
        return max(2000, n // 4) if s == 0 else max(500, 20 * n)

    def levels(self, top_labels=None):
        """Label images (H, W) of every level, level 0 first, each 0..K-1.

        ``top_labels`` (segments of the pixels) replaces the top level.
        """
        h, w = self.graph.shape
        pix = [self._pixels(s) for s in range(self.n_levels)]
        if top_labels is not None:
            pix[self.top] = np.asarray(top_labels).ravel()
        return [compact(p).reshape(h, w) for p in pix]


#: The two-level sampler of the paper's Fig. 16 (``n_levels=2`` by default).
TwoLevel = MultiLevel

