"""Tests of swcuts.image.boundary_context: the second stage's cues of the
learned boundary detector (auto-context; the spectral cue is tested in
tests/test_boundary_detector.py)."""

import numpy as np
import pytest

from swcuts.image import boundary_context as bc
from swcuts.image import boundary_detector as bd


def _direct(p, y, x, d, sigmas_ok=True, opposite=4):
    """The four cues of distance d at pixel (y, x), by a loop over the 8
    directions of the docstring (edge values outside the map)."""
    h, w = p.shape
    e = int(round(d / np.sqrt(2)))
    offs = [(0, d), (-e, e), (-d, 0), (-e, -e), (0, -d), (e, -e), (d, 0), (e, e)]
    s = [p[min(max(y + dy, 0), h - 1), min(max(x + dx, 0), w - 1)] for dy, dx in offs]
    lines = [min(s[k], s[(k + opposite) % 8]) for k in range(4)]
    k = int(np.argmax(lines))
    across = max(s[(k + 2) % 8], s[(k + 6) % 8])
    return [lines[k], across, float(np.mean(s)), max(s)]


def _logit(v):
    v = np.clip(np.asarray(v, dtype=np.float64), 1e-4, 1 - 1e-4)
    return np.log(v / (1 - v))


@pytest.mark.parametrize("seed", [0, 1])
def test_context_features_match_a_direct_computation(seed):
    rng = np.random.default_rng(seed)
    p = rng.random((23, 31)).astype(np.float32)
    dists = (2, 4, 8)
    c = bc.context_features(p, dists, sigmas=())
    assert c.shape == (23, 31, 12) and c.dtype == np.float32
    wrong = 0
    for y, x in [(0, 0), (5, 7), (11, 30), (22, 13), (12, 15), (3, 28)]:
        for j, d in enumerate(dists):
            np.testing.assert_allclose(c[y, x, 4 * j:4 * j + 4], _logit(_direct(p, y, x, d)), rtol=1e-5, atol=1e-4)
            # Negative control: pairing each direction with its neighbour instead of its opposite.
            wrong += not np.allclose(c[y, x, 4 * j], _logit(_direct(p, y, x, d, opposite=1)[0]), atol=1e-4)
    assert wrong > 3


def test_context_features_gaussian_means_and_the_contour_cues():
    p = np.full((40, 40), 0.01)
    p[:, 20] = 0.9                                              # a vertical contour
    c = bc.context_features(p, (2, 4), sigmas=(4.0,))
    assert c.shape == (40, 40, 9)
    on, off = c[20, 20], c[20, 8]
    assert on[0] > 2 and off[0] < -4                            # continuation along the contour
    assert on[1] < -4                                           # nothing across it
    assert c[20, 22, 3] > 2 and c[20, 22, 0] < -4               # beside it: seen, but not along a line
    mean = c[..., 8]
    assert mean[20, 20] > mean[20, 30] > mean[20, 38]           # the density falls off with the distance
    assert not bc.context_features(p, (), sigmas=()).size


def test_context_distances():
    assert bc.context_distances(8) == (2, 4, 8)
    assert bc.context_distances(16) == (2, 4, 8, 16)
    assert bc.context_distances(0) == () and bc.context_distances(1.5) == ()


def test_the_shipped_detector_reads_the_context():
    """The global network's inputs hold the auto-context cues of the local map, as the
    shipped weights' setting says, and its first layer is as wide as them."""
    det = bd.load_detector()
    st = det["settings"]
    assert st["context"] >= 2
    f = np.random.default_rng(0).random((20, 24, 5)).astype(np.float32)
    prob = np.random.default_rng(1).random(20 * 24)
    x = bd._global_inputs(f, prob, st)
    n_ctx = 4 * len(bc.context_distances(st["context"])) + len(bc.CONTEXT_SIGMAS)
    assert x.shape == (20, 24, 5 + 1 + 2 + n_ctx)
    pr = np.clip(prob.reshape(20, 24), 1e-6, 1 - 1e-6)
    np.testing.assert_array_equal(x[..., 8:], bc.context_features(pr, bc.context_distances(st["context"])))
    for mode in ("colour", "grey"):
        n_local = det[mode]["w1"].shape[0]
        assert det[mode]["g_w1"].shape[0] == n_local + 3 + n_ctx


@pytest.mark.parametrize("version, dropped", [(2, ("context", "conv", "conv_orientation")),
                                              (3, ("conv", "conv_orientation"))])
def test_an_older_weights_file_is_refused(tmp_path, version, dropped):
    """A file of an earlier layout (format version 2: no auto-context, round 6; 3: no convolutional
    stage, rounds 7-9) is refused in one line naming the file and the command that rebuilds it."""
    det = bd.load_detector()
    arrays = {"format_version": np.int64(version), "training": np.str_(f"version {version}")}
    for k, v in det["settings"].items():
        if k not in dropped:
            arrays[k] = np.float64(v)
    for mode in ("colour", "grey"):
        arrays.update({f"{mode}_{k}": v for k, v in det[mode].items() if not k.startswith("c_")})
    path = tmp_path / f"boundary_detector_v{version}.npz"
    np.savez(path, **arrays)
    from swcuts.io.errors import InputError

    with pytest.raises(InputError) as err:
        bd.load_detector(path)
    msg = str(err.value)
    assert ("\n" not in msg and f"boundary_detector_v{version}.npz" in msg and bd.REBUILD in msg
            and f"version {version}" in msg)
