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
   cuts over the regions, :class:`~swcuts.samplers.objects.ObjectSWC` (compiled SWC) on
   :class:`~swcuts.models.motion.ObjectModel`, with q⁽²⁾ from the motion
   histograms, eq. 76, recomputed after each level-0 run), each kernel
   invariant for its conditional (Prop. 12).
3. Optionally (``posterior_samples=N``), the level-0 chain of the finest
   pyramid level goes on at T = 1 with levels 1 and 2 held fixed, and N
   thinned samples give the per-pixel label spread and nil probability
   (:func:`_flow_posterior`); after the refinement, the expected error of
   the returned flow (:mod:`swcuts.motion.uncertainty`).
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

import numpy as np
from skimage.measure import label as connected_label

from swcuts.inference.anneal import Trace
from swcuts.inference.budget import Budget, phase_of
from swcuts.motion.flow_refine import _fill_nearest, refine_flow
from swcuts.motion.uncertainty import flow_error
from swcuts.graph.region_graph import RegionGraph
from swcuts.graph.edge_probabilities import kl_edge_probabilities
from swcuts.io.errors import check_number
from swcuts.models.affine_objects import affine_maps
from swcuts.models.motion import (
    MOTION_DEFAULTS, MotionPosterior, ObjectModel, check_weights, motion_histograms, noise_sigma,
    velocity_grid)
from swcuts.samplers.swc import SWC
from swcuts.samplers.objects import ObjectSWC
from swcuts.samplers.velocity import VelocityGibbs
from swcuts.motion.frames import _as_frames  # noqa: F401 (the CLI's and tests' import path)
from swcuts.motion.pyramid import (  # noqa: F401 (re-exported)
    AUTO_RANGE_FRACTION, MIN_COARSE_SIDE, MOTION_LIMITS, STEREO_NEGATIVE, STEREO_RANGE_FRACTION,
    _clipped, _downsample, _nearest, _objects_from_coarser, _recentre, _regions_at, _snap_base,
    _check_options, _coarse_grid, _upsample_flow, _wider, auto_range, default_pyramid_levels)

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
#: The default ``tau`` with ``vertical=False`` (stereo); ``tau=`` overrides it.
STEREO_TAU = 0.0
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
#: Divisor of the KL divergence in q⁽²⁾ (eq. 76): larger proposes larger
#: clusters of regions (a proposal choice; every value keeps level 2 exact).
Q2_SCALE = 2.0
#: Objects are connected over regions at most CONNECT_HOPS apart (tau > 0;
#: 2 was tried and lost objects VoI: docs/algorithms/motion.md, round 5).
CONNECT_HOPS = 1
#: Clipping check: where more than CLIP_FRACTION of a level's pixels have a
#: label on the border of the label range, those pixels' labels are
#: re-centred on their flow and the level anneals CLIP_ROUNDS more rounds,
#: at most CLIP_RETRIES times.
CLIP_FRACTION, CLIP_ROUNDS, CLIP_RETRIES = 0.002, 2, 1
#: With no ``max_displacement``: where more than WIDEN_FRACTION of the
#: coarsest level's pixels end on its range's border (before re-centring)
#: or of the finest sampled level's (after), the coarsest range is doubled
#: (within the label cap) and the pyramid sampled again, WIDEN_RETRIES times.
WIDEN_FRACTION, WIDEN_RETRIES = 0.05, 1


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
    object_motion : (K, 2, 3) float array or None
        Each object's posterior-mean affine motion (weight ``tau`` > 0):
        flow(x, y) ≈ object_motion[k] @ (x, y, 1), full-frame pixels
        (:func:`swcuts.models.affine_objects.affine_maps`; ``tau`` = 0: the
        gradient part is 0).
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
        With ``segment_motion(posterior_samples=N)``: the expected
        end-point error of the returned flow (``filled_flow`` where it is
        nil), in pixels: sqrt(E‖x_p − f_p‖² + ‖f_p + b(p − f_p)‖²), the
        first under the coarsened local posterior of the data term at full
        resolution, the second the disagreement with the backward flow
        (:func:`swcuts.motion.uncertainty.flow_error`). None without
        posterior samples.
    flow_std : (H, W, 2) float array or None
        The same per axis (u, v).
    nil_probability : (H, W) float array or None
        Fraction of the posterior samples in which the pixel is nil
        (half-occluded); Rao-Blackwellised.
    label_spread : (H, W) float array or None
        sqrt(var u + var v) of the sampled velocity labels given not nil
        (Rao-Blackwellised; the sampled pyramid level, not the refinement).
    posterior_samples : int
        Number of posterior samples behind ``flow_spread`` (0: none).
    phases : dict
        Seconds of every phase of the call (regions, data terms, level 0,
        level 2, refining, ...; "sampling" holds data terms and levels 0 and 2).
    recentred : list of (int, float)
        Every time a pyramid level's labels were re-centred because they
        reached the border of their range: (the level's downsampling
        factor, the fraction of its pixels on the border).
    widened : list of (float, float, float)
        Every time the coarsest range was widened because the finest sampled
        flow stayed clipped: (old range, new range, the fraction clipped).
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
    object_motion: np.ndarray | None = None
    widened: list | None = None
    label_spread: np.ndarray | None = None

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


def _check_posterior_samples(n):
    check_number("posterior_samples", n, integer=True, minimum=0, maximum=10_000)


def _round_steps(h, w) -> int:
    """Level-0 steps of one annealing round, also one sweep of the
    posterior sampling."""
    return int(min(max(STEPS_PER_PIXEL * h * w, 200), MAX_ROUND_STEPS))


def _flow_posterior(post, x0, obj, n_objects, rng, n_samples):
    """Per-pixel spread and nil probability of the level-0 posterior.

    Runs :class:`VelocityGibbs` at T = 1 from ``x0`` with the objects
    ``obj`` (and so levels 1 and 2) fixed: ``SPREAD_BURN_IN_SWEEPS`` sweeps,
    then ``n_samples`` samples ``SPREAD_THIN_SWEEPS`` sweeps apart. The
    moments of the label offsets d_k (the base flow is fixed, so it does not
    change a variance) are Rao-Blackwellised: each sample adds every
    pixel's single-site conditional moments given the rest
    (:meth:`VelocityGibbs.site_moments`), whose average estimates the
    marginal's moments (E g(x_p) = E E[g(x_p) | rest]) without the 0 that
    a handful of identical samples give.

    Returns
    -------
    spread : (H, W) float array
        sqrt(var u + var v) of the marginal given not nil (0 where the
        pixel is nil with probability ~1).
    std : (H, W, 2) float array
    nil_probability : (H, W) float array
    """
    h, w = post.shape
    kernel = VelocityGibbs(post, obj, n_objects)
    state = kernel.new_state(x0)
    sweep = _round_steps(h, w)
    kernel.run(state, rng, np.ones(SPREAD_BURN_IN_SWEEPS * sweep))
    sums = np.zeros((5, h * w))
    for _ in range(n_samples):
        kernel.run(state, rng, np.ones(SPREAD_THIN_SWEEPS * sweep))
        kernel.site_moments(state, sums)
    n_ok = sums[0]
    m = np.maximum(n_ok, 1e-300)
    var = np.maximum(sums[3:5] / m - (sums[1:3] / m) ** 2, 0.0)
    var[:, n_ok <= 1e-12 * n_samples] = 0.0
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
    vstats = post.affine_stats(x0, region_flat, n_reg)  # affine objects when post.tau > 0
    # Eq. 76: q⁽²⁾ from the symmetric KL of the regions' motion histograms.
    q2 = kl_edge_probabilities(motion_histograms(x0, region_flat, n_reg, post), rgraph.edges, scale=Q2_SCALE)
    model2 = ObjectModel(rgraph, vstats, post.cu, post.cv, post.alpha, post.lambda2, post.tau,
                         connect_hops=CONNECT_HOPS)
    state2 = model2.new_state(obj_of_region)
    # Compiled SW cuts (the moves of SWC with its single-vertex steps).
    ObjectSWC(model2, q2, p_single=SWC.DEFAULT_P_SINGLE).run(state2, rng, np.full(5 * n_reg, T))
    return state2.labels.copy()


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
        and return their per-pixel nil probability and label spread
        (``nil_probability``, ``label_spread``; Rao-Blackwellised), and the
        expected end-point error of the returned flow (``flow_spread``,
        ``flow_std``: :func:`swcuts.motion.uncertainty.flow_error`, exact
        over an offset grid, ~1 s per 640x480 pair). 0 (default): off.
    progress : bool
        On a terminal, name each phase on stderr while it runs.
    vertical : bool
        False: horizontal velocities only (v = 0), the special case of a
        rectified stereo pair (frame 2 the left image, frame 1 the right:
        the flow's u is the disparity, ≥ 0 on such a pair; see
        :func:`swcuts.motion.stereo.segment_stereo`).
    **weights
        Weights of the motion posterior (:data:`swcuts.models.motion.MOTION_DEFAULTS`;
        with ``vertical=False`` the default ``tau`` is ``STEREO_TAU`` = 0,
        one translation per object).

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
    if not vertical and "tau" not in weights:
        # Stereo: one translation per object unless told (STEREO_TAU; with
        # the exact affine level 0 the default tau lost 0.1-0.15 EPE on Cones).
        weights = dict(weights, tau=STEREO_TAU)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    fraction = None if vertical else STEREO_RANGE_FRACTION
    _check_options(max_displacement, precision, pyramid_levels, (h, w), fraction)
    if max_displacement is None:
        levels, coarse_range = auto_range((h, w), float(precision), pyramid_levels, fraction)
    else:
        levels = default_pyramid_levels((h, w)) if pyramid_levels is None else int(pyramid_levels)
        coarse_range = float(max_displacement)
    grid = _coarse_grid(coarse_range, float(precision), vertical)
    finer = min(coarse_range, math.floor(finer_range / precision) * float(precision))
    finer_grid = velocity_grid(finer, float(precision)) if finer > 0 else grid
    grid_v, finer_v = (grid, finer_grid) if vertical else (np.zeros(1), np.zeros(1))
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
        step = 0
        recentred, widened = [], []
        best = None
        for attempt in range(1 + WIDEN_RETRIES):
            flow = None
            object_map = None
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
                widen = (flow is None and attempt < WIDEN_RETRIES and max_displacement is None
                         and float(_clipped(post, x0).mean()) > WIDEN_FRACTION)
                if widen and _wider(coarse_range, precision) > coarse_range:
                    break  # the coarsest range is too small: widened below
                widen = False
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
            # The coarsest or the finest sampled flow clipped at its range's
            # border: the coarsest range widened (doubled, within the label
            # cap) and the pyramid sampled again; the run least clipped is kept.
            clipped = float(_clipped(post, x0).mean())
            if not widen and (best is None or clipped < best[0]):
                best = (clipped, post, x0, obj_of_region, log_pi, flow)
            wider = _wider(coarse_range, precision)
            if (not widen and clipped <= WIDEN_FRACTION) or max_displacement is not None \
                    or wider <= coarse_range or attempt == WIDEN_RETRIES \
                    or (best is not None and budget_end is not None
                        and time.perf_counter() >= budget_end):
                break  # (with no run kept yet, the widened one runs however late: one round a level)
            widened.append((coarse_range, wider, clipped))
            coarse_range = wider
            grid = _coarse_grid(coarse_range, float(precision), vertical)
            grid_v = grid if vertical else grid_v
        _, post, x0, obj_of_region, log_pi, flow = best
    factor = 2 ** finest
    label_spread = spread = std = nil_p = None
    if posterior_samples:
        with budget.phase("posterior samples"):
            label_spread, _, nil_p = _flow_posterior(post, x0, obj_of_region[regions.ravel()],
                                                     int(regions.max()) + 1, rng, int(posterior_samples))
        if factor > 1:
            label_spread = _nearest(label_spread, (h, w)) * factor
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
    motion = affine_maps(post.affine_stats(np.asarray(x0), small_rank.ravel(), used.size), post.alpha,
                         post.tau, post.shape, factor)
    filled = None
    if refine:
        with budget.phase("refining"):
            flow, filled = refine_flow(f1, f2, flow, regions_full, sigma=sigma, nil_cost=post.nil_cost,
                                       beta=post.beta, return_filled=True, vertical=vertical)
    if posterior_samples:  # the expected end-point error of the returned flow (nil pixels filled)
        with budget.phase("posterior samples"):
            dense = filled if filled is not None else _fill_nearest(np.nan_to_num(flow), ~np.isnan(flow[..., 0]))
            spread, std = flow_error(f1, f2, dense, regions_full, sigma=sigma, nil_cost=post.nil_cost,
                                     rounding=post.rounding, vertical=vertical)
    if budget is not time_budget:
        budget.check_end()
    return MotionSegmentation(flow=flow, occluded=np.isnan(flow[..., 0]), regions=regions_full,
                              objects=objects, object_velocity=velocity, trace=trace,
                              energy=-float(log_pi), seconds=time.perf_counter() - t_start,
                              filled_flow=filled, flow_spread=spread, flow_std=std,
                              nil_probability=nil_p, posterior_samples=int(posterior_samples),
                              label_spread=label_spread,
                              phases=dict(budget.phases), recentred=recentred, object_motion=motion,
                              widened=widened)
