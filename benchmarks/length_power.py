"""The "learned" posterior with its boundary term reweighted per atom edge by
(L_ij / L0)^(γ − 1), L_ij the edge's boundary length in pixel pairs, L0 the
image's median: a per-edge answer to the overcounting of correlated boundary
pixels (issue 34, round 9). A screen, not a library option: it patches
:func:`swcuts.models.boundary.contrast_weights` as ImageModel imported it, then
runs benchmarks/model_sweep.py (forked workers inherit the patch).

Usage::

    python benchmarks/length_power.py GAMMA [model_sweep.py options]

Results go to ``<--out>/gamma<GAMMA>/`` (model_sweep's cache there).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main():
    gamma = float(sys.argv.pop(1))
    import model_sweep

    import swcuts.models.image as image_module

    original = image_module.contrast_weights

    def reweighted(features, atoms, graph, *args, **kwargs):
        w = original(features, atoms, graph, *args, **kwargs)
        length = graph.boundary_length.astype(np.float64)
        return w * (length / np.median(length)) ** (gamma - 1.0)

    image_module.contrast_weights = reweighted
    if "--out" in sys.argv:
        k = sys.argv.index("--out") + 1
        sys.argv[k] = str(Path(sys.argv[k]) / f"gamma{gamma}")
    else:
        sys.argv += ["--out", str(ROOT / "benchmarks" / "out" / "sweep" / f"gamma{gamma}")]
    model_sweep.main()


if __name__ == "__main__":
    main()
