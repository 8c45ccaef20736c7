"""The structured edge forest (swcuts.image.edge_forest): a tiny forest
trained by swcuts.image.edge_forest_train on a synthetic photo, written in
OpenCV's format, loaded and run by OpenCV; bad model files refused in one line."""

import gzip

import numpy as np
import pytest

from swcuts.image.edge_forest import (OPTIONS, edge_probability, feature_table, forest_trees, read_forest,
                                      write_forest)
from swcuts.image.edge_forest_train import patch_features, sample_windows, train_tree
from swcuts.io.errors import InputError


def two_regions(h=48, w=64, col=30, seed=0):
    rng = np.random.default_rng(seed)
    img = np.full((h, w, 3), 0.25) + 0.03 * rng.standard_normal((h, w, 3))
    img[:, col:] += np.array([0.5, 0.3, 0.1])
    seg = np.zeros((h, w), int)
    seg[:, col:] = 1
    return np.clip(img, 0, 1), seg


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two trees trained on two synthetic photos (boundaries at different columns)."""
    rng = np.random.default_rng(1)
    fids = np.sort(rng.choice(len(feature_table()), 400, replace=False))
    trees = []
    for t in range(2):
        xs, labs = [], []
        for col in (22, 40):
            img, seg = two_regions(col=col, seed=t)
            r, c, lab = sample_windows([seg], 60, 60, rng)
            xs.append(patch_features(img, r, c, fids))
            labs.append(lab)
        trees.append(train_tree(np.hstack(xs), fids, np.vstack(labs), rng))
    path = tmp_path_factory.mktemp("forest") / "tiny.yml.gz"
    write_forest(path, trees, {**OPTIONS, "numberOfTreesToEvaluate": 2})
    return path


def test_tiny_forest_finds_the_boundary(tiny):
    img, _ = two_regions(col=33, seed=5)
    e = edge_probability(img, forest=tiny)
    assert e.shape == img.shape[:2]
    profile = e[8:-8].mean(axis=0)
    assert abs(int(np.argmax(profile)) - 32.5) <= 2
    assert profile[31:35].mean() > 0.3 > profile[:20].max()


def test_negative_control_flat_image_has_no_boundary(tiny):
    e = edge_probability(np.full((40, 40, 3), 0.4), forest=tiny)
    assert e.max() < 0.1


def test_grey_and_uint8_images(tiny):
    img, _ = two_regions(col=33, seed=6)
    grey = (img.mean(axis=2) * 255).astype(np.uint8)
    assert edge_probability(grey, forest=tiny).shape == grey.shape


def test_file_round_trip(tiny):
    f = read_forest(tiny)
    assert f["childs"].shape[0] == 2 and f["edgeBoundaries"][-1] == f["edgeBins"].size


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated", "bad-index", "not-a-number"])
def test_bad_model_file_is_one_line(tiny, tmp_path, damage):
    p = tmp_path / "bad.yml.gz"
    raw = tiny.read_bytes()
    if damage == "garbage":
        p.write_bytes(b"not a model")
    elif damage == "truncated":
        p.write_bytes(raw[: len(raw) // 2])
    elif damage == "bad-index":
        text = gzip.decompress(raw).decode().replace("childs:\n      - [ ", "childs:\n      - [ 99999, ", 1)
        p.write_bytes(gzip.compress(text.encode()))
    elif damage == "not-a-number":
        text = gzip.decompress(raw).decode().replace("thresholds:\n      - [ ", "thresholds:\n      - [ 0.5x, ", 1)
        assert "0.5x" in text
        p.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(InputError) as err:
        edge_probability(np.zeros((30, 30, 3)), forest=p)
    msg = str(err.value)
    assert "\n" not in msg and "bad.yml.gz" in msg and "train_edge_forest.py" in msg


def test_bad_image_is_one_line(tiny):
    with pytest.raises(InputError):
        edge_probability(np.zeros((4, 4, 7)), forest=tiny)
    with pytest.raises(InputError):
        edge_probability(np.full((20, 20), np.nan), forest=tiny)


def test_detector_combined_with_the_forest(tiny, tmp_path):
    from swcuts.image.boundary_detector import boundary_probability
    from swcuts.image.edge_forest import combine_with_forest
    from swcuts.image.prepare import prepare_image

    f = read_forest(tiny)
    assert f.get("combination") is None
    img, _ = two_regions(col=33, seed=7)
    z = prepare_image(img)[0]
    with pytest.raises(InputError, match="no combination weights"):
        boundary_probability(z, forest=tiny)
    p = tmp_path / "mixed.yml.gz"
    trees = forest_trees(f)
    write_forest(p, trees, {**OPTIONS, "numberOfTreesToEvaluate": 2}, combination=[0.5, 1.5, -1e-05])
    assert np.allclose(read_forest(p)["combination"], [0.5, 1.5, -1e-05])
    plain = boundary_probability(z)
    mixed = boundary_probability(z, forest=p)
    e = np.clip(edge_probability(img, forest=p), 1e-4, 1 - 1e-4)
    q = np.clip(plain, 1e-4, 1 - 1e-4)
    want = 1 / (1 + np.exp(-(0.5 * np.log(q / (1 - q)) + 1.5 * np.log(e / (1 - e)) - 1e-05)))
    assert np.abs(mixed - want).max() < 0.02          # the forest reads the RGB recovered from CIELAB
    assert np.abs(combine_with_forest(plain, z, p) - mixed).max() < 1e-6
    assert mixed[:, 31:35].mean() > mixed[:, :20].mean() + 0.3
    grey = z[..., :1]
    assert np.array_equal(boundary_probability(grey, forest=p), boundary_probability(grey))


def test_bad_forest_option_is_one_line():
    from swcuts.image.boundary_detector import boundary_probability

    with pytest.raises(InputError, match="forest must be"):
        boundary_probability(np.zeros((20, 20, 1)), forest=3)


def route(tree, x, less):
    """The leaf each sample (a column of ``x``) reaches, going left when ``less(value, node)``."""
    child, fid = np.asarray(tree["child"]), np.asarray(tree["fid"])
    out = []
    for j in range(x.shape[1]):
        k = 0
        while child[k]:
            k = child[k] - 1 + (not less(x[fid[k], j], k))
        out.append(k)
    return np.array(out)


def test_half_features_split_as_opencv_compares_float32():
    """Features held as float16 codes (half_keys): every threshold is a float16,
    so OpenCV's float32 comparison sends each window the way training did."""
    from swcuts.image.edge_forest_train import half_keys, key_values

    rng = np.random.default_rng(3)
    t = np.unique(rng.uniform(-1, 1, 300).astype(np.float16)).astype(np.float32)
    a = np.concatenate([rng.uniform(-1, 1, 5000).astype(np.float32), t,
                        np.nextafter(t, np.float32(-2)), np.nextafter(t, np.float32(2))])
    kt = half_keys(t)
    assert np.array_equal(key_values(kt), t)
    assert np.array_equal(a[:, None] < t, half_keys(a)[:, None] < kt)
    # negative control: float16 by rounding to nearest sends values just below a threshold the wrong way
    h = a.astype(np.float16).astype(np.float32)
    assert not np.array_equal(a[:, None] < t, h[:, None] < t)

    # a tree grown on the codes, written and read back: float32 features reach the same leaves
    fids = np.arange(6) * 101
    x = np.round(rng.uniform(0, 1, (6, 400)), 3).astype(np.float32)   # many near-equal values
    lab = np.zeros((400, 256), np.uint8)
    lab[x[2] + 0.3 * x[4] > 0.6, 128:] = 1
    tree = train_tree(half_keys(x), fids, lab, rng, min_child=4)
    assert len(tree["child"]) > 3
    thr = read_forest_of([tree])["thresholds"][0]
    assert np.array_equal(thr.astype(np.float16).astype(np.float32), thr)
    xf = np.zeros((fids.max() + 1, x.shape[1]), np.float32)
    xf[fids] = x
    kx = np.zeros(xf.shape, np.uint16)
    kx[fids] = half_keys(x)
    opencv = route(tree, xf, lambda v, k: v < thr[k])
    trained = route(tree, kx, lambda v, k: v < half_keys(thr[k:k + 1])[0])
    assert np.array_equal(opencv, trained)


def read_forest_of(trees, **kw):
    import tempfile
    from pathlib import Path

    p = Path(tempfile.mkdtemp()) / "f.yml.gz"
    write_forest(p, trees, {**OPTIONS, "numberOfTreesToEvaluate": 1}, **kw)
    return read_forest(p)


def test_multiscale_and_grey_combinations(tiny, tmp_path):
    from swcuts.image.boundary_detector import boundary_probability
    from swcuts.image.edge_forest import MULTISCALE, log_odds
    from swcuts.image.prepare import prepare_image

    img, _ = two_regions(col=33, seed=8)
    ms = edge_probability(img, forest=tiny, scales=MULTISCALE)
    assert ms.shape == img.shape[:2] and ms[:, 31:35].mean() > ms[:, :20].mean() + 0.2
    p = tmp_path / "ms.yml.gz"
    write_forest(p, forest_trees(read_forest(tiny)), {**OPTIONS, "numberOfTreesToEvaluate": 2},
                 combination=[0.5, 0.7, 0.9, -0.2], grey_combination=[0.8, 0.0, 1.1, 0.1])
    z = prepare_image(img)[0]
    from skimage.color import lab2rgb

    rgb = np.clip(lab2rgb(np.stack([z[..., 0] * 100, z[..., 1] * 256 - 128, z[..., 2] * 256 - 128], -1)), 0, 1)
    want = 1 / (1 + np.exp(-(0.5 * log_odds(boundary_probability(z)) + 0.7 * log_odds(edge_probability(rgb, forest=p))
                             + 0.9 * log_odds(edge_probability(rgb, forest=p, scales=MULTISCALE)) - 0.2)))
    assert np.abs(boundary_probability(z, forest=p) - np.clip(want, 1e-6, 1 - 1e-6)).max() < 1e-9
    g = img.mean(axis=2, keepdims=True)   # grey features: the grey values
    want = 1 / (1 + np.exp(-(0.8 * log_odds(boundary_probability(g))
                             + 1.1 * log_odds(edge_probability(g[..., 0], forest=p, scales=MULTISCALE)) + 0.1)))
    grey = boundary_probability(g, forest=p)
    assert np.abs(grey - np.clip(want, 1e-6, 1 - 1e-6)).max() < 1e-9
    assert not np.allclose(grey, boundary_probability(g))       # the grey weights are used
    for bad in ([1.0, 2.0], [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, np.nan, 0.0]):
        q = tmp_path / f"bad{len(bad)}.yml.gz"
        write_forest(q, forest_trees(read_forest(tiny)), combination=bad)
        with pytest.raises(InputError, match="is not 3 or 4 finite numbers") as err:
            boundary_probability(z, forest=q)
        assert "\n" not in str(err.value) and "train_edge_forest.py" in str(err.value)
    with pytest.raises(InputError, match="scales must be"):
        edge_probability(img, forest=tiny, scales=[0.0])
