"""swcuts: image segmentation by sampling a Bayesian posterior over graph
partitions with Swendsen-Wang cuts (Barbu & Zhu)."""

__version__ = "0.1.0"

from .api import SAMPLERS, Segmentation, energy, segment  # noqa: E402
from .benchmarking import benchmark  # noqa: E402
from .cluster import MIXTURE_MODELS, Clustering, cluster  # noqa: E402

__all__ = ["segment", "energy", "benchmark", "Segmentation", "cluster", "Clustering", "SAMPLERS", "MIXTURE_MODELS",
           "__version__"]
