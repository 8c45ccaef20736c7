"""swcuts._numba.compiled_only: kernels compiled into their callers only.

These tests pin the numba internals that the decorator relies on (its
pipeline, code library and entry points), so that a numba upgrade that
changes them fails here rather than somewhere in a sampler.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from numba import njit

from swcuts._numba.compiled_only import LinkOnlyLibrary, compiled_only


@compiled_only
def _plus_one(x):
    return x + 1


@compiled_only
def _times_ten(x):
    return x * 10


@compiled_only
def _nested(a):
    s = 0
    for v in a:
        s += _plus_one(v)
    return s


@njit
def _both(x):
    return _plus_one(x), _times_ten(x)


@njit
def _through_nested(a):
    return _nested(a) + _times_ten(a[0])


def test_kernels_with_one_signature_keep_their_own_code():
    # Both callees have the signature (int64,) -> int64: the caller must
    # call each one's own implementation.
    assert _both(4) == (5, 40)


def test_nested_compiled_only_kernels():
    a = np.arange(5, dtype=np.int64)
    assert _through_nested(a) == (0 + 1 + 2 + 3 + 4) + 5 + 0


def test_a_kernel_is_a_link_only_library_linked_into_its_caller():
    _both(1)
    (cres,) = _plus_one.dispatcher.overloads.values()
    assert isinstance(cres.library, LinkOnlyLibrary)
    (caller,) = _both.overloads.values()
    assert cres.library in caller.library._linking_libraries


def test_python_calls_run_the_twin():
    assert _plus_one(np.int64(2)) == 3
    assert _plus_one.python_dispatcher.overloads  # compiled, with its CPython wrapper


MODULE = textwrap.dedent("""
    from numba import njit
    from swcuts._numba.compiled_only import compiled_only

    @compiled_only
    def inner(x):
        return 3 * x + 1

    @njit(cache=True)
    def outer(x):
        return inner(x) - 1
""")

RUN = textwrap.dedent("""
    import kernels
    print(kernels.outer(7), len(kernels.inner.dispatcher.overloads))
""")


def test_the_caller_caches_the_callee_with_itself(tmp_path):
    (tmp_path / "kernels.py").write_text(MODULE)
    # swcuts from this checkout, installed or not
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), root]))

    def run():
        done = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert run() == ["21", "1"]  # first process: inner compiled, into outer
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("*.nbi"))
    assert len(cached) == 1 and "outer" in cached[0]  # no cache files of inner's own
    assert run() == ["21", "0"]  # outer loaded from the cache: inner never compiled
