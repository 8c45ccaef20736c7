"""Numba's on-disk cache, safe when several processes fill it at once.

numba names a function's cache files by position: the index file
(``<function>.nbi``) maps each signature to a data file
``<function>.<k>.nbc``, and a new signature takes the first number the
index does not use yet. Two processes that compile two signatures of one
function at the same time (pytest-xdist workers, ``swcuts benchmark
--workers 2`` or a Dask cluster on a fresh install) both read the index
before the other has written it and both take the same number; the last
writer of the index need not be the last writer of the data file, and the
index then sends one signature to the other signature's machine code. numba
runs that code without a check, in every later process: wrong numbers or a
crash.

Importing this module makes each save (read the index, choose a name,
write the index and the data) one step, under an exclusive lock on
``<index>.lock`` beside the index, and each load (read the index and the
data) one step under a shared lock. It patches
``numba.core.caching.IndexDataCacheFile`` for the whole process, numba
functions of other packages included: they only gain the lock. On systems
without :mod:`fcntl` (Windows) it does nothing. ``tests/test_numba_cache.py``
checks it against the numba installed.
"""

from __future__ import annotations

import contextlib
import functools

from numba.core import caching

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


@contextlib.contextmanager
def _lock(index_path: str, mode: int):
    """Hold ``mode`` (fcntl.LOCK_EX or LOCK_SH) on ``index_path + ".lock"``;
    without fcntl, or where the lock file cannot be made (a cache folder
    not created yet, or read-only), nothing is locked, as before."""
    try:
        handle = open(index_path + ".lock", "a+b")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _under_lock(method, exclusive: bool):
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with _lock(self._index_path, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH):
            return method(self, *args, **kwargs)

    locked.swcuts_locked = True
    return locked


def install() -> None:
    """Lock numba's cache saves and loads (idempotent)."""
    if fcntl is None:  # pragma: no cover - Windows
        return
    cls = caching.IndexDataCacheFile
    for name, exclusive in (("save", True), ("load", False)):
        method = getattr(cls, name)
        if not getattr(method, "swcuts_locked", False):
            setattr(cls, name, _under_lock(method, exclusive))


install()
