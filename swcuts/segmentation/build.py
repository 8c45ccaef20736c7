"""The posterior of one image, built from its prepared features: atoms, their
region graph, the edge probabilities q_ij (eq. 53) and the image model.
:func:`swcuts.segment` and :func:`swcuts.sample_posterior` both start here."""

from __future__ import annotations

import numpy as np

from swcuts.graph.edge_probabilities import kl_edge_probabilities, patch_histograms, vertex_histograms
from swcuts.graph.region_graph import RegionGraph
from swcuts.image.atoms import compute_atoms
from swcuts.inference.budget import phase_of
from swcuts.models.image import ImageModel

__all__ = ["build_posterior", "build_graph", "merge_atoms"]


def build_graph(features, atoms, n_atoms, *, seed, edges="kl", edge_scale=1.0, q_max=1.0, edge_power=1.0,
                atom_relief="gradient", boundary_map=False, atom_merge=None, min_merged=0, budget=None,
                detector_scales=None, detector_forest=None, fold_thin=False):
    """Atoms, their graph, edge probabilities and the learned detector's
    map of prepared ``features``: ``(atom label image, RegionGraph, q,
    boundary map or None)``. The detector runs when the edges or the atoms'
    relief need it, or when ``boundary_map`` asks for it. ``edges=None``:
    no edge probabilities (q is None; for a caller that computes them on
    another graph). ``min_merged``: keep the atoms unmerged when the merge
    would leave fewer than this many. ``detector_scales``: the detector's
    ``scales`` (default its own, :data:`~swcuts.image.boundary_detector.SCALES`);
    ``detector_forest``: its ``forest`` (default none: the detector alone).
    ``fold_thin``: the merge folds slivers too (:func:`merge_atoms`).
    Other parameters as :func:`build_posterior`."""
    h, w = features.shape[:2]
    prob = None
    relief = atom_relief == "learned" and atoms == "watershed"
    if boundary_map or edges == "learned" or relief:
        from swcuts.image.boundary_detector import boundary_probability

        with phase_of(budget, "boundaries", "the learned boundary detector"):
            prob = boundary_probability(features, scales=detector_scales, forest=detector_forest)
    with phase_of(budget, "atoms", f"{atoms} on {w}x{h} pixels"):
        atom_labels = compute_atoms(features, atoms, n_atoms, seed=seed, relief=prob if relief else None)
    with phase_of(budget, "graph"):
        graph = RegionGraph.from_labels(atom_labels)
    if atom_merge is not None and relief:
        merged, merged_graph = merge_atoms(atom_labels, graph, prob, *atom_merge, budget=budget, fold_thin=fold_thin)
        if merged_graph.n_vertices >= min_merged:
            atom_labels, graph = merged, merged_graph
    if edges is None:
        return atom_labels, graph, None, prob
    with phase_of(budget, "edges", f"{graph.n_edges:,} edges"):
        if edges == "learned":
            from swcuts.graph.learned_edges import learned_edge_probabilities

            q = learned_edge_probabilities(features, atom_labels, graph, prob)
            q = np.minimum(q if edge_power == 1.0 else q ** edge_power, q_max)
        else:
            if atoms == "pixels":
                hist = patch_histograms(features, radius=1, bins=15)
            else:
                hist = vertex_histograms(features, atom_labels, graph.n_vertices, bins=15)
            q = np.minimum(kl_edge_probabilities(hist, graph.edges, scale=edge_scale), q_max)
    return atom_labels, graph, q, prob


def merge_atoms(atoms, graph, probability, level, min_pixels, budget=None, fold_thin=False):
    """``atoms`` (and their ``graph``) merged along their weakest boundaries
    of the detector's ``probability`` map
    (:func:`swcuts.graph.superatoms.merge_weakest` on the clipped log-odds of
    each pixel pair, :func:`swcuts.models.boundary.learned_pair_weights`):
    atoms below ``min_pixels`` per 10^5 pixels first (and, with
    ``fold_thin``, the slivers without an interior pixel,
    :func:`swcuts.graph.superatoms.thin_atoms`; the sampling posterior's
    merge), then every boundary whose mean log-odds is below ``level``
    (:func:`swcuts.segmentation.image_models.model_atom_merge`).

    Examples
    --------
    >>> atoms = np.array([[0, 0, 1, 1, 2, 2]] * 4)
    >>> p = np.array([[0.01, 0.01, 0.01, 0.9, 0.9, 0.01]] * 4)   # only 1|2 is a boundary
    >>> merged, graph = merge_atoms(atoms, RegionGraph.from_labels(atoms), p, level=-2.0, min_pixels=0)
    >>> merged[0].tolist(), graph.n_vertices
    ([0, 0, 0, 0, 1, 1], 2)
    """
    from swcuts.graph.superatoms import merge_weakest
    from swcuts.models.boundary import learned_pair_weights

    h, w = atoms.shape
    with phase_of(budget, "atoms merged", f"below mean log-odds {level:g}"):
        strength = -learned_pair_weights(atoms, probability=probability)
        merged = merge_weakest(atoms, graph, strength, max_level=level,
                               min_size=round(min_pixels * h * w / 1e5), fold_thin=fold_thin)
    return merged.labels, merged.graph


def build_posterior(features, atoms, n_atoms, *, seed, bins, a0, a1, a2, kappa, edge_scale, q_max,
                    boundary=0.0, evidence="contrast", window=0, likelihood_weight=1.0, edges="kl",
                    evidence_offset=0.0, edge_power=1.0, atom_relief="gradient", atom_merge=None, budget=None):
    """Atoms, their graph, edge probabilities and the image posterior of
    prepared ``features``: ``(atom label image, RegionGraph, q, ImageModel)``.
    ``edges``: "kl", the q_ij of eq. 53, or "learned"
    (:func:`swcuts.graph.learned_edges.learned_edge_probabilities`, raised
    to ``edge_power``). ``atom_relief``: "gradient", or "learned" for
    watershed atoms flooded on the learned detector's boundary probability
    (:func:`swcuts.segmentation.image_models.model_atom_relief`);
    ``atom_merge``: None, or ``(level, min_pixels)``: those atoms merged
    along their weakest boundaries (:func:`merge_atoms`).
    ``edge_scale`` is used as given: the noise rule is applied once per image
    before (:meth:`swcuts.segmentation.options.RunOptions.on_image`). ``budget``: the
    :class:`~swcuts.inference.budget.Budget` of the run, which records the phases
    ``atoms``, ``graph``, ``edges`` and ``model``."""
    atom_labels, graph, q, boundary_map = build_graph(
        features, atoms, n_atoms, seed=seed, edges=edges, edge_scale=edge_scale, q_max=q_max,
        edge_power=edge_power, atom_relief=atom_relief, boundary_map=evidence == "learned" and boundary,
        atom_merge=atom_merge, budget=budget)
    with phase_of(budget, "model", f"statistics of {graph.n_vertices:,} atoms"):
        model = ImageModel(features, atom_labels, graph, bins=bins, a0=a0, a1=a1, a2=a2, kappa=kappa,
                           boundary=boundary, evidence=evidence, window=window,
                           likelihood_weight=likelihood_weight, boundary_map=boundary_map,
                           evidence_offset=evidence_offset)
    return atom_labels, graph, q, model
