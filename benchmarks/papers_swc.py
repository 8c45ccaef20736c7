"""SW cuts on mixture data, for the paper tables of ``benchmarks/papers.py``.

None of the seed papers has this row: the mixture posterior of
``swcuts.cluster`` sampled by SWC-2 (Barbu & Zhu's Wolff-grown component
of the on-edges, relabelled by Metropolis-Hastings with the exact cut
ratio, :class:`swcuts.samplers.SWC2`, its generic Python path) on a
k-nearest-neighbour graph of the data.

* **Graph**: the symmetrised k-NN graph of the standardised rows (the one
  ``TreeGuided`` builds for its candidate pairs,
  ``swcuts.samplers.tree_guided.trees._knn_csr``), k = 10.
* **Edge probabilities**, fixed before sampling (any state-independent q
  keeps the kernel exact): real data (Gaussian, lines) q_ij =
  exp(-|x_i - x_j|^2 / (2 h^2)) on the standardised rows, h = the median
  k-NN distance (a distance-based q); binary data (Beta-Bernoulli)
  q_ij = exp(-KL_ij) with KL the symmetrised Kullback-Leibler divergence
  between the items' smoothed Bernoulli vectors (p = (x + 0.5) / 2, the
  posterior mean of one item's own parameter under Beta(0.5, 0.5)).
* **Model**: ``MixtureModel`` with the graph attached as ``model.graph``;
  SWC2 reads only the graph, ``delta``/``apply`` and the partition, so
  the posterior is exactly the one the other samplers target.
"""

from __future__ import annotations

import numpy as np

from swcuts.graph.region_graph import RegionGraph
from swcuts.samplers import KERNELS
from swcuts.samplers.tree_guided.trees import _knn_csr

K_NEIGHBOURS = 10


def knn_edges(data, k=K_NEIGHBOURS):
    """(m, 2) edges i < j of the symmetrised k-NN graph of the standardised rows."""
    indptr, indices = _knn_csr(data, k)
    src = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    keep = src < indices
    return np.stack((src[keep], indices[keep]), axis=1)


def edge_probabilities(data, edges, kind):
    """q of every edge: KL-based for binary data, Gaussian-kernel distance otherwise."""
    x = np.asarray(data, dtype=np.float64)
    i, j = edges[:, 0], edges[:, 1]
    if kind == "binary":
        p = (x + 0.5) / 2.0
        lp, l1p = np.log(p), np.log1p(-p)
        a = p[i] * (lp[i] - lp[j]) + (1 - p[i]) * (l1p[i] - l1p[j])
        b = p[j] * (lp[j] - lp[i]) + (1 - p[j]) * (l1p[j] - l1p[i])
        return np.exp(-(a + b).sum(axis=1) / 2.0)
    sd = x.std(axis=0)
    sd[sd == 0] = 1.0
    z = (x - x.mean(axis=0)) / sd
    d2 = ((z[i] - z[j]) ** 2).sum(axis=1)
    h2 = np.median(d2)
    return np.exp(-d2 / (2.0 * h2))


def attach_knn_graph(model, data, kind):
    """Give ``model`` (a MixtureModel) a k-NN graph; returns the edge probabilities."""
    edges = knn_edges(data)
    model.graph = RegionGraph.from_edges(model.n_vertices, edges)
    return edge_probabilities(data, model.graph.edges, kind)


def swc_kernel(model, data, kind):
    """SWC-2 on the k-NN graph of ``data`` for the mixture ``model``."""
    q = attach_knn_graph(model, data, kind)
    return KERNELS["swc2"](model, q, compiled=False)
