"""Worked examples in a skill, as the `exemplars` optimizer reads them: the examples a
skill's Examples section holds (`examples_in`), the character shape of an input
(`shape`, `describe_shape`) and how alike two inputs are (`similarity`).

Invariant: reading examples never changes the skill; an example is the exact text
the embedded model's prompt format gives it (`format_example`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillopt.models.local_prompt import format_example
from skillopt.skill.document import Skill

SECTION = "Examples"


# the input may span lines (a multi-line task prompt, no blank line) up to the `Output: ` line
EXAMPLE_PATTERN = re.compile(
    r"^Input: (?P<input>.*(?:\n(?!Input: |Output: ).+)*?)\nOutput: "
    r"(?P<output>.*)$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Example:
    input: str
    output: str

    @property
    def text(self) -> str:
        return format_example(self.input, self.output)


def examples_in(skill: Skill) -> list[Example]:
    return [
        Example(m.group("input").strip(), m.group("output").strip())
        for m in EXAMPLE_PATTERN.finditer(skill.body)
    ]


def shape(text: str) -> str:
    """Character classes with runs collapsed: 'abc 123' → 'a 9', '#RT-0456' → '#A-9'."""
    out: list[str] = []
    for ch in text.strip():
        cls = (
            ("A" if ch.isupper() else "a")
            if ch.isalpha()
            else "9"
            if ch.isdigit()
            else (" " if ch.isspace() else ch)
        )
        if not out or out[-1] != cls:
            out.append(cls)
    return "".join(out)


_WORDS = {"a": "lowercase letters", "A": "capital letters", "9": "digits", " ": "space"}


def describe_shape(shape: str, limit: int = 8) -> str:
    """A `shape` in words, for a reader: 'a 9' → 'lowercase letters, space, digits',
    'Aa_9' → "a capitalised word, '_', digits"; past `limit` parts, cut with '…'."""
    parts: list[str] = []
    i = 0
    while i < len(shape):
        if shape.startswith("Aa", i):
            parts.append("a capitalised word")
            i += 2
            continue
        ch = shape[i]
        parts.append(_WORDS.get(ch, repr(ch)))
        i += 1
    if len(parts) > limit:
        parts = [*parts[:limit], "…"]
    return ", ".join(parts) if parts else "empty"


def _trigrams(text: str) -> set[str]:
    t = f"  {text.casefold()} "
    return {t[i : i + 3] for i in range(len(t) - 2)}


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of character trigrams, in [0, 1]."""
    x, y = _trigrams(a), _trigrams(b)
    return len(x & y) / len(x | y) if x | y else 1.0
