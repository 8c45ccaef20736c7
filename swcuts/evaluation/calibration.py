"""Calibration of swcuts' uncertainty: does a probability mean what it says?

Boundaries. For every pixel, ``p`` is the probability, over the posterior
samples, that a sampled segment boundary passes within ``radius`` pixels
(:func:`boundary_proximity`), and the truth is the share of the human
annotators whose boundary passes within ``radius`` pixels
(:func:`annotator_proximity`). Boundaries are one pixel thin on both sides
(:func:`swcuts.evaluation.metrics.boundaries.boundary_map`); "within r" is a
Euclidean distance ≤ r. Pixels with ``p`` at least ``min_p`` are binned by
``p`` into equal-width bins of [0, 1] (:func:`reliability`); a calibrated
map has, in every bin, a mean truth equal to its mean ``p``. The expected
calibration error is the pixel-weighted mean gap,
``ECE = Σ_b (n_b / N) |mean p_b − mean truth_b|``
(Naeini, Cooper & Hauskrecht, AAAI 2015). :func:`reliability_png` draws the
reliability diagram.

Co-assignment. For random pairs of pixels, ``p`` is the probability, over
the samples, that both lie in one segment (what
:meth:`~swcuts.inference.posterior_samples.PosteriorSamples.coassignment`
reports) and the truth is the share of annotators who put both in one
segment (:func:`coassignment_pairs`); the same :func:`reliability` table,
with every pair counted (``min_p=0``). A posterior can have calibrated
boundary marginals and still join distant regions too often: this is the
check of its long-range structure.

Motion. :func:`spread_error_correlation`: Spearman's rank correlation
between a flow's per-pixel posterior spread and its end-point error against
the ground truth, over the pixels with a known true flow.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from swcuts.evaluation.metrics.boundaries import boundary_map
from swcuts.io.figures import figure, png_bytes

__all__ = ["near_boundary", "boundary_proximity", "annotator_proximity", "reliability",
           "pooled_reliability", "reliability_png", "spread_error_correlation", "coassignment_pairs",
           "RADIUS", "PAIRS"]

#: Tolerance of "a boundary near the pixel", in pixels.
RADIUS = 2.0
#: Random pixel pairs a photo for the co-assignment check.
PAIRS = 20_000


def near_boundary(labels, radius=RADIUS) -> np.ndarray:
    """Pixels within ``radius`` (Euclidean, inclusive) of a boundary of a label image.

    Examples
    --------
    >>> near_boundary(np.array([[0, 0, 0, 0, 1, 1, 1, 1]]), radius=2).astype(int)
    array([[0, 1, 1, 1, 1, 1, 0, 0]])
    """
    b = boundary_map(labels)
    if not b.any():
        return np.zeros(b.shape, dtype=bool)
    return ndimage.distance_transform_edt(~b) <= radius


def boundary_proximity(labels, atoms, radius=RADIUS) -> np.ndarray:
    """Probability, over samples, of a boundary within ``radius`` of each pixel.

    Parameters
    ----------
    labels : (n_samples, n_atoms) int array
        Sampled segment of every atom (:attr:`PosteriorSamples.labels`).
    atoms : (H, W) int array
        Atom of every pixel.
    radius : float

    Returns
    -------
    (H, W) float array in [0, 1]

    Examples
    --------
    >>> atoms = np.array([[0, 0, 0, 1, 1, 1]])
    >>> boundary_proximity(np.array([[0, 1], [0, 0]]), atoms, radius=1)
    array([[0. , 0.5, 0.5, 0.5, 0. , 0. ]])
    """
    labels = np.asarray(labels)
    atoms = np.asarray(atoms)
    out = np.zeros(atoms.shape)
    seen = {}
    for row in labels:
        key = row.tobytes()  # identical samples (common at a sharp posterior) once
        if key not in seen:
            seen[key] = near_boundary(row[atoms], radius)
        out += seen[key]
    return out / max(len(labels), 1)


def annotator_proximity(truths, radius=RADIUS) -> np.ndarray:
    """Share of the annotators' segmentations with a boundary within ``radius`` of each pixel.

    Examples
    --------
    >>> annotator_proximity([np.array([[0, 0, 1, 1]]), np.array([[0, 0, 0, 0]])], radius=0)
    array([[0. , 0.5, 0. , 0. ]])
    """
    truths = list(truths)
    if not truths:
        raise ValueError("no annotator segmentations")
    return np.mean([near_boundary(t, radius) for t in truths], axis=0)


def coassignment_pairs(labels, atoms, truths, n_pairs=PAIRS, seed=0) -> tuple:
    """Co-assignment of random pixel pairs under the samples and the annotators.

    Parameters
    ----------
    labels : (n_samples, n_atoms) int array
        Sampled segment of every atom (:attr:`PosteriorSamples.labels`).
    atoms : (H, W) int array
        Atom of every pixel.
    truths : sequence of (H, W) int arrays
        The annotators' segmentations.
    n_pairs : int
        Pairs of distinct pixels, drawn uniformly.
    seed : int or numpy.random.Generator

    Returns
    -------
    p, truth : (n_pairs,) float arrays
        Share of samples, and of annotators, with both pixels of a pair in
        one segment (pass them to :func:`reliability` with ``min_p=0``).

    Examples
    --------
    >>> atoms = np.array([[0, 0, 1, 1]])
    >>> p, t = coassignment_pairs(np.array([[0, 1], [0, 0]]), atoms, [atoms], n_pairs=4)
    >>> sorted(set(p.tolist())), sorted(set(t.tolist()))
    ([0.5, 1.0], [0.0, 1.0])
    """
    labels = np.asarray(labels)
    atoms = np.asarray(atoms).ravel()
    truths = [np.asarray(t).ravel() for t in truths]
    if not truths:
        raise ValueError("no annotator segmentations")
    if any(t.size != atoms.size for t in truths):
        raise ValueError("an annotator's segmentation differs in size from the atoms")
    rng = np.random.default_rng(seed)
    n = atoms.size
    i = rng.integers(0, n, int(n_pairs))
    j = (i + rng.integers(1, n, int(n_pairs))) % n     # a different pixel, uniformly
    ai, aj = atoms[i], atoms[j]
    p = np.zeros(len(i))
    for row in labels:
        p += row[ai] == row[aj]
    truth = np.mean([t[i] == t[j] for t in truths], axis=0)
    return p / max(len(labels), 1), truth


def reliability(p, truth, *, min_p=0.05, bins=10) -> dict:
    """Reliability table and expected calibration error of predicted probabilities.

    Parameters
    ----------
    p : array_like
        Predicted probabilities in [0, 1] (any shape).
    truth : array_like
        The observed frequency (or 0/1 outcome) of the same pixels.
    min_p : float
        Only pixels with ``p >= min_p`` count.
    bins : int
        Equal-width bins of [0, 1].

    Returns
    -------
    dict
        ``edges`` (bins + 1), per bin ``count``, ``mean_p`` and ``mean_truth``
        (nan in an empty bin), ``n`` pixels counted, ``ece`` (nan when none).

    Examples
    --------
    >>> r = reliability([0.1, 0.1, 0.9, 0.9], [0.0, 0.2, 1.0, 0.8], bins=2)
    >>> r["count"].tolist(), round(r["ece"], 3)
    ([2, 2], 0.0)
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    t = np.asarray(truth, dtype=np.float64).ravel()
    if p.shape != t.shape:
        raise ValueError(f"p and truth differ in size: {p.size} and {t.size}")
    keep = p >= min_p
    p, t = p[keep], t[keep]
    edges = np.linspace(0.0, 1.0, int(bins) + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    count = np.bincount(idx, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.bincount(idx, weights=p, minlength=bins) / count
        mean_t = np.bincount(idx, weights=t, minlength=bins) / count
    n = int(count.sum())
    gap = np.abs(mean_p - mean_t)
    ece = float(np.nansum(count * gap) / n) if n else float("nan")
    return {"edges": edges, "count": count, "mean_p": mean_p, "mean_truth": mean_t, "n": n,
            "ece": ece}


def pooled_reliability(pairs, *, min_p=0.05, bins=10) -> dict:
    """:func:`reliability` of the pixels of several images together (``pairs``: (p, truth) each)."""
    pairs = list(pairs)
    return reliability(np.concatenate([np.ravel(p) for p, _ in pairs]),
                       np.concatenate([np.ravel(t) for _, t in pairs]), min_p=min_p, bins=bins)


def reliability_png(table, title="", xlabel="predicted probability p",
                    ylabel="observed frequency", counted="pixels") -> bytes:
    """The reliability diagram of a :func:`reliability` table as PNG bytes:
    the mean truth of every bin against its mean ``p`` (the diagonal is
    perfect calibration), and the share of the ``counted`` items (pixels,
    pixel pairs) in each bin below.

    Examples
    --------
    >>> png = reliability_png(reliability([0.2, 0.6], [0.1, 0.7]), "demo")
    >>> png[:4]
    b'\\x89PNG'
    """
    fig = figure(4.2, 5.0)
    ax, hx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="calibrated")
    ok = table["count"] > 0
    ax.plot(table["mean_p"][ok], table["mean_truth"][ok], "o-", color="C0",
            label=f"ECE {table['ece']:.3f}")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    e = table["edges"]
    share = table["count"] / max(table["n"], 1)
    hx.bar(0.5 * (e[:-1] + e[1:]), share, width=np.diff(e) * 0.9, color="C0", alpha=0.6)
    hx.set_xlim(0, 1)
    hx.set_xlabel(xlabel)
    hx.set_ylabel(f"share of {counted}", fontsize=8)
    return png_bytes(fig)


def spread_error_correlation(spread, flow, truth, unknown=None) -> dict:
    """Spearman's rank correlation between a flow's spread and its end-point error.

    Parameters
    ----------
    spread : (H, W) float array
        Posterior spread of every pixel's flow (``MotionSegmentation.flow_spread``).
    flow, truth : (H, W, 2) float arrays
        The estimated and true flows.
    unknown : (H, W) bool array, optional
        Pixels without a true flow (left out), as well as non-finite values.

    Returns
    -------
    dict
        ``spearman`` (nan when either is constant), ``n`` pixels, and the
        share of them with zero spread (``zero_spread``).

    Examples
    --------
    >>> truth = np.zeros((1, 4, 2)); flow = truth.copy(); flow[0, :, 0] = [0, 1, 2, 3]
    >>> spread_error_correlation(np.array([[0.1, 0.2, 0.3, 0.4]]), flow, truth)["spearman"]
    1.0
    """
    from scipy.stats import spearmanr

    spread = np.asarray(spread, dtype=np.float64)
    err = np.hypot(*(np.asarray(flow, dtype=np.float64) - np.asarray(truth, dtype=np.float64))
                   .transpose(2, 0, 1))
    ok = np.isfinite(spread) & np.isfinite(err)
    if unknown is not None:
        ok &= ~np.asarray(unknown, dtype=bool)
    s, e = spread[ok], err[ok]
    if s.size < 3 or np.all(s == s[0]) or np.all(e == e[0]):
        rho = float("nan")
    else:
        rho = float(spearmanr(s, e).statistic)
    return {"spearman": rho, "n": int(s.size), "zero_spread": float(np.mean(s == 0)) if s.size else
            float("nan")}
