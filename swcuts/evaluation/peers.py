"""Classical segmenters that swcuts is compared against ("peers").

Each peer has one main parameter, which a benchmark may tune over the
peer's ``grid`` (e.g. by the best mean segmentation covering on training
images); every other setting is fixed here.

============================  =========  =================================
peer                          parameter  method
============================  =========  =================================
``felzenszwalb``              ``scale``  Felzenszwalb-Huttenlocher graph
                                         segmentation (scikit-image)
``opencv-graphseg``           ``k``      the same algorithm in OpenCV
                                         (``cv2.ximgproc``)
``slic-ncut``                 ``thresh`` SLIC superpixels merged by a
                                         normalized cut of their RAG
============================  =========  =================================

:func:`run_peer` takes an image as :func:`swcuts.io.image_read.load_image`
returns it and gives an ``(H, W)`` int64 label image, labels ``0..K-1``.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np

from swcuts.io.errors import InputError
from swcuts.image.prepare import prepare_image, refuse_path

__all__ = ["Peer", "PEERS", "run_peer"]


@dataclass(frozen=True)
class Peer:
    """A classical segmenter and its main parameter.

    Attributes
    ----------
    name : str
        The name users type (``run_peer(name, ...)``, ``--peers``).
    param : str
        The main parameter's keyword.
    default : float
        Its default value (about 10-30 segments on a 481x321 BSDS photo).
    grid : tuple of float
        Log-spaced values for tuning the main parameter.
    description : str
        One line for reports.

    Examples
    --------
    >>> from swcuts.evaluation.peers import PEERS
    >>> peer = PEERS["felzenszwalb"]
    >>> peer.param, peer.default
    ('scale', 800.0)
    """

    name: str
    param: str
    default: float
    grid: tuple
    description: str


_GRAPH_GRID = (100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0)

#: The peers by name.  Defaults and grids were chosen on the 30 BSDS500
#: train photos of ``/work/shared/data/bsds500-train`` (see :func:`run_peer`).
PEERS = {
    p.name: p for p in (
        Peer("felzenszwalb", "scale", 800.0, _GRAPH_GRID,
             "Felzenszwalb-Huttenlocher graph segmentation (scikit-image), sigma 0.8"),
        Peer("opencv-graphseg", "k", 1600.0, _GRAPH_GRID,
             "Felzenszwalb-Huttenlocher graph segmentation (OpenCV ximgproc), sigma 0.5"),
        Peer("slic-ncut", "thresh", 0.001, (1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03),
             "400 SLIC superpixels merged by a normalized cut of their mean-colour RAG (scikit-image)"),
    )
}


def run_peer(name: str, image, *, seed=0, **params) -> np.ndarray:
    """Segment an image with a classical peer method.

    Parameters
    ----------
    name : str
        A key of :data:`PEERS`: ``"felzenszwalb"``, ``"opencv-graphseg"``
        or ``"slic-ncut"``.
    image : ndarray
        ``(H, W)`` grey or ``(H, W, C)`` grey+alpha, RGB or RGBA, any
        integer or float dtype (as :func:`swcuts.io.image_read.load_image` reads
        it); alpha is dropped and the image scaled to 8 bits per channel.
    seed : int or numpy.random.Generator, optional
        Seed of the randomised parts (only ``slic-ncut``'s eigen-solver
        starts); the same seed gives the same labels.
    **params
        The peer's main parameter (``PEERS[name].param``) as a positive
        number; the default is ``PEERS[name].default``.

    Returns
    -------
    labels : ndarray of int64, shape (H, W)
        Labels ``0..K-1``.

    Raises
    ------
    InputError
        On an unknown peer, an unknown or invalid parameter, or an unusable
        image.
    TypeError
        If `image` is a file name, not an array (read it with
        :func:`swcuts.load_image`), or not numeric.

    Notes
    -----
    Measured on the 30 BSDS500 train photos (481x321) of
    ``/work/shared/data/bsds500-train``, one core, seed 0: segments per
    image (median, range), seconds per image, and mean segmentation
    covering of the human segmentations.

    ===================  ==========  ==============  =======  ========
    peer                 value       segments        seconds  covering
    ===================  ==========  ==============  =======  ========
    felzenszwalb         scale 800   25 (6-82)       0.13     0.53
    opencv-graphseg      k 1600      20 (5-75)       0.07     0.50
    slic-ncut            thresh 1e-3 25 (2-50)       1.0      0.54
    ===================  ==========  ==============  =======  ========

    Across the grids the median number of segments goes from 139 (scale
    100) to 4 (scale 6400) for ``felzenszwalb``, from 169 (k 100) to 5
    (k 6400) for ``opencv-graphseg``, and from 14 (thresh 1e-5) to 52
    (thresh 0.03) for ``slic-ncut``, whose cut count depends little on
    `thresh`.  The best mean covering lies inside every grid: scale 400
    (0.55), k 800 (0.54), thresh 3e-3 (0.55).

    Examples
    --------
    >>> import numpy as np
    >>> image = np.zeros((40, 60, 3), np.uint8)
    >>> image[10:30, 20:40] = (200, 30, 30)
    >>> labels = run_peer("felzenszwalb", image, scale=100)
    >>> labels.shape, labels.dtype, bool(labels[20, 30] != labels[0, 0])
    ((40, 60), dtype('int64'), True)
    """
    refuse_path(image, "run_peer")
    if name not in PEERS:
        raise InputError(f"unknown peer '{name}'; choose from {', '.join(PEERS)}")
    peer = PEERS[name]
    unknown = sorted(set(params) - {peer.param})
    if unknown:
        raise InputError(f"peer '{name}' has no parameter '{unknown[0]}'; its parameter is '{peer.param}'")
    value = params.get(peer.param, peer.default)
    try:
        ok = not isinstance(value, (bool, str)) and math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"peer '{name}': {peer.param} must be a positive number, got {value!r}")
    rgb = _rgb8(image)
    labels = _RUN[name](rgb, float(value), seed)
    return np.unique(labels, return_inverse=True)[1].reshape(rgb.shape[:2]).astype(np.int64)


def _rgb8(image) -> np.ndarray:
    """Any image -> C-contiguous uint8 RGB (grey stacked, alpha dropped)."""
    _, display = prepare_image(image)  # validates; [0, 1] grey or RGB
    rgb = np.round(display * 255).astype(np.uint8)
    if rgb.ndim == 2:
        rgb = np.repeat(rgb[..., None], 3, axis=2)
    return np.ascontiguousarray(rgb)


def _min_size(shape) -> int:
    # Smallest region: 0.1 % of the image (154 pixels on a 481x321 photo),
    # the same fraction at any resolution, so a parameter tuned at one size
    # means about the same at another.  Smaller regions carry almost no
    # weight in region scores; on the 30 BSDS photos this floor gave equal
    # or slightly better best covering than 0.03 % (46 px, close to the
    # usual fixed 50): felzenszwalb 0.547 vs 0.539, opencv 0.535 vs 0.530,
    # with 2-3 times fewer segments at each scale/k.
    return max(10, round(1e-3 * shape[0] * shape[1]))


def _felzenszwalb(rgb, scale, seed):
    """skimage's Felzenszwalb-Huttenlocher, sigma 0.8 (the paper's)."""
    from skimage.segmentation import felzenszwalb

    return felzenszwalb(rgb, scale=scale, sigma=0.8, min_size=_min_size(rgb.shape), channel_axis=-1)


def _opencv_graphseg(rgb, k, seed):
    """OpenCV's graph segmentation (same algorithm, joint colour distance), sigma 0.5."""
    import cv2

    seg = cv2.ximgproc.segmentation.createGraphSegmentation(sigma=0.5, k=k, min_size=_min_size(rgb.shape))
    return seg.processImage(np.ascontiguousarray(rgb[..., ::-1]))  # OpenCV wants BGR


def _slic_ncut(rgb, thresh, seed):
    """400 SLIC superpixels (Lab, compactness 30) merged by a normalized cut of their RAG."""
    from skimage import graph
    from skimage.segmentation import slic

    atoms = slic(rgb, n_segments=400, compactness=30, start_label=0, channel_axis=-1)
    rag = graph.rag_mean_color(rgb, atoms, mode="similarity")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    # scikit-image renamed cut_normalized's random_state to rng in 0.23.
    key = "rng" if "rng" in inspect.signature(graph.cut_normalized).parameters else "random_state"
    return graph.cut_normalized(atoms, rag, thresh=thresh, **{key: rng})

_RUN = {"felzenszwalb": _felzenszwalb, "opencv-graphseg": _opencv_graphseg, "slic-ncut": _slic_ncut}
