"""The bookkeeping of one `RolloutEngine.run` call: the jobs the store could not
serve, and the batch's results as they arrive.

Invariant: `Batch.results` holds one slot per (task, sample) in task order, None
until that rollout is served or run; `done` counts the filled slots and `cached`
those the store served.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from skillopt.rollouts.record import Rollout
from skillopt.suite.task import Task


class Job(NamedTuple):
    """A rollout the store could not serve: its place in the batch, and what makes it."""

    i: int
    task: Task
    sample: int
    key: str
    fp: dict[str, Any]


# a finished job, as a worker hands it back: (its place, the rollout, or what it raised)
Finished = tuple[int, Rollout | None, BaseException | None]


@dataclass
class Batch:
    """One `run` call's progress: results in task order, counts for the events."""

    label: str
    total: int
    results: list[Rollout | None] = field(default_factory=list)
    done: int = 0
    cached: int = 0

    def fill(self, i: int, rollout: Rollout, *, cached: bool = False) -> None:
        """Slot `i` is finished: run here, or served from the store (`cached`)."""
        self.results[i] = rollout
        self.done += 1
        if cached:
            self.cached += 1
