"""The named image posteriors of ``segment(model=...)`` and their
parameters on one image: the prior weights for its size and channels
(:func:`posterior_weights`), the likelihood's bins (:func:`model_bins`),
the window radius (:func:`model_window`) and the boundary evidence
(:func:`model_evidence`). :mod:`swcuts.segmentation.options` resolves a run's options
with them (and re-exports every name here).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MODELS", "BINS", "ONE_CHANNEL_WEIGHT", "DEFAULT_MODEL", "PIXEL_MODEL", "VARYING_RANGE",
           "MIN_WEIGHT_PIXELS", "ZETA_REFERENCE", "varying_channels", "posterior_weights", "model_window", "model_bins",
           "model_evidence", "model_likelihood_weight", "model_edges", "model_evidence_offset", "model_temperature",
           "SMALL_IMAGE_MODEL", "MIN_LEARNED_SIDE", "default_model_for",
           "model_edge_power", "model_atom_relief", "model_atom_merge"]

#: Histogram bins of the likelihood (per channel) of a model that names none
#: in :data:`MODELS` (``bins=None``: the model's, :func:`model_bins`).
BINS = 32
#: The named image posteriors of ``segment(model=...)``. ``a0``, ``a1``: the
#: prior weights per label and per region for an image of 10^5 pixels,
#: scaled in proportion to the pixel count so that the prior keeps pace
#: with the likelihood, which grows with the pixels (``a0``/``a1`` None);
#: ``boundary``: λ of the boundary term (models/boundary.py) per pixel of
#: boundary at 10^5 pixels, scaled by sqrt(pixels / 10^5), as boundary
#: lengths grow. "paper" is section 5 of Barbu & Zhu; "contrast" adds the
#: contrast-sensitive boundary term and drops the per-region weight (the
#: boundary term does its work), chosen on the tuning half of the 30 BSDS
#: development photos (see the README and benchmarks/boundary_term.py); its
#: a0 (50 -> 200) by benchmarks/photo_sweep.py on the same half: with a1 = 0
#: the per-label weight is what sets the number of segments (39.5 -> 26.8 per
#: photo), and 200 was the one value of a0, a1 and λ tried that lowered VoI
#: without losing PRI or covering there. "texture" is "contrast" with the
#: texture-robust boundary weights (models/boundary.py,
#: texture_pair_weights: a cut is cheap only where the pixel contrast and the
#: half-window histogram gradient both mark an edge; Martin, Fowlkes & Malik
#: 2004; Arbelaez et al. 2011) and a0 = 100, the best of 18 settings of λ,
#: a0, window radius, bins and scale on the tuning half: at the number of
#: segments of "contrast" it lowers VoI and raises covering, but loses PRI
#: where two materials interleave finely (lichen on rock), so by the
#: selection rule it does not beat "contrast" (README). "window" is
#: "contrast" whose histogram likelihood counts each pixel through the
#: histogram of the window around it (ImageModel's ``window``; radius in
#: pixels at 10^5 pixels, scaled by sqrt(pixels / 10^5) like the boundary
#: weight), with a0 = a1 = 100: over three seeds it scores better than
#: "contrast" on both BSDS halves by the selection rule (README); it needs
#: atoms larger than pixels, so it is the default on atoms only
#: (:func:`swcuts.segmentation.options.default_model`). Its likelihood has 24 bins per channel on colour
#: images (the other models :data:`BINS`, 32; grey images too,
#: :func:`model_bins`): of 32, 28, 24 and 20, 24 scored best by the selection
#: rule on the 100 BSDS500 validation photos at seeds 0 and 1
#: (benchmarks/photo_sweep.py; coarser bins make the iid likelihood split
#: smooth shading and texture less), and on the 170 other training photos,
#: held out, it leads every peer on PRI, VoI and covering where 32 trailed
#: felzenszwalb on VoI (README, "Likelihood bins"). "learned" is "window"
#: with the coarsened likelihood (``coarsened``: every statistics row scaled
#: by ζ', :func:`model_likelihood_weight`; ``zeta_power`` 0: the same
#: ζ' = 0.1 for every photo, since with each photo's own ζ,
#: :func:`swcuts.models.coarsening.effective_pixel_fraction`, 0.04–0.2 on
#: BSDS, the number of segments followed ζ rather than the scene), the
#: learned boundary evidence (``evidence``: −logit of the trained detector's
#: probability plus ``offset`` per cut pixel pair,
#: :func:`swcuts.models.boundary.learned_pair_weights`) and the learned SW-cut
#: edge probabilities to the power 8 (``edges``, ``edge_power``,
#: :func:`model_edges`; as calibrated, power 1, they slowed the annealing),
#: annealed in its own temperature unit 0.1 (``temperature``,
#: :func:`model_temperature`: its energies are about a tenth of "window"'s);
#: its weights, the best of 10 settings on 25 BSDS500 validation photos and
#: of the best two on all 100, lead "window" there on PRI, VoI and covering
#: by 3.5, 4.1 and 2.6 paired standard errors (docs/real_photos.md,
#: docs/algorithms/learned_posterior.md). Its watershed atoms flood the
#: detector's boundary probability (``atom_relief``, :func:`model_atom_relief`),
#: with a0 = a1 = 10 (were 5 on gradient atoms): on the 100 validation photos
#: boundary F +4.5 paired SE, PRI +0.8, VoI and covering within 1 SE, the best
#: of a0 = 5, 7, 10, 14 and 20 (docs/real_photos.md, round 5).
#: ``edges`` "learned" takes the learned SW-cut edge probabilities
#: (:func:`model_edges`) instead of eq. 53's. Its atoms are then merged along
#: their weakest boundaries (``atom_merge``, ``atom_merge_min``,
#: :func:`model_atom_merge`): on the 100 validation photos VoI −2.3 paired
#: SE better, PRI, covering and boundary F within 0.6 SE (docs/real_photos.md,
#: round 9).
MODELS = {
    "paper": {"a0": 250.0, "a1": 2500.0, "a2": 5.0, "boundary": 0.0},
    "contrast": {"a0": 200.0, "a1": 0.0, "a2": 5.0, "boundary": 10.0},
    "texture": {"a0": 100.0, "a1": 0.0, "a2": 5.0, "boundary": 10.0, "evidence": "texture"},
    "window": {"a0": 100.0, "a1": 100.0, "a2": 5.0, "boundary": 10.0, "window": 12.0, "bins": 24},
    "learned": {"a0": 10.0, "a1": 10.0, "a2": 0.25, "boundary": 1.0, "offset": -1.0, "window": 12.0,
                "bins": 24, "evidence": "learned", "coarsened": True, "zeta_power": 0.0,
                "edges": "learned", "edge_power": 8.0, "temperature": 0.1, "atom_relief": "learned",
                "atom_merge": -2.0, "atom_merge_min": 65.0},
}
#: ζ0 of ``zeta_power`` (:func:`model_likelihood_weight`): about the median ζ
#: of the BSDS500 validation photos.
ZETA_REFERENCE = 0.1
#: The weights of MODELS were chosen on colour photos, whose three feature
#: channels each add their evidence to the likelihood. An image with one
#: channel that varies (grey, or colour without chroma) has less evidence
#: per pixel and, with the colour weights, far fewer segments (9 per photo
#: against 27 on the grey versions of the BSDS tuning half): its default
#: weights, a0, a1, a2 and λ, are multiplied by this. 0.35 was chosen on
#: the grey tuning half against the peers tuned there (of 1, 1/1.5, 1/√3,
#: 1/2, 1/2.5 on SLIC atoms, where 0.5 won; then 0.5, 0.35, 0.25 on the
#: watershed atoms; benchmarks/grey_photos.py); it also ends the
#: undersegmented grey scenes of benchmarks/synthetic_scenes.py.
ONE_CHANNEL_WEIGHT = 0.35
#: The posterior of a run without ``model`` on atoms (watershed, SLIC and
#: the other over-segmentations): "learned", which leads "window" on the 170
#: held-out BSDS500 training photos by more than 2 paired standard errors on
#: PRI, VoI and covering (docs/real_photos.md), but not on images smaller
#: than :data:`MIN_LEARNED_SIDE` (:func:`default_model_for`). ``PIXEL_MODEL``
#: on pixels, where windows cannot be counted (a row per pixel). Every
#: sampler's moves include the boundary term, and those of the samplers on
#: atoms the window counts, proved by exact enumeration.
DEFAULT_MODEL = "learned"
#: The default on atoms of an image whose smaller side is below
#: :data:`MIN_LEARNED_SIDE` pixels.
SMALL_IMAGE_MODEL = "window"
#: The detector of "learned" sees 16 pixels at its coarsest level
#: (4 x 2^(levels - 1)) and pads a smaller image with mirrored copies of
#: itself, whose steps drown its own (a 3x3 step got p = 0.005); up to twice
#: that, its energies are a few tenths of a nat apart and tiny images of two
#: flat halves came out in 1 or 3 segments. "window" gets them right.
MIN_LEARNED_SIDE = 32
#: The posterior of a run on pixels without ``model`` (multigrid,
#: multi-level, ``atoms="pixels"``; ``init="atoms"``'s two phases).
PIXEL_MODEL = "contrast"


#: The range above which a feature channel varies (:func:`varying_channels`).
#: rgb2lab of a grey RGB image leaves a* and b* within 0.005 units of 0
#: (1.8e-5 once scaled by 1/256, see :func:`swcuts.image.prepare.prepare_image`),
#: while one 8-bit step of one RGB channel moves a* or b* by 0.37 units or
#: more (0.0015 scaled): 5e-4 tells them apart. (At 1e-6 a grey photo saved
#: as RGB counted as colour and got the colour weights.)
VARYING_RANGE = 5e-4


def varying_channels(features) -> int:
    """How many channels of an (H, W, C) feature image vary (a grey photo
    saved as RGB has one: its chroma channels are constant).

    A channel varies when its range exceeds :data:`VARYING_RANGE`.

    Examples
    --------
    >>> from swcuts.image.prepare import prepare_image
    >>> grey = np.linspace(0, 255, 48).reshape(6, 8).astype(np.uint8)
    >>> varying_channels(prepare_image(np.dstack([grey] * 3))[0])
    1
    >>> tinted = np.dstack([grey, grey, grey]); tinted[0, 0, 2] += 1
    >>> varying_channels(prepare_image(tinted)[0])
    3
    """
    f = np.asarray(features)
    f = f.reshape(-1, f.shape[-1] if f.ndim == 3 else 1)
    return int(np.count_nonzero(np.ptp(f, axis=0) > VARYING_RANGE)) if f.size else 0


#: The weights of an image smaller than this many pixels are those of an
#: image of this size. A label of one pixel pays no complexity cost (the
#: log |V_k| of eq. 58's prior is 0), so when a0 and a1, which scale with
#: the pixel count, fall near zero on a tiny image the posterior prefers a
#: label per pixel: a constant 3x3 image got 9 segments, a 4x4 image of two
#: halves 9. From 1,000 pixels (about 32x32) both get what they show.
MIN_WEIGHT_PIXELS = 1000


def posterior_weights(model_name, h, w, a0=None, a1=None, a2=None, channels=3):
    """(a0, a1, a2, boundary) of the posterior ``model_name`` on an h x w
    image with ``channels`` varying feature channels.

    The model's weights (:data:`MODELS`): a0 and a1 in proportion to the
    pixel count, λ to its square root (per 10^5 pixels; at least those of
    :data:`MIN_WEIGHT_PIXELS`), all of them times :data:`ONE_CHANNEL_WEIGHT`
    when fewer than two channels vary. ``a0``, ``a1``, ``a2`` given: used as
    they are.

    Examples
    --------
    >>> posterior_weights("contrast", 400, 250)                 # 10^5 pixels, colour
    (200.0, 0.0, 5.0, 10.0)
    >>> posterior_weights("contrast", 400, 250, channels=1)     # grey
    (70.0, 0.0, 1.75, 3.5)
    >>> posterior_weights("contrast", 400, 250, a2=1.0, channels=1)
    (70.0, 0.0, 1.0, 3.5)
    >>> posterior_weights("contrast", 3, 3) == posterior_weights("contrast", 20, 50)
    True
    """
    m = MODELS[model_name]
    scale = max(h * w, MIN_WEIGHT_PIXELS) / 1e5
    evidence = ONE_CHANNEL_WEIGHT if channels < 2 else 1.0
    return (m["a0"] * scale * evidence if a0 is None else a0,
            m["a1"] * scale * evidence if a1 is None else a1,
            m["a2"] * evidence if a2 is None else a2,
            m["boundary"] * math.sqrt(scale) * evidence)


def model_window(model_name, h, w) -> int:
    """The window radius in pixels of the posterior ``model_name`` on an
    h x w image (``window`` of :class:`~swcuts.models.image.ImageModel`;
    0: none).

    Examples
    --------
    >>> model_window("window", 321, 481), model_window("contrast", 321, 481)
    (15, 0)
    """
    radius = MODELS[model_name].get("window", 0.0)
    return max(1, round(radius * math.sqrt(h * w / 1e5))) if radius else 0


def model_bins(model_name, bins=None, channels=3) -> int:
    """The likelihood's histogram bins per channel: ``bins``, or with None
    the posterior ``model_name``'s (:data:`MODELS`; :data:`BINS` where it
    names none) on an image with ``channels`` varying channels. The
    models' bins were chosen on colour photos; an image with one varying
    channel keeps :data:`BINS`, which scored better on both halves of the
    grey photos (benchmarks/grey_photos.py: at 24 bins fewer segments and a
    lower PRI).

    Examples
    --------
    >>> model_bins("window"), model_bins("paper"), model_bins("window", 64)
    (24, 32, 64)
    >>> model_bins("window", channels=1)
    32
    """
    if bins is not None:
        return bins
    return int(MODELS[model_name].get("bins", BINS)) if channels >= 2 else BINS


def model_evidence(model_name) -> str:
    """The boundary evidence of the posterior ``model_name`` (``evidence``
    of :class:`~swcuts.models.image.ImageModel`): "contrast" unless
    :data:`MODELS` names another."""
    return MODELS[model_name].get("evidence", "contrast")


def model_likelihood_weight(model_name, features) -> float:
    """ζ of the posterior ``model_name`` on an image's features: the share
    of its pixels that the region likelihood counts
    (:func:`swcuts.models.coarsening.effective_pixel_fraction`) for a model
    whose :data:`MODELS` entry is ``coarsened``, 1 otherwise. The entry may
    also set ``coarsened`` to a factor f (True: 1) and ``zeta_power`` γ
    (default 1): ζ' = min(1, f ζ0 (ζ/ζ0)^γ) with ζ0 = :data:`ZETA_REFERENCE`
    (γ < 1 narrows the spread of ζ between images; γ = 0 gives every image
    f ζ0). ζ' depends on the image alone, so every segmentation of an image
    is scored with the same power of the likelihood.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> from scipy.ndimage import gaussian_filter
    >>> smooth = gaussian_filter(rng.random((40, 40)), 2.0)
    >>> model_likelihood_weight("window", smooth), model_likelihood_weight("learned", smooth)
    (1.0, 0.1)
    """
    m = MODELS[model_name]
    factor = float(m.get("coarsened", 0.0))
    if not factor:
        return 1.0
    from swcuts.models.coarsening import effective_pixel_fraction

    power = float(m.get("zeta_power", 1.0))
    zeta = effective_pixel_fraction(features)
    if power != 1.0:
        zeta = ZETA_REFERENCE * (zeta / ZETA_REFERENCE) ** power
    return min(1.0, factor * zeta)


def model_edges(model_name) -> str:
    """The SW-cut edge probabilities of the posterior ``model_name``: "kl"
    (eq. 53 of Barbu & Zhu, :func:`swcuts.graph.edge_probabilities.kl_edge_probabilities`)
    unless :data:`MODELS` names "learned"
    (:func:`swcuts.graph.learned_edges.learned_edge_probabilities`).

    Examples
    --------
    >>> model_edges("window")
    'kl'
    """
    return MODELS[model_name].get("edges", "kl")


def model_atom_relief(model_name) -> str:
    """The surface the watershed atoms of the posterior ``model_name`` flood
    (``relief`` of :func:`swcuts.image.atoms.watershed_atoms`): "gradient",
    the image's gradient magnitude, unless its :data:`MODELS` entry names
    "learned", the learned detector's boundary probability
    (:func:`swcuts.image.boundary_detector.boundary_probability`), so that
    atom boundaries follow the edges annotators draw.

    Examples
    --------
    >>> model_atom_relief("window"), model_atom_relief("learned")
    ('gradient', 'learned')
    """
    return MODELS[model_name].get("atom_relief", "gradient")


def model_atom_merge(model_name):
    """How the watershed atoms of the posterior ``model_name`` are merged
    before sampling, or None: its :data:`MODELS` entry's ``atom_merge``, a
    level L of the detector's mean clipped log-odds, and ``atom_merge_min``,
    a size m in pixels at 10^5 pixels (scaled with the pixel count). The
    atoms (on the learned relief) are merged by
    :func:`swcuts.graph.superatoms.merge_weakest`: first every atom of
    fewer pixels than m into the neighbour across its weakest boundary, then
    the adjacent pair whose shared boundary has the lowest mean log-odds
    while that mean is below L (the ultrametric contour map's greedy
    merging, Arbeláez et al. 2011, cut at L). The posterior then cuts only
    boundaries whose mean evidence is at least L: on the 100 BSDS500
    validation photos, L = −2 (p ≈ 0.12) with m = 65 (100 pixels on a
    481×321 photo; ~90 atoms a photo instead of ~970) scored VoI 1.193 against
    1.224 (−2.3 paired SE), PRI, covering and boundary F within 0.6 SE, the
    best of L = −1.8, −2, −2.2, −2.6 on 25 of them (docs/real_photos.md,
    round 9).

    Examples
    --------
    >>> model_atom_merge("learned"), model_atom_merge("window")
    ((-2.0, 65.0), None)
    """
    m = MODELS[model_name]
    if m.get("atom_merge") is None:
        return None
    return float(m["atom_merge"]), float(m.get("atom_merge_min", 0.0))


def model_edge_power(model_name) -> float:
    """The power τ on the learned SW-cut edge probabilities of the posterior
    ``model_name`` (q ↦ q^τ; τ < 1 raises them and makes the clusters
    larger): its :data:`MODELS` entry's ``edge_power``, 1 where it names
    none. Eq. 53's probabilities are used as they are.

    Examples
    --------
    >>> model_edge_power("window")
    1.0
    """
    return float(MODELS[model_name].get("edge_power", 1.0))


def model_evidence_offset(model_name) -> float:
    """The offset c of the learned boundary evidence of the posterior
    ``model_name`` (:func:`swcuts.models.boundary.learned_pair_weights`):
    its :data:`MODELS` entry's ``offset``, 0 where it names none.

    Examples
    --------
    >>> model_evidence_offset("window")
    0.0
    """
    return float(MODELS[model_name].get("offset", 0.0))


def model_temperature(model_name) -> float:
    """The unit of :func:`swcuts.segment`'s annealing temperatures on the
    posterior ``model_name``: its :data:`MODELS` entry's ``temperature``, 1
    where it names none. The schedule (``t0`` to ``t_final``) and the
    convergence stop's "cold" run in this unit, so that a posterior whose
    energies are all smaller (the coarsened likelihood with small priors)
    is annealed as cold as one in nats. Sampling at T = 1
    (:func:`swcuts.sample_posterior`) does not use it.

    Examples
    --------
    >>> model_temperature("window")
    1.0
    """
    return float(MODELS[model_name].get("temperature", 1.0))


def default_model_for(h, w) -> str:
    """The posterior of a run on atoms without ``model`` on an h x w image:
    :data:`DEFAULT_MODEL`, or :data:`SMALL_IMAGE_MODEL` when the smaller
    side is below :data:`MIN_LEARNED_SIDE`.

    Examples
    --------
    >>> default_model_for(321, 481), default_model_for(24, 32)
    ('learned', 'window')
    """
    return SMALL_IMAGE_MODEL if min(h, w) < MIN_LEARNED_SIDE else DEFAULT_MODEL
