"""swcuts: image segmentation by Swendsen-Wang cuts."""

__version__ = "0.1.0"
