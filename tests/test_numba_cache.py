"""The numba cache lock of :mod:`swcuts._numba.cache`: two processes saving
two signatures of one function at once must not share a data file."""

import threading
import time

import pytest
from numba.core import caching

import swcuts._numba.cache
from swcuts._numba.primitives import find


def _cache_file(folder):
    return caching.IndexDataCacheFile(cache_path=str(folder), filename_base="kernel-1.py311",
                                      source_stamp=(1.0, 10))


def test_every_compiled_module_gets_the_lock():
    # primitives is imported by every compiled module of swcuts (see numba_cache)
    assert find is not None
    assert caching.IndexDataCacheFile.save.swcuts_patched
    assert caching.IndexDataCacheFile.load.swcuts_patched


def test_installing_twice_wraps_once():
    save = caching.IndexDataCacheFile.save
    swcuts._numba.cache.install()
    assert caching.IndexDataCacheFile.save is save


@pytest.mark.skipif(swcuts._numba.cache.fcntl is None, reason="no fcntl: no lock")
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


def _locator(py_func):
    import inspect

    return caching.InTreeCacheLocator.from_function(py_func, inspect.getfile(py_func))


def test_swcuts_kernels_are_stamped_with_the_whole_package():
    """A kernel's cache entry holds its callees' code from other files, so
    its stamp covers every source file of swcuts, not only its own."""
    from swcuts.models.image_kernels import label_loglik

    stamp = _locator(label_loglik.py_func).get_source_stamp()
    assert isinstance(stamp, tuple) and stamp[1] == swcuts._numba.cache.package_stamp()
    assert stamp[0] == caching._hash_source_file(label_loglik.py_func.__code__.co_filename, 0, 0)


def test_package_stamp_changes_with_any_source_file(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    monkeypatch.setattr(swcuts._numba.cache, "PACKAGE", tmp_path)
    swcuts._numba.cache.package_stamp.cache_clear()
    try:
        before = swcuts._numba.cache.package_stamp()
        (tmp_path / "sub" / "b.py").write_text("y = 3\n")
        swcuts._numba.cache.package_stamp.cache_clear()
        assert swcuts._numba.cache.package_stamp() != before
    finally:
        swcuts._numba.cache.package_stamp.cache_clear()


def test_functions_outside_swcuts_keep_numba_stamp(tmp_path, monkeypatch):
    module = tmp_path / "elsewhere.py"
    module.write_text("def f():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import elsewhere

    stamp = _locator(elsewhere.f).get_source_stamp()
    assert stamp == caching._hash_source_file(str(module), 0, 0)


def test_fast_flag_values_match_numba_for_set_and_unset_options():
    # compile_speed replaces TargetConfig.values: the same dict (so the same
    # hash and equality, which key numba's implementation cache) as numba's own
    from numba.core import targetconfig
    from numba.core.compiler import DEFAULT_FLAGS, Flags

    from swcuts._numba import compile_speed

    assert targetconfig.TargetConfig.values is compile_speed.fast_values
    changed = Flags()
    changed.nrt = True
    changed.boundscheck = True
    changed.inline = "always"
    for flags in (Flags(), changed, DEFAULT_FLAGS):
        assert compile_speed.fast_values(flags) == compile_speed._ORIGINAL_VALUES(flags)
        assert list(compile_speed.fast_values(flags)) == list(compile_speed._ORIGINAL_VALUES(flags))
    assert compile_speed.fast_values(changed) != compile_speed.fast_values(Flags())
    assert changed != Flags() and Flags() == Flags() and hash(Flags()) == hash(Flags())


def test_fast_flag_hash_and_equality_match_numba():
    # compile_speed replaces TargetConfig.__hash__ and __eq__ (the key of
    # numba's implementation cache): the same answers as numba's own, for
    # flags equal, differing in a set option, and set to their defaults.
    from numba.core import targetconfig
    from numba.core.compiler import DEFAULT_FLAGS, Flags

    from swcuts._numba import compile_speed

    assert targetconfig.TargetConfig.__hash__ is compile_speed.fast_hash
    assert targetconfig.TargetConfig.__eq__ is compile_speed.fast_eq
    a = Flags()
    a.nrt = True
    b = Flags(a)
    b.boundscheck = True
    c = Flags()
    c.nrt = True
    c.boundscheck = Flags().boundscheck  # set, to its default: equal to unset
    d = Flags()
    d.inline = "always"
    cases = [Flags(), a, b, c, d, Flags(a), DEFAULT_FLAGS]
    answers = []
    for x in cases:
        assert compile_speed.fast_hash(x) == compile_speed._ORIGINAL_HASH(x) == hash(x)
        for y in cases:
            fast, numba = compile_speed.fast_eq(x, y), compile_speed._ORIGINAL_EQ(x, y)
            assert fast is numba and (x == y) is numba
            answers.append(numba)
    assert True in answers and False in answers  # both answers were checked
    assert compile_speed.fast_eq(a, "nrt") is NotImplemented


KERNEL = (
    "from numba import njit\n"
    "@njit(cache=True)\n"
    "def f(n):\n"
    "    s = 0.0\n"
    "    for i in range(n):\n"
    "        s += i ** 0.5\n"
    "    return s\n"
)

#: Holds f's compile lock until the other processes are compiling, then
#: compiles and saves f without the lock (numba's own compile).
HOLDER = (
    "import fcntl, os, sys, time, pathlib\n"
    "import swcuts._numba.cache\n"
    "from numba.core import dispatcher, types\n"
    "sys.path.insert(0, sys.argv[1]); import kern\n"
    "flag = pathlib.Path(sys.argv[1])\n"
    "index = kern.f._cache._cache_file._index_path\n"
    "os.makedirs(os.path.dirname(index), exist_ok=True)\n"
    "handle = open(index + '.compile', 'a+b'); fcntl.flock(handle, fcntl.LOCK_EX)\n"
    "(flag / 'held').touch()\n"
    "deadline = time.monotonic() + 300\n"
    "while not all((flag / f'calling{i}').exists() for i in (0, 1)) and time.monotonic() < deadline:\n"
    "    time.sleep(0.02)\n"
    "time.sleep(1.0)  # both are in f's compile now\n"
    "dispatcher.Dispatcher.compile.__wrapped__(kern.f, (types.int64,))\n"
    "fcntl.flock(handle, fcntl.LOCK_UN)\n"
)

#: Calls f once the lock is held; prints its cache misses and hits.
CALLER = (
    "import sys, time, pathlib\n"
    "import swcuts._numba.cache as cache\n"
    "cache.COMPILE_WAIT = float(sys.argv[2])\n"
    "sys.path.insert(0, sys.argv[1]); import kern\n"
    "flag = pathlib.Path(sys.argv[1])\n"
    "deadline = time.monotonic() + 300\n"
    "while not (flag / 'held').exists() and time.monotonic() < deadline:\n"
    "    time.sleep(0.02)\n"
    "(flag / f'calling{sys.argv[3]}').touch()\n"
    "kern.f(10)\n"
    "print(sum(kern.f.stats.cache_misses.values()), sum(kern.f.stats.cache_hits.values()))\n"
)


@pytest.mark.skipif(swcuts._numba.cache.fcntl is None, reason="no fcntl: no lock")
def test_a_signature_another_process_is_compiling_is_loaded_not_compiled_again(tmp_path):
    """Process 0 misses the cache while another process compiles the same
    signature: it waits for the compile lock, then loads the saved entry (no
    compile of its own). Negative control: process 1, which gives up waiting
    at once, compiles it again."""
    import os
    import subprocess
    import sys

    (tmp_path / "kern.py").write_text(KERNEL)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "nc"))
    run = {"env": env, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], **run)
    callers = [subprocess.Popen([sys.executable, "-c", CALLER, str(tmp_path), wait, str(i)], **run)
               for i, wait in enumerate(["300", "0"])]
    out = [proc.communicate(timeout=600) for proc in (holder, *callers)]
    assert [proc.returncode for proc in (holder, *callers)] == [0, 0, 0], out
    assert out[1][0].split() == ["0", "1"]  # waited, then loaded
    assert out[2][0].split() == ["1", "0"]  # gave up waiting: compiled
