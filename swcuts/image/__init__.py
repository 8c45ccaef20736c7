"""From a user's image to atoms: validation and conversion, over-segmentation into atomic regions."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.image.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "atom_cleanup", "atoms", "boundary_context", "boundary_conv", "boundary_detector", "boundary_weights", "edge_forest", "edge_forest_train", "edge_forest_votes", "full_size", "prepare", "warp"
])
