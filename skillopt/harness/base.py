"""How the frozen agent runs one task: the `Harness` contract and its `Trajectory`.

Contract: `Harness.run(skill, task) -> Trajectory`. It never raises for one task's
failure (a provider error, a timeout, a crash of the agent): it returns a
trajectory whose `error` says what went wrong, and the rollout is stored as
*unscored*. It never mutates the skill. Only systemic problems that make every
task fail (a missing binary, unusable configuration) may raise `HarnessError`,
and only from `check()`, before any task runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skillopt._util.secrets import scrub
from skillopt._util.text import clean, safe
from skillopt.models.base import Usage
from skillopt.skill.document import Skill
from skillopt.skill.library import Library
from skillopt.suite.task import Task


@dataclass(frozen=True)
class Trajectory:
    """What happened when the agent ran one task."""

    messages: tuple[dict[str, Any], ...] = ()
    answer: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    latency_s: float = 0.0
    error: str | None = None
    error_kind: str | None = None  # e.g. rate_limit, auth, timeout: groups systemic failures
    steps: tuple[dict[str, Any], ...] = ()  # tool calls and outputs of agent harnesses
    workspace: Path | None = None  # the finished workspace, for file-checking scorers
    model_calls: int = 0
    skill_invoked: bool | None = None  # what the trace shows; None when it cannot tell
    info: dict[str, Any] = field(
        default_factory=dict
    )  # harness-specific facts (result subtype, turns)
    replaced: int = 0  # characters of the answer that could not be stored (see `text.clean`)

    def __post_init__(self) -> None:
        # the agent's answer and error are text from outside: make them storable and
        # blank any secret the agent (or its provider) echoed
        if self.answer is not None:
            answer, n = clean(str(self.answer))
            object.__setattr__(self, "answer", scrub(answer))
            object.__setattr__(self, "replaced", self.replaced + n)
        if self.error is not None:
            object.__setattr__(self, "error", safe(str(self.error)))

    @property
    def ok(self) -> bool:
        return self.error is None and self.answer is not None


@runtime_checkable
class Harness(Protocol):
    name: str
    version: str

    def fingerprint(self) -> dict[str, Any]:
        """Harness name, version, target model and every parameter that changes the
        outcome (not timeouts, not concurrency)."""
        ...

    def check(self, skills: Sequence[Skill] = ()) -> None:
        """Raise `HarnessError` if no task can run with `skills` (the skills about to be
        scored): a missing binary, bad configuration, or another copy of a skill that
        the agent would read instead of the one under test."""
        ...

    def run(self, skill: Skill, task: Task) -> Trajectory:
        """Run one task with `skill`; never raises for this task's failure."""
        ...


# Optional capabilities, checked with `isinstance` where they are used (the
# engine; the optimizer's run context for `Describes` and `ShowsTask`); a harness
# offers one by defining its method (no base class needed).


@runtime_checkable
class ReleasesWorkspaces(Protocol):
    """A harness whose trajectories carry a workspace. The caller scores the task in
    it and then hands it back with `release`, which keeps or removes it (where it is
    kept is fixed when the harness is built)."""

    def release(self, trajectory: Trajectory, *, failed: bool) -> Path | None:
        """Keep (returning where) or remove the trajectory's workspace. Never raises
        for one workspace (a file that cannot be removed is left, and logged)."""
        ...


@runtime_checkable
class Cancellable(Protocol):
    """A harness whose runs are processes it can kill when the run is stopped."""

    def cancel(self) -> None:
        """Kill every agent process still running; runs that start afterwards end at
        once as cancelled (unscored)."""
        ...


@runtime_checkable
class Describes(Protocol):
    """A harness, or the model a chat harness calls, that can tell the optimizer
    what the target is and how a skill and a task reach it: every optimizer prompt
    shows it, so the edits are written for that target."""

    def describe_target(self) -> str:
        """A few Markdown lines: the target model, the harness, how the skill reaches
        the target (and when it is loaded), and for a completion-style target the
        exact template and the shape of an example it is cued with. Never raises."""
        ...


@runtime_checkable
class ShowsTask(Protocol):
    """A harness, or a model, whose target does not read a task's prompt as it is
    (the embedded base model reads it behind an answer cue)."""

    def task_as_seen(self, task: str) -> str:
        """The task's prompt as the target reads it after the skill."""
        ...


@runtime_checkable
class Recalls(Protocol):
    """A harness whose fingerprint holds what only running its program tells (an
    agent CLI's `--version`): a replay, which runs nothing, takes that from the
    fingerprint its rollouts were recorded with instead."""

    def recall(self, recorded: Mapping[str, Any]) -> None:
        """Take what `check` would have learned from `recorded` (a rollout's harness
        fingerprint); anything recorded for another harness is ignored."""
        ...


@runtime_checkable
class InstallsLibrary(Protocol):
    """A harness that puts the user's other skills (`agent.library`) beside the skill
    under test: what it skipped of them is told once, before any task runs."""

    library: Library


@runtime_checkable
class WorkspaceHarness(Harness, ReleasesWorkspaces, Cancellable, Protocol):
    """A harness running a program in a workspace: all three contracts at once (the
    agent harnesses: claude-code, codex, command)."""
