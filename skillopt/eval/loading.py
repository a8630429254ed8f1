"""Whether the skill loaded, read from the rollouts' traces: the load rate of a task
suite's run, and a trigger suite's precision, recall and per-query load rate.

Invariants: only scored rollouts whose trace tells (`skill_invoked` true or false)
count; an unscored rollout says nothing about loading. A task counts as loaded when
the skill loaded in at least half of its traced samples (as a task passes when half
of its samples pass). Precision and recall count every traced sample of a trigger
query as one decision of the agent (with `--samples N`, N decisions per query).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from skillopt.rollouts.record import Rollout
from skillopt.suite.task import Task


class SplitResultLike(Protocol):
    """What `load_warnings` reads of an evaluation's split result."""

    variant: str
    split: str
    rollouts: list[Rollout]
    expected: dict[str, bool]


def traced(rollout: Rollout) -> bool | None:
    """Whether a scored rollout's trace shows the skill loaded; None when it cannot
    tell (or the rollout is unscored)."""
    invoked = rollout.trajectory.get("skill_invoked")
    return invoked if rollout.scored and isinstance(invoked, bool) else None


@dataclass(frozen=True)
class LoadRate:
    """In how many of a run's tasks the skill loaded."""

    loaded: int  # tasks whose traced samples mostly show the skill loaded
    tasks: int  # tasks with at least one traced sample
    loaded_rollouts: int
    rollouts: int  # traced rollouts

    @property
    def rate(self) -> float | None:
        return self.loaded / self.tasks if self.tasks else None

    @property
    def low(self) -> bool:
        """Fewer than half of the traced tasks loaded the skill."""
        return bool(self.tasks) and self.loaded * 2 < self.tasks

    def phrase(self) -> str:
        """`loaded in 3/10 tasks` (with the rollouts when samples make them differ)."""
        text = f"loaded in {self.loaded}/{self.tasks} tasks"
        if self.rollouts != self.tasks:
            text += f" ({self.loaded_rollouts}/{self.rollouts} traced rollouts)"
        return text

    def warning(self, label: str = "") -> str | None:
        """What a low load rate means and what to do, in one line (`label`: which run,
        e.g. `skill · test`); None when it is not low."""
        if not self.low:
            return None
        where = f" ({label})" if label else ""
        return (
            f"the skill loaded in only {self.loaded}/{self.tasks} tasks{where}: the agent picks a "
            "skill by its name and description alone, so most tasks ran without it and "
            "its body was barely tested; make the description say what the skill does "
            "and when to use it, and measure it with a trigger suite (should_trigger items)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "loaded": self.loaded,
            "tasks": self.tasks,
            "rate": self.rate,
            "loaded_rollouts": self.loaded_rollouts,
            "rollouts": self.rollouts,
        }


def load_rate(rollouts: Iterable[Rollout]) -> LoadRate:
    """The load rate over `rollouts` (see the invariants)."""
    by_task: dict[str, list[bool]] = {}
    for r in rollouts:
        seen = traced(r)
        if seen is not None:
            by_task.setdefault(r.task_id, []).append(seen)
    loaded = sum(1 for seen in by_task.values() if sum(seen) * 2 >= len(seen))
    flat = [s for seen in by_task.values() for s in seen]
    return LoadRate(loaded, len(by_task), sum(flat), len(flat))


@dataclass(frozen=True)
class QueryLoads:
    """One trigger query: whether it should load the skill and how often it did."""

    task_id: str
    should_trigger: bool
    loaded: int  # traced samples that loaded the skill
    traced: int
    rollouts: tuple[Rollout, ...]

    @property
    def rate(self) -> float | None:
        return self.loaded / self.traced if self.traced else None

    @property
    def passed(self) -> bool | None:
        """Loaded in at least half of its traced samples when it should, in fewer
        when it should not; None when no sample could tell."""
        if not self.traced:
            return None
        return (self.loaded * 2 >= self.traced) == self.should_trigger

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "should_trigger": self.should_trigger,
            "loaded": self.loaded,
            "traced": self.traced,
            "load_rate": self.rate,
            "passed": self.passed,
            "rollouts": [
                {
                    "sample": r.sample,
                    "scored": r.scored,
                    "skill_invoked": r.trajectory.get("skill_invoked"),
                    "score": r.score,
                    "error": r.error,
                    "key": r.key,
                }
                for r in self.rollouts
            ],
        }


@dataclass(frozen=True)
class TriggerReport:
    """A trigger suite's run: per query, and precision and recall over the traced
    samples (a load of the skill is a positive)."""

    queries: tuple[QueryLoads, ...]

    def _count(self, should: bool, loaded: bool) -> int:
        return sum(
            q.loaded if loaded else q.traced - q.loaded
            for q in self.queries
            if q.should_trigger == should
        )

    @property
    def precision(self) -> float | None:
        """Of the samples that loaded the skill, the share whose query should; None
        when none loaded it."""
        tp, fp = self._count(True, True), self._count(False, True)
        return tp / (tp + fp) if tp + fp else None

    @property
    def recall(self) -> float | None:
        """Of the traced samples of queries that should load the skill, the share that
        did; None when there were none."""
        tp, fn = self._count(True, True), self._count(True, False)
        return tp / (tp + fn) if tp + fn else None

    def misfires(self) -> tuple[list[str], list[str]]:
        """(queries that should load the skill and mostly did not, queries that should
        not and mostly did)."""
        missed = [q.task_id for q in self.queries if q.should_trigger and q.passed is False]
        spurious = [q.task_id for q in self.queries if not q.should_trigger and q.passed is False]
        return missed, spurious

    def to_dict(self) -> dict[str, Any]:
        missed, spurious = self.misfires()
        return {
            "precision": self.precision,
            "recall": self.recall,
            "missed": missed,
            "spurious": spurious,
            "queries": [q.to_dict() for q in self.queries],
        }


def trigger_report(rollouts: Sequence[Rollout], expected: Mapping[str, bool]) -> TriggerReport:
    """The report of a trigger suite's `rollouts`; `expected` holds each query's
    `should_trigger` (rollouts of other tasks are left out)."""
    by_task: dict[str, list[Rollout]] = {}
    for r in rollouts:
        if r.task_id in expected:
            by_task.setdefault(r.task_id, []).append(r)
    queries = []
    for task_id, rs in by_task.items():
        seen = [s for s in (traced(r) for r in rs) if s is not None]
        queries.append(QueryLoads(task_id, expected[task_id], sum(seen), len(seen), tuple(rs)))
    return TriggerReport(tuple(queries))


def load_warnings(results: Iterable[SplitResultLike], invoke: str) -> list[str]:
    """The low-load warning of each task-suite result of the skill (not of the bare
    model, nor of a trigger suite, whose report says it all), under implicit
    invocation only."""
    if invoke != "auto":
        return []
    out = []
    for r in results:
        if r.expected or r.variant == "no-skill":
            continue
        warning = load_rate(r.rollouts).warning(f"{r.variant} · {r.split}")
        if warning:
            out.append(warning)
    return out


def expectations(tasks: Iterable[Task]) -> dict[str, bool]:
    """Each trigger query's `should_trigger`, by task id (empty for a task suite)."""
    return {t.id: bool(t.expected) for t in tasks if t.is_trigger}
