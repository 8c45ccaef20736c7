"""Per-pixel flow spread of segment_motion(posterior_samples=N) (issue 18,
item 3, motion): the level-0 samples at T = 1 against exact enumeration
(with a negative control), textureless against textured pixels, the API
without samples and the CLI files."""

from __future__ import annotations

import functools
import itertools
import json

import numpy as np
import pytest
from scipy import ndimage as ndi

import swcuts
from swcuts.motion import segment as motion
from swcuts.samplers.velocity import VelocityGibbs
from test_motion import tiny_posterior


def exact_moments():
    """Exact per-pixel nil probability, spread sqrt(var u + var v) given
    not nil, and the 4th central moment of the end-point deviation, of the
    2x2 level-0 conditional of test_motion."""
    post = tiny_posterior()
    obj = np.array([0, 0, 1, 1])
    states = np.array(list(itertools.product(range(post.n_labels), repeat=post.n_pixels)))
    logp = np.array([post.log_target(s, obj) for s in states])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    nil = states == post.nil
    k = np.where(nil, 0, states)
    du, dv = post.du[k], post.dv[k]
    w = p[:, None] * ~nil
    mass = w.sum(axis=0)
    mu, mv = (w * du).sum(axis=0) / mass, (w * dv).sum(axis=0) / mass
    dev2 = (du - mu) ** 2 + (dv - mv) ** 2
    var = (w * dev2).sum(axis=0) / mass
    m4 = (w * dev2 ** 2).sum(axis=0) / mass
    return post, obj, 1.0 - mass, np.sqrt(var), m4


@pytest.mark.parametrize("omit_cut", [False, True])
def test_flow_posterior_matches_exact_marginals(monkeypatch, omit_cut):
    """Spread and nil probability of the chain at T = 1 within 4.5 standard
    errors of the exact ones (samples 200 kernel steps apart on 4 pixels:
    independent); the kernel without its cut factor (negative control)
    misses the nil probabilities."""
    post, obj, nil_p, spread, m4 = exact_moments()
    monkeypatch.setattr(motion, "VelocityGibbs", functools.partial(VelocityGibbs, _omit_cut=omit_cut))
    n = 2000
    got, std, got_nil = motion._flow_posterior(post, np.zeros(4, np.int64), obj, 2,
                                               np.random.default_rng(1), n)
    got, got_nil = got.ravel(), got_nil.ravel()
    assert np.allclose(got ** 2, (std ** 2).sum(axis=2).ravel())
    se_nil = np.sqrt(nil_p * (1 - nil_p) / n)
    n_ok = n * (1 - nil_p)
    se_spread = np.sqrt((m4 - spread ** 4) / n_ok) / (2 * spread)  # delta method on the variance
    nil_ok = np.abs(got_nil - nil_p) < 4.5 * se_nil
    spread_ok = np.abs(got - spread) < 4.5 * se_spread
    if omit_cut:
        assert not nil_ok.all()
    else:
        assert nil_ok.all() and spread_ok.all(), (got_nil, nil_p, got, spread)


def half_textured_pair(seed, h=24, w=32):
    """Left half smooth random texture, right half one grey level; the
    whole frame moves by (1, 0)."""
    rng = np.random.default_rng(seed)
    t = ndi.gaussian_filter(rng.random((h, w + 4)), 1.5)
    t = (t - t.min()) / (t.max() - t.min())
    big = np.where(np.arange(w + 4)[None, :] < (w + 4) // 2, 40 + 170 * t, 120.0)
    return big[:, 2:w + 2].astype(np.uint8), big[:, 1:w + 1].astype(np.uint8)


@pytest.mark.parametrize("seed", [0, 1])
def test_flow_spread_is_larger_where_the_frame_is_textureless(seed):
    """Where the data term is flat only the prior constrains the velocity:
    its posterior spread exceeds that on the textured half (weak
    smoothness, so that the posterior at T = 1 is not frozen)."""
    f1, f2 = half_textured_pair(seed)
    h, w = f1.shape
    res = swcuts.segment_motion(f1, f2, seed=seed, rounds=3, posterior_samples=20, beta=0.25, delta=0.1)
    assert res.flow_spread.shape == (h, w) and res.nil_probability.shape == (h, w)
    assert np.isfinite(res.flow_spread).all() and (res.flow_spread >= 0).all()
    assert ((res.nil_probability >= 0) & (res.nil_probability <= 1)).all()
    textured = np.zeros((h, w), bool)
    textured[2:-2, 3:w // 2 - 3] = True
    flat = np.zeros((h, w), bool)
    flat[2:-2, w // 2 + 3:-3] = True
    assert res.flow_spread[flat].mean() > 1.25 * res.flow_spread[textured].mean()
    assert res.posterior_samples == 20


def test_no_posterior_samples_gives_no_spread():
    f1, f2 = half_textured_pair(0)
    res = swcuts.segment_motion(f1, f2, seed=0, rounds=1, refine=False)
    assert res.flow_spread is None and res.nil_probability is None and res.flow_std is None
    assert res.label_spread is None
    assert res.posterior_samples == 0


@pytest.mark.parametrize("n", [-1, 1.5, True, 10_001])
def test_bad_posterior_samples_is_rejected(n):
    f1, f2 = half_textured_pair(0)
    with pytest.raises(ValueError, match="posterior_samples"):
        swcuts.segment_motion(f1, f2, posterior_samples=n)


def test_cli_motion_posterior_samples_writes_spread_files(tmp_path, capsys):
    import skimage.io

    from swcuts.cli.app import main
    from swcuts.cli.motion import MOTION_OUTPUTS, SPREAD_OUTPUTS

    f1, f2 = half_textured_pair(0)
    for name, frame in (("a.png", f1), ("b.png", f2)):
        skimage.io.imsave(tmp_path / name, frame, check_contrast=False)
    args = ["motion", str(tmp_path / "a.png"), str(tmp_path / "b.png")]
    bad = tmp_path / "bad"
    assert main(args + ["-o", str(bad), "--posterior-samples", "-3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--posterior-samples" in err and len(err.splitlines()) == 1 and not bad.exists()
    out = tmp_path / "out"
    assert main(args + ["-o", str(out), "--seed", "0", "--rounds", "2", "--posterior-samples", "4"]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(MOTION_OUTPUTS + SPREAD_OUTPUTS)
    spread = np.load(out / "flow_spread.npy")
    assert spread.shape == f1.shape and np.isfinite(spread).all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["posterior"]["samples"] == 4
    assert sorted(summary["posterior"]["files"]) == sorted(SPREAD_OUTPUTS)
    assert skimage.io.imread(out / "flow_spread.png").ndim == 3
