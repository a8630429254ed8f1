"""What an optimizer is asked when the description is the trained part
(`train --part description`): the current description, the training queries it
misfired on (with each one's load rate and the skills loaded instead), the other
installed skills' descriptions (the collisions named), and the spec's limits; and
the one reply it gives, a new description carried as a single `replace` edit.

Invariants: the optimizer sees training queries only; the description edit is an
ordinary `Edit` (op `replace`, section `description`, source `description`), so
memory, records, commits and reports treat it like every other edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from skillopt.optimize.base import NO_CONTEXT, Proposal, RunContext
from skillopt.optimize.memory import Memory
from skillopt.optimize.prompting import clip_field
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit
from skillopt.suite.scorers import parse_json_answer

SECTION = "description"  # the `section` of a description edit
MAX_CHARS = 1024
LIMITS = (
    f"1 to {MAX_CHARS} characters; no `<` or `>`; says what the skill does AND when to "
    "use it (the requests, words and situations that should load it, and what it is "
    'not for); written in the third person ("Normalises product codes…", never '
    '"I"/"you"); plain text on one line'
)
DESCRIPTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"description": {"type": "string"}, "rationale": {"type": "string"}},
    "required": ["description", "rationale"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Query:
    """One training query as the step saw it: whether it should load the skill, in
    how many of its traced samples it did, and the skills loaded instead."""

    task_id: str
    query: str
    should_trigger: bool
    loaded: int
    traced: int
    instead: tuple[str, ...] = ()


@dataclass(frozen=True)
class DescriptionRequest:
    """A description step's ask: `queries` the step's misfires (and `kept` queries it
    got right, to keep right), `library` the other installed skills as (name,
    description), `collisions` the library skills the misfires loaded instead."""

    skill: Skill
    misfires: Sequence[Query]
    kept: Sequence[Query]
    library: Sequence[tuple[str, str]]
    collisions: Sequence[str]
    memory: Memory
    step: int = 0
    epoch: int = 0
    context: RunContext = NO_CONTEXT
    note: str = ""  # a repair ask: why the last description was refused


@runtime_checkable
class WritesDescriptions(Protocol):
    """An optimizer that can write a skill's description (`train --part
    description`): `propose_description` answers with a `Proposal` holding one
    description edit (`description_edit`), or none and `skipped` saying why; it never
    raises for a bad reply or a failed call."""

    def propose_description(self, request: DescriptionRequest) -> Proposal: ...


def description_edit(old: str, new: str, rationale: str, evidence: Sequence[str]) -> Edit:
    """The edit that carries a proposed description."""
    return Edit(
        op="replace",
        anchor=old,
        section=SECTION,
        content=new,
        rationale=rationale,
        evidence=tuple(evidence),
        source="description",
    )


def parse_description(text: str) -> tuple[str, str]:
    """(description, rationale) from a reply; ValueError (told back once) when it is
    not `{"description": "...", "rationale": "..."}`."""
    data = parse_json_answer(text)
    if not isinstance(data, dict) or not isinstance(data.get("description"), str):
        raise ValueError('expected {"description": "...", "rationale": "..."}')
    why = data.get("rationale")
    return " ".join(data["description"].split()), why if isinstance(why, str) else ""


def _query_line(q: Query) -> str:
    want = "SHOULD load it" if q.should_trigger else "should NOT load it"
    line = f"- [{q.task_id}] {want}; loaded in {q.loaded}/{q.traced} runs: "
    line += clip_field(q.query, 400).replace("\n", " ")
    if q.instead:
        line += f" (loaded instead: {', '.join(q.instead)})"
    return line


def render_queries(queries: Sequence[Query], empty: str) -> str:
    return "\n".join(map(_query_line, queries)) if queries else empty


def render_library(library: Sequence[tuple[str, str]], collisions: Sequence[str]) -> str:
    """The other installed skills as the agent lists them, colliding ones marked."""
    if not library:
        return "(no other skill is installed)"
    marked = set(collisions)
    return "\n".join(
        f"- {name}: {clip_field(text, 600)}"
        + ("  [COLLIDES: misfired queries loaded it instead]" if name in marked else "")
        for name, text in library
    )
