"""Kernels that only compiled code calls, compiled once, inside their callers.

Numba compiles every ``njit`` function to a library of its own: it lowers
the function, links the libraries of its callees into it, optimises the
whole module (LLVM -O3) and generates machine code for it, and with
``cache=True`` writes that machine code to the cache. A kernel that only
other kernels call pays all of that for nothing: nobody runs its own
machine code, and its caller links, optimises and generates the code
again. Down a call tree of depth d the leaves are optimised and
generated d times. Compiling swcuts' default kernels that way cost about
1 s of the ~9 s of a first run (empty numba cache) of ``swcuts segment``.

:func:`compiled_only` compiles a kernel for compiled callers only:

* no CPython or C wrapper (numba's ``no_cpython_wrapper`` and
  ``no_cfunc_wrapper``);
* a *link-only* code library (:class:`LinkOnlyLibrary`): lowered and
  function-optimised like any other, but never optimised as a whole module
  or turned into machine code; the top-level kernel that calls it (an
  ordinary ``njit(cache=True)`` function) does that once for its whole call
  tree, and its cache entry holds the code of every callee;
* not cached on its own (there is no machine code to cache): a process
  that loads the top-level kernel from the cache never compiles it.

A call from Python compiles and runs an ordinary ``njit(cache=True)`` twin
of the same function on first use (:class:`CompiledOnly`).

One exception to "not cached": a helper process (:mod:`swcuts.cli.prewarm`)
may compile a link-only kernel ahead, as an ordinary cached library (with
machine code, and the bitcode that callers link and inline), while the
main process prepares the image. :data:`load_hook` then tells the kernel's
dispatcher to load that entry from the cache instead of compiling
(:class:`PrebuiltCache`).

This relies on numba internals (the compiler pipeline, ``CodeLibrary`` and
``insert_user_function``, checked with numba 0.68); ``tests/test_compiled_only.py``
checks them, so a numba upgrade that breaks them fails there first.
"""

from __future__ import annotations

import functools
import types as pytypes

from numba import njit, types
from numba.core import caching, compiler, typed_passes
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler_lock import require_global_compiler_lock
from numba.core.compiler_machinery import register_pass
from numba.extending import typeof_impl

# Every compiled module of swcuts imports this one (through primitives):
# the cache-file lock is in place before any kernel is compiled or loaded.
from swcuts._numba import cache as numba_cache  # noqa: F401

__all__ = ["compiled_only", "CompiledOnly", "LinkOnlyLibrary", "PrebuiltCache", "load_hook"]

#: ``hook(py_func, sig) -> bool``, or None: asked before a link-only kernel
#: compiles ``sig``; True means a helper process has compiled and cached
#: that signature (:mod:`swcuts.cli.prewarm` sets it while its helper runs).
load_hook = None


class LinkOnlyLibrary(JITCodeLibrary):
    """A code library that is only ever linked into other libraries.

    Its :meth:`finalize` links the modules of its callees into its own and
    stops there: no whole-module optimisation, no machine code. The library
    that links it in does both, for everything it links, once.
    """

    def finalize(self):
        require_global_compiler_lock()
        self._raise_if_finalized()
        seen = set()
        for library in self._linking_libraries:
            if library not in seen:
                seen.add(library)
                self._reload_init.update(library._reload_init)
                self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._finalized = True


def _link_only_entry():
    """A new entry point for a link-only kernel: the key under which compiled
    callers find its implementation (numba wants a builtin function there).
    There is no machine code behind it; called, it raises (an empty list's
    ``__getitem__``)."""
    return [].__getitem__


@register_pass(mutates_CFG=True, analysis_only=False)
class LinkOnlyLowering(typed_passes.NativeLowering):
    """Numba's lowering into a :class:`LinkOnlyLibrary`, without machine code."""

    _name = "swcuts_link_only_lowering"

    def run_pass(self, state):
        targetctx = state.targetctx
        state.library = LinkOnlyLibrary(targetctx.codegen(), state.func_id.func_qualname)
        state.flags.no_compile = True  # lower only: no executable, no machine code
        super().run_pass(state)
        result = state["cr"]
        entry = _link_only_entry()
        # What get_executable would have done: register the implementation
        # (and its library, for linking) with the target, so callers find it.
        targetctx.insert_user_function(entry, result.fndesc, [state.library])
        state["cr"] = result._replace(cfunc=entry)
        return True


class LinkOnlyCompiler(compiler.CompilerBase):
    """Numba's nopython pipeline with :class:`LinkOnlyLowering` for its lowering."""

    def define_pipelines(self):
        pm = compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(LinkOnlyLowering, "link-only lowering") if cls is typed_passes.NativeLowering
                     else (cls, desc) for cls, desc in pm.passes]
        pm.finalize()
        return [pm]


class PrebuiltCache(caching.NullCache):
    """The cache of a link-only kernel: saves nothing (there is no machine
    code), and loads a signature only when :data:`load_hook` says that a
    helper process has compiled it (numba's :class:`~numba.core.caching.FunctionCache`,
    made on first use: the same files as an ``njit(cache=True)`` of the
    same function)."""

    def __init__(self, py_func):
        self._py_func = py_func
        self._files = None

    def load_overload(self, sig, target_context):
        hook = load_hook
        if hook is None or not hook(self._py_func, sig):
            return None
        if self._files is None:
            try:
                self._files = caching.FunctionCache(self._py_func)
            except RuntimeError:  # no cache locator (a read-only install): compile
                return None
        return self._files.load_overload(sig, target_context)


class CompiledOnly:
    """A numba function compiled for compiled callers only (see :func:`compiled_only`).

    Compiled code calls :attr:`dispatcher`; a call from Python compiles and
    runs :attr:`python_dispatcher`, an ordinary ``njit`` twin of the same
    function (its own cache files), on first use.
    """

    def __init__(self, py_func, options):
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self._options = options
        self.dispatcher = njit(no_cpython_wrapper=True, no_cfunc_wrapper=True,
                               pipeline_class=LinkOnlyCompiler, **options)(py_func)
        self.dispatcher._cache = PrebuiltCache(py_func)
        self._python = None

    @property
    def python_dispatcher(self):
        """The twin that Python calls (compiled with the CPython wrapper)."""
        if self._python is None:
            f = self.py_func
            twin = pytypes.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                                        f.__closure__)
            twin.__qualname__ = f.__qualname__ + "__from_python"  # cache files apart from the kernel's
            twin.__module__ = f.__module__
            self._python = njit(cache=True, **self._options)(twin)
        return self._python

    def __call__(self, *args):
        return self.python_dispatcher(*args)


@typeof_impl.register(CompiledOnly)
def _typeof_compiled_only(val, c):
    return types.Dispatcher(val.dispatcher)


def compiled_only(func=None, **options):
    """``njit(**options)`` for a function that only compiled code calls.

    The function is compiled into its callers' code only (module
    docstring): no wrappers, no machine code of its own, no cache files of
    its own; the ``njit(cache=True)`` kernel at the top of the call tree
    caches it with itself. Calling it from Python still works: that
    compiles an ordinary twin on first use (:class:`CompiledOnly`), so a
    function that Python calls on the common path should stay ``njit``.

    Examples
    --------
    >>> from numba import njit
    >>> @compiled_only
    ... def twice(x):
    ...     return 2 * x
    >>> @njit
    ... def caller(x):
    ...     return twice(x) + 1
    >>> caller(3)
    7
    """
    if func is None:
        return lambda f: CompiledOnly(f, options)
    return CompiledOnly(func, options)
