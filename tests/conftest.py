import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

# One BLAS/OpenMP thread per test process (and the subprocesses tests start):
# the tests' arrays are small, and with two pytest-xdist workers on two cores
# a second OpenBLAS thread per worker only spins. On a busy two-core machine
# slic-ncut's eigen-solver took 45 s with two threads and 4.6 s with one.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1)  # for a library a plugin loaded before this file


def _lock_numba_cache():
    """Make numba's on-disk cache safe for the pytest-xdist workers (``-n``).

    numba writes each cache file atomically, but adding an entry to a
    function's index is read-modify-write, and the new data file's number is
    taken from the index it read: two processes that compile two signatures
    of one function at once can both write ``f.1.nbc`` and leave the index
    pointing one signature at the other's machine code. Here each save (read
    index, write index and data) holds an exclusive lock on the index and each
    load a shared one, so the workers share one cache safely and a kernel
    compiled by one is loaded, not compiled again, by the other.
    """
    import contextlib
    import fcntl

    from numba.core.caching import IndexDataCacheFile as Files

    if getattr(Files, "_locked_for_xdist", False):
        return

    @contextlib.contextmanager
    def locked(files, mode):
        try:
            handle = open(files._index_path + ".lock", "a")
        except OSError:  # a read-only cache folder: numba copes without a lock
            yield
            return
        with handle:
            fcntl.flock(handle, mode)
            yield

    def wrap(method, mode):
        def inner(self, *args):
            with locked(self, mode):
                return method(self, *args)
        return inner

    Files.save = wrap(Files.save, fcntl.LOCK_EX)
    Files.load = wrap(Files.load, fcntl.LOCK_SH)
    Files._locked_for_xdist = True


if os.environ.get("PYTEST_XDIST_WORKER"):
    _lock_numba_cache()
