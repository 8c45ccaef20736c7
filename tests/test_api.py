"""Tests of ``swcuts.segment`` and its option and input validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import swcuts
import swcuts.segmentation.segment
import swcuts.io.memory
from swcuts import SAMPLERS, Segmentation, segment
from swcuts.inference.anneal import Trace
from swcuts.image.atoms import ATOM_METHODS, DEFAULT_ATOMS
from swcuts.segmentation.options import HIERARCHICAL
from swcuts.graph.region_graph import RegionGraph
from swcuts.io.errors import InputError
from swcuts.models.image import ImageModel

FAST = dict(steps=300, n_atoms=40)


def grey_image(h=24, w=32, seed=0):
    """Two flat halves plus a square, with a little noise, in [0, 1]."""
    rng = np.random.default_rng(seed)
    img = np.full((h, w), 0.2)
    img[:, w // 2:] = 0.8
    img[h // 4: h // 2, w // 8: w // 3] = 0.5
    return np.clip(img + 0.03 * rng.standard_normal((h, w)), 0.0, 1.0)


def rgb_image(h=24, w=32):
    g = grey_image(h, w)
    return np.stack([g, 1.0 - g, 0.5 * g], axis=-1)


def check_segmentation(seg, shape):
    assert isinstance(seg, Segmentation)
    h, w = shape
    # labels: (H, W), 0..K-1 with every label used
    assert seg.labels.shape == (h, w)
    assert seg.labels.dtype.kind in "iu"
    k = seg.n_labels
    np.testing.assert_array_equal(np.unique(seg.labels), np.arange(k))
    # atoms and graph
    assert seg.atoms.shape == (h, w)
    assert isinstance(seg.graph, RegionGraph)
    n = seg.graph.n_vertices
    np.testing.assert_array_equal(np.unique(seg.atoms), np.arange(n))
    assert seg.vertex_labels.shape == (n,)
    np.testing.assert_array_equal(seg.labels, seg.vertex_labels[seg.atoms])
    # trace and energy
    assert isinstance(seg.trace, Trace)
    assert len(seg.trace) >= 2
    assert all(b > a for a, b in zip(seg.trace.step, seg.trace.step[1:]))
    assert isinstance(seg.model, ImageModel)
    assert math.isfinite(seg.energy)
    assert seg.energy == pytest.approx(-seg.model.log_target(seg.vertex_labels), rel=1e-9, abs=1e-6)
    assert seg.energy <= seg.trace.energy[0] + 1e-6
    assert seg.energy <= min(seg.trace.energy) + 1e-6
    assert seg.steps == seg.trace.step[-1]
    assert 0 <= seg.acceptance_rate <= 1
    summary = seg.summary()
    assert summary["labels"] == k
    assert summary["energy"] == seg.energy


def test_basic_grey():
    img = grey_image()
    seg = segment(img, seed=0, **FAST)
    check_segmentation(seg, img.shape)
    assert seg.steps == 300
    assert seg.sampler == "swc" and seg.atom_method == DEFAULT_ATOMS and seg.seed == 0
    assert seg.image.shape == img.shape
    assert seg.edge_probabilities.shape == (len(seg.graph.edges),)
    assert 1 <= seg.n_labels <= 10


def test_finds_the_two_halves():
    img = np.zeros((24, 32))
    img[:, 16:] = 1.0
    img += 0.02 * np.random.default_rng(1).standard_normal(img.shape)
    seg = segment(img, seed=0, steps=2000, n_atoms=40)
    left, right = seg.labels[:, :14], seg.labels[:, 18:]
    assert len(np.unique(left)) == 1 and len(np.unique(right)) == 1
    assert left[0, 0] != right[0, 0]


@pytest.mark.parametrize("shape", [(3, 3), (3, 7), (3, 7, 3), (4, 4)])
def test_tiny_images_get_what_they_show(shape):
    # Below MIN_WEIGHT_PIXELS the weights are those of that size: with a0 and
    # a1 scaled to the 9-21 pixels a label per pixel was free (log 1 = 0 in
    # the complexity prior) and a constant 3x3 image got 9 segments.
    flat = np.full(shape, 90, dtype=np.uint8)
    assert segment(flat, seed=0).n_labels == 1
    halves = flat.copy()
    halves[:, shape[1] // 2:] = 200
    seg = segment(halves, seed=0)
    assert seg.n_labels == 2
    assert len(np.unique(seg.labels[:, :shape[1] // 2])) == 1


def test_same_seed_same_result():
    img = grey_image()
    a = segment(img, seed=7, **FAST)
    b = segment(img, seed=7, **FAST)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.energy == b.energy
    assert a.trace.energy == b.trace.energy


def test_generator_seed():
    img = grey_image()
    a = segment(img, seed=np.random.default_rng(3), **FAST)
    b = segment(img, seed=np.random.default_rng(3), **FAST)
    np.testing.assert_array_equal(a.labels, b.labels)


def _rgba(img):
    return np.concatenate([img, np.full(img.shape[:2] + (1,), 1.0)], axis=-1)


IMAGES = {
    "grey_uint8": (lambda: (grey_image() * 255).astype(np.uint8), {}),
    "grey_uint16": (lambda: (grey_image() * 65535).astype(np.uint16), {}),
    "grey_uint16_low_range": (lambda: (grey_image() * 4095).astype(np.uint16), {}),
    "grey_float32": (lambda: grey_image().astype(np.float32), {}),
    "grey_float_out_of_range": (lambda: grey_image() * 500.0 - 100.0, {}),
    "grey_int32": (lambda: (grey_image() * 1000).astype(np.int32), {}),
    "grey_bool": (lambda: grey_image() > 0.5, {}),
    "grey_hw1": (lambda: grey_image()[..., None], {}),
    "grey_alpha": (lambda: np.stack([grey_image(), np.ones((24, 32))], -1), {}),
    "rgb_uint8": (lambda: (rgb_image() * 255).astype(np.uint8), {}),
    "rgb_uint16": (lambda: (rgb_image() * 65535).astype(np.uint16), {}),
    "rgb_float": (lambda: rgb_image(), {}),
    "rgba_uint8": (lambda: (_rgba(rgb_image()) * 255).astype(np.uint8), {}),
    "rgba_float": (lambda: _rgba(rgb_image()), {}),
    "rgb_channel_axis_0": (lambda: np.moveaxis(rgb_image(), -1, 0), dict(channel_axis=0)),
    "rgba_channel_axis_0": (lambda: np.moveaxis(_rgba(rgb_image()), -1, 0), dict(channel_axis=0)),
    "grey_channel_axis_none": (lambda: grey_image(), dict(channel_axis=None)),
    "grey_list": (lambda: grey_image(6, 5).tolist(), {}),
    "non_contiguous": (lambda: grey_image(48, 64)[::2, ::2], {}),
    "two_by_two": (lambda: np.array([[0.0, 1.0], [1.0, 0.0]]), {}),
    "constant": (lambda: np.full((12, 12), 0.3), {}),
}


@pytest.mark.parametrize("kind", sorted(IMAGES))
def test_image_kinds(kind):
    make, kwargs = IMAGES[kind]
    img = make()
    seg = segment(img, seed=0, **FAST, **kwargs)
    shape = np.asarray(img).shape
    hw = shape[1:] if kwargs.get("channel_axis") == 0 else shape[:2]
    check_segmentation(seg, hw)


def test_rgba_alpha_is_ignored():
    rgb = (rgb_image() * 255).astype(np.uint8)
    rgba = np.concatenate([rgb, np.full(rgb.shape[:2] + (1,), 255, np.uint8)], -1)
    a = segment(rgb, seed=0, **FAST)
    b = segment(rgba, seed=0, **FAST)
    np.testing.assert_array_equal(a.labels, b.labels)


def test_channel_axis_0_matches_last():
    rgb = rgb_image()
    a = segment(rgb, seed=0, **FAST)
    b = segment(np.moveaxis(rgb, -1, 0), seed=0, channel_axis=0, **FAST)
    np.testing.assert_array_equal(a.labels, b.labels)


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_every_sampler(sampler):
    img = grey_image()
    seg = segment(img, sampler=sampler, seed=0, **FAST)
    check_segmentation(seg, img.shape)
    assert seg.sampler == sampler


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_every_sampler_default_budget(sampler):
    img = grey_image(12, 16)
    seg = segment(img, sampler=sampler, seed=0, n_atoms=10)
    check_segmentation(seg, img.shape)
    assert seg.steps >= seg.graph.n_vertices


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_result_is_the_best_state_seen(sampler):
    """A hot chain wanders uphill; the result must still be the best state visited."""
    # 12x16 pixels: every chain here does wander uphill (at 24x32, random-split
    # never left its first state) at a third of the cost.
    img = grey_image(12, 16)
    seg = segment(img, sampler=sampler, atoms="pixels", t0=5.0, t_final=5.0, seed=0, steps=300)
    assert seg.energy == pytest.approx(-seg.model.log_target(seg.vertex_labels), rel=1e-9, abs=1e-6)
    assert seg.energy <= seg.trace.energy[0] + 1e-6
    assert seg.energy <= min(seg.trace.energy) + 1e-6
    if sampler not in HIERARCHICAL:  # whose trace holds only each level's end
        assert max(seg.trace.energy) > seg.energy + 1.0  # the premise: the chain went uphill


@pytest.mark.parametrize("atoms", ATOM_METHODS)
def test_every_atom_method(atoms):
    img = grey_image()
    seg = segment(img, atoms=atoms, seed=0, **FAST)
    check_segmentation(seg, img.shape)
    assert seg.atom_method == atoms
    if atoms == "pixels":
        assert seg.graph.n_vertices == img.size


@pytest.mark.parametrize("atoms", ATOM_METHODS)
def test_every_atom_method_colour(atoms):
    seg = segment(rgb_image(), atoms=atoms, seed=0, **FAST)
    check_segmentation(seg, (24, 32))


def test_init_random():
    img = grey_image()
    seg = segment(img, init="random", seed=0, **FAST)
    check_segmentation(seg, img.shape)
    assert seg.trace.labels[0] > 1  # started from several labels


def test_time_budget():
    img = grey_image()
    seg = segment(img, seed=0, n_atoms=40, time_budget=0.2)
    check_segmentation(seg, img.shape)
    assert seg.steps > 0
    assert 0 < seg.seconds < 3.0  # the sampling: what the rest of the call left (tests/test_budget.py)


def test_n_atoms_larger_than_pixels():
    img = grey_image(4, 5)
    seg = segment(img, seed=0, n_atoms=1000, steps=100)
    check_segmentation(seg, img.shape)
    assert seg.graph.n_vertices <= img.size


def test_explicit_temperatures_and_prior():
    img = grey_image()
    seg = segment(img, seed=0, t0=5.0, t_final=5.0, a0=0.0, a1=0.0, a2=0.0, kappa=0.0, bins=8,
                  edge_scale=2.0, q_max=0.5, **FAST)
    check_segmentation(seg, img.shape)
    assert seg.trace.temperature[0] == pytest.approx(5.0)


# ---------------------------------------------------------------------------
# Multigrid on pixels: from atoms (the default) or from one label
# ---------------------------------------------------------------------------


def _phase_start(trace):
    """Index of the first trace row of the pixel phase (the temperature rises again)."""
    t = trace.temperature
    rises = [i for i in range(1, len(t)) if t[i] > t[i - 1] * (1 + 1e-9)]
    assert len(rises) == 1, rises
    return rises[0]


def test_multigrid_from_atoms_is_the_default_on_pixels():
    img = rgb_image()
    seg = segment(img, sampler="multigrid", seed=0, steps=600)
    check_segmentation(seg, img.shape[:2])
    assert seg.init == "atoms" and seg.summary()["init"] == "atoms"
    assert seg.atom_method == "pixels" and seg.graph.n_vertices == 24 * 32
    assert seg.steps == 600  # both phases
    assert seg.accepted == sum(seg.trace.accepted)
    assert all(b >= a for a, b in zip(seg.trace.seconds, seg.trace.seconds[1:]))
    assert seg.seconds == pytest.approx(seg.trace.seconds[-1], abs=0.01)
    # SW cuts on the atoms from one label at T0 = 10, then multigrid from T0 = 1.
    tr = seg.trace
    assert tr.labels[0] == 1 and tr.temperature[0] == pytest.approx(swcuts.segmentation.segment.DEFAULT_T0_SWC)
    i = _phase_start(tr)
    assert 0 < tr.step[i - 1] < 600
    assert tr.temperature[i] == pytest.approx(swcuts.segmentation.segment.ATOMS_INIT_T0, rel=0.1)


def test_multigrid_from_atoms_same_seed_same_result():
    img = grey_image()
    a = segment(img, sampler="multigrid", seed=5, steps=500)
    b = segment(img, sampler="multigrid", seed=5, steps=500)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.energy == b.energy and a.trace.energy == b.trace.energy


def test_multigrid_from_atoms_default_budget_starts_with_swc():
    """The atoms' phase is exactly segment(sampler="swc", atoms="slic")'s run, so the result
    is at least as good as it (same posterior, "contrast", the default on
    pixels; same seed)."""
    img = grey_image()
    swc = segment(img, sampler="swc", seed=3, n_atoms=40, model="contrast", atoms="slic")
    seg = segment(img, sampler="multigrid", seed=3, n_atoms=40)
    check_segmentation(seg, img.shape)
    i = _phase_start(seg.trace)
    assert seg.trace.energy[:i] == swc.trace.energy
    assert seg.trace.step[i - 1] == swc.steps
    assert seg.steps == swc.steps + swcuts.segmentation.segment.default_steps("multigrid", img.size, pixels=True)
    assert seg.energy <= swc.energy + 1e-6 * abs(swc.energy)


def test_multigrid_from_atoms_time_budget():
    img = grey_image()
    seg = segment(img, sampler="multigrid", seed=0, time_budget=0.3)
    check_segmentation(seg, img.shape)
    assert 0 < seg.seconds < 3.0  # both phases' sampling: what the rest of the call left
    assert seg.trace.seconds[-1] == pytest.approx(seg.seconds, abs=0.01)
    _phase_start(seg.trace)


def test_multigrid_from_atoms_respects_t0_and_windows(monkeypatch):
    seen = []
    real = swcuts.segmentation.segment.Multigrid

    def spy(model, q, window_sizes=None, **kw):
        seen.append(list(window_sizes))
        return real(model, q, window_sizes=window_sizes, **kw)

    monkeypatch.setattr(swcuts.segmentation.segment, "Multigrid", spy)
    img = grey_image()
    seg = segment(img, sampler="multigrid", seed=0, steps=400, t0=3.0, window_sizes=[4, 8])
    check_segmentation(seg, img.shape)
    assert seen == [[4, 8]]
    assert seg.trace.temperature[_phase_start(seg.trace)] == pytest.approx(3.0, rel=0.1)
    segment(img, sampler="multigrid", seed=0, steps=400)
    assert seen[-1] == [2, 4, 8, 16, 32]  # default: windows from 2


@pytest.mark.parametrize("steps", [1, 2])
def test_multigrid_from_atoms_tiny_budgets(steps):
    img = grey_image()
    seg = segment(img, sampler="multigrid", seed=0, steps=steps)
    check_segmentation(seg, img.shape)
    assert seg.steps == steps


@pytest.mark.parametrize("init", ["uniform", "random"])
def test_multigrid_on_pixels_other_starts(init):
    img = grey_image()
    seg = segment(img, sampler="multigrid", init=init, seed=0, steps=300)
    check_segmentation(seg, img.shape)
    assert seg.init == init and seg.steps == 300
    assert seg.trace.temperature[0] == pytest.approx(swcuts.segmentation.segment.DEFAULT_T0_SWC)
    assert (seg.trace.labels[0] == 1) == (init == "uniform")
    assert all(b <= a for a, b in zip(seg.trace.temperature, seg.trace.temperature[1:]))


def test_pixel_default_budget_is_capped():
    api = swcuts.segmentation.options
    n = 154_401
    assert api.default_steps("multigrid", n, pixels=True) == api.STEPS_PER_PIXEL["multigrid"] * n
    big = 100 * api.MAX_PIXEL_STEPS["multigrid"]
    assert api.default_steps("multigrid", big, pixels=True) == api.MAX_PIXEL_STEPS["multigrid"]
    assert api.default_steps("multilevel", big, pixels=True) == api.MAX_PIXEL_STEPS["multilevel"]
    assert api.default_steps("multigrid", 1000) == api.STEPS_PER_ATOM["multigrid"] * 1000


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def _assert_one_line(exc):
    msg = str(exc)
    assert msg and "\n" not in msg and "\r" not in msg
    return msg


BAD_IMAGES = {
    "empty": (np.zeros((0, 0)), {}, "2x2"),
    "empty_3d": (np.zeros((0, 5, 3)), {}, "2x2"),
    "one_pixel": (np.zeros((1, 1)), {}, "2x2"),
    "one_pixel_rgb": (np.zeros((1, 1, 3)), {}, "2x2"),
    "one_row": (np.zeros((1, 30)), {}, "2x2"),
    "five_channels": (np.zeros((10, 10, 5)), {}, "5 channels"),
    "many_channels_first": (np.zeros((8, 10, 10)), dict(channel_axis=0), "8 channels"),
    "nan": (np.where(np.eye(8) > 0, np.nan, 0.5), {}, "NaN"),
    "inf": (np.where(np.eye(8) > 0, np.inf, 0.5), {}, "infinite"),
    "neg_inf_rgb": (np.where(np.eye(8)[..., None] > 0, -np.inf, 0.5) * np.ones(3), {}, "infinite"),
    "nan_float32": (np.full((8, 8), np.nan, dtype=np.float32), {}, "NaN"),
    "one_d": (np.zeros(50), {}, "dimensions"),
    "four_d": (np.zeros((2, 8, 8, 3)), {}, "dimensions"),
    "scalar": (np.float64(1.0), {}, "dimensions"),
    "colour_with_channel_axis_none": (np.zeros((8, 8, 3)), dict(channel_axis=None), "channel_axis"),
    "channel_axis_out_of_range": (np.zeros((8, 8, 3)), dict(channel_axis=5), "channel_axis"),
}


@pytest.mark.parametrize("kind", sorted(BAD_IMAGES))
def test_bad_image_value(kind):
    img, kwargs, words = BAD_IMAGES[kind]
    with pytest.raises(ValueError, match=words) as info:
        segment(img, seed=0, **FAST, **kwargs)
    _assert_one_line(info.value)


@pytest.mark.parametrize("img", ["image.png", b"bytes", np.array([["a", "b"], ["c", "d"]]),
                                 np.ones((4, 4), dtype=complex), None, {"a": 1}],
                         ids=["path", "bytes", "strings", "complex", "none", "dict"])
def test_bad_image_type(img):
    with pytest.raises(TypeError) as info:
        segment(img, seed=0, **FAST)
    _assert_one_line(info.value)


# Each: options, exception type, words in the message.
BAD_OPTIONS = {
    "unknown_sampler": (dict(sampler="metropolis"), ValueError, "unknown sampler 'metropolis'"),
    "sampler_not_str": (dict(sampler=3), TypeError, "sampler"),
    "unknown_atoms": (dict(atoms="voronoi"), ValueError, "unknown atoms 'voronoi'"),
    "atoms_not_str": (dict(atoms=3), TypeError, "atoms"),
    "window_too_large": (dict(sampler="multigrid", window_sizes=[64]), ValueError,
                         "window of 64 pixels is larger than the 24x32 image"),
    "window_zero": (dict(sampler="multigrid", window_sizes=[8, 0]), ValueError, "at least 1 pixel"),
    "window_empty": (dict(sampler="multigrid", window_sizes=[]), ValueError, "at least one window"),
    "window_not_int": (dict(sampler="multigrid", window_sizes=[8.5]), TypeError, "integers"),
    "window_for_swc": (dict(sampler="swc", window_sizes=[8]), ValueError, "option of the multigrid"),
    "zero_levels": (dict(sampler="multilevel", levels=0), ValueError, "levels must be an integer from 1"),
    "negative_levels": (dict(sampler="multilevel", levels=-2), ValueError, "levels must be an integer from 1"),
    "float_levels": (dict(sampler="multilevel", levels=1.5), TypeError, "levels must be an integer"),
    "multilevel_on_slic": (dict(sampler="multilevel", atoms="slic"), ValueError, "atoms='pixels'"),
    "negative_steps": (dict(steps=-1), ValueError, "steps must be a positive integer"),
    "zero_steps": (dict(steps=0), ValueError, "steps must be a positive integer"),
    "float_steps": (dict(steps=1.5), TypeError, "steps must be an integer"),
    "bool_steps": (dict(steps=True), TypeError, "steps must be an integer"),
    "zero_n_atoms": (dict(n_atoms=0), ValueError, "n_atoms"),
    "float_n_atoms": (dict(n_atoms=10.5), TypeError, "n_atoms"),
    "t_final_above_t0": (dict(t0=1.0, t_final=2.0), ValueError, r"t_final \(2.0\) must not exceed t0 \(1.0\)"),
    "t_final_above_default_t0": (dict(t_final=50.0), ValueError, "must not exceed t0"),
    "t_final_none": (dict(t_final=None), TypeError, "t_final"),
    "negative_t0": (dict(t0=-1.0), ValueError, "t0 must be a positive temperature"),
    "nan_t0": (dict(t0=float("nan")), ValueError, "t0"),
    "string_t0": (dict(t0="10"), TypeError, "t0"),
    "zero_t_final": (dict(t_final=0.0), ValueError, "t_final"),
    "negative_time_budget": (dict(steps=None, time_budget=-1.0), ValueError, "time_budget"),
    "zero_time_budget": (dict(steps=None, time_budget=0), ValueError, "time_budget"),
    "inf_time_budget": (dict(steps=None, time_budget=float("inf")), ValueError, "time_budget"),
    "string_time_budget": (dict(steps=None, time_budget="1"), TypeError, "time_budget"),
    "steps_and_time_budget": (dict(steps=10, time_budget=1.0), ValueError, "not both"),
    "unknown_init": (dict(init="zeros"), ValueError, "unknown init 'zeros'"),
    "init_not_str": (dict(init=1), TypeError, "init must be a string"),
    "init_atoms_for_swc": (dict(init="atoms"), ValueError, f"init='atoms' .* not sampler 'swc' on atoms '{DEFAULT_ATOMS}'"),
    "init_atoms_multigrid_on_slic": (dict(sampler="multigrid", atoms="slic", init="atoms"), ValueError,
                                     "needs sampler='multigrid' with atoms='pixels'"),
    "init_atoms_gibbs_on_pixels": (dict(sampler="gibbs", atoms="pixels", init="atoms"), ValueError,
                                   "init='atoms'"),
    "init_atoms_multilevel": (dict(sampler="multilevel", init="atoms"), ValueError, "init='atoms'"),
    "init_random_multilevel": (dict(sampler="multilevel", init="random"), ValueError, "does not apply"),
    "t_final_above_atoms_t0": (dict(sampler="multigrid", t_final=2.0), ValueError,
                               r"t_final \(2.0\) must not exceed t0 \(1.0\)"),
    "negative_seed": (dict(seed=-1), ValueError, "seed"),
    "string_seed": (dict(seed="abc"), TypeError, "seed"),
    "float_seed": (dict(seed=1.5), TypeError, "seed"),
    "negative_edge_scale": (dict(edge_scale=-1.0), ValueError, "edge_scale"),
    "string_edge_scale": (dict(edge_scale="x"), TypeError, "edge_scale"),
    "q_max_one": (dict(q_max=1.0), ValueError, "q_max"),
    "q_max_zero": (dict(q_max=0.0), ValueError, "q_max"),
    "string_q_max": (dict(q_max="x"), TypeError, "q_max"),
    "zero_bins": (dict(bins=0), ValueError, "bins"),
    "one_bin": (dict(bins=1), ValueError, "bins"),
    "float_bins": (dict(bins=3.5), TypeError, "bins"),
    "nan_a0": (dict(a0=float("nan")), ValueError, "a0"),
    "negative_a1": (dict(a1=-1.0), ValueError, "a1"),
    "inf_a2": (dict(a2=float("inf")), ValueError, "a2"),
    "negative_kappa": (dict(kappa=-1.0), ValueError, "kappa"),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_bad_options(case, monkeypatch):
    opts, exc_type, words = BAD_OPTIONS[case]
    # Options are checked before any work on the image.
    monkeypatch.setattr(swcuts.segmentation.segment, "prepare_image", _must_not_run)
    kwargs = dict(FAST, seed=0)
    kwargs.update(opts)
    if kwargs.get("steps", 0) is None:
        del kwargs["steps"]
    with pytest.raises(exc_type, match=words) as info:
        segment(grey_image(), **kwargs)
    _assert_one_line(info.value)
    if exc_type is ValueError:
        assert isinstance(info.value, InputError)


def test_check_options_matches_segment():
    name, t0 = swcuts.segmentation.options.check_options(sampler="swc")
    assert name in swcuts.samplers.KERNELS and t0 > 0
    with pytest.raises(ValueError, match="unknown sampler"):
        swcuts.segmentation.options.check_options(sampler="nope")


def _must_not_run(*args, **kwargs):
    raise AssertionError("work started although the input should have been refused")


def test_too_large_for_memory(monkeypatch):
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: 50_000)
    monkeypatch.setattr(swcuts.segmentation.segment, "prepare_image", _must_not_run)
    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", _must_not_run)
    with pytest.raises(ValueError, match="downscale the image or use fewer atoms") as info:
        segment(rgb_image(200, 300), seed=0, **FAST)
    msg = _assert_one_line(info.value)
    assert "200x300" in msg


def test_too_large_for_memory_channels_first(monkeypatch):
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: 50_000)
    monkeypatch.setattr(swcuts.segmentation.segment, "prepare_image", _must_not_run)
    with pytest.raises(ValueError, match="200x300"):
        segment(np.zeros((3, 200, 300)), channel_axis=0, seed=0, **FAST)


def test_memory_depends_on_atoms(monkeypatch):
    img = grey_image(40, 50)
    need = swcuts.io.memory.estimate_memory(img.shape, 40)
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: need + 1000)
    check_segmentation(segment(img, seed=0, **FAST), img.shape)
    with pytest.raises(ValueError, match="2000 atoms"):
        segment(img, atoms="pixels", seed=0, **FAST)


def test_pixel_memory_depends_on_the_sampler(monkeypatch):
    """Pixel-scale kernels read a pixel's statistics from its position and
    values; the split-merge family needs full rows: a budget between the two
    estimates admits the first and refuses the second, before any work."""
    img = grey_image(40, 50)
    lean = swcuts.io.memory.estimate_memory(img.shape, img.size,
                                          bytes_per_vertex=swcuts.io.memory.BYTES_PER_PIXEL_VERTEX)
    rows = swcuts.io.memory.estimate_memory(img.shape, img.size)
    assert lean < rows
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: (lean + rows) // 2)
    seg = segment(img, sampler="multigrid", init="uniform", steps=200, seed=0)
    check_segmentation(seg, img.shape)
    monkeypatch.setattr(swcuts.segmentation.segment, "prepare_image", _must_not_run)
    with pytest.raises(ValueError, match="2000 atoms"):
        segment(img, sampler="split-merge", atoms="pixels", steps=5, seed=0)


def test_unknown_memory_is_not_refused(monkeypatch):
    monkeypatch.setattr(swcuts.io.memory, "available_memory", lambda: None)
    img = grey_image()
    check_segmentation(segment(img, seed=0, **FAST), img.shape)


def test_progress_false_writes_nothing(capsys):
    segment(grey_image(), seed=0, progress=True, **FAST)  # stderr is not a terminal
    out, err = capsys.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("options, message", [
    (dict(bins=10**6), "bins must be at most 1024"),
    (dict(sampler="multilevel", levels=10**6), "levels must be at most 8"),
])
def test_options_bounded_by_their_cost(options, message):
    """Options that multiply memory or work are refused before any work."""
    with pytest.raises(ValueError, match=message):
        swcuts.segment(np.zeros((24, 32)), **options)


def test_cluster_validates_budgets_like_segment():
    for bad in (float("inf"), float("nan"), 0, -1):
        with pytest.raises(ValueError, match="time_budget"):
            swcuts.cluster(np.zeros((10, 2)), time_budget=bad)


def test_fractional_channel_axis_is_refused():
    with pytest.raises(ValueError, match="channel_axis must be an int"):
        swcuts.segment(np.zeros((3, 24, 32)), channel_axis=1.5)


def test_segment_with_posterior_samples_and_its_bad_values():
    image = np.zeros((24, 32))
    image[:, 16:] = 1.0
    seg = swcuts.segment(image, seed=0, steps=200, n_atoms=20, posterior_samples=20, posterior_model="image")
    # Over all chains, rounded up to equal shares of the 3 granularities x 2 chains.
    assert seg.samples is not None and seg.samples.n_samples == 24
    assert seg.samples.granularity == (1.0, 3.0, 10.0) and seg.samples.n_chains == 6
    assert seg.samples.boundary_probability().shape == image.shape
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="posterior_samples"):
            swcuts.segment(image, steps=10, posterior_samples=bad)
    with pytest.raises(ValueError, match="on atoms"):
        swcuts.segment(image, sampler="multigrid", steps=10, posterior_samples=3)
    # granularity: passed on to sample_posterior, checked before any work, only with samples.
    one = swcuts.segment(image, seed=0, steps=200, n_atoms=20, posterior_samples=8, granularity=1,
                         posterior_model="image")
    assert one.samples.granularity == (1.0,) and one.samples.n_chains == 4
    for bad, message in (((1, 3), "give posterior_samples"), (0, "positive"), ((2, 2), "differ")):
        with pytest.raises(ValueError, match=message):
            swcuts.segment(image, steps=10, granularity=bad, posterior_model="image",
                           posterior_samples=None if message == "give posterior_samples" else 4)
