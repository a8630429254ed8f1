"""The `exemplars` optimizer: no model calls; it teaches by worked examples.

From failed training rollouts it proposes edits that add examples (the task as
the agent saw it → the expected answer) to an `## Examples` section, replaces the
most similar example once the section is full, and deletes near-duplicate
examples. It prefers diverse cases: a candidate whose input looks like an
example already there (same character shape, or close in character trigrams)
waits behind one that covers something new. It runs under the same budget, gate,
memory and audit as an LLM optimizer.

Examples are written in the exact shape of the embedded model's completion cue
(`Input: …` / `Output: …`), so a base model continues the pattern.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from skillopt.models.local import format_example
from skillopt.optimize.base import Proposal, ProposalRequest
from skillopt.optimize.memory import Memory
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit

SECTION = "Examples"
# the input may span lines (a multi-line task prompt, no blank line) up to the `Output: ` line
_EXAMPLE = re.compile(
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
        for m in _EXAMPLE.finditer(skill.body)
    ]


def shape(text: str) -> str:
    """Character classes with runs collapsed: 'abc 123' → 'a 9', '#RT-0456' → '#A-9'."""
    out = []
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


def _trigrams(text: str) -> set[str]:
    t = f"  {text.casefold()} "
    return {t[i : i + 3] for i in range(len(t) - 2)}


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of character trigrams, in [0, 1]."""
    x, y = _trigrams(a), _trigrams(b)
    return len(x & y) / len(x | y) if x | y else 1.0


class ExemplarOptimizer:
    """`max_examples` caps the section; `near` is the trigram similarity above which
    two inputs count as near-duplicates."""

    name = "exemplars"

    def __init__(self, max_examples: int = 12, near: float = 0.8):
        self.max_examples = max_examples
        self.near = near

    @classmethod
    def build(cls, settings: object, meter: object = None) -> ExemplarOptimizer:
        """The registry's factory: no settings, no model calls to meter."""
        return cls()

    def propose(self, request: ProposalRequest) -> Proposal:
        if request.kind != "failures" or request.budget <= 0:
            return Proposal()
        existing = examples_in(request.skill)
        rejected = _rejected_inputs(request.memory)
        tried = {i for i, n in rejected.items() if n >= 2}  # rejected twice: not again
        candidates = []
        for r in request.rollouts:
            task = request.tasks[r.task_id]
            if task.expected is None:
                continue
            answer = (
                json.dumps(task.expected, ensure_ascii=False)  # JSON, not a repr
                if isinstance(task.expected, (dict, list))
                else str(task.expected)
            )
            candidates.append((Example(task.prompt.strip(), answer.strip()), r))
        picks: list[tuple[Example, str]] = []
        lines = 0  # what the picks add; an example over the limits would be dropped unapplied
        covered = {shape(e.input) for e in existing}
        # new shapes first, then examples never rejected; within that, input order (the
        # batch is a seeded shuffle)
        ordered = sorted(
            candidates, key=lambda c: (shape(c[0].input) in covered, c[0].input in rejected)
        )
        for ex, r in ordered:
            if ex.input in tried or any(ex.input == e.input for e in existing):
                continue
            pool = [e.input for e in existing] + [p.input for p, _ in picks]
            if any(similarity(ex.input, other) >= self.near for other in pool):
                continue
            if any(shape(ex.input) == shape(p.input) for p, _ in picks):
                continue  # one new example per shape per step
            size = Edit("add", content=ex.text).lines
            if size > request.max_edit_lines or lines + size > request.max_step_lines:
                continue
            lines += size
            picks.append((ex, r.task_id))
            if len(picks) >= request.budget:
                break
        edits = self._place(existing, picks)
        room = request.budget - len(edits)
        if room > 0:
            touched = {e.anchor for e in edits if e.anchor}
            edits += self._dedupe(existing, room, touched)
        return Proposal(edits=edits)

    def _place(self, existing: list[Example], picks: list[tuple[Example, str]]) -> list[Edit]:
        edits = []
        free = max(0, self.max_examples - len(existing))
        replaceable = list(existing)
        for ex, task_id in picks:
            if free > 0:
                edits.append(
                    Edit(
                        "add",
                        section=SECTION,
                        content=ex.text,
                        rationale=f"worked example for a failed case ({shape(ex.input)})",
                        evidence=(task_id,),
                        source="exemplars",
                    )
                )
                free -= 1
            elif replaceable:
                target = max(replaceable, key=lambda e: similarity(e.input, ex.input))
                replaceable.remove(target)
                edits.append(
                    Edit(
                        "replace",
                        anchor=target.text,
                        content=ex.text,
                        rationale="the section is full: swap the most similar example "
                        "for a failed case",
                        evidence=(task_id,),
                        source="exemplars",
                    )
                )
        return edits

    def _dedupe(self, existing: list[Example], room: int, touched: set[str]) -> list[Edit]:
        """Delete examples that nearly repeat an earlier one (not one this proposal
        already replaces, and not an exact twin, whose text would be ambiguous)."""
        edits = []
        texts = [e.text for e in existing]
        for i, ex in enumerate(existing):
            if len(edits) >= room:
                break
            if ex.text in touched or texts.count(ex.text) > 1:
                continue
            if any(similarity(ex.input, other.input) >= self.near for other in existing[:i]):
                edits.append(
                    Edit(
                        "delete",
                        anchor=ex.text,
                        rationale="near-duplicate example",
                        source="exemplars",
                    )
                )
        return edits


def _rejected_inputs(memory: Memory) -> dict[str, int]:
    """How often the gate rejected a candidate holding each example input. A
    rejection blames the whole candidate, not one example, so an example waits
    behind fresh ones after one rejection and is dropped after two."""
    out: dict[str, int] = {}
    for r in memory.rejected:
        for m in _EXAMPLE.finditer(r["edit"].get("content") or ""):
            key = m.group("input").strip()
            out[key] = out.get(key, 0) + 1
    return out
