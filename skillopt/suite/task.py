"""In-memory records of a loaded suite: one `Task` per item, already rendered.

Invariant: a `Task` carries everything that decides its outcome (rendered prompt,
expected answer, scorer), so `Task.content()` plus `Task.scorer.spec` is what the
rollout fingerprint hashes; editing an item changes its fingerprint, re-ordering
items does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Task:
    id: str
    input: Any
    expected: Any
    prompt: str
    split: str
    scorer: Any  # a skillopt.suite.scorers.Scorer; its `.spec` goes into fingerprints
    metadata: dict[Any, Any] = field(default_factory=dict)
    source: str = ""  # "file:line" for messages
    files: dict[str, str] = field(default_factory=dict)  # workspace files for agent harnesses

    @property
    def is_trigger(self) -> bool:
        """A trigger query (`suite.triggers`): scored on whether the agent loaded the
        skill, its `expected` the item's `should_trigger`."""
        return bool(self.scorer.name == "trigger")

    def content(self) -> dict[str, Any]:
        """The fields that change this task's outcome (for the fingerprint)."""
        return {
            "id": self.id,
            "input": self.input,
            "expected": self.expected,
            "prompt": self.prompt,
            "files": self.files,
        }


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    path: Path
    tasks: tuple[Task, ...]
    defaults: dict[str, Any] = field(default_factory=dict)  # run settings the suite chooses
    judge: str | None = None
    # the trigger queries a task suite names (`triggers: FILE`), for `train --part both`
    trigger_suite: Suite | None = None

    @property
    def is_triggers(self) -> bool:
        """A trigger suite: its items are trigger queries (a suite never mixes them
        with tasks; a task suite may name a trigger suite of its own, `trigger_suite`)."""
        return bool(self.tasks) and self.tasks[0].is_trigger

    def split(self, name: str) -> list[Task]:
        if name == "all":
            return list(self.tasks)
        return [t for t in self.tasks if t.split == name]

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for t in self.tasks if t.split == s) for s in SPLITS}

    def get(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)
