"""Two-frame motion segmentation by multi-level SW cuts (section 7).

:func:`segment_motion` labels every pixel of frame 2 with a velocity
(level 0), an intensity region (level 1) and a moving object (level 2):

1. Level 1: the image posterior of section 5 on frame 2, annealed by the
   default SW-cut kernel (:func:`swcuts.segment`); its connected regions are
   the vertices of level 2, and it is then held fixed.
2. Coarse to fine over an image pyramid: at each pyramid level the velocity
   labels are residuals around the flow of the coarser level (its result
   doubled and upsampled), so motion larger than the label range is found
   without a larger label set. At each pyramid level the chain alternates,
   under one geometric temperature schedule, level 0 (multigrid cluster
   Gibbs over velocities, :mod:`swcuts.samplers.velocity`) and level 2 (SW
   cuts over the regions, :class:`~swcuts.samplers.swc.SWC` on
   :class:`~swcuts.models.motion.ObjectModel`, with q⁽²⁾ from the motion
   histograms, eq. 76, recomputed after each level-0 run), each kernel
   invariant for its conditional (Prop. 12).
3. Optionally (``posterior_samples=N``), the level-0 chain of the finest
   pyramid level goes on at T = 1 with levels 1 and 2 held fixed, and N
   thinned samples give the per-pixel flow spread and nil probability
   (:func:`_flow_posterior`).
4. After sampling, the flow of each region is refined below the label step
   (:func:`swcuts.motion.flow_refine.refine_flow`, ours, not the paper's): affine
   fits per region and a variational per-pixel step, each kept per region
   only where it lowers the data + Markov energy; occluded pixels get their
   region's refined motion in ``filled_flow`` / :meth:`MotionSegmentation.dense_flow`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import cv2
import numpy as np
from skimage.measure import label as connected_label

from swcuts.inference.anneal import Trace
from swcuts.inference.budget import Budget, phase_of
from swcuts.motion.flow_refine import refine_flow
from swcuts.graph.region_graph import RegionGraph
from swcuts.graph.edge_probabilities import kl_edge_probabilities
from swcuts.io.errors import check_number
from swcuts.models.motion import (
    MOTION_DEFAULTS, MotionPosterior, ObjectModel, check_weights, motion_histograms, noise_sigma,
    velocity_grid)
from swcuts.samplers.swc import SWC
from swcuts.samplers.velocity import VelocityGibbs

__all__ = ["segment_motion", "MotionSegmentation", "MOTION_LIMITS"]

#: Start temperature of the coarsest pyramid level and of the finer ones
#: (which start from the coarser result), final temperature of every level.
T0, T0_FINER, T_FINAL = 1.0, 1.0, 0.1
#: Label range (pixels per axis) of the pyramid levels below the coarsest,
#: around the coarser level's flow (the coarsest has ``max_displacement``).
FINER_RANGE = 1.5
#: Level-0 steps per annealing round: one per pixel, at most MAX_ROUND_STEPS
#: (large frames: the finer levels start from the coarser flow and need
#: fewer steps per pixel; Venus 420x380: 76 s and EPE 0.53 with one step
#: per pixel).
STEPS_PER_PIXEL = 1.0
MAX_ROUND_STEPS = 20_000
#: Steps of the level-1 segmentation without ``region_seconds`` (swcuts'
#: default on a 640x480 frame is ~3 million, 5.5 s, for about the same
#: regions as these 30 000, 1.8 s, on Grove3).
REGION_STEPS = 30_000
#: Annealing rounds per pyramid level (each: a level-0 run, a level-2 run).
ROUNDS = 12
#: Level-0 sweeps at T = 1 before the first posterior sample of the flow
#: (the annealed state is at T_FINAL), and between samples.
SPREAD_BURN_IN_SWEEPS, SPREAD_THIN_SWEEPS = 5, 1
#: With no ``max_displacement``, the range is chosen from the frames: the
#: coarsest pyramid level covers motion up to this fraction of the frame's
#: width, with a shorter side of at least MIN_COARSE_SIDE pixels and at
#: least AUTO_MIN_RANGE pixels of label range (see :func:`auto_range`).
AUTO_RANGE_FRACTION, MIN_COARSE_SIDE, AUTO_MIN_RANGE = 0.1, 24, 3.0
#: The same for stereo (``vertical=False``: one label per u value, so a
#: wider range is cheap; disparities of 15 % of the width are common).
STEREO_RANGE_FRACTION = 0.2
#: The most negative disparity label of the coarsest level (its pixels).
STEREO_NEGATIVE = 1.0
#: Pyramid levels finer than the first with at most this many pixels are
#: not sampled: their flow is the sampled level's, upsampled, and the
#: sub-label refinement works at full resolution (ours: on 640x480 pairs the
#: finest level cost 3/4 of the time and the refinement recovers the detail).
SAMPLE_MAX_PIXELS = 80_000
#: Annealing rounds of the levels below the coarsest (they start from the
#: coarser flow); ``rounds`` applies to the coarsest.
ROUNDS_FINER = 4
#: Finer levels start their objects from the coarser level's (True) or from
#: one object per region (False); after the finest sampled level, the
#: objects anneal OBJECT_ROUNDS more level-2 runs with the flow fixed.
INHERIT_OBJECTS, OBJECT_ROUNDS = False, 8
#: Clipping check: where more than CLIP_FRACTION of a level's pixels have a
#: label on the border of the label range, those pixels' labels are
#: re-centred on their flow and the level anneals CLIP_ROUNDS more rounds,
#: at most CLIP_RETRIES times.
CLIP_FRACTION, CLIP_ROUNDS, CLIP_RETRIES = 0.002, 2, 1
#: Largest velocity label set (labels per axis) and label table (bytes) accepted.
MOTION_LIMITS = dict(max_labels_per_axis=41, max_label_table_bytes=4 * 2**30)


@dataclass
class MotionSegmentation:
    """The result of :func:`segment_motion`.

    Attributes
    ----------
    flow : (H, W, 2) float array
        Velocity (u, v) in pixels of every pixel of frame 2 (frame 2 is
        the reference: I2(x, y) ≈ I1(x − u, y − v)); NaN where occluded.
    occluded : (H, W) bool array
        The half-occluded pixels (the nil label).
    regions : (H, W) int array
        Intensity regions (level 1), labels 0..R-1.
    objects : (H, W) int array
        Moving objects (level 2), labels 0..K-1, largest first.
    object_velocity : (K, 2) float array
        The most probable velocity c_o of each object.
    trace : Trace
        Energy and temperature per round, all pyramid levels.
    energy : float
        −log π (levels 0 and 2, the finest pyramid level) of the result
        before the sub-label refinement.
    seconds : float
    filled_flow : (H, W, 2) float array or None
        The refined flow with a value at the occluded pixels too (their
        region's refined motion); None without the refinement.
    flow_spread : (H, W) float array or None
        With ``segment_motion(posterior_samples=N)``: the posterior spread
        of every pixel's velocity, sqrt(var u + var v) in pixels (the RMS
        end-point distance from the posterior mean) over the samples in
        which it is not nil; 0 where it is nil in every sample (see
        ``nil_probability``). At the discrete label level: the sub-label
        refinement is not sampled. None without posterior samples.
    flow_std : (H, W, 2) float array or None
        The posterior standard deviations of u and v separately (same samples).
    nil_probability : (H, W) float array or None
        Fraction of the posterior samples in which the pixel is nil
        (half-occluded).
    posterior_samples : int
        Number of posterior samples behind ``flow_spread`` (0: none).
    phases : dict
        Seconds of every phase of the call (regions, data terms, level 0,
        level 2, refining, ...; "sampling" holds data terms and levels 0 and 2).
    recentred : list of (int, float)
        Every time a pyramid level's labels were re-centred because they
        reached the border of their range: (the level's downsampling
        factor, the fraction of its pixels on the border).
    """

    flow: np.ndarray
    occluded: np.ndarray
    regions: np.ndarray
    objects: np.ndarray
    object_velocity: np.ndarray
    trace: Trace
    energy: float
    seconds: float
    filled_flow: np.ndarray | None = None
    flow_spread: np.ndarray | None = None
    flow_std: np.ndarray | None = None
    nil_probability: np.ndarray | None = None
    posterior_samples: int = 0
    phases: dict | None = None
    recentred: list | None = None

    @property
    def n_objects(self) -> int:
        return int(self.object_velocity.shape[0])

    def dense_flow(self) -> np.ndarray:
        """The flow with every occluded pixel given a velocity from its
        context, as section 7 suggests: its region's refined motion
        (``filled_flow``) or, without the refinement, its object's velocity.
        For scores that need a flow everywhere."""
        if self.filled_flow is not None:
            return self.filled_flow.copy()
        out = self.flow.copy()
        nil = self.occluded
        out[nil] = self.object_velocity[self.objects[nil]]
        return out


def _as_frames(frame1, frame2, channel_axis):
    """Both frames as (H, W, C) float32 on the 0..255 scale, C = 1 or 3.

    Validated and scaled as :func:`~swcuts.image.prepare.prepare_image` does
    (its display image: grey or RGB, alpha dropped). Frames of one type
    are scaled together, with the two side by side, so that a rescale by
    the values (the min..max of floats outside [0, 1] or of wide integers,
    the sample depth of 16-bit frames) is the same for both and their
    intensities stay comparable. Frames of different types (uint8 with
    uint16, uint8 with floats in [0, 1], floats in [0, 1] with floats on
    another scale) are each scaled by their own type, except that a frame
    scaled by its own min..max whose values lie in the other frame's fixed
    range (e.g. uint8 data as int64 or as floats 0..255, beside uint8) is
    scaled by that range. A warning (one line) says when the scaled
    frames still differ a lot in brightness (:func:`_warn_if_unlike`)."""
    from swcuts.image.prepare import image_scale, prepare_image, refuse_path, validate_image

    refuse_path(frame1, "segment_motion", "frame1")
    refuse_path(frame2, "segment_motion", "frame2")
    a1, a2 = np.asarray(frame1), np.asarray(frame2)
    if a1.ndim == 3 and a2.ndim == 3 and channel_axis is not None:
        check_number("channel_axis", channel_axis, integer=True)
        if not -3 <= channel_axis <= 2:
            raise ValueError(f"channel_axis {channel_axis} is out of range for 3-D frames")
        a1, a2 = np.moveaxis(a1, channel_axis, -1), np.moveaxis(a2, channel_axis, -1)
    if a1.shape != a2.shape:
        raise ValueError(f"the frames differ in size or channels: {a1.shape} and {a2.shape}")
    if a1.ndim not in (2, 3):
        raise ValueError(f"the frames must be (H, W) or (H, W, C) images, got shape {a1.shape}")
    if min(a1.shape[:2]) < 2:
        raise ValueError(f"the frames are {a1.shape[0]}x{a1.shape[1]}; at least 2x2 pixels are needed")
    v1, v2 = validate_image(a1, channel_axis=-1), validate_image(a2, channel_axis=-1)
    s1, s2 = image_scale(v1), image_scale(v2)
    if v1.dtype == v2.dtype and s1.rule == s2.rule or s1.rule == s2.rule == "minmax":
        # One type: scaled together, as one image (its depth or min..max).
        _, display = prepare_image(np.concatenate([a1, a2], axis=1), channel_axis=-1)
        w = a1.shape[1]
        d1, d2 = display[:, :w], display[:, w:]
    else:
        s1, s2 = _within(s1, s2), _within(s2, s1)
        s1.say()
        s2.say()
        d1, d2 = s1.apply(v1), s2.apply(v2)
        if d1.ndim != d2.ndim:  # one frame grey, the other colour
            d1, d2 = (np.dstack([d] * 3) if d.ndim == 2 else d for d in (d1, d2))
    _warn_if_unlike(d1, d2)
    d1, d2 = (d if d.ndim == 3 else d[..., None] for d in (d1, d2))
    return tuple(np.ascontiguousarray((d * 255.0).astype(np.float32)) for d in (d1, d2))


def _within(scale, other):
    """``other``'s fixed scale for a frame whose own is its min..max and
    whose values lie in ``other``'s range (``scale`` otherwise)."""
    if scale.rule == "minmax" and other.fixed and other.lo <= scale.lo and scale.hi <= other.hi:
        return other._replace(note=None)
    return scale


#: The scaled frames differ "a lot" (:func:`_warn_if_unlike`): their median
#: intensities by more than this (on 0..1), or the spreads of their 1st to
#: 99th percentiles by more than this factor.
UNLIKE_MEDIAN, UNLIKE_SPREAD = 0.25, 3.0


def _warn_if_unlike(d1, d2) -> None:
    """One warning line when two frames scaled to [0, 1] differ a lot in
    brightness or contrast: the flow's data term compares their intensities."""
    import warnings

    stats = [np.percentile(d, [1, 50, 99]) for d in (d1, d2)]
    spreads = [max(hi - lo, 1e-3) for lo, _, hi in stats]
    if abs(stats[0][1] - stats[1][1]) <= UNLIKE_MEDIAN and max(spreads) / min(spreads) <= UNLIKE_SPREAD:
        return
    shown = "; ".join(f"frame {i + 1}: median {m:.2f}, 1-99 % range {lo:.2f}..{hi:.2f}"
                      for i, (lo, m, hi) in enumerate(stats))
    warnings.warn(f"the frames differ a lot in brightness after scaling ({shown}); the flow assumes "
                  f"the same brightness in both: check that they are the same kind of image",
                  UserWarning, stacklevel=3)


def _check_scalars(*, seed, max_displacement, precision, pyramid_levels, rounds, time_budget,
                   channel_axis, region_seconds, finer_range, posterior_samples, weights):
    """The options of :func:`segment_motion` that need no frame, before any
    work (:func:`~swcuts.io.errors.check_number`)."""
    from swcuts.segmentation.options import _check_seed

    _check_seed(seed)
    check_number("max_displacement", max_displacement, minimum=0, exclusive=True, allow_none=True)
    check_number("precision", precision, minimum=0, exclusive=True)
    check_number("pyramid_levels", pyramid_levels, integer=True, minimum=1, maximum=8, allow_none=True)
    check_number("rounds", rounds, integer=True, minimum=1, maximum=10**4)
    check_number("time_budget", time_budget, minimum=0, exclusive=True, allow_none=True,
                 what="a positive finite number of seconds")
    check_number("channel_axis", channel_axis, integer=True, allow_none=True)
    check_number("region_seconds", region_seconds, minimum=0, exclusive=True, allow_none=True,
                 what="a positive number of seconds")
    check_number("finer_range", finer_range, minimum=0)
    _check_posterior_samples(posterior_samples)
    unknown = set(weights) - set(MOTION_DEFAULTS)
    if unknown:
        raise TypeError(f"segment_motion() got unknown argument(s): {', '.join(sorted(unknown))}")
    check_weights(weights)


def _check_options(max_displacement, precision, pyramid_levels, shape, fraction=None):
    """The options of :func:`segment_motion` that depend on the frames' ``shape``
    (``max_displacement`` None: the range of :func:`auto_range`)."""
    if max_displacement is None:
        if pyramid_levels is not None and min(shape) >> (pyramid_levels - 1) < 8:
            raise ValueError(f"pyramid_levels={pyramid_levels} shrinks a {shape[1]}x{shape[0]} "
                             "pair below 8 pixels")
        levels, max_displacement = auto_range(shape, float(precision), pyramid_levels, fraction)
        if pyramid_levels is None:
            pyramid_levels = levels
    per_axis = 2 * max_displacement / precision + 1
    if abs(per_axis - round(per_axis)) > 1e-6:
        raise ValueError(f"max_displacement ({max_displacement}) must be a multiple of precision "
                         f"({precision})")
    per_axis = int(round(per_axis))
    if per_axis > MOTION_LIMITS["max_labels_per_axis"]:
        raise ValueError(f"max_displacement / precision gives {per_axis} labels per axis "
                         f"({per_axis ** 2} velocities); at most "
                         f"{MOTION_LIMITS['max_labels_per_axis']} per axis are supported: use "
                         "pyramid_levels for larger motion")
    table = shape[0] * shape[1] * (per_axis ** 2 + 1) * 4
    if table > MOTION_LIMITS["max_label_table_bytes"]:
        gb = table / 2**30
        raise ValueError(f"a {shape[1]}x{shape[0]} pair with {per_axis ** 2} velocity labels needs "
                         f"about {gb:.1f} GB for its data costs (limit "
                         f"{MOTION_LIMITS['max_label_table_bytes'] / 2**30:.0f} GB): use fewer "
                         "labels (larger precision, smaller max_displacement) or smaller frames")
    if pyramid_levels is not None:
        if min(shape) >> (pyramid_levels - 1) < 8:
            raise ValueError(f"pyramid_levels={pyramid_levels} shrinks a {shape[1]}x{shape[0]} "
                             "pair below 8 pixels")
    return per_axis


def _check_posterior_samples(n):
    check_number("posterior_samples", n, integer=True, minimum=0, maximum=10_000)


def default_pyramid_levels(shape):
    """Levels so that the coarsest image has at least ~40 pixels on its
    shorter side, at most 4: motion up to 3·2^(levels−1) label ranges."""
    return int(max(1, min(4, 1 + math.floor(math.log2(max(min(shape) / 40.0, 1.0))))))


def auto_range(shape, precision, pyramid_levels=None, fraction=None):
    """Pyramid levels and coarsest label range chosen from the frame size.

    The coarsest level covers motion up to ``AUTO_RANGE_FRACTION`` of the
    frame's width: the fewest levels for which ``AUTO_MIN_RANGE`` pixels at
    the coarsest level reach that far, as long as the coarsest level keeps
    ``MIN_COARSE_SIDE`` pixels on its shorter side; the label range of the
    coarsest level makes up the rest (a multiple of ``precision``, at most
    ``MOTION_LIMITS['max_labels_per_axis']`` labels per axis).

    ``fraction`` replaces ``AUTO_RANGE_FRACTION``.

    Returns
    -------
    levels : int
    max_displacement : float
        Label range (pixels per axis) of the coarsest level, in its own pixels.

    Examples
    --------
    >>> auto_range((480, 640), 0.5)
    (5, 4.0)
    >>> auto_range((40, 48), 0.5)
    (1, 5.0)
    """
    h, w = shape
    need = (AUTO_RANGE_FRACTION if fraction is None else fraction) * w
    if pyramid_levels is None:
        levels = 1
        while AUTO_MIN_RANGE * 2 ** (levels - 1) < need and min(h, w) >> levels >= MIN_COARSE_SIDE \
                and levels < 8:
            levels += 1
    else:
        levels = int(pyramid_levels)
    m = max(AUTO_MIN_RANGE, need / 2 ** (levels - 1))
    m = math.ceil(m / precision - 1e-9) * precision
    cap = (MOTION_LIMITS["max_labels_per_axis"] - 1) // 2 * precision
    return levels, float(min(m, cap))


def _downsample(a, factor):
    if factor == 1:
        return a
    h, w = a.shape[:2]
    out = cv2.resize(a, (max(w // factor, 1), max(h // factor, 1)), interpolation=cv2.INTER_AREA)
    return out if out.ndim == 3 else out[..., None]


def _regions_at(regions, shape):
    """Region labels resampled (nearest) to ``shape``, split into connected
    pieces, labels 0..R-1."""
    h, w = shape
    ys = np.minimum((np.arange(h) + 0.5) * regions.shape[0] / h, regions.shape[0] - 1).astype(int)
    xs = np.minimum((np.arange(w) + 0.5) * regions.shape[1] / w, regions.shape[1] - 1).astype(int)
    small = regions[np.ix_(ys, xs)]
    return connected_label(small + 1, connectivity=1, background=0) - 1


def _upsample_flow(flow, shape):
    """Flow of a coarser level at ``shape``, scaled; nil filled from the
    nearest non-nil pixel (so that the base flow is defined everywhere)."""
    from scipy import ndimage as ndi
    nil = np.isnan(flow[..., 0])
    if nil.all():
        flow = np.zeros_like(flow)
    elif nil.any():
        idx = ndi.distance_transform_edt(nil, return_distances=False, return_indices=True)
        flow = flow[idx[0], idx[1]]
    h, w = shape
    sy, sx = h / flow.shape[0], w / flow.shape[1]
    up = cv2.resize(flow.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
    return np.stack([up[..., 0] * sx, up[..., 1] * sy], axis=2).astype(np.float64)


def _nearest(a, shape):
    """``a`` (H', W'[, C]) resampled to ``shape`` by nearest neighbour."""
    h, w = shape
    ys = np.minimum((np.arange(h) + 0.5) * a.shape[0] / h, a.shape[0] - 1).astype(int)
    xs = np.minimum((np.arange(w) + 0.5) * a.shape[1] / w, a.shape[1] - 1).astype(int)
    return a[np.ix_(ys, xs)]


def _snap_base(base, step):
    """Base flow rounded to the label step, so that labels of neighbours in
    the same object mean the same velocity."""
    return np.round(base / step) * step


def _round_steps(h, w) -> int:
    """Level-0 steps of one annealing round, also one sweep of the
    posterior sampling."""
    return int(min(max(STEPS_PER_PIXEL * h * w, 200), MAX_ROUND_STEPS))


def _flow_posterior(post, x0, obj, n_objects, rng, n_samples):
    """Per-pixel spread and nil probability of the level-0 posterior.

    Runs :class:`VelocityGibbs` at T = 1 from ``x0`` with the objects
    ``obj`` (and so levels 1 and 2) fixed: ``SPREAD_BURN_IN_SWEEPS`` sweeps,
    then ``n_samples`` samples ``SPREAD_THIN_SWEEPS`` sweeps apart. Moments
    are accumulated over the label offsets d_k (the base flow is fixed, so
    it does not change a variance), vectorised over pixels.

    Returns
    -------
    spread : (H, W) float array
        sqrt(var u + var v) over the samples where the pixel is not nil
        (0 where it is nil in every sample).
    std : (H, W, 2) float array
    nil_probability : (H, W) float array
    """
    h, w = post.shape
    kernel = VelocityGibbs(post, obj, n_objects)
    state = kernel.new_state(x0)
    sweep = _round_steps(h, w)
    kernel.run(state, rng, np.ones(SPREAD_BURN_IN_SWEEPS * sweep))
    s1 = np.zeros((2, h * w))
    s2 = np.zeros((2, h * w))
    n_ok = np.zeros(h * w)
    d = np.stack([post.du, post.dv])
    for _ in range(n_samples):
        kernel.run(state, rng, np.ones(SPREAD_THIN_SWEEPS * sweep))
        nil = state.x0 == post.nil
        dk = d[:, np.where(nil, 0, state.x0)] * ~nil
        n_ok += ~nil
        s1 += dk
        s2 += dk * dk
    m = np.maximum(n_ok, 1)
    var = np.maximum(s2 / m - (s1 / m) ** 2, 0.0)
    std = np.sqrt(var).T.reshape(h, w, 2)
    spread = np.sqrt(var.sum(axis=0)).reshape(h, w)
    return spread, std, (1.0 - n_ok / n_samples).reshape(h, w)


def _anneal_level(post, regions, rng, rounds, budget_end, trace, seconds0, step0, coarsest,
                  budget=None, start=None, objects=None):
    """Alternate level 0 and level 2 under one schedule; returns the final
    (x0, object of each region, log π, steps). Every level starts from
    block matching around its base flow (:meth:`MotionPosterior.block_matching`),
    or from ``start`` = (x0, object of each region), annealed from T0_FINER · T_FINAL·2;
    the objects start from ``objects`` (the object of each region; default:
    one object per region)."""
    h, w = post.shape
    n_reg = int(regions.max()) + 1
    rgraph = RegionGraph.from_labels(regions)
    region_flat = regions.ravel()
    if start is None:
        x0, t0 = post.block_matching(), (T0 if coarsest else T0_FINER)
        obj_of_region = np.arange(n_reg, dtype=np.int64) if objects is None else objects
    else:
        x0, obj_of_region = (np.array(a, np.int64) for a in start)
        t0 = min(T0_FINER, 2 * T_FINAL)
    temps = t0 * (T_FINAL / t0) ** np.linspace(0, 1, rounds)
    n0 = _round_steps(h, w)
    step = step0
    log_pi = None
    kernel0 = VelocityGibbs(post, obj_of_region[region_flat], n_reg)
    for T in temps:
        with phase_of(budget, "level 0"):
            kernel0.set_objects(obj_of_region[region_flat])
            state0 = kernel0.new_state(x0)
            moved = kernel0.run(state0, rng, np.full(n0, T))
            x0 = state0.x0
        with phase_of(budget, "level 2"):
            obj_of_region = _level2(post, x0, region_flat, n_reg, rgraph, obj_of_region, rng, T)
        step += n0 + 5 * n_reg
        log_pi = post.log_target(x0, obj_of_region[region_flat])
        trace.append(step, time.perf_counter() - seconds0, T, -log_pi,
                     len(np.unique(obj_of_region)), moved)
        if budget_end is not None and time.perf_counter() > budget_end:
            break
    return x0, obj_of_region, log_pi, step


def _level2(post, x0, region_flat, n_reg, rgraph, obj_of_region, rng, T):
    """One level-2 run (``5 × regions`` SW-cut steps at temperature T)
    with the velocities ``x0`` fixed; returns the object of each region."""
    vstats = post.object_stats(x0, region_flat, n_reg)
    # Eq. 76: q⁽²⁾ from the symmetric KL of the regions' motion histograms.
    q2 = kl_edge_probabilities(motion_histograms(x0, region_flat, n_reg, post), rgraph.edges)
    model2 = ObjectModel(rgraph, vstats, post.cu, post.cv, post.alpha, post.lambda2)
    state2 = model2.new_state(obj_of_region)
    kernel2 = SWC(model2, q2, compiled=False)
    for _ in range(5 * n_reg):
        kernel2.step(state2, rng, T)
    return state2.labels.copy()


def _objects_from_coarser(object_map, regions):
    """The object of each region of ``regions`` (labels 0..R-1): the most
    common object under it of ``object_map`` (a coarser level's objects per
    pixel, resampled), relabelled 0..K-1 (K ≤ R)."""
    up = _nearest(object_map, regions.shape)
    n_reg = int(regions.max()) + 1
    n_obj = int(up.max()) + 1
    counts = np.bincount(regions.ravel() * n_obj + up.ravel(), minlength=n_reg * n_obj)
    best = counts.reshape(n_reg, n_obj).argmax(axis=1)
    return np.unique(best, return_inverse=True)[1].astype(np.int64)


def _clipped(post, x0):
    """The pixels whose label lies on the border of the label range (a
    non-nil label with |d_u| or |d_v| at the grid's end)."""
    x0 = np.asarray(x0)
    ok = x0 != post.nil
    k = np.where(ok, x0, 0)
    top = float(post.grid[-1]) - 1e-9
    border = (np.abs(post.du[k]) >= top) | (np.abs(post.dv[k]) >= top) if top > 0 else np.zeros_like(ok)
    return ok & border


def _recentre(post, x0):
    """(new base flow, labels): the clipped pixels' base moved to their
    flow and their label to the centre of the grid; others unchanged."""
    h, w = post.shape
    clip = _clipped(post, x0)
    k = np.where(clip, x0, 0)
    base = np.stack([post.wu + np.where(clip, post.du[k], 0.0),
                     post.wv + np.where(clip, post.dv[k], 0.0)], axis=1).reshape(h, w, 2)
    centre = int(np.argmin(post.du ** 2 + post.dv ** 2))
    return base, np.where(clip, centre, x0)


def segment_motion(frame1, frame2, *, seed=None, max_displacement=None, precision=0.5,
                   pyramid_levels=None, rounds=ROUNDS, time_budget=None, channel_axis=-1,
                   refine=True, region_seconds=None, finer_range=FINER_RANGE,
                   posterior_samples=0, progress=False, vertical=True, **weights) -> MotionSegmentation:
    """Flow, intensity regions and moving objects of a frame pair.

    Parameters
    ----------
    frame1, frame2 : (H, W) or (H, W, C) arrays
        Two consecutive frames of the same size; frame 2 is the reference
        (the flow is defined on its pixels). Any integer or float type,
        scaled as :func:`swcuts.image.prepare.prepare_image` scales an image:
        frames of one type together, frames of different types (uint8 with
        uint16, uint8 with floats in [0, 1]) each by its own, with a
        warning when they still differ a lot in brightness
        (:func:`_as_frames`). Arrays, not file names: read files with
        :func:`swcuts.load_image`.
    seed : int or numpy.random.Generator, optional
    max_displacement : float, optional
        Override of the label range of the coarsest pyramid level: −m ≤ u,
        v ≤ m (pixels of that level) in steps of ``precision``, plus nil
        (3 with precision 1/2: the paper's 169 labels); with it the default
        pyramid has ~40 pixels on the coarsest level's shorter side, at most
        4 levels. Default: chosen from the frames (:func:`auto_range`): the
        coarsest level covers motion up to 10 % of the frame's width, and
        wherever the labels of a level end up on the border of their range
        they are re-centred there and that level is annealed again
        (:data:`CLIP_FRACTION`).
    precision : float
        Label step in pixels (default 1/2).
    pyramid_levels : int, optional
        Levels of the coarse-to-fine pyramid (1: one scale). Default: see
        ``max_displacement``. Levels with more than
        :data:`SAMPLE_MAX_PIXELS` pixels below a coarser one are not
        sampled: the flow comes from the coarser level and the sub-label
        refinement.
    rounds : int
        Annealing rounds per pyramid level.
    time_budget : float or Budget, optional
        Wall seconds of the whole call (a :class:`~swcuts.inference.budget.Budget`:
        of the run it belongs to, the CLI's from the start of the process):
        the level-1 segmentation (its default steps) comes out of it, and
        the annealing of the pyramid levels gets what is left, at least
        :data:`~swcuts.inference.budget.MIN_SAMPLING_SHARE` of it (a
        :class:`~swcuts.inference.budget.BudgetWarning` when less was left); a level
        that runs out finishes its current round and the finer levels get
        one round each. The refinement and ``posterior_samples`` come after.
    channel_axis : int or None
    refine : bool
        Refine the flow below the label step per region (ours, not the paper's).
    region_seconds : float, optional
        Time budget of the level-1 segmentation (default: ``REGION_STEPS`` steps).
    finer_range : float
        Label range (pixels per axis) of the pyramid levels below the
        coarsest, around the coarser level's flow.
    posterior_samples : int
        After annealing, draw this many samples of the velocity labels of
        the finest pyramid level at T = 1 (the posterior with levels 1 and 2
        held fixed; one level-0 sweep apart, a sweep being an annealing
        round's level-0 steps, one per pixel up to ``MAX_ROUND_STEPS``;
        after a burn-in of ``SPREAD_BURN_IN_SWEEPS`` sweeps; not bounded by
        ``time_budget``; the returned flow and objects are the annealed
        ones, the same as without samples)
        and return their per-pixel spread (``flow_spread``, ``flow_std``)
        and nil probability. The spread is at the discrete label level: the
        sub-label refinement is not sampled. 0 (default): off.
    progress : bool
        On a terminal, name each phase on stderr while it runs.
    vertical : bool
        False: horizontal velocities only (v = 0), the special case of a
        rectified stereo pair (frame 2 the left image, frame 1 the right:
        the flow's u is the disparity, ≥ 0 on such a pair; see
        :func:`swcuts.motion.stereo.segment_stereo`).
    **weights
        Weights of the motion posterior (:data:`swcuts.models.motion.MOTION_DEFAULTS`).

    Returns
    -------
    MotionSegmentation

    Examples
    --------
    >>> from swcuts.evaluation.synthetic.motion import layered_pair
    >>> pair = layered_pair(shape=(40, 48), n_objects=1, seed=3)
    >>> res = segment_motion(pair.frame1, pair.frame2, seed=0, rounds=3)
    >>> res.flow.shape, res.objects.shape
    ((40, 48, 2), (40, 48))
    >>> bool(np.isnan(res.flow[res.occluded]).all())
    True
    >>> res.flow_spread is None
    True
    >>> res = segment_motion(pair.frame1, pair.frame2, seed=0, rounds=3, posterior_samples=5)
    >>> res.flow_spread.shape, bool((res.nil_probability <= 1).all())
    ((40, 48), True)
    """
    from swcuts import segment

    t_start = time.perf_counter()
    _check_scalars(seed=seed, max_displacement=max_displacement, precision=precision,
                   pyramid_levels=pyramid_levels, rounds=rounds,
                   time_budget=Budget.seconds_of(time_budget), channel_axis=channel_axis, region_seconds=region_seconds, finer_range=finer_range,
                   posterior_samples=posterior_samples, weights=weights)
    f1, f2 = _as_frames(frame1, frame2, channel_axis)
    h, w = f2.shape[:2]
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    fraction = None if vertical else STEREO_RANGE_FRACTION
    _check_options(max_displacement, precision, pyramid_levels, (h, w), fraction)
    if max_displacement is None:
        levels, coarse_range = auto_range((h, w), float(precision), pyramid_levels, fraction)
    else:
        levels = default_pyramid_levels((h, w)) if pyramid_levels is None else int(pyramid_levels)
        coarse_range = float(max_displacement)
    grid = velocity_grid(coarse_range, float(precision))
    finer = min(coarse_range, math.floor(finer_range / precision) * float(precision))
    finer_grid = velocity_grid(finer, float(precision)) if finer > 0 else grid
    grid_v, finer_v = (grid, finer_grid) if vertical else (np.zeros(1), np.zeros(1))
    if not vertical:
        # A rectified pair (frame 2 the left image): disparities are >= 0, so
        # the coarsest labels run from -STEREO_NEGATIVE to 2m, as many as for -m..m.
        grid = grid + coarse_range - min(STEREO_NEGATIVE, coarse_range)
    # The finest level sampled: the first with at most SAMPLE_MAX_PIXELS
    # pixels (never coarser than the coarsest).
    finest = 0
    while finest < levels - 1 and (h >> finest) * (w >> finest) > SAMPLE_MAX_PIXELS:
        finest += 1
    sigma = weights.get("sigma")
    if sigma is None:
        sigma = noise_sigma(f1, f2)

    budget = Budget.of(time_budget, progress=progress, start=t_start)
    # Level 1: intensity regions of frame 2, then held fixed.
    with budget.phase("regions", "level 1: intensity segments of frame 2"):
        seg = segment(f2 / 255.0, seed=rng, model="contrast", time_budget=region_seconds, progress=progress,
                      steps=REGION_STEPS if region_seconds is None else None)
    regions_full = connected_label(seg.labels + 1, connectivity=1, background=0) - 1

    trace = Trace()
    with budget.phase("sampling", f"{levels - finest} pyramid levels"):
        budget_end = time.perf_counter() + budget.allot() if budget.timed else None
        flow = None
        step = 0
        recentred = []
        for lev in range(levels - 1, finest - 1, -1):
            factor = 2 ** lev
            g1, g2 = _downsample(f1, factor), _downsample(f2, factor)
            shape = g2.shape[:2]
            base = None if flow is None else _snap_base(_upsample_flow(flow, shape), float(precision))
            with phase_of(budget, "data terms"):
                post = MotionPosterior(g1, g2, grid if flow is None else finer_grid, base=base,
                                       grid_v=grid_v if flow is None else finer_v, **weights)
            regions = regions_full if factor == 1 else _regions_at(regions_full, shape)
            n_rounds = (rounds if flow is None else min(rounds, ROUNDS_FINER))
            if budget_end is not None and time.perf_counter() >= budget_end:
                n_rounds = 1
            objects0 = None if (flow is None or not INHERIT_OBJECTS) else _objects_from_coarser(object_map, regions)
            x0, obj_of_region, log_pi, step = _anneal_level(post, regions, rng, n_rounds, budget_end,
                                                            trace, t_start, step, flow is None, budget,
                                                            objects=objects0)
            # Clipped at the range's border: labels re-centred there, annealed again.
            for _ in range(CLIP_RETRIES):
                clipped = float(_clipped(post, x0).mean())
                if clipped <= CLIP_FRACTION or (
                        budget_end is not None and time.perf_counter() >= budget_end):
                    break
                recentred.append((factor, clipped))
                new_base, x0 = _recentre(post, x0)
                with phase_of(budget, "data terms"):
                    post = MotionPosterior(g1, g2, post.grid, base=new_base, grid_v=post.grid_v, **weights)
                x0, obj_of_region, log_pi, step = _anneal_level(
                    post, regions, rng, CLIP_ROUNDS, budget_end, trace, t_start, step, False, budget,
                    start=(x0, obj_of_region))
            if lev == finest and OBJECT_ROUNDS:
                # Objects only, with the flow fixed: more level-2 annealing
                # than the shared rounds give (cheap; the flow is unchanged).
                with phase_of(budget, "level 2"):
                    rgraph = RegionGraph.from_labels(regions)
                    n_reg = int(regions.max()) + 1
                    for T in T0_FINER * (T_FINAL / T0_FINER) ** np.linspace(0, 1, OBJECT_ROUNDS):
                        obj_of_region = _level2(post, x0, regions.ravel(), n_reg, rgraph, obj_of_region,
                                                rng, T)
                    log_pi = post.log_target(x0, obj_of_region[regions.ravel()])
            flow = post.flow(x0)
            object_map = obj_of_region[regions]
    factor = 2 ** finest
    spread = std = nil_p = None
    if posterior_samples:
        with budget.phase("posterior samples"):
            spread, std, nil_p = _flow_posterior(post, x0, obj_of_region[regions.ravel()],
                                                 int(regions.max()) + 1, rng, int(posterior_samples))
        if factor > 1:
            spread, std = _nearest(spread, (h, w)) * factor, _nearest(std, (h, w)) * factor
            nil_p = _nearest(nil_p, (h, w))
    objects_raw = obj_of_region[regions]
    sampled_objects = objects_raw
    if factor > 1:
        # The sampled level's flow (nil kept nil) and objects at full size.
        nil_small = np.isnan(flow[..., 0])
        full = _upsample_flow(flow, (h, w))
        full[_nearest(nil_small, (h, w))] = np.nan
        flow = full
        objects_raw = _nearest(objects_raw, (h, w))
    used, inv = np.unique(objects_raw, return_inverse=True)
    order = np.argsort(-np.bincount(inv.ravel()), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    objects = rank[inv.reshape(h, w)]
    small_rank = rank[np.clip(np.searchsorted(used, sampled_objects), 0, used.size - 1)]
    ostats = post.object_stats(np.asarray(x0), small_rank.ravel(), used.size)
    velocity = post.best_object_velocity(ostats) * factor
    filled = None
    if refine:
        with budget.phase("refining"):
            flow, filled = refine_flow(f1, f2, flow, regions_full, sigma=sigma, nil_cost=post.nil_cost,
                                       beta=post.beta, return_filled=True, vertical=vertical)
    if budget is not time_budget:
        budget.check_end()
    return MotionSegmentation(flow=flow, occluded=np.isnan(flow[..., 0]), regions=regions_full,
                              objects=objects, object_velocity=velocity, trace=trace,
                              energy=-float(log_pi), seconds=time.perf_counter() - t_start,
                              filled_flow=filled, flow_spread=spread, flow_std=std,
                              nil_probability=nil_p, posterior_samples=int(posterior_samples),
                              phases=dict(budget.phases), recentred=recentred)
