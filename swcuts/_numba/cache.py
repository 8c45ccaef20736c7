"""Numba's on-disk cache made safe for swcuts: several processes may fill
it at once, and any change to swcuts' sources makes its kernels recompile.

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

A second hazard: numba stamps a function's cache entry with a hash of its
own source file only, but the entry holds the machine code of every callee
(see :mod:`swcuts._numba.compiled_only`), and the callees of swcuts' kernels sit
in other files. After an edit or a ``git pull`` that changes only a callee's
file, numba would load the old code. For functions defined in swcuts this
module stamps the entries with a hash of every source file of the package
instead, so any change to swcuts recompiles its kernels.

Importing this module makes each save (read the index, choose a name,
write the index and the data) one step, under an exclusive lock on
``<index>.lock`` beside the index, and each load (read the index and the
data) one step under a shared lock. It patches
``numba.core.caching`` for the whole process (the index and data files,
and the stamp of source-file-backed locators): numba functions of other
packages only gain the lock. On systems without :mod:`fcntl` (Windows)
there is no lock. ``tests/test_numba_cache.py``
checks it against the numba installed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
import time
from pathlib import Path

from numba.core import caching, dispatcher, sigutils

from swcuts._numba import compile_speed

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

    locked.swcuts_patched = True
    return locked


PACKAGE = Path(__file__).resolve().parents[1]  # swcuts/


@functools.lru_cache(maxsize=1)
def package_stamp() -> str:
    """sha256 over every ``.py`` file of swcuts (relative path and bytes),
    computed once per process."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _stamp_with_package(method):
    @functools.wraps(method)
    def stamp(self):
        own = method(self)
        try:
            inside = Path(os.path.realpath(self._py_file)).is_relative_to(PACKAGE)
        except (AttributeError, TypeError, OSError):
            inside = False
        return (own, package_stamp()) if inside else own

    stamp.swcuts_patched = True
    return stamp


#: Compile locks this process holds (any thread): index path -> depth.
_COMPILING: dict = {}
_COMPILING_GUARD = threading.Lock()
#: How long a process waits for another one's compile of the same function
#: before it compiles the function itself (a guard against a lock cycle).
COMPILE_WAIT = 300.0


@contextlib.contextmanager
def _compile_lock(index_path: str):
    """Hold an exclusive lock on ``index_path + ".compile"`` while this
    process compiles (or loads) a signature of that function; re-entrant in
    the process (a kernel's compile compiles its callees, and may come back
    to another signature of the same function)."""
    with _COMPILING_GUARD:
        depth = _COMPILING.get(index_path, 0)
        _COMPILING[index_path] = depth + 1
    try:
        if depth:
            yield
            return
        try:
            os.makedirs(os.path.dirname(index_path), exist_ok=True)
            handle = open(index_path + ".compile", "a+b")
        except OSError:  # a read-only cache: compile unlocked
            yield
            return
        with handle:
            deadline = time.monotonic() + COMPILE_WAIT
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = True
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        locked = False
                        break
                    time.sleep(0.02)
            try:
                yield
            finally:
                if locked:
                    fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        with _COMPILING_GUARD:
            if depth:
                _COMPILING[index_path] = depth
            else:
                del _COMPILING[index_path]


def _compile_once(compile_):
    """``Dispatcher.compile`` under the function's compile lock when the
    signature is neither compiled in this process nor the function uncached:
    two processes that miss the cache for the same signature at once
    (pytest-xdist workers on a fresh clone) compiled it twice; now the
    second waits, then loads the first one's entry from the cache."""
    @functools.wraps(compile_)
    def compile(self, sig):
        index = getattr(getattr(self._cache, "_cache_file", None), "_index_path", None)
        if index is None:
            return compile_(self, sig)
        args, _ = sigutils.normalize_signature(sig)
        if tuple(args) in self.overloads:
            return compile_(self, sig)
        with _compile_lock(index):
            return compile_(self, sig)

    compile.swcuts_patched = True
    return compile


def install() -> None:
    """Stamp swcuts' cache entries with the whole package, lock numba's
    cache saves and loads, and compile each signature of a cached function
    in one process at a time (idempotent)."""
    mixin = caching._SourceFileBackedLocatorMixin
    if not getattr(mixin.get_source_stamp, "swcuts_patched", False):
        mixin.get_source_stamp = _stamp_with_package(mixin.get_source_stamp)
    if fcntl is None:  # pragma: no cover - Windows
        return
    cls = caching.IndexDataCacheFile
    for name, exclusive in (("save", True), ("load", False)):
        method = getattr(cls, name)
        if not getattr(method, "swcuts_patched", False):
            setattr(cls, name, _under_lock(method, exclusive))
    if not getattr(dispatcher.Dispatcher.compile, "swcuts_patched", False):
        dispatcher.Dispatcher.compile = _compile_once(dispatcher.Dispatcher.compile)


install()

# Faster flag hashing for every compile in the process (see compile_speed).
compile_speed.install()
