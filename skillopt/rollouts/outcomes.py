"""What a task came to over its samples: `TaskOutcome`, and the means and pass
rates over tasks that the gate, the training loop and evaluation all read.

Invariant: unscored rollouts are counted but never enter a value or a pass rate;
with several samples per task, a task's value is the mean of its scored samples
and it passes when at least half of them pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from skillopt.rollouts.record import Rollout


@dataclass(frozen=True)
class TaskOutcome:
    task_id: str
    value: float | None  # None: every sample unscored
    passed: bool | None
    samples: int
    scored: int


def task_outcomes(rollouts: Iterable[Rollout]) -> dict[str, TaskOutcome]:
    """Per-task aggregate over samples, in first-seen task order."""
    grouped: dict[str, list[Rollout]] = {}
    for r in rollouts:
        grouped.setdefault(r.task_id, []).append(r)
    out = {}
    for task_id, rs in grouped.items():
        scored = [r for r in rs if r.scored]
        if scored:
            value = sum(r.score or 0.0 for r in scored) / len(scored)
            passed = sum(1 for r in scored if r.passed) * 2 >= len(scored)
        else:
            value, passed = None, None
        out[task_id] = TaskOutcome(task_id, value, passed, len(rs), len(scored))
    return out


def mean_value(outcomes: dict[str, TaskOutcome]) -> float | None:
    """Mean over tasks with a scored sample; None when none was scored."""
    values = [o.value for o in outcomes.values() if o.value is not None]
    return sum(values) / len(values) if values else None


def scored_count(outcomes: dict[str, TaskOutcome]) -> int:
    return sum(1 for o in outcomes.values() if o.value is not None)


def pass_rate(outcomes: dict[str, TaskOutcome]) -> float | None:
    passed = [o.passed for o in outcomes.values() if o.passed is not None]
    return sum(passed) / len(passed) if passed else None
