"""Partition: sizes, free list, canonical keys, copies, validation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swcuts.models.partition import Partition, canonical


def check_consistent(p, n_slots=None):
    """Every cached field agrees with the labels."""
    n_slots = p.size.size if n_slots is None else n_slots
    assert p.size.size == n_slots
    expect = np.bincount(p.labels, minlength=n_slots)
    np.testing.assert_array_equal(p.size, expect)
    used = np.flatnonzero(expect)
    np.testing.assert_array_equal(p.used_labels(), used)
    assert p.n_labels == used.size
    free = p.free
    assert len(free) == len(set(free)), "free list has duplicates"
    assert sorted(free) == np.flatnonzero(expect == 0).tolist()
    assert p.n_labels + len(free) == n_slots
    # The free stack is a permutation of the slots: free ones, then used ones.
    assert sorted(p.free_stack.tolist()) == list(range(n_slots))
    assert sorted(p.free_stack[p.n_free[0]:].tolist()) == used.tolist()
    if free:
        fresh = p.fresh_label()
        assert 0 <= fresh < n_slots
        assert p.size[fresh] == 0
        assert fresh not in set(p.labels.tolist())
    for lab in used.tolist():
        assert p.members(lab).tolist() == np.flatnonzero(p.labels == lab).tolist()


def reference_canonical(labels):
    seen = {}
    out = []
    for x in np.asarray(labels).tolist():
        if x not in seen:
            seen[x] = len(seen)
        out.append(seen[x])
    return tuple(out)


# ---------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------


def test_initial_state():
    p = Partition([2, 2, 0, 4, 0])
    check_consistent(p, 5)
    assert p.n_vertices == 5
    assert p.n_labels == 3
    assert p.used_labels().tolist() == [0, 2, 4]
    assert sorted(p.free) == [1, 3]
    assert p.size.tolist() == [2, 0, 2, 0, 1]


def test_n_slots():
    p = Partition([0, 1, 1], n_slots=6)
    check_consistent(p, 6)
    assert sorted(p.free) == [2, 3, 4, 5]


def test_labels_are_copied():
    raw = np.array([0, 1, 1, 0])
    p = Partition(raw)
    p.relabel([0], 2)
    assert raw.tolist() == [0, 1, 1, 0]


def test_all_slots_used_has_no_free_label():
    p = Partition([3, 1, 0, 2])
    check_consistent(p, 4)
    assert p.n_labels == 4
    assert p.free == []


@pytest.mark.parametrize("labels,n_slots", [
    ([0, 1, 4], None),        # 4 >= N = 3
    ([0, -1, 1], None),       # negative
    ([0, 1, 2], 2),           # too few slots
    ([], None),               # no vertex
    ([], 3),
])
def test_bad_labels_raise(labels, n_slots):
    with pytest.raises(ValueError):
        Partition(labels, n_slots=n_slots)


# ---------------------------------------------------------------------------
# relabel
# ---------------------------------------------------------------------------


def test_relabel_to_fresh_and_back():
    p = Partition([0, 0, 1, 1, 1])
    fresh = p.fresh_label()
    assert fresh not in (0, 1)
    p.relabel([2, 3], fresh)
    check_consistent(p)
    assert p.labels.tolist() == [0, 0, 1, 1, fresh][:2] + [fresh, fresh, 1]
    assert p.n_labels == 3
    p.relabel([0, 1], 1)  # merge: label 0 becomes empty
    check_consistent(p)
    assert p.n_labels == 2
    assert 0 in p.free
    p.relabel(np.arange(5), fresh)
    check_consistent(p)
    assert p.n_labels == 1


def test_relabel_to_own_label_is_noop():
    p = Partition([0, 1, 1, 2])
    before = (p.labels.copy(), p.size.copy(), sorted(p.free))
    p.relabel([1, 2], 1)
    check_consistent(p)
    np.testing.assert_array_equal(p.labels, before[0])
    np.testing.assert_array_equal(p.size, before[1])
    assert sorted(p.free) == before[2]


def test_relabel_mixed_set_including_new_label():
    p = Partition([0, 1, 1, 2, 2, 3])
    p.relabel([0, 1, 3, 5], 2)  # vertex 3 already has label 2
    check_consistent(p)
    assert p.labels.tolist() == [2, 2, 1, 2, 2, 2]
    assert sorted(p.free) == [0, 3, 4, 5]


def test_relabel_empty_vertex_set_is_noop():
    p = Partition([0, 0, 1])
    fresh = p.fresh_label()
    p.relabel([], fresh)
    check_consistent(p)
    assert p.labels.tolist() == [0, 0, 1]
    p.relabel(np.array([], dtype=np.int64), 0)
    check_consistent(p)


@pytest.mark.parametrize("seed", range(20))
def test_random_relabel_sequence_stays_consistent(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    n_slots = n + int(rng.integers(0, 3))
    labels = rng.integers(0, max(1, n_slots // 2), size=n)
    p = Partition(labels, n_slots=n_slots)
    ref = labels.copy()
    check_consistent(p, n_slots)
    for _ in range(60):
        r = rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False)
        kind = rng.random()
        if kind < 0.3 and p.free:
            new = p.fresh_label()
        elif kind < 0.9:
            new = int(rng.choice(p.used_labels()))
        else:
            new = int(rng.integers(0, n_slots))
        p.relabel(r, new)
        ref[r] = new
        assert p.labels.tolist() == ref.tolist()
        check_consistent(p, n_slots)


def test_fresh_label_is_not_consumed_until_used():
    p = Partition([0, 0, 0])
    a = p.fresh_label()
    assert p.fresh_label() == a
    p.relabel([0], a)
    b = p.fresh_label()
    assert b != a
    check_consistent(p)


# ---------------------------------------------------------------------------
# canonical / compact_labels
# ---------------------------------------------------------------------------


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 8), min_size=1, max_size=20), st.permutations(list(range(9))))
def test_canonical_first_occurrence_and_relabel_invariance(labels, perm):
    labels = np.array(labels)
    key = canonical(labels)
    assert key == reference_canonical(labels)
    assert isinstance(key, tuple)
    hash(key)
    # Any injective relabelling gives the same key.
    perm = np.array(perm)
    assert canonical(perm[labels]) == key
    assert canonical(perm[labels] * 7 + 100) == key
    # Two labelings have the same key iff they define the same partition.
    same = all((labels[i] == labels[j]) == (key[i] == key[j])
               for i in range(labels.size) for j in range(labels.size))
    assert same


def test_canonical_distinguishes_partitions():
    assert canonical([0, 0, 1]) != canonical([0, 1, 1])
    assert canonical([5, 5, 2]) == canonical([1, 1, 0]) == (0, 0, 1)
    assert canonical([3]) == (0,)


@pytest.mark.parametrize("seed", range(10))
def test_compact_labels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20))
    p = Partition(rng.integers(0, n, size=n))
    for _ in range(5):
        r = rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False)
        p.relabel(r, p.fresh_label() if p.free and rng.random() < 0.5 else int(rng.choice(p.used_labels())))
    c = p.compact_labels()
    assert c.dtype == np.int64
    assert c.tolist() == list(reference_canonical(p.labels))
    assert set(c.tolist()) == set(range(p.n_labels))
    # First occurrences appear in order 0, 1, 2, ...
    firsts = [int(np.flatnonzero(c == k)[0]) for k in range(p.n_labels)]
    assert firsts == sorted(firsts)
    assert c[0] == 0
    # Same partition as the labels.
    assert canonical(c) == canonical(p.labels)


# ---------------------------------------------------------------------------
# copy
# ---------------------------------------------------------------------------


def test_copy_is_independent():
    p = Partition([0, 1, 1, 2], n_slots=6)
    q = p.copy()
    check_consistent(q, 6)
    assert q.labels.tolist() == p.labels.tolist()
    assert sorted(q.free) == sorted(p.free)
    q.relabel([0, 3], q.fresh_label())
    q.relabel([1], 2)
    check_consistent(q, 6)
    check_consistent(p, 6)
    assert p.labels.tolist() == [0, 1, 1, 2]
    assert p.size.tolist() == [1, 2, 1, 0, 0, 0]
    assert sorted(p.free) == [3, 4, 5]
    p.relabel([2], 0)
    assert q.labels.tolist()[2] == 1
    check_consistent(q, 6)


def test_fresh_label_refuses_when_every_slot_is_used():
    part = Partition(np.arange(4))
    with pytest.raises(RuntimeError, match="every slot"):
        part.fresh_label()
    part.relabel(np.array([3]), 0)
    assert part.fresh_label() == 3


def test_member_index_is_trusted_only_while_the_version_shows_no_move():
    """``MemberIndex``: entries are used unchecked while the partition's
    version is the one at which they were known exact (a rebuild, or a
    kernel's :meth:`~MemberIndex.updated` after updating them for its own
    moves); any other move is seen, also one that keeps every label's
    size (two vertices swapped), and the entries stay each label's members."""
    from swcuts.models.partition import MemberIndex

    rng = np.random.default_rng(3)
    part = Partition(rng.integers(0, 5, 40))
    index = MemberIndex()
    index.members(part, int(part.labels[0]))
    assert index.current(part)
    trusted = 0
    for t in range(200):
        v0 = part.version
        exact = index.current(part)
        i, j = rng.choice(40, 2, replace=False)
        li, lj = int(part.labels[i]), int(part.labels[j])
        part.relabel(np.array([i]), lj)
        part.relabel(np.array([j]), li)
        assert part.version == v0 + 2 and not index.current(part)
        index.updated(part, v0 - 1)  # not exact at that version: no change
        assert not index.current(part)
        if t % 2:  # the caller's own moves: it updates the entries and says so
            for lab in {li, lj}:
                index.lists[lab] = np.flatnonzero(part.labels == lab)
            index.updated(part, v0)
            assert index.current(part) == exact
            trusted += exact
        for lab in part.used_labels().tolist():
            np.testing.assert_array_equal(index.members(part, lab),
                                          np.flatnonzero(part.labels == lab))
    assert trusted > 50
    other = part.copy()  # another partition: checked again
    assert not index.current(other) and other.version == 0
    index.members(part, int(part.labels[0]))
    part.touch()
    assert not index.current(part)
