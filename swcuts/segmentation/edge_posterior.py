"""The "edges" sampling posterior (issue 35, round 8): the learned edge
evidence alone, at granularities set per photo to the annotators' numbers of
segments.

The posterior of one level, on the atoms of a photo (partitions X):

    π_b(X) ∝ exp(−a1 · R(X)) Π_{⟨ij⟩ cut by X} exp(−w_ij),   w_ij = γ · logit(q_ij) + b,

with q_ij the learned probability that atoms i and j share a segment
(:func:`swcuts.graph.learned_edges.learned_edge_probabilities`), γ =
:data:`EVIDENCE_POWER` the power of the coarsened evidence (round 10), b an
offset per level, R(X) the number of connected regions and a1 =
:data:`REGION_PENALTY` nats a region: no region likelihood. It is an
:class:`~swcuts.models.image.ImageModel` whose likelihood is identically
zero (one constant channel, histogram family, κ = 0), a0 = a2 = 0, a1 and
the boundary term −Σ_cut w_ij (:meth:`~swcuts.models.image.ImageModel.set_boundary`),
so every kernel samples it exactly (``tests/test_edge_posterior.py``
enumerates it). The SW-cut bond probabilities are those of Potts SW,
q_e = 1 − exp(−max(w_e, 0)) (:func:`bond_probabilities`): the cut factor
Π(1 − q) of a move then cancels π's ratio on every edge of positive weight,
and the acceptance of a relabelling is the label proposal's ratio times
exp(Σ of the negative weights it uncuts).

**The granularity is unknown** (as in :mod:`swcuts.segmentation.granularity`):
the samples follow the mixture Σ_b h_b π_b of separately normalised
posteriors, with hyperprior weights h = :data:`LEVEL_SHARES` / their sum
(each level runs ``chains`` × its share of chains, every chain keeping the same
number of samples: a stratified sample of the mixture). The offsets B are set **per photo**, by an
empirical-Bayes rule: b of each level is fitted on short pilot chains
(:func:`fit_offsets`, a secant search in (b, log K)) so that the level's
mean number of segments K is the level's target, :data:`TARGET_SEGMENTS`,
chosen from the BSDS500 annotators' numbers of segments on the training
photos (train + val; 713 annotations: 10th, 30th, 50th percentile 5, 10,
15). The number of segments of this posterior moves steeply with b (a
Potts-like transition at a different b on every photo: round 6), which is
why b is set per photo and not once. The fit uses the photo but not its
annotations; the samples are exact for the fitted offsets.

Measured in docs/algorithms/posterior.md ("Issue 35, round 8" to "round 11").
The default posterior of :func:`~swcuts.segmentation.posterior.sample_posterior`
(``model="edges"``; round 11), on the atoms merged as the default
segmentation merges them (:data:`MERGED_ATOMS`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logit

from swcuts.inference.budget import Budget
from swcuts.inference.chains import Chain
from swcuts.inference.posterior_samples import PosteriorSamples
from swcuts.io.errors import InputError, check_number
from swcuts.models.image import ImageModel
from swcuts.samplers.registry import steps_for

__all__ = ["TARGET_SEGMENTS", "REGION_PENALTY", "LEVEL_SHARES", "LEVEL_CHAINS", "FIT_STEPS_PER_ATOM", "FIT_ROUNDS", "FIT_TOLERANCE",
           "PILOT_PER_ATOM", "THIN_PER_ATOM", "Q_CAP", "BOND_SCALE", "edge_weights", "bond_probabilities",
           "SAMPLING_MODELS", "edge_model", "fit_offsets", "sample_edges", "sample_edge_posterior", "check_targets",
           "check_sampling_model", "refuse_options", "sampling_options", "START_POOL", "RECORDS", "BLOCKS",
           "BLOCK_EVERY", "BLOCK_FLIPS", "EVIDENCE_POWER", "FIT_FLOOR", "DEFAULT_SAMPLING_MODEL", "MERGED_ATOMS", "DETECTOR_SCALES",
           "DETECTOR_FOREST"]

#: Target numbers of segments of the levels (the annotators' 10th, 30th and
#: 50th percentiles are 5, 10 and 15 on BSDS500 train + val; (4, 8, 16),
#: (3, 6, 12), (6, 12, 19, 35) and (4, 8, 16, 32) were measured on
#: validation photos: finer levels draw boundaries the annotators do not).
TARGET_SEGMENTS = (4.0, 8.0, 16.0)
#: a1, nats per connected region (0, 1 and 3 measured on validation photos:
#: 1 detects the annotators' boundaries as well as the default posterior,
#: with a calibration error near that of 0; round 8).
REGION_PENALTY = 1.0
#: Chains of each level (times its share).
LEVEL_CHAINS = 2
#: Hyperprior weights of the levels of :data:`TARGET_SEGMENTS`, as shares of
#: the chains: the coarsest level weighs 1/2, the others 1/4 each. Equal
#: weights gave a calibration error of 0.139 on 6 validation photos, these
#: 0.099 (the annotators' own distribution over the three levels, 0.10 / 0.27 /
#: 0.63, gave 0.207). Other targets: equal shares.
LEVEL_SHARES = (2, 1, 1)
#: Steps per atom of each pilot of the offset fit, most pilots per level,
#: and the tolerance |log(K / target)| that ends a level's fit.
FIT_STEPS_PER_ATOM, FIT_ROUNDS, FIT_TOLERANCE = 6, 5, 0.15
#: First offset tried (coarsest level) and the slope d log K / d b assumed
#: before two pilots bracket the target.
FIT_START, FIT_SLOPE = 1.0, -1.0
#: Lowest offset the fit tries, in units of b / γ: the support of the
#: offsets' hyperprior. Below it a cut edge of "same segment" evidence costs
#: nothing and the levels reach their targets by cutting where the photo has
#: no boundary (the flat halves of a two-tone image got boundary
#: probability up to 0.3 at γ = 1, 0.5 at γ = 0.5). On 30 BSDS500 photos at γ = 0.5 (12 tuning, 18 held out) the
#: fitted b / γ ranged from −0.58 to 1.7.
FIT_FLOOR = -1.5
#: Steps per atom of each chain's pilot at T = 1 and between kept samples
#: (round 11, merged atoms, 12 tuning photos, with 5 records a sample:
#: thinning 45 mixed 12 of 12 by split R-hat against 8 at 15 and 1 at 3
#: without records, the same ECE and ODS F, 5.6 CPU s a photo against 3.5).
PILOT_PER_ATOM, THIN_PER_ATOM = 20, 45
#: The chains' starts, in turn: one label, the level's own fit end state,
#: the next coarser level's fit end state (the first level: one label).
START_POOL = ("one", "fit")
#: Records of −log π and K per kept sample, for split R-hat
#: (:func:`~swcuts.segmentation.posterior.sample_model`'s ``records``; round 9
#: measured 3: from 13 kept samples a chain, split R-hat of perfectly mixing
#: chains exceeds 1.1 on 45 % of photos). Round 11, merged atoms: 5 (on the
#: 12 tuning photos at thinning 15, 8 mixed by the records, 5 by the kept
#: samples alone; at 45, 12 and 9).
RECORDS = 5
#: Block flips mixed with the kernel (:mod:`swcuts.samplers.blocks`): the
#: blocks are the regions of the offset fit's pilot states ("pilots") and
#: the clusters of single-linkage merging by logit q ("merges");
#: :data:`BLOCK_FLIPS` block flips every :data:`BLOCK_EVERY` kernel steps
#: per atom. () for none (the default: ("pilots",) mixed the coarsest level
#: better held out, 4 of 6 photos against 2, but calibrated worse, ECE 0.172
#: against 0.140; docs/algorithms/posterior.md, round 9).
BLOCKS = ()
BLOCK_EVERY, BLOCK_FLIPS = 1.0, 100
#: Ceiling of the bond probabilities (a bond that never breaks would freeze R).
Q_CAP = 0.999
#: c of the bond probabilities 1 − exp(−c · max(w, 0)) (1: Potts SW's).
BOND_SCALE = 1.0
#: γ of w_ij = γ · logit(q_ij) + b: the power of the coarsened edge evidence
#: (Miller & Dunson 2019; issue 35, round 10). γ < 1 counts the evidence of a
#: boundary's atom edges as fewer independent pieces than there are edges
#: (neighbouring edges' logit q correlate, ρ1 ≈ 0.85: derived γ ≈ 0.1–0.15, where
#: the offset fit turns metastable). Measured 1, 0.7, 0.5, 0.35: 0.5 gave pooled
#: ECE 0.046 against 0.079 at γ = 1 on 12 tuning photos, held out 0.037 against
#: 0.109 (ODS F 0.589 against 0.544); docs/algorithms/posterior.md, round 10.
EVIDENCE_POWER = 0.5
#: ``segment(posterior_model=...)`` / ``--posterior-model``: "image" (the
#: segmentation's own posterior) or "edges" (this module's).
SAMPLING_MODELS = ("image", "edges")
#: The sampling posterior of ``sample_posterior`` and ``--posterior-samples``
#: when none is named (issue 35, round 11: on merged atoms, 18 held-out
#: photos, pooled ECE 0.034 against 0.426 for the image posterior, ODS F
#: 0.698 against 0.675, split R-hat <= 1.1 on 18 of 18 against 0).
DEFAULT_SAMPLING_MODEL = "edges"
#: Sample the atoms merged along their weakest boundaries, as the default
#: segmentation merges them (round 11; False: the watershed atoms of rounds
#: 8-10). The evidence of a merged edge is the learned q of the merged
#: atoms' shared boundary, one vote per edge. On the 12 tuning photos, pooled
#: ECE 0.095 / 0.053 and ODS F 0.638 / 0.702 (val / train) against 0.126 /
#: 0.069 and 0.612 / 0.669 when a merged edge sums the evidence of the atom
#: edges it is made of (the atoms' posterior restricted to the merged atoms),
#: and 0.131 / 0.092, 0.638 / 0.696 with a q retrained on merged edges.
#: Where fewer merged atoms are left than the finest level's target number
#: of segments, the atoms are sampled unmerged: a two-tone image merges to 2
#: atoms, whose one edge (q = 0.18: the detector gives a crisp step 0.64)
#: would cut the step in half of the samples; its 60 atoms cut it in all.
MERGED_ATOMS = True
#: Scales of the boundary detector whose map gives the atoms and q of the
#: edges posterior (``boundary_probability(scales=...)``). Round 12 measured
#: (1, 2) (the maps of the features as given and enlarged twice, averaged):
#: on the 12 tuning photos (val / train first 6) ODS F 0.645 / 0.716 against
#: 0.638 / 0.699, pooled ECE 0.090 / 0.078 against 0.104 / 0.042; held out
#: (18 photos) ODS F 0.706 against 0.698, ECE 0.059 against 0.034, 9.2 CPU s a
#: photo against 6.7, and on a noisy two-tone image boundaries in its flat
#: half in 9 % of the samples against 3 %: not adopted.
DETECTOR_SCALES = (1.0,)
#: The boundary detector's ``forest`` for the atoms and q of the edges
#: posterior (``boundary_probability(forest=...)``: the detector's map
#: combined with the structured edge forest's; colour photos only). Round 13,
#: chosen on val[80:100] (the photos neither detector was trained on): ODS F
#: 0.724 against 0.710, pooled ECE 0.033 against 0.033; held out (first 18):
#: ODS F 0.707 against 0.698, AP 0.543 against 0.532, ECE 0.036 against 0.034,
#: split R-hat <= 1.1 on 17 of 18 against 18, 5.5 CPU s a photo against 6.3.
DETECTOR_FOREST = True


def check_sampling_model(name) -> str:
    """The name of a sampling model (None: :data:`DEFAULT_SAMPLING_MODEL`),
    or a one-line error.

    Examples
    --------
    >>> check_sampling_model(None), check_sampling_model("image")
    ('edges', 'image')
    """
    if name is None:
        return DEFAULT_SAMPLING_MODEL
    if not isinstance(name, str) or name not in SAMPLING_MODELS:
        raise InputError(f"unknown posterior model {name!r}; choose one of {', '.join(SAMPLING_MODELS)}")
    return name


def check_targets(targets) -> tuple:
    """The levels' target numbers of segments (None: :data:`TARGET_SEGMENTS`),
    or a one-line error.

    Examples
    --------
    >>> check_targets(None), check_targets(5)
    ((4.0, 8.0, 16.0), (5.0,))
    """
    targets = TARGET_SEGMENTS if targets is None else targets
    if np.ndim(targets) == 0:
        targets = (targets,)
    if isinstance(targets, (str, bytes)) or not 1 <= len(targets) <= 10:
        raise InputError(f"granularity of model='edges' needs 1 to 10 target numbers of segments, got {targets!r}")
    for t in targets:
        check_number("granularity (a target number of segments)", t, minimum=1)
    return tuple(float(t) for t in targets)


def refuse_options(**options) -> None:
    """A one-line error naming the options of the image posteriors that the
    edges posterior does not have, if any is not None."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise InputError(f"model='edges' (the default sampling posterior) has no option {', '.join(given)}; "
                         "pass model='image' for the segmentation's own posterior, which has them")


def sampling_options(posterior_model, **image_options) -> dict:
    """The posterior options of :func:`swcuts.segment`'s samples:
    ``image_options`` (``model``, ``a0``, ...) for the segmentation's own
    posterior (``model`` None: "image", the default image model), ``model="edges"``
    alone for this one.

    Examples
    --------
    >>> sampling_options(None, model="learned", a0=2.0), sampling_options("image", a0=2.0)
    ({'model': 'edges'}, {'a0': 2.0, 'model': 'image'})
    """
    if check_sampling_model(posterior_model) == "edges":
        return {"model": "edges"}
    return {**image_options, "model": image_options.get("model") or "image"}


def edge_weights(q, offset, scale=1.0) -> np.ndarray:
    """w_ij = scale · logit(q_ij) + offset: a cut edge costs w_ij nats.

    Examples
    --------
    >>> edge_weights(np.array([0.5, 0.9]), 1.0).round(3)
    array([1.   , 3.197])
    """
    q = np.clip(np.asarray(q, dtype=np.float64), 1e-9, 1 - 1e-9)
    return float(scale) * logit(q) + float(offset)


def bond_probabilities(weights, cap=Q_CAP, scale=None) -> np.ndarray:
    """Potts SW bond probabilities 1 − exp(−c · max(w, 0)), at most ``cap``
    (c = ``scale``, default :data:`BOND_SCALE`).

    Examples
    --------
    >>> bond_probabilities(np.array([-1.0, 0.0, np.log(2.0)]))
    array([0. , 0. , 0.5])
    """
    c = BOND_SCALE if scale is None else float(scale)
    return np.minimum(-np.expm1(-c * np.maximum(np.asarray(weights, dtype=np.float64), 0.0)), cap)


def edge_model(atoms, graph, weights, *, a1=REGION_PENALTY) -> ImageModel:
    """π(X) ∝ exp(−a1 · regions) Π_{cut edges} exp(−w): an
    :class:`~swcuts.models.image.ImageModel` with a zero likelihood.

    Examples
    --------
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> atoms = np.array([[0, 1, 2]])
    >>> m = edge_model(atoms, RegionGraph.from_labels(atoms), np.array([2.0, -1.0]), a1=0.5)
    >>> [m.log_target(np.array(x)) for x in ([0, 0, 0], [0, 1, 1], [0, 0, 1])]
    [-0.5, -3.0, 0.0]
    """
    atoms = np.asarray(atoms)
    model = ImageModel(np.zeros(atoms.shape + (1,)), atoms, graph, bins=2, families=("histogram",),
                       a0=0.0, a1=float(a1), a2=0.0, kappa=0.0)
    model.set_boundary(1.0, weights)
    return model


def _pilot(atoms, graph, logit_q, offset, steps, start, rng, sampler, a1):
    """Mean number of segments over the second half of a pilot chain, and its end state."""
    from swcuts.segmentation.posterior import _make_kernel

    w = logit_q + offset
    model = edge_model(atoms, graph, w, a1=a1)
    chain = Chain(_make_kernel(sampler, model, bond_probabilities(w))[1], model.new_state(start), rng)
    counts = []
    for r in range(10):
        chain.advance(max(1, steps // 10))
        if r >= 4:
            counts.append(chain.state.partition.n_labels)
    return float(np.mean(counts)), chain.state.partition.labels.copy()


def fit_offsets(atoms, graph, logit_q, targets, *, rng, steps=None, rounds=FIT_ROUNDS,
                tolerance=FIT_TOLERANCE, sampler="swc", a1=REGION_PENALTY, visited=None, power=1.0):
    """Offsets b, one per target number of segments, by pilot chains.

    Levels are fitted from the first target on, each pilot starting where
    the last one ended (one label at first; a level's first pilot from the
    last level's best state), or, once a pilot of the level had at most the
    target number of segments, from that pilot's end state (a fragmented
    state can persist where the coarse one would not form: round 10, at
    γ = 0.35). Within a level: a pilot at b
    measures the mean number of segments K; the next b is the secant in
    (b, log K) between the closest pilots on either side of the target
    (before both sides are seen: a step of slope :data:`FIT_SLOPE`); after
    ``rounds`` pilots, or within ``tolerance`` in log K, the pilot closest
    to the target gives b. No b below :data:`FIT_FLOOR` · γ is tried: a
    level whose pilot there stays at or under its target ends there (the
    photo has no evidence for more segments). ``visited``: a list that gets every pilot's end state.
    ``power``: the γ that scaled ``logit_q``; the search runs in units of
    b / γ (first b :data:`FIT_START` · γ, slope :data:`FIT_SLOPE` / γ), where
    K(b) keeps its shape as γ changes (round 10: with the slope of γ = 1, the
    fit at γ = 0.5 jumped across the steeper transition on 3 of 12 photos).

    Returns
    -------
    offsets : list of float
    ends : list of (n,) int arrays
        The last pilot state of each level (starts for its chains).
    history : list of list of (b, K)
    """
    n = graph.n_vertices
    steps = steps_for(sampler, FIT_STEPS_PER_ATOM, n) if steps is None else int(steps)
    start = np.zeros(n, dtype=np.int64)
    offsets, ends, history = [], [], []
    b, slope, floor = FIT_START * power, FIT_SLOPE / power, FIT_FLOOR * power
    for target in targets:
        above = below = coarse = None  # (b, K) with K > target, K <= target; the latter's end state
        seen, best_state = [], None
        for _ in range(rounds):
            k, start = _pilot(atoms, graph, logit_q, b, steps, start if coarse is None else coarse, rng,
                              sampler, a1)
            if visited is not None:
                visited.append(start.copy())
            seen.append((b, k))
            if best_state is None or abs(math.log(k / target)) <= min(abs(math.log(x / target)) for _, x in seen):
                best_state = start.copy()
            if k > target:
                above = (b, k) if above is None or b > above[0] else above
            elif below is None or b < below[0]:
                below, coarse = (b, k), start.copy()
            if abs(math.log(k / target)) < tolerance or (k <= target and b <= floor):
                break
            if above is not None and below is not None and above[1] != below[1]:
                t = (math.log(target) - math.log(above[1])) / (math.log(below[1]) - math.log(above[1]))
                b = above[0] + t * (below[0] - above[0])
            else:
                b = b + (math.log(target) - math.log(k)) / slope
            b = max(b, floor)
        best = min(seen, key=lambda s: abs(math.log(s[1] / target)))
        offsets.append(float(best[0]))
        ends.append(best_state)
        history.append(seen)
        b, start = best[0], best_state
    return offsets, ends, history


def sample_edges(atoms, graph, q, *, targets=TARGET_SEGMENTS, n_samples=100, chains=LEVEL_CHAINS,
                 seed=None, time_budget=None, offsets=None, thin=None, pilot_steps=None, sampler="swc",
                 workers=None, image=None, progress=False, a1=REGION_PENALTY, shares=None,
                 blocks=None, block_every=None, block_flips=None, records=None, power=None,
                 **options) -> PosteriorSamples:
    """Samples of the mixture of the "edges" posteriors of a photo's atoms.

    Parameters
    ----------
    atoms : (H, W) int array
    graph : RegionGraph
        Of ``atoms``.
    q : (E,) float array
        Learned same-segment probabilities of the edges.
    targets : sequence of float
        Target numbers of segments, one level each (:data:`TARGET_SEGMENTS`).
    offsets : sequence of float, optional
        The levels' offsets b, if known (then ``targets`` only names the
        levels); default: fitted by :func:`fit_offsets`.
    a1 : float
        Nats per connected region (:data:`REGION_PENALTY`).
    shares : sequence of int, optional
        The levels' weights in the mixture, as multiples of ``chains`` (default
        :data:`LEVEL_SHARES` for the default targets, else 1 each).
    blocks, block_every, block_flips : optional
        Block flips mixed with ``sampler`` (:mod:`swcuts.samplers.blocks`):
        sources of blocks ("pilots": the regions of the offset fit's pilot
        states, "merges": single-linkage clusters of logit q) or vertex sets;
        ``block_flips`` flips after every ``block_every`` steps per atom (default
        :data:`BLOCKS`, :data:`BLOCK_EVERY`, :data:`BLOCK_FLIPS`; () for none).
    records : int, optional
        Records of −log π and K per kept sample for split R-hat (default
        :data:`RECORDS`).
    power : float, optional
        γ of the edge weights w = γ · logit q + b (default
        :data:`EVIDENCE_POWER`); the offsets are fitted at this γ.
    n_samples, chains, seed, time_budget, thin, pilot_steps, sampler, workers, image, progress
        As for :func:`~swcuts.segmentation.posterior.sample_model`; ``thin``
        and ``pilot_steps`` default to :data:`THIN_PER_ATOM` and
        :data:`PILOT_PER_ATOM` steps per atom of SW cuts, in steps of
        ``sampler`` by the registry's budgets
        (:func:`~swcuts.samplers.registry.steps_for`). Chains run at T = 1 from the
        fit's end states and one label (no annealing).
    **options
        Passed to :func:`~swcuts.segmentation.posterior.sample_model`
        (``replicas``, ``t_max``, ``swap_every``).

    Returns
    -------
    PosteriorSamples
        Pooled over the levels; ``granularity`` holds the targets, each of
        ``levels`` its ``offset`` and ``target``.

    Examples
    --------
    >>> from swcuts.graph.region_graph import RegionGraph
    >>> atoms = np.arange(16).reshape(4, 4).repeat(3, axis=0).repeat(3, axis=1)
    >>> graph = RegionGraph.from_labels(atoms)
    >>> q = np.full(graph.n_edges, 0.6)
    >>> ps = sample_edges(atoms, graph, q, targets=(2, 4), n_samples=16, seed=0)
    >>> ps.n_samples, [round(level["target"]) for level in ps.levels]
    (16, [2, 4])
    """
    from swcuts.segmentation.posterior import sample_model

    check_number("records", records, integer=True, minimum=1, allow_none=True)
    check_number("power", power, minimum=0, exclusive=True, allow_none=True)
    power = EVIDENCE_POWER if power is None else float(power)
    n = graph.n_vertices
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    logit_q = edge_weights(q, 0.0, power)
    targets = tuple(float(t) for t in targets)
    visited = []
    if offsets is None:
        offsets, ends, _ = fit_offsets(atoms, graph, logit_q, targets, rng=rng, sampler=sampler, a1=a1,
                                       visited=visited, power=power)
    else:
        offsets, ends = [float(b) for b in offsets], [np.zeros(n, dtype=np.int64)] * len(targets)
    kernel = sampler
    sets = []
    from swcuts.samplers.blocks import BlockFlip, BlockMixture, merge_blocks, region_blocks

    for source in BLOCKS if blocks is None else blocks:
        if not isinstance(source, str):
            sets.append(np.asarray(source, dtype=np.int64))
        elif source in ("pilots", "merges"):
            sets += region_blocks(graph, visited) if source == "pilots" else merge_blocks(graph, logit_q)
        else:
            raise InputError(f"unknown block source {source!r}; choose pilots or merges, or give vertex sets")
    if sets:
        every = max(1, round((BLOCK_EVERY if block_every is None else block_every) * n))

        def kernel(model, q):
            from swcuts.segmentation.posterior import _make_kernel

            return BlockMixture(_make_kernel(sampler, model, q)[1], BlockFlip(model, sets), every=every,
                                n_flips=BLOCK_FLIPS if block_flips is None else block_flips)
    levels = len(offsets)
    if shares is None:
        shares = LEVEL_SHARES if targets == TARGET_SEGMENTS else (1,) * levels
    if len(shares) != levels or any(int(k) != k or k < 1 for k in shares):
        raise InputError(f"shares must be {levels} positive integers, got {shares}")
    per_chain = max(4, math.ceil(n_samples / (chains * sum(shares))))
    budget = None if time_budget is None else Budget.of(time_budget)
    thin = steps_for(sampler, THIN_PER_ATOM, n) if thin is None else thin
    pilot_steps = steps_for(sampler, PILOT_PER_ATOM, n) if pilot_steps is None else pilot_steps
    parts = []
    for i, (b, child) in enumerate(zip(offsets, rng.spawn(levels))):
        # Starts, in turn (START_POOL; a finer level's state can trap a coarse level: docs, rounds 8-9).
        one = np.zeros(n, dtype=np.int64)
        pool = [{"one": one, "fit": ends[i], "coarser": ends[i - 1] if i else one}[s] for s in START_POOL]
        k = chains * int(shares[i])
        w = logit_q + b
        seconds = None
        if budget is not None and budget.timed:
            seconds = budget.allot(warn=i == 0) * shares[i] / sum(shares[i:])
        parts.append(sample_model(edge_model(atoms, graph, w, a1=a1), bond_probabilities(w), atoms=atoms,
                                  n_samples=per_chain * k, chains=k, seed=child,
                                  time_budget=seconds, t0=1.0, anneal_steps=0, pilot_steps=pilot_steps,
                                  thin=thin, starts=[pool[c % len(pool)] for c in range(k)],
                                  sampler=kernel, workers=workers, image=image, posterior="edges",
                                  records=RECORDS if records is None else int(records),
                                  progress=progress, **options))
    pooled = PosteriorSamples.pooled(parts, targets, level_name="the {:g}-segment level")
    for level, b, t in zip(pooled.levels, offsets, targets):
        level["offset"], level["target"], level["power"] = b, t, power
    pooled.seed = seed
    return pooled


def sample_edge_posterior(image, *, n_samples=100, chains=None, seed=None, time_budget=None,
                          channel_axis=-1, atoms=None, n_atoms=None, granularity=None, thin=None,
                          pilot_steps=None, sampler="swc", workers=None, progress=False, replicas=1,
                          t_max=None, swap_every=None, blocks=None, records=None, power=None,
                          merged=None, detector_scales=None, detector_forest=None) -> PosteriorSamples:
    """:func:`~swcuts.segmentation.posterior.sample_posterior` with
    ``model="edges"``: prepare the image, its atoms (watershed on the learned
    detector's map, as the "learned" model's; ``merged``, default
    :data:`MERGED_ATOMS`: then merged along their weakest boundaries, as the
    default segmentation merges them, slivers without an interior pixel
    folded first, unless fewer merged atoms are left than the finest level's
    target number of segments) and the learned q_ij, then
    :func:`sample_edges`. ``granularity``: the levels' target numbers of
    segments (default :data:`TARGET_SEGMENTS`); ``chains``: per level
    (default :data:`LEVEL_CHAINS`); ``replicas``, ``t_max``, ``swap_every``:
    replica exchange (:func:`~swcuts.segmentation.posterior.sample_model`);
    ``blocks``, ``records``: block flips and R-hat records (:func:`sample_edges`;
    round 9: ``blocks=("pilots",), records=3``); ``power``: γ of the edge
    weights (default :data:`EVIDENCE_POWER`); ``detector_scales``: the
    boundary detector's scales for the atoms and q (default
    :data:`DETECTOR_SCALES`); ``detector_forest``: its ``forest`` (default
    :data:`DETECTOR_FOREST`). The chains start at T = 1 (no annealing).

    Examples
    --------
    >>> image = np.zeros((30, 30)); image[:, 15:] = 1.0
    >>> ps = sample_edge_posterior(image, n_samples=16, n_atoms=20, seed=0, granularity=(1, 2))
    >>> ps.posterior, ps.n_samples
    ('edges', 16)
    """
    from swcuts.image.atoms import DEFAULT_ATOMS
    from swcuts.image.boundary_detector import check_scales
    from swcuts.image.edge_forest import check_forest
    from swcuts.image.prepare import prepare_image, refuse_path
    from swcuts.segmentation.build import build_graph
    from swcuts.segmentation.image_models import DEFAULT_MODEL, model_atom_merge
    from swcuts.segmentation.options import default_n_atoms, resolve_options
    from swcuts.segmentation.posterior import T0, T_MAX, _check_sampling

    refuse_path(image, "sample_posterior")
    targets = check_targets(granularity)
    chains = LEVEL_CHAINS if chains is None else chains
    # Every option before any work, as the image posteriors check theirs.
    _check_sampling(n_samples=n_samples, thin=thin, chains=chains, t0=T0, time_budget=Budget.seconds_of(time_budget),
                    anneal_steps=None, pilot_steps=pilot_steps, workers=workers, replicas=replicas,
                    t_max=T_MAX if t_max is None else t_max, swap_every=swap_every)
    check_number("records", records, integer=True, minimum=1, allow_none=True)
    check_number("power", power, minimum=0, exclusive=True, allow_none=True)
    scales = check_scales(DETECTOR_SCALES if detector_scales is None else detector_scales)
    forest = check_forest(DETECTOR_FOREST if detector_forest is None else detector_forest)
    atoms = DEFAULT_ATOMS if atoms is None else atoms
    resolve_options(sampler=sampler if isinstance(sampler, str) else "swc", atoms=atoms, n_atoms=n_atoms, seed=seed)
    if atoms == "pixels":
        raise InputError("posterior sampling runs on atoms; choose atoms other than 'pixels'")
    budget = Budget.of(time_budget, progress=progress)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    atom_seed = seed if not isinstance(seed, np.random.Generator) else int(rng.integers(2**31))
    with budget.phase("preparing"):
        features, display = prepare_image(image, channel_axis=channel_axis)
    h, w = features.shape[:2]
    n_atoms = default_n_atoms(h * w) if n_atoms is None else n_atoms
    merge = model_atom_merge(DEFAULT_MODEL) if (MERGED_ATOMS if merged is None else merged) else None
    # Fewer merged atoms than the finest level's target leave it no room: then the atoms themselves.
    atom_labels, graph, q, _ = build_graph(features, atoms, n_atoms, seed=atom_seed, edges="learned",
                                           atom_relief="learned", atom_merge=merge, min_merged=max(targets),
                                           budget=budget, detector_scales=scales, detector_forest=forest,
                                           fold_thin=True)
    result = sample_edges(atom_labels, graph, q, targets=targets, n_samples=n_samples, chains=chains,
                          seed=rng, time_budget=budget, thin=thin, pilot_steps=pilot_steps,
                          sampler=sampler, workers=workers, image=display, progress=progress, replicas=replicas,
                          t_max=T_MAX if t_max is None else t_max, swap_every=swap_every, blocks=blocks,
                          records=records, power=power)
    result.seed = seed
    if budget is not time_budget:
        budget.check_end()
    return result
