"""The skill's `description` as a trainable part: a candidate skill with only the
frontmatter's `description:` value replaced, and the lint rules a candidate
description must pass before any gate sees it.

Invariants: the rest of SKILL.md (every other frontmatter line, the fences, the
body) is kept byte for byte; the new value is written so that YAML reads back
exactly the text given, whatever it holds (quotes, colons, `#`, line breaks).
"""

from __future__ import annotations

import json
import re

import yaml

from skillopt.errors import InputError
from skillopt.skill.document import Skill
from skillopt.skill.lint import lint_loaded

_KEY = re.compile(r"^description[ \t]*:")
_PLAIN_UNSAFE = re.compile(r"""^[\s\-?:,\[\]{}#&*!|>'"%@`]|:\s|\s#|[\r\n\t]|\s$""")


def yaml_value(text: str) -> str:
    """`text` as a one-line YAML scalar: plain when YAML reads it back unchanged,
    else double-quoted (JSON's escapes are YAML's)."""
    if text and not _PLAIN_UNSAFE.search(text) and _reads_back(text, text):
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    if not _reads_back(quoted, text):  # never seen; a value YAML misreads is refused
        raise ValueError("the description cannot be written as YAML")
    return quoted


def _reads_back(written: str, text: str) -> bool:
    try:
        data = yaml.safe_load(f"description: {written}\n")
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and data.get("description") == text


def with_description(skill: Skill, text: str) -> Skill:
    """`skill` with its frontmatter's `description:` value (one line, or a folded,
    quoted or continued value over several) replaced by `text`; a frontmatter
    without one gets the line before its closing fence. The body is unchanged."""
    if not skill.frontmatter_text:
        raise InputError(
            "the skill has no frontmatter, so it has no description to train: start "
            "SKILL.md with '---', name and description, then '---'",
            field="description",
        )
    lines = skill.frontmatter_text.splitlines(keepends=True)
    newline = "\r\n" if lines[0].endswith("\r\n") else "\n"
    line = f"description: {yaml_value(text)}{newline}"
    start = next((i for i in range(1, len(lines) - 1) if _KEY.match(lines[i])), None)
    if start is None:
        lines.insert(len(lines) - 1, line)
    else:
        end = start + 1
        # the value goes on while lines are indented (blank lines inside it included)
        while end < len(lines) - 1 and (lines[end][:1] in (" ", "\t") or not lines[end].strip()):
            end += 1
        while end - 1 > start and not lines[end - 1].strip():
            end -= 1  # blank lines after the value stay where they were
        lines[start:end] = [line]
    candidate = Skill.parse("".join(lines) + skill.body, root=skill.root, support=skill.support)
    if candidate.body != skill.body or candidate.description != text:
        raise ValueError("replacing the description changed more than the description")
    return candidate


def description_problems(skill: Skill) -> list[str]:
    """The lint errors of `skill`'s description (and of a frontmatter it broke): what
    keeps a candidate description from the gate."""
    return [
        p.message if p.field == "description" else f"{p.field}: {p.message}"
        for p in lint_loaded(skill)
        if p.severity == "error" and p.field in ("description", "frontmatter")
    ]
