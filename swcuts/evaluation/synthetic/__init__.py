"""Synthetic data with known ground truth: images, scenes, motion pairs and clustering data."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.evaluation.synthetic.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "clusters", "images", "motion", "nonrigid", "scenes"
])
