"""The stall rule, on hand-built step records."""

from __future__ import annotations

from dataclasses import replace

import pytest
from step_records import batch, initial, skipped_slow_update, slow_update

from skillopt.training.stall import stalled
from skillopt.training.steps import BatchRecord, StepRecord


def step(n: int, decision: str = "rejected", failing=("a", "b"), skill: str = "h0") -> BatchRecord:
    return batch(n, decision, epoch=n, failing=tuple(failing), incumbent_hash=skill)


INITIAL: StepRecord = initial()


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
    slow: StepRecord = slow_update(2, 1, "rejected")
    skipped: StepRecord = skipped_slow_update(4, 2)
    assert stalled([INITIAL, step(1), slow, step(3), skipped, step(5)], 3) is not None


def test_records_from_before_the_failing_set_was_kept_never_stall():
    old = [replace(step(i), failing=None) for i in range(1, 4)]  # no `failing` key
    assert stalled([INITIAL, *old], 3) is None
