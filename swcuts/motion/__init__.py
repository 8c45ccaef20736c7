"""Two-frame motion segmentation (Barbu & Zhu, section 7): segment_motion() and its flow refinement."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.motion.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "flow_refine", "frames", "fusion", "pyramid", "segment", "uncertainty"
])
