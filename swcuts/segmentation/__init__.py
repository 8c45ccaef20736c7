"""Image segmentation: options and their defaults, costs, the named image posteriors, segment(), energy() and sample_posterior()."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.segmentation.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "build", "costs", "energy", "granularity", "image_models", "options", "posterior", "result", "segment",
    "superatom_posterior", "edge_posterior"
])
