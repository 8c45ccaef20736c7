"""The time budget is the wall time of the whole run (swcuts.inference.budget.Budget).

No timing asserts: a fake clock stands in for the phases before sampling,
and the tests check what the sampler is given (the budget less the time
elapsed and the reserve, at least the minimum), the warning, and the
phases recorded and shown.
"""

from __future__ import annotations

import functools
import io
import sys
import warnings

import numpy as np
import pytest

import swcuts
import swcuts.segmentation.segment
import swcuts.inference.budget
import swcuts.cli.app
from swcuts.inference.budget import (
    MIN_SAMPLING_SHARE, Budget, BudgetWarning, mark_process_start, process_start, write_reserve)
from swcuts.cli.app import main


class FakeClock:
    """Seconds that move only when a test moves them."""

    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def two_halves(h=24, w=32):
    image = np.zeros((h, w))
    image[:, w // 2:] = 1.0
    return image + 0.05 * np.random.default_rng(0).standard_normal(image.shape)


@pytest.fixture
def allotted(monkeypatch):
    """Every value Budget.allot gives, with the fraction it was asked for."""
    seen = []
    real = Budget.allot

    def spy(self, *, warn=True):
        value = real(self, warn=warn)
        seen.append((self.fraction, value))
        return value

    monkeypatch.setattr(Budget, "allot", spy)
    return seen


def slow_atoms(monkeypatch, clock, seconds):
    """compute_atoms that takes ``seconds`` on ``clock``."""
    real = swcuts.segmentation.build.compute_atoms

    def atoms(*args, **kwargs):
        clock.now += seconds
        return real(*args, **kwargs)

    monkeypatch.setattr(swcuts.segmentation.build, "compute_atoms", atoms)


# ------------------------------------------------------------------ the helper
def test_sampler_gets_the_budget_less_elapsed_and_reserve():
    clock = FakeClock()
    budget = Budget(10, clock=clock, reserve=1.5)
    with budget.phase("reading"):
        clock.now += 2.0
    with budget.phase("atoms"):
        clock.now += 3.0
    assert budget.phases == {"reading": 2.0, "atoms": 3.0}
    assert budget.elapsed() == 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert budget.allot() == pytest.approx(10 - 5 - 1.5)
    assert budget.share(0.25).allot() == pytest.approx(0.25 * 3.5)
    assert budget.warned == []


def test_minimum_applies_with_one_warning_that_names_the_phases():
    clock = FakeClock()
    budget = Budget(2, clock=clock, reserve=12.0)
    with budget.phase("reading"):
        clock.now += 0.5
    with budget.phase("atoms"):
        clock.now += 37.5
    with pytest.warns(BudgetWarning) as record:
        assert budget.allot() == pytest.approx(MIN_SAMPLING_SHARE * 2)
    (w,) = record
    message = str(w.message)
    assert "\n" not in message
    assert "atoms 37.5 s" in message and "reading 0.5 s" in message
    assert "took 38.0 s of the 2 s time budget" in message
    assert "writing the outputs needs about 12 s" in message
    assert "minimum of 0.2 s" in message
    with warnings.catch_warnings():  # said once
        warnings.simplefilter("error")
        budget.allot()
    assert budget.warned == [message]


def test_child_gets_its_part_of_what_is_left():
    clock = FakeClock()
    budget = Budget(12, clock=clock, reserve=2.0)
    clock.now += 1.0
    first = budget.child(1 / 2)
    assert first.seconds == pytest.approx((12 - 1 - 2) / 2)
    clock.now += first.seconds  # it used all of it
    second = budget.child(1)
    assert second.seconds == pytest.approx(12 - 1 - first.seconds - 2)
    assert second.elapsed() == 0.0 and second.reserve == 0.0
    clock.now += 4.5
    with pytest.warns(BudgetWarning, match=r"took 4.5 s of its 4.5 s part of the time budget"):
        second.allot()
    assert Budget(None).child(0.5).seconds is None


def test_without_seconds_only_phases():
    clock = FakeClock()
    budget = Budget(None, clock=clock)
    assert not budget.timed
    with budget.phase("atoms"):
        clock.now += 1.0
    assert budget.phases == {"atoms": 1.0}
    budget.check_end()
    assert budget.warned == []


def test_overrun_reported_at_the_end():
    clock = FakeClock()
    budget = Budget(10, clock=clock)
    clock.now += 11.9
    budget.check_end()
    assert budget.warned == []
    with budget.phase("writing"):
        clock.now += 3.0
    with pytest.warns(BudgetWarning, match=r"the run took 14.9 s of the 10 s time budget \(writing 3.0 s\)"):
        budget.check_end()


def test_bad_seconds_refused():
    for bad in (0, -1.0, float("nan"), float("inf"), "2", True):
        with pytest.raises(ValueError, match="time_budget"):
            Budget(bad)


def test_phases_shown_only_on_a_terminal(monkeypatch):
    clock = FakeClock()
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    budget = Budget(5, clock=clock, progress=True)
    with budget.phase("atoms", "watershed"):
        clock.now += 0.5
    shown = tty.getvalue()
    assert "swcuts: atoms (watershed) ... [0.0 s of 5 s]" in shown
    assert "\n" not in shown  # a short phase leaves no line
    with budget.phase("model"):
        clock.now += 3.0
    assert tty.getvalue().endswith("swcuts: model: 3.0 s" + " " * (len("swcuts: model ... [0.5 s of 5 s]")
                                                                   - len("swcuts: model: 3.0 s")) + "\n")
    for progress, stream in ((False, FakeTTY()), (True, io.StringIO())):
        monkeypatch.setattr(sys, "stderr", stream)
        with Budget(5, clock=clock, progress=progress).phase("atoms"):
            clock.now += 3.0
        assert stream.getvalue() == ""


def test_write_reserve_and_process_start():
    assert write_reserve((3000, 4000)) == pytest.approx(2.9)
    assert write_reserve((1000, 1000), compare=4) == pytest.approx(1.4)
    mark_process_start(12.5)
    try:
        assert process_start() == 12.5
    finally:
        mark_process_start(None)
    assert process_start() > 0


# --------------------------------------------------------------------- the API
def test_segment_sampler_gets_what_is_left(monkeypatch, allotted):
    clock = FakeClock()
    slow_atoms(monkeypatch, clock, 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetWarning)
        seg = swcuts.segment(two_halves(), seed=0, n_atoms=20, time_budget=Budget(0.4, clock=clock))
    assert allotted == [(1.0, pytest.approx(0.3))]
    assert seg.steps > 0
    assert seg.phase_seconds["atoms"] == pytest.approx(0.1)
    assert {"preparing", "atoms", "graph", "edges", "model", "sampling"} <= set(seg.phase_seconds)
    assert seg.summary()["phase_seconds"]["atoms"] == pytest.approx(0.1)


def test_segment_minimum_and_warning(monkeypatch, allotted):
    clock = FakeClock()
    slow_atoms(monkeypatch, clock, 5.0)
    with pytest.warns(BudgetWarning, match=r"atoms 5.0 s.*of the 0.4 s time budget.*minimum of 0.04 s"):
        seg = swcuts.segment(two_halves(), seed=0, n_atoms=20, time_budget=Budget(0.4, clock=clock))
    assert allotted == [(1.0, pytest.approx(MIN_SAMPLING_SHARE * 0.4))]
    assert seg.steps > 0  # a result exists


def test_segment_seconds_from_the_call(monkeypatch, allotted):
    """A plain number: the budget counts from the call (here the clock is real)."""
    seg = swcuts.segment(two_halves(), seed=0, n_atoms=20, time_budget=0.2)
    ((fraction, value),) = allotted
    assert fraction == 1.0 and 0 < value < 0.2
    assert seg.steps > 0


@pytest.mark.parametrize("sampler", ["swc", "gibbs", "multilevel"])
def test_steps_not_changed_by_a_budget_that_only_records(sampler):
    """The phases recorded with a step budget do not change a seeded run."""
    kw = dict(sampler=sampler, seed=3, steps=300, n_atoms=20)
    plain = swcuts.segment(two_halves(), **kw)
    recorded = swcuts.segment(two_halves(), time_budget=Budget(None), **kw)
    np.testing.assert_array_equal(plain.labels, recorded.labels)
    assert plain.energy == recorded.energy
    assert "sampling" in recorded.phase_seconds


def test_multigrid_from_atoms_shares(monkeypatch, allotted):
    clock = FakeClock()
    slow_atoms(monkeypatch, clock, 0.1)
    swcuts.segment(two_halves(), sampler="multigrid", seed=0, n_atoms=20, time_budget=Budget(0.5, clock=clock))
    (f1, first), (f2, second) = allotted
    share = swcuts.segmentation.segment.ATOMS_INIT_TIME_SHARE
    assert (f1, f2) == (share, 1.0)
    assert first == pytest.approx(share * 0.4)  # after the SLIC atoms
    assert second == pytest.approx(0.5 - 0.2)  # after the pixels' "atoms" too


def test_sample_posterior_gets_what_is_left(monkeypatch, allotted):
    clock = FakeClock()
    slow_atoms(monkeypatch, clock, 0.2)
    ps = swcuts.sample_posterior(two_halves(), n_samples=8, chains=2, n_atoms=16, seed=0,
                                 time_budget=Budget(0.6, clock=clock), granularity=1)
    assert allotted == [(1.0, pytest.approx(0.4))]
    assert ps.labels.shape[0] >= 8


def test_granularity_levels_share_what_is_left(monkeypatch, allotted):
    # Each of the 3 levels takes its share of what is left when it starts
    # (this clock stands still while sampling: 0.4/3, 0.4/2, 0.4/1).
    from swcuts.segmentation import posterior

    clock = FakeClock()
    slow_atoms(monkeypatch, clock, 0.2)
    given = []
    real = posterior.sample_model

    def spy(*args, time_budget=None, **kwargs):
        given.append(time_budget)
        return real(*args, time_budget=time_budget, **kwargs)

    monkeypatch.setattr(posterior, "sample_model", spy)
    swcuts.sample_posterior(two_halves(), n_samples=12, chains=2, n_atoms=16, seed=0, model="image",
                            time_budget=Budget(0.6, clock=clock))
    assert [v for _, v in allotted] == [pytest.approx(0.4)] * 3
    assert given == [pytest.approx(0.4 / 3), pytest.approx(0.2), pytest.approx(0.4)]


def test_segment_with_posterior_samples_halves(monkeypatch, allotted):
    clock = FakeClock()
    swcuts.segment(two_halves(), seed=0, n_atoms=16, posterior_samples=8, time_budget=Budget(0.6, clock=clock))
    # segment() takes half, then the samples' 3 granularity levels what is left.
    (f1, first), *levels = allotted
    assert (f1, first) == (0.5, pytest.approx(0.3))
    assert levels == [(1.0, pytest.approx(0.6))] * 3


def test_segment_motion_levels_get_what_is_left(monkeypatch, allotted):
    from swcuts.evaluation.synthetic.motion import layered_pair

    clock = FakeClock()
    real = swcuts.segment

    def regions(*args, **kwargs):
        clock.now += 0.3
        return real(*args, **kwargs)

    monkeypatch.setattr(swcuts, "segment", regions)  # the level-1 segmentation
    pair = layered_pair(shape=(40, 48), n_objects=1, seed=3)
    res = swcuts.segment_motion(pair.frame1, pair.frame2, seed=0, rounds=2, time_budget=Budget(1.0, clock=clock))
    assert allotted[-1] == (1.0, pytest.approx(0.7))
    assert res.flow.shape == (40, 48, 2)


# --------------------------------------------------------------------- the CLI
@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.npy"
    np.save(path, two_halves())
    return str(path)


def test_help_says_what_the_budget_covers(capsys):
    for command in ("segment", "compare", "motion"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "wall time of the whole" in text, command
        assert "start of swcuts" in text, command


def test_cli_names_every_phase_on_a_terminal(tiny, tmp_path, monkeypatch):
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["segment", tiny, "-o", str(tmp_path / "out"), "--time-budget", "0.5", "--n-atoms", "20"]) == 0
    shown = tty.getvalue()
    for phase in ("reading", "preparing", "atoms", "graph", "edges", "model", "sampling", "writing"):
        assert f"swcuts: {phase}" in shown, phase
    assert "of 0.5 s]" in shown


def test_cli_warns_in_one_line_when_the_fixed_phases_take_the_budget(tiny, tmp_path, monkeypatch, capsys):
    clock = FakeClock()
    monkeypatch.setattr(swcuts.cli.app, "process_start", clock)
    monkeypatch.setattr(swcuts.cli.app, "Budget", functools.partial(Budget, clock=clock))
    slow_atoms(monkeypatch, clock, 38.0)
    rc = main(["segment", tiny, "-o", str(tmp_path / "out"), "--time-budget", "2", "--n-atoms", "20"])
    out, err = capsys.readouterr()
    assert rc == 0
    (line,) = err.splitlines()
    assert line.startswith("swcuts: warning: the work before sampling (atoms 38.0 s")
    assert "of the 2 s time budget" in line and "sampling got its minimum of 0.2 s" in line
    assert "(the whole run 38.0 s of the 2 s budget)" in out


def test_cli_counts_from_the_start_of_the_process(tiny, tmp_path, monkeypatch, allotted):
    clock = FakeClock()
    monkeypatch.setattr(swcuts.cli.app, "Budget", functools.partial(Budget, clock=clock))
    mark_process_start(clock.now - 0.25)  # the imports took 0.25 s
    try:
        assert main(["segment", tiny, "-o", str(tmp_path / "out"), "--time-budget", "1.5", "--n-atoms", "20",
                     "--no-progress"]) == 0
    finally:
        mark_process_start(None)
    reserve = write_reserve(two_halves().shape)
    assert allotted == [(1.0, pytest.approx(1.5 - 0.25 - reserve))]


def test_compare_shares_the_budget_equally(tiny, tmp_path, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(swcuts.cli.app, "process_start", clock)
    monkeypatch.setattr(swcuts.cli.app, "Budget", functools.partial(Budget, clock=clock))
    given = []
    real = swcuts.cli.app.segment

    def segment(image, **kwargs):
        given.append(kwargs["time_budget"].seconds)
        return real(image, **kwargs)

    monkeypatch.setattr(swcuts.cli.app, "segment", segment)
    assert main(["compare", tiny, "-o", str(tmp_path / "cmp"), "--samplers", "swc,gibbs", "--time-budget", "1.6",
                 "--n-atoms", "20", "--no-progress"]) == 0
    left = 1.6 - write_reserve(two_halves().shape, compare=2)
    assert given == [pytest.approx(left / 2), pytest.approx(left)]  # the clock stood still


def test_examples_of_the_module():
    import doctest

    result = doctest.testmod(swcuts.inference.budget)
    assert result.failed == 0 and result.attempted > 0
