"""Segmentation data sets with several human annotators per image.

:func:`open_dataset` recognises four folder layouts and lists the images
without reading them; :meth:`Dataset.read` (or iterating, or :func:`load`)
reads one image and all its ground truths as a :class:`Sample`.

=================  ==========================================================
layout             files
=================  ==========================================================
``bsds500``        ``images/<split>/ID.jpg`` and ``groundTruth/<split>/ID.mat``
                   (splits ``train``, ``val``, ``test``); the ``BSDS500/data``
                   folder, ``BSDS500`` or the folder above it may be given.
``bsds500-flat``   ``images/ID.jpg`` and ``groundTruth/ID.mat``, no splits.
``bsds300``        ``images/<split>/ID.jpg`` and
                   ``human/{color,gray}/USER/ID.seg`` (colour annotations;
                   grey ones only for an image without colour ones).
``folder``         ``NAME.png|jpg|jpeg|tif|tiff`` with ground truths
                   ``NAME_gt*.png|npy`` (e.g. ``NAME_gt.png``,
                   ``NAME_gt1.png``, ``NAME_gt_2.npy``).
=================  ==========================================================

Every ground truth is returned as an integer label image with labels
``0..K-1``.  Problems are reported as :class:`swcuts.io.errors.InputError`
with a one-line message naming the file: files that pair up wrongly
(an image without ground truth, a ground truth without image) when the
data set is opened, unreadable files and size mismatches when an image is
read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from swcuts.io.errors import InputError, one_line, show_path
from swcuts.io.image_read import load_image

__all__ = ["Sample", "Dataset", "open_dataset", "load"]

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
_GT_SUFFIXES = (".png", ".npy")
_EXPECTED = ("expected BSDS500 (images/ and groundTruth/ with .mat files), "
             "BSDS300 (images/ and human/ with .seg files) or a folder of images "
             "NAME.png|jpg|jpeg|tif|tiff with ground truths NAME_gt*.png|npy")


class Sample(NamedTuple):
    """One image of a data set with its human segmentations.

    Attributes
    ----------
    name : str
        The image's name (the file stem, e.g. the BSDS id ``"2092"``).
    image : ndarray
        The image as :func:`swcuts.io.image_read.load_image` reads it.
    truths : list of ndarray
        One ``(H, W)`` int64 label image per annotator, labels ``0..K-1``.

    Examples
    --------
    >>> s = Sample("tiny", np.zeros((2, 3)), [np.zeros((2, 3), np.int64)])
    >>> name, image, truths = s  # a named tuple
    >>> name, image.shape, len(truths)
    ('tiny', (2, 3), 1)
    """

    name: str
    image: np.ndarray
    truths: list


class Dataset:
    """A segmentation data set on disk, listed but not read.

    Made by :func:`open_dataset`.  ``len(ds)`` is the number of images,
    ``ds.names`` their sorted names, ``ds.layout`` the layout recognised,
    ``ds.splits`` the splits selected (empty for layouts without splits);
    iterating yields :class:`Sample` objects in name order.

    Parameters
    ----------
    root : pathlib.Path
        The data set folder.
    layout : str
        The layout recognised (see :func:`open_dataset`).
    splits : tuple of str
        The splits selected.
    items : dict
        ``{name: (image path, tuple of ground-truth paths)}``.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = _example_folder(tmp.name)  # halves.png, 8 x 10, and halves_gt1.npy
    >>> ds = open_dataset(folder)
    >>> ds.layout, len(ds), ds.names
    ('folder', 1, ['halves'])
    >>> [(s.name, s.image.shape, len(s.truths)) for s in ds]
    [('halves', (8, 10), 1)]
    >>> tmp.cleanup()
    """

    def __init__(self, root: Path, layout: str, splits: tuple, items: dict):
        self.root = root
        self.layout = layout
        self.splits = splits
        # name -> (image path, tuple of ground-truth paths)
        self._items = dict(sorted(items.items()))

    @property
    def names(self) -> list:
        """Sorted image names."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Sample]:
        for name in self._items:
            yield self.read(name)

    def __repr__(self) -> str:
        split = f", splits={list(self.splits)}" if self.splits else ""
        return f"Dataset('{show_path(self.root)}', layout='{self.layout}'{split}, {len(self)} images)"

    def image_path(self, name: str) -> Path:
        """Path of the image called `name`."""
        return self._entry(name)[0]

    def truth_paths(self, name: str) -> list:
        """Paths of the ground-truth files of the image called `name`."""
        return list(self._entry(name)[1])

    def _entry(self, name):
        try:
            return self._items[name]
        except KeyError:
            raise InputError(f"no image named '{name}' in data set '{show_path(self.root)}'") from None

    def read(self, name: str) -> Sample:
        """Read one image and its ground truths.

        Parameters
        ----------
        name : str
            One of :attr:`names`.

        Returns
        -------
        Sample
            ``(name, image, truths)``; `truths` are int64 label images
            ``(H, W)`` with labels ``0..K-1``, one per annotator.

        Raises
        ------
        InputError
            If the name is unknown, the image or a ground-truth file cannot
            be read, or a ground truth's size differs from the image's.

        Examples
        --------
        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> folder = _example_folder(tmp.name)  # halves.png, 8 x 10, and halves_gt1.npy
        >>> s = open_dataset(folder).read("halves")
        >>> s.image.shape, len(s.truths), s.truths[0].tolist()[0]
        ((8, 10), 1, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
        >>> tmp.cleanup()
        """
        image_path, truth_paths = self._entry(name)
        image = load_image(image_path)
        truths = []
        for path in truth_paths:
            for k, truth in enumerate(_read_truths(path)):
                if truth.shape != image.shape[:2]:
                    which = f" (annotator {k + 1})" if path.suffix == ".mat" else ""
                    raise InputError(
                        f"ground truth '{show_path(path)}'{which} is {_hw(truth.shape)} but image "
                        f"'{show_path(image_path)}' is {_hw(image.shape)} (height x width)")
                truths.append(_compact(truth))
        return Sample(name, image, truths)


def open_dataset(path, split=None) -> Dataset:
    """Open a segmentation data set folder (lists the images, reads none).

    Parameters
    ----------
    path : str or os.PathLike
        The data set folder, in one of the layouts of :mod:`swcuts.evaluation.datasets`:
        BSDS500 (``images/`` and ``groundTruth/``, with or without split
        folders; ``BSDS500/data``, ``BSDS500`` or the folder holding
        ``BSDS500`` also work), BSDS300 (``images/`` and ``human/``), or a
        plain folder of images with ``NAME_gt*.png|npy`` ground truths.
    split : str, optional
        Only this split (e.g. ``"train"``, ``"val"``, ``"test"``).  ``None``
        (default) takes every split present; image names must then be
        unique across splits (BSDS ids are).

    Returns
    -------
    Dataset
        With ``layout`` one of ``"bsds500"``, ``"bsds500-flat"``,
        ``"bsds300"``, ``"folder"``.

    Raises
    ------
    InputError
        If `path` is not a folder or matches no layout, `split` does not
        exist (or is given for a layout without splits), an image has no
        ground truth, a ground truth has no image, or two images share a
        name.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from skimage.io import imsave
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = pathlib.Path(tmp.name)
    >>> picture = np.zeros((8, 10), np.uint8); picture[:, 5:] = 200
    >>> imsave(folder / "halves.png", picture)
    >>> np.save(folder / "halves_gt1.npy", (picture > 0).astype(int))  # one annotator
    >>> open_dataset(folder).layout
    'folder'
    >>> tmp.cleanup()

    On the BSDS500 release, one split:

    >>> ds = open_dataset("BSR/BSDS500/data", split="val")  # doctest: +SKIP
    >>> ds.layout, len(ds)                                   # doctest: +SKIP
    ('bsds500', 100)
    """
    root = Path(os.fspath(path))
    if not root.exists():
        raise InputError(f"data set folder '{show_path(root)}' does not exist; check the path and spelling")
    if not root.is_dir():
        raise InputError(f"'{show_path(root)}' is not a folder; pass a data set folder ({_EXPECTED})")
    if split is not None and not isinstance(split, str):
        raise InputError(f"split must be a string such as 'train', got {split!r}")
    for base in (root, root / "data", root / "BSDS500" / "data"):
        if _is_dir(base / "images") and _is_dir(base / "groundTruth"):
            return _open_bsds500(base, split)
    for base in (root, root / "BSDS300"):
        if _is_dir(base / "images") and _is_dir(base / "human"):
            return _open_bsds300(base, split)
    return _open_folder(root, split)


def load(path, split=None) -> Iterator[Sample]:
    """Yield every image of a data set with its ground truths, in name order.

    Parameters
    ----------
    path : str or os.PathLike
        A data set folder (see :func:`open_dataset`).
    split : str, optional
        Only this split; ``None`` (default) takes every split present.

    Returns
    -------
    iterator of Sample
        ``(name, image, truths)`` per image, see :meth:`Dataset.read`;
        each image is read when the iterator reaches it.

    Raises
    ------
    InputError
        As :func:`open_dataset` (at once) and :meth:`Dataset.read` (when the
        bad image is reached).

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = _example_folder(tmp.name)  # halves.png, 8 x 10, and halves_gt1.npy
    >>> for name, image, truths in load(folder):
    ...     print(name, image.shape, len(truths))
    halves (8, 10) 1
    >>> tmp.cleanup()
    """
    ds = open_dataset(path, split)  # outside the generator: errors show at the call
    return iter(ds)


# ---------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------


def _open_bsds500(base: Path, split) -> Dataset:
    images, truths = base / "images", base / "groundTruth"
    split_names = sorted({d.name for d in _listdir(truths) if d.is_dir() and _files(d, (".mat",))}
                         | {d.name for d in _listdir(images) if d.is_dir() and _files(d, _IMAGE_SUFFIXES)})
    if not split_names:  # flat: images/*.jpg, groundTruth/*.mat
        if split is not None:
            raise InputError(f"data set '{show_path(base)}' has no splits (layout bsds500-flat); omit the split '{split}'")
        return Dataset(base, "bsds500-flat", (), _pair_mat(images, truths))
    chosen = _choose_split(base, split, split_names)
    items = {}
    for s in chosen:
        _merge(items, _pair_mat(images / s, truths / s))
    return Dataset(base, "bsds500", tuple(chosen), items)


def _pair_mat(images: Path, truths: Path) -> dict:
    mats = _by_stem(_files(truths, (".mat",)))
    pics = _by_stem(_files(images, _IMAGE_SUFFIXES))
    for stem, p in sorted(mats.items()):
        if stem not in pics:
            raise InputError(f"ground truth '{show_path(p)}' has no image {stem}.jpg in '{show_path(images)}'")
    for stem, p in sorted(pics.items()):
        if stem not in mats:
            raise InputError(f"image '{show_path(p)}' has no ground truth {stem}.mat in '{show_path(truths)}'")
    if not pics:
        raise InputError(f"no images and no .mat ground truths in '{show_path(images)}' and '{show_path(truths)}'")
    return {stem: (p, (mats[stem],)) for stem, p in pics.items()}


def _open_bsds300(base: Path, split) -> Dataset:
    images = base / "images"
    split_names = sorted(d.name for d in _listdir(images) if d.is_dir() and _files(d, (".jpg",)))
    if not split_names:
        raise InputError(f"BSDS300 folder '{show_path(images)}' holds no split folders with .jpg images "
                         f"(expected images/train and images/test)")
    all_stems = {p.stem for s in split_names for p in _files(images / s, (".jpg",))}
    segs = {}
    for colour in ("color", "gray"):
        for user in _listdir(base / "human" / colour):
            if user.is_dir():
                for p in _files(user, (".seg",)):
                    if p.stem not in all_stems:
                        raise InputError(f"ground truth '{show_path(p)}' has no image {p.stem}.jpg in "
                                         f"'{show_path(images)}'")
                    segs.setdefault(p.stem, {}).setdefault(colour, []).append(p)
    chosen = _choose_split(base, split, split_names)
    items = {}
    for s in chosen:
        for stem, p in _by_stem(_files(images / s, (".jpg",))).items():
            found = segs.get(stem, {})
            paths = found.get("color") or found.get("gray")
            if not paths:
                raise InputError(f"image '{show_path(p)}' has no ground truth human/color/*/{stem}.seg "
                                 f"in '{show_path(base)}'")
            _merge(items, {stem: (p, tuple(sorted(paths)))})
    return Dataset(base, "bsds300", tuple(chosen), items)


_GT_NAME = re.compile(r"_gt[^.]*$")


def _open_folder(root: Path, split) -> Dataset:
    files = _files(root, _IMAGE_SUFFIXES + _GT_SUFFIXES)
    gts = [p for p in files if p.suffix.lower() in _GT_SUFFIXES and _GT_NAME.search(p.stem)]
    gt_set = set(gts)
    pics = _by_stem([p for p in files if p.suffix.lower() in _IMAGE_SUFFIXES and p not in gt_set])
    if not gts:
        raise InputError(f"'{show_path(root)}' matches no data set layout; {_EXPECTED}")
    if split is not None:
        raise InputError(f"data set '{show_path(root)}' has no splits (layout folder); omit the split '{split}'")
    truths = {}
    for p in gts:
        stem = _owner(p.stem, pics)
        if stem is None:
            raise InputError(f"ground truth '{show_path(p)}' has no image "
                             f"{p.stem[:_GT_NAME.search(p.stem).start()]}.png|jpg|jpeg|tif|tiff in '{show_path(root)}'")
        truths.setdefault(stem, []).append(p)
    for stem, p in sorted(pics.items()):
        if stem not in truths:
            raise InputError(f"image '{show_path(p)}' has no ground truth {stem}_gt*.png|npy in '{show_path(root)}'")
    items = {stem: (p, tuple(sorted(truths[stem], key=_natural))) for stem, p in pics.items()}
    return Dataset(root, "folder", (), items)


def _owner(gt_stem: str, pics: dict):
    """The image stem `gt_stem` belongs to (``NAME`` of ``NAME_gt...``), or None."""
    for m in reversed(list(re.finditer("_gt", gt_stem))):
        if gt_stem[:m.start()] in pics:
            return gt_stem[:m.start()]
    return None


def _by_stem(paths: list) -> dict:
    """``{stem: path}``, refusing two files with the same stem (e.g. a.jpg and a.png)."""
    out = {}
    for p in paths:
        if p.stem in out:
            raise InputError(f"images '{show_path(out[p.stem])}' and '{show_path(p)}' have the same name; "
                             f"rename or remove one")
        out[p.stem] = p
    return out


def _choose_split(base: Path, split, split_names: list) -> list:
    if split is None:
        return split_names
    if split not in split_names:
        raise InputError(f"data set '{show_path(base)}' has no split '{split}'; choose from {', '.join(split_names)}")
    return [split]


def _merge(items: dict, new: dict) -> None:
    """Add `new` to `items`, refusing a name that is already there."""
    for name, entry in new.items():
        if name in items:
            first, second = (e[0] if isinstance(e, tuple) else e for e in (items[name], entry))
            raise InputError(f"images '{show_path(first)}' and '{show_path(second)}' have the same name '{name}'; "
                             f"choose one split")
        items[name] = entry


# ---------------------------------------------------------------------------
# Ground-truth files
# ---------------------------------------------------------------------------


def _read_truths(path: Path) -> list:
    """All label images in one ground-truth file (raw labels, not compacted)."""
    suffix = path.suffix.lower()
    if suffix == ".mat":
        return _read_mat(path)
    if suffix == ".seg":
        return [_read_seg(path)]
    try:
        truth = load_image(path)
    except InputError as exc:
        raise InputError(f"ground truth {exc}") from None
    if truth.ndim == 3:  # colour-coded labels: one label per distinct colour
        flat = truth.reshape(-1, truth.shape[2])
        truth = np.unique(flat, axis=0, return_inverse=True)[1].reshape(truth.shape[:2])
    if truth.ndim != 2 or truth.dtype.kind not in "biuf" or (
            truth.dtype.kind == "f" and not np.array_equal(truth, np.round(truth))):
        raise InputError(f"ground truth '{show_path(path)}' is not a label image (shape {truth.shape}, "
                         f"dtype {truth.dtype}); expected (H, W) integer labels")
    return [truth]


def _read_mat(path: Path) -> list:
    from scipy.io import loadmat

    try:
        mat = loadmat(path)
    except Exception as exc:
        raise InputError(f"ground truth '{show_path(path)}' cannot be read as a .mat file ({one_line(exc)})") from None
    if "groundTruth" not in mat:
        keys = ", ".join(k for k in mat if not k.startswith("__")) or "none"
        raise InputError(f"ground truth '{show_path(path)}' has no 'groundTruth' variable (found: {keys})")
    gt = mat["groundTruth"]
    truths = []
    try:
        for k in range(gt.size):
            seg = np.asarray(gt[0, k]["Segmentation"][0, 0])
            if seg.ndim != 2 or seg.dtype.kind not in "biu":
                raise ValueError(f"annotator {k + 1}'s Segmentation has shape {seg.shape}, dtype {seg.dtype}")
            truths.append(seg)
    except Exception as exc:
        raise InputError(f"ground truth '{show_path(path)}' is not a BSDS groundTruth cell of structs with a "
                         f"'Segmentation' field ({one_line(exc)})") from None
    if not truths:
        raise InputError(f"ground truth '{show_path(path)}' holds no segmentation (empty groundTruth)")
    return truths


def _read_seg(path: Path) -> np.ndarray:
    """Read a BSDS300 ``.seg`` file (ascii, ``s r c1 c2`` runs, all counted from 0)."""
    bad = f"ground truth '{show_path(path)}' is not a valid .seg file"
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise InputError(f"ground truth '{show_path(path)}' cannot be read ({one_line(exc)})") from None
    m = re.search(r"^[ \t]*data[ \t]*$", text, flags=re.MULTILINE)
    if m is None:
        raise InputError(f"{bad} (no 'data' line)")
    header, data = text[:m.start()], text[m.end():]
    fields = {}
    for line in header.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            fields[words[0]] = words[1:]
    fmt = fields.get("format", ["ascii", "cr"])
    if fmt[:2] != ["ascii", "cr"]:
        raise InputError(f"{bad} (format '{' '.join(fmt)}'; only 'ascii cr' is supported)")
    try:
        width, height = int(fields["width"][0]), int(fields["height"][0])
        runs = np.array(data.split(), dtype=np.int64).reshape(-1, 4)
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(f"{bad} ({'missing header field ' if isinstance(exc, KeyError) else ''}"
                         f"{one_line(exc)})") from None
    s, r, c1, c2 = runs.T
    if width < 1 or height < 1 or not len(runs) or (s < 0).any() or (r < 0).any() or (r >= height).any() \
            or (c1 < 0).any() or (c2 < c1).any() or (c2 >= width).any():
        raise InputError(f"{bad} (a run lies outside the {width}x{height} image or is empty)")
    # Fill the runs without a loop: pixel index of every covered pixel.
    lengths = c2 - c1 + 1
    starts = r * width + c1
    offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    labels = np.zeros(height * width, dtype=np.int64)  # uncovered pixels: a segment of their own,
    labels[np.repeat(starts, lengths) + offsets] = np.repeat(s + 1, lengths)  # as BSDS' reader does
    return labels.reshape(height, width)


def _compact(truth: np.ndarray) -> np.ndarray:
    return np.unique(truth, return_inverse=True)[1].reshape(truth.shape).astype(np.int64)


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _listdir(folder: Path) -> list:
    """Visible entries of `folder` (hidden ones skipped), [] if it is missing."""
    try:
        return sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise InputError(f"folder '{show_path(folder)}' cannot be listed ({one_line(exc)})") from None


def _files(folder: Path, suffixes: tuple) -> list:
    return [p for p in _listdir(folder) if p.suffix.lower() in suffixes and p.is_file()]


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def _natural(p: Path):
    """Sort key: NAME_gt, NAME_gt2, NAME_gt10 (numbers by value)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.stem)], p.suffix


def _hw(shape) -> str:
    return f"{shape[0]}x{shape[1]}"


def _example_folder(folder, shape=(8, 10)) -> Path:
    """Write the one-image data set of the examples into `folder` (layout
    ``folder``) and return its path: ``halves.png``, black on the left half
    and grey (200) on the right, and its one annotator's ``halves_gt1.npy``."""
    from skimage.io import imsave

    folder = Path(folder)
    picture = np.zeros(shape, np.uint8)
    picture[:, shape[1] // 2:] = 200
    imsave(folder / "halves.png", picture)
    np.save(folder / "halves_gt1.npy", (picture > 0).astype(int))
    return folder
