"""Less Python in numba's compiler: a first run compiles faster.

Numba types a call by looking up its implementation in a cache keyed by
the compile flags (``numba.core.typing.templates._get_impl``), and hashing
the flags (:meth:`numba.core.targetconfig.TargetConfig.values`) reads every
one of its ~40 options through a Python property, some 80,000 times in a
first run of ``swcuts segment``: about a tenth of numba's typing time
(issue 37). :func:`install` replaces ``values`` by the same dictionary read
from the stored values and the defaults directly (what each property's
getter returns), so hashes and equality are unchanged. Each lookup also
hashes the flags and compares them with a stored key (``__hash__`` and
``__eq__``, ~38,000 and ~23,000 times), each building that dictionary again;
:func:`fast_hash` and :func:`fast_eq` give the same results without it
(numba's hash is of the sorted option *names*, the same for every flags
object of a class; equality needs only the options set in either).

Most of the rest of numba's typing time went into resolving the same
calls again: typing a call to a builtin, an operator or an ``@overload``
(``BaseFunction.get_call_type``) tries the function's templates one by one
and formats an error message for each one that does not match, and a first
run asks ~4,400 times for only ~180 distinct (function, argument types)
pairs (``int64 + int64`` in every kernel, and again in every round of
each kernel's type propagation). :func:`memo_call_type` answers a repeated
question from a memo, keyed by everything the answer depends on: the
function type (its templates are part of it: numba makes a new type when
templates are added), the typing context, the argument types, the keyword
types, a copy of the compile flags in force and the target. A failed
resolution is not kept (it raises again). The code numba generates is the
same: a first run of ``swcuts segment`` lowers the same LLVM IR for every
function with and without it (checked in issue 37's notes, up to the
addresses and unique ids that differ between any two runs); about 0.6 CPU s
less.

Numba also highlights the text of every error it makes while typing and
lowering (thousands in a first run, most of them caught again: a template
that does not match, a value that is not a literal), and each highlight
starts and stops colorama, which wraps and unwraps ``sys.stdout`` and
``sys.stderr`` (``HighlightColorScheme._markup``). :func:`plain_markup`
returns the same text without that round trip.

An ``@overload`` of numba's (``max``, ``int``, ``np.random.random``, ...)
is compiled anew for every distinct set of compile flags of its callers
(``_OverloadFunctionTemplate._get_impl`` keys its cache by the callers'
flags), and swcuts' kernels differ in flags that do not reach the
overload's code (a wrapper for Python or not, ``nogil``): a first run
compiled ``int`` three times and ``max`` four. The flags an overload's
compile takes from its caller are the ones numba's CPU target *inherits*
(``inherit_if_not_set`` in ``CPUTargetOptions.finalize``: ``nrt``,
``fastmath``, ``error_model``, ``forceinline`` in numba 0.68, read from
numba's source on first use); :func:`shared_overload_impl` keys the cache
by those alone, so callers that agree on them share one compiled overload,
the same code.

Lowering asks for the size of an LLVM type for every variable it
allocates (``BaseContext.get_abi_sizeof``), and llvmlite answers by
writing and parsing a little LLVM module each time; :func:`memo_abi_sizeof`
keeps the answer per type (literal types only: a named struct's body can
change).

Before linking, numba runs LLVM's function passes over every function of
each module it lowers (``CPUCodeLibrary._optimize_functions``), with a new
pass builder and pass manager per function, also for the functions a
module only declares (its callees, numba's runtime): ~250 declarations
against ~40 definitions in a first run. A declaration has no body to
optimise; :func:`optimize_defined_functions` skips them, and runs the same
passes on the definitions.

Importing :mod:`swcuts._numba.cache` installs it (every compiled module of
swcuts imports that first). ``tests/test_numba_cache.py`` checks it
against the numba installed: the same values for flags with and without
options set.
"""

from __future__ import annotations

from llvmlite import ir as _llvmir
from numba.core import base as _base
from numba.core import codegen as _codegen
from numba.core import errors as _errors
from numba.core.typing import templates as _templates
from numba.core import targetconfig
from numba.core.target_extension import get_local_target
from numba.core.types import functions as _functions

__all__ = ["install", "fast_values", "fast_hash", "fast_eq", "memo_call_type", "plain_markup",
           "memo_abi_sizeof",
           "shared_overload_impl",
           "optimize_defined_functions"]

_ORIGINAL_VALUES = targetconfig.TargetConfig.values
_ORIGINAL_HASH = targetconfig.TargetConfig.__hash__
_ORIGINAL_EQ = targetconfig.TargetConfig.__eq__
_ORIGINAL_CALL_TYPE = _functions.BaseFunction.get_call_type
#: (function type, context, args, kws, flags, target) -> signature
_CALL_TYPES = {}
_OVERLOAD = getattr(_templates, "_OverloadFunctionTemplate", None)
_ORIGINAL_GET_IMPL = getattr(_OVERLOAD, "_get_impl", None)
#: Names of the options a compile inherits from its caller's flags
#: (:func:`inherited_options`); [] until read, None if they cannot be read.
_INHERITED = []
_ORIGINAL_OPTIMIZE = _codegen.CPUCodeLibrary._optimize_functions
_ORIGINAL_SIZEOF = _base.BaseContext.get_abi_sizeof
#: (target data, LLVM type text) -> ABI size in bytes
_SIZES = {}
#: numba's error highlighting (None when colorama is missing or highlighting is off).
_SCHEME = getattr(_errors, "HighlightColorScheme", None)
_ORIGINAL_MARKUP = getattr(_SCHEME, "_markup", None)
_RESET = getattr(getattr(_errors, "Style", None), "RESET_ALL", None)
_BRIGHT = getattr(getattr(_errors, "Style", None), "BRIGHT", None)
_HASHES = {}


def fast_values(self):
    """All option values of a ``TargetConfig``: as numba's ``values``,
    without a property call per option."""
    vals = self._values
    return {name: vals.get(name, option.default) for name, option in self.options.items()}


def fast_hash(self):
    """numba's ``hash(tuple(sorted(self.values())))``: sorting a dict sorts
    its keys, the option names of the class; computed once per class."""
    cls = type(self)
    h = _HASHES.get(cls)
    if h is None:
        h = _HASHES[cls] = hash(tuple(sorted(self.options)))
    return h


def fast_eq(self, other):
    """numba's ``self.values() == other.values()``, comparing only the
    options set in either (the others are both the default)."""
    if not isinstance(other, targetconfig.TargetConfig):
        return NotImplemented
    opts = self.options
    if opts is not other.options:
        return _ORIGINAL_EQ(self, other)
    a, b = self._values, other._values
    if a is b or a == b:  # the same options set to the same values
        return True
    for name in a.keys() | b.keys():
        option = opts.get(name)
        if option is None:  # not an option of the class: numba's own answer
            return _ORIGINAL_EQ(self, other)
        x = a.get(name, option.default)
        y = b.get(name, option.default)
        if not (x is y or x == y):
            return False
    return True


def memo_call_type(self, context, args, kws):
    """numba's ``BaseFunction.get_call_type`` (the signature of a call to a
    builtin, operator or overloaded function), answered from a memo when
    the same function type was asked about with the same context, argument
    and keyword types, compile flags and target before (module docstring).
    Failures are not kept; unhashable keys go to numba's own."""
    flags = targetconfig.ConfigStack.top_or_none()
    try:
        key = (self, context, tuple(args), tuple(kws.items()),
               None if flags is None else type(flags)(flags), get_local_target(context))
        sig = _CALL_TYPES.get(key)
    except TypeError:  # an unhashable argument
        return _ORIGINAL_CALL_TYPE(self, context, args, kws)
    if sig is None:
        sig = _ORIGINAL_CALL_TYPE(self, context, args, kws)
        if sig is not None:
            _CALL_TYPES[key] = sig
    return sig


def plain_markup(self, msg, color=None, style=_BRIGHT):
    """numba's ``HighlightColorScheme._markup`` without starting colorama:
    the colour and style codes, the message and the reset code, the same
    string (anything but a ``str`` message goes to numba's own)."""
    if not isinstance(msg, str):
        return _ORIGINAL_MARKUP(self, msg, color, style)
    return (color or "") + (style or "") + msg + _RESET


def memo_abi_sizeof(self, ty):
    """numba's ``BaseContext.get_abi_sizeof``: the ABI size of the LLVM type
    ``ty`` under the context's data layout, kept per type text (a type that
    names a struct, ``%"..."``, is asked anew: its body may change)."""
    text = str(ty) if isinstance(ty, _llvmir.Type) else None
    if text is None or "%" in text:
        return _ORIGINAL_SIZEOF(self, ty)
    key = (self.target_data, text)
    size = _SIZES.get(key)
    if size is None:
        size = _SIZES[key] = _ORIGINAL_SIZEOF(self, ty)
    return size


def inherited_options():
    """The compile options numba's CPU target inherits from the caller's
    flags (``flags.inherit_if_not_set("name", ...)`` in
    ``CPUTargetOptions.finalize``), read from numba's source once; None
    when that cannot be read."""
    if _INHERITED == []:
        try:
            import inspect
            import re

            from numba.core import cpu

            names = re.findall(r"""inherit_if_not_set\(\s*["'](\w+)["']""",
                               inspect.getsource(cpu.CPUTargetOptions.finalize))
            _INHERITED[:] = [tuple(names)] if names else [None]
        except Exception:  # noqa: BLE001 - no source, another numba
            _INHERITED[:] = [None]
    return _INHERITED[0]


def _inherited_key(flags, names):
    """The values of ``names`` in ``flags`` (None for no flags), hashable."""
    if flags is None:
        return None
    values = []
    for name in names:
        value = getattr(flags, name)
        inner = getattr(value, "flags", None)  # FastMathOptions: a set of names
        if isinstance(inner, (set, frozenset)):
            value = (type(value).__name__, frozenset(inner))
        values.append(value)
    return tuple(values)


def shared_overload_impl(self, args, kws):
    """numba's ``_OverloadFunctionTemplate._get_impl`` (the dispatcher of an
    ``@overload`` for the given argument types), cached by the values of
    the caller's flags that the overload's compile inherits
    (:func:`inherited_options`) instead of all of them (module
    docstring). Where those cannot be read, or a key is unhashable,
    numba's own."""
    names = inherited_options()
    if names is None:
        return _ORIGINAL_GET_IMPL(self, args, kws)
    try:
        key = (self.context, tuple(args), tuple(kws.items()), "swcuts-inherited",
               _inherited_key(targetconfig.ConfigStack.top_or_none(), names))
        if key in self._impl_cache:
            return self._impl_cache[key]
    except TypeError:  # an unhashable value
        return _ORIGINAL_GET_IMPL(self, args, kws)
    return self._build_impl(key, args, kws)


def optimize_defined_functions(self, ll_module):
    """numba's ``CPUCodeLibrary._optimize_functions`` (LLVM's function
    passes on each function of ``ll_module``, a new pass manager each)
    for the functions the module defines; its declarations have no body
    and are skipped."""
    ll_module.data_layout = self._codegen._data_layout
    for func in ll_module.functions:
        if func.is_declaration:
            continue
        fpm, pb = self._codegen._function_pass_manager()
        with self._recorded_timings.record(f"Function passes on {func.name!r}", pb):
            fpm.run(func, pb)


def install():
    """Make every ``TargetConfig`` use :func:`fast_values`, :func:`fast_hash`
    and :func:`fast_eq` (idempotent), if they give what numba's own give on
    its compile flags (a numba whose internals differ is left as it is), and
    numba's function types :func:`memo_call_type` and its error highlighting
    :func:`plain_markup` (if that gives the same text), the sizes of
    LLVM types :func:`memo_abi_sizeof`, ``@overload`` dispatchers
    :func:`shared_overload_impl`, and LLVM's function passes
    :func:`optimize_defined_functions`."""
    try:
        from numba.core.compiler import Flags

        flags, other = Flags(), Flags()
        flags.nrt = True
        same = fast_values(flags) == _ORIGINAL_VALUES(flags)
        same_key = (fast_hash(flags) == _ORIGINAL_HASH(flags) == _ORIGINAL_HASH(other)
                    and fast_eq(flags, other) is _ORIGINAL_EQ(flags, other) is False
                    and fast_eq(flags, Flags(flags)) is _ORIGINAL_EQ(flags, Flags(flags)) is True)
    except Exception:  # noqa: BLE001 - another numba: keep its own
        same = same_key = False
    if same:
        targetconfig.TargetConfig.values = fast_values
    if same and same_key:
        targetconfig.TargetConfig.__hash__ = fast_hash
        targetconfig.TargetConfig.__eq__ = fast_eq
    if getattr(_functions.BaseFunction, "get_call_type", None) is _ORIGINAL_CALL_TYPE:
        _functions.BaseFunction.get_call_type = memo_call_type
    if _ORIGINAL_GET_IMPL is not None and _OVERLOAD._get_impl is _ORIGINAL_GET_IMPL:
        _OVERLOAD._get_impl = shared_overload_impl
    if _codegen.CPUCodeLibrary._optimize_functions is _ORIGINAL_OPTIMIZE:
        _codegen.CPUCodeLibrary._optimize_functions = optimize_defined_functions
    if _base.BaseContext.get_abi_sizeof is _ORIGINAL_SIZEOF:
        _base.BaseContext.get_abi_sizeof = memo_abi_sizeof
    if _ORIGINAL_MARKUP is not None and isinstance(_RESET, str) and _SCHEME._markup is _ORIGINAL_MARKUP:
        scheme = _SCHEME()
        try:
            same = all(plain_markup(scheme, "x", c, s) == _ORIGINAL_MARKUP(scheme, "x", c, s)
                       for c in (None, "\x1b[31m") for s in (None, _BRIGHT))
        except Exception:  # noqa: BLE001 - another numba or colorama: keep its own
            same = False
        if same:
            _SCHEME._markup = plain_markup
