"""The compiled head of the tree-guided global move (``tree_guided.heads``)
against the numpy code it replaces, bit for bit: numpy's summation order
(``np_sum``), the merge set and the merged labels' sums (``merge_set``),
and the free-list replay of a rejected merge (``moves._free_list_after_merge``).
"""

import numpy as np
import pytest

from swcuts.samplers.tree_guided.heads import merge_set, np_sum
from swcuts.samplers.tree_guided.freelist import _free_list_after_merge, _free_list_as_if_undone


def _bits(x):
    return np.asarray(x, np.float64).tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_np_sum_is_numpy_sum_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    sizes = list(range(0, 300)) + [1000, 1023, 1024, 1031, 4099, 20000]
    for n in sizes:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
        assert _bits(np_sum(a)) == _bits(a.sum()), n
    assert _bits(np_sum(np.array([-0.0, -0.0]))) == _bits(np.array([-0.0, -0.0]).sum())
    assert np_sum(np.array([-np.inf, 1.0])) == -np.inf


def _reference(a, log_u, lpm, l1pm, S, n):
    """The numpy code of the global move before the compiled head."""
    L = lpm.shape[0]
    orow = np.arange(L - 1)
    orow[a:] += 1
    lp, l1p = lpm[a, orow], l1pm[a, orow]
    inM = log_u < lp if L > 1 else np.zeros(0, bool)
    lsum = float(lp[inM].sum() + l1p[~inM].sum())
    rows = np.concatenate(([a], orow[inM])).astype(np.int64)
    nP = n[rows]
    return rows, orow[~inM], lsum, S[rows].sum(axis=0), int(nP.sum()), int(np.argmax(nP))


@pytest.mark.parametrize("D", [1, 2, 5, 9])
def test_merge_set_matches_numpy(D):
    rng = np.random.default_rng(D)
    checked_merges = 0
    for trial in range(400):
        L = int(rng.integers(1, 70))
        a = int(rng.integers(L))
        lpm = np.log(rng.uniform(1e-6, 1.0, (L, L)))
        l1pm = np.log(rng.uniform(1e-6, 1.0, (L, L)))
        if trial % 7 == 0:
            lpm[rng.random((L, L)) < 0.1] = -np.inf
        n = rng.integers(1, 5, L) if trial % 3 == 0 else rng.integers(1, 10_000, L)
        S = rng.standard_normal((L, D)) * 10.0 ** rng.integers(-3, 6, (L, D))
        log_u = np.log(rng.random(L - 1)) + (0.0 if trial % 2 else 3.0)
        perm, k, lsum, S_U, n_U, keep = merge_set(a, log_u, lpm, l1pm, S, n)
        rows, rest, lsum0, S_U0, n_U0, keep0 = _reference(a, log_u, lpm, l1pm, S, n)
        assert k == rows.size
        assert np.array_equal(perm[:k], rows) and np.array_equal(perm[k:], rest)
        assert _bits(lsum) == _bits(lsum0)
        if k > 1:
            checked_merges += 1
            assert _bits(S_U) == _bits(S_U0)
            assert (n_U, keep) == (n_U0, keep0)
    assert checked_merges > 100


class _FakePartition:
    def __init__(self, L, used):
        self.free_stack = np.arange(L, dtype=np.int64)[::-1].copy()
        self.n_free = np.array([L - used], np.int64)


def test_free_list_after_merge_is_the_delete_and_replay():
    rng = np.random.default_rng(5)
    for _ in range(200):
        L, used = 40, int(rng.integers(3, 40))
        a, b = _FakePartition(L, used), _FakePartition(L, used)
        perm = rng.permutation(a.free_stack[a.n_free[0]:])
        a.free_stack[a.n_free[0]:] = perm
        b.free_stack[:] = a.free_stack
        k = int(rng.integers(3, used + 1))
        P = np.asarray(rng.permutation(perm)[:k], np.int64)
        keep = int(rng.integers(k))
        _free_list_after_merge(a.free_stack, a.n_free, P, keep)
        _free_list_as_if_undone(b.free_stack, b.n_free, np.delete(P, keep), 0)
        assert np.array_equal(a.free_stack, b.free_stack) and a.n_free[0] == b.n_free[0]


# ---------------------------------------------------------------------------
# The ratio arithmetic and the member-list updates, compiled (session 16)
# ---------------------------------------------------------------------------


def _lse_reference(x):
    """The numpy log-sum-exp of ``ratio`` before it was compiled."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return -np.inf
    m = float(x.max())
    if m == -np.inf:
        return -np.inf
    return m + np.log(float(np.exp(x - m).sum()))


def _anchor_sum_reference(lpP, l1R):
    """The numpy ``merge_anchor_sum`` before it was compiled."""
    L = lpP.shape[0] + l1R.shape[1]
    outside = l1R.sum(axis=1)
    terms = np.empty(lpP.shape[0])
    for i in range(lpP.shape[0]):
        terms[i] = -np.log(L) + (lpP[i].sum() - lpP[i, i]) + outside[i]
    return _lse_reference(terms)


@pytest.mark.parametrize("seed", range(3))
def test_merge_anchor_sum_and_logsumexp_are_the_numpy_code_bit_for_bit(seed):
    from swcuts.samplers.tree_guided.ratio import _logsumexp, merge_anchor_sum

    rng = np.random.default_rng(seed)
    for t in range(600):
        m = int(rng.integers(1, 12))
        k = int(rng.integers(0, 300 if t % 10 == 0 else 20))  # rows past 8 and 128 terms
        scale = 10.0 ** rng.uniform(-3, 3)
        lpP = -np.abs(rng.standard_normal((m, m))) * scale
        l1R = -np.abs(rng.standard_normal((m, k))) * scale
        assert _bits(merge_anchor_sum(lpP, l1R)) == _bits(_anchor_sum_reference(lpP, l1R))
        x = rng.standard_normal(int(rng.integers(0, 400))) * scale
        if t % 7 == 0 and x.size:
            x[rng.integers(x.size)] = -np.inf
        assert _bits(_logsumexp(x)) == _bits(_lse_reference(x))
    assert _logsumexp(np.full(3, -np.inf)) == -np.inf
    # Negative control: a sequential (not pairwise) sum differs past 8 terms.
    differ = 0
    for _ in range(20):
        x = rng.standard_normal(200) * 10.0 ** rng.integers(-6, 6, 200)
        seq = 0.0
        for v in x:
            seq += v
        differ += _bits(seq) != _bits(np_sum(x))
    assert differ > 0


@pytest.mark.parametrize("seed", range(3))
def test_member_list_updates_are_numpys(seed):
    """``rebuild.list_without`` / ``list_with`` against the numpy code of
    ``TreeGuided._index_moved`` on ascending lists; a list that is not
    ascending is refused (the kernel then takes numpy's path)."""
    from swcuts.samplers.tree_guided.rebuild import list_with, list_without

    rng = np.random.default_rng(seed)
    for _ in range(400):
        n = int(rng.integers(1, 60))
        lst = np.sort(rng.choice(200, n, replace=False)).astype(np.int64)
        k = int(rng.integers(1, 10))
        items = rng.choice(250, k, replace=False).astype(np.int64)
        if rng.random() < 0.7:  # mostly items of the list
            items[: min(k, n)] = rng.choice(lst, min(k, n), replace=False)
        labs = rng.integers(0, 3, k).astype(np.int64)
        gone = items[labs == 1]
        pos = np.minimum(np.searchsorted(lst, gone), lst.size - 1)
        ok, out = list_without(lst, items, labs, 1)
        assert ok and np.array_equal(out, np.delete(lst, pos[lst[pos] == gone]))
        add = np.sort(items[labs == 2])
        ok, out = list_with(lst, items, labs, 2)
        assert ok and np.array_equal(out, np.insert(lst, np.searchsorted(lst, add), add))
        assert out.dtype == np.int64
    unsorted = np.array([3, 1, 2], np.int64)
    assert not list_without(unsorted, unsorted, np.zeros(3, np.int64), 0)[0]
    assert not list_with(unsorted, unsorted, np.zeros(3, np.int64), 0)[0]
