"""What shipping refuses to do, as errors the caller can show: `Refused` (a
different skill is there; carries the diff) and `LintFailed` (the skill has lint
errors; carries the problems); and the agents a skill ships to (`TARGETS`).

Invariant: a leaf, importing only `skillopt.errors`, so the command line can
name these before any shipping code is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillopt.errors import SkilloptError

if TYPE_CHECKING:
    from skillopt.skill.lint import Problem

TARGETS = ("claude-code", "codex", "agents", "agents-md")


class Refused(SkilloptError):
    """The destination holds a different skill and `force` was not given."""

    def __init__(self, message: str, diff: str):
        self.diff = diff
        super().__init__(message)


class LintFailed(SkilloptError):
    """The skill has lint errors; nothing was written."""

    def __init__(self, message: str, problems: list[Problem]):
        self.problems = problems
        super().__init__(message)
