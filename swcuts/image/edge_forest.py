"""A structured edge forest (Dollár & Zitnick 2013, "Structured forests for
fast edge detection"): the probability of a boundary at each pixel of a
photo, computed by OpenCV's own inference
(``cv2.ximgproc.createStructuredEdgeDetection``), or by ours with Dollár's
sharpening (:mod:`swcuts.image.edge_forest_votes`), from a forest trained on
the shared BSDS500 photos by ``benchmarks/train_edge_forest.py``
(:mod:`swcuts.image.edge_forest_train` grows the trees).

Each tree maps a 32x32 window of the photo's feature channels (CIE Luv,
normalised gradient magnitude and four oriented gradient histograms at two
scales: OpenCV's ``RFFeatureGetter``, so that training and inference read
the same numbers) to a 16x16 segmentation patch; the patch's boundary
pixels vote at every location (stride 2) for ``numberOfTreesToEvaluate``
trees, and the votes are averaged.

The model file is OpenCV's ``FileStorage`` YAML (gzipped): ``options`` and,
per tree, ``childs``, ``featureIds``, ``thresholds``, ``edgeBoundaries`` and
``edgeBins``; and ours: each leaf's ``segments``, the option ``sharpen``
and the combination weights. :func:`write_forest` writes it, :func:`read_forest` reads it
back and checks every index before OpenCV sees it (OpenCV's loader checks
nothing: a bad index would read out of bounds), and :func:`edge_probability`
runs it.
"""

from __future__ import annotations

import gzip
import os
import threading
from pathlib import Path

import numpy as np

from swcuts.image.edge_forest_votes import (SHARPEN, _counts, encode_segments, feature_table,  # noqa: F401
                                            forest_probability, leaf_segments, parse_segments)
from swcuts.io.errors import InputError, one_line
from swcuts.io.image_write import atomic_write
from swcuts.io.weights import WeightsFile

__all__ = ["edge_probability", "check_forest", "combine_with_forest", "forest_trees", "log_odds", "read_forest", "write_forest", "forest_channels", "feature_table",
           "pad_image", "BORDER", "MULTISCALE", "OPTIONS", "DEFAULT_PATH", "REBUILD"]

#: The shipped forest.
DEFAULT_PATH = Path(__file__).with_name("edge_forest.yml.gz")
#: The command that rebuilds it (said by every error about the file).
REBUILD = "python benchmarks/train_edge_forest.py train"
#: The model's options (Dollár's defaults), in the names of OpenCV's loader.
OPTIONS = {"stride": 2, "shrinkNumber": 2, "patchSize": 32, "patchInnerSize": 16,
           "numberOfGradientOrientations": 4, "gradientSmoothingRadius": 0, "regFeatureSmoothingRadius": 2,
           "ssFeatureSmoothingRadius": 8, "gradientNormalizationRadius": 4, "selfsimilarityGridSize": 5,
           "numberOfTrees": 8, "numberOfTreesToEvaluate": 4}
#: The reflected border :func:`pad_image` adds on every side.
BORDER = 4
#: The options a file may set differently from :data:`OPTIONS`.
_FREE = ("numberOfTrees", "numberOfTreesToEvaluate", "stride")
#: The per-tree sequences of a model file, in the order written.
_ARRAYS = ("childs", "featureIds", "thresholds", "edgeBoundaries", "edgeBins")

#: The combinations a file may hold: colour, and grey (the forest run on the grey
#: photo as three equal channels). Weights of [det, SE, SE multiscale, bias]
#: (3 numbers: a file of round 13, without SE multiscale).
_COMBINATIONS = ("combination", "greyCombination")
#: The photo's sizes averaged by the multiscale map (Dollár's ``multiscale``).
MULTISCALE = (0.5, 1.0, 2.0)

_FILE = WeightsFile("structured edge forest", 1, REBUILD)
_LOCK = threading.Lock()  # the OpenCV detector made once per file


def _smooth(a, radius):
    """OpenCV's (and Dollár's) triangle filter of ``radius`` (``imsmooth``)."""
    import cv2

    if radius == 0:
        return a
    if radius <= 1:
        k = np.array([0.25, 0.5, 0.25], np.float32)
    else:
        k = np.concatenate([np.arange(1, radius + 2), np.arange(radius, 0, -1)]).astype(np.float32)
        k /= np.float32((radius + 1.0) ** 2)
    return cv2.sepFilter2D(a, -1, k, k)


def pad_image(image) -> np.ndarray:
    """``image`` as float32 RGB in [0, 1], padded by reflection as the forest
    reads it: :data:`BORDER` pixels on every side (OpenCV's inference leaves
    the last two rows and columns of its input without votes), then at the
    bottom and right to multiples of 4 and at least 20 pixels.

    Examples
    --------
    >>> pad_image(np.zeros((5, 6), np.uint8)).shape
    (20, 20, 3)
    """
    img = np.asarray(image)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    if img.ndim != 3 or img.shape[2] not in (3, 4) or min(img.shape[:2]) < 1:
        raise InputError(f"edge_probability takes an (H, W) or (H, W, 3) image, got shape {img.shape}")
    img = img[:, :, :3]
    if img.dtype == np.uint8:
        img = img.astype(np.float32) / 255.0
    elif img.dtype == np.uint16:
        img = img.astype(np.float32) / 65535.0
    else:
        img = np.asarray(img, dtype=np.float32)
        if not np.isfinite(img).all():
            raise InputError("edge_probability takes a finite image; this one holds NaN or infinity")
        img = np.clip(img, 0.0, 1.0)
    h, w = img.shape[:2]
    b = BORDER
    ph, pw = max((-(h + 2 * b)) % 4, 20 - h - 2 * b), max((-(w + 2 * b)) % 4, 20 - w - 2 * b)
    for axis, (lo, hi) in enumerate(((b, b + ph), (b, b + pw))):
        while lo or hi:  # np.pad reflects at most the whole image at a time
            n = img.shape[axis]
            step = (min(lo, n), min(hi, n))
            img = np.pad(img, [step if a == axis else (0, 0) for a in range(3)], mode="symmetric")
            lo, hi = lo - step[0], hi - step[1]
    return np.ascontiguousarray(img)


def forest_channels(image, opts=None):
    """The regular and self-similarity channels the forest reads, exactly as
    OpenCV's inference computes them: the padded image's ``RFFeatureGetter``
    channels smoothed by the two triangle filters.

    Parameters
    ----------
    image : (H, W, 3) float32 array
        The output of :func:`pad_image`.
    opts : dict, optional
        Model options (default :data:`OPTIONS`).

    Returns
    -------
    reg, sim : (H', W', C) float32 arrays
        Channel pixel ``(i, j)`` is image pixel ``(shrink i - pad, shrink j -
        pad)`` with ``pad = (patchSize - patchInnerSize) / 2``.

    Examples
    --------
    >>> reg, sim = forest_channels(pad_image(np.zeros((16, 16, 3))))
    >>> reg.shape
    (20, 20, 13)
    """
    import cv2

    o = OPTIONS if opts is None else opts
    n_chn = _counts(o)[0]
    pad = (o["patchSize"] - o["patchInnerSize"]) // 2
    src = cv2.copyMakeBorder(image, pad, pad, pad, pad, cv2.BORDER_REFLECT)
    s = o["shrinkNumber"]
    feats = np.zeros((src.shape[0] // s, src.shape[1] // s, n_chn), np.float32)
    cv2.ximgproc.createRFFeatureGetter().getFeatures(
        src, feats, o["gradientNormalizationRadius"], o["gradientSmoothingRadius"], s, n_chn,
        o["numberOfGradientOrientations"])
    reg = _smooth(feats, int(round(o["regFeatureSmoothingRadius"] / s)))
    sim = _smooth(feats, int(round(o["ssFeatureSmoothingRadius"] / s)))
    return reg, sim


# ---------------------------------------------------------------- the file

def _seq(values, fmt):
    out = []
    for i in range(0, len(values), 24):
        out.append(", ".join(fmt(v) for v in values[i:i + 24]))
    return "      - [ " + ",\n          ".join(out) + " ]\n" if out else "      - [ ]\n"


def write_forest(path, trees, opts=None, combination=None, grey_combination=None) -> None:
    """Write a forest to ``path`` in the format OpenCV's
    ``createStructuredEdgeDetection`` reads (gzipped when the name ends in
    ``.gz``), atomically.

    Parameters
    ----------
    path : str or path-like
    trees : list of dict
        Per tree: ``child`` (0 at a leaf, else 1 + the index of the left
        child; the right child follows it), ``fid``, ``thr`` (go left when the
        feature is below it), and ``bins`` (per node, the boundary pixels of
        its 16x16 patch, ``col * 16 + row``); optionally ``segs`` (per node,
        a leaf's 256 segment ids, column-major, else empty: written as the key
        ``segments``, which sharpening reads). Trees are padded with leaves
        to the same number of nodes.
    opts : dict, optional
        Model options (default :data:`OPTIONS`; ``numberOfTrees`` is set to
        ``len(trees)``).
    combination, grey_combination : sequence of 4 (or 3) floats, optional
        The weights of :func:`combine_with_forest` for colour and for grey
        photos (keys OpenCV's loader does not read): of the detector's, the
        forest's and the forest's multiscale log-odds and a bias (3: no
        multiscale).

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "one.yml.gz"
    >>> leaf = {"child": [0], "fid": [0], "thr": [0.0], "bins": [[]]}
    >>> write_forest(p, [leaf], {**OPTIONS, "numberOfTreesToEvaluate": 1})
    >>> read_forest(p)["childs"].shape
    (1, 1)
    """
    o = dict(OPTIONS if opts is None else opts)
    o["numberOfTrees"] = len(trees)
    o["numberOfTreesToEvaluate"] = min(o["numberOfTreesToEvaluate"], len(trees))
    m = max(len(t["child"]) for t in trees)
    text = ["%YAML:1.0\n---\noptions:\n"] + [f"   {k}: {int(v)}\n" for k, v in o.items()]
    pad = lambda a, v: list(a) + [v] * (m - len(a))  # noqa: E731
    start = 0
    bnds, bins = [], []
    for t in trees:
        b = [start]
        for node in pad(t["bins"], []):
            start += len(node)
            b.append(start)
        bnds.append(b[1:] if bnds else b)
        bins.append([int(x) for node in t["bins"] for x in node])
    for key, rows, fmt in (("childs", [pad(t["child"], 0) for t in trees], str),
                           ("featureIds", [pad(t["fid"], 0) for t in trees], str),
                           ("thresholds", [pad(t["thr"], 0.0) for t in trees],
                            lambda v: np.format_float_positional(np.float32(v), unique=True, trim="0")),
                           ("edgeBoundaries", bnds, str), ("edgeBins", bins, str)):
        text.append(f"{key}:\n")
        text.extend(_seq([int(v) if fmt is str else v for v in r], fmt) for r in rows)
    if any(t.get("segs") is not None for t in trees):
        leaf = [[encode_segments(sg) for ch, sg in zip(pad(t["child"], 0), pad(t["segs"], [0] * 256)) if ch == 0]
                for t in trees]
        text.append("segments:\n" + "".join("      - [ " + ",\n          ".join(f'"{x}"' for x in r) + " ]\n"
                                            for r in leaf))
    for key, c in zip(_COMBINATIONS, (combination, grey_combination)):
        if c is not None:
            text.append(f"{key}:\n" + _seq([float(v) for v in c], repr))
    data = "".join(text).encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, 9, mtime=0)
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def _parse(text, p):
    sections, key = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            key = line.strip()[:-1]
            sections[key] = []
        elif key is not None:
            sections[key].append(line)
    if "options" not in sections:
        _FILE.refuse(p, "no options")
    opts = {}
    for line in sections["options"]:
        k, _, v = line.partition(":")
        opts[k.strip()] = int(v)
    out = {"options": opts}
    for key in _ARRAYS:
        if key not in sections:
            _FILE.refuse(p, f"no {key}")
        trees = "\n".join(sections[key]).split("- [")[1:]
        dtype = np.float32 if key == "thresholds" else np.int64
        out[key] = [_numbers(t.replace("]", " ").replace(",", " "), dtype) for t in trees]
    if "segments" in sections:
        out["segments"] = parse_segments("\n".join(sections["segments"]))
    for key in _COMBINATIONS:
        if key in sections:
            w = "\n".join(sections[key]).partition("[")[2].partition("]")[0]
            out[key] = np.array(w.replace(",", " ").split(), dtype=np.float64)
    return out


def _numbers(text, dtype) -> np.ndarray:
    """The whitespace-separated numbers of ``text`` (NumPy's C parser: ~4x
    faster than a Python split); anything else in it is a ValueError."""
    import warnings

    if not text.strip():   # NumPy reads blank text as one 0
        return np.zeros(0, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # NumPy warns, and stops, at a token it cannot read
        try:
            values = np.fromstring(text, dtype=np.float64 if dtype == np.float32 else dtype, sep=" ")
        except (DeprecationWarning, ValueError) as exc:
            raise ValueError(f"a value that is not a number ({one_line(exc)})") from None
    return values.astype(dtype, copy=False)


def read_forest(path=None) -> dict:
    """A forest file written by :func:`write_forest`, read and checked
    (every index inside its array), cached per file.

    Parameters
    ----------
    path : str or path-like, optional
        Default the shipped :data:`DEFAULT_PATH`.

    Returns
    -------
    dict
        ``options``; ``childs``, ``featureIds``, ``thresholds`` as
        ``(n_trees, n_nodes)`` arrays; ``edgeBoundaries`` (``n_trees *
        n_nodes + 1`` offsets into ``edgeBins``); ``path``; and, if the
        file holds them, ``combination`` and ``greyCombination`` (3 or 4
        weights, :func:`combine_with_forest`).

    Raises
    ------
    InputError
        One line naming the file and :data:`REBUILD`, if the file is
        missing, unreadable or inconsistent.

    Examples
    --------
    >>> read_forest("nowhere.yml.gz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    swcuts.io.errors.InputError: structured edge forest ...nowhere.yml.gz: no such file; rebuild them with: ...
    """
    return _FILE.load(DEFAULT_PATH if path is None else path, _checked, read=_read)


def _read(p):
    """The parsed text of a forest file (gzipped or not)."""
    raw = p.read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    if not text.startswith("%YAML"):
        raise ValueError("not an OpenCV YAML file")
    return _parse(text, p)


def _checked(f, p):
    _check(f, p)
    f["path"] = str(p)
    return f


def _check(f, p):
    o = f["options"]
    for k, v in OPTIONS.items():
        if k not in o or (k not in _FREE and o[k] != v):
            _FILE.refuse(p, f"option {k} is {o.get(k)}, this swcuts reads {v}")
    n_trees = o["numberOfTrees"]
    if n_trees < 1 or not 1 <= o["numberOfTreesToEvaluate"] <= n_trees or o["stride"] < o["shrinkNumber"]:
        _FILE.refuse(p, "bad numbers of trees or stride")
    for k in ("childs", "featureIds", "thresholds"):
        if len(f[k]) != n_trees or len({len(t) for t in f[k]}) != 1:
            _FILE.refuse(p, f"{k} does not hold {n_trees} trees of one size")
        f[k] = np.stack(f[k])
    m = f["childs"].shape[1]
    if f["featureIds"].shape[1] != m or f["thresholds"].shape[1] != m:
        _FILE.refuse(p, "the trees' arrays differ in size")
    child, fid = f["childs"], f["featureIds"]
    inner = child != 0
    if (child < 0).any() or (child[inner] < 2).any() or (child[inner] > m - 1).any():
        _FILE.refuse(p, "a child index outside its tree")
    if (fid[inner] < 0).any() or (fid[inner] >= _counts(o)[3]).any() or not np.isfinite(f["thresholds"]).all():
        _FILE.refuse(p, "a feature id outside the features, or a threshold not finite")
    bnds = np.concatenate(f["edgeBoundaries"]) if f["edgeBoundaries"] else np.zeros(0, np.int64)
    bins = np.concatenate(f["edgeBins"]) if f["edgeBins"] else np.zeros(0, np.int64)
    inner_w = o["patchInnerSize"]
    if bnds.size != n_trees * m + 1 or bnds[0] != 0 or (np.diff(bnds) < 0).any() or bnds[-1] != bins.size:
        _FILE.refuse(p, "edgeBoundaries do not index edgeBins")
    if bins.size and (bins.min() < 0 or bins.max() >= inner_w * inner_w):
        _FILE.refuse(p, "an edge bin outside the patch")
    f["edgeBoundaries"], f["edgeBins"] = bnds, bins
    for k in ("sharpen", "greySharpen"):   # the colour and (default the same) grey maps' sharpening
        if not 0 <= o.get(k, 0) <= SHARPEN:
            _FILE.refuse(p, f"option {k} is {o[k]}, not 0..{SHARPEN}")
    if "segments" in f or o.get("sharpen", 0) or o.get("greySharpen", 0):
        leaf_segments(f, p)   # a file without them, or with patches that do not fit: its one line now
    for key in _COMBINATIONS:
        c = f.get(key)
        if c is not None and (c.shape not in ((3,), (4,)) or not np.isfinite(c).all()):
            _FILE.refuse(p, f"{key} is not 3 or 4 finite numbers")


def forest_trees(forest) -> list:
    """The trees of a forest read by :func:`read_forest`, as
    :func:`write_forest` takes them (to rewrite a file with other options or
    combination weights).

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "one.yml.gz"
    >>> leaf = {"child": [0], "fid": [0], "thr": [0.0], "bins": [[3, 4]]}
    >>> write_forest(p, [leaf], {**OPTIONS, "numberOfTreesToEvaluate": 1})
    >>> forest_trees(read_forest(p)) == [leaf]
    True
    """
    child, fid, thr = forest["childs"], forest["featureIds"], forest["thresholds"]
    bnds, bins = forest["edgeBoundaries"], forest["edgeBins"]
    m = child.shape[1]
    out = [{"child": child[k].tolist(), "fid": fid[k].tolist(), "thr": thr[k].tolist(),
            "bins": [bins[bnds[k * m + i]:bnds[k * m + i + 1]].tolist() for i in range(m)]}
           for k in range(child.shape[0])]
    if "segments" in forest:
        g = leaf_segments(forest)
        for k, t in enumerate(out):
            t["segs"] = [g["segs"][g["row"][k * m + i]] if c == 0 else [] for i, c in enumerate(t["child"])]
    return out


def _detector(path):
    import cv2

    f = read_forest(path)
    with _LOCK:
        det = f.get("detector")
    if det is None:
        try:
            det = cv2.ximgproc.createStructuredEdgeDetection(f["path"])
        except cv2.error as exc:
            _FILE.refuse(f["path"], f"OpenCV cannot load it ({one_line(exc)})")
        with _LOCK:
            f["detector"] = det
    return det


def edge_probability(image, *, forest=None, scales=None, sharpen=None) -> np.ndarray:
    """The structured edge forest's boundary map of a photo.

    Parameters
    ----------
    image : (H, W, 3) or (H, W) array
        RGB (uint8, uint16 or float in [0, 1]); a grey image is read as
        three equal channels.
    forest : str or path-like, optional
        A model file written by :func:`write_forest`; default the shipped
        :data:`DEFAULT_PATH`.
    scales : sequence of float, optional
        Average the maps of the photo resized by these factors (bilinear;
        e.g. :data:`MULTISCALE`). Default: the photo's own size only.
    sharpen : int, optional
        0: OpenCV's inference; 1, 2: ours, the leaves' patches sharpened
        (:func:`~swcuts.image.edge_forest_votes.forest_probability`).
        Default the file's option ``sharpen`` (0 when it has none).

    Returns
    -------
    (H, W) float64 array
        The forest's vote for a boundary at each pixel, in [0, 1] (thick:
        thin it with :func:`swcuts.image.boundary_detector.nonmax_suppress`).

    Raises
    ------
    InputError
        A bad image, or a missing or corrupt model file (one line naming
        the file and :data:`REBUILD`).

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "one.yml.gz"
    >>> leaf = {"child": [0], "fid": [0], "thr": [0.0], "bins": [[0, 1]]}
    >>> write_forest(p, [leaf], {**OPTIONS, "numberOfTreesToEvaluate": 1})
    >>> e = edge_probability(np.zeros((20, 30, 3)), forest=p)
    >>> e.shape, bool(e.max() > 0)
    ((20, 30), True)
    """
    if scales is None:
        return _maps(image, forest, (1.0,), sharpen)[1.0]
    scales = tuple(float(s) for s in np.atleast_1d(scales))
    if not scales or not all(0.0 < s <= 4.0 for s in scales):
        raise InputError(f"scales must be numbers in (0, 4], got {scales!r}")
    return np.mean(list(_maps(image, forest, scales, sharpen).values()), axis=0)


def _maps(image, forest, scales, sharpen=None):
    """The forest's map of the photo at each size of ``scales``, brought back
    to the photo's size: {scale: (H, W) float64 array}; by OpenCV's
    inference, or ours when ``sharpen`` (default the file's) is not 0."""
    import cv2

    if sharpen is None:
        sharpen = read_forest(forest)["options"].get("sharpen", 0)
    b = BORDER
    if sharpen == 0:
        det = _detector(forest)

        def edges(im):
            return det.detectEdges(pad_image(im))[b:b + im.shape[0], b:b + im.shape[1]]
    else:
        def edges(im):
            return forest_probability(im, forest=forest, sharpen=sharpen)
    img = np.asarray(image)
    h, w = img.shape[:2] if img.ndim >= 2 else (0, 0)
    out = {}
    for s in scales:
        if s == 1.0:
            e = edges(img)
        else:
            one = pad_image(img)[b:b + h, b:b + w]   # float32 RGB in [0, 1]
            size = (max(1, round(w * s)), max(1, round(h * s)))
            e = edges(cv2.resize(one, size, interpolation=cv2.INTER_LINEAR))
            e = cv2.resize(np.ascontiguousarray(e, np.float32), (w, h), interpolation=cv2.INTER_LINEAR)
        out[s] = np.clip(e.astype(np.float64), 0.0, 1.0)
    return out


def check_forest(forest):
    """``forest`` as :func:`combine_with_forest` takes it (``None`` is the
    shipped forest, as ``True``), checked before any work: ``True``,
    ``False`` or the path of a model file, which is read (and cached).

    Examples
    --------
    >>> check_forest(None), check_forest(False)
    (True, False)
    """
    if forest is None or forest is True or forest is False:
        return forest is not False
    if not isinstance(forest, (str, os.PathLike)) or not os.fspath(forest):
        raise InputError(f"forest must be True, False, None or a model file's path, got {forest!r}")
    read_forest(forest)  # a missing or corrupt file: its one line now (the file is cached)
    return forest


def combine_with_forest(prob, features, forest=None) -> np.ndarray:
    """The shipped detector's map combined with the forest's: the logistic
    function of ``w0 logit(prob) + w1 logit(SE) + w2 logit(SE multiscale) +
    w3``, SE the forest's map of the photo and SE multiscale its average over
    the sizes :data:`MULTISCALE` (computed only when ``w2`` is not 0), the
    weights those the forest file holds for colour (``combination``) or
    grey photos (``greyCombination``), fitted on the training photos'
    pixels by ``benchmarks/train_edge_forest.py fit-mix`` (rounds 13, 14);
    SE sharpened as the file's option ``sharpen`` (grey: ``greySharpen``,
    default the same) says (round 16).

    Parameters
    ----------
    prob : (H, W) float array
        :func:`swcuts.image.boundary_detector.boundary_probability`'s map.
    features : (H, W, 3) or (H, W, 1) float array
        The features it read (:func:`swcuts.image.prepare.prepare_image`:
        CIELAB scaled to [0, 1], turned back into RGB for the forest; or
        the grey values, read as three equal channels: ``prob`` is returned
        as it is when the file has no grey weights).
    forest : True, str or path-like, optional
        Default (or ``True``) the shipped :data:`DEFAULT_PATH`.

    Returns
    -------
    (H, W) float64 array in (0, 1)

    Raises
    ------
    InputError
        A ``forest`` that is not a path, a missing or corrupt forest file,
        or one without ``combination``.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "one.yml.gz"
    >>> leaf = {"child": [0], "fid": [0], "thr": [0.0], "bins": [[]]}
    >>> write_forest(p, [leaf], {**OPTIONS, "numberOfTreesToEvaluate": 1}, combination=[1.0, 0.0, 0.0, 0.0])
    >>> q = combine_with_forest(np.full((20, 30), 0.3), np.zeros((20, 30, 3)), forest=p)
    >>> bool(np.allclose(q, 0.3))
    True
    """
    from skimage.color import lab2rgb

    forest = check_forest(forest)
    if forest is False:
        return np.asarray(prob, dtype=np.float64)
    forest = None if forest is True else forest  # the shipped file
    f = read_forest(forest)
    if f.get("combination") is None:
        _FILE.refuse(f["path"], "no combination weights")
    z = np.asarray(features, dtype=np.float64)
    if z.ndim == 3 and z.shape[2] == 3:
        lab = np.stack([z[..., 0] * 100.0, z[..., 1] * 256.0 - 128.0, z[..., 2] * 256.0 - 128.0], axis=-1)
        rgb, w, sharpen = np.clip(lab2rgb(lab), 0.0, 1.0), f["combination"], f["options"].get("sharpen", 0)
    elif z.ndim == 3 and z.shape[2] == 1 and f.get("greyCombination") is not None:
        rgb, w = np.clip(z[..., 0], 0.0, 1.0), f["greyCombination"]
        sharpen = f["options"].get("greySharpen", f["options"].get("sharpen", 0))
    else:
        return np.asarray(prob, dtype=np.float64)
    if w.size == 3:   # a file of round 13: no multiscale input
        w = np.r_[w[:2], 0.0, w[2]]
    e = _maps(rgb, forest, MULTISCALE if w[2] != 0 else (1.0,), sharpen)
    z = w[0] * log_odds(prob) + w[1] * log_odds(e[1.0]) + w[3]
    if w[2] != 0:
        z += w[2] * log_odds(np.mean(list(e.values()), axis=0))
    return 1.0 / (1.0 + np.exp(-z))


def log_odds(q) -> np.ndarray:
    """``log(q / (1 - q))`` of a map clipped to [1e-4, 1 - 1e-4] (the
    forest's map is 0 away from edges), as :func:`combine_with_forest`
    reads both maps.

    Examples
    --------
    >>> log_odds(np.array([0.5, 0.0])).round(2).tolist()
    [0.0, -9.21]
    """
    q = np.clip(np.asarray(q, dtype=np.float64), 1e-4, 1 - 1e-4)
    return np.log(q / (1.0 - q))
