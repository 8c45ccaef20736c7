"""The "superatoms" sampling posterior (issue 35, round 7): the image
posterior on a coarse graph, with its evidence coarsened to the independent
pixels of its regions and of its boundaries.

On the ~1,000 atoms of a photo the "learned" posterior is, locally, a point
mass: a one-atom move at a boundary costs tens to hundreds of nats, because
the likelihood counts an atom's pixels (times ζ' = 0.1) and the boundary
term every pixel pair of the boundary as independent evidence. Here:

* **The graph** is that of ~:data:`SUPERATOMS` super-atoms, the atoms merged
  along their weakest boundaries of the detector's probability
  (:func:`swcuts.graph.superatoms.merge_weakest`), so that the graph's edges
  follow the detector's ridges;
* **the likelihood** (the "learned" model's window histograms) is raised to
  the power ζ = :func:`swcuts.models.coarsening.region_pixel_fraction` of the
  super-atoms: the share of independent pixels for an AR(1) field with the
  lag-one correlations of the residuals from each super-atom's mean
  (2e-4 to 1e-2 on BSDS photos: 0.1 to 10 independent pixels a super-atom);
* **the boundary evidence** is coarsened likewise: a cut edge e costs
  λ ζ_b Σ_{pixel pairs across e} (−logit p + c), with ζ_b =
  :data:`BOUNDARY_ZETA` the share of a boundary's pixel pairs that are
  independent (the detector's map is smooth along a boundary), −logit p the
  "learned" evidence (:func:`swcuts.models.boundary.learned_pair_weights`)
  and c = :data:`OFFSET`; ``per="edge"`` of :func:`superatom_edge_weights`
  counts it once per edge instead (measured first, worse: below);
* **the prior** of eq. 59 with a0 = a1 = :data:`PRIOR` per label and region
  and the model's area weight a2 times :data:`AREA_SHARE`.

It is an :class:`~swcuts.models.image.ImageModel` on the super-atom graph
with its rows scaled by ζ and per-edge boundary weights
(:meth:`~swcuts.models.image.ImageModel.set_boundary`), so every kernel
samples it exactly as the enumeration tests show for that model
(``tests/test_superatom_posterior.py`` checks the posterior as built here).
The derivation and the measurements are in docs/algorithms/posterior.md
("Round 7"). In short: its chains mix where the atoms' do not (held out,
split R-hat ≤ 1.1 on 3 of 6 photos against 0 of 6, in 10-15 s), but its
boundary maps are no better calibrated than the default's (ECE 0.39 against
0.40) and detect the annotators' boundaries worse (soft-boundary ODS F 0.51
against 0.61): an option of
:func:`~swcuts.segmentation.posterior.sample_posterior`, not its default.
"""

from __future__ import annotations

import numpy as np

from swcuts.graph.region_graph import RegionGraph
from swcuts.graph.superatoms import merge_weakest, pair_strengths
from swcuts.inference.budget import phase_of
from swcuts.models.boundary import edge_weights, learned_pair_weights
from swcuts.models.coarsening import region_pixel_fraction
from swcuts.models.image import ImageModel

__all__ = ["SUPERATOMS", "MIN_SIZE_SHARE", "AREA_SHARE", "PRIOR", "BOUNDARY_ZETA", "OFFSET", "EDGE_OFFSET", "EDGE_WEIGHT", "ANNEAL_PER_SUPERATOM", "PILOT_PER_SUPERATOM",
           "THIN_PER_SUPERATOM",
           "SUPERATOM_GRANULARITY", "superatom_edge_weights",
           "superatom_model", "build_superatom_posterior"]

#: Super-atoms of a photo (the atoms merged down to this many).
SUPERATOMS = 100
#: Super-atoms smaller than this share of the mean super-atom (pixels / K)
#: are merged into a neighbour first (:func:`~swcuts.graph.superatoms.merge_weakest`'s
#: ``min_size``). By boundary strength alone the merging keeps many small
#: regions of strong detail (a plane's rivets, stones) and one large
#: background, and the samples cut out those small regions; with 0.25 or more
#: the samples on the 3 validation photos had one segment (the area prior
#: a2 Σ area^0.9 charges ~190 nats for cutting a 5,000-pixel plane out of the
#: sky), so 0: none (docs/algorithms/posterior.md, round 7).
MIN_SIZE_SHARE = 0.0
#: The area prior's weight a2 (on Σ area^0.9) is the model's times this:
#: tuned against a likelihood at ζ' = 0.1, at 1 it charges ~190 nats for
#: cutting a 5,000-pixel plane out of the sky once the likelihood counts its
#: independent pixels only (round 7; 0.3 chosen of 1, 0.3, 0.1, 0 on the 3
#: validation photos).
AREA_SHARE = 0.3
#: a0 = a1 of the super-atom posterior (nats per label and per region).
PRIOR = 1.0
#: ζ_b, the share of a boundary's pixel pairs that are independent evidence:
#: the detector's map is smooth along a boundary (an AR(1) series with lag-one
#: correlation ρ has (1 − ρ)/(1 + ρ) of its length as independent draws;
#: ρ = 0.9 gives 0.053). 0.05 chosen of 0.02 and 0.05 on the 3 validation photos.
BOUNDARY_ZETA = 0.05
#: c, added to every pixel pair's −logit p (``per="pixel"``): the reward of
#: a cut pixel pair (the "learned" model's is −1).
OFFSET = -1.5
#: c of ``per="edge"`` (once per super-atom edge, the first form of round 7).
EDGE_OFFSET = -2.0
#: λ, the weight of the boundary evidence.
EDGE_WEIGHT = 1.0
#: Steps of each chain, per super-atom: annealing, pilot and between kept
#: samples (``thin``; the pilot's autocorrelation time came out at 4-12 steps
#: per super-atom on the validation photos, and R-hat was steadier with more).
ANNEAL_PER_SUPERATOM, PILOT_PER_SUPERATOM, THIN_PER_SUPERATOM = 100, 200, 40
#: The granularity ladder of the super-atom posterior (multipliers of
#: :data:`PRIOR`; :mod:`swcuts.segmentation.granularity`). With 3 (a0 = a1 =
#: 3 nats) the chains of that level froze in different 1-2 segment states.
SUPERATOM_GRANULARITY = (0.1, 0.3, 1.0)


def superatom_edge_weights(probability, labels, graph, *, per="pixel", offset=None,
                           zeta=BOUNDARY_ZETA) -> np.ndarray:
    """Boundary weight w_e of every super-atom edge (a cut edge costs λ w_e).

    ``per="pixel"``: w_e = ζ_b Σ over the pixel pairs across e of
    (−logit p + c), the "learned" evidence coarsened to the boundary's
    independent pixel pairs (``zeta``, c = ``offset``, default :data:`OFFSET`).
    ``per="edge"``: w_e = mean over those pairs of −logit p, plus c (default
    :data:`EDGE_OFFSET`), once per edge whatever its length.

    Examples
    --------
    >>> labels = np.array([[0, 0, 1, 1]] * 2)
    >>> p = np.array([[0.5, 0.5, 0.5, 0.5]] * 2)             # −logit p = 0 on both pairs
    >>> graph = RegionGraph.from_labels(labels)
    >>> superatom_edge_weights(p, labels, graph, offset=-1.0, zeta=0.5), superatom_edge_weights(p, labels, graph, per="edge")
    (array([-1.]), array([-2.]))
    """
    if per not in ("pixel", "edge"):
        raise ValueError(f"per must be 'pixel' or 'edge', got {per!r}")
    c = (OFFSET if per == "pixel" else EDGE_OFFSET) if offset is None else float(offset)
    pairs = learned_pair_weights(np.zeros(np.shape(probability)), probability, 0.0)
    total = edge_weights(pairs, labels, graph)
    count = edge_weights(np.ones_like(pairs), labels, graph)
    if per == "edge":
        return total / np.maximum(count, 1.0) + c
    return float(zeta) * (total + c * count)


def superatom_model(features, labels, graph, probability, *, bins, window, a2, kappa, zeta=None,
                    prior=PRIOR, boundary=EDGE_WEIGHT, **evidence) -> ImageModel:
    """The posterior on a super-atom label image (see the module docstring).

    ``zeta`` None: :func:`~swcuts.models.coarsening.region_pixel_fraction`
    of ``labels``. ``evidence``: ``per``, ``offset`` and ``zeta`` (ζ_b) of
    :func:`superatom_edge_weights`.
    """
    zeta = region_pixel_fraction(features, labels) if zeta is None else float(zeta)
    model = ImageModel(features, labels, graph, bins=bins, a0=prior, a1=prior, a2=a2, kappa=kappa,
                       window=window, likelihood_weight=max(zeta, 1e-6))
    model.set_boundary(boundary, superatom_edge_weights(probability, labels, graph, **evidence))
    return model


def build_superatom_posterior(features, atoms, n_atoms, *, seed, params, n_superatoms=SUPERATOMS,
                              budget=None):
    """Atoms, super-atoms, their SW-cut edge probabilities and the posterior
    of prepared ``features``: ``(SuperAtoms, q, ImageModel)``.

    ``params``: the run's :meth:`~swcuts.segmentation.options.RunOptions.posterior_params`
    (bins, window, a2, kappa, q_max and the atoms' relief are taken from it).
    """
    from swcuts.graph.learned_edges import learned_edge_probabilities
    from swcuts.segmentation.build import build_graph

    atom_labels, graph, _, prob = build_graph(features, atoms, n_atoms, seed=seed, edges=None,
                                              atom_relief=params.get("atom_relief", "gradient"),
                                              boundary_map=True, budget=budget)
    with phase_of(budget, "superatoms", f"{n_superatoms} super-atoms"):
        sa = merge_weakest(atom_labels, graph, pair_strengths(prob), n_regions=n_superatoms,
                           min_size=int(MIN_SIZE_SHARE * atom_labels.size / n_superatoms))
    with phase_of(budget, "edges", f"{sa.graph.n_edges:,} edges"):
        q = np.minimum(learned_edge_probabilities(features, sa.labels, sa.graph, prob), params["q_max"])
    with phase_of(budget, "model", f"statistics of {sa.n_regions:,} super-atoms"):
        model = superatom_model(features, sa.labels, sa.graph, prob, bins=params["bins"],
                                window=params["window"], a2=AREA_SHARE * params["a2"], kappa=params["kappa"])
    return sa, q, model
