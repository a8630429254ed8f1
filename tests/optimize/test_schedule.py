"""The edit budget schedule (constant, linear and cosine decay from max to min) and
what a step reflects on."""

from __future__ import annotations

import math

import pytest

from skillopt.errors import InputError
from skillopt.optimize.schedule import (
    PROTECT_SAMPLE,
    SCHEDULES,
    edit_budget,
    successes_to_protect,
)


def sequence(schedule: str, total: int, max_edits: int = 4, min_edits: int = 2) -> list[int]:
    return [
        edit_budget(i, total, max_edits=max_edits, min_edits=min_edits, schedule=schedule)
        for i in range(total)
    ]


def test_schedules_listed():
    assert set(SCHEDULES) == {"constant", "linear", "cosine"}


def test_default_is_cosine():
    assert edit_budget(3, 8, max_edits=4, min_edits=2) == sequence("cosine", 8)[3]
    assert edit_budget(7, 8, max_edits=4, min_edits=2) == 2


@pytest.mark.parametrize("total", [2, 3, 5, 8, 13])
def test_constant_is_max(total):
    assert sequence("constant", total, 6, 1) == [6] * total


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
@pytest.mark.parametrize(
    "total, hi, lo", [(2, 4, 2), (5, 4, 2), (8, 4, 2), (10, 8, 1), (30, 5, 1), (7, 3, 3)]
)
def test_decay_endpoints_monotone_and_bounded(schedule, total, hi, lo):
    seq = sequence(schedule, total, hi, lo)
    assert seq[0] == hi
    assert seq[-1] == lo
    assert all(a >= b for a, b in zip(seq, seq[1:])), seq
    assert all(lo <= v <= hi for v in seq)
    assert all(isinstance(v, int) for v in seq)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_single_step_is_max(schedule):
    assert edit_budget(0, 1, max_edits=4, min_edits=2, schedule=schedule) == 4


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_lr_is_the_cap_when_the_minimum_is_above_it(schedule):
    # `--lr 1` alone leaves the default min_lr (2) above it: 1 edit a step, never 2
    assert sequence(schedule, 8, max_edits=1, min_edits=2) == [1] * 8


def test_a_min_lr_given_above_lr_is_refused_naming_both(isolated):
    from helpers import write_skill, write_suite
    from typer.testing import CliRunner

    from skillopt.cli.main import app
    from skillopt.config import Settings, resolve_settings

    with pytest.raises(InputError, match=r"min_lr \(5\) is above lr \(1\)"):
        resolve_settings({"lr": 1, "min_lr": 5})
    assert resolve_settings({"lr": 1}).lr == 1  # the default min_lr follows it down
    # one layer alone is not judged: a later one may raise lr
    project = isolated / "skillopt.yaml"
    project.write_text("min_lr: 5\n")
    assert resolve_settings({"lr": 6}, project_file=project).min_lr == 5
    with pytest.raises(InputError, match="min_lr"):
        resolve_settings({}, project_file=project)
    with pytest.raises(ValueError, match="above lr"):
        Settings(lr=1, min_lr=5)
    skill = write_skill(isolated / "skills")
    items = [{"id": f"t{i}", "input": "a", "expected": "a"} for i in range(4)]
    suite = write_suite(isolated / "tasks.yaml", items, scorer="exact")
    args = ["train", str(skill), "--tasks", str(suite), "--target", "scripted/echo"]
    res = CliRunner().invoke(app, [*args, "--optimizer", "exemplars", "--lr", "1", "--min-lr", "5"])
    assert res.exit_code == 2 and "min_lr (5) is above lr (1)" in res.stderr


def test_unknown_schedule_raises():
    with pytest.raises(ValueError, match="unknown schedule 'step'"):
        edit_budget(0, 5, max_edits=4, min_edits=2, schedule="step")


def test_cosine_4_to_2_over_8_steps_exact():
    # value = 2 + 2 * (1 + cos(pi * i / 7)) / 2 = 3 + cos(pi * i / 7), rounded:
    # 4.00, 3.90, 3.62, 3.22, 2.78, 2.38, 2.10, 2.00
    expected_values = [3 + math.cos(math.pi * i / 7) for i in range(8)]
    assert [round(v) for v in expected_values] == [4, 4, 4, 3, 3, 2, 2, 2]
    assert sequence("cosine", 8) == [4, 4, 4, 3, 3, 2, 2, 2]


def test_linear_8_to_1_over_8_steps_exact():
    # value = 8 - 7 * i / 7 = 8 - i
    assert sequence("linear", 8, 8, 1) == [8, 7, 6, 5, 4, 3, 2, 1]


def test_cosine_stays_high_longer_than_linear():
    cos, lin = sequence("cosine", 11, 10, 0), sequence("linear", 11, 10, 0)
    assert lin == [10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert cos[0] == 10 and cos[-1] == 0
    assert cos[5] == 5  # the midpoint is the mean of max and min
    assert all(c >= v for c, v in zip(cos[:5], lin[:5]))
    assert all(c <= v for c, v in zip(cos[6:], lin[6:]))
    assert cos[2] > lin[2] and cos[8] < lin[8]


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_steps_outside_range_are_clamped(schedule):
    assert edit_budget(-3, 8, max_edits=4, min_edits=2, schedule=schedule) == 4
    assert edit_budget(20, 8, max_edits=4, min_edits=2, schedule=schedule) == 2


def test_a_small_sample_of_successes_is_shown_only_beside_failures():
    wins = [f"s{i}" for i in range(20)]
    assert PROTECT_SAMPLE == 3
    assert successes_to_protect([], wins, 8) == []  # no call to show them in
    assert successes_to_protect(["f0"], wins, 8) == wins[:3]  # a small sample
    assert successes_to_protect(["f0"], wins, 2) == wins[:2]  # never above a minibatch
    assert successes_to_protect(["f0"], wins[:1], 8) == wins[:1]
    assert successes_to_protect(["f0", "f1"], [], 8) == []
