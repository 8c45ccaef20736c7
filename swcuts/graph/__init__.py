"""The region adjacency graph of the atoms and its edge probabilities q_ij."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.graph.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "edge_probabilities", "learned_edges", "region_graph", "superatoms"
])
