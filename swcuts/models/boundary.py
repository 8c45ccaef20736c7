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

On a graph of atoms the sum collects, for each edge (i, j), the pixel
pairs across the shared boundary of atoms i and j into one weight w_ij,
so that log p_b(X) = −λ Σ_{(i,j): X_i ≠ X_j} w_ij.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy import ndimage as ndi

from ..graph import pixel_pairs
from ..primitives import compiled_only

__all__ = ["contrast_weights", "pair_weights", "edge_weights", "boundary_change", "boundary_delta",
           "cut_weight", "SMOOTHING_SIGMA"]

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
        :func:`swcuts.graph.pixel_pairs` (horizontal pairs first): 1 across
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


def edge_weights(pairs, atoms, graph):
    """Boundary weights w_ij of the edges of an atom graph from the weights
    of the pixel pairs (:func:`pair_weights`): for each edge of
    ``graph.edges``, the sum over the pixel pairs across it.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.graph import RegionGraph
    >>> atoms = np.array([[0, 0, 1]] * 2)
    >>> edge_weights(np.arange(7.0), atoms, RegionGraph.from_labels(atoms))   # pairs 1 and 3
    array([4.])
    """
    a, b = pixel_pairs(np.asarray(atoms, dtype=np.int64))
    cut = a != b
    n = graph.n_vertices
    keys = np.minimum(a[cut], b[cut]) * n + np.maximum(a[cut], b[cut])
    edge_keys = graph.edges[:, 0] * n + graph.edges[:, 1]
    return np.bincount(np.searchsorted(edge_keys, keys), weights=np.asarray(pairs)[cut],
                       minlength=graph.n_edges)


def contrast_weights(features, atoms, graph, sigma=SMOOTHING_SIGMA):
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

    Returns
    -------
    (E,) float64 array
        For each edge of ``graph.edges``, Σ exp(−β ‖z_p − z_q‖²) over the
        pixel pairs across it: at most ``graph.boundary_length``, near 0
        along a strong edge (:func:`edge_weights` of :func:`pair_weights`).

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.graph import RegionGraph
    >>> image = np.zeros((4, 6)); image[:, 3:] = 1.0     # an edge between columns 2 and 3
    >>> atoms = np.repeat([[0, 1, 1, 2, 2, 3]], 4, axis=0)
    >>> graph = RegionGraph.from_labels(atoms)
    >>> w = contrast_weights(image, atoms, graph, sigma=0)
    >>> print(np.round(w / graph.boundary_length, 2))   # per pixel pair: only the edge is cheap
    [1.   0.01 1.  ]
    """
    return edge_weights(pair_weights(features, sigma), atoms, graph)


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
