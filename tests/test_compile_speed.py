"""The typing and lowering shortcuts of :mod:`swcuts._numba.compile_speed`
give what numba's own give (issue 37: a first run compiles faster)."""

import numpy as np
import pytest
from llvmlite import ir as llvmir
from numba import njit, types
from numba.core import base, errors, targetconfig
from numba.core.compiler import Flags
from numba.core.registry import cpu_target
from numba.core.types import functions
from numba.core.typing import templates

import swcuts._numba.cache  # noqa: F401 - installs compile_speed
from swcuts._numba import compile_speed


def test_installed():
    assert functions.BaseFunction.get_call_type is compile_speed.memo_call_type
    assert base.BaseContext.get_abi_sizeof is compile_speed.memo_abi_sizeof
    assert templates._OverloadFunctionTemplate._get_impl is compile_speed.shared_overload_impl


def _fnty(op):
    ctx = cpu_target.typing_context
    ctx.refresh()
    return ctx, ctx.resolve_value_type(op)


@pytest.mark.parametrize("op, args", [
    (max, (types.int64, types.float64)),
    (abs, (types.float64,)),
    (np.sqrt, (types.float64,)),
])
def test_memo_call_type_gives_numbas_signature(op, args):
    ctx, fnty = _fnty(op)
    own = compile_speed._ORIGINAL_CALL_TYPE(fnty, ctx, args, {})
    assert fnty.get_call_type(ctx, args, {}) == own
    assert fnty.get_call_type(ctx, args, {}) == own  # from the memo
    assert len(compile_speed._CALL_TYPES) > 0


def test_memo_call_type_keeps_no_failure_and_keys_by_flags():
    ctx, fnty = _fnty(max)
    bad = (types.unicode_type, types.float64)
    for _ in range(2):  # a failure is not kept: it raises again
        with pytest.raises(errors.TypingError):
            fnty.get_call_type(ctx, bad, {})
    assert not any(key[0] is fnty and key[2] == bad for key in compile_speed._CALL_TYPES)
    args = (types.int32, types.int32)
    flags = Flags()
    flags.error_model = "numpy"
    with targetconfig.ConfigStack().enter(flags):
        fnty.get_call_type(ctx, args, {})
    fnty.get_call_type(ctx, args, {})
    kept = [key for key in compile_speed._CALL_TYPES if key[0] is fnty and key[2] == args]
    assert len(kept) == 2  # one per set of flags


def test_memo_call_type_in_a_compile_gives_the_same_results():
    @njit
    def f(a, b):
        return max(a, b) + abs(a - b) * 2 + int(a)

    assert f(3, 5.5) == max(3, 5.5) + abs(3 - 5.5) * 2 + 3
    assert f(-2.5, 1) == 1 + 3.5 * 2 + int(-2.5)


def test_plain_markup_is_numbas_text():
    scheme = errors.HighlightColorScheme()
    assert compile_speed._ORIGINAL_MARKUP is not None
    for color in (None, "\x1b[34m"):
        for style in (None, compile_speed._BRIGHT):
            assert (compile_speed.plain_markup(scheme, "a message", color, style)
                    == compile_speed._ORIGINAL_MARKUP(scheme, "a message", color, style))
    assert scheme.errmsg("x") == compile_speed._ORIGINAL_MARKUP(scheme, "x")


def test_memo_abi_sizeof_matches_llvm_and_asks_again_for_named_structs():
    ctx = cpu_target.target_context
    i64, f64 = llvmir.IntType(64), llvmir.DoubleType()
    cases = [i64, f64, llvmir.LiteralStructType([i64, f64, llvmir.ArrayType(i64, 3)]),
             llvmir.IntType(8).as_pointer()]
    for ty in cases:
        assert ctx.get_abi_sizeof(ty) == compile_speed._ORIGINAL_SIZEOF(ctx, ty)
        assert ctx.get_abi_sizeof(ty) == compile_speed._ORIGINAL_SIZEOF(ctx, ty)
    assert ctx.get_abi_sizeof(cases[2]) == 40
    named = llvmir.global_context.get_identified_type("swcuts_test_struct")
    if named.is_opaque:
        named.set_body(i64, i64)
    before = len(compile_speed._SIZES)
    assert ctx.get_abi_sizeof(named) == 16
    assert len(compile_speed._SIZES) == before  # not kept


def test_inherited_options_are_numbas():
    names = compile_speed.inherited_options()
    assert names is not None and {"nrt", "error_model", "fastmath"} <= set(names)


def _counted_overload():
    """A new function with an ``@overload`` that counts its builds."""
    from numba.extending import overload

    builds = []

    def twice(x):  # pragma: no cover - only its overload runs
        raise NotImplementedError

    @overload(twice)
    def _twice(x):
        builds.append(x)
        return lambda x: 2 * x

    return twice, builds


def _callers(twice):
    def body(x):
        return twice(x) + 1

    # a and b differ only in flags the overload does not inherit (a C
    # wrapper, nogil); c in one it does (the error model)
    return (njit(body), njit(no_cfunc_wrapper=True, nogil=True)(body), njit(error_model="numpy")(body))


def test_overload_shared_by_callers_that_inherit_the_same_flags():
    twice, builds = _counted_overload()
    a, b, c = _callers(twice)
    assert a(3.5) == b(3.5) == 8.0
    assert len(builds) == 1  # a and b share one compiled overload
    assert c(3.5) == 8.0
    assert len(builds) == 2  # c has its own


def test_overload_per_caller_flags_without_it(monkeypatch):
    # negative control: numba's own cache key builds the overload for b again
    monkeypatch.setattr(templates._OverloadFunctionTemplate, "_get_impl", compile_speed._ORIGINAL_GET_IMPL)
    twice, builds = _counted_overload()
    a, b, _ = _callers(twice)
    assert a(3.5) == b(3.5) == 8.0
    assert len(builds) == 2
