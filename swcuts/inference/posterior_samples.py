"""The result of posterior sampling: :class:`PosteriorSamples` and the
maps computed from it (boundary probability, segment stability), with no
Python loop over pixels. The sampling itself is :mod:`swcuts.segmentation.posterior`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from swcuts.inference import diagnostics as dg
from swcuts.io.errors import InputError

__all__ = ["PosteriorSamples", "pixel_boundary_probability", "segment_stability", "R_HAT_WARN",
           "ESS_WARN"]

#: Split R-hat above this gives a warning (the classic threshold).
R_HAT_WARN = 1.1
#: Effective sample size (of the worst label-invariant statistic) below
#: this gives a warning.
ESS_WARN = 20.0

# ---------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------


def _worst(values) -> float:
    """The largest of ``values``, ``nan`` if any is ``nan`` (Python's ``max``
    keeps or drops a ``nan`` by its place in the sequence)."""
    return float(np.max(np.fromiter(values, dtype=float)))


@dataclass
class PosteriorSamples:
    """Samples of the posterior over segmentations (:func:`sample_posterior`).

    Attributes
    ----------
    labels : (n_samples, n_atoms) int16 or int32 array
        Segment of every atom in every kept sample (labels ``0..K-1`` per
        sample, in order of first occurrence), chain by chain.
    chain : (n_samples,) int array
        The chain of every sample.
    atoms : (H, W) int array
        Atom of every pixel, ``0..n_atoms-1``.
    graph : RegionGraph
        Adjacency graph of the atoms.
    best_labels : (n_atoms,) int array
        The lowest-energy state seen by any chain (annealing or sampling).
    best_energy : float
        Its −log π.
    energies : (chains, draws) float array
        −log π of every kept sample, per chain.
    n_segments : (chains, draws) int array
        Number of segments of every kept sample, per chain.
    thin : int
        Kernel steps between kept samples.
    tau_steps : float
        Measured integrated autocorrelation time in kernel steps (nan when
        ``thin`` was given or the statistics were constant).
    acceptance : (chains,) float array
        Accepted moves per step during sampling at T = 1.
    r_hat : dict
        Split R-hat of ``energy`` and ``n_segments`` across the chains.
    ess : dict
        Effective sample size of ``energy`` and ``n_segments`` (all chains).
    warnings : list of str
        What the diagnostics found wrong (R-hat above :data:`R_HAT_WARN`,
        a small ESS, a pilot too short for the autocorrelation time, a
        time budget that ran out); empty when nothing did.
    tempering : dict
        With replica exchange (``replicas > 1``): the ``temperatures`` of
        the ladder, the ``swap_acceptance`` of every adjacent pair and the
        ``round_trips`` (T_1 to T_K and back), over all chains; empty without.
    granularity : tuple of float
        The multipliers of the prior weights a0 and a1 whose posteriors the
        samples mix in equal shares (:mod:`swcuts.segmentation.granularity`);
        ``(1.0,)``: the posterior as built.
    levels : list of dict
        With more than one granularity, each one's ``granularity``, ``a0``,
        ``a1``, ``samples``, ``chains``, ``thin``, ``r_hat``, ``ess``, mean
        ``acceptance`` and the samples' ``mean_segments``; ``r_hat`` above is then the worst level's and ``ess``
        the smallest (R-hat compares chains of one posterior), ``nan`` if any
        level's is (a statistic that no chain of that level changed).
    reference : (n_atoms,) int array or None
        The labelling whose segments :meth:`segment_stability` describes
        (:meth:`refer_to`: e.g. :func:`swcuts.segment`'s answer); None: the
        best state.
    """

    labels: np.ndarray
    chain: np.ndarray
    atoms: np.ndarray
    graph: object
    best_labels: np.ndarray
    best_energy: float
    energies: np.ndarray
    n_segments: np.ndarray
    thin: int
    tau_steps: float
    acceptance: np.ndarray
    r_hat: dict
    ess: dict
    warnings: list
    sampler: str = None
    seconds: float = 0.0
    steps: int = 0
    seed: object = None
    posterior: str = None
    image: np.ndarray = field(repr=False, default=None)
    model: object = field(repr=False, default=None)
    phase_seconds: dict = field(default_factory=dict)
    tempering: dict = field(default_factory=dict)
    granularity: tuple = (1.0,)
    levels: list = field(default_factory=list)
    reference: np.ndarray = field(repr=False, default=None)

    @classmethod
    def pooled(cls, parts, granularity, level_name="granularity x{:g}") -> "PosteriorSamples":
        """The samples of several posteriors (``parts``, one per entry of
        ``granularity``) as one equal-weight mixture.

        Each part keeps the same number of samples per chain (the smallest,
        when a time budget cut one short), so that every posterior weighs
        the same in the estimates; the chains are numbered on from part to
        part. The best state and ``model`` are the first part's (the
        posterior as built, multiplier 1 first by convention); the
        diagnostics are kept per part in :attr:`levels`, with the worst
        R-hat and the smallest ESS over the parts in :attr:`r_hat` and
        :attr:`ess`. A part's warnings begin with ``level_name`` formatted
        with its entry of ``granularity``.
        """
        parts = list(parts)
        if len(parts) != len(granularity) or not parts:
            raise ValueError(f"need one set of samples per granularity, got {len(parts)} for {len(granularity)}")
        if len(parts) == 1:
            parts[0].granularity = tuple(float(g) for g in granularity)
            return parts[0]
        kept = min(p.energies.shape[1] for p in parts)
        n = parts[0].labels.shape[1]
        labels, chain, energies, n_segs, levels, warnings = [], [], [], [], [], []
        offset = 0
        for g, p in zip(granularity, parts):
            c = p.n_chains
            labels.append(p.labels.reshape(c, -1, n)[:, :kept].reshape(-1, n))
            chain.append(np.repeat(np.arange(offset, offset + c), kept))
            energies.append(p.energies[:, :kept])
            n_segs.append(p.n_segments[:, :kept])
            offset += c
            levels.append({"granularity": float(g), "a0": float(getattr(p.model, "a0", math.nan)),
                           "a1": float(getattr(p.model, "a1", math.nan)), "samples": c * kept, "chains": c,
                           "thin": int(p.thin), "r_hat": dict(p.r_hat), "ess": dict(p.ess),
                           "acceptance": float(np.mean(p.acceptance)),
                           "mean_segments": float(p.n_segments[:, :kept].mean())})
            warnings += [f"{level_name.format(g)}: {w}" for w in p.warnings]
        first = parts[0]
        stats = first.r_hat.keys()
        return cls(
            labels=np.concatenate(labels), chain=np.concatenate(chain), atoms=first.atoms,
            graph=first.graph, best_labels=first.best_labels, best_energy=first.best_energy,
            energies=np.concatenate(energies), n_segments=np.concatenate(n_segs),
            thin=max(int(p.thin) for p in parts), tau_steps=max(float(p.tau_steps) for p in parts),
            acceptance=np.concatenate([p.acceptance for p in parts]),
            r_hat={k: _worst(p.r_hat[k] for p in parts) for k in stats},
            ess={k: -_worst(-p.ess[k] for p in parts) for k in stats}, warnings=warnings,
            sampler=first.sampler, seconds=sum(p.seconds for p in parts),
            steps=sum(p.steps for p in parts), seed=first.seed, posterior=first.posterior,
            image=first.image, model=first.model,
            phase_seconds={k: sum(p.phase_seconds.get(k, 0.0) for p in parts) for k in first.phase_seconds},
            tempering=first.tempering, granularity=tuple(float(g) for g in granularity), levels=levels)

    @property
    def n_samples(self) -> int:
        """Number of kept samples (all chains)."""
        return int(self.labels.shape[0])

    @property
    def n_chains(self) -> int:
        """Number of chains."""
        return int(self.energies.shape[0])

    @property
    def best_segmentation(self) -> np.ndarray:
        """(H, W) segment of every pixel in the best state."""
        return self.best_labels[self.atoms]

    @property
    def reference_labels(self) -> np.ndarray:
        """(n_atoms,) the labelling the stability describes: :attr:`reference`, else the best state."""
        return self.best_labels if self.reference is None else self.reference

    @property
    def reference_segmentation(self) -> np.ndarray:
        """(H, W) segment of every pixel in :attr:`reference_labels`."""
        return self.reference_labels[self.atoms]

    def refer_to(self, segmentation) -> "PosteriorSamples":
        """Describe the stability of the segments of ``segmentation`` (set
        :attr:`reference`; returns ``self``).

        The best state of pooled granularity levels is one level's, and
        that of one posterior need not be the answer a user has: with
        :func:`swcuts.segment`'s answer as the reference, the stability map
        says how sure each of its segments is. Each atom takes the segment
        that covers most of its pixels.

        Parameters
        ----------
        segmentation : (H, W) int array
            A label image of the samples' image (the shape of :attr:`atoms`).

        Examples
        --------
        >>> from swcuts.segmentation.posterior import _demo
        >>> ps = _demo()
        >>> halves = (np.arange(24) >= 12)[None, :].repeat(24, axis=0).astype(int)
        >>> ps.refer_to(halves).segment_stability().shape
        (2,)
        """
        from swcuts.image.atoms import majority_labels
        from swcuts.models.partition import canonical

        seg = np.asarray(segmentation)
        if seg.shape != self.atoms.shape:
            raise InputError(f"the segmentation's shape {seg.shape} is not the samples' image's "
                             f"{self.atoms.shape}")
        # The samples' atoms are 0..n-1, every one on some pixel: majority_labels' order.
        self.reference = np.asarray(canonical(majority_labels(seg, self.atoms)), dtype=np.int64)
        return self

    def edge_probability(self) -> np.ndarray:
        """Probability that each atom edge (``graph.edges``) lies on a segment boundary.

        Returns
        -------
        (n_edges,) float array
            Fraction of samples in which the two atoms of the edge carry
            different segments.

        Examples
        --------
        >>> from swcuts.segmentation.posterior import _demo
        >>> ps = _demo()
        >>> p = ps.edge_probability()
        >>> p.shape == (ps.graph.n_edges,) and bool(((p >= 0) & (p <= 1)).all())
        True
        """
        return dg.edge_boundary_probability(self.labels, self.graph.edges)

    def boundary_probability(self, mode="any") -> np.ndarray:
        """Per-pixel probability that a segment boundary passes there.

        Parameters
        ----------
        mode : {"any", "thin"}
            ``"any"``: a pixel is on a boundary in a sample when any of its
            4-neighbours lies in an atom of another segment (boundaries two
            pixels wide, one on each side). ``"thin"``: only its right and
            lower neighbours count (one pixel per boundary, as
            :func:`swcuts.evaluation.metrics.boundary_map`; for scoring against thin
            ground-truth boundaries).

        Returns
        -------
        (H, W) float array in [0, 1]
            The fraction of samples with a boundary at each pixel (exact for
            the samples, junctions included; see
            :func:`pixel_boundary_probability`).

        Examples
        --------
        >>> from swcuts.segmentation.posterior import _demo
        >>> ps = _demo()
        >>> b = ps.boundary_probability()
        >>> b.shape == ps.atoms.shape and bool(0.0 <= b.min() and b.max() <= 1.0)
        True
        """
        return pixel_boundary_probability(self.labels, self.atoms, mode=mode)

    def coassignment(self, atom) -> np.ndarray:
        """Probability that each atom is in the same segment as ``atom``.

        Parameters
        ----------
        atom : int
            An atom index, ``0..n_atoms-1`` (the atom of pixel ``(r, c)``
            is ``atoms[r, c]``).

        Returns
        -------
        (n_atoms,) float array
            Fraction of samples in which each atom shares ``atom``'s
            segment (1 at ``atom`` itself). ``result[atoms]`` maps it to
            the pixels.

        Notes
        -----
        Under the default sampling posterior this is calibrated against
        human annotators for nearby pixels but overstates "same segment"
        for distant ones (pixels 200 px or more apart: 0.57 against the
        annotators' 0.23 on validation photos; docs/algorithms/posterior.md,
        "Issue 35, round 16").

        Examples
        --------
        >>> from swcuts.segmentation.posterior import _demo
        >>> ps = _demo()
        >>> float(ps.coassignment(0)[0])
        1.0
        """
        n = self.labels.shape[1]
        if isinstance(atom, bool) or not isinstance(atom, (int, np.integer)) or not 0 <= atom < n:
            raise ValueError(f"atom must be an integer in 0..{n - 1}, got {atom!r}")
        return (self.labels == self.labels[:, [int(atom)]]).mean(axis=0)

    def n_segments_distribution(self) -> tuple:
        """Posterior distribution of the number of segments.

        Returns
        -------
        (values, probabilities) : (int array, float array)
            The numbers of segments seen, ascending, and the fraction of
            samples with each.

        Examples
        --------
        >>> from swcuts.segmentation.posterior import _demo
        >>> ps = _demo()
        >>> k, p = ps.n_segments_distribution()
        >>> bool(np.isclose(p.sum(), 1.0))
        True
        """
        k = dg.n_labels(self.labels)
        values, counts = np.unique(k, return_counts=True)
        return values, counts / counts.sum()

    def segment_stability(self) -> np.ndarray:
        """Stability of each segment of the best state (or of :attr:`reference`).

        For segment ``s`` of :attr:`reference_labels` and each sample, the IoU
        (in pixels) of ``s`` with the sample's segment that overlaps it
        best; the stability is the mean over samples: 1 for a segment
        every sample has exactly, lower for one that is split, merged or
        moved in many samples.

        Returns
        -------
        (K,) float array in (0, 1]
            Stability of segments ``0..K-1`` of :attr:`reference_labels`.

        Examples
        --------
        >>> from swcuts.segmentation.posterior import _demo
        >>> ps = _demo()
        >>> s = ps.segment_stability()
        >>> s.shape == (int(ps.best_labels.max()) + 1,) and bool((s <= 1).all())
        True
        """
        return segment_stability(self.labels, self.reference_labels, self.graph.pixel_count)

    def stability_map(self) -> np.ndarray:
        """(H, W) stability of the segment of every pixel (in :attr:`reference_labels`)."""
        return self.segment_stability()[self.reference_labels][self.atoms]

    def summary(self) -> dict:
        """The diagnostics as a JSON-ready dict (for ``summary.json``).

        JSON has no infinity or nan: a non-finite R-hat or ESS is written as
        ``null``, and ``"nonfinite"`` (present only then) says which it was,
        by the field's path: ``"inf"`` (R-hat of chains stuck at different
        constants) or ``"nan"`` (no chain ever changed the quantity).

        Examples
        --------
        >>> from swcuts.segmentation.posterior import _demo
        >>> s = _demo().summary()
        >>> all(v is None or v >= 0 for v in s["r_hat"].values())
        True
        """
        k, p = self.n_segments_distribution()
        notes = {}

        def num(x, path):
            x = float(x)
            if math.isfinite(x):
                return x
            notes[path] = "nan" if math.isnan(x) else "inf"
            return None

        def level_fields(i, level):
            return {k_: (num(v, f"levels/{i}/{k_}") if isinstance(v, float) else
                         {s: num(x, f"levels/{i}/{k_}/{s}") for s, x in v.items()} if isinstance(v, dict) else v)
                    for k_, v in level.items()}

        out = {
            "sampler": self.sampler,
            **({"model": self.posterior} if self.posterior is not None else {}),
            "n_atoms": int(self.labels.shape[1]),
            "chains": self.n_chains,
            "n_samples": self.n_samples,
            "thin": int(self.thin),
            "tau_steps": num(self.tau_steps, "tau_steps"),
            "steps": int(self.steps),
            "seconds": round(float(self.seconds), 3),
            "phase_seconds": {k_: round(float(v), 3) for k_, v in self.phase_seconds.items()},
            "best_energy": float(self.best_energy),
            "best_segments": int(self.best_labels.max()) + 1,
            "r_hat": {k_: num(v, f"r_hat/{k_}") for k_, v in self.r_hat.items()},
            "ess": {k_: num(v, f"ess/{k_}") for k_, v in self.ess.items()},
            "acceptance": [float(a) for a in self.acceptance],
            "n_segments": {str(int(a)): float(b) for a, b in zip(k, p)},
            "warnings": list(self.warnings),
            **({"tempering": self.tempering} if self.tempering else {}),
            "granularity": [float(g) for g in self.granularity],
            **({"levels": [level_fields(i, level) for i, level in enumerate(self.levels)]} if self.levels else {}),
            "seed": self.seed if isinstance(self.seed, (int, type(None))) else str(self.seed),
        }
        if notes:
            out["nonfinite"] = notes
        return out


# ---------------------------------------------------------------------------
# Maps (vectorised)
# ---------------------------------------------------------------------------


def pixel_boundary_probability(labels, atoms, mode="any", weights=None) -> np.ndarray:
    """Per-pixel boundary probability of atom labellings.

    A pixel is on a boundary in a sample when a neighbouring pixel (its
    four neighbours with ``mode="any"``, its right and lower ones with
    ``mode="thin"``) lies in an atom of another segment. Pixels are grouped
    by the tuple (own atom, neighbours' atoms); each distinct tuple is
    evaluated once over all samples, so junction pixels (neighbours in two
    or more other atoms) get the exact probability of "any neighbour
    differs", not a per-edge approximation, and no Python loop runs over
    pixels.

    Parameters
    ----------
    labels : (n_samples, n_atoms) int array
        Segment of every atom, one row per sample.
    atoms : (H, W) int array
        Atom of every pixel.
    mode : {"any", "thin"}
    weights : (n_samples,) float array, optional
        Probability of each row (default: equal). With every partition as
        a row and its exact probability, this is the exact map.

    Returns
    -------
    (H, W) float array in [0, 1]

    Examples
    --------
    >>> atoms = np.array([[0, 0, 1], [0, 0, 1]])
    >>> labels = np.array([[0, 1], [0, 0]])   # split in one sample of two
    >>> pixel_boundary_probability(labels, atoms)
    array([[0. , 0.5, 0.5],
           [0. , 0.5, 0.5]])
    """
    labels = np.asarray(labels)
    atoms = np.asarray(atoms)
    if labels.ndim != 2 or atoms.ndim != 2:
        raise ValueError("labels must be (n_samples, n_atoms) and atoms (H, W)")
    if mode not in ("any", "thin"):
        raise ValueError(f"mode must be 'any' or 'thin', got {mode!r}")
    h, w = atoms.shape
    nb = [atoms]
    right = atoms.copy()
    right[:, :-1] = atoms[:, 1:]
    down = atoms.copy()
    down[:-1, :] = atoms[1:, :]
    nb += [right, down]
    if mode == "any":
        left = atoms.copy()
        left[:, 1:] = atoms[:, :-1]
        up = atoms.copy()
        up[1:, :] = atoms[:-1, :]
        nb += [left, up]
    tup = np.stack([a.ravel() for a in nb], axis=1).astype(np.int64)
    # Only pixels next to another atom can be on a boundary.
    edge_px = np.flatnonzero((tup[:, 1:] != tup[:, :1]).any(axis=1))
    out = np.zeros(h * w)
    if edge_px.size:
        uniq, inverse = np.unique(tup[edge_px], axis=0, return_inverse=True)
        inverse = inverse.ravel()
        own = labels[:, uniq[:, 0]]                       # (S, U)
        differs = np.zeros(own.shape, dtype=bool)
        for k in range(1, uniq.shape[1]):                 # 2 or 4 neighbours
            differs |= labels[:, uniq[:, k]] != own
        if weights is None:
            prob = differs.mean(axis=0)
        else:
            wts = np.asarray(weights, dtype=np.float64)
            prob = wts @ differs / wts.sum()
        out[edge_px] = prob[inverse]
    return out.reshape(h, w)


def segment_stability(labels, best, pixel_count=None) -> np.ndarray:
    """Mean best-match IoU of each segment of ``best`` across ``labels``' rows.

    Parameters
    ----------
    labels : (n_samples, n_atoms) int array
    best : (n_atoms,) int array
        Labels ``0..K-1``.
    pixel_count : (n_atoms,) array, optional
        Size of every atom (default 1 each): IoU in pixels.

    Returns
    -------
    (K,) float array

    Examples
    --------
    >>> segment_stability(np.array([[0, 0, 1], [0, 1, 1]]), np.array([0, 0, 1]))
    array([0.75, 0.75])
    """
    labels = np.asarray(labels, dtype=np.int64)
    best = np.asarray(best, dtype=np.int64)
    s, n = labels.shape
    area = np.ones(n) if pixel_count is None else np.asarray(pixel_count, dtype=np.float64)
    k_best = int(best.max()) + 1
    k_max = int(labels.max()) + 1
    # Intersections of (sample, best segment, sample segment), as sparse keys.
    key = (np.arange(s)[:, None] * k_best + best[None, :]) * k_max + labels
    uk, inv = np.unique(key.ravel(), return_inverse=True)
    inter = np.bincount(inv.ravel(), weights=np.broadcast_to(area, (s, n)).ravel())
    t, rem = np.divmod(uk, k_best * k_max)
    b, lab = np.divmod(rem, k_max)
    best_area = np.bincount(best, weights=area, minlength=k_best)
    samp_area = np.bincount((np.arange(s)[:, None] * k_max + labels).ravel(),
                            weights=np.broadcast_to(area, (s, n)).ravel(), minlength=s * k_max)
    iou = inter / (best_area[b] + samp_area[t * k_max + lab] - inter)
    top = np.zeros((s, k_best))
    np.maximum.at(top, (t, b), iou)
    return top.mean(axis=0)


# ---------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------
