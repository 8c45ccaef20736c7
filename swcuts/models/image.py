"""The image-segmentation posterior of Barbu & Zhu, section 5 (after Tu & Zhu).

    π(X | I) ∝ Π_k [ L(I(V_k); θ_k) p(θ_k) ] · p_o(X)                 (eq. 54)

Each label k is fitted, deterministically, by the best of three families:

* ``histogram`` — iid from a non-parametric B-bin histogram (eq. 55);
* ``linear``    — a plane β0 + β1 x + β2 y plus iid residues (eq. 56);
* ``quadratic`` — a quadratic surface plus iid residues (eq. 57);

with likelihood exp(−|V_k| · entropy) (eq. 58), |V_k| in pixels, and a
complexity prior p(θ) = exp(−κ · dim(θ)/2 · log |V_k|) (a BIC penalty). The
best family per label is the one with the largest penalised likelihood.

Entropies are discrete entropies at the bin width w = 1/B, so the families
are commensurate. The histogram family uses the label's own histogram; the
surface families use the entropy of a Gaussian with the least-squares
residual variance, discretised at width w (σ² + w²/12). This is the one
place where swcuts departs from the paper's histogram of residues: the
residual histogram needs a pass over every pixel of both labels at every
proposal, whereas the Gaussian residual entropy follows from cached
sufficient statistics (pixel count, Σφφᵀ, Σφ I, Σ I², φ = (1, x, y, x², xy, y²))
in O(1), which makes ``delta`` cheap and exact.

The prior is eq. 59: p_o(X) ∝ exp(−a0 L − a1 m − a2 Σ_r area(r)^0.9), with L
labels and m connected regions r. Colour images carry C channels (CIELAB,
each scaled to [0, 1]); channels are independent given the label and share
the label's family.

With ``boundary`` = λ > 0 the posterior also has the contrast-sensitive
boundary term −λ Σ_{cut edges} w_ij of :mod:`.boundary` (``segment``'s
model "contrast"; model "texture": the texture-robust weights of
:func:`.boundary.texture_pair_weights`, ``evidence="texture"``); its Δ is
added in :func:`.image_kernels.join_delta`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.models.partition import Partition, relabel_vertices
from swcuts.models.base import SCORE_IMAGE, ModelState
from swcuts.models.boundary import PAIR_EVIDENCE, boundary_delta, contrast_weights, cut_weight
from swcuts.models.image_kernels import (
    FP_A0, FP_A1, FP_A2, FP_BOUNDARY, FP_EXP, FP_KAPPA, FP_RIDGE, N_MODEL_PARAMS, label_loglik)
from swcuts.models.regions import refresh_regions, region_change, region_cache, region_terms
from swcuts._numba.compiled_only import compiled_only
from swcuts.models.vertex_stats import (
    add_vertex, label_sums, n_stats, pixel_source, row_offsets, row_source, vertex_rows,
    window_histograms)

__all__ = ["ImageModel", "ImageState", "FAMILIES"]

FAMILIES = ("histogram", "linear", "quadratic")


@njit(cache=True)
def _gather(labels, R, new_label, vsrc, n_channels, n_bins, lstats, size, out_labels, out_stats,
            out_counts):
    """Statistics of every label touched by relabelling R after the move.

    Fills ``out_labels[:k]`` (old labels first, ``new_label`` last),
    ``out_stats[:k]`` and ``out_counts[:k]`` (vertex counts after the move);
    returns k.
    """
    k = 0
    out_labels[0] = new_label
    out_stats[0, :] = lstats[new_label]
    out_counts[0] = size[new_label]
    k = 1
    for v in R:
        old = labels[v]
        if old == new_label:
            continue
        slot = -1
        for t in range(1, k):
            if out_labels[t] == old:
                slot = t
                break
        if slot < 0:
            slot = k
            out_labels[k] = old
            out_stats[k, :] = lstats[old]
            out_counts[k] = size[old]
            k += 1
        add_vertex(vsrc, v, -1.0, n_channels, n_bins, out_stats[slot])
        out_counts[slot] -= 1
        add_vertex(vsrc, v, 1.0, n_channels, n_bins, out_stats[0])
        out_counts[0] += 1
    return k


@njit(cache=True)
def _delta(labels, R, new_label, vsrc, lstats, lloglik, size, indptr, indices, area,
           n_channels, n_bins, use_family, kappa, ridge, a0, a1, a2, exponent,
           in_r, mark_a, mark_b, stack, visited, out_labels, out_stats, out_counts):
    k = _gather(labels, R, new_label, vsrc, n_channels, n_bins, lstats, size, out_labels,
                out_stats, out_counts)
    if k == 1:
        return 0.0
    d = 0.0
    for t in range(k):
        lab = out_labels[t]
        before = size[lab]
        after = out_counts[t]
        if after > 0:
            d += label_loglik(out_stats[t], n_channels, n_bins, use_family, kappa, ridge)
        d -= lloglik[lab]
        # Prior: -a0 per label.
        if before == 0 and after > 0:
            d -= a0
        elif before > 0 and after == 0:
            d += a0
    dm, ds = region_change(labels, R, new_label, indptr, indices, area, exponent,
                           in_r, mark_a, mark_b, stack, visited)
    return d - a1 * dm - a2 * ds



# The set moves of ImageModel.delta / apply for compiled samplers that move
# any vertex set (split-merge's launch and merge moves): the same calls in
# the same order, so the same numbers. ``ma`` is ImageModel.set_move_arrays.
@compiled_only
def set_move_delta(ma, labels, size, R, new_label):
    """:meth:`ImageModel.delta` of relabelling the vertices ``R`` (any set)
    to ``new_label``, in compiled code."""
    (vsrc, lstats, lloglik, indptr, indices, area, bw, use_family, n_channels, n_bins, fp,
     comp_root, comp_area, mark_c, mark_a, mark_b, stack, visited, out_labels, out_stats,
     out_counts) = ma
    d = _delta(labels, R, new_label, vsrc, lstats, lloglik, size, indptr, indices, area,
               n_channels, n_bins, use_family, fp[FP_KAPPA], fp[FP_RIDGE], fp[FP_A0], fp[FP_A1],
               fp[FP_A2], fp[FP_EXP], mark_c, mark_a, mark_b, stack, visited, out_labels,
               out_stats, out_counts)
    if fp[FP_BOUNDARY] != 0.0:
        d += boundary_delta(fp[FP_BOUNDARY], R, R.size, new_label, labels, indptr, indices, bw,
                            mark_c)
    return d


@compiled_only
def set_move_apply(ma, labels, size, free_stack, n_free, R, new_label):
    """:meth:`ImageModel.apply` (without the change of log π, which is the
    caller's) in compiled code."""
    (vsrc, lstats, lloglik, indptr, indices, area, bw, use_family, n_channels, n_bins, fp,
     comp_root, comp_area, mark_c, mark_a, mark_b, stack, visited, out_labels, out_stats,
     out_counts) = ma
    k = _gather(labels, R, new_label, vsrc, n_channels, n_bins, lstats, size, out_labels,
                out_stats, out_counts)
    for t in range(k):  # ModelState.store_label_stats
        lab = out_labels[t]
        if out_counts[t] > 0:
            for q in range(out_stats.shape[1]):
                lstats[lab, q] = out_stats[t, q]
            lloglik[lab] = label_loglik(out_stats[t], n_channels, n_bins, use_family,
                                        fp[FP_KAPPA], fp[FP_RIDGE])
        else:
            for q in range(out_stats.shape[1]):
                lstats[lab, q] = 0.0
            lloglik[lab] = 0.0
    relabel_vertices(labels, size, free_stack, n_free, R, R.size, new_label)
    refresh_regions(labels, R, indptr, indices, area, comp_root, comp_area, mark_a, visited)


class ImageState(ModelState):
    """A chain state of :class:`ImageModel`: a :class:`~.base.ModelState`
    with the cache of connected regions.

    Attributes
    ----------
    comp_root : ndarray, shape (N,)
        A root vertex of the connected region of every vertex (the same for
        every vertex of a region).
    comp_area : ndarray, shape (N,)
        Area in pixels of the region, at its root (``comp_area[comp_root[v]]``).
    """

    def __init__(self, partition, stats, loglik, log_pi, comp_root, comp_area, scratch):
        super().__init__(partition, stats, loglik, log_pi, scratch)
        self.comp_root = comp_root
        self.comp_area = comp_area


class ImageModel:
    """Posterior of a segmentation of the atoms of an image (section 5).

    Parameters
    ----------
    features : (H, W, C) float array in [0, 1]
        Image channels (grey: C = 1; colour: CIELAB scaled to [0, 1]).
    atoms : (H, W) int array
        Atom label image, labels 0..N-1.
    graph : RegionGraph
        The adjacency graph of ``atoms``.
    bins : int
        Histogram bins B of the likelihood (the bin width 1/B sets the
        resolution of every entropy).
    families : sequence of str
        Likelihood families to choose from, a subset of :data:`FAMILIES`.
    a0, a1, a2 : float
        Prior weights of eq. 59: per label, per connected region and on
        Σ area^0.9 (area in pixels).
    kappa : float
        Weight of the complexity prior (1 is the BIC penalty).
    boundary : float
        Weight λ of the contrast-sensitive boundary term
        −λ Σ_{cut edges} w_ij (:mod:`.boundary`); 0: the paper's model.
    evidence : {"contrast", "texture", "learned"}
        The pixel-pair weights w of the boundary term
        (:data:`.boundary.PAIR_EVIDENCE`): pixel contrast, pixel
        contrast and the half-window histogram gradient together, or the
        log-odds of the learned boundary detector
        (:func:`.boundary.learned_pair_weights`).
    window : int
        0: the histogram family counts each pixel's own value (the paper).
        r > 0: it counts the histogram of the (2r + 1)² window around each
        pixel instead (:func:`.vertex_stats.window_histograms`), so that a
        texture whose elements are larger than an atom looks alike from atom
        to atom. Needs atoms larger than pixels.
    likelihood_weight : float
        ζ in (0, 1]: the region likelihood counts ζ·n of a label's n
        pixels (every statistics row is multiplied by ζ), the coarsened
        likelihood of Miller & Dunson (2019) with ζ the share of pixels
        that are independent evidence
        (:func:`.coarsening.effective_pixel_fraction`). 1: every pixel is an
        independent draw (the paper).
    boundary_map : (H, W) float array, optional
        With ``evidence="learned"``: the detector's boundary probability of
        ``features`` if already computed
        (:func:`swcuts.image.boundary_detector.boundary_probability`).
    evidence_offset : float
        With ``evidence="learned"``: the cost c added to every pixel pair's
        weight (:func:`.boundary.learned_pair_weights`).
    """

    #: Kernels may run this model's compiled fast path: its arithmetic is in
    #: :mod:`swcuts.models.image_kernels`, with parameters :meth:`kernel_params`.
    compiled = True

    def __init__(self, features, atoms, graph, *, bins=32, families=FAMILIES,
                 a0=50.0, a1=50.0, a2=1.0, kappa=1.0, exponent=0.9, boundary=0.0,
                 evidence="contrast", window=0, likelihood_weight=1.0, boundary_map=None,
                 evidence_offset=0.0):
        features = np.asarray(features, dtype=np.float64)
        if features.ndim == 2:
            features = features[..., None]
        families = tuple(families)
        unknown = [f for f in families if f not in FAMILIES]
        if unknown or not families:
            raise ValueError(f"unknown likelihood family {unknown}; choose from {', '.join(FAMILIES)}")
        self.graph = graph
        self.n_channels = int(features.shape[-1])
        self.n_bins = int(bins)
        self.use_family = np.array([f in families for f in FAMILIES], dtype=np.bool_)
        self.kappa = float(kappa)
        self.ridge = 1e-6
        self.a0, self.a1, self.a2 = float(a0), float(a1), float(a2)
        self.exponent = float(exponent)
        self.area = graph.pixel_count.astype(np.float64)
        atoms = np.asarray(atoms)
        self.window = int(window)
        self.likelihood_weight = float(likelihood_weight)
        if not 0.0 < self.likelihood_weight <= 1.0:
            raise ValueError(f"likelihood_weight must be in (0, 1], got {likelihood_weight!r}")
        if graph.n_vertices == atoms.size and not self.window and self.likelihood_weight == 1.0:
            # A pixel graph: keep what the rows are made of, not the rows
            # (window counts need the rows: a small image whose atoms are
            # its pixels).
            self.vsrc = self._pixel_source(features, atoms)
            self._vstats = None
        else:
            self._vstats = self._vertex_stats(features, atoms, graph.n_vertices)
            self.vsrc = row_source(self._vstats, self.n_channels)
        # The boundary term (models/boundary.py): -boundary * Σ_{cut edges} w_ij.
        if evidence not in PAIR_EVIDENCE:
            raise ValueError(f"unknown boundary evidence {evidence!r}; choose from {', '.join(PAIR_EVIDENCE)}")
        self.evidence = str(evidence)
        self.set_boundary(boundary, contrast_weights(features, atoms, graph, evidence=self.evidence,
                                                     probability=boundary_map, offset=evidence_offset)
                          if boundary else None)

    def with_prior(self, a0=None, a1=None) -> "ImageModel":
        """The same posterior with other prior weights per label (``a0``)
        and per region (``a1``) of eq. 59; None keeps this model's.

        A shallow copy: the statistics, the graph and the boundary term are
        shared (read only), so it costs no pass over the pixels. A kernel
        reads the weights when it is made (:meth:`kernel_params`).

        Examples
        --------
        >>> import numpy as np
        >>> from swcuts.graph.region_graph import RegionGraph
        >>> pixels = np.arange(4).reshape(2, 2)
        >>> model = ImageModel(np.zeros((2, 2)), pixels, RegionGraph.from_labels(pixels), a0=1.0, a1=2.0)
        >>> coarse = model.with_prior(a0=3.0, a1=6.0)
        >>> (coarse.a0, coarse.a1, model.a0), coarse.vstats is model.vstats
        ((3.0, 6.0, 1.0), True)
        """
        import copy

        _ = self.vstats  # computed once here (it is lazy), then shared by the copy
        out = copy.copy(self)
        out.a0 = self.a0 if a0 is None else float(a0)
        out.a1 = self.a1 if a1 is None else float(a1)
        return out

    def set_boundary(self, boundary, weights=None) -> None:
        """Set the boundary term −λ Σ_{cut edges} w_ij (:mod:`.boundary`).

        Parameters
        ----------
        boundary : float
            Its weight λ (0: none; ``weights`` is then not needed).
        weights : (E,) float array, optional
            w_ij of every edge of ``self.graph`` (:func:`.boundary.contrast_weights`).

        Examples
        --------
        >>> import numpy as np
        >>> from swcuts.graph.region_graph import RegionGraph
        >>> atoms = np.array([[0, 0, 1]] * 2)
        >>> m = ImageModel(np.full((2, 3), 0.5), atoms, RegionGraph.from_labels(atoms))
        >>> before = m.log_target(np.array([0, 1]))
        >>> m.set_boundary(3.0, np.array([2.0]))
        >>> m.log_target(np.array([0, 1])) - before
        -6.0
        """
        self.boundary = float(boundary)
        if self.boundary != 0.0:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.shape != (self.graph.n_edges,):
                raise ValueError(f"need one boundary weight per edge ({self.graph.n_edges}), "
                                 f"got shape {weights.shape}")
            self.boundary_weights = weights
            self.boundary_csr = np.ascontiguousarray(weights[self.graph.edge_ids])
        else:
            self.boundary_weights = np.zeros(self.graph.n_edges)
            self.boundary_csr = np.zeros(0)

    # ----------------------------------------------------------- statistics
    @property
    def vstats(self) -> np.ndarray:
        """(N, D) statistics row of every vertex.

        On a pixel graph the rows are made (N·D·8 bytes, 1.2 GB at a
        megapixel) only when asked for; the image kernels read
        :attr:`vsrc` instead (see :mod:`.vertex_stats`).
        """
        if self._vstats is None:
            self._vstats = vertex_rows(self.vsrc, self.n_vertices, self.n_channels, self.n_bins)
        return self._vstats

    @staticmethod
    def _coordinates(h, w):
        """x, y of every pixel (raveled), centred and scaled to about [-1, 1]."""
        scale = max(h, w) / 2.0
        yy, xx = np.mgrid[0:h, 0:w]
        x = ((xx - (w - 1) / 2.0) / scale).ravel()
        y = ((yy - (h - 1) / 2.0) / scale).ravel()
        return x, y

    def _pixel_source(self, features, atoms):
        h, w, C = features.shape
        lab = atoms.astype(np.int64).ravel()
        x, y = self._coordinates(h, w)
        vx = np.empty(lab.size)
        vy = np.empty(lab.size)
        vx[lab] = x
        vy[lab] = y
        value = np.empty((lab.size, C))
        value[lab] = features.reshape(-1, C)
        bins = np.clip((value * self.n_bins).astype(np.int64), 0, self.n_bins - 1).astype(np.int32)
        return pixel_source(vx, vy, value, bins, self.n_stats)

    def _vertex_stats(self, features, atoms, n):
        h, w, C = features.shape
        B = self.n_bins
        lab = atoms.astype(np.int64).ravel()
        x, y = self._coordinates(h, w)
        phi = np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=1)
        vals = features.reshape(-1, C)
        D = n_stats(C, B)
        off_m, off_b, off_s = row_offsets.py_func(C, B)
        st = np.zeros((n, D))
        st[:, 0] = np.bincount(lab, minlength=n)
        if self.window:  # each pixel counted through its window (model "window")
            st[:, 1:1 + C * B] = window_histograms(features, atoms, n, B, self.window)
        else:
            idx = np.clip((vals * B).astype(np.int64), 0, B - 1)
            flat = (lab[:, None] * C + np.arange(C)[None, :]) * B + idx
            st[:, 1:1 + C * B] = np.bincount(flat.ravel(), minlength=n * C * B).reshape(n, C * B)
        for i in range(6):
            for j in range(i, 6):
                s = np.bincount(lab, weights=phi[:, i] * phi[:, j], minlength=n)
                st[:, off_m + 6 * i + j] = s
                st[:, off_m + 6 * j + i] = s
        for c in range(C):
            for i in range(6):
                st[:, off_b + 6 * c + i] = np.bincount(lab, weights=phi[:, i] * vals[:, c], minlength=n)
        for c in range(C):
            st[:, off_s + c] = np.bincount(lab, weights=vals[:, c] ** 2, minlength=n)
        if self.likelihood_weight != 1.0:
            # Every statistic is a sum over pixels: scaled by ζ, the fits
            # (histogram, least squares) are unchanged and each family's
            # log-likelihood is ζ times its own (the BIC term gains κ·dim/2·log ζ).
            st *= self.likelihood_weight
        return st

    def _loglik(self, st):
        return label_loglik(st, self.n_channels, self.n_bins, self.use_family, self.kappa, self.ridge)

    def kernel_params(self, n_extra=0) -> np.ndarray:
        """The parameter vector ``fp`` of :mod:`.image_kernels` (layout
        ``FP_*``), with ``n_extra`` zero entries after it for a sampler's own."""
        fp = np.zeros(N_MODEL_PARAMS + n_extra)
        fp[FP_KAPPA], fp[FP_RIDGE], fp[FP_A0] = self.kappa, self.ridge, self.a0
        fp[FP_A1], fp[FP_A2], fp[FP_EXP] = self.a1, self.a2, self.exponent
        fp[FP_BOUNDARY] = self.boundary
        return fp

    def set_move_arrays(self, state) -> tuple:
        """The arrays that :func:`set_move_delta` and :func:`set_move_apply`
        take for ``state`` (the model's constants, the state's caches and
        scratch), in their order."""
        g = self.graph
        w = state.work
        return (self.vsrc, state.stats, state.loglik, g.indptr, g.indices, self.area,
                self.boundary_csr, self.use_family, self.n_channels, self.n_bins,
                self.kernel_params(), state.comp_root, state.comp_area, w.mark_c, w.mark_a,
                w.mark_b, w.stack, w.visited, *state.scratch)

    def cluster_score(self):
        """The log potential s(A) of a vertex set A taken as one region.

        s(A) = log-likelihood of A's statistics − (a0 + a1) − a2 |A|^exponent
        (the region's own terms of the posterior, without its boundary),
        for kernels that score sets before they are labels (tree-guided).

        Returns
        -------
        params : (11,) float array
            ``[SCORE_IMAGE, C, B, use_hist, use_lin, use_quad, kappa, ridge,
            a0 + a1, a2, exponent]``, read by the compiled score
            (:func:`swcuts.models.image_kernels.set_score`).
        score : None
            The score is compiled (no Python callable).
        """
        # The score reads the area as st[0] = ζ·n: a2 ζ^-e (ζ n)^e = a2 n^e.
        a2 = self.a2 / self.likelihood_weight ** self.exponent
        params = np.array([SCORE_IMAGE, self.n_channels, self.n_bins, *self.use_family.astype(float),
                           self.kappa, self.ridge, self.a0 + self.a1, a2, self.exponent],
                          dtype=np.float64)
        return params, None

    # ------------------------------------------------------------ interface
    @property
    def n_vertices(self) -> int:
        return self.graph.n_vertices

    @property
    def n_stats(self) -> int:
        """Length D of a statistics row (layout of :func:`label_loglik`)."""
        return n_stats(self.n_channels, self.n_bins)

    def new_state(self, labels) -> ImageState:
        """A chain state for the labelling ``labels`` (one label per vertex)."""
        part = Partition(labels)
        n = part.n_vertices
        lstats = label_sums(part.labels, self.vsrc, self.n_channels, self.n_bins, n)
        loglik = np.zeros(n)
        for lab in part.used_labels():
            loglik[lab] = self._loglik(lstats[lab])
        # Root vertex and area of the connected region of every vertex.
        comp_root, comp_area = region_cache(part.labels, self.graph.edges, self.area)
        scratch = (np.empty(n + 1, np.int64), np.empty((n + 1, lstats.shape[1])),
                   np.empty(n + 1, np.int64))
        return ImageState(part, lstats, loglik, self.log_target(part.labels), comp_root, comp_area,
                          scratch)

    def log_target(self, labels) -> float:
        """log π of a labelling, computed from scratch (the slow path)."""
        return float(sum(self.log_target_terms(labels).values()))

    def log_target_terms(self, labels) -> dict:
        """The terms of log π of a labelling, each computed from scratch.

        Parameters
        ----------
        labels : (N,) int array
            A label for every vertex of the graph.

        Returns
        -------
        dict
            ``likelihood`` (the labels' penalised log-likelihoods, eqs.
            55-58), ``labels`` (−a0 K), ``regions`` (−a1 m), ``areas``
            (−a2 Σ area^exponent; eq. 59) and ``boundary`` (−λ Σ w_ij over
            cut edges, :mod:`.boundary`); their sum is :meth:`log_target`.

        Examples
        --------
        >>> import numpy as np
        >>> from swcuts.graph.region_graph import RegionGraph
        >>> pixels = np.arange(6).reshape(2, 3)
        >>> image = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
        >>> model = ImageModel(image, pixels, RegionGraph.from_labels(pixels), a0=1.0, a1=0.0)
        >>> terms = model.log_target_terms(np.array([0, 0, 1, 0, 0, 1]))
        >>> sorted(terms), terms["labels"]
        (['areas', 'boundary', 'labels', 'likelihood', 'regions'], -2.0)
        """
        labels = np.asarray(labels, dtype=np.int64)
        used, inv = np.unique(labels, return_inverse=True)
        lstats = label_sums(inv, self.vsrc, self.n_channels, self.n_bins, used.size)
        m, s = region_terms(labels, self.graph.edges, self.area, self.exponent)
        b = cut_weight(labels, self.graph.edges, self.boundary_weights) if self.boundary else 0.0
        return {"likelihood": float(sum(self._loglik(st) for st in lstats)),
                "labels": -self.a0 * used.size, "regions": -self.a1 * m, "areas": -self.a2 * s,
                "boundary": -self.boundary * b}

    def delta(self, state: ModelState, R, new_label: int) -> float:
        """Change of log π when the vertices ``R`` are relabelled ``new_label``.

        ``new_label`` may be an existing label or an unused one. Cost: the
        statistics of R plus a search of the regions R touches.
        """
        R = np.asarray(R, dtype=np.int64)
        w = state.work
        g = self.graph
        d = _delta(state.partition.labels, R, int(new_label), self.vsrc, state.stats,
                   state.loglik, state.partition.size, g.indptr, g.indices, self.area,
                   self.n_channels, self.n_bins, self.use_family, self.kappa, self.ridge,
                   self.a0, self.a1, self.a2, self.exponent,
                   w.mark_c, w.mark_a, w.mark_b, w.stack, w.visited, *state.scratch)
        if self.boundary:
            d += boundary_delta(self.boundary, R, R.size, int(new_label), state.partition.labels,
                                g.indptr, g.indices, self.boundary_csr, w.mark_c)
        return d

    def apply(self, state: ModelState, R, new_label: int, delta: float) -> None:
        """Relabel ``R`` to ``new_label`` and update the caches; ``delta`` is
        the value :meth:`delta` returned for this move."""
        R = np.asarray(R, dtype=np.int64)
        out_labels, out_stats, out_counts = state.scratch
        k = _gather(state.partition.labels, R, int(new_label), self.vsrc, self.n_channels,
                    self.n_bins, state.stats, state.partition.size, out_labels, out_stats,
                    out_counts)
        state.store_label_stats(k, out_labels, out_stats, out_counts, self._loglik)
        state.partition.relabel(R, new_label)
        g = self.graph
        refresh_regions(state.partition.labels, R, g.indptr, g.indices, self.area,
                        state.comp_root, state.comp_area, state.work.mark_a, state.work.visited)
        state.log_pi += delta
