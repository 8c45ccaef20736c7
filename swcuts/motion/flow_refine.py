"""Sub-label refinement of a discrete flow: one affine motion per region.

Discrete velocity labels cap the accuracy of the flow at about a quarter
of the label step, and a sampled labelling also carries label noise (a
pixel whose true motion lies between two labels takes either). After
sampling, each intensity region gets an affine flow
f(x, y) = (a0 + a1 x + a2 y, b0 + b1 x + b2 y), started from the
least-squares affine fit of its discrete flow and fitted by damped
Gauss-Newton (Levenberg-Marquardt) on the data term of eq. 74 (the
linearised residual I2(p) − I1(p − f(p)) summed over the region's non-nil
pixels and every channel). A region keeps the affine flow only where it
lowers its energy, the capped data term plus the Markov term β‖f_p − f_q‖
of eq. 75 over its neighbour pairs; elsewhere the discrete answer stays.
OpenCV's DIS flow is one more candidate per region (:data:`BOTTOM_UP`).
With :data:`FUSION`, each pixel may then take another of its region's
candidates where their data cost over a window inside the region says so
(:func:`swcuts.motion.fusion.fuse_flows`). Then OpenCV's variational refinement (the per-pixel step inside DIS) is
started from that flow and kept per region where it lowers the same
energy, its Markov term weighted by :data:`VARIATIONAL_BETA`. Pixels not
seen in frame 1 are left out of the fits and energies
(:data:`OCCLUSION_CHECK`, :data:`OUT_OF_VIEW`).
This step is ours, not the paper's. Every sum is a ``bincount`` over
region labels, never a Python loop over pixels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from swcuts.image.warp import frame_gradient, warp_frame1
from swcuts.motion.fusion import fuse_flows, occlusion_costs, pixel_pair_cost

__all__ = ["refine_flow"]

#: Regions with fewer non-nil pixels than this fit a translation only.
MIN_AFFINE_PIXELS = 30
#: Fixed-point and SOR iterations of the variational refinement. OpenCV's
#: defaults (5 and 5, meant for every level of DIS's pyramid) stop far from
#: convergence at full resolution: from swcuts' cached flows, Dimetrodon
#: EPE 0.203 with them, 0.160 with 20/10, 0.148 with 50/20 (Grove3 0.745,
#: 0.689, 0.678; the layered pairs unchanged).
VARIATIONAL_ITERATIONS = (50, 20)
#: The starts of the dense variational step: each entry a pyramid of
#: downsampling factors (coarsest first) run before the full-size step
#: (:func:`_variational_pyramid`); () is the full-size step alone.
VARIATIONAL_STARTS = ((),)
#: The Markov weight of the choice between a region's flow and its
#: variational refinement, as a fraction of β: β‖f_p − f_q‖ charges a
#: smoothly varying (slanted, sub-pixel) flow for every step of its slope,
#: which the label-level prior was not meant to judge. Tuned on the public
#: pairs, none held out (EPE at 1 / 0.75 / 0.5 / 0.25: Grove3 0.705 / 0.700 /
#: 0.699 / 0.698, Venus 0.364 / 0.364 / 0.359 / 0.347, Cones 1.373 / 1.357 /
#: 1.352 / 1.341, layered synthetic 0.051 / 0.050 / 0.051 / 0.057; Dimetrodon
#: and Urban3 within 0.001).
VARIATIONAL_BETA = 0.5
#: Also offer OpenCV's DIS flow (medium preset) as a candidate of every
#: region (a bottom-up proposal, kept only where it lowers the region's
#: energy like any other candidate).
BOTTOM_UP = True
#: ... and its variational refinement (OpenCV's, as in ``dis+vr``) too: one
#: full-size variational step more (~0.4 CPU s at 640×480). Off by default
#: (round 7: better on every Middlebury pair and Cones, but the aperture
#: rectangles of pair seed 2 go from centre EPE 0.09 to 0.45, the limit 0.5).
BOTTOM_UP_VARIATIONAL = False
#: Occlusion-aware fits: pixels whose flow fails the forward-backward check
#: against a backward flow (DIS from frame 1) neither pull a region's fit
#: nor count in its energy (:func:`occlusion_check`).
OCCLUSION_CHECK = True
#: ... and whose data cost under the discrete flow exceeds this (a residual
#: of twice the noise deviation on one channel).
OCCLUSION_MIN_COST = 4.5
#: Out-of-view pixels: a pixel whose flow fails the forward-backward check
#: and whose context (the flow of the nearest pixel that passes it) puts its
#: source outside frame 1 is not seen in frame 1 (it entered the view, e.g.
#: the left border of a stereo pair's left image): its own match is ignored
#: and it takes its region's refined flow, as a nil pixel does (it stays
#: non-nil in the output; :func:`_source_outside`).
OUT_OF_VIEW = True
#: Per-pixel fusion of the candidates (:func:`swcuts.motion.fusion.fuse_flows`)
#: after the per-region choice, judged on every pixel seen in frame 1 with
#: the forward-backward check of each candidate priced in
#: (:func:`swcuts.motion.fusion.occlusion_costs`); needs :data:`OCCLUSION_CHECK`.
#: Round 7 (docs/algorithms/motion.md): better on every Middlebury pair,
#: Cones and the synthetic sets; ahead of DIS on held-out Sintel's finals.
FUSION = True
#: The fusion also judges the pixels the discrete flow left nil (their source
#: inside frame 1 by their nearest non-nil pixel's flow): where the discrete
#: flow is mostly nil (fast motion) its nearest-pixel fill would otherwise
#: stand unjudged.
FUSION_NIL = True
#: Inlier scale of the first Gauss-Newton iterations (then 1).
GNC = (8.0, 4.0, 2.0)


def _pixel_cost(frame1, frame2, flow, valid, sigma, cap):
    """Per pixel min(Σ_c r²/(2σ²), cap) (a pixel that fits worse could be
    nil at cost ``cap``), the residuals, the pixels whose source lies inside
    frame 1, and the inliers (inside, not nil, below the cap)."""
    warped, inside = warp_frame1(frame1, flow, with_inside=True)
    r = frame2 - warped
    e = np.minimum((r * r).sum(axis=2) / (2.0 * sigma * sigma), cap)
    return e, r, inside, valid & inside & (e < cap)


def _pair_cost(flow, regions, valid, n):
    """Per region Σ ‖f_p − f_q‖ over its 4-neighbour pairs of non-nil
    pixels inside it (the Markov term of eq. 75 without β)."""
    return np.bincount(regions.ravel(), pixel_pair_cost(flow, regions, valid).ravel(), minlength=n)


def _affine(theta, regions, xc, yc):
    u = theta[regions, 0] + theta[regions, 1] * xc + theta[regions, 2] * yc
    v = theta[regions, 3] + theta[regions, 4] * xc + theta[regions, 5] * yc
    return np.stack([u, v], axis=2).astype(np.float32)


def _solve(A, b, damping, translation_only):
    """Per region the damped solution of A x = b (Levenberg-Marquardt:
    the ridge is relative to each diagonal entry); regions in
    ``translation_only`` solve for the translation, their affine terms 0."""
    A = A.copy()
    b = b.copy()
    aff = np.array([1, 2, 4, 5])
    t = np.nonzero(translation_only)[0]
    if t.size:
        A[np.ix_(t, aff, np.arange(6))] = 0.0
        A[np.ix_(t, np.arange(6), aff)] = 0.0
        A[np.ix_(t, aff, aff)] = np.eye(4)
        b[np.ix_(t, aff)] = 0.0
    diag = np.einsum("nii->ni", A)
    A = A + np.einsum("ni,ij->nij", damping * diag + 1e-9, np.eye(6))
    return np.linalg.solve(A, b[..., None])[..., 0]


def _normal_equations(cols, r, lab, n):
    A = np.zeros((n, 6, 6))
    b = np.zeros((n, 6))
    for i in range(6):
        b[:, i] = np.bincount(lab, (cols[i] * r).sum(axis=1), minlength=n)
        for j in range(i, 6):
            A[:, i, j] = A[:, j, i] = np.bincount(lab, (cols[i] * cols[j]).sum(axis=1), minlength=n)
    return A, b


@njit(cache=True)
def _gn_normal_equations(gx, gy, x, y, r, lab, n):
    """Per region the normal equations A (n, 6, 6) and b (n, 6) of the
    affine Gauss-Newton step: Jacobian columns (gx, gx·x, gx·y, gy, gy·x,
    gy·y) per pixel and channel, residuals ``r`` (N, C); the compiled
    equivalent of :func:`_normal_equations` (one pass over the pixels)."""
    A = np.zeros((n, 6, 6))
    b = np.zeros((n, 6))
    J = np.empty(6)
    for i in range(lab.size):
        k = lab[i]
        for c in range(r.shape[1]):
            J[0] = gx[i, c]
            J[1] = gx[i, c] * x[i]
            J[2] = gx[i, c] * y[i]
            J[3] = gy[i, c]
            J[4] = gy[i, c] * x[i]
            J[5] = gy[i, c] * y[i]
            for a in range(6):
                b[k, a] += J[a] * r[i, c]
                for e in range(a, 6):
                    A[k, a, e] += J[a] * J[e]
    for k in range(n):
        for a in range(6):
            for e in range(a):
                A[k, a, e] = A[k, e, a]
    return A, b


def _region_median(values, regions, valid, n):
    """Per region the median of ``values`` over its valid pixels (0 if none)."""
    lab = regions[valid]
    val = values[valid]
    order = np.lexsort((val, lab))
    lab, val = lab[order], val[order]
    cnt = np.bincount(lab, minlength=n)
    start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
    out = np.zeros(n)
    has = cnt > 0
    out[has] = val[start[has] + (cnt[has] - 1) // 2]
    return out


def _gauss_newton(frame1, frame2, theta, regions, xc, yc, valid, gx1, gy1, sigma, nil_cost,
                  iterations, damping, translation_only):
    """``iterations`` damped Gauss-Newton steps on the capped data term from
    the affine parameters ``theta`` (n, 6); returns the affine flow."""
    n = theta.shape[0]
    for it in range(iterations):
        cur = _affine(theta, regions, xc, yc)
        # Graduated: the first iterations admit residuals up to GNC[it]
        # times larger as inliers (a step edge half a pixel off is far out
        # at the true sigma, yet it is what fixes a uniform region's motion).
        scale = GNC[it] if it < len(GNC) else 1.0
        _, r, _, ok = _pixel_cost(frame1, frame2, cur, valid, sigma * scale, nil_cost)
        gx = warp_frame1(gx1, cur)[ok]
        gy = warp_frame1(gy1, cur)[ok]
        # Residual r(θ + dθ) ≈ r + (gx δu + gy δv): Jacobian columns per pixel.
        A, b = _gn_normal_equations(np.ascontiguousarray(gx, np.float64), np.ascontiguousarray(gy, np.float64),
                                    np.ascontiguousarray(xc[ok]), np.ascontiguousarray(yc[ok]),
                                    np.ascontiguousarray(r[ok], np.float64), regions[ok], n)
        # r = I2 − I1(p − f): d r / d f = +∇I1, so the step solving
        # A dθ = −Jᵀ r lowers Σ r².
        theta = theta - _solve(A, b, damping, translation_only)
    return _affine(theta, regions, xc, yc)


def _pick(frame1, frame2, cand, regions, valid, sigma, nil_cost, beta, details=False):
    """Per region the candidate flow of least energy (capped data term plus
    β × Markov term; eq. 75's pull α‖f_p − c_o‖² to one velocity per object
    is left out: on real scenes, whose objects slant and turn, it would
    prefer a translation with a far worse data term). A pixel whose
    source falls outside frame 1 is compared with frame 1's nearest border
    pixel, like any other at a cost of at most ``nil_cost``: it is not left
    out (a candidate would win by pushing pixels out of the frame) nor
    charged in full (the true flow at the frame's edge may point out).
    With ``details``: also each pixel's candidate and the (K, H, W) capped
    data costs of the candidates at every pixel."""
    n = int(regions.max()) + 1
    costs = np.stack([_pixel_cost(frame1, frame2, f, valid, sigma, nil_cost)[0] for f in cand])
    energy = np.stack([np.bincount(regions[valid], e[valid], minlength=n) + beta * _pair_cost(f, regions, valid, n)
                       for e, f in zip(costs, cand)])
    pick = energy.argmin(axis=0)[regions]
    out = np.take_along_axis(np.stack(cand), pick[None, ..., None], axis=0)[0]
    return (out, pick, costs) if details else out


def _fill_nearest(flow, valid):
    """``flow`` with every invalid pixel given its nearest valid pixel's value."""
    if valid.all() or not valid.any():
        return flow
    from scipy import ndimage as ndi

    idx = ndi.distance_transform_edt(~valid, return_distances=False, return_indices=True)
    return flow[idx[0], idx[1]]


def _source_outside(flow):
    """The pixels x whose source x − flow(x) lies outside the frame."""
    h, w = flow.shape[:2]
    sx = np.arange(w)[None, :] - flow[..., 0]
    sy = np.arange(h)[:, None] - flow[..., 1]
    return (sx < 0) | (sx > w - 1) | (sy < 0) | (sy > h - 1)


def _grey8(frame):
    return np.clip(np.rint(frame.mean(axis=2)), 0, 255).astype(np.uint8)


def _variational(frame1, frame2, flow):
    """OpenCV's variational refinement of ``flow`` (defined everywhere, nil
    pixels filled), in swcuts' convention: OpenCV's
    ``calc(I0, I1, F)`` has I0(x) = I1(x + F(x)), so I0 = frame 2,
    I1 = frame 1 and F = −flow."""
    import cv2

    vr = cv2.VariationalRefinement_create()
    vr.setFixedPointIterations(VARIATIONAL_ITERATIONS[0])
    vr.setSorIterations(VARIATIONAL_ITERATIONS[1])
    F = vr.calc(_grey8(frame2), _grey8(frame1), np.ascontiguousarray(-np.asarray(flow, np.float32)))
    return -np.asarray(F, np.float32)


def _variational_pyramid(frame1, frame2, flow, scales, vertical=True):
    """:func:`_variational` coarse to fine: at each downsampling factor of
    ``scales`` (coarsest first; () = full size only) the flow is refined on
    the frames shrunk by that factor (OpenCV ``INTER_AREA``), started from
    the flow so far (shrunk, and its vectors divided by the factor), then
    brought back to full size; last at full size. As DIS runs its
    variational step at every level of its pyramid: from a start far from
    the truth, the coarse levels take the large steps that the full-size
    fixed-point iterations do not. ``vertical`` False keeps v at 0."""
    import cv2

    h, w = frame1.shape[:2]
    f = np.ascontiguousarray(np.asarray(flow, np.float32))
    for s in scales:
        hs, ws = max(h // s, 8), max(w // s, 8)
        small = [cv2.resize(a, (ws, hs), interpolation=cv2.INTER_AREA) for a in (frame1, frame2)]
        small = [a[..., None] if a.ndim == 2 else a for a in small]
        fs = cv2.resize(f, (ws, hs), interpolation=cv2.INTER_AREA) * np.float32([ws / w, hs / h])
        fs = _variational(small[0], small[1], fs)
        f = cv2.resize(fs, (w, h), interpolation=cv2.INTER_LINEAR) * np.float32([w / ws, h / hs])
        if not vertical:
            f[..., 1] = 0.0
    f = _variational(frame1, frame2, f)
    if not vertical:
        f[..., 1] = 0.0
    return f


def _dis(frame1, frame2):
    """OpenCV's DIS flow (medium preset) in swcuts' convention (see
    :func:`_variational` for OpenCV's)."""
    import cv2

    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    return -np.asarray(dis.calc(_grey8(frame2), _grey8(frame1), None), np.float32)


def occlusion_check(frame1, frame2, flow, backward=None):
    """The pixels of frame 2 whose flow fails the forward-backward check.

    ``backward`` (default: DIS from frame 1 to frame 2, :func:`_dis`) maps
    frame 1 onto frame 2 (frame1(y) = frame2(y − b(y))); a pixel x with flow
    f is consistent when f(x) + b(x − f(x)) ≈ 0, i.e. (Sundaram et al. 2010)
    ‖f + b'‖² ≤ 0.01 (‖f‖² + ‖b'‖²) + 0.5 with b' = b(x − f(x)); pixels
    uncovered by the motion (not seen in frame 1) fail it, and so do those
    whose source lies outside frame 1.

    Examples
    --------
    >>> f = np.zeros((8, 8, 2), np.float32)
    >>> bool(occlusion_check(None, None, f, backward=np.zeros((8, 8, 2), np.float32)).any())
    False
    >>> bool(occlusion_check(None, None, f, backward=np.full((8, 8, 2), 3, np.float32)).all())
    True
    """
    flow = np.asarray(flow, np.float32)
    if backward is None:
        backward = _dis(frame2, frame1)
    bw, inside = warp_frame1(np.asarray(backward, np.float32), flow, with_inside=True)
    s = flow + bw
    bad = (s * s).sum(axis=2) > 0.01 * ((flow * flow).sum(axis=2) + (bw * bw).sum(axis=2)) + 0.5
    return bad | ~inside


def refine_flow(frame1, frame2, flow, regions, *, sigma=2.0, nil_cost=6.0, beta=4.0, dense=True,
                iterations=6, damping=1e-3, return_filled=False, vertical=True):
    """Refine ``flow`` to an affine flow per region where that lowers the
    region's energy.

    Three candidates per region are fitted by damped Gauss-Newton: an
    affine flow from the least-squares affine fit of the discrete flow, an
    affine flow and a translation from its median; with :data:`BOTTOM_UP`,
    OpenCV's DIS flow is a fourth; the region keeps the candidate of least
    energy, or its discrete flow if that is lower; with :data:`FUSION`,
    a pixel may take another of these candidates where the data cost over a
    window inside its region says so (:mod:`swcuts.motion.fusion`).

    The cost of a pixel is that of eq. 74 capped at ``nil_cost`` (a pixel
    that fits worse would be labelled nil), so occluded pixels neither pull
    the fit (they get weight 0) nor decide whether it is kept; with
    :data:`OCCLUSION_CHECK`, neither do the pixels whose discrete flow fails
    the forward-backward check (:func:`occlusion_check`); the Markov
    term β Σ ‖f_p − f_q‖ over the region's neighbour pairs is added, so
    label noise that fits the noise of the frames is not kept for that.

    Parameters
    ----------
    frame1, frame2 : (H, W, C) float32 arrays (frame 2 the reference)
    flow : (H, W, 2) float array, NaN where nil (kept NaN)
    regions : (H, W) int array, labels 0..R-1
    sigma, nil_cost, beta : float
        The noise deviation, nil cost and Markov weight of the motion posterior.
    dense : bool
        Also try OpenCV's variational refinement (per pixel) from the
        chosen flow, kept per region where it lowers the energy (Markov
        term × :data:`VARIATIONAL_BETA`).
    iterations : int
        Gauss-Newton iterations.
    damping : float
        Ridge added to the normal equations, relative to each diagonal
        entry (Levenberg-Marquardt).
    vertical : bool
        False: horizontal flow only (stereo; ``flow``'s v must be 0): the
        fits and the variational step leave v at 0.

    Returns
    -------
    flow : (H, W, 2) float array
        NaN where ``flow`` is NaN.
    filled : (H, W, 2) float array
        With ``return_filled``: the same flow with a value at the nil
        pixels too, that of their region's chosen candidate (an affine
        flow extends over its whole region; the discrete flow and the
        variational refinement's start take their nearest non-nil pixel's).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> import scipy.ndimage as ndi
    >>> f1 = ndi.gaussian_filter(rng.random((40, 40)), 2).astype(np.float32)[..., None] * 255
    >>> f2 = ndi.shift(f1[..., 0], (0.0, 0.3), order=3, mode="nearest")[..., None]
    >>> flow = np.zeros((40, 40, 2))
    >>> out = refine_flow(f1, f2, flow, np.zeros((40, 40), int))
    >>> bool(abs(np.median(out[5:-5, 5:-5, 0]) - 0.3) < 0.05)
    True
    """
    frame1 = np.asarray(frame1, np.float32)
    frame2 = np.asarray(frame2, np.float32)
    if frame1.ndim == 2:
        frame1, frame2 = frame1[..., None], frame2[..., None]
    h, w = regions.shape
    regions = np.asarray(regions, np.int64)
    n = int(regions.max()) + 1
    nil = np.isnan(flow[..., 0])
    valid = ~nil
    base = _fill_nearest(np.where(valid[..., None], flow, 0.0).astype(np.float32), valid)
    if OCCLUSION_CHECK:  # the fits and the choice see only the pixels seen in both frames
        # ... among those that the discrete flow does not fit: in uniform
        # areas the backward flow is unreliable (the aperture problem) and
        # the check fails where the flow is right.
        e_base, _, _, _ = _pixel_cost(frame1, frame2, base, valid, sigma, nil_cost)
        backward = _dis(frame2, frame1)
        failed = occlusion_check(frame1, frame2, base, backward)
        if OUT_OF_VIEW:
            # Not seen in frame 1: their own match is ignored (they neither
            # pull a fit nor count in an energy) and they take their
            # region's chosen flow, as nil pixels do; a region with no pixel
            # left takes its nearest seen pixels' flow (the first candidate,
            # ``base``, wins the tie of empty energies).
            unseen = valid & failed & _source_outside(_fill_nearest(base, valid & ~failed))
            valid = valid & ~unseen
            base = _fill_nearest(base, valid)
        seen = valid  # the fusion judges every pixel seen in frame 1
        if FUSION_NIL:
            seen = valid | (nil & ~_source_outside(_fill_nearest(base, valid)))
        valid = valid & ~(failed & (e_base > OCCLUSION_MIN_COST))
    gx1, gy1 = frame_gradient(frame1)
    if not vertical:  # no v column in the Gauss-Newton steps: v stays 0
        gy1 = np.zeros_like(gy1)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    flat = regions.ravel()
    # Coordinates centred per region keep the normal equations well scaled.
    cnt = np.maximum(np.bincount(flat, minlength=n), 1)
    xc = xs - (np.bincount(flat, xs.ravel(), minlength=n) / cnt)[regions]
    yc = ys - (np.bincount(flat, ys.ravel(), minlength=n) / cnt)[regions]
    small = np.bincount(regions[valid], minlength=n) < MIN_AFFINE_PIXELS
    # Starts: the least-squares affine fit of the discrete flow per region,
    # and its per-region median as a translation (robust to stray labels);
    # the latter is fitted once as an affine flow and once as a translation
    # (uniform regions, where the data cannot fix an affine flow).
    ones = np.ones_like(xc)
    cols = [c[valid][:, None] for c in (ones, xc, yc)]
    zero = [np.zeros_like(cols[0])] * 3
    A3, bu = _normal_equations(cols + zero, base[valid][:, :1], regions[valid], n)
    _, bv = _normal_equations(cols + zero, base[valid][:, 1:], regions[valid], n)
    A = np.zeros((n, 6, 6))
    A[:, :3, :3] = A[:, 3:, 3:] = A3[:, :3, :3]
    ls = _solve(A, np.concatenate([bu[:, :3], bv[:, :3]], axis=1), 1e-6, small)
    med = np.zeros((n, 6))
    med[:, 0] = _region_median(base[..., 0], regions, valid, n)
    med[:, 3] = _region_median(base[..., 1], regions, valid, n)
    cand = [base]
    for theta, trans in ((ls, small), (med, small), (med, np.ones(n, bool))):
        cand.append(_gauss_newton(frame1, frame2, theta, regions, xc, yc, valid, gx1, gy1, sigma,
                                  nil_cost, iterations, damping, trans))
    if BOTTOM_UP:
        bottom_up = _dis(frame1, frame2)
        if not vertical:
            bottom_up[..., 1] = 0.0
        cand.append(bottom_up)
        if BOTTOM_UP_VARIATIONAL:
            cand.append(_variational_pyramid(frame1, frame2, bottom_up, (), vertical))
    out, pick, costs = _pick(frame1, frame2, cand, regions, valid, sigma, nil_cost, beta, details=True)
    if FUSION and OCCLUSION_CHECK:
        # Per pixel, another of the region's candidates where a window
        # inside the region says so; each candidate pays its capped cost on
        # every seen pixel, raised where it fails the forward-backward check.
        failed_k = np.stack([occlusion_check(frame1, frame2, f, backward) for f in cand])
        out, _ = fuse_flows(occlusion_costs(costs, failed_k, nil_cost), cand, regions, seen, pick, beta=beta)
        out = out.astype(np.float32)
    if dense:
        # A dense variational refinement (OpenCV's, as inside DIS) started
        # from that flow, kept per region where it lowers the energy too.
        cands = [out]
        for scales in VARIATIONAL_STARTS:
            cands.append(_variational_pyramid(frame1, frame2, out, scales, vertical))
        out = _pick(frame1, frame2, cands, regions, valid, sigma, nil_cost, beta * VARIATIONAL_BETA)
    filled = out.astype(np.float64)
    out = filled.copy()
    out[nil] = np.nan
    return (out, filled) if return_filled else out
