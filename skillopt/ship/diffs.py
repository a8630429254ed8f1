"""Diffs of skills as a reviewer reads them: one file (`text_diff`), a skill's
files against a directory's (`files_diff`), and a diff's size per file (`diff_stat`).

Invariant: pure functions of their inputs (only `dir_files` and `skill_files` read
files); a file that is not UTF-8 is named as a binary difference, never decoded.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from skillopt.skill.document import SKILL_FILE, Skill


def skill_files(skill: Skill) -> dict[str, bytes]:
    files = {SKILL_FILE: skill.text.encode("utf-8")}
    if skill.root is not None:
        for rel, _ in skill.support:
            files[rel] = (skill.root / rel).read_bytes()
    return files


def dir_files(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)).replace(os.sep, "/"): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def text_diff(old: str, new: str, name: str) -> str:
    """A unified diff of one file. A relative `name` gets git's `a/` and `b/`; an
    absolute one is shown relative to the current directory when it lies below it,
    else as it is."""
    fromfile, tofile = f"a/{name}", f"b/{name}"
    if os.path.isabs(name):
        try:
            rel = Path(name).relative_to(Path.cwd())
            fromfile, tofile = f"a/{rel}", f"b/{rel}"
        except ValueError:
            fromfile = tofile = name
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=fromfile,
            tofile=tofile,
        )
    )


def files_diff(old: dict[str, bytes], new: dict[str, bytes], root: str) -> str:
    parts = []
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a == b:
            continue
        name = f"{root}/{rel}"
        try:
            parts.append(text_diff((a or b"").decode("utf-8"), (b or b"").decode("utf-8"), name))
        except UnicodeDecodeError:
            parts.append(f"Binary file {name} differs\n")
    return "".join(parts)


def diff_stat(diff: str) -> list[tuple[str, int, int]]:
    """(file, lines added, lines removed) per file of a unified diff."""
    stats: list[tuple[str, int, int]] = []
    current = None
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            if current is not None:
                stats.append((current, added, removed))
            current = line[4:].removeprefix("b/")
            added = removed = 0
        elif line.startswith("--- "):
            continue
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    if current is not None:
        stats.append((current, added, removed))
    return stats
