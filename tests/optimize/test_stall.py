"""The stall rule, on hand-built step records."""

from __future__ import annotations

import pytest

from skillopt.training.stall import stalled
from skillopt.training.steps import StepRecord


def step(n: int, decision: str = "rejected", failing=("a", "b"), skill: str = "h0") -> StepRecord:
    return {
        "step": n,
        "kind": "step",
        "epoch": n,
        "decision": decision,
        "failing": list(failing),
        "incumbent_hash": skill,
    }


INITIAL: StepRecord = {"step": 0, "kind": "initial", "epoch": 0, "decision": "initial"}


def test_three_unproductive_steps_on_the_same_failures_and_skill_are_a_stall():
    steps = [INITIAL, step(1), step(2, "no_candidate"), step(3)]
    assert stalled(steps, 3) == (
        "stalled: the last 3 steps showed the optimizer the same 2 failing training "
        "tasks of the same skill, and none gave a better candidate (2 rejected, "
        "1 no candidate)"
    )
    assert stalled(steps[:3], 3) is None  # only two so far
    assert stalled(steps, 2) is not None and stalled(steps, 4) is None


def test_patience_0_never_stalls():
    assert stalled([INITIAL] + [step(i) for i in range(1, 10)], 0) is None


@pytest.mark.parametrize(
    "last",
    [
        step(3, "accepted"),  # it beat the incumbent
        step(3, failing=("a",)),  # something new failed or got fixed
        step(3, skill="h1"),  # another incumbent (a slow update was accepted)
        step(3, "no_candidate", failing=()),  # nothing failed: nothing to learn from
    ],
)
def test_anything_new_is_not_a_stall(last):
    assert stalled([INITIAL, step(1), step(2), last], 3) is None


def test_steps_without_failures_never_stall():
    """As the bundled exemplars runs: clean batches give no candidate, by design."""
    clean = [step(i, "no_candidate", failing=()) for i in range(1, 6)]
    assert stalled([INITIAL, *clean], 3) is None


def test_slow_updates_between_steps_are_not_counted():
    slow: StepRecord = {"step": 2, "kind": "slow_update", "epoch": 1, "decision": "rejected"}
    skipped: StepRecord = {"step": 4, "kind": "slow_update", "epoch": 2, "decision": "skipped"}
    assert stalled([INITIAL, step(1), slow, step(3), skipped, step(5)], 3) is not None


def test_records_from_before_the_failing_set_was_kept_never_stall():
    old = [{**step(i)} for i in range(1, 4)]
    for rec in old:
        del rec["failing"]
    assert stalled([INITIAL, *old], 3) is None
