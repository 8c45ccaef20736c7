"""−log π of any segmentation under swcuts' image posterior, and its terms.

:func:`energy` scores a segmentation on the pixel graph, so that a human
annotation, another segmenter's output and every sampler's result are
scored under one posterior; :func:`energy_terms` splits that score into the
posterior's terms (:meth:`swcuts.models.image.ImageModel.log_target_terms`),
to see which term prefers one segmentation to another.
"""

from __future__ import annotations

import numpy as np

from swcuts.segmentation.costs import check_cost
from swcuts.graph.region_graph import RegionGraph
from swcuts.io.errors import InputError
from swcuts.image.prepare import prepare_image, refuse_path
from swcuts.models.image import ImageModel
from swcuts.segmentation.options import (
    BINS_WHY, DEFAULTS, MAX_BINS, _check_choice, _check_positive_int, _check_real)
from swcuts.segmentation.image_models import (
    MODELS, default_model_for, model_bins, model_evidence, model_evidence_offset, model_likelihood_weight, model_window,
    posterior_weights,
    varying_channels)

__all__ = ["energy", "energy_terms"]


def _pixel_posterior(image, labels, *, channel_axis, bins, a0, a1, a2, kappa, model, caller):
    """The image posterior on the pixel graph of ``image`` and ``labels`` as
    one label per pixel (for a model with window histograms, on the graph
    of ``labels``' connected regions, which scores the same), after
    checking every argument."""
    refuse_path(image, caller)
    refuse_path(labels, caller, "the labels")
    _check_positive_int("bins", bins, allow_none=True, minimum=2, maximum=MAX_BINS, why=BINS_WHY)
    for name, value in (("a0", a0), ("a1", a1)):
        _check_real(name, value, what="a non-negative number", allow_none=True, allow_zero=True)
    _check_real("a2", a2, what="a non-negative number", allow_none=True, allow_zero=True)
    _check_real("kappa", kappa, what="a non-negative number", allow_zero=True)
    if model is not None:
        _check_choice("model", model, MODELS, "model")
    features, _ = prepare_image(image, channel_axis=channel_axis)
    h, w = features.shape[:2]
    model = default_model_for(h, w) if model is None else model
    channels = varying_channels(features)
    bins = model_bins(model, bins, channels)
    labels = np.asarray(labels)
    if labels.dtype.kind not in "biu":
        raise TypeError(f"labels must be an integer label image, got dtype {labels.dtype}")
    if labels.shape != (h, w):
        raise InputError(f"labels of shape {labels.shape} do not match the image's {h}x{w} pixels")
    n_labels = int(np.unique(labels).size)
    a0, a1, a2, boundary = posterior_weights(model, h, w, a0, a1, a2, channels)
    labels = labels.astype(np.int64)
    window = model_window(model, h, w)
    if window:
        # Window histograms need atoms larger than pixels: the segmentation's
        # 4-connected regions are the atoms (a union of pixels has the
        # statistics, boundary and regions of its pixels), each with a
        # statistics row.
        from skimage.measure import label as connected_regions

        atoms = connected_regions(labels - labels.min(), background=-1, connectivity=1) - 1
        n_regions = int(atoms.max()) + 1
        check_cost((h, w), sampler="swc", atoms="slic", n_atoms=n_regions, bins=bins,
                   channels=features.shape[-1], n_labels=n_labels)
        vertex_labels = np.zeros(n_regions, dtype=np.int64)
        vertex_labels[atoms.ravel()] = labels.ravel()
    else:
        check_cost((h, w), sampler="multigrid", atoms="pixels", bins=bins, channels=features.shape[-1],
                   n_labels=n_labels)
        atoms = np.arange(h * w, dtype=np.int64).reshape(h, w)
        vertex_labels = labels.ravel()
    posterior = ImageModel(features, atoms, RegionGraph.from_labels(atoms), bins=bins, a0=a0, a1=a1,
                           a2=a2, kappa=kappa, boundary=boundary, evidence=model_evidence(model),
                           window=window, likelihood_weight=model_likelihood_weight(model, features),
                           evidence_offset=model_evidence_offset(model))
    return posterior, vertex_labels


def energy(image, labels, *, channel_axis=-1, bins=DEFAULTS["bins"], a0=DEFAULTS["a0"],
           a1=DEFAULTS["a1"], a2=DEFAULTS["a2"], kappa=DEFAULTS["kappa"], model=None) -> float:
    """−log π of any segmentation of ``image`` under swcuts' image posterior.

    The segmentation is scored on the pixel graph, so it need not be made
    of atoms: a human annotation, another segmenter's output and every
    sampler's result are scored under the same posterior (a union of atoms
    has the statistics of its pixels, so for a sampler's own result on
    atoms this equals its ``Segmentation.energy``).

    Parameters
    ----------
    image : (H, W) or (H, W, C) array
        The image, as for :func:`swcuts.segment` (an array; a file name is
        refused with a :class:`TypeError` naming :func:`swcuts.load_image`).
    labels : (H, W) int array
        Segment of every pixel (any integers).
    channel_axis : int or None
        Axis of the channels, as in scikit-image.
    bins, a0, a1, a2, kappa : float
        Posterior parameters, as for :func:`swcuts.segment` (``bins``,
        ``a0``, ``a1``, ``a2`` None: the model's, the weights for the
        image's size and channels).
    model : str, optional
        The image posterior (:data:`swcuts.segmentation.options.MODELS`); None: the
        default of :func:`swcuts.segment` on atoms for the image's size
        (:func:`swcuts.segmentation.image_models.default_model_for`). To score a run on pixels,
        pass its ``Segmentation.posterior``.

    Returns
    -------
    float
        −log π (unnormalised); lower is more probable.

    Examples
    --------
    >>> import numpy as np, swcuts
    >>> image = np.zeros((20, 20)); image[:, 10:] = 1.0
    >>> halves = (np.arange(20)[None, :] >= 10).repeat(20, axis=0).astype(int)
    >>> swcuts.energy(image, halves) < swcuts.energy(image, np.zeros((20, 20), int))
    True
    """
    posterior, labels = _pixel_posterior(image, labels, channel_axis=channel_axis, bins=bins, a0=a0,
                                         a1=a1, a2=a2, kappa=kappa, model=model, caller="energy")
    return -posterior.log_target(labels)


def energy_terms(image, labels, *, channel_axis=-1, bins=DEFAULTS["bins"], a0=DEFAULTS["a0"],
                 a1=DEFAULTS["a1"], a2=DEFAULTS["a2"], kappa=DEFAULTS["kappa"],
                 model=None) -> dict:
    """The terms of :func:`energy`: which part of the posterior prefers a
    segmentation.

    Parameters
    ----------
    image, labels, channel_axis, bins, a0, a1, a2, kappa, model
        As for :func:`energy`.

    Returns
    -------
    dict
        −(each term of log π) of the labelling on the pixel graph, summing to
        :func:`energy`: ``likelihood`` (the regions' penalised
        log-likelihoods, eqs. 55-58 of Barbu & Zhu), ``labels`` (a0 per
        label), ``regions`` (a1 per connected region), ``areas``
        (a2 Σ area^0.9; eq. 59) and ``boundary`` (the contrast-sensitive
        boundary term, :mod:`swcuts.models.boundary`).

    Examples
    --------
    >>> import numpy as np
    >>> image = np.zeros((20, 20)); image[:, 10:] = 1.0
    >>> halves = (np.arange(20)[None, :] >= 10).repeat(20, axis=0).astype(int)
    >>> terms = energy_terms(image, halves)
    >>> sorted(terms)
    ['areas', 'boundary', 'labels', 'likelihood', 'regions']
    >>> bool(np.isclose(sum(terms.values()), energy(image, halves)))
    True
    """
    posterior, labels = _pixel_posterior(image, labels, channel_axis=channel_axis, bins=bins, a0=a0,
                                         a1=a1, a2=a2, kappa=kappa, model=model, caller="energy_terms")
    return {name: -value for name, value in posterior.log_target_terms(labels).items()}
