"""The error swcuts raises for a user's unusable input, and the helpers
that keep its message to one line."""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """A user's input is unusable.

    The message is a single line that says what is wrong and how to fix it,
    suitable for printing directly to a terminal without a traceback.
    """



def _show(p) -> str:
    """Render a path for a one-line message (control characters escaped)."""
    return "".join(repr(c)[1:-1] if ord(c) < 32 else c for c in str(p))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
