"""The entry points that ship a trained skill: `export` it where an agent loads it,
or `adopt` a run's best skill back into the working tree.

Invariant: nothing is overwritten that differs from what is written unless `force`
is given; a refusal (`Refused`) carries the diff, a skill with lint errors
(`LintFailed`) its problems.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillopt.ship.adopt import AdoptResult
    from skillopt.ship.export import ExportResult


def export(
    source: str | Path,
    to: str,
    *,
    scope: str = "project",
    dest: Path | None = None,
    force: bool = False,
    run_dir: str | Path | None = None,
) -> ExportResult:
    """Export a skill (or a run's best skill, by run id or directory) where an agent
    loads it: `claude` (.claude/skills), `codex`/`agents` (.agents/skills) or a
    section of an AGENTS.md; see `skillopt.ship.export`."""
    from skillopt.runs.read import load_skill_or_run
    from skillopt.ship.export import export as export_skill

    return export_skill(load_skill_or_run(source, run_dir), to, scope=scope, dest=dest, force=force)


def adopt(
    run: str | Path, *, force: bool = False, run_dir: str | Path | None = None
) -> AdoptResult:
    """Write a run's best skill back into the skill directory it was trained from."""
    from skillopt.runs.read import find_run
    from skillopt.ship.adopt import adopt as adopt_run

    return adopt_run(find_run(run, run_dir), force=force)
