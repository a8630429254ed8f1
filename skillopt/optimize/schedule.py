"""The schedule of a run: how many steps an epoch has, the training batches, what a
step reflects on and what it shows as solved, and the textual learning rate (how
many edits a step may apply), and the description's steps a `--part both` run adds
(`TriggerPart`).

A pure function of the step index: `constant` keeps the maximum, `linear` and
`cosine` decay from the maximum at the first step to the minimum at the last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from skillopt.config import Settings
    from skillopt.suite.task import Suite

T = TypeVar("T")

SCHEDULES = ("constant", "linear", "cosine")


def edit_budget(
    step: int, total_steps: int, *, max_edits: int, min_edits: int, schedule: str = "cosine"
) -> int:
    """Edits allowed at `step` (0-based) of `total_steps`: never more than
    `max_edits` (a default minimum above it follows it down; a minimum given above
    it is refused by the settings)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose {', '.join(SCHEDULES)}")
    low, high = min(min_edits, max_edits), max_edits
    if schedule == "constant" or total_steps <= 1:
        return high
    t = min(max(step, 0), total_steps - 1) / (total_steps - 1)
    if schedule == "linear":
        value = high - (high - low) * t
    else:
        value = low + (high - low) * (1 + math.cos(math.pi * t)) / 2
    return max(low, min(high, math.floor(value + 0.5)))  # round half up, not to even


def steps_per_epoch(n_train: int, batch_size: int) -> int:
    return max(1, math.ceil(n_train / batch_size))


def chunks(items: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


PROTECT_SAMPLE = 3  # solved tasks shown beside each failures minibatch


def successes_to_protect(failures: Sequence[T], successes: Sequence[T], size: int) -> list[T]:
    """The solved tasks a step shows beside its failures, as behaviour the edits must
    not break: a small sample (at most `size`, and at most `PROTECT_SAMPLE`), and only
    when the step has failures, whose fixes could break them. They cost no call of
    their own: they ride along in each failures call (a separate call on them only ever
    proposed edits that rank after every failure-derived one, and rarely reached a
    candidate). With no failures there is no call and nothing to guard them against."""
    return list(successes[: min(size, PROTECT_SAMPLE)]) if failures else []


@dataclass(frozen=True)
class TriggerPart:
    """What the description's side of a `--part both` run adds: its steps (one
    description each) and its rollouts on the trigger queries (upper bounds)."""

    per_epoch: int
    steps: int
    rollouts: int

    @classmethod
    def of(cls, suite: Suite, s: Settings, body_steps: int, task_val: int) -> TriggerPart | None:
        if (queries := suite.trigger_suite) is None:
            return None
        train, val = queries.split("train"), len(queries.split("val")) * s.samples
        steps = steps_per_epoch(len(train), s.batch_size) * s.epochs
        # the initial skill; each step's batch, candidate and held tasks; each body
        # candidate's held queries; the initial and best skills on test
        rollouts = val + steps * (min(s.batch_size, len(train)) + val + task_val)
        rollouts += body_steps * val + 2 * len(queries.split("test")) * s.samples
        return cls(steps // s.epochs, steps, rollouts)
