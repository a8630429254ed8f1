"""Ship a skill to where agents load it (`skillopt export`); `adopt` (the way
back into the working tree) is `skillopt.ship.adopt`.

Targets (documented at https://code.claude.com/docs/en/skills,
https://developers.openai.com/codex/skills and
https://developers.openai.com/codex/guides/agents-md; Copilot, Gemini CLI, OpenCode
and Cursor read `.agents/skills/` too):

| target        | project scope                 | user scope                 |
|---------------|-------------------------------|----------------------------|
| `claude-code` | `.claude/skills/<name>/`      | `~/.claude/skills/<name>/` |
| `codex`       | `.agents/skills/<name>/`      | `~/.agents/skills/<name>/` |
| `agents`      | `.agents/skills/<name>/`      | `~/.agents/skills/<name>/` |
| `agents-md`   | a section of `AGENTS.md`      | `$CODEX_HOME/AGENTS.md`    |

Invariants: what is shipped is the skill as a target sees it (`Skill.for_target`:
no protection markers);
the skill is linted first (the portable rules for `codex` and
`agents`) and nothing is written when it has errors; an existing, different skill
is never overwritten without `force` (the refusal carries the diff); an
unchanged one is left alone; the `AGENTS.md` section is delimited so a re-export
replaces it in place and leaves the rest of the file byte for byte.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skillopt.errors import InputError
from skillopt.ship.diffs import dir_files, files_diff, skill_files, text_diff
from skillopt.ship.refusals import TARGETS, LintFailed, Refused
from skillopt.skill.document import Skill
from skillopt.skill.lint import lint_loaded

SKILL_DIRS = {
    "claude-code": ".claude/skills",
    "codex": ".agents/skills",
    "agents": ".agents/skills",
}
STRICT = {"codex", "agents"}  # read by many clients: only the open standard's keys


@dataclass
class ExportResult:
    skill: str
    target: str
    path: Path  # the skill directory, or the AGENTS.md file
    action: str  # created | updated | unchanged
    diff: str = ""
    warnings: list[str] = field(default_factory=list)


def destination(
    target: str,
    name: str,
    *,
    scope: str = "project",
    dest: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Where `target` reads a skill called `name`. `dest` replaces the project
    directory (or, for user scope, the home directory)."""
    if target not in TARGETS:
        raise InputError(
            f"unknown export target {target!r}; choose one of: " + ", ".join(TARGETS), field="--to"
        )
    if scope not in ("project", "user"):
        raise InputError(f"unknown scope {scope!r}; choose project or user", field="--scope")
    if env is None:
        env = os.environ
    if scope == "project":
        base = Path(dest) if dest is not None else Path.cwd()
        return base / "AGENTS.md" if target == "agents-md" else base / SKILL_DIRS[target] / name
    home = Path(dest) if dest is not None else Path(env.get("HOME") or Path.home())
    if target == "agents-md":
        codex_home = (
            Path(env["CODEX_HOME"]) if dest is None and env.get("CODEX_HOME") else home / ".codex"
        )
        return codex_home / "AGENTS.md"
    return home / SKILL_DIRS[target] / name


def export(
    skill: Skill,
    target: str,
    *,
    scope: str = "project",
    dest: Path | None = None,
    force: bool = False,
) -> ExportResult:
    """Write `skill` where `target` loads it; see the module notes for the rules."""
    path = destination(target, skill.name, scope=scope, dest=dest)
    skill = skill.for_target()
    problems = lint_loaded(skill, strict=target in STRICT)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        rules = " (portable rules)" if target in STRICT else ""
        raise LintFailed(f"not exported: {len(errors)} lint error(s){rules}", errors)
    warnings = [str(p) for p in problems]
    if target == "agents-md":
        return _export_section(skill, path, force, warnings)
    return _export_dir(skill, target, path, force, warnings)


def _export_dir(
    skill: Skill, target: str, path: Path, force: bool, warnings: list[str]
) -> ExportResult:
    new = skill_files(skill)
    if path.exists():
        old = dir_files(path)
        if old == new:
            return ExportResult(skill.name, target, path, "unchanged", warnings=warnings)
        diff = files_diff(old, new, str(path))
        if not force:
            raise Refused(
                f"{path} holds a different skill; not overwritten (pass --force to replace it)",
                diff,
            )
        staging = path.with_name(f".{path.name}.skillopt-new")
        shutil.rmtree(staging, ignore_errors=True)
        skill.write(staging)
        backup = path.with_name(f".{path.name}.skillopt-old")
        shutil.rmtree(backup, ignore_errors=True)
        path.rename(backup)
        staging.rename(path)
        shutil.rmtree(backup, ignore_errors=True)
        return ExportResult(skill.name, target, path, "updated", diff, warnings)
    skill.write(path)
    return ExportResult(
        skill.name, target, path, "created", files_diff({}, new, str(path)), warnings
    )


# ---------------------------------------------------------------------- AGENTS.md
def begin_marker(name: str) -> str:
    return f"<!-- skillopt:begin {name} -->"


def end_marker(name: str) -> str:
    return f"<!-- skillopt:end {name} -->"


def section_text(skill: Skill) -> str:
    """The skill as an AGENTS.md section: a heading, the description, the body."""
    body = skill.body.strip("\n")
    lines = [begin_marker(skill.name), f"## Skill: {skill.name}", ""]
    if skill.description:
        lines += [skill.description.strip(), ""]
    lines += [body, end_marker(skill.name)]
    return "\n".join(lines) + "\n"


def _export_section(skill: Skill, path: Path, force: bool, warnings: list[str]) -> ExportResult:
    if skill.support:
        warnings.append(
            f"{len(skill.support)} supporting file(s) are not part of AGENTS.md; "
            "export to `agents` or `claude-code` to ship them"
        )
    new_section = section_text(skill)
    old_text = path.read_text(encoding="utf-8") if path.is_file() else ""
    begin, end = begin_marker(skill.name), end_marker(skill.name)
    start = old_text.find(begin)
    if start == -1:
        joiner = (
            ""
            if not old_text or old_text.endswith("\n\n")
            else ("\n" if old_text.endswith("\n") else "\n\n")
        )
        new_text = old_text + joiner + new_section
        action = "created" if not old_text else "updated"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new_text, encoding="utf-8")
        return ExportResult(
            skill.name,
            "agents-md",
            path,
            action,
            text_diff(old_text, new_text, str(path)),
            warnings,
        )
    stop = old_text.find(end, start)
    if stop == -1:
        raise InputError(f"the section {begin} has no {end} line; fix the file by hand", path=path)
    stop += len(end)
    if old_text[stop : stop + 1] == "\n":
        stop += 1
    old_section = old_text[start:stop]
    if old_section == new_section:
        return ExportResult(skill.name, "agents-md", path, "unchanged", warnings=warnings)
    new_text = old_text[:start] + new_section + old_text[stop:]
    diff = text_diff(old_text, new_text, str(path))
    if not force:
        raise Refused(
            f"{path} has a different section for skill {skill.name!r}; not "
            "replaced (pass --force to replace it)",
            diff,
        )
    path.write_text(new_text, encoding="utf-8")
    return ExportResult(skill.name, "agents-md", path, "updated", diff, warnings)
