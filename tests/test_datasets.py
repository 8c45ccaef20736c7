"""Tests of swcuts.evaluation.datasets on tiny fake data sets of every layout and on real BSDS500 files."""

from pathlib import Path

import numpy as np
import pytest
from scipy.io import loadmat, savemat
from skimage.io import imsave

from swcuts.evaluation.datasets import Dataset, Sample, load, open_dataset
from swcuts.io.errors import InputError

REAL = Path("/work/shared/data/bsds500-train")
H, W = 6, 8


def _image(rng, h=H, w=W):
    return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)


def _seg(rng, h=H, w=W, k=3):
    """A BSDS-like segmentation: uint16 labels 1..k (not necessarily all used)."""
    return rng.integers(1, k + 1, (h, w)).astype(np.uint16)


def _write_jpg(path, rng, h=H, w=W):
    path.parent.mkdir(parents=True, exist_ok=True)
    imsave(path, _image(rng, h, w), check_contrast=False)


def _write_mat(path, segs):
    """A .mat laid out as BSDS500's: groundTruth = 1xN cell of structs {Segmentation, Boundaries}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cell = np.empty((1, len(segs)), dtype=object)
    for k, seg in enumerate(segs):
        cell[0, k] = {"Segmentation": seg, "Boundaries": np.zeros(seg.shape, np.uint8)}
    savemat(path, {"groundTruth": cell})


def _write_seg(path, seg, image_id=1, user=1):
    """A BSDS300 .seg file: header, 'data', then 's r c1 c2' runs (0-based)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = seg.shape
    lines = ["format ascii cr", "date Thu Feb 14 15:38:53 2002", f"image {image_id}", f"user {user}",
             f"width {w}", f"height {h}", f"segments {seg.max() + 1}", "gray 0", "invert 0", "flipflop 0", "data"]
    for r in range(h):  # fine in a test: a handful of rows
        change = np.flatnonzero(np.diff(seg[r])) + 1
        starts, ends = np.r_[0, change], np.r_[change, w] - 1
        lines += [f"{seg[r, a]} {r} {a} {b}" for a, b in zip(starts, ends)]
    path.write_text("\n".join(lines) + "\n")


def _same_partition(a, b):
    """a and b are the same partition of the pixels (labels may differ)."""
    pairs = np.unique(np.stack([a.ravel(), b.ravel()]), axis=1)
    return pairs.shape[1] == len(np.unique(a)) == len(np.unique(b))


def _check_sample(sample, shape=(H, W)):
    assert isinstance(sample, Sample)
    assert sample.image.shape[:2] == shape
    assert sample.truths
    for t in sample.truths:
        assert t.shape == shape and t.dtype in (np.int32, np.int64)
        assert np.array_equal(np.unique(t), np.arange(t.max() + 1))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def bsds500(tmp_path, rng):
    root = tmp_path / "BSR" / "BSDS500" / "data"
    truths = {}
    for split, ids in {"train": ["101", "102"], "val": ["201"], "test": ["301", "302"]}.items():
        for i in ids:
            _write_jpg(root / "images" / split / f"{i}.jpg", rng)
            truths[i] = [_seg(rng) for _ in range(2 + len(truths) % 3)]
            _write_mat(root / "groundTruth" / split / f"{i}.mat", truths[i])
    (root / "images" / "train" / "Thumbs.db").write_bytes(b"junk")  # the real archive has these
    (root / "images" / "train" / ".hidden.jpg").write_bytes(b"junk")
    return root, truths


# ---------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------


def test_fake_mat_is_indexed_like_the_real_files(tmp_path, rng):
    segs = [_seg(rng), _seg(rng)]
    _write_mat(tmp_path / "x.mat", segs)
    fake = loadmat(tmp_path / "x.mat")["groundTruth"]
    real = loadmat(REAL / "groundTruth" / "2092.mat")["groundTruth"]
    assert fake.shape[0] == real.shape[0] == 1 and fake.dtype == real.dtype == object
    assert set(fake[0, 0].dtype.names) == set(real[0, 0].dtype.names) == {"Segmentation", "Boundaries"}
    assert fake[0, 1]["Segmentation"][0, 0].dtype == real[0, 1]["Segmentation"][0, 0].dtype == np.uint16
    assert np.array_equal(fake[0, 1]["Segmentation"][0, 0], segs[1])


def test_bsds500_with_splits(bsds500):
    root, truths = bsds500
    ds = open_dataset(root)
    assert isinstance(ds, Dataset) and ds.layout == "bsds500"
    assert ds.names == ["101", "102", "201", "301", "302"] and len(ds) == 5
    assert ds.splits == ("test", "train", "val")
    samples = list(ds)
    assert [s.name for s in samples] == ds.names
    for s in samples:
        _check_sample(s)
        assert len(s.truths) == len(truths[s.name])
        assert all(_same_partition(a, b) for a, b in zip(s.truths, truths[s.name]))
    assert open_dataset(root, split="val").names == ["201"]
    assert open_dataset(root, split="train").names == ["101", "102"]


@pytest.mark.parametrize("up", [1, 2])
def test_bsds500_from_the_folders_above_data(bsds500, up):
    root, _ = bsds500
    ds = open_dataset(root.parents[up - 1], split="test")
    assert ds.layout == "bsds500" and ds.names == ["301", "302"]


def test_bsds500_flat(tmp_path, rng):
    segs = {}
    for i in ["7", "3", "5"]:
        _write_jpg(tmp_path / "images" / f"{i}.jpg", rng)
        segs[i] = [_seg(rng, k=5)]
        _write_mat(tmp_path / "groundTruth" / f"{i}.mat", segs[i])
    (tmp_path / "groundTruth" / "README.txt").write_text("other files are ignored")
    ds = open_dataset(tmp_path)
    assert ds.layout == "bsds500-flat" and ds.names == ["3", "5", "7"] and ds.splits == ()
    s = ds.read("5")
    _check_sample(s)
    assert _same_partition(s.truths[0], segs["5"][0])
    assert [s.name for s in load(tmp_path)] == ["3", "5", "7"]


def test_bsds300_colour_and_grey(tmp_path, rng):
    root = tmp_path / "BSDS300"
    for split, ids in {"train": ["11"], "test": ["21", "22"]}.items():
        for i in ids:
            _write_jpg(root / "images" / split / f"{i}.jpg", rng)
    colour = {u: rng.integers(0, 4, (H, W)) for u in ("1105", "1107")}
    for u, seg in colour.items():
        _write_seg(root / "human" / "color" / u / "21.seg", seg)
        _write_seg(root / "human" / "color" / u / "11.seg", seg)
    _write_seg(root / "human" / "gray" / "1105" / "21.seg", np.zeros((H, W), int))  # ignored: colour exists
    grey = rng.integers(0, 3, (H, W))
    _write_seg(root / "human" / "gray" / "1109" / "22.seg", grey)  # only grey for 22
    ds = open_dataset(tmp_path)  # the folder holding BSDS300
    assert ds.layout == "bsds300" and ds.names == ["11", "21", "22"] and ds.splits == ("test", "train")
    s21, s22 = ds.read("21"), ds.read("22")
    _check_sample(s21)
    _check_sample(s22)
    assert len(s21.truths) == 2 and all(_same_partition(t, colour[u]) for t, u in zip(s21.truths, ["1105", "1107"]))
    assert len(s22.truths) == 1 and _same_partition(s22.truths[0], grey)
    assert open_dataset(root, split="train").names == ["11"]


def test_folder_png_and_npy(tmp_path, rng):
    for name in ["b", "a"]:
        imsave(tmp_path / f"{name}.png", _image(rng), check_contrast=False)
    truths = [rng.integers(0, 3, (H, W)) for _ in range(3)]
    imsave(tmp_path / "a_gt.png", (truths[0] * 40).astype(np.uint8), check_contrast=False)
    imsave(tmp_path / "a_gt2.png", (truths[1] * 1000).astype(np.uint16), check_contrast=False)
    np.save(tmp_path / "a_gt_10.npy", truths[2] + 7)
    np.save(tmp_path / "b_gt.npy", np.zeros((H, W), np.int32))
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / ".c.png").write_bytes(b"hidden, ignored")
    ds = open_dataset(tmp_path)
    assert ds.layout == "folder" and ds.names == ["a", "b"]
    s = ds.read("a")
    _check_sample(s)
    assert [p.name for p in ds.truth_paths("a")] == ["a_gt.png", "a_gt2.png", "a_gt_10.npy"]
    assert all(_same_partition(t, u) for t, u in zip(s.truths, truths))
    assert ds.read("b").truths[0].max() == 0


def test_folder_colour_coded_ground_truth(tmp_path, rng):
    imsave(tmp_path / "x.jpg", _image(rng), check_contrast=False)
    labels = rng.integers(0, 4, (H, W))
    palette = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [9, 9, 9]], np.uint8)
    imsave(tmp_path / "x_gt.png", palette[labels], check_contrast=False)
    assert _same_partition(open_dataset(tmp_path).read("x").truths[0], labels)


def test_real_bsds500_train():
    ds = open_dataset(REAL)
    assert ds.layout == "bsds500-flat" and len(ds) == 30 and "2092" in ds.names
    for name in ("2092", ds.names[0]):
        s = ds.read(name)
        assert s.image.shape in ((321, 481, 3), (481, 321, 3)) and s.image.dtype == np.uint8
        assert 5 <= len(s.truths) <= 7
        _check_sample(s, s.image.shape[:2])


# ---------------------------------------------------------------------------
# Errors: one line, naming the file
# ---------------------------------------------------------------------------


def _error(call, *names):
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for name in names:
        assert str(name) in message, message
    return message


def test_not_a_folder(tmp_path):
    _error(lambda: open_dataset(tmp_path / "missing"), tmp_path / "missing")
    (tmp_path / "f.txt").write_text("x")
    _error(lambda: open_dataset(tmp_path / "f.txt"), tmp_path / "f.txt")


def test_no_layout(tmp_path, rng):
    imsave(tmp_path / "a.png", _image(rng), check_contrast=False)
    msg = _error(lambda: open_dataset(tmp_path), tmp_path)
    assert "BSDS500" in msg and "BSDS300" in msg and "_gt" in msg


def test_split_errors(bsds500, tmp_path, rng):
    root, _ = bsds500
    msg = _error(lambda: open_dataset(root, split="training"), root, "training")
    assert "test, train, val" in msg
    _write_jpg(tmp_path / "flat" / "images" / "1.jpg", rng)
    _write_mat(tmp_path / "flat" / "groundTruth" / "1.mat", [_seg(rng)])
    _error(lambda: open_dataset(tmp_path / "flat", split="train"), tmp_path / "flat", "no splits")
    imsave(tmp_path / "a.png", _image(rng), check_contrast=False)
    np.save(tmp_path / "a_gt.npy", np.zeros((H, W), int))
    _error(lambda: open_dataset(tmp_path, split="train"), tmp_path, "no splits")


def test_duplicate_names_across_splits(bsds500, rng):
    root, _ = bsds500
    _write_jpg(root / "images" / "test" / "101.jpg", rng)
    _write_mat(root / "groundTruth" / "test" / "101.mat", [_seg(rng)])
    _error(lambda: open_dataset(root), "101.jpg", "same name")
    assert open_dataset(root, split="test").names == ["101", "301", "302"]
    _write_jpg(root / "images" / "test" / "101.png", rng)
    _error(lambda: open_dataset(root, split="test"), "101.jpg", "101.png", "same name")


def test_image_without_ground_truth(bsds500, tmp_path, rng):
    root, _ = bsds500
    _write_jpg(root / "images" / "val" / "999.jpg", rng)
    _error(lambda: open_dataset(root), root / "images" / "val" / "999.jpg")
    assert open_dataset(root, split="train").names == ["101", "102"]  # other splits are not checked
    # BSDS300
    b3 = tmp_path / "b3"
    _write_jpg(b3 / "images" / "train" / "5.jpg", rng)
    _write_jpg(b3 / "images" / "train" / "6.jpg", rng)
    _write_seg(b3 / "human" / "color" / "1" / "5.seg", np.zeros((H, W), int))
    _error(lambda: open_dataset(b3), b3 / "images" / "train" / "6.jpg")
    # folder
    f = tmp_path / "f"
    f.mkdir()
    for name in ("a", "b"):
        imsave(f / f"{name}.png", _image(rng), check_contrast=False)
    np.save(f / "a_gt.npy", np.zeros((H, W), int))
    _error(lambda: open_dataset(f), f / "b.png")


def test_ground_truth_without_image(bsds500, tmp_path, rng):
    root, _ = bsds500
    _write_mat(root / "groundTruth" / "train" / "555.mat", [_seg(rng)])
    _error(lambda: open_dataset(root), root / "groundTruth" / "train" / "555.mat")
    b3 = tmp_path / "b3"
    _write_jpg(b3 / "images" / "train" / "5.jpg", rng)
    _write_seg(b3 / "human" / "color" / "1" / "5.seg", np.zeros((H, W), int))
    _write_seg(b3 / "human" / "gray" / "1" / "8.seg", np.zeros((H, W), int))
    _error(lambda: open_dataset(b3), b3 / "human" / "gray" / "1" / "8.seg")
    f = tmp_path / "f"
    f.mkdir()
    imsave(f / "a.png", _image(rng), check_contrast=False)
    np.save(f / "a_gt.npy", np.zeros((H, W), int))
    np.save(f / "z_gt.npy", np.zeros((H, W), int))
    _error(lambda: open_dataset(f), f / "z_gt.npy")


def test_corrupt_ground_truths(tmp_path, rng):
    flat = tmp_path / "flat"
    for i in ("1", "2", "3", "4"):
        _write_jpg(flat / "images" / f"{i}.jpg", rng)
    gt = flat / "groundTruth"
    _write_mat(gt / "1.mat", [_seg(rng)])
    (gt / "2.mat").write_bytes(b"not a mat file at all")
    savemat(gt / "3.mat", {"something": np.zeros(3)})
    savemat(gt / "4.mat", {"groundTruth": np.zeros((1, 2))})
    ds = open_dataset(flat)  # files are only read on demand
    _check_sample(ds.read("1"))
    _error(lambda: ds.read("2"), gt / "2.mat")
    _error(lambda: ds.read("3"), gt / "3.mat", "groundTruth")
    _error(lambda: ds.read("4"), gt / "4.mat", "Segmentation")
    # .seg
    b3 = tmp_path / "b3"
    seg_dir = b3 / "human" / "color" / "1"
    seg_dir.mkdir(parents=True)
    bad = {"5": "width 8\nheight 6\n0 0 0 7\n",                    # no data line
           "6": "width 8\nheight 6\ndata\n0 0 0 9\n",              # run beyond the image
           "7": "width 8\ndata\n0 0 0 7\n",                        # no height
           "8": "width 8\nheight 6\ndata\n0 0 zero 7\n"}           # not numbers
    for i, text in bad.items():
        _write_jpg(b3 / "images" / "train" / f"{i}.jpg", rng)
        (seg_dir / f"{i}.seg").write_text(text)
    ds = open_dataset(b3)
    for i in bad:
        _error(lambda i=i: ds.read(i), seg_dir / f"{i}.seg", ".seg")
    # png
    f = tmp_path / "f"
    f.mkdir()
    imsave(f / "a.png", _image(rng), check_contrast=False)
    (f / "a_gt.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    _error(lambda: open_dataset(f).read("a"), f / "a_gt.png")


def test_size_mismatch(tmp_path, rng):
    _write_jpg(tmp_path / "images" / "1.jpg", rng)
    _write_mat(tmp_path / "groundTruth" / "1.mat", [_seg(rng), _seg(rng, h=W, w=H)])
    msg = _error(lambda: open_dataset(tmp_path).read("1"), tmp_path / "groundTruth" / "1.mat",
                 tmp_path / "images" / "1.jpg", f"{W}x{H}", f"{H}x{W}")
    assert "annotator 2" in msg
    f = tmp_path / "f"
    f.mkdir()
    imsave(f / "a.png", _image(rng), check_contrast=False)
    np.save(f / "a_gt.npy", np.zeros((H + 1, W), int))
    _error(lambda: open_dataset(f).read("a"), f / "a_gt.npy", f / "a.png", f"{H + 1}x{W}")


def test_unknown_name(bsds500):
    root, _ = bsds500
    _error(lambda: open_dataset(root).read("nope"), "nope")
