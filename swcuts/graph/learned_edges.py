"""Learned edge probabilities q_ij for the clustering step: the calibrated
probability that atoms i and j lie in the same segment, given the evidence
on their edge (:func:`learned_edge_probabilities`).

Barbu & Zhu's eq. 53 (:func:`swcuts.graph.edge_probabilities.kl_edge_probabilities`)
is a hand-made bond strength from the two atoms' histograms alone. Here a
small network (one hidden tanh layer) turns per-edge features into q_ij:
the boundary probability map (a learned detector's,
:func:`swcuts.image.boundary_detector.boundary_probability`, passed in:
``graph`` does not import ``image``) along the pixel pairs across the
edge (mean, quantiles, maximum, mean log-odds), the eq.-53 divergence of
the two atoms' histograms, the distance of their mean colours, the length
of their shared boundary and their sizes. It was trained on BSDS500
train + val photos with watershed atoms (``benchmarks/train_boundaries.py
--edges``): the label of an edge is the share of annotators whose
majority segment of atom i is that of atom j. The weights ship in
``learned_edges.npz`` beside this module.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from swcuts.graph.edge_probabilities import Q_MAX, kl_edge_probabilities, vertex_histograms
from swcuts.graph.region_graph import pair_edges, pixel_pairs
from swcuts.io.errors import InputError
from swcuts.io.weights import WeightsFile, write_weights

__all__ = ["learned_edge_probabilities", "edge_features", "load_edge_model", "save_edge_model",
           "EDGE_FEATURES", "DEFAULT_PATH", "FORMAT_VERSION", "REBUILD"]

#: The shipped weights.
DEFAULT_PATH = Path(__file__).with_name("learned_edges.npz")
#: Version of the weights file's layout.
FORMAT_VERSION = 1
#: The command that rebuilds the weights file.
REBUILD = "python benchmarks/train_boundaries.py --edges"
#: The per-edge features, in the order of :func:`edge_features`.
EDGE_FEATURES = ("mean", "q10", "q25", "median", "q75", "q90", "max", "mean_logit", "log1p_kl", "colour_distance",
                 "log_length", "log_small", "log_large")
_ARRAYS = ("mean", "std", "w1", "b1", "w2", "b2")

_WEIGHTS = WeightsFile("learned edge weights", FORMAT_VERSION, REBUILD)


def load_edge_model(path=None) -> dict:
    """The trained weights of :func:`learned_edge_probabilities` (cached).

    Parameters
    ----------
    path : str or path-like, optional
        Default the shipped :data:`DEFAULT_PATH`.

    Returns
    -------
    dict
        Arrays ``colour`` and ``grey`` (each: ``mean``, ``std``, ``w1``,
        ``b1``, ``w2``, ``b2``), ``training`` and ``version``.

    Raises
    ------
    InputError
        One line naming the file and the command that rebuilds it, if the
        file is missing, unreadable, of another version or incomplete.

    Examples
    --------
    >>> load_edge_model()["version"] == FORMAT_VERSION
    True
    """
    return _WEIGHTS.load(DEFAULT_PATH if path is None else path, _parse)


def _parse(data, p) -> dict:
    model = {"version": FORMAT_VERSION, "training": str(data.get("training", "")), "path": str(p)}
    for mode in ("colour", "grey"):
        arrays = {name: _WEIGHTS.array(data, f"{mode}_{name}", p) for name in _ARRAYS}
        if arrays["mean"].shape != (len(EDGE_FEATURES),) or arrays["w1"].shape[0] != len(EDGE_FEATURES):
            _WEIGHTS.refuse(p, f"the {mode} arrays do not fit {len(EDGE_FEATURES)} edge features")
        model[mode] = arrays
    return model


def save_edge_model(path, modes: dict, training: str) -> None:
    """Write a weights file that :func:`load_edge_model` reads."""
    out = {"format_version": np.int64(FORMAT_VERSION), "training": np.str_(training)}
    for mode, arrays in modes.items():
        for name in _ARRAYS:
            out[f"{mode}_{name}"] = np.asarray(arrays[name], dtype=np.float64)
    write_weights(path, out)
    _WEIGHTS.forget()


def edge_features(features, atoms, graph, boundary_map) -> np.ndarray:
    """The per-edge inputs of the network, in the order of :data:`EDGE_FEATURES`.

    Parameters
    ----------
    features : (H, W, C) float array
        The image features (prepare_image's).
    atoms : (H, W) int array
        The atom labels of ``graph`` (0..N-1).
    graph : RegionGraph
        Adjacency graph of ``atoms``.
    boundary_map : (H, W) float array in (0, 1)
        Per-pixel boundary probability.

    Returns
    -------
    (E, 13) float64 array
        The boundary map over the pixel pairs across each edge (the larger
        of the two pixels of a pair): its mean, 10/25/50/75/90 % quantiles,
        maximum and mean log-odds; log(1 + symmetric KL) of the atoms'
        15-bin histograms (eq. 53's divergence); the distance of the atoms'
        mean features; log of the boundary length, of the smaller and of the
        larger atom's pixel count.
    """
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 2:
        z = z[..., None]
    atoms = np.asarray(atoms, dtype=np.int64)
    bmap = np.asarray(boundary_map, dtype=np.float64)
    if bmap.shape != atoms.shape or z.shape[:2] != atoms.shape:
        raise InputError(f"learned_edge_probabilities: features {z.shape[:2]}, atoms {atoms.shape} and boundary "
                         f"map {bmap.shape} must have the same height and width")
    n, n_edges = graph.n_vertices, graph.n_edges
    out = np.zeros((n_edges, len(EDGE_FEATURES)))
    if n_edges == 0:
        return out
    cut, eid = pair_edges(atoms, graph)
    va, vb = pixel_pairs(bmap)
    v = np.clip(np.maximum(va[cut], vb[cut]), 1e-6, 1 - 1e-6)
    order = np.lexsort((v, eid))
    v_sorted, e_sorted = v[order], eid[order]
    count = np.bincount(eid, minlength=n_edges)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    out[:, 0] = np.bincount(eid, weights=v, minlength=n_edges) / np.maximum(count, 1)
    for k, q in enumerate((0.1, 0.25, 0.5, 0.75, 0.9)):
        out[:, 1 + k] = v_sorted[start + np.floor(q * (count - 1)).astype(np.int64)]
    out[:, 6] = v_sorted[start + count - 1]
    assert (e_sorted[start] == np.arange(n_edges)).all()
    out[:, 7] = np.bincount(eid, weights=np.log(v / (1 - v)), minlength=n_edges) / np.maximum(count, 1)
    hist = vertex_histograms(z, atoms, n, bins=15)
    q = kl_edge_probabilities(hist, graph.edges, scale=1.0)
    out[:, 8] = np.log1p(-2.0 * np.log(np.maximum(q, 1e-300)))
    sums = np.stack([np.bincount(atoms.ravel(), weights=z[..., c].ravel(), minlength=n) for c in range(z.shape[2])], 1)
    size = np.bincount(atoms.ravel(), minlength=n).astype(np.float64)
    means = sums / np.maximum(size, 1)[:, None]
    i, j = graph.edges[:, 0], graph.edges[:, 1]
    out[:, 9] = np.sqrt(((means[i] - means[j]) ** 2).sum(1))
    out[:, 10] = np.log(count.astype(np.float64))
    out[:, 11] = np.log(np.minimum(size[i], size[j]))
    out[:, 12] = np.log(np.maximum(size[i], size[j]))
    return out


def network(x, arrays) -> np.ndarray:
    """The network's probability of rows of :func:`edge_features`."""
    h = np.tanh(((x - arrays["mean"]) / arrays["std"]) @ arrays["w1"] + arrays["b1"])
    return 1.0 / (1.0 + np.exp(-(h @ arrays["w2"] + float(arrays["b2"]))))


def learned_edge_probabilities(features, atoms, graph, boundary_map, *, model=None) -> np.ndarray:
    """Learned q_ij: P(atoms i and j in the same segment | their edge).

    Parameters
    ----------
    features : (H, W, 3) or (H, W, 1) float array
        The image features of :func:`swcuts.image.prepare.prepare_image`
        (a grey image uses the model trained on grey photos).
    atoms : (H, W) int array
        Atom labels 0..N-1 of ``graph``.
    graph : RegionGraph
        Adjacency graph of ``atoms``.
    boundary_map : (H, W) float array in (0, 1)
        The per-pixel boundary probability of
        :func:`swcuts.image.boundary_detector.boundary_probability` on the
        same features (the model was trained on that detector's maps).
    model : dict or path, optional
        :func:`load_edge_model`'s weights; default the shipped ones.

    Returns
    -------
    (E,) float64 array in (0, Q_MAX]
        One probability per edge of ``graph.edges``, calibrated on
        held-out BSDS500 photos with watershed atoms.

    Examples
    --------
    >>> import numpy as np
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> image = np.zeros((20, 30, 1)); image[:, 20:] = 0.8
    >>> atoms = np.repeat(np.repeat([[0, 1, 2]], 20, axis=0), 10, axis=1)
    >>> bmap = np.full((20, 30), 0.01); bmap[:, 19:21] = 0.9           # an edge between atoms 1 and 2
    >>> q = learned_edge_probabilities(image, atoms, RegionGraph.from_labels(atoms), bmap)
    >>> bool(q[0] > 0.5 > q[1])
    True
    """
    if model is None or isinstance(model, (str, bytes, os.PathLike)):
        model = load_edge_model(model)
    z = np.asarray(features)
    channels = 1 if z.ndim == 2 else z.shape[2]
    arrays = model["grey" if channels == 1 else "colour"]
    x = edge_features(features, atoms, graph, boundary_map)
    if x.shape[0] == 0:
        return np.zeros(0)
    return np.clip(network(x, arrays), 1e-6, Q_MAX)
