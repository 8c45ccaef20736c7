"""Contrast-sensitive boundary evidence of the image posterior.

The boundary term of :class:`~swcuts.models.image.ImageModel` pays for
every pixel of region boundary, less where the image has an edge:

    log p_b(X) = −λ Σ_{⟨p,q⟩ : X(p) ≠ X(q)} exp(−β ‖z_p − z_q‖²)

over 4-adjacent pixel pairs, with z the image features smoothed by a
Gaussian of σ = 1 pixel and β = 1 / (2 ⟨‖z_p − z_q‖²⟩) the image's own
contrast scale (Boykov & Jolly 2001, eq. 3; Rother, Kolmogorov & Blake
2004, "GrabCut", eqs. 4-5). A boundary along a strong edge costs almost
nothing, one across a smooth area costs λ per pixel: the term removes the
cuts that a region likelihood alone puts through smooth shading and
texture, and it moves boundaries onto the edges people draw.

Texture evidence (model "texture"): inside a texture (zebra stripes,
foliage, gravel) the pixel contrast is high everywhere, so the term above
makes cuts between the texture's colour modes nearly free, and the
region likelihood gains ~n H(mix) nats by such splits. The texture
weight (:func:`texture_pair_weights`)

    w_pq = max(exp(−g_pq / (2⟨g⟩)), exp(−β ‖z_p − z_q‖²))

is cheap only where the pixel contrast and the histogram gradient g_pq
agree on an edge; g_pq is the χ² distance between the colour histograms
of the two (2r+1) x r half-windows on either side of the pair (the
oriented histogram gradient of Martin, Fowlkes & Malik 2004, "Learning to
detect natural image boundaries", and of Arbelaez, Maire, Fowlkes & Malik
2011, gPb eq. 1), r = 5 pixels, 8 bins per channel over each channel's
1st-99th percentile range.

On a graph of atoms the sum collects, for each edge (i, j), the pixel
pairs across the shared boundary of atoms i and j into one weight w_ij,
so that log p_b(X) = −λ Σ_{(i,j): X_i ≠ X_j} w_ij.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

from swcuts.graph.region_graph import pair_edges, pixel_pairs
from swcuts._numba.compiled_only import compiled_only

__all__ = ["contrast_weights", "pair_weights", "edge_weights", "boundary_change", "boundary_delta",
           "cut_weight", "histogram_gradient", "texture_pair_weights", "evidence_pairs",
           "learned_pair_weights", "PAIR_EVIDENCE", "SMOOTHING_SIGMA", "MAX_LOG_ODDS"]

#: σ (pixels) of the Gaussian that smooths the features before their
#: differences are taken: pixel noise alone should not look like an edge.
SMOOTHING_SIGMA = 1.0


def pair_weights(features, sigma=SMOOTHING_SIGMA):
    """exp(−β ‖z_p − z_q‖²) of every 4-adjacent pixel pair of an image.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
        The model's image features.
    sigma : float
        Smoothing of the features before differencing (pixels; 0: none).

    Returns
    -------
    float64 array
        One weight per pixel pair, in the order of
        :func:`swcuts.graph.region_graph.pixel_pairs` (horizontal pairs first): 1 across
        a flat area, near 0 across a strong edge.

    Examples
    --------
    >>> import numpy as np
    >>> image = np.zeros((2, 3)); image[:, 2] = 1.0
    >>> print(np.round(pair_weights(image, sigma=0), 2))    # 4 horizontal, 3 vertical pairs
    [1.   0.17 1.   0.17 1.   1.   1.  ]
    """
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 2:
        z = z[..., None]
    if sigma > 0:
        z = ndi.gaussian_filter(z, sigma=(sigma, sigma, 0), mode="nearest")
    d = np.concatenate([((z[:, 1:] - z[:, :-1]) ** 2).sum(-1).ravel(),
                        ((z[1:, :] - z[:-1, :]) ** 2).sum(-1).ravel()])
    mean = d.mean() if d.size else 0.0
    return np.exp(-d / (2.0 * mean)) if mean > 0 else np.ones_like(d)


def _window_sums(plane, radius):
    """Sums of ``plane`` over the two half-windows on either side of every
    horizontal pixel pair: (left, right), each (H, W-1); the window of the
    pair (y, x)-(y, x+1) is rows y-r..y+r, columns x-r+1..x (left) and
    x+1..x+r (right), the image mirrored beyond its border."""
    r = radius
    p = np.pad(plane, r, mode="symmetric")
    c = np.cumsum(p, axis=0)
    c = np.concatenate([np.zeros((1, c.shape[1])), c], axis=0)
    rows = c[2 * r + 1:] - c[:-2 * r - 1]                     # (H, W + 2r): vertical sums
    c = np.concatenate([np.zeros((rows.shape[0], 1)), np.cumsum(rows, axis=1)], axis=1)
    w = plane.shape[1]
    x = np.arange(w - 1) + r                                    # padded column of x
    left = c[:, x + 1] - c[:, x + 1 - r]
    right = c[:, x + 1 + r] - c[:, x + 1]
    return left, right


def histogram_gradient(features, radius=5, bins=8):
    """Texture-robust boundary evidence of every 4-adjacent pixel pair: the
    χ² distance between the colour histograms of the two half-windows on
    either side of the pair.

    The histogram difference of half-discs is the brightness/colour/texture
    gradient of Martin, Fowlkes & Malik (2004) and Arbelaez et al. (2011,
    "Contour detection and hierarchical image segmentation", eq. 1), here
    with square half-windows of (2r+1) x r pixels: inside a texture both
    halves hold the same mixture of colours and the distance is small,
    however strong the pixel edges are; across the boundary of two
    materials the halves differ.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
        The model's image features.
    radius : int
        r: half-window size in pixels (at least 1).
    bins : int
        Histogram bins per channel, spread over each channel's own range
        (1st to 99th percentile).

    Returns
    -------
    float64 array
        One distance per pixel pair, in the order of
        :func:`swcuts.graph.region_graph.pixel_pairs` (horizontal pairs first): the sum
        over channels of χ²(h, h') = ½ Σ_b (h_b − h'_b)² / (h_b + h'_b) of
        the normalised half-window histograms, in [0, C].

    Examples
    --------
    >>> import numpy as np
    >>> stripes = np.tile([0.0, 1.0], (8, 8))            # a fine texture: 8 x 16
    >>> image = np.concatenate([stripes, np.full((8, 16), 0.5)], axis=1)
    >>> g = histogram_gradient(image, radius=2, bins=4)
    >>> horizontal = g[:8 * 31].reshape(8, 31)
    >>> bool(horizontal[:, 15].min() > 5 * horizontal[:, 2:13].max())   # the material edge
    True
    """
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 2:
        z = z[..., None]
    radius = max(int(radius), 1)
    h, w, n_channels = z.shape
    hor = np.zeros((h, w - 1))
    ver = np.zeros((w, h - 1))
    area = float((2 * radius + 1) * radius)
    for c in range(n_channels):
        ch = z[..., c]
        lo, hi = np.percentile(ch, [1, 99])
        scale = bins / (hi - lo) if hi > lo else 0.0
        idx = np.clip(((ch - lo) * scale).astype(np.int64), 0, bins - 1)
        for b in range(bins):
            plane = (idx == b).astype(np.float64)
            if not plane.any():
                continue
            for out, pl in ((hor, plane), (ver, plane.T)):
                left, right = _window_sums(pl, radius)
                s = left + right
                np.divide((left - right) ** 2, s, out=s, where=s > 0)
                out += s
    return np.concatenate([hor.ravel(), ver.T.ravel()]) / (2.0 * area)


def texture_pair_weights(features, radius=5, bins=8, sigma=SMOOTHING_SIGMA):
    """Texture-robust pixel-pair boundary weights: a cut is cheap only where
    both the pixel contrast and the histogram gradient mark an edge.

        w_pq = max(exp(−g_pq / (2⟨g⟩)), exp(−β ‖z_p − z_q‖²))

    with g the :func:`histogram_gradient` (half-window colour histograms,
    Martin, Fowlkes & Malik 2004; Arbelaez et al. 2011) and the second
    weight that of :func:`pair_weights` (Boykov & Jolly 2001). Inside a
    texture the pixel contrast is high but the two half-windows hold the
    same colours, so a cut there costs as much as one across a flat area;
    across the boundary of two materials both are low, and the pixel
    contrast puts the cheap pairs on the edge itself.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
        The model's image features.
    radius : int
        Half-window size of the histogram gradient (pixels).
    bins : int
        Histogram bins per channel of the histogram gradient.
    sigma : float
        Smoothing of the features before the pixel differences (pixels).

    Returns
    -------
    float64 array
        One weight in (0, 1] per pixel pair, in the order of
        :func:`swcuts.graph.region_graph.pixel_pairs`.

    Examples
    --------
    >>> import numpy as np
    >>> stripes = np.tile([0.0, 1.0], (8, 8))
    >>> image = np.concatenate([stripes, np.full((8, 16), 0.5)], axis=1)
    >>> w = texture_pair_weights(image, radius=2, bins=4)[:8 * 31].reshape(8, 31)
    >>> bool(w[:, 15].max() < w[:, 2:13].min())     # cheap at the edge, dear inside the stripes
    True
    >>> c = pair_weights(image)[:8 * 31].reshape(8, 31)   # pixel contrast alone: the reverse
    >>> bool(c[:, 15].max() < c[:, 2:13].min())
    False
    """
    g = histogram_gradient(features, radius, bins)
    mean = g.mean() if g.size else 0.0
    wt = np.exp(-g / (2.0 * mean)) if mean > 0 else np.ones_like(g)
    return np.maximum(wt, pair_weights(features, sigma))


#: Log-odds of the learned detector are clipped to ±this (a probability of
#: 1e-4 or 1 − 1e-4): one pixel pair never decides a cut alone.
MAX_LOG_ODDS = 9.2


def learned_pair_weights(features, probability=None, offset=0.0):
    """Boundary weights of every 4-adjacent pixel pair from the learned
    boundary detector (model "learned"):

        w_pq = −log(p_pq / (1 − p_pq)) + c,   p_pq = max(P(p), P(q))

    with P the calibrated probability that an annotator draws a boundary at
    a pixel (:func:`swcuts.image.boundary_detector.boundary_probability`);
    an annotator marks a region boundary on one of the two pixels it
    separates, hence the max. −λ Σ_{cut pairs} w_pq is then λ times the
    log-odds of the cut pairs being boundaries: a cut where the detector
    sees no boundary costs, one along a detected boundary earns (w < 0).
    The offset c is a cost per pixel pair of boundary whatever the evidence
    (with c = log(π0 / (1 − π0)) the evidence is the log-likelihood ratio
    of a boundary against the prior odds π0): λ c is the weight of the
    boundary length.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
        The model's image features.
    probability : (H, W) float array, optional
        The detector's map of these features, if already computed.
    offset : float
        c, added to every pair's weight.

    Returns
    -------
    float64 array
        One weight per pixel pair, in the order of
        :func:`swcuts.graph.region_graph.pixel_pairs`: c plus a value in
        ±:data:`MAX_LOG_ODDS`.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.01, 0.2, 0.99]])       # pairs (0.01, 0.2) and (0.2, 0.99)
    >>> print(np.round(learned_pair_weights(np.zeros((1, 3)), probability=p), 2))
    [ 1.39 -4.6 ]
    """
    if probability is None:
        from swcuts.image.boundary_detector import boundary_probability

        probability = boundary_probability(features)
    prob = np.asarray(probability, dtype=np.float64)
    hor = np.maximum(prob[:, 1:], prob[:, :-1]).ravel()
    ver = np.maximum(prob[1:, :], prob[:-1, :]).ravel()
    p = np.concatenate([hor, ver])
    with np.errstate(divide="ignore"):
        odds = np.log(p) - np.log1p(-p)
    return offset - np.clip(odds, -MAX_LOG_ODDS, MAX_LOG_ODDS)


#: Pixel-pair evidence of the boundary term by name (``evidence`` of
#: :class:`~swcuts.models.image.ImageModel` and of :data:`swcuts.segmentation.options.MODELS`).
PAIR_EVIDENCE = {"contrast": pair_weights, "texture": texture_pair_weights, "learned": learned_pair_weights}


def evidence_pairs(features, evidence="contrast"):
    """The pixel-pair weights of the named boundary evidence
    (:data:`PAIR_EVIDENCE`).

    Examples
    --------
    >>> import numpy as np
    >>> image = np.zeros((2, 3)); image[:, 2] = 1.0
    >>> evidence_pairs(image, "texture").shape     # 4 horizontal and 3 vertical pairs
    (7,)
    """
    if evidence not in PAIR_EVIDENCE:
        raise ValueError(f"unknown boundary evidence {evidence!r}; choose from {', '.join(PAIR_EVIDENCE)}")
    return PAIR_EVIDENCE[evidence](features)


def edge_weights(pairs, atoms, graph):
    """Boundary weights w_ij of the edges of an atom graph from the weights
    of the pixel pairs (:func:`pair_weights`): for each edge of
    ``graph.edges``, the sum over the pixel pairs across it.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> atoms = np.array([[0, 0, 1]] * 2)
    >>> edge_weights(np.arange(7.0), atoms, RegionGraph.from_labels(atoms))   # pairs 1 and 3
    array([4.])
    """
    cut, edge = pair_edges(atoms, graph)
    return np.bincount(edge, weights=np.asarray(pairs)[cut], minlength=graph.n_edges)


def contrast_weights(features, atoms, graph, sigma=SMOOTHING_SIGMA, evidence="contrast", probability=None,
                     offset=0.0):
    """Boundary weights w_ij of the edges of an atom graph.

    Parameters
    ----------
    features : (H, W) or (H, W, C) float array
        The model's image features.
    atoms : (H, W) int array
        The atom label image of ``graph`` (labels 0..N-1).
    graph : RegionGraph
        Adjacency graph of ``atoms``.
    sigma : float
        Smoothing of the features before differencing (pixels; 0: none).
    evidence : {"contrast", "texture", "learned"}
        The pixel-pair weights summed: :func:`pair_weights` (with ``sigma``),
        :func:`texture_pair_weights` or :func:`learned_pair_weights`.
    probability : (H, W) float array, optional
        With ``evidence="learned"``: the detector's map, if already computed.
    offset : float
        With ``evidence="learned"``: the offset c of :func:`learned_pair_weights`.

    Returns
    -------
    (E,) float64 array
        For each edge of ``graph.edges``, Σ exp(−β ‖z_p − z_q‖²) over the
        pixel pairs across it: at most ``graph.boundary_length``, near 0
        along a strong edge (:func:`edge_weights` of :func:`pair_weights`).

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> image = np.zeros((4, 6)); image[:, 3:] = 1.0     # an edge between columns 2 and 3
    >>> atoms = np.repeat([[0, 1, 1, 2, 2, 3]], 4, axis=0)
    >>> graph = RegionGraph.from_labels(atoms)
    >>> w = contrast_weights(image, atoms, graph, sigma=0)
    >>> print(np.round(w / graph.boundary_length, 2))   # per pixel pair: only the edge is cheap
    [1.   0.01 1.  ]
    """
    if evidence == "contrast":
        pairs = pair_weights(features, sigma)
    elif evidence == "learned":
        pairs = learned_pair_weights(features, probability, offset)
    else:
        pairs = evidence_pairs(features, evidence)
    return edge_weights(pairs, atoms, graph)


def cut_weight(labels, edges, weights) -> float:
    """Σ w_ij over the edges whose ends have different labels."""
    labels = np.asarray(labels)
    return float(weights[labels[edges[:, 0]] != labels[edges[:, 1]]].sum())


@compiled_only
def boundary_change(R, n_r, new_label, labels, indptr, indices, csr_weights, in_r):
    """Change of the cut weight Σ_{X_i ≠ X_j} w_ij when the vertices
    ``R[:n_r]`` get ``new_label``; ``csr_weights`` holds w in the CSR order
    of ``indices`` (``weights[graph.edge_ids]``).

    Cost O(Σ_{v∈R} deg v). ``in_r`` must be all zero on entry; it is all
    zero again on return.
    """
    for t in range(n_r):
        in_r[R[t]] = 1
    d = 0.0
    for t in range(n_r):
        v = R[t]
        old = labels[v]
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            lu = labels[u]
            if in_r[u]:
                # Inside R: uncut after the move; counted once, from its smaller end.
                if u > v and lu != old:
                    d -= csr_weights[p]
            elif lu != new_label:
                if lu == old:
                    d += csr_weights[p]
            elif lu != old:
                d -= csr_weights[p]
    for t in range(n_r):
        in_r[R[t]] = 0
    return d


@compiled_only
def boundary_delta(lam, R, n_r, new_label, labels, indptr, indices, csr_weights, in_r):
    """The boundary term's part of Δ log π when the vertices ``R[:n_r]``
    get ``new_label``: −λ · :func:`boundary_change` (0 when λ = 0, and
    ``csr_weights`` is then not read: it may be empty). Every kernel adds
    the term through this function."""
    if lam == 0.0:
        return 0.0
    return -lam * boundary_change(R, n_r, new_label, labels, indptr, indices, csr_weights, in_r)
