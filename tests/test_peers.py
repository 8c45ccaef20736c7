"""Tests of swcuts.evaluation.peers: the classical segmenters a benchmark compares against."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from swcuts.io.errors import InputError
from swcuts.io.image_read import load_image
from swcuts.evaluation.peers import PEERS, Peer, run_peer

REAL = Path("/work/shared/data/bsds500-train/images/2092.jpg")


@pytest.fixture(scope="module")
def square():
    """40x60 dark image with a bright red 20x20 square."""
    image = np.full((40, 60, 3), 20, np.uint8)
    image[10:30, 20:40] = (220, 40, 30)
    return image


@pytest.fixture(scope="module")
def photo():
    """A real BSDS photo at a third of its size (107x161), to keep the tests fast."""
    return load_image(REAL)[::3, ::3]


def _check_labels(labels, shape):
    assert labels.shape == shape and labels.dtype == np.int64
    assert np.array_equal(np.unique(labels), np.arange(labels.max() + 1))


def test_registry():
    assert list(PEERS) == ["felzenszwalb", "opencv-graphseg", "slic-ncut"]
    for name, peer in PEERS.items():
        assert isinstance(peer, Peer) and peer.name == name and peer.description
        with pytest.raises(dataclasses.FrozenInstanceError):
            peer.default = 1.0
        grid = np.asarray(peer.grid)
        assert 6 <= len(grid) <= 8 and (np.diff(grid) > 0).all() and grid[0] > 0
        ratios = grid[1:] / grid[:-1]
        assert (ratios >= 1.9).all() and (ratios <= 10.1).all()  # log-spaced
        assert grid[0] <= peer.default <= grid[-1]


@pytest.mark.parametrize("name", list(PEERS))
def test_separates_a_square(name, square):
    labels = run_peer(name, square)
    _check_labels(labels, square.shape[:2])
    assert labels[20, 30] != labels[0, 0] and labels[20, 30] != labels[39, 59]
    assert labels[0, 0] == labels[39, 59]  # the background stays one segment


@pytest.mark.parametrize("name", list(PEERS))
def test_other_image_kinds(name, square):
    grey = square.mean(axis=2).astype(np.uint8)
    rgba = np.dstack([square, np.full(square.shape[:2], 255, np.uint8)])
    for image in (grey, rgba, square.astype(np.uint16) * 257, square / 255.0, np.dstack([grey, grey])):
        labels = run_peer(name, image)
        _check_labels(labels, square.shape[:2])
        assert labels[20, 30] != labels[0, 0]
    assert np.array_equal(run_peer(name, rgba), run_peer(name, square))  # alpha is dropped


def test_seed_reproducible(photo):
    a = run_peer("slic-ncut", photo, seed=3)
    assert np.array_equal(a, run_peer("slic-ncut", photo, seed=3))
    assert np.array_equal(a, run_peer("slic-ncut", photo, seed=np.random.default_rng(3)))


@pytest.mark.parametrize("name, low, high", [("felzenszwalb", 100, 3200), ("opencv-graphseg", 100, 3200)])
def test_larger_threshold_gives_fewer_segments(name, low, high, photo):
    counts = [run_peer(name, photo, **{PEERS[name].param: v}).max() + 1 for v in (low, PEERS[name].default, high)]
    assert counts[0] > counts[2] and counts[0] >= counts[1]


def test_larger_ncut_thresh_gives_more_segments(photo):
    few, many = (run_peer("slic-ncut", photo, thresh=t).max() + 1 for t in (1e-5, 0.03))
    assert many > few


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def _error(call, *words):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message


def test_errors(square):
    _error(lambda: run_peer("watershed", square), "watershed", "felzenszwalb, opencv-graphseg, slic-ncut")
    _error(lambda: run_peer("felzenszwalb", square, k=100), "'k'", "'scale'")
    _error(lambda: run_peer("opencv-graphseg", square, scale=100), "'scale'", "'k'")
    for bad in (0, -1.0, math.nan, math.inf, "big", None, True):
        _error(lambda bad=bad: run_peer("slic-ncut", square, thresh=bad), "thresh", "positive number")
    _error(lambda: run_peer("felzenszwalb", np.zeros((2, 3, 4, 5))), "dimensions")
    _error(lambda: run_peer("felzenszwalb", np.full((5, 5), np.nan)), "NaN")
