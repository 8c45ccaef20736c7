"""Files in and out: images, optical-flow files, output sets written as one unit, and the error for a user's input."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.io.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "errors", "figures", "flow", "image_read", "image_write", "line_plot", "memory", "output_set", "weights"
])
