"""The error swcuts raises for a user's unusable input, the helpers that
keep its message to one line, and the one check of a numeric option
(:func:`check_number`) that every public function uses, directly or
through :mod:`swcuts.segmentation.options` (it lives here, with no dependency, so that
the models can use it too)."""

from __future__ import annotations

import math
import numbers

__all__ = ["InputError", "InputTypeError", "is_real", "is_integer", "describe", "check_number", "show_path", "one_line"]


class InputError(ValueError):
    """A user's input is unusable.

    The message is a single line that says what is wrong and how to fix it,
    suitable for printing directly to a terminal without a traceback.
    """


class InputTypeError(InputError, TypeError):
    """An option of the wrong type: a string, a bool, None or an array where
    a number is meant.

    Both a :class:`TypeError` (what Python raises for a wrong type) and an
    :class:`InputError` (a one-line user error: the command line prints it
    and exits with code 2; callers that caught ``ValueError`` still do).
    """


def show_path(p) -> str:
    """Render a path for a one-line message (control characters escaped)."""
    return "".join(repr(c)[1:-1] if ord(c) < 32 else c for c in str(p))


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (white space folded, at most 200 characters)."""
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__


def is_real(value) -> bool:
    """Whether ``value`` is one real number: a Python or numpy integer or
    float (or another :class:`numbers.Real`), not a bool, a string or an
    array (a 0-d array included).

    Examples
    --------
    >>> import numpy as np
    >>> [is_real(v) for v in (1, 2.5, np.float32(1), np.int64(3), float("nan"))]
    [True, True, True, True, True]
    >>> [is_real(v) for v in ("1", True, np.bool_(True), None, np.array(1.0), 1j)]
    [False, False, False, False, False, False]
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_integer(value) -> bool:
    """Whether ``value`` is one integer (Python or numpy), not a bool.

    Examples
    --------
    >>> import numpy as np
    >>> is_integer(3), is_integer(np.uint8(3)), is_integer(3.0), is_integer(True)
    (True, True, False, False)
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def describe(value, width=40) -> str:
    """``value`` for a one-line message: what it is, never its full repr
    (an array is its shape, a long string is cut).

    Examples
    --------
    >>> import numpy as np
    >>> describe("1"), describe(True), describe(np.bool_(False)), describe(None), describe(np.float32(0.5))
    ("'1' (a string)", 'True (a bool)', 'False (a bool)', 'None', '0.5')
    >>> describe(np.ones((5, 5))), describe(np.array(2.0))
    ('an array of shape (5, 5)', 'a 0-d array (2.0)')
    """
    shape = getattr(value, "shape", None)
    if isinstance(value, str):
        text = repr(value)
        return (text if len(text) <= width else text[:width - 4] + "...'") + " (a string)"
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy's too
        return f"{value} (a bool)"
    if isinstance(shape, tuple) and not is_real(value):
        if shape == ():
            return f"a 0-d array ({_cut(' '.join(str(value).split()), width)})"
        return f"an array of shape {shape}"
    if value is None or is_real(value):
        try:
            return _cut(str(value), width)
        except ValueError:  # an int of more digits than Python converts
            return f"an integer of {value.bit_length()} bits"
    kind = type(value).__name__
    return f"{_cut(' '.join(repr(value).split()), width)} ({'an' if kind[0] in 'aeiou' else 'a'} {kind})"


def _cut(text, width) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def check_number(name, value, *, integer=False, allow_none=False, minimum=None, maximum=None,
                 exclusive=False, exclusive_max=False, what=None, why=""):
    """Check one numeric option: the one rule for every public function.

    A wrong type (a string, a bool, None where not allowed, an array, ...)
    is an :class:`InputTypeError` (a :class:`TypeError`), a number out of
    range (NaN and ±inf always are) an :class:`InputError`; both messages
    are one line that names the option and what it got. numpy scalars are
    accepted like Python numbers.

    Parameters
    ----------
    name : str
        The option's name, as the user typed it.
    value : object
        Its value.
    integer : bool
        An integer is needed (a float, even 2.0, is a TypeError).
    allow_none : bool
        None is accepted (the option's default).
    minimum, maximum : number, optional
        The range accepted (inclusive; ``exclusive=True`` excludes the
        minimum, ``exclusive_max=True`` the maximum).
    what : str, optional
        What the option must be, for the message (e.g. "a positive
        temperature"); default from the bounds.
    why : str
        Appended to the message of a value above ``maximum``.

    Returns
    -------
    object
        ``value``, unchanged.

    Raises
    ------
    InputTypeError
        ``value`` is not a number (an integer with ``integer=True``); a
        :class:`TypeError` and an :class:`InputError`.
    InputError
        ``value`` is not finite, or out of range.

    Examples
    --------
    >>> check_number("alpha", 0.5, minimum=0, exclusive=True)
    0.5
    >>> for value in ("1", True, float("nan"), 0):
    ...     try:
    ...         check_number("alpha", value, minimum=0, exclusive=True)
    ...     except (TypeError, ValueError) as exc:
    ...         print(type(exc).__name__, exc)
    InputTypeError alpha must be a number, got '1' (a string)
    InputTypeError alpha must be a number, got True (a bool)
    InputError alpha must be a positive number, got nan
    InputError alpha must be a positive number, got 0
    """
    if value is None and allow_none:
        return value
    kind = "an integer" if integer else "a number"
    if not (is_integer(value) if integer else is_real(value)):
        none = " or None" if allow_none else ""
        raise InputTypeError(f"{name} must be {kind}{none}, got {describe(value)}")
    if what is None:
        what = _default_what(integer, minimum, maximum, exclusive, exclusive_max)
    if integer:
        v = int(value)
    else:
        try:
            v = float(value)  # compared as a Python float: a float32 is not cast to the bounds' type
        except OverflowError:  # an int beyond float's range
            v = math.inf
        if not math.isfinite(v):
            raise InputError(f"{name} must be {what}, got {describe(value)}")
    if minimum is not None and (v <= minimum if exclusive else v < minimum):
        raise InputError(f"{name} must be {what}, got {describe(value)}")
    if maximum is not None and (v >= maximum if exclusive_max else v > maximum):
        if not why:
            raise InputError(f"{name} must be {what}, got {describe(value)}")
        most = f"less than {maximum}" if exclusive_max else f"at most {maximum}"
        raise InputError(f"{name} must be {most}{why}, got {describe(value)}")
    return value


def _default_what(integer, minimum, maximum, exclusive, exclusive_max) -> str:
    """"a positive integer", "an integer from 1 to 8", "a number in (0, 1)", ..."""
    if integer:
        if maximum is not None and minimum is not None:
            return f"an integer from {minimum} to {maximum}"
        if minimum == 1 or (minimum == 0 and exclusive):
            return "a positive integer"
        if minimum == 0:
            return "a non-negative integer"
        return f"an integer >= {minimum}" if minimum is not None else "an integer"
    high = f"< {maximum}" if exclusive_max else f"<= {maximum}"
    if minimum is None:
        return "a finite number" if maximum is None else f"a finite number {high}"
    low = f"> {minimum}" if exclusive else f">= {minimum}"
    if maximum is not None:
        return f"a number in {'(' if exclusive else '['}{minimum}, {maximum}{')' if exclusive_max else ']'}"
    if minimum == 0:
        return "a positive number" if exclusive else "a non-negative number"
    return f"a finite number {low}"
