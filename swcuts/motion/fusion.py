"""Per-pixel fusion of a region's candidate flows (issue 36, round 7).

The refinement (:func:`~swcuts.motion.flow_refine.refine_flow`) fits a few
candidate flows per intensity region and keeps one of them for the whole
region. On scenes whose intensity regions hold several motions (a floor in
perspective and the object standing on it, a facade and the sky) one
choice per region is too coarse: the best candidate differs from one part
of the region to another. :func:`fuse_flows` chooses among the same
candidates at every pixel, by their data cost aggregated over a window
restricted to the pixel's region (local cost aggregation, as in local
stereo, followed by winner-take-all), with the region's choice as the
default:

    A_k(p) = Σ_q w_pq j_q (c_k(q) + β m_k(q)),   W(p) = Σ_q w_pq j_q,

with w_pq = ``DECAY``^(|Δx| + |Δy|) along a path inside p's region
(:func:`~swcuts.motion.uncertainty.region_window`), j the judged pixels,
c_k the capped data cost of candidate k (with
:func:`occlusion_costs`: raised to ``FB_COST`` × the nil cost where k fails
the forward-backward check), m_k(q) the Markov term Σ ‖f_q − f_r‖ to q's
right and lower neighbours in the region. Pixel p switches from the
region's candidate r to the candidate k* of least A(p) only where that
lowers the window's cost by more than ``MARGIN`` nats per judged pixel:
A_r(p) − A_k*(p) > MARGIN · W(p). A pixel whose window judges nothing keeps
r. This step is ours, not the paper's; it is deterministic, and costs two
compiled recursive passes per axis and candidate.
"""

from __future__ import annotations

import numpy as np

from swcuts.motion.uncertainty import region_window

__all__ = ["fuse_flows", "occlusion_costs", "pixel_pair_cost"]

#: Weight per pixel of path length of the aggregation window (that of
#: :data:`swcuts.motion.uncertainty.DECAY`; tried 0.85, 0.93, 0.97).
DECAY = 0.85
#: Least gain, in nats per judged pixel of the window, for a pixel to leave
#: its region's candidate (tried 0.25, 0.5, 1, 2; 0.25 loses the aperture
#: rectangles).
MARGIN = 0.5
#: Least cost, as a fraction of the nil cost, of a pixel whose candidate flow
#: fails the forward-backward check (tried 0.25, 0.5, 0.75, 1).
FB_COST = 0.75
#: ... only where the candidate's own cost exceeds this: in uniform areas the
#: backward flow is unreliable (the aperture problem) and a right flow fails
#: the check at no cost (0 loses the aperture rectangles; tried 0, 0.5, 1, 1.5).
FB_MIN_COST = 0.5
#: Judge only the pixels where some candidate's cost is below this (None: all).
#: Where every candidate is near the nil cost (nothing fits, e.g. a fast
#: motion none of them follows) the Markov term alone decides and prefers
#: the smoothest candidate, the translation. Off: 3.0 is better on held-out
#: Sintel (market_5 clean 20.68 -> 17.87, final 15.66 -> 15.21, seed 0) and
#: on Cones' right view (1.590 -> 1.507), worse on Urban3 (1.218 -> 1.301,
#: seed 1 1.207 -> 1.300): no gain on the tuning pairs (round 7).
INFORMATIVE_COST = None
#: MARGIN, FB_COST and DECAY were tuned on Dimetrodon, Grove3, Urban3,
#: Venus, Cones (both views) at seeds 0 and 1 and the synthetic sets at
#: seed 0; Sintel held out (docs/algorithms/motion.md, round 7).


def pixel_pair_cost(flow, regions, valid):
    """Per pixel Σ ‖f_p − f_q‖ over its right and lower neighbours q in the
    same region, both valid (each neighbour pair counted once).

    Examples
    --------
    >>> f = np.zeros((1, 3, 2)); f[0, 2] = (3.0, 4.0)
    >>> pixel_pair_cost(f, np.array([[0, 0, 0]]), np.ones((1, 3), bool)).tolist()
    [[0.0, 5.0, 0.0]]
    >>> pixel_pair_cost(f, np.array([[0, 0, 1]]), np.ones((1, 3), bool)).tolist()
    [[0.0, 0.0, 0.0]]
    """
    out = np.zeros(regions.shape)
    for a, b in ((np.s_[:, :-1], np.s_[:, 1:]), (np.s_[:-1, :], np.s_[1:, :])):
        same = (regions[a] == regions[b]) & valid[a] & valid[b]
        d = np.hypot(*(flow[a] - flow[b]).transpose(2, 0, 1))
        out[a] += np.where(same, d, 0.0)
    return out


def occlusion_costs(costs, failed, nil_cost, fb_cost=None, min_cost=None):
    """``costs`` (K, H, W) raised to at least ``fb_cost`` × ``nil_cost``
    (default :data:`FB_COST`) where ``failed`` (K, H, W) (the candidate
    fails the forward-backward check there: an occluded pixel, or a wrong
    flow) and the cost exceeds ``min_cost`` (default :data:`FB_MIN_COST`).

    Examples
    --------
    >>> occlusion_costs(np.array([[[0.2, 1.0, 5.0]]]), np.ones((1, 1, 3), bool), 6.0,
    ...                 fb_cost=0.5, min_cost=0.5).tolist()
    [[[0.2, 3.0, 5.0]]]
    """
    fb_cost = FB_COST if fb_cost is None else fb_cost
    min_cost = FB_MIN_COST if min_cost is None else min_cost
    return np.where(failed & (costs > min_cost), np.maximum(costs, fb_cost * nil_cost), costs)


def fuse_flows(costs, cand, regions, judged, prior, *, beta, decay=None, margin=None, informative=None):
    """Choose one of the candidate flows at every pixel.

    Parameters
    ----------
    costs : (K, H, W) float array
        Per-pixel data cost of each candidate (capped; see the module).
    cand : sequence of K (H, W, 2) arrays
        The candidate flows.
    regions : (H, W) int array
        The intensity regions: windows do not cross them.
    judged : (H, W) bool array
        The pixels whose costs count (those seen in frame 1).
    prior : (H, W) int array
        The candidate each pixel takes unless the window's evidence is
        against it (the region's choice).
    beta : float
        Weight of the Markov term m_k.
    decay : float in [0, 1)
        Weight per pixel of path length of the window (default :data:`DECAY`).
    margin : float
        Least gain per judged pixel of the window to leave ``prior``
        (default :data:`MARGIN`).
    informative : float or None
        Judge only the pixels where some candidate's cost is below this
        (default :data:`INFORMATIVE_COST`; None: every judged pixel).

    Returns
    -------
    flow : (H, W, 2) float array
    choice : (H, W) int array
        The candidate taken at each pixel.

    Examples
    --------
    Candidate 1 fits the right half of one region, candidate 0 the left
    half; the region chose 0:

    >>> costs = np.zeros((2, 1, 12)); costs[0, 0, 6:] = 5.0; costs[1, 0, :6] = 5.0
    >>> cand = [np.zeros((1, 12, 2)), np.ones((1, 12, 2))]
    >>> one = np.zeros((1, 12), int)
    >>> _, choice = fuse_flows(costs, cand, one, one == 0, one, beta=0.0, decay=0.5)
    >>> choice.tolist()
    [[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]]
    """
    decay = DECAY if decay is None else decay
    margin = MARGIN if margin is None else margin
    cand = np.stack([np.asarray(f, np.float64) for f in cand])
    judged = np.asarray(judged, bool)
    informative = INFORMATIVE_COST if informative is None else informative
    if informative is not None:
        judged = judged & (np.asarray(costs).min(axis=0) < informative)
    e = np.where(judged, np.asarray(costs, np.float64), 0.0)
    if beta:
        e = e + beta * np.stack([pixel_pair_cost(f, regions, judged) for f in cand])
    agg = region_window(e, regions, decay)
    weight = region_window(judged[None].astype(np.float64), regions, decay)[0]
    prior = np.asarray(prior, np.int64)
    best = agg.argmin(axis=0)
    gain = np.take_along_axis(agg, prior[None], 0)[0] - np.take_along_axis(agg, best[None], 0)[0]
    choice = np.where((weight > 0) & (gain > margin * weight), best, prior)
    return np.take_along_axis(cand, choice[None, ..., None], axis=0)[0], choice
