"""The expected end-point error of a returned flow (swcuts.motion.uncertainty,
issue 35's motion item): the region window and the local posterior against
brute-force enumeration (with negative controls), the data cost against a
direct computation, and the spread against known errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from swcuts.motion import uncertainty as unc


def _regions(seed, h=7, w=9):
    """A small label map with non-convex regions."""
    rng = np.random.default_rng(seed)
    lab = (ndi.gaussian_filter(rng.random((h, w)), 1.0) > 0.5).astype(np.int64)
    lab[h // 2, :] = 2  # a bar through both
    return lab


def brute_window(a, regions, decay, respect_regions=True):
    """Σ_q decay^(|Δy|+|Δx|) a_q over the q whose path (down q's column to
    p's row, then along that row to p) stays in p's region, by enumeration."""
    _, h, w = a.shape
    out = np.zeros_like(a, dtype=np.float64)
    for i in range(h):
        for j in range(w):
            r = regions[i, j]
            for i2 in range(h):
                for j2 in range(w):
                    if respect_regions:
                        col = regions[min(i, i2):max(i, i2) + 1, j2]
                        row = regions[i, min(j, j2):max(j, j2) + 1]
                        # the whole path in one region, and that region is p's
                        if not ((col == r).all() and (row == r).all()):
                            continue
                    out[:, i, j] += decay ** (abs(i - i2) + abs(j - j2)) * a[:, i2, j2]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_region_window_matches_enumeration(seed):
    """The compiled recursive passes equal the enumerated weighted sums; a
    window that ignores the regions (negative control) does not."""
    regions = _regions(seed)
    a = np.random.default_rng(seed).random((3,) + regions.shape)
    got = unc.region_window(a, regions, 0.7)
    assert np.allclose(got, brute_window(a, regions, 0.7))
    assert not np.allclose(got, brute_window(a, regions, 0.7, respect_regions=False))


@pytest.mark.parametrize("zeta", [0.3, 1.0])
def test_local_posterior_matches_enumeration(zeta):
    """E d_u², E d_v² equal the moments of π_p(d_k) ∝ exp(−n_eff Σ w c / Σ w)
    summed over the offsets by hand; the posterior with every pixel on its
    own (negative control) differs."""
    rng = np.random.default_rng(3)
    regions = _regions(3)
    du = np.array([-1.0, 0.0, 1.0, 0.0, 0.5])
    dv = np.array([0.0, 0.0, 0.0, 1.0, -0.5])
    costs = rng.random((du.size,) + regions.shape) * 0.2
    costs[4, :3] += 3.0  # the running minimum changes between chunks
    decay = 0.6
    got = unc.local_posterior(costs, du, dv, regions, decay, zeta, chunk=2)  # across chunks
    n_eff = zeta * ((1 + decay) / (1 - decay)) ** 2
    s = brute_window(costs, regions, decay)
    wsum = brute_window(np.ones((1,) + regions.shape), regions, decay)[0]
    logp = -n_eff * s / wsum
    p = np.exp(logp - logp.max(axis=0))
    p /= p.sum(axis=0)
    want = np.stack([(p * (du ** 2)[:, None, None]).sum(0), (p * (dv ** 2)[:, None, None]).sum(0)], axis=2)
    assert np.allclose(got, want)
    own = np.exp(-n_eff * costs)
    own /= own.sum(axis=0)
    alone = np.stack([(own * (du ** 2)[:, None, None]).sum(0), (own * (dv ** 2)[:, None, None]).sum(0)], axis=2)
    assert not np.allclose(got, alone, atol=1e-3)


def test_offset_costs_match_the_model_data_term():
    """At integer offsets (exact shifts) the cost equals min(Σ r²/(2σ_p²),
    nil_cost) with the model's rounding variance, computed directly."""
    rng = np.random.default_rng(0)
    h, w = 12, 14
    f1 = (rng.random((h, w, 2)) * 60).astype(np.float32)
    f2 = (rng.random((h, w, 2)) * 60).astype(np.float32)
    flow = np.zeros((h, w, 2), np.float32)
    flow[..., 0] = 1.0
    costs, du, dv = unc.offset_costs(f1, f2, flow, sigma=3.0, nil_cost=6.0, rounding=1.0)
    from swcuts.image.warp import frame_gradient

    gx, gy = frame_gradient(f2)
    scale = 0.5 / (9.0 + 0.25 / 12.0 * (gx * gx + gy * gy))
    for k in np.flatnonzero((du % 1 == 0) & (dv % 1 == 0)):
        u, v = 1 + int(du[k]), int(dv[k])
        for y, x in ((5, 6), (6, 8), (4, 5)):
            r = f2[y, x] - f1[y - v, x - u]
            want = min(float((r * r * scale[y, x]).sum()), 6.0)
            assert costs[k, y, x] == pytest.approx(want, rel=1e-4, abs=1e-5)
    # Stereo: offsets in u only.
    c2, _, dv2 = unc.offset_costs(f1, f2, flow, sigma=3.0, nil_cost=6.0, vertical=False)
    assert c2.shape[0] == 9 and not dv2.any()


def _textured(seed, h=40, w=48, shift=1.0):
    rng = np.random.default_rng(seed)
    t = ndi.gaussian_filter(rng.random((h, w + 8)), 1.5)
    t = (t - t.min()) / (t.max() - t.min()) * 200 + 20
    f2 = t[:, 4:w + 4]
    f1 = ndi.shift(t, (0, -shift), order=3, mode="nearest")[:, 4:w + 4]  # f2(x) = f1(x - shift)
    return f1[..., None].astype(np.float32), f2[..., None].astype(np.float32)


@pytest.mark.parametrize("seed", [0, 1])
def test_spread_is_larger_where_the_flow_is_wrong_or_the_frame_flat(seed):
    """On a textured pair moving by (1, 0): the right flow has a small
    expected error, a flow 1.5 px off a larger one; a texture-less half a
    larger one too; the backward flow's disagreement adds in quadrature."""
    f1, f2 = _textured(seed)
    h, w = f2.shape[:2]
    regions = np.zeros((h, w), np.int64)
    regions[:, w // 2:] = 1
    back = np.zeros((h, w, 2))
    back[..., 0] = -1.0
    flow = np.zeros((h, w, 2))
    flow[..., 0] = 1.0
    wrong = flow.copy()
    wrong[:, w // 2:, 0] += 1.5
    inner = (slice(4, -4), slice(4, w // 2 - 4)), (slice(4, -4), slice(w // 2 + 4, -4))
    s_ok, _ = unc.flow_error(f1, f2, flow, regions, sigma=2.0, nil_cost=6.0, backward=back)
    s_bad, _ = unc.flow_error(f1, f2, wrong, regions, sigma=2.0, nil_cost=6.0, backward=back)
    assert np.median(s_ok[inner[1]]) < 0.3
    assert np.median(s_bad[inner[1]]) > 3 * np.median(s_ok[inner[1]])
    assert np.allclose(s_ok[inner[0]], s_bad[inner[0]], atol=0.05)
    flat2 = f2.copy()
    flat2[:, w // 2:] = 120.0
    flat1 = f1.copy()
    flat1[:, w // 2 - 2:] = 120.0
    s_flat, _ = unc.flow_error(flat1, flat2, flow, regions, sigma=2.0, nil_cost=6.0, backward=back)
    assert np.median(s_flat[inner[1]]) > 3 * np.median(s_flat[inner[0]])
    off = back.copy()
    off[..., 1] = 2.0
    s_off, per_axis = unc.flow_error(f1, f2, flow, regions, sigma=2.0, nil_cost=6.0, backward=off)
    assert np.allclose(s_off ** 2, s_ok ** 2 + 4.0, atol=1e-3)
    assert np.allclose((per_axis ** 2).sum(axis=2), s_off ** 2, atol=1e-4)


def test_segment_motion_spread_predicts_the_error_on_a_layered_pair():
    """segment_motion(posterior_samples=N): the expected error ranks the
    true error of the returned flow (Spearman > 0.2) on a layered pair."""
    import swcuts
    from swcuts.evaluation.calibration import spread_error_correlation
    from swcuts.evaluation.synthetic.motion import layered_pair

    pair = layered_pair(shape=(60, 80), n_objects=2, max_speed=3.0, seed=1)
    res = swcuts.segment_motion(pair.frame1, pair.frame2, seed=0, rounds=4, posterior_samples=3)
    c = spread_error_correlation(res.flow_spread, res.flow, pair.flow, pair.occluded)
    assert c["spearman"] > 0.2, c
    assert res.label_spread.shape == res.flow_spread.shape == pair.flow.shape[:2]
    assert res.flow_std.shape == pair.flow.shape
