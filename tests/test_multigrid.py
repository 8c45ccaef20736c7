"""Multigrid SW cuts (Props. 9-11): exact enumeration for a fixed window
(the conditional π(X_Λ | X_Λ̄)) and for random windows (π itself)."""

import numpy as np
import pytest

from enumeration import assert_matches, exact_distribution, run_visits, set_partitions
from swcuts.models.image import ImageModel
from swcuts.graph.region_graph import RegionGraph
from swcuts.samplers.common import seed_compiled_rng
from swcuts.samplers.multigrid import Multigrid, window_pyramid
from swcuts.samplers.flips import vertex_coordinates
from test_enumeration_kernels import (boundary_setting, colour_setting, grey_learned_setting, grey_setting,
                                      grey_window_setting)
from test_multiflip import edge_q, pixel_setting, pixel_window_setting

SETTINGS = {"grey": (grey_setting, [2, 4]), "colour": (colour_setting, [2, 3]),
            "pixels2x3": (pixel_setting, [1, 2, 3]), "boundary": (boundary_setting, [2, 3]),
            # The "window" posterior on atoms, and on single-pixel atoms (lattice growth).
            "grey-window": (grey_window_setting, [2, 4]),
            "grey-learned": (grey_learned_setting, [2, 4]),
            "pixels2x3-window": (pixel_window_setting, [1, 2, 3])}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_random_windows_leave_posterior_invariant(name):
    make, sizes = SETTINGS[name]
    model, img, atoms = make()
    states = set_partitions(model.n_vertices)
    p = exact_distribution(model, states)
    kernel = Multigrid(model, edge_q(img, atoms, model.graph), window_sizes=sizes)
    tv, pvalue = run_visits(kernel, model, states, p, seed=21, n_samples=5000, thin=40)
    assert_matches(tv, pvalue, p, 5000)


@pytest.mark.parametrize("name,window", [("pixels2x3", (0, 2, 0, 2)), ("colour", (0, 3, 0, 3)),
                                         ("pixels2x3-window", (0, 2, 0, 2))])
def test_fixed_window_samples_the_conditional(name, window):
    model, img, atoms = SETTINGS[name][0]()
    vy, vx, _ = vertex_coordinates(model.graph)
    inside = (vy >= window[0]) & (vy < window[1]) & (vx >= window[2]) & (vx < window[3])
    assert 0 < inside.sum() < model.n_vertices
    # From one label, the vertices outside Λ stay one block: the states are
    # the partitions with that restriction, with π renormalised over them.
    states = [s for s in set_partitions(model.n_vertices)
              if len({s[v] for v in np.flatnonzero(~inside)}) == 1]
    p = exact_distribution(model, states)
    kernel = Multigrid(model, edge_q(img, atoms, model.graph), window=window)
    tv, pvalue = run_visits(kernel, model, states, p, seed=5, n_samples=5000, thin=30)
    assert_matches(tv, pvalue, p, 5000)


class _NoCuts(Multigrid):
    """Wrong: drops the cut ratio of Prop. 9."""

    def __init__(self, model, q, **kw):
        super().__init__(model, q, **kw)
        self.log1mq = np.zeros_like(self.log1mq)


def test_enumeration_catches_a_multigrid_without_cut_ratio():
    model, img, atoms = pixel_setting()
    states = set_partitions(6)
    p = exact_distribution(model, states)
    kernel = _NoCuts(model, edge_q(img, atoms, model.graph), window_sizes=[2, 3])
    tv, pvalue = run_visits(kernel, model, states, p, seed=5, n_samples=5000, thin=40)
    assert pvalue < 1e-3


def test_window_sides_follow_the_weights():
    from swcuts.samplers.multigrid import default_window_weights, draw_weighted_window

    sizes = np.array([2, 4, 8], dtype=np.int64)
    w = default_window_weights(sizes)
    np.testing.assert_allclose(w / w.sum(), np.array([16, 4, 1]) / 21)
    seed_compiled_rng(np.random.default_rng(0))
    win = np.zeros(4, np.int64)
    sides = []
    for _ in range(20000):
        # A 100x100 image: a window is clipped only at the border, so the
        # longer side of a window away from it is the drawn side.
        draw_weighted_window(sizes, np.cumsum(w), 100, 100, win)
        sides.append(max(win[1] - win[0], win[3] - win[2]))
    counts = np.array([np.sum(np.array(sides) == s) for s in sizes])
    # Clipped windows can look smaller, never larger: compare the largest side.
    assert abs(counts[2] / 20000 - 1 / 21) < 0.01
    assert abs((counts[0] + counts[1]) / 20000 - 20 / 21) < 0.01


def test_window_pyramid():
    assert window_pyramid((481, 321)).tolist() == [8, 16, 32, 64, 128, 256]
    assert window_pyramid((5, 3)).tolist() == [5]


@pytest.mark.parametrize("kw", [dict(window_sizes=[10]), dict(window_sizes=[0]),
                                dict(window_sizes=[]), dict(window=(0, 3, 0, 9)),
                                dict(window=(1, 1, 0, 2)),
                                dict(window_sizes=[1, 2], window_weights=[1.0]),
                                dict(window_sizes=[1, 2], window_weights=[1.0, -1.0]),
                                dict(window_sizes=[1, 2], window_weights=[0.0, 0.0]),
                                dict(window_sizes=[1, 2], window_weights=[1.0, np.nan])])
def test_bad_windows_are_refused(kw):
    model, img, atoms = pixel_setting()
    with pytest.raises(ValueError):
        Multigrid(model, edge_q(img, atoms, model.graph), **kw)


def test_multigrid_anneals_pixels():
    rng = np.random.default_rng(3)
    h, w = 24, 30
    img = np.where((np.arange(w)[None, :] < 12) | (np.arange(h)[:, None] < 8), 0.2, 0.75)
    img = np.clip(img + 0.05 * rng.standard_normal((h, w)), 0, 1)[..., None]
    atoms = np.arange(h * w).reshape(h, w)
    g = RegionGraph.from_labels(atoms)
    model = ImageModel(img, atoms, g, bins=8, a0=20, a1=20, a2=0.2)
    q = edge_q(img, atoms, g, ceiling=0.95)
    seed_compiled_rng(rng)
    state = model.new_state(np.zeros(g.n_vertices, dtype=np.int64))
    kernel = Multigrid(model, q)
    acc, best, best_labels = kernel.run(state, rng, np.geomspace(3, 0.05, 40000))
    assert acc > 100
    assert state.log_pi == pytest.approx(model.log_target(state.labels), abs=1e-5)
    assert best == pytest.approx(model.log_target(best_labels), abs=1e-5)
    # The two populations end up in different labels.
    lab = best_labels.reshape(h, w)
    assert lab[0, 0] == lab[-1, 0] and lab[-1, -1] != lab[-1, 0]


@pytest.mark.parametrize("seed", range(5))
def test_lattice_growth_matches_graph_growth(seed):
    """With q in {0, 1} growth is deterministic: the pixel-lattice growth and
    the CSR growth must find the same component (also on a subgraph)."""
    from swcuts.samplers.common import grow_into
    from swcuts.samplers.multigrid import grow_lattice, lattice_q

    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(2, 9)), int(rng.integers(2, 9))
    g = RegionGraph.from_labels(np.arange(h * w).reshape(h, w))
    if seed % 2:
        g = g.subgraph(rng.random(g.n_edges) < 0.8)
    q = (rng.random(g.n_edges) < 0.7).astype(float)
    qr, qd = lattice_q(g, q)
    assert qr.size == h * w
    vy, vx, _ = vertex_coordinates(g)
    labels = rng.integers(0, 2, size=h * w)
    mark = np.zeros(h * w, np.int8)
    a, b = np.empty(h * w, np.int64), np.empty(h * w, np.int64)
    for _ in range(20):
        y0, x0 = int(rng.integers(h)), int(rng.integers(w))
        win = np.array([y0, int(rng.integers(y0 + 1, h + 1)), x0, int(rng.integers(x0 + 1, w + 1))])
        v = int(win[0] * w + win[2])
        na = grow_lattice(v, labels, qr, qd, w, win, mark, a)
        nb = grow_into(v, labels, q, g.indptr, g.indices, g.edge_ids, mark, b, vy, vx, win)
        assert sorted(a[:na]) == sorted(b[:nb])
        assert not mark.any()


def test_lattice_q_refuses_atom_graphs():
    from swcuts.samplers.multigrid import lattice_q

    _, img, atoms = grey_setting()
    g = RegionGraph.from_labels(atoms)
    assert lattice_q(g, np.ones(g.n_edges))[0].size == 0
