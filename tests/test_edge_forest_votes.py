"""Our own inference of the structured edge forest
(swcuts.image.edge_forest_votes): OpenCV's map reproduced without
sharpening, sharpening moving a misplaced leaf patch onto the photo's colour
edge, bad ``segments`` refused in one line."""

import gzip
import re

import numpy as np
import pytest

from swcuts.image.edge_forest import OPTIONS, edge_probability, forest_trees, read_forest, write_forest
from swcuts.image.edge_forest_votes import forest_probability, leaf_segments
from swcuts.io.errors import InputError

from test_edge_forest import tiny, two_regions  # noqa: F401  (the fixture)


def textured(h=44, w=60, seed=3):
    """A photo with a few coloured blobs and noise: many leaves reached."""
    rng = np.random.default_rng(seed)
    img = 0.5 + 0.05 * rng.standard_normal((h, w, 3))
    yy, xx = np.mgrid[0:h, 0:w]
    for _ in range(4):
        cy, cx, r = rng.integers(0, h), rng.integers(0, w), rng.integers(5, 15)
        img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = rng.random(3)
    return np.clip(img, 0, 1)


@pytest.mark.parametrize("which", ["tiny", "shipped"])
def test_without_sharpening_it_is_opencvs_map(tiny, which):  # noqa: F811
    forest = tiny if which == "tiny" else None
    for img in (two_regions(col=27, seed=4)[0], textured()):
        ours = forest_probability(img, forest=forest)
        cv = edge_probability(img, forest=forest, sharpen=0)
        assert ours.max() > 0.05
        np.testing.assert_allclose(ours, cv, rtol=0, atol=1e-6)


def test_negative_control_a_moved_threshold_differs(tiny, tmp_path):  # noqa: F811
    trees = forest_trees(read_forest(tiny))
    for t in trees:
        t["thr"][0] += 0.2   # the roots' splits
    p = tmp_path / "moved.yml.gz"
    write_forest(p, trees, read_forest(tiny)["options"])
    img = two_regions(col=27, seed=4)[0]
    assert np.abs(forest_probability(img, forest=p) - edge_probability(img, forest=tiny, sharpen=0)).max() > 0.05


def one_leaf(tmp_path, cut=8):
    """A forest of one leaf whose patch has its boundary between columns
    ``cut - 1`` and ``cut`` (every location votes the same patch)."""
    seg = np.repeat([0, 1], [16 * cut, 16 * (16 - cut)])
    leaf = {"child": [0], "fid": [0], "thr": [0.0], "bins": [list(range(16 * (cut - 1), 16 * (cut + 1)))],
            "segs": [seg]}
    p = tmp_path / "one.yml.gz"
    write_forest(p, [leaf], {**OPTIONS, "numberOfTreesToEvaluate": 1})
    return p


def test_sharpening_moves_the_vote_onto_the_colour_edge(tmp_path):
    p = one_leaf(tmp_path)
    img = np.zeros((48, 64, 3))
    img[:, 33:] = [0.9, 0.6, 0.2]   # the colour edge between columns 32 and 33
    rows = slice(10, 38)
    for sharpen in (1, 2):
        e = forest_probability(img, forest=p, sharpen=sharpen)[rows].mean(axis=0)
        at_edge, away = e[32:34].mean(), np.r_[e[12:28], e[38:52]].max()
        assert at_edge > 1.5 * away, (sharpen, at_edge, away)
    # negative control: unsharpened, the misplaced patch votes the same everywhere
    e0 = forest_probability(img, forest=p, sharpen=0)[rows].mean(axis=0)
    assert e0[32:34].mean() < 1.05 * np.r_[e0[12:28], e0[38:52]].max()
    # and sharpening a photo of one colour changes nothing
    flat = np.full((48, 64, 3), 0.4)
    np.testing.assert_array_equal(forest_probability(flat, forest=p, sharpen=2),
                                  forest_probability(flat, forest=p, sharpen=0))


def test_segments_survive_a_rewrite_and_fit_the_bins(tiny, tmp_path):  # noqa: F811
    f = read_forest(tiny)
    g = leaf_segments(f)
    assert g["segs"].shape == ((f["childs"] == 0).sum(), 256) and g["nseg"].max() >= 2
    p = tmp_path / "again.yml.gz"
    write_forest(p, forest_trees(f), f["options"])
    np.testing.assert_array_equal(leaf_segments(read_forest(p))["segs"], g["segs"])


@pytest.mark.parametrize("damage", ["bad-char", "wrong-count", "not-the-bins", "no-segments", "bad-sharpen"])
def test_bad_segments_are_one_line(tiny, tmp_path, damage):  # noqa: F811
    text = gzip.decompress(tiny.read_bytes()).decode()
    head, _, segs = text.partition("segments:\n")   # the tiny file ends with its segments
    first = segs.index('"') + 1
    if damage == "bad-char":
        segs = segs[:first] + "Z" + segs[first + 1:]
    elif damage == "wrong-count":
        segs = re.sub(r'"[^"]*",\s*', "", segs, count=1)   # one leaf's patch dropped
    elif damage == "not-the-bins":
        segs = segs[:first] + "7" + segs[first + 1:]
    elif damage == "no-segments":
        segs, head = None, head.replace("   stride: 2\n", "   stride: 2\n   sharpen: 1\n")
    else:
        head = head.replace("   stride: 2\n", "   stride: 2\n   sharpen: 3\n")
    p = tmp_path / "bad.yml.gz"
    p.write_bytes(gzip.compress((head + ("" if segs is None else "segments:\n" + segs)).encode()))
    with pytest.raises(InputError) as err:
        read_forest(p)
    msg = str(err.value)
    assert "\n" not in msg and "bad.yml.gz" in msg and "train_edge_forest.py train" in msg


def test_bad_sharpen_argument_is_one_line():
    with pytest.raises(InputError, match="sharpen"):
        forest_probability(np.zeros((20, 20, 3)), sharpen=3)


def test_the_grey_combination_may_keep_opencvs_map(tiny, tmp_path):  # noqa: F811
    from swcuts.image.edge_forest import combine_with_forest

    f = read_forest(tiny)
    trees, w = forest_trees(f), [0.5, 1.0, 0.0, 0.1]
    paths = {}
    for name, extra in (("plain", {}), ("sharp", {"sharpen": 2}), ("sharp-colour", {"sharpen": 2, "greySharpen": 0})):
        paths[name] = tmp_path / f"{name}.yml.gz"
        write_forest(paths[name], trees, {**f["options"], **extra}, combination=w, grey_combination=w)
    img = textured()
    grey = img.mean(axis=2)[..., None]
    prob = np.full(grey.shape[:2], 0.2)
    q = {k: combine_with_forest(prob, grey, forest=p) for k, p in paths.items()}
    np.testing.assert_array_equal(q["sharp-colour"], q["plain"])
    assert np.abs(q["sharp"] - q["plain"]).max() > 1e-3   # negative control: sharpened, the grey map changes
