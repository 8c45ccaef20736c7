"""seed_compiled_rng seeds compiled code's generator as np.random.seed in
compiled code does (numba's helper library, no kernel compiled for it)."""

import numpy as np
from numba import njit

from swcuts.samplers.common import _seed, seed_compiled_rng


@njit
def _draws(n):
    out = np.empty(n)
    for i in range(n):
        out[i] = np.random.random()
    return out


def test_seeding_from_python_gives_the_draws_of_compiled_seeding():
    for s in (0, 1, 12345):
        seed_compiled_rng(np.random.default_rng(s))
        fast = _draws(20)
        _seed(int(np.random.default_rng(s).integers(0, 2**31 - 1)))
        compiled = _draws(20)
        assert np.array_equal(fast, compiled)
    # Negative control: another seed gives other draws.
    seed_compiled_rng(np.random.default_rng(0))
    a = _draws(20)
    seed_compiled_rng(np.random.default_rng(1))
    assert not np.array_equal(a, _draws(20))
