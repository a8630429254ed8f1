"""The isolated workspace an agent runs one task in.

Layout of one task's temporary directory (outside any repository, so no agent
walks up into the user's project and loads its skills or instructions):

    skillopt-<task>-XXXX/
      work/                      the agent's cwd: the workspace
        .claude/skills/<name>/   the skill (or .agents/skills/<name>/), with its files
        .claude/skills/<other>/  the library's skills (`agent.library`), copied beside it
        <task files>             the item's `files:`
      io/                        ours: stdin, stdout, stderr, the last message
      home/, codex-home/         with `agent.isolate`: the agent CLI's private HOME (and
                                 CODEX_HOME), holding only what it needs to reach its
                                 provider; removed before a workspace is kept

Invariant: `work/` holds the skill, the library's skills and this task's own files
and nothing else — not the suite file, not any expected answer, not another task.
`io/` is never inside `work/`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from skillopt.skill.document import Skill
from skillopt.skill.library import Library
from skillopt.suite.task import Task

KEEP_MODES = ("failed", "all", "none")


@dataclass
class Workspace:
    root: Path  # the temporary directory
    path: Path  # work/: the agent's cwd
    io: Path  # io/: our side
    skill_dir: Path | None  # where the skill was installed (None for the no-skill baseline)
    private_dirs: list[Path] = field(default_factory=list)  # may hold credentials

    @classmethod
    def create(
        cls, skill: Skill, task: Task, skills_dir: str, library: Library | None = None
    ) -> Workspace:
        root = Path(tempfile.mkdtemp(prefix=f"skillopt-{_safe(task.id)[:40]}-"))
        work, io = root / "work", root / "io"
        work.mkdir()
        io.mkdir()
        if library is not None:  # first: the skill under test is never overwritten
            library.install(work / skills_dir)
        skill_dir = None
        if not skill.is_empty:
            skill_dir = work / skills_dir / install_name(skill)
            skill.for_target().write(skill_dir)  # the agent never sees protection markers
        for rel, content in task.files.items():
            dest = work / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(content, encoding="utf-8")
        return cls(root, work, io, skill_dir)

    def private(self, name: str) -> Path:
        """A directory beside work/ and io/ that only we and the agent may read (a
        private HOME). It may hold a copy of the user's credentials, so it is never
        kept with the workspace."""
        path = self.root / name
        path.mkdir(mode=0o700, exist_ok=True)
        if path not in self.private_dirs:
            self.private_dirs.append(path)
        return path

    def keep(self, into: Path, name: str) -> Path:
        """Move the workspace (and its io/) to `into/<name>` for inspection; its
        private directories are removed first."""
        for path in self.private_dirs:
            shutil.rmtree(path, ignore_errors=True)
        if not into.parent.is_dir():  # `runs/` made for the first time: git-ignored
            from skillopt.runs.rundir import output_dir

            output_dir(into.parent)
        into.mkdir(parents=True, exist_ok=True)
        dest = into / name
        n = 2
        while dest.exists():
            dest = into / f"{name}-{n}"
            n += 1
        shutil.move(str(self.root), str(dest))
        return dest

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def install_name(skill: Skill) -> str:
    """The skill's directory name where agents look for it: Claude Code takes the
    command name from the directory, so it is the skill's name."""
    return _safe(skill.name) or "skill"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
