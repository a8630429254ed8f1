"""What the optimizer's reply must be and how it is read: the JSON schema of a list of
edits (offered as JSON mode where the model has one), and `parse_edits`, which turns a
reply into `Edit`s or says in one line why it cannot.

Invariant: a reply never raises past `parse_edits` as anything but a `ValueError`
whose message the repair re-ask can quote back.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from skillopt.errors import first_error
from skillopt.skill.edits import Edit
from skillopt.suite.scorers import NO_JSON, parse_json_answer


# ---------------------------------------------------------------------- reply schema
class EditSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")
    op: Literal["add", "delete", "replace"]
    anchor: str | None = None
    section: str | None = None
    content: str | None = None
    rationale: str = ""
    evidence: list[str] = []


class EditsReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    edits: list[EditSpec]


EDITS_SCHEMA = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["add", "delete", "replace"]},
                    "anchor": {"type": ["string", "null"]},
                    "section": {"type": ["string", "null"]},
                    "content": {"type": ["string", "null"]},
                    "rationale": {"type": "string"},
                    "evidence": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["op", "anchor", "section", "content", "rationale", "evidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["edits"],
    "additionalProperties": False,
}


def parse_edits(text: str, source: str) -> list[Edit]:
    """Edits from a model reply (bare JSON, fenced, or inside prose). Raises
    ValueError with a reason the repair prompt can quote."""
    try:
        data = parse_json_answer(text)
    except ValueError as exc:
        raise ValueError(no_json_reason(exc)) from None
    if isinstance(data, list):
        data = {"edits": data}
    try:
        reply = EditsReply.model_validate(data)
    except ValidationError as exc:
        loc, msg = first_error(exc)
        raise ValueError(f"{loc}: {msg}") from None
    edits = []
    for i, e in enumerate(reply.edits):
        if e.op in ("delete", "replace") and not (e.anchor or "").strip():
            raise ValueError(f"edits.{i}: a {e.op} needs an anchor copied from the skill")
        if e.op in ("add", "replace") and not (e.content or "").strip():
            raise ValueError(f"edits.{i}: an {e.op} needs content")
        edits.append(
            Edit(
                op=e.op,
                anchor=e.anchor or None,
                section=e.section or None,
                content=e.content,
                rationale=e.rationale,
                evidence=tuple(e.evidence),
                source=source,
            )
        )
    return edits


def no_json_reason(exc: ValueError) -> str:
    """The repair prompt's reason for a reply `parse_json_answer` refused."""
    return "the reply contains no JSON object" if str(exc) == NO_JSON else str(exc)
