"""The numba cache lock of :mod:`swcuts.numba_cache`: two processes saving
two signatures of one function at once must not share a data file."""

import threading
import time

import pytest
from numba.core import caching

import swcuts.numba_cache  # noqa: F401  (installs the lock)
from swcuts.primitives import find


def _cache_file(folder):
    return caching.IndexDataCacheFile(cache_path=str(folder), filename_base="kernel-1.py311",
                                      source_stamp=(1.0, 10))


def test_every_compiled_module_gets_the_lock():
    # primitives is imported by every compiled module of swcuts (see numba_cache)
    assert find is not None
    assert caching.IndexDataCacheFile.save.swcuts_locked
    assert caching.IndexDataCacheFile.load.swcuts_locked


def test_installing_twice_wraps_once():
    save = caching.IndexDataCacheFile.save
    swcuts.numba_cache.install()
    assert caching.IndexDataCacheFile.save is save


@pytest.mark.skipif(swcuts.numba_cache.fcntl is None, reason="no fcntl: no lock")
def test_concurrent_saves_of_two_signatures_keep_their_own_data(tmp_path):
    """Writer A stops between reading the index and writing it; writer B
    (another open file, as in another process) saves meanwhile. Without the
    lock both take data file 1 and one signature loses its entry or gets the
    other's data; with it B waits, and each key loads its own data."""
    a, b = _cache_file(tmp_path), _cache_file(tmp_path)
    a_inside, b_started = threading.Event(), threading.Event()
    save_index = a._save_index

    def slow_save_index(overloads):
        a_inside.set()
        b_started.wait(5)
        time.sleep(0.3)  # room for B to run its whole save, were it not locked out
        save_index(overloads)

    a._save_index = slow_save_index

    def writer_b():
        a_inside.wait(5)
        b_started.set()
        b.save("signature B", b"code of B")

    thread = threading.Thread(target=writer_b)
    thread.start()
    a.save("signature A", b"code of A")
    thread.join(10)
    reader = _cache_file(tmp_path)
    assert reader.load("signature A") == b"code of A"
    assert reader.load("signature B") == b"code of B"
    assert len(set(reader._load_index().values())) == 2
