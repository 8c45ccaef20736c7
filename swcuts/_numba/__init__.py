"""Numba plumbing: the safe on-disk cache, compiled-only helpers and the shared compiled primitives."""
