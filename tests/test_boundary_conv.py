"""Tests of swcuts.image.boundary_conv: the detector's convolutional stage (numpy inference)."""

import numpy as np
import pytest

from swcuts.image import boundary_conv as bconv
from swcuts.image import boundary_detector as bd
from swcuts.io.errors import InputError


def _mirror(i, n):
    """numpy's "reflect" index (the border pixel not repeated)."""
    while i < 0 or i >= n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def _direct_conv3x3(h, w, b, d):
    hh, ww, _ = h.shape
    out = np.zeros((hh, ww, w.shape[3]))
    for y in range(hh):
        for x in range(ww):
            acc = np.array(b, dtype=np.float64)
            for r in range(3):
                for c in range(3):
                    acc = acc + h[_mirror(y + (r - 1) * d, hh), _mirror(x + (c - 1) * d, ww)] @ w[r, c]
            out[y, x] = acc
    return out


def _direct_stage(x, a):
    """The stage written out pixel by pixel (float64)."""
    hh, ww, c = x.shape
    z = (x - a["c_mean"]) / a["c_std"]
    h = np.maximum(z.reshape(-1, c) @ a["c_w0"] + a["c_b0"], 0).reshape(hh, ww, -1)
    for layer in range(a["c_w"].shape[0]):
        h = h + np.maximum(_direct_conv3x3(h, a["c_w"][layer], a["c_b"][layer], 2 ** layer), 0)
    return a["c_wg"] * x[..., -1] + h @ a["c_wo"] + a["c_bo"]


def _random_stage(c, k, layers, seed):
    rng = np.random.default_rng(seed)
    a = {n: rng.normal(0, 0.4, v.shape) for n, v in bconv.identity_stage(c, k, layers).items()}
    a["c_std"] = rng.uniform(0.5, 2.0, c)
    return a


@pytest.mark.parametrize("d", [1, 2, 4])
def test_conv3x3_matches_a_direct_loop(d):
    rng = np.random.default_rng(d)
    h = rng.normal(size=(9, 7, 3)).astype(np.float32)          # 7 columns: dilation 4 mirrors twice over
    w = rng.normal(size=(3, 3, 3, 2)).astype(np.float32)
    b = rng.normal(size=2)
    np.testing.assert_allclose(bconv.conv3x3(h, w, b, d), _direct_conv3x3(h, w, b, d), rtol=1e-5, atol=1e-5)
    # negative control: the kernel flipped (a convolution, not PyTorch's cross-correlation) differs
    flipped = _direct_conv3x3(h, w[::-1, ::-1], b, d)
    assert np.abs(bconv.conv3x3(h, w, b, d) - flipped).max() > 0.1


def test_conv_stage_matches_a_direct_computation():
    x = np.random.default_rng(5).normal(size=(11, 13, 4)).astype(np.float32)
    a = _random_stage(4, 3, 3, seed=6)
    got = bconv.conv_stage(x, a)
    assert got.shape == (11, 13) and got.dtype == np.float32
    np.testing.assert_allclose(got, _direct_stage(x.astype(np.float64), a), rtol=1e-4, atol=1e-4)
    # negative control: the dilations matter (all 1 gives another answer)
    b = dict(a, c_w=a["c_w"][:1])
    assert np.abs(bconv.conv_stage(x, b) - got).max() > 0.1


def test_identity_stage_and_tiny_maps():
    x = np.random.default_rng(2).normal(size=(2, 3, 5)).astype(np.float32)
    np.testing.assert_array_equal(bconv.conv_stage(x, bconv.identity_stage(5, 4, 4)), x[..., -1])
    assert np.isfinite(bconv.conv_stage(x, _random_stage(5, 4, 4, seed=1))).all()


def test_the_shipped_file_and_its_conv_arrays():
    det = bd.load_detector()
    assert det["version"] == bd.FORMAT_VERSION == 4
    layers = int(det["settings"]["conv"])
    for mode in ("colour", "grey"):
        if layers:
            assert det[mode]["c_w"].shape[0] == layers
            assert det[mode]["c_mean"].shape == (det[mode]["g_mean"].shape[0] + 1,)


def _arrays(det):
    out = {"format_version": np.int64(bd.FORMAT_VERSION), "training": np.str_("test")}
    out.update({k: np.float64(v) for k, v in det["settings"].items()})
    for mode in ("colour", "grey"):
        out.update({f"{mode}_{k}": v for k, v in det[mode].items()})
    return out


def test_misfit_conv_arrays_are_refused(tmp_path):
    """(A version-3 file, rounds 7-9, is refused in tests/test_boundary_context.py.)"""
    det = bd.load_detector()
    bad = _arrays(det)
    bad["conv"] = np.float64(2)
    for mode in ("colour", "grey"):
        bad.update({f"{mode}_{k}": v for k, v in bconv.identity_stage(5, 4, 2).items()})   # 5: not the inputs' width
    path = tmp_path / "misfit.npz"
    np.savez(path, **bad)
    with pytest.raises(InputError, match="misfit.npz.*do not fit"):
        bd.load_detector(path)


def test_an_identity_stage_leaves_the_map(tmp_path):
    """A file whose stage is the identity (zero head) gives the map of the per-pixel networks."""
    det = bd.load_detector()
    modes = {}
    for mode in ("colour", "grey"):
        arrays = {k: v for k, v in det[mode].items() if not k.startswith("c_")}
        arrays.update(bconv.identity_stage(det[mode]["g_mean"].shape[0] + 1, 4, 2))
        modes[mode] = arrays
    plain = tmp_path / "plain.npz"
    bd.save_detector(plain, {m: {k: v for k, v in modes[m].items() if not k.startswith("c_")} for m in modes},
                     {**det["settings"], "conv": 0}, "no stage")
    ident = tmp_path / "identity.npz"
    bd.save_detector(ident, modes, {**det["settings"], "conv": 2}, "identity stage")
    img = np.clip(np.random.default_rng(3).random((30, 40, 3)), 0, 1)
    np.testing.assert_allclose(bd.boundary_probability(img, detector=ident),
                               bd.boundary_probability(img, detector=plain), rtol=1e-5, atol=1e-7)


def test_orientation_cues_point_across_the_edge():
    """The doubled-angle cue of a vertical step is (+, 0), of a horizontal one (−, 0); the features are
    the same with and without the cues."""
    img = np.full((48, 48, 3), 0.3)
    img[:, 24:, 0] = 0.75
    f, ori = bd.boundary_features(img, orientation=True)
    np.testing.assert_array_equal(f, bd.boundary_features(img))
    assert ori.shape[:2] == (48, 48) and ori.shape[2] % 2 == 0
    at = ori[10:-10, 23:25, 0::2].mean(), np.abs(ori[10:-10, 23:25, 1::2]).mean()
    flat = bd.boundary_features(np.transpose(img, (1, 0, 2)), orientation=True)[1]
    across = flat[23:25, 10:-10, 0::2].mean()
    assert at[0] > 0.05 and at[1] < 0.1 * at[0] and across < -0.05, (at, across)
