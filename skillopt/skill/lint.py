"""Check a skill against the Agent Skills rules (agentskills.io) and Claude Code's
extensions.

Invariant: lint never raises for a bad skill; every problem is a `Problem` naming
the file, line and field. Errors break the open standard; warnings are portable
concerns (Claude-only keys, a body past the recommended size) that `strict`
turns into errors.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from skillopt.errors import InputError
from skillopt.skill.document import SKILL_FILE, Skill, resolve_skill_file

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
STANDARD_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
CLAUDE_KEYS = {
    "when_to_use",
    "argument-hint",
    "arguments",
    "disable-model-invocation",
    "user-invocable",
    "disallowed-tools",
    "model",
    "effort",
    "context",
    "agent",
    "background",
    "hooks",
    "paths",
    "shell",
}
MAX_BODY_LINES = 500
MAX_BODY_CHARS = 100_000  # ~25k tokens: past this every prompt carries a book
MAX_ENTRIES = 10_000  # files and directories looked at in one skill directory
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Problem:
    path: Path
    field: str
    message: str
    severity: str = "error"  # error | warning
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.severity}: {self.field}: {self.message}"


def lint_skill(path: str | Path, *, strict: bool = False) -> list[Problem]:
    """Problems of one skill (directory or SKILL.md). Never raises for bad content."""
    try:
        skill_file = resolve_skill_file(path)
    except InputError:
        p = Path(path)
        return [Problem(p / SKILL_FILE if p.is_dir() else p, "file", "SKILL.md not found")]
    try:
        text = skill_file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Problem(skill_file, "file", f"not valid UTF-8 (byte {exc.start})")]
    except OSError as exc:
        return [Problem(skill_file, "file", f"cannot read: {exc.strerror}")]
    if skill_file.name not in (SKILL_FILE, "skill.md"):
        return [
            Problem(
                skill_file,
                "file",
                f"{skill_file.name} is not a SKILL.md: a skill is a "
                "directory holding a SKILL.md file",
            )
        ]
    if "\x00" in text:
        return [
            Problem(
                skill_file,
                "file",
                f"holds a NUL byte (character {text.index(chr(0))}): not a text document",
            )
        ]
    skill = Skill.parse(text, root=skill_file.parent)
    problems = _entry_problems(skill_file.parent) + _check(skill, skill_file, text)
    if strict:
        problems = [Problem(p.path, p.field, p.message, "error", p.line) for p in problems]
    return problems


def lint_loaded(skill: Skill, *, strict: bool = False) -> list[Problem]:
    """Lint a skill that may not be on disk as it is, or not in a directory of its name
    (a run's `best/`): a copy under its name is linted, the messages name the original."""
    if (
        skill.root is not None
        and skill.root.name == skill.name
        and (skill.root / SKILL_FILE).is_file()
        and (skill.root / SKILL_FILE).read_text(encoding="utf-8") == skill.text
    ):
        return lint_skill(skill.root, strict=strict)
    with tempfile.TemporaryDirectory(prefix="skillopt-lint-") as tmp:
        d = Path(tmp) / skill.name
        skill.write(d)
        return [
            Problem(
                skill.root / SKILL_FILE if skill.root else p.path,
                p.field,
                p.message,
                p.severity,
                p.line,
            )
            for p in lint_skill(d, strict=strict)
        ]


class Findings(list[Problem]):
    """The problems `lint_paths` found (a list, in order), and `checked`: the skills it
    looked at, so that "no problems" can say of how many."""

    def __init__(self, problems: Iterable[Problem] = (), checked: Iterable[Path] = ()):
        super().__init__(problems)
        self.checked = list(checked)

    @property
    def errors(self) -> int:
        return sum(1 for p in self if p.severity == "error")

    @property
    def warnings(self) -> int:
        return len(self) - self.errors


def is_run_best(path: Path) -> bool:
    """Whether `path` is a run's best skill (`runs/<run-id>/best`, or its SKILL.md)."""
    folder = path if path.is_dir() else path.parent
    return folder.name == "best" and (folder.parent / "run.yaml").is_file()


def lint_source(path: str | Path, *, strict: bool = False) -> list[Problem]:
    """Lint a skill given by its path, as `lint_skill`; a run's `best/` is not named
    after its skill, by design, so it is linted as a copy under its own name."""
    p = Path(path)
    if is_run_best(p):
        try:
            skill = Skill.load(p)
        except InputError:
            return lint_skill(p, strict=strict)  # what is wrong with it, said the usual way
        return lint_loaded(skill, strict=strict)
    return lint_skill(p, strict=strict)


def lint_paths(paths: list[str | Path], *, strict: bool = False) -> Findings:
    """Lint each path; a directory without SKILL.md is searched for skills below it."""
    found = Findings()
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError("no such file or directory", path=p)
        if p.is_dir() and not (p / SKILL_FILE).is_file() and not (p / "skill.md").is_file():
            below = sorted({f.parent for f in p.rglob(SKILL_FILE)})
            if not below:
                found.append(Problem(p, "file", "no SKILL.md in or below this directory"))
            for skill_dir in below:
                found.extend(lint_skill(skill_dir, strict=strict))
                found.checked.append(skill_dir)
        else:
            found.extend(lint_skill(p, strict=strict))
            found.checked.append(p)
    return found


def _check(skill: Skill, path: Path, text: str) -> list[Problem]:
    out: list[Problem] = []

    def add(field: str, message: str, severity: str = "error", key: str | None = None) -> None:
        out.append(Problem(path, field, message, severity, _key_line(text, key or field)))

    if not skill.frontmatter_text:
        starts = text.lstrip("\ufeff").startswith("---")
        return [
            Problem(
                path,
                "frontmatter",
                "frontmatter is not closed with a '---' line"
                if starts
                else "missing YAML frontmatter: start the file with '---', name and "
                "description, then '---'",
                line=1,
            )
        ]
    if skill.frontmatter_error:
        return [
            Problem(
                path,
                "frontmatter",
                skill.frontmatter_error,
                line=_error_line(skill.frontmatter_error),
            )
        ]
    fm = skill.frontmatter

    name = fm.get("name")
    if name is None:
        add("name", "required", key="---")
    elif not isinstance(name, str):
        add("name", f"must be a string, got {type(name).__name__}")
    else:
        norm = unicodedata.normalize("NFKC", name)
        if not 1 <= len(norm) <= 64:
            add("name", f"must be 1-64 characters, got {len(norm)}")
        if not NAME_RE.fullmatch(norm):
            add(
                "name",
                f"{name!r} must be lowercase letters, digits and single hyphens "
                "(no leading, trailing or double hyphen)",
            )
        dir_name = path.parent.name
        if norm != dir_name:
            add("name", f"{name!r} must equal the skill directory name {dir_name!r}")
        if "anthropic" in norm or "claude" in norm:
            add(
                "name",
                "contains a reserved word ('anthropic' or 'claude'); claude.ai and the "
                "Skills API refuse it",
                "warning",
            )

    desc = fm.get("description")
    if desc is None:
        add("description", "required: say what the skill does and when to use it", key="---")
    elif not isinstance(desc, str):
        add("description", f"must be a string, got {type(desc).__name__}")
    else:
        if not desc.strip():
            add("description", "must not be empty")
        if len(desc) > 1024:
            add("description", f"must be at most 1024 characters, got {len(desc)}")
        if "<" in desc or ">" in desc:
            add("description", "must not contain '<' or '>'")

    if "compatibility" in fm:
        comp = fm["compatibility"]
        if not isinstance(comp, str):
            add("compatibility", f"must be a string, got {type(comp).__name__}")
        elif not 1 <= len(comp) <= 500:
            add("compatibility", f"must be 1-500 characters, got {len(comp)}")
    if "license" in fm and not isinstance(fm["license"], str):
        add("license", f"must be a string, got {type(fm['license']).__name__}")
    if "metadata" in fm:
        meta = fm["metadata"]
        if not isinstance(meta, dict):
            add("metadata", f"must be a mapping of strings, got {type(meta).__name__}")
        else:
            for k, v in meta.items():
                if not isinstance(k, str) or not isinstance(v, str):
                    add(
                        "metadata",
                        f"key {k!r}: keys and values must be strings "
                        f"(got {type(v).__name__}; quote it)",
                        key=str(k),
                    )
    if "allowed-tools" in fm:
        tools = fm["allowed-tools"]
        if isinstance(tools, list):
            add(
                "allowed-tools",
                "is a list; the standard wants one space-separated string "
                "(Claude Code accepts lists)",
                "warning",
            )
        elif not isinstance(tools, str):
            add("allowed-tools", f"must be a space-separated string, got {type(tools).__name__}")

    for key in fm:
        if key in STANDARD_KEYS:
            continue
        if key in CLAUDE_KEYS:
            add(
                str(key),
                "Claude Code-only key: other agents and the Skills API reject it",
                "warning",
            )
        else:
            add(str(key), f"unknown frontmatter key; allowed: {', '.join(sorted(STANDARD_KEYS))}")

    body_lines = skill.body.count("\n") + (not skill.body.endswith("\n"))
    if not skill.body.strip():
        out.append(Problem(path, "body", "the body is empty: the agent gets no instructions"))
    elif body_lines > MAX_BODY_LINES:
        out.append(
            Problem(
                path,
                "body",
                f"{body_lines} lines; keep SKILL.md under "
                f"{MAX_BODY_LINES} and move detail to references/",
                "warning",
            )
        )
    elif len(skill.body) > MAX_BODY_CHARS:
        out.append(
            Problem(
                path,
                "body",
                f"{len(skill.body):,} characters (about "
                f"{len(skill.body) // 4:,} tokens in every prompt); "
                f"keep it under {MAX_BODY_CHARS:,} and move detail "
                "to references/",
                "warning",
            )
        )
    fm_lines = skill.frontmatter_text.count("\n")
    for m in _LINK.finditer(skill.body):
        target = m.group(1).split("#", 1)[0]
        if not target or "://" in target or target.startswith(("mailto:", "/", "#")):
            continue
        if not (path.parent / target).exists():
            line = fm_lines + skill.body.count("\n", 0, m.start()) + 1
            out.append(
                Problem(
                    path,
                    "body",
                    f"links to {target!r}, which is not in the skill directory",
                    "warning",
                    line,
                )
            )
    return out


def _entry_problems(root: Path) -> list[Problem]:
    """What in the skill directory is not a plain file or directory inside it: a FIFO,
    socket or device (reading one can block forever), a broken or looping symlink, a
    symlink to something outside the skill (it would be copied into every workspace
    and the git history). Symlinks to directories are not followed."""
    out: list[Problem] = []
    seen = 0
    root_real = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__")]
        for name in [*dirnames, *filenames]:
            seen += 1
            if seen > MAX_ENTRIES:
                out.append(
                    Problem(
                        root,
                        "file",
                        f"more than {MAX_ENTRIES:,} files and directories: not a skill directory",
                    )
                )
                return out
            path = Path(dirpath) / name
            problem = _entry_problem(path, root_real)
            if problem:
                out.append(Problem(path, "file", problem))
    return out


def _entry_problem(path: Path, root_real: Path) -> str | None:
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    if stat.S_ISLNK(mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):  # RuntimeError: a loop, before Python 3.13
            return "is a broken or looping symlink"
        if target != root_real and root_real not in target.parents:
            return f"is a symlink to {target}, outside the skill directory"
        mode = target.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "is not a regular file (a FIFO, socket or device); a skill holds files only"
    return None


def _key_line(text: str, key: str) -> int | None:
    if key == "---":
        return 1
    m = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*:", text, re.MULTILINE)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _error_line(message: str) -> int | None:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else None
