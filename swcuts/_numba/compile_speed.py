"""Less Python in numba's compiler: a first run compiles faster.

Numba types a call by looking up its implementation in a cache keyed by
the compile flags (``numba.core.typing.templates._get_impl``), and hashing
the flags (:meth:`numba.core.targetconfig.TargetConfig.values`) reads every
one of its ~40 options through a Python property, some 80,000 times in a
first run of ``swcuts segment``: about a tenth of numba's typing time
(issue 37). :func:`install` replaces ``values`` by the same dictionary read
from the stored values and the defaults directly (what each property's
getter returns), so hashes and equality are unchanged.

Importing :mod:`swcuts._numba.cache` installs it (every compiled module of
swcuts imports that first). ``tests/test_numba_cache.py`` checks it
against the numba installed: the same values for flags with and without
options set.
"""

from __future__ import annotations

from numba.core import targetconfig

__all__ = ["install", "fast_values"]

_ORIGINAL_VALUES = targetconfig.TargetConfig.values


def fast_values(self):
    """All option values of a ``TargetConfig``: as numba's ``values``,
    without a property call per option."""
    vals = self._values
    return {name: vals.get(name, option.default) for name, option in self.options.items()}


def install():
    """Make every ``TargetConfig`` use :func:`fast_values` (idempotent),
    if it gives what numba's own ``values`` gives on its compile flags
    (a numba whose internals differ is left as it is)."""
    try:
        from numba.core.compiler import Flags

        flags = Flags()
        flags.nrt = True
        same = fast_values(flags) == _ORIGINAL_VALUES(flags)
    except Exception:  # noqa: BLE001 - another numba: keep its own
        same = False
    if same:
        targetconfig.TargetConfig.values = fast_values
