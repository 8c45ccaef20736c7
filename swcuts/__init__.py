"""swcuts: image segmentation by sampling a Bayesian posterior over graph
partitions with Swendsen-Wang cuts (Barbu & Zhu)."""

__version__ = "0.1.0"

from .api import SAMPLERS, Segmentation, segment  # noqa: E402
from .cluster import MIXTURE_MODELS, Clustering, cluster  # noqa: E402

__all__ = ["segment", "Segmentation", "cluster", "Clustering", "SAMPLERS", "MIXTURE_MODELS",
           "__version__"]
