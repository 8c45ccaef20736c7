"""Conjugate Dirichlet-process and NGGP mixtures: the split-merge samplers'
own targets.

The target is the posterior over partitions of n items under a Chinese
restaurant process prior with concentration α, or a normalized generalized
gamma process prior with its auxiliary variable u, and a conjugate likelihood
whose cluster parameters are integrated out. A cluster's log marginal
likelihood depends on its summed sufficient statistics only, so that the
change of log π when a set R of items is relabelled costs
O(|R| · statistics size). The formulas and the bookkeeping are in
``docs/algorithms/mixture.md``.

Modules:

* :mod:`.likelihoods` — :class:`ConjugateLikelihood` and the built-in
  :class:`BetaBernoulli`, :class:`NormalInverseWishart`,
  :class:`LineMixture`, :class:`Multinomial` (``LIKELIHOODS`` by name);
* :mod:`.marginals` — their log marginals in compiled code
  (:func:`log_marginal`);
* :mod:`.moves` — compiled Δ log π of a relabelling, the single-item
  moves :func:`item_leave`, :func:`item_join`, :func:`item_move` and
  :func:`gibbs_sweep`;
* :mod:`.priors` — the partition priors :class:`DirichletProcess` and
  :class:`NGGP` and their compiled weights;
* :mod:`.model` — :func:`crp_log_prior`, :class:`MixtureModel` and
  :class:`AuxiliaryCycle`.

The papers' synthetic data sets (``jain_neal_bernoulli``,
``lee_choi_gaussians``, ``rossum_lines``) live in
:mod:`swcuts.evaluation.synthetic.clusters`.
"""

from __future__ import annotations

from swcuts.models.mixture.likelihoods import (
    LIKELIHOODS, BetaBernoulli, ConjugateLikelihood, LineMixture,
    Multinomial, NormalInverseWishart)
from swcuts.models.mixture.marginals import log_marginal
from swcuts.models.mixture.model import AuxiliaryCycle, MixtureModel, crp_log_prior
from swcuts.models.mixture.priors import NGGP, PRIORS, DirichletProcess, PartitionPrior, make_prior
from swcuts.models.mixture.moves import gibbs_run, gibbs_sweep, item_join, item_leave, item_move

__all__ = [
    "MixtureModel",
    "AuxiliaryCycle",
    "PartitionPrior",
    "DirichletProcess",
    "NGGP",
    "PRIORS",
    "make_prior",
    "ConjugateLikelihood",
    "BetaBernoulli",
    "NormalInverseWishart",
    "LineMixture",
    "Multinomial",
    "LIKELIHOODS",
    "crp_log_prior",
    "log_marginal",
    "item_leave",
    "item_join",
    "item_move",
    "gibbs_run",
    "gibbs_sweep",
]
