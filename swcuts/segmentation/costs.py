"""What an option costs: memory estimates and bounds, checked before any work.

Every refusal is one line that names the option, the estimate and what
fits (e.g. "bins=1000 needs about 18 GB for 100 atoms of a 24x32 image;
at most 300 fit in the 4.0 GB available"). :mod:`swcuts.segmentation.options` resolves
and validates the options themselves and calls these checks; their names
stay importable from it.
"""

from __future__ import annotations

import math
import numbers

from swcuts.io.errors import check_number
from swcuts.io.memory import BYTES_PER_PIXEL_VERTEX, _memory_limit, _size, too_large_message
from swcuts.io.errors import InputError
from swcuts.segmentation.image_models import BINS
from swcuts.segmentation.options import (
    DEFAULTS, HIERARCHICAL, MAX_BINS, _resolve_sampler, default_n_atoms, resolve_atoms,
    vertex_bytes)

__all__ = ["run_cost", "check_cost", "check_alpha", "check_sampler_options", "mixture_row_length",
           "check_cluster_cost", "MAX_ALPHA", "MAX_SCANS"]


#: Largest CRP concentration of :func:`~swcuts.cluster` (``lgamma`` of it
#: must stay finite, and 1e100 already puts every item in its own cluster).
MAX_ALPHA = 1e100
#: Statistics rows of ``C * bins`` histogram counts held per graph vertex:
#: on atoms the vertices' own rows, the bincount result and its float copy,
#: the labels' rows, the scratch rows and a move's rows (measured: bins=10**6
#: on 100 atoms of a 24x32 colour image took 18 GB); on pixels (samplers
#: reading pixels, not rows) the labels' rows and the scratch rows.
ROWS_PER_VERTEX = 7
ROWS_PER_PIXEL_VERTEX = 2
#: Per pixel and level of ``multilevel``: its label map, the level's graph,
#: statistics and window bookkeeping (measured on a 240x320 colour image:
#: levels=8 took 58 MB more than levels=2, about 125 bytes a pixel a level).
BYTES_PER_LEVEL_PIXEL = 160


def run_cost(hw, *, sampler="swc", atoms=None, n_atoms=None, bins=None,
             levels=DEFAULTS["levels"], channels=3, n_labels=None) -> dict:
    """Estimated peak memory of a run, in bytes, by what it is spent on.

    Parameters
    ----------
    hw : tuple of int
        ``(H, W)`` of the image.
    sampler, atoms, n_atoms, bins, levels :
        The options of :func:`~swcuts.segment` (``atoms`` and ``n_atoms``
        None: their defaults; ``bins`` None: :data:`~swcuts.segmentation.image_models.BINS`,
        the most any model has by default).
    channels : int
        Feature channels (1 grey, 3 colour; 3 when unknown errs large).
    n_labels : int, optional
        Labels of a given labelling (:func:`~swcuts.energy`): one
        statistics row each.

    Returns
    -------
    dict
        ``vertices`` (graph vertices), ``image`` (bytes per pixel),
        ``graph`` (bytes per vertex at the default bins), ``bins`` (the
        histograms beyond the default bins), ``levels`` (multilevel's
        label maps), ``labels`` (rows of ``n_labels``) and ``total``.
    """
    from swcuts.io.memory import BYTES_PER_PIXEL

    h, w = (int(t) for t in hw)
    bins = BINS if bins is None else int(bins)
    name = _resolve_sampler(sampler)
    atoms = resolve_atoms(name, atoms)
    n_pix = h * w
    n = n_pix if atoms == "pixels" else min(n_atoms if n_atoms is not None else default_n_atoms(n_pix), n_pix)
    per_vertex = vertex_bytes(name, atoms)
    rows = ROWS_PER_PIXEL_VERTEX if per_vertex == BYTES_PER_PIXEL_VERTEX else ROWS_PER_VERTEX
    cost = {
        "vertices": n,
        "image": float(n_pix) * BYTES_PER_PIXEL,
        "graph": float(n) * per_vertex,
        "bins": float(n) * rows * 8 * channels * max(int(bins) - BINS, 0),
        "levels": float(n_pix) * BYTES_PER_LEVEL_PIXEL * int(levels) if name in HIERARCHICAL else 0.0,
        "labels": 3.0 * 8 * (1 + channels * int(bins) + 36 + 7 * channels) * n_labels if n_labels else 0.0,
    }
    cost["total"] = cost["image"] + cost["graph"] + cost["bins"] + cost["levels"] + cost["labels"]
    return cost


def check_cost(hw, *, sampler="swc", atoms=None, n_atoms=None, bins=None,
               levels=DEFAULTS["levels"], channels=3, n_labels=None, limit_bytes=None) -> int:
    """Refuse, before any work, a run whose memory estimate does not fit.

    The estimate is :func:`run_cost`'s. The message names the option that
    costs most (``bins``, ``levels``, ``n_atoms``, the labels or the image
    itself), the estimate, and the largest value that fits, e.g. "bins=1000
    needs about 18 GB for 100 atoms of a 24x32 image; at most 300 fit in the
    4.0 GB available". ``levels`` beyond what the image can hold (each level
    merges the regions of the one below: at most log2(H*W) levels) are
    refused whatever the memory.

    Parameters
    ----------
    hw, sampler, atoms, n_atoms, bins, levels, channels, n_labels :
        As for :func:`run_cost`.
    limit_bytes : int, optional
        Memory to compare with instead of the memory available (tests).

    Returns
    -------
    int
        The estimate in bytes (no memory check when the memory available is unknown).

    Raises
    ------
    InputError
        One line: what does not fit and what does.
    """
    h, w = (int(t) for t in hw)
    name = _resolve_sampler(sampler)
    if name in HIERARCHICAL:
        most = max(1, int(math.log2(max(h * w, 2))))
        if levels > most:
            raise InputError(f"levels={levels} is more than a {h}x{w} image can hold (each level merges "
                             f"the regions of the one below); use at most {most}")
    cost = run_cost(hw, sampler=name, atoms=atoms, n_atoms=n_atoms, bins=bins, levels=levels,
                    channels=channels, n_labels=n_labels)
    have = _memory_limit(limit_bytes)
    need = cost["total"]
    if have is None or need <= have:
        return int(need)
    n = cost["vertices"]
    what = f"{n} {'pixels' if resolve_atoms(name, atoms) == 'pixels' else 'atoms'} of a {h}x{w} image"
    spare = have - (need - cost["bins"] - cost["levels"] - cost["labels"])  # what the default bins leave
    culprit = max(("bins", "levels", "labels"), key=lambda k: cost[k])
    if cost[culprit] > 0 and spare > 0:
        if culprit == "bins":
            per_bin = cost["bins"] / (bins - BINS)
            fit = min(BINS + int((spare - cost["levels"] - cost["labels"]) // per_bin), MAX_BINS)
            if fit >= 2:
                raise InputError(f"bins={bins} needs about {_size(need)} for {what}; at most {fit} fit in "
                                 f"the {_size(have)} available")
        elif culprit == "levels":
            fit = int((spare - cost["bins"] - cost["labels"]) // (cost["levels"] / levels))
            if fit >= 1:
                raise InputError(f"levels={levels} needs about {_size(need)} for a {h}x{w} image; at most "
                                 f"{fit} fit in the {_size(have)} available")
        else:
            fit = int((spare - cost["bins"] - cost["levels"]) // (cost["labels"] / n_labels))
            if fit >= 1:
                raise InputError(f"a labelling with {n_labels} labels needs about {_size(need)} with "
                                 f"bins={bins}; at most {fit} labels fit in the {_size(have)} available")
    per_vertex = cost["graph"] / max(n, 1) + (cost["bins"] + cost["levels"]) / max(n, 1)
    if n_atoms is not None and resolve_atoms(name, atoms) != "pixels":
        fit = int((have - cost["image"] - cost["labels"]) // per_vertex)
        if fit >= 2:
            raise InputError(f"n_atoms={n_atoms} needs about {_size(need)} for a {h}x{w} image; at most "
                             f"{fit} fit in the {_size(have)} available")
    raise InputError(too_large_message(h, w, need, have, per_pixel=need / (h * w), n_vertices=n))


def check_alpha(alpha) -> None:
    """The CRP concentration of :func:`~swcuts.cluster`: a finite number in (0, MAX_ALPHA]
    (:func:`~swcuts.io.errors.check_number`)."""
    check_number("alpha (the concentration of the clusters' prior)", alpha, minimum=0, exclusive=True,
                 maximum=MAX_ALPHA, what=f"a number in (0, {MAX_ALPHA:.0e}]")


#: Options of the mixture samplers (``cluster(sampler_options=...)``) whose
#: work per step grows with them: restricted Gibbs scans and sweeps per
#: step. At most this many each (the defaults are 0-5).
MAX_SCANS = 1000
SCAN_OPTIONS = {"split-merge": ("t", "M", "R"), "random-split": ("t", "M", "R"),
                "reconfiguration": ("gibbs_sweeps",), "srm": ("gibbs_sweeps",)}
#: Reconfiguration's default history length (states kept; two per chain at least).
DEFAULT_MAX_HISTORY = 256


def check_sampler_options(sampler, options) -> None:
    """Bound the sampler options of :func:`~swcuts.cluster` that multiply its
    work or memory: scans per step (:data:`SCAN_OPTIONS`, at most
    :data:`MAX_SCANS`) and reconfiguration's ``n_chains`` (each chain keeps
    two states of a history of ``max_history``, default 256).

    Raises
    ------
    InputError
        One line naming the option, its value and what is accepted.
    """
    for name in SCAN_OPTIONS.get(sampler, ()):
        value = options.get(name)
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > MAX_SCANS:
            raise InputError(f"sampler option {name}={value} of '{sampler}' is more scans per step than "
                             f"swcuts runs; use at most {MAX_SCANS} (more steps cost the same work)")
    if sampler in ("reconfiguration", "srm"):
        chains = options.get("n_chains")
        history = options.get("max_history", DEFAULT_MAX_HISTORY)
        if (isinstance(chains, numbers.Integral) and isinstance(history, numbers.Integral)
                and not isinstance(chains, bool) and chains > max(history // 2, 1)):
            raise InputError(f"sampler option n_chains={chains} of '{sampler}' needs a history of "
                             f"{2 * chains} states (two per chain) and max_history is {history}; use at "
                             f"most {max(history // 2, 1)} chains or raise max_history")


#: Per item of :func:`~swcuts.cluster`: statistics rows (the items' own,
#: the clusters', scratch and a move's) and the partition's bookkeeping.
MIXTURE_ROWS = 4
MIXTURE_ITEM_BYTES = 200


def mixture_row_length(model, n_features) -> int:
    """Length of a statistics row of the mixture likelihood ``model``
    (Normal-Inverse-Wishart: count, sums, sums of products; others: count, sums)."""
    d = int(n_features)
    return 1 + d + d * d if model == "gaussian" else 1 + max(d, 5)


def check_cluster_cost(n_items, n_features, *, model="gaussian", sampler="split-merge", sampler_options=None,
                       limit_bytes=None) -> int:
    """Refuse, before any work, data that :func:`~swcuts.cluster` could not
    hold in memory: ``n_items`` rows of statistics of
    :func:`mixture_row_length` numbers, :data:`MIXTURE_ROWS` times (two more
    per chain for reconfiguration).

    Returns
    -------
    int
        The estimate in bytes.

    Raises
    ------
    InputError
        One line: the estimate and how many items fit.
    """
    rows = MIXTURE_ROWS
    if sampler in ("reconfiguration", "srm"):
        chains = (sampler_options or {}).get("n_chains", 4)
        rows += 2 * chains if isinstance(chains, numbers.Integral) and not isinstance(chains, bool) else 8
    per_item = rows * 8 * mixture_row_length(model if isinstance(model, str) else "gaussian", n_features) \
        + MIXTURE_ITEM_BYTES
    need = float(n_items) * per_item
    have = _memory_limit(limit_bytes)
    if have is not None and need > have:
        raise InputError(f"data of {n_items} items x {n_features} features needs about {_size(need)} for the "
                         f"{model if isinstance(model, str) else 'given'} model's statistics but only "
                         f"{_size(have)} is available; at most {int(have // per_item)} items fit (or use fewer "
                         f"features)")
    return int(need)
