"""The boundary detector's convolutional stage (issue 34, round 10): a
small fully convolutional network on the per-pixel stages' outputs.

The per-pixel networks of :mod:`swcuts.image.boundary_detector` see one
pixel's cues at a time; a contour is thin, continuous and oriented, a
texture edge is not, and that spatial structure is what this stage reads.
At every pixel its input is what the detector's global network reads (the
local features, the local map's log-odds, the spectral and auto-context
cues) and the global network's log-odds ``g``. Standardised, they go
through a 1x1 convolution to ``K`` channels and a ReLU, then ``L``
residual layers ``h ← h + ReLU(conv3x3_d(h) + b)`` with dilations
``d = 1, 2, 4, …, 2^(L-1)`` (receptive field ``1 + 2 (2^L − 1)`` pixels;
the image is mirrored at its border, numpy's ``"reflect"``), and a 1x1
convolution to one logit added to ``w_g g`` (``w_g`` a learned scalar,
1 in a stage that only corrects the global network's log-odds).

Trained with PyTorch (``benchmarks/train_boundary_conv.py``); inference
here is numpy only (float32): each dilated 3x3 convolution is three
matrix products, one per kernel row, over the padded rows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["conv_stage", "conv3x3", "identity_stage", "CONV_ARRAYS"]

#: Per-mode arrays of the stage in a weights file (``<mode>_<name>``): input
#: standardisation (C,), the 1x1 input convolution (C, K) and its bias (K,),
#: the dilated layers (L, 3, 3, K, K) as [row, column, in, out] and their
#: biases (L, K), the 1x1 head (K,) and its bias (), the weight of the global log-odds ().
CONV_ARRAYS = ("c_mean", "c_std", "c_w0", "c_b0", "c_w", "c_b", "c_wo", "c_bo", "c_wg")


def conv3x3(h, w, b, dilation):
    """A dilated 3x3 convolution (cross-correlation, as PyTorch's) of a
    multi-channel map mirrored at its border.

    Parameters
    ----------
    h : (H, W, K) float32 array
    w : (3, 3, K, M) array
        ``w[r, c]`` weighs the input at offset ``((r − 1) d, (c − 1) d)``.
    b : (M,) array
    dilation : int

    Returns
    -------
    (H, W, M) float32 array

    Examples
    --------
    >>> import numpy as np
    >>> h = np.arange(25, dtype=np.float32).reshape(5, 5, 1)
    >>> w = np.zeros((3, 3, 1, 1), np.float32); w[1, 2] = 1.0      # the right neighbour
    >>> conv3x3(h, w, np.zeros(1), 1)[0, :, 0]
    array([1., 2., 3., 4., 3.], dtype=float32)
    """
    d = int(dilation)
    hh, ww, k = h.shape
    m = w.shape[3]
    hp = np.pad(np.asarray(h, dtype=np.float32), ((d, d), (d, d), (0, 0)), mode="reflect")
    wp = ww + 2 * d
    w = np.asarray(w, dtype=np.float32)
    out = np.empty((hh, ww, m), dtype=np.float32)
    out[...] = np.asarray(b, dtype=np.float32)
    for r in range(3):
        rows = hp[r * d:r * d + hh].reshape(-1, k)                  # contiguous: (hh * wp, k)
        a = (rows @ w[r].transpose(1, 0, 2).reshape(k, 3 * m)).reshape(hh, wp, 3 * m)
        for c in range(3):
            out += a[:, c * d:c * d + ww, c * m:(c + 1) * m]
    return out


def conv_stage(x, arrays) -> np.ndarray:
    """The stage's log-odds of a boundary at each pixel.

    Parameters
    ----------
    x : (H, W, C) float array
        The global network's inputs, then its log-odds (the last channel).
    arrays : dict
        The stage's arrays (:data:`CONV_ARRAYS`), e.g. a mode of
        :func:`swcuts.image.boundary_weights.load_detector`.

    Returns
    -------
    (H, W) float32 array
        ``c_wg`` times ``x[..., -1]``, plus the stage's correction.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(12, 10, 3)).astype(np.float32)
    >>> a = identity_stage(3, 4, 2)                          # zero head: the global log-odds unchanged
    >>> bool(np.array_equal(conv_stage(x, a), x[..., -1]))
    True
    """
    x = np.asarray(x, dtype=np.float32)
    hh, ww, c = x.shape
    f32 = {k: np.asarray(arrays[k], dtype=np.float32) for k in CONV_ARRAYS}
    z = (x.reshape(-1, c) - f32["c_mean"]) / f32["c_std"]
    h = np.maximum(z @ f32["c_w0"] + f32["c_b0"], 0.0).reshape(hh, ww, -1)
    for layer in range(f32["c_w"].shape[0]):
        h += np.maximum(conv3x3(h, f32["c_w"][layer], f32["c_b"][layer], 2 ** layer), 0.0)
    return f32["c_wg"] * x[..., -1] + (h @ f32["c_wo"] + f32["c_bo"])


def identity_stage(channels, width, layers) -> dict:
    """A stage whose head is zero: :func:`conv_stage` returns the global
    network's log-odds unchanged (for a mode trained without one).

    Parameters
    ----------
    channels, width, layers : int
        C (inputs with the log-odds), K, L.

    Returns
    -------
    dict
        The arrays of :data:`CONV_ARRAYS`, float64.
    """
    return {"c_mean": np.zeros(channels), "c_std": np.ones(channels), "c_w0": np.zeros((channels, width)),
            "c_b0": np.zeros(width), "c_w": np.zeros((layers, 3, 3, width, width)), "c_b": np.zeros((layers, width)),
            "c_wo": np.zeros(width), "c_bo": np.zeros(()), "c_wg": np.ones(())}
