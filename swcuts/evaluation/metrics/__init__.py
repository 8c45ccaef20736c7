"""Standard metrics for comparing a segmentation with a ground truth.

Every function takes integer label images of equal shape. Labels are names
only: they may be any integers (not necessarily consecutive or starting at
0), and every metric here is invariant under a renaming of the labels of
either image. The region-based metrics (PRI, VoI, GCE, covering) are
computed exactly from the contingency table
``n[i, j] = #{p : seg[p] == i, truth[p] == j}`` (scikit-image's, on the
labels renamed ``0 .. k - 1``), so they cost O(n log n) in the number of
pixels ``n``. The variation of information is scikit-image's; scikit-image
has no Rand index, PRI, GCE, covering or BSDS boundary matching, which are
written here.

Modules
-------
:mod:`.contingency`
    Input checks and the contingency table.
:mod:`.regions`
    Rand index, adjusted Rand index, PRI, variation of information, GCE, covering.
:mod:`.boundaries`
    Boundary map, boundary precision / recall / F, BSDS boundary scores.
:mod:`.scores`
    Every score at once, against one ground truth or several annotators.

The papers each metric follows are listed in the References of
:mod:`.regions` and :mod:`.boundaries`.
"""

from swcuts.evaluation.metrics.boundaries import (
    boundary_f_measure, boundary_map, boundary_precision_recall, boundary_scores)
from swcuts.evaluation.metrics.regions import (
    adjusted_rand_index, global_consistency_error, mean_variation_of_information,
    probabilistic_rand_index, rand_index, segmentation_covering, snap_to_atoms, variation_of_information)
from swcuts.evaluation.metrics.scores import benchmark_scores, segmentation_scores

__all__ = [
    "probabilistic_rand_index",
    "rand_index",
    "adjusted_rand_index",
    "variation_of_information",
    "global_consistency_error",
    "boundary_map",
    "boundary_precision_recall",
    "boundary_f_measure",
    "segmentation_scores",
    "mean_variation_of_information",
    "segmentation_covering",
    "boundary_scores",
    "benchmark_scores",
    "snap_to_atoms",
]
