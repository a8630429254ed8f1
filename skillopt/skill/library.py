"""The user's other skills, installed beside the skill under test (`--library DIR`,
`agent.library: user`). A rollout then sees the same crowd of descriptions the agent
chooses from at home, and a collision with one of them shows in the scores.

Invariants: a library is read, never written; its skills are loaded once and copied
(files only, never a symlink) into each rollout's workspace; a skill that fails lint
is skipped with one warning naming it; its contents (every skill's name and hash)
are part of the rollout fingerprint, so a changed library is a new evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from skillopt.errors import InputError
from skillopt.skill.document import SKILL_FILE, Skill
from skillopt.skill.lint import lint_skill

USER = "user"  # `agent.library: user`: the user's own skill directories


def user_roots(project: Path | None = None) -> list[Path]:
    """Where the user's agents find their skills: Claude Code's personal and project
    skills, and the Agent Skills user directory Codex reads."""
    home = Path.home()
    project = project if project is not None else Path.cwd()
    return [
        home / ".claude" / "skills",
        project / ".claude" / "skills",
        home / ".agents" / "skills",
    ]


@dataclass(frozen=True)
class Library:
    """The skills installed beside the one under test, by name, and what was skipped."""

    skills: tuple[Skill, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)

    def fingerprint(self) -> list[list[str]]:
        """[name, content hash] of every skill, sorted: what changes a rollout."""
        return sorted([s.name, s.hash] for s in self.skills)

    def excluding(self, skills: Iterable[Skill]) -> Library:
        """The library without the skills under test themselves: `agent.library: user`
        often reads the very folder a project skill is trained from, and that copy is
        the skill under test, not a competitor."""
        own = {_where(s) for s in skills if s.root is not None}
        kept = tuple(s for s in self.skills if _where(s) not in own)
        return self if len(kept) == len(self.skills) else Library(kept, self.warnings)

    def check_against(self, skills: Iterable[Skill]) -> None:
        """Refuse a library that holds a skill of the same name as one under test: the
        agent could load that copy, and the scores would measure it instead."""
        mine = {s.name: s for s in self.skills}
        for skill in skills:
            if not skill.is_empty and skill.name in mine:
                where = mine[skill.name].root
                raise InputError(
                    f"the library holds a skill named {skill.name!r} ({where}), the name of "
                    "the skill under test: leave that directory out of the library",
                    field="agent.library",
                )

    def install(self, skills_dir: Path) -> None:
        """Copy every library skill into `skills_dir/<name>/` (its SKILL.md and
        supporting files; lint has refused symlinks that leave a skill)."""
        for skill in self.skills:
            skill.write(skills_dir / skill.name)


def load_library(entries: Sequence[str], *, project: Path | None = None) -> Library:
    """The library named by `entries`: each a folder of skills (`DIR/<name>/SKILL.md`),
    one skill folder, or `user` (the user's own skill directories, those missing
    ignored). A named folder that does not exist is an `InputError`; a skill that
    fails lint, or a second skill of a name already taken, is one warning, skipped."""
    dirs: list[tuple[Path, bool]] = []
    for entry in entries:
        if entry == USER:
            dirs.extend((root, False) for root in user_roots(project))
        else:
            dirs.append((Path(entry).expanduser(), True))
    found: dict[str, Skill] = {}
    warnings: list[str] = []
    for root, required in dirs:
        if not root.is_dir():
            if required:
                raise InputError("not a directory of skills", path=root, field="library")
            continue
        for folder in _skill_folders(root):
            skill, why = _load_one(folder)
            if skill is None:
                warnings.append(f"library skill {folder} skipped: {why}")
            elif skill.name in found:
                warnings.append(
                    f"library skill {folder} skipped: a skill named {skill.name!r} is "
                    f"already in the library ({found[skill.name].root})"
                )
            else:
                found[skill.name] = skill
    return Library(tuple(found[n] for n in sorted(found)), tuple(warnings))


def _where(skill: Skill) -> Path | None:
    return skill.root.resolve() if skill.root is not None else None


def _skill_folders(root: Path) -> list[Path]:
    if (root / SKILL_FILE).is_file():
        return [root]
    # a linked skill folder is the user's own setup: read through it; what is copied
    # out of it is its files, never the link
    return sorted(p for p in root.iterdir() if (p / SKILL_FILE).is_file())


def _load_one(folder: Path) -> tuple[Skill | None, str]:
    """The skill in `folder`, or None and why it is skipped (its first lint error)."""
    errors = [p for p in lint_skill(folder) if p.severity == "error"]
    if errors:
        first = errors[0]
        return None, f"{first.field}: {first.message}"
    try:
        return Skill.load(folder), ""
    except InputError as exc:
        return None, str(exc)
