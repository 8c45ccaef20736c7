"""The learned boundary detector's weights file: what it holds, how it is
read (cached, checked, refused in one line naming the file and the command
that rebuilds it) and written. The detector itself is
:mod:`swcuts.image.boundary_detector`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from swcuts.image.boundary_conv import CONV_ARRAYS
from swcuts.io.weights import WeightsFile, write_weights

__all__ = ["load_detector", "save_detector", "DEFAULT_PATH", "FORMAT_VERSION", "REBUILD", "MODES"]

#: The shipped weights.
DEFAULT_PATH = Path(__file__).with_name("boundary_detector.npz")
#: Version of the weights file's layout; a file of another version is refused.
FORMAT_VERSION = 4
#: The command that rebuilds the weights file (said by every error about it).
REBUILD = "python benchmarks/train_boundaries.py"
#: The two detectors of a weights file, by the number of feature channels.
MODES = {3: "colour", 1: "grey"}
#: Per-mode arrays a weights file must hold (``<mode>_<name>``).
_ARRAYS = ("lo", "hi", "centres", "mean", "std", "w1", "b1", "w2", "b2")
#: Scalar settings of a weights file (shared by both modes).
_SETTINGS = ("n_bins", "sigma", "levels", "texton_from", "fine", "spectral", "spectral_factor", "spectral_rho",
             "context", "conv", "conv_orientation")
#: Per-mode arrays of the second (global) network, when the setting ``spectral`` is above 0.
_GLOBAL = ("g_mean", "g_std", "g_w1", "g_b1", "g_w2", "g_b2")

_WEIGHTS = WeightsFile("boundary detector weights", FORMAT_VERSION, REBUILD)


# ---------------------------------------------------------------- weights

def load_detector(path=None) -> dict:
    """The trained weights of the boundary detector (cached after the first
    load of each file).

    Parameters
    ----------
    path : str or path-like, optional
        A weights file written by :func:`save_detector`; default the shipped
        :data:`DEFAULT_PATH`.

    Returns
    -------
    dict
        ``{"colour": {...}, "grey": {...}, "settings": {...},
        "training": str, "version": int, "path": str}``; each mode holds
        its arrays (bin ranges, texton centres, feature standardisation,
        network weights).

    Raises
    ------
    InputError
        One line naming the file and the command that rebuilds it, if the
        file is missing, unreadable, of another format version or lacks an
        array. There is no fallback to another detector.

    Examples
    --------
    >>> det = load_detector()
    >>> det["version"] == FORMAT_VERSION, sorted(det)[:2]
    (True, ['colour', 'grey'])
    """
    return _WEIGHTS.load(DEFAULT_PATH if path is None else path, _parse)


def _parse(data, p) -> dict:
    det = {"version": FORMAT_VERSION, "path": str(p), "training": str(data.get("training", "")),
           "settings": {}}
    for name in _SETTINGS:
        if name not in data:
            _WEIGHTS.refuse(p, f"no '{name}' setting")
        det["settings"][name] = float(data[name])
    conv = det["settings"]["conv"] > 0
    if conv and det["settings"]["spectral"] <= 0:
        _WEIGHTS.refuse(p, "a convolutional stage without the global network")
    names = _ARRAYS + (_GLOBAL if det["settings"]["spectral"] > 0 else ()) + (CONV_ARRAYS if conv else ())
    for mode in MODES.values():
        arrays = {name: _WEIGHTS.array(data, f"{mode}_{name}", p) for name in names}
        for pre in ("", "g_") if det["settings"]["spectral"] > 0 else ("",):
            w1 = arrays[pre + "w1"]
            n_in, n_hidden = w1.shape if w1.ndim == 2 else (-1, -1)
            if (arrays[pre + "mean"].shape != (n_in,) or arrays[pre + "std"].shape != (n_in,)
                    or arrays[pre + "b1"].shape != (n_hidden,) or arrays[pre + "w2"].shape != (n_hidden,)):
                _WEIGHTS.refuse(p, f"the {mode} arrays do not fit together")
        if arrays["centres"].ndim != 2 or (conv and not _conv_fits(arrays, int(det["settings"]["conv"]),
                                                                   det["settings"]["conv_orientation"] > 0)):
            _WEIGHTS.refuse(p, f"the {mode} arrays do not fit together")
        det[mode] = arrays
    return det


def _conv_fits(a, layers, orientation):
    c, k = a["g_mean"].shape[0] + 1, a["c_b0"].shape[0] if a["c_b0"].ndim == 1 else -1
    if orientation:                              # the orientation cues' number is the features' business
        c = max(c + 1, a["c_mean"].shape[0])
    return (a["c_mean"].shape == (c,) and a["c_std"].shape == (c,) and a["c_w0"].shape == (c, k)
            and a["c_w"].shape == (layers, 3, 3, k, k) and a["c_b"].shape == (layers, k)
            and a["c_wo"].shape == (k,) and a["c_bo"].shape == () and a["c_wg"].shape == ())


def save_detector(path, modes: dict, settings: dict, training: str) -> None:
    """Write a weights file that :func:`load_detector` reads.

    Parameters
    ----------
    path : str or path-like
    modes : dict
        ``{"colour": arrays, "grey": arrays}``, each with the arrays named in
        ``_ARRAYS`` (and ``_GLOBAL`` if ``settings["spectral"]`` > 0).
    settings : dict
        ``n_bins``, ``sigma``, ``levels``, ``texton_from``, ``fine`` (1: also σ/2 at full resolution),
        ``spectral`` (eigenvectors of the globalization, 0: none), ``spectral_factor`` (its grid:
        one node per factor x factor pixels), ``spectral_rho`` (its affinity's scale), ``context``
        (the largest distance of the auto-context cues, 0: none), ``conv`` (the dilated layers of the
        convolutional stage, 0: none; then each mode also holds ``CONV_ARRAYS``), ``conv_orientation``
        (1: the stage also reads :func:`boundary_features`' orientation cues).
    training : str
        What the weights were trained on (kept in the file).
    """
    out = {"format_version": np.int64(FORMAT_VERSION), "training": np.str_(training)}
    for k in _SETTINGS:
        out[k] = np.float64(settings[k])
    names = _ARRAYS + (_GLOBAL if settings["spectral"] > 0 else ()) + (CONV_ARRAYS if settings["conv"] > 0 else ())
    for mode, arrays in modes.items():
        for name in names:
            out[f"{mode}_{name}"] = np.asarray(arrays[name], dtype=np.float32)
    write_weights(path, out)
    _WEIGHTS.forget()
