"""Trigger items: a query as the user would type it and whether it should make the
agent load the skill (`should_trigger`, the shape of Anthropic's skill-creator trigger
evals), read into `Task`s the `trigger` scorer scores on the trace.

Invariants: a trigger item is shown to the agent as its query, with no template
(implicit invocation is what it measures); it holds `query` and a true-or-false
`should_trigger` and none of a task's fields (`input`, `expected`, `scorer`,
`files`), and a problem is one `InputError` naming the file, the item and the field;
a suite holds tasks or trigger queries, never both (`mixed_kinds`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from skillopt.errors import InputError
from skillopt.suite.problems import explain, item_label, line_of_key

TRIGGER_SCORER = "trigger"
# a task's fields, which a trigger item never has: its query is the prompt, its
# should_trigger the expectation, the trigger scorer its scorer
TASK_FIELDS = ("input", "expected", "scorer", "files")


class TriggerSpec(BaseModel):
    """A trigger item as a suite writes it."""

    model_config = ConfigDict(extra="forbid")
    id: str | int
    query: str = Field(min_length=1)
    should_trigger: StrictBool
    split: Literal["train", "val", "test"] | None = None
    metadata: dict[Any, Any] = Field(default_factory=dict)


_KEYS: dict[tuple[str | int, ...], list[str]] = {(): list(TriggerSpec.model_fields)}


def is_trigger_item(item: dict[Any, Any]) -> bool:
    """An item written as a trigger query (it has `should_trigger` or `query`)."""
    return "should_trigger" in item or "query" in item


def read_trigger(
    item: dict[Any, Any], index: int, items_path: Path, line: int | None, yaml_items: bool
) -> TriggerSpec:
    """The trigger item `item` (the `index`th of the file, at `line`), checked."""
    for key in TASK_FIELDS:
        if key in item:
            raise InputError(
                f"a trigger item has `query` and `should_trigger`; `{key}` is a task's "
                "field (a trigger query is scored on whether the skill loaded, not on "
                "an answer)",
                path=items_path,
                item=item_label(item, index),
                field=key,
                line=_line(items_path, index, key, line, yaml_items),
            )
    try:
        spec = TriggerSpec.model_validate(item)
    except ValidationError as exc:
        loc, msg = explain(exc, _KEYS)
        field = ".".join(map(str, loc))
        if loc == ("should_trigger",) and msg != "required":
            msg = "must be true or false"
        elif loc == ("query",) and msg != "required":
            msg = "must be non-empty text: the request as the user would type it"
        raise InputError(
            msg,
            path=items_path,
            item=item_label(item, index),
            field=field,
            line=_line(items_path, index, loc[0] if loc else None, line, yaml_items),
        ) from None
    if not spec.query.strip():
        raise InputError(
            "must be non-empty text: the request as the user would type it",
            path=items_path,
            item=item_label(item, index),
            field="query",
            line=_line(items_path, index, "query", line, yaml_items),
        )
    return spec


def _line(
    path: Path, index: int, key: str | int | None, line: int | None, yaml_items: bool
) -> int | None:
    if not yaml_items or key is None:
        return line
    return line_of_key(path, ("items", index, key), line)


def mixed_kinds(
    first_id: str, first_trigger: bool, item_id: str, items_path: Path, line: int | None
) -> InputError:
    """The error for an item whose kind (task or trigger query) differs from the
    suite's first item's."""
    this, first = (
        ("a trigger query", "a task") if not first_trigger else ("a task", "a trigger query")
    )
    return InputError(
        f"this item is {this} but the suite's first item ({first_id}) is {first}: a "
        "suite holds tasks or trigger queries, not both (its mean would mix answer "
        "quality with whether the skill loaded); keep the trigger queries in a suite "
        "of their own, as `skillopt tasks import` writes `<stem>-triggers.yaml`",
        path=items_path,
        item=item_id,
        field="should_trigger" if not first_trigger else "input",
        line=line,
    )
