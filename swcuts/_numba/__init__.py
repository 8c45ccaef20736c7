"""Numba plumbing: the safe on-disk cache, compiled-only helpers and the shared compiled primitives."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts._numba.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "cache", "compile_speed", "compiled_only", "primitives"
])
