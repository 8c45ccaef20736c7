"""Models: the fast ``delta``/``apply`` path against the slow ``log_target``,
per-label likelihoods against independent references, region terms."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swcuts.graph.region_graph import RegionGraph
from swcuts.models.image import ImageModel
from swcuts.models.potts import PottsModel
from swcuts.models.image import FAMILIES
from swcuts.models.partition import canonical

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def random_atoms(rng, h, w, p_pair=0.6):
    """Tile an HxW grid with atoms of one or two (4-adjacent) pixels."""
    atoms = -np.ones((h, w), np.int64)
    k = 0
    for p in rng.permutation(h * w).tolist():
        r, c = divmod(p, w)
        if atoms[r, c] >= 0:
            continue
        atoms[r, c] = k
        if rng.random() < p_pair:
            nb = [(r + dr, c + dc) for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0))
                  if 0 <= r + dr < h and 0 <= c + dc < w and atoms[r + dr, c + dc] < 0]
            if nb:
                rr, cc = nb[rng.integers(len(nb))]
                atoms[rr, cc] = k
        k += 1
    return atoms


def random_features(rng, h, w, colour):
    shape = (h, w, 3) if colour else (h, w)
    kind = rng.integers(3)
    if kind == 0:
        return rng.random(shape)
    if kind == 1:  # few distinct values, including the ends 0 and 1
        return rng.integers(0, 5, size=shape) / 4.0
    yy, xx = np.mgrid[0:h, 0:w].astype(float)
    base = 0.4 + 0.05 * xx - 0.03 * yy + 0.01 * xx * yy
    if colour:
        base = base[..., None] * np.array([1.0, 0.5, 1.5])
    return np.clip(base + rng.normal(0, 0.02, shape), 0, 1)


def tol(*values):
    return 1e-8 * max(1.0, *(abs(v) for v in values))


def assert_close(a, b, *scale, msg=""):
    assert math.isfinite(a) and math.isfinite(b), (a, b, msg)
    assert abs(a - b) <= tol(a, b, *scale), (a, b, a - b, msg)


def random_subset(rng, items, proper=False):
    """A non-empty (optionally proper) random subset of ``items``."""
    items = np.asarray(items)
    hi = items.size - 1 if proper else items.size
    k = int(rng.integers(1, hi + 1))
    return rng.choice(items, size=k, replace=False)


MOVE_KINDS = ("canonical", "merge", "split", "general", "noop")


def random_move(rng, part, kind, fresh_labels=None):
    """A move (R, new_label) of the given kind, or None if impossible here.

    ``fresh_labels`` lists the labels a split may use (default: the free list).
    """
    used = part.used_labels()
    sizes = part.size
    if kind == "canonical":
        big = used[sizes[used] >= 2]
        if used.size < 2 or big.size == 0:
            return None
        lab = int(rng.choice(big))
        R = random_subset(rng, part.members(lab), proper=True)
        new = int(rng.choice(used[used != lab]))
    elif kind == "merge":
        if used.size < 2:
            return None
        lab = int(rng.choice(used))
        R = part.members(lab)
        new = int(rng.choice(used[used != lab]))
    elif kind == "split":
        free = part.free if fresh_labels is None else list(fresh_labels)
        if not free:
            return None
        lab = int(rng.choice(used))
        R = random_subset(rng, part.members(lab), proper=bool(sizes[lab] >= 2 and rng.random() < 0.8))
        new = int(free[-1] if fresh_labels is None else rng.choice(free))
    elif kind == "general":
        if used.size < 2:
            return None
        # Vertices from at least two labels, usually not connected.
        labs = rng.choice(used, size=int(rng.integers(2, used.size + 1)), replace=False)
        R = np.concatenate([random_subset(rng, part.members(int(lab))) for lab in labs])
        free = part.free if fresh_labels is None else list(fresh_labels)
        if free and rng.random() < 0.4:
            new = int(free[-1] if fresh_labels is None else rng.choice(free))
        elif rng.random() < 0.5:
            new = int(rng.choice(labs))  # some of R already carry the new label
        else:
            new = int(rng.choice(used))
    elif kind == "noop":  # R inside the new label: nothing changes
        lab = int(rng.choice(used))
        R = random_subset(rng, part.members(lab))
        new = lab
    else:
        raise AssertionError(kind)
    return rng.permutation(np.asarray(R, dtype=np.int64)), new


def snapshot(state):
    out = [state.partition.labels.copy(), state.partition.size.copy(), list(state.partition.free),
           state.log_pi]
    if state.stats is not None:
        out += [state.stats.copy(), state.loglik.copy()]
    return out


def assert_same_snapshot(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y


def assert_workspace_clean(state):
    w = state.work
    for name in ("mark_a", "mark_b", "mark_c"):
        assert not np.any(getattr(w, name)), f"workspace {name} not cleared"


def assert_image_state_matches_fresh(model, state):
    labels = state.partition.labels
    fresh = model.new_state(labels.copy())
    assert_close(state.log_pi, model.log_target(labels), msg="log_pi")
    assert_close(fresh.log_pi, model.log_target(labels), msg="fresh log_pi")
    np.testing.assert_array_equal(state.partition.size, np.bincount(labels, minlength=labels.size))
    used = np.unique(labels)
    scale = max(1.0, float(np.abs(fresh.stats).max()))
    np.testing.assert_allclose(state.stats[used], fresh.stats[used], rtol=1e-9, atol=1e-9 * scale)
    for lab in used.tolist():
        assert_close(state.loglik[lab], fresh.loglik[lab], msg=f"loglik[{lab}]")
    unused = np.setdiff1d(np.arange(labels.size), used)
    # Emptied labels hold no statistics (a fresh label's delta reads them).
    assert not np.any(state.stats[unused])
    assert not np.any(state.loglik[unused])
    # Cached connected regions, where the model keeps them.
    if hasattr(fresh, "comp_root"):
        assert canonical(state.comp_root) == canonical(fresh.comp_root)
        np.testing.assert_allclose(state.comp_area, fresh.comp_area, rtol=1e-12)


def check_move(model, state, R, new, check_state):
    """delta against the slow path; apply; the state against a fresh one."""
    old_labels = state.partition.labels.copy()
    before = snapshot(state)
    d = model.delta(state, R, new)
    assert_same_snapshot(snapshot(state), before)  # delta is pure
    assert_workspace_clean(state)
    new_labels = old_labels.copy()
    new_labels[R] = new
    lt_old, lt_new = model.log_target(old_labels), model.log_target(new_labels)
    assert_close(d, lt_new - lt_old, lt_old, lt_new, msg=f"delta R={R.tolist()} new={new}")
    if np.all(old_labels[R] == new):
        assert d == 0.0
    model.apply(state, R, new, d)
    assert_workspace_clean(state)
    np.testing.assert_array_equal(state.partition.labels, new_labels)
    assert_close(state.log_pi, lt_new, msg="log_pi after apply")
    if check_state:
        check_state(model, state)
    return d


# ---------------------------------------------------------------------------
# ImageModel: delta / apply against log_target
# ---------------------------------------------------------------------------

image_params = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "h": st.integers(3, 4),
    "w": st.integers(4, 6),
    "colour": st.booleans(),
    "bins": st.sampled_from([2, 4, 8, 15, 32, 256]),
    "families": st.sets(st.sampled_from(FAMILIES), min_size=1).map(sorted),
    "a0": st.floats(0, 60),
    "a1": st.floats(0, 60),
    "a2": st.floats(0, 5),
    "kappa": st.floats(0, 3),
    "exponent": st.sampled_from([0.9, 0.5, 1.0, 1.7]),
    "window": st.sampled_from([0, 0, 1, 2]),
})


def build_image_model(p, p_pair=0.6):
    rng = np.random.default_rng(p["seed"])
    atoms = random_atoms(rng, p["h"], p["w"], p_pair)
    graph = RegionGraph.from_labels(atoms)
    feats = random_features(rng, p["h"], p["w"], p["colour"])
    # window histograms (model "window") need atoms larger than pixels
    window = p.get("window", 0) if graph.n_vertices < atoms.size else 0
    model = ImageModel(feats, atoms, graph, bins=p["bins"], families=p["families"],
                       a0=p["a0"], a1=p["a1"], a2=p["a2"], kappa=p["kappa"],
                       exponent=p["exponent"], window=window)
    n = graph.n_vertices
    labels = rng.integers(0, int(rng.integers(1, n + 1)), size=n)
    return rng, model, labels


@settings(max_examples=60, deadline=None, derandomize=True)
@given(image_params)
def test_image_delta_every_move_kind(p):
    rng, model, labels = build_image_model(p)
    assert 6 <= model.n_vertices <= 24
    base = model.new_state(labels)
    assert_image_state_matches_fresh(model, base)
    for kind in MOVE_KINDS:
        for _ in range(3):
            # Each move starts from the same labelling, on a fresh state.
            state = model.new_state(labels)
            move = random_move(rng, state.partition, kind)
            if move is None:
                continue
            check_move(model, state, *move, assert_image_state_matches_fresh)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(image_params)
def test_image_chain_of_moves_no_cache_drift(p):
    rng, model, labels = build_image_model(p)
    state = model.new_state(labels)
    kinds = []
    while len(kinds) < 30:
        kind = MOVE_KINDS[rng.integers(len(MOVE_KINDS))]
        move = random_move(rng, state.partition, kind)
        if move is None:
            continue
        kinds.append(kind)
        check_move(model, state, *move, None)
    assert_image_state_matches_fresh(model, state)


@pytest.mark.parametrize("seed", range(4))
def test_image_chain_larger_atoms(seed):
    """Bigger images and atoms (up to 3x3 pixel blocks): well-posed surface fits."""
    rng = np.random.default_rng(seed)
    h, w = 9, 12
    coarse = rng.permutation(12).reshape(3, 4)
    atoms = np.kron(coarse, np.ones((3, 3), np.int64))
    graph = RegionGraph.from_labels(atoms)
    feats = random_features(rng, h, w, colour=bool(seed % 2))
    model = ImageModel(feats, atoms, graph, bins=32, a0=5.0, a1=5.0, a2=0.5)
    state = model.new_state(rng.integers(0, 4, size=12))
    for _ in range(40):
        move = random_move(rng, state.partition, MOVE_KINDS[rng.integers(len(MOVE_KINDS))])
        if move is not None:
            check_move(model, state, *move, None)
    assert_image_state_matches_fresh(model, state)


def test_image_new_state_all_in_one_and_all_apart():
    rng = np.random.default_rng(7)
    atoms = random_atoms(rng, 4, 6)
    graph = RegionGraph.from_labels(atoms)
    model = ImageModel(rng.random((4, 6, 3)), atoms, graph, bins=8, a0=3.0, a1=2.0, a2=0.5)
    n = graph.n_vertices
    for labels in (np.zeros(n, np.int64), np.arange(n), np.arange(n)[::-1].copy()):
        state = model.new_state(labels)
        assert_image_state_matches_fresh(model, state)
    # All apart: no free label; merges still work.
    state = model.new_state(np.arange(n))
    assert state.partition.free == []
    e = graph.edges[0]
    check_move(model, state, np.array([e[0]]), int(e[1]), assert_image_state_matches_fresh)


def test_image_log_target_is_invariant_to_relabelling():
    rng = np.random.default_rng(3)
    atoms = random_atoms(rng, 4, 6)
    graph = RegionGraph.from_labels(atoms)
    model = ImageModel(rng.random((4, 6)), atoms, graph, bins=8)
    n = graph.n_vertices
    labels = rng.integers(0, 4, size=n)
    perm = rng.permutation(n)
    assert_close(model.log_target(labels), model.log_target(perm[labels]))
    assert_close(model.log_target(labels), model.log_target(np.asarray(canonical(labels))))


# ---------------------------------------------------------------------------
# PottsModel: delta / apply against log_target
# ---------------------------------------------------------------------------


def assert_potts_state_ok(model, state):
    labels = state.partition.labels
    assert_close(state.log_pi, model.log_target(labels))
    np.testing.assert_array_equal(state.partition.size[:model.n_labels],
                                  np.bincount(labels, minlength=model.n_labels))


potts_params = st.fixed_dictionaries({
    "seed": st.integers(0, 2**32 - 1),
    "grid": st.booleans(),
    "n": st.integers(3, 12),
    "n_labels": st.integers(1, 5),
    "beta": st.floats(-2, 3),
    "field_scale": st.sampled_from([0.0, 0.5, 3.0]),
})


def build_potts(p):
    rng = np.random.default_rng(p["seed"])
    if p["grid"]:
        graph = RegionGraph.from_labels(random_atoms(rng, 3, 4))
    else:
        n = p["n"]
        raw = rng.integers(0, n, size=(2 * n, 2))
        graph = RegionGraph.from_edges(n, raw[raw[:, 0] != raw[:, 1]])
    n = graph.n_vertices
    L = p["n_labels"]
    field = rng.normal(0, 1, size=(n, L)) * p["field_scale"]
    model = PottsModel(graph, L, p["beta"], field)
    labels = rng.integers(0, L, size=n)
    return rng, model, labels


def potts_unused(model, part):
    """Label values 0..L-1 that no vertex carries."""
    return [k for k in range(model.n_labels) if part.size[k] == 0]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(potts_params)
def test_potts_delta_every_move_kind(p):
    rng, model, labels = build_potts(p)
    for kind in MOVE_KINDS:
        for _ in range(3):
            state = model.new_state(labels)
            assert_close(state.log_pi, model.log_target(labels))
            move = random_move(rng, state.partition, kind, fresh_labels=potts_unused(model, state.partition))
            if move is None:
                continue
            check_move(model, state, *move, assert_potts_state_ok)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(potts_params)
def test_potts_chain_of_moves(p):
    rng, model, labels = build_potts(p)
    state = model.new_state(labels)
    n = model.n_vertices
    for _ in range(30):
        if rng.random() < 0.5:
            # Any vertex set to any label value.
            R = random_subset(rng, np.arange(n))
            new = int(rng.integers(model.n_labels))
            move = (R.astype(np.int64), new)
        else:
            kind = MOVE_KINDS[rng.integers(len(MOVE_KINDS))]
            move = random_move(rng, state.partition, kind, fresh_labels=potts_unused(model, state.partition))
            if move is None:
                continue
        check_move(model, state, *move, assert_potts_state_ok)
    assert_potts_state_ok(model, state)


def test_potts_log_target_by_hand():
    g = RegionGraph.from_edges(3, [(0, 1), (1, 2)])
    field = np.array([[0.5, 0.0], [0.0, 1.0], [0.25, 0.0]])
    m = PottsModel(g, 2, 1.5, field)
    assert m.log_target(np.array([0, 0, 0])) == pytest.approx(2 * 1.5 + 0.5 + 0.0 + 0.25)
    assert m.log_target(np.array([0, 1, 0])) == pytest.approx(0.5 + 1.0 + 0.25)
    assert m.energy_and_magnetisation(np.array([0, 1, 0])) == (2, pytest.approx(2 / 3))


def test_potts_rejects_bad_input():
    g = RegionGraph.from_edges(3, [(0, 1)])
    with pytest.raises(ValueError):
        PottsModel(g, 0, 1.0)
    with pytest.raises(ValueError):
        PottsModel(g, 2, 1.0, field=np.zeros((3, 3)))
    m = PottsModel(g, 2, 1.0)
    with pytest.raises(ValueError):
        m.new_state(np.array([0, 2, 1]))
