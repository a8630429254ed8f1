"""Turning a suite's raw items into `Task`s: each item checked (id, input, files,
its scorer and `expected`) and its prompt rendered from the suite's template; a
trigger item (`query`, `should_trigger`) is read by `triggers` and shown as typed.

Invariants: the first bad item raises one `InputError` naming the file (with line),
the item id and the field; an item that pydantic would accept unchanged is taken
without it (the fast path), anything unusual goes through `ItemSpec`, so pydantic
alone words the error or coerces the value. Splits are assigned once all items are
read (`splits`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skillopt.errors import InputError
from skillopt.suite.problems import explain, item_label, line_of_key, scorer_param
from skillopt.suite.scorers import Scorer, build_scorer
from skillopt.suite.splits import SplitSpec, assign_splits
from skillopt.suite.task import SPLITS, Task
from skillopt.suite.triggers import TRIGGER_SCORER, is_trigger_item, mixed_kinds, read_trigger


class ItemSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | int
    input: Any
    expected: Any = None
    scorer: str | dict[Any, Any] | None = None
    split: Literal["train", "val", "test"] | None = None
    metadata: dict[Any, Any] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)


_ITEM_FIELDS = frozenset(ItemSpec.model_fields)
# the keys an item may have (for "did you mean")
ITEM_KEYS: dict[tuple[str | int, ...], list[str]] = {(): list(ItemSpec.model_fields)}


class ItemFields(NamedTuple):
    """An item's fields as `ItemSpec` would hold them."""

    id: str | int
    input: Any
    expected: Any
    scorer: str | dict[Any, Any] | None
    split: str | None
    metadata: dict[Any, Any]
    files: dict[str, str]


def render_template(template: str, item_input: Any, item_id: str) -> str:
    """Fill a prompt template: `{input}` is the item's input (JSON when it is not a
    string) and, when the input is a mapping, its keys are slots too."""
    values: dict[str, Any] = {"id": item_id}
    if isinstance(item_input, dict):
        values.update({str(k): v for k, v in item_input.items()})
    values["input"] = (
        item_input if isinstance(item_input, str) else json.dumps(item_input, ensure_ascii=False)
    )
    return template.format_map(_Slots(values))


class _Slots(dict[str, Any]):
    def __missing__(self, key: str) -> Any:
        raise KeyError(key)


def build_tasks(
    rows: Iterable[tuple[int | None, Any]],
    template: str,
    fractions: SplitSpec,
    items_path: Path,
    path: Path,
    default_scorer: Scorer[Any],
    yaml_items: bool = False,
    run_code: bool = True,
) -> list[Task]:
    """One `Task` per (line, item) row, in order; raises on the first bad item. With
    `yaml_items`, a bad key of an item is placed on its own line of the YAML file;
    without `run_code`, an item's scorer that runs code is built `Unloaded`."""
    base = path.parent
    tasks: list[Task] = []
    seen: dict[str, int | None] = {}
    scorer_cache: dict[str, Scorer[Any]] = {}
    # an identity or constant template needs no formatting per item
    identity = template == "{input}"
    constant = "{" not in template and "}" not in template
    source_prefix = f"{items_path}:"
    pins: list[str | None] = []
    # the first item's id, and whether it is a trigger query (a suite never mixes kinds)
    head: tuple[str, bool] | None = None
    for index, (line, item) in enumerate(rows):
        if not isinstance(item, dict):
            raise InputError(
                f"an item must be a mapping, got {type(item).__name__}",
                path=items_path,
                item=item_label(item, index),
                line=line,
            )
        fields: ItemFields | None
        if is_trigger_item(item):
            t = read_trigger(item, index, items_path, line, yaml_items)
            fields = ItemFields(
                t.id, t.query, t.should_trigger, TRIGGER_SCORER, t.split, t.metadata, {}
            )
        else:
            fields = _plain_item(item)
        if fields is None:  # pydantic says what is wrong, or coerces (True -> 1)
            try:
                it = ItemSpec.model_validate(item)
            except ValidationError as exc:
                loc, msg = explain(exc, ITEM_KEYS)
                if yaml_items and loc:
                    line = line_of_key(items_path, ("items", index, *loc), line)
                raise InputError(
                    msg,
                    path=items_path,
                    item=item_label(item, index),
                    field=".".join(map(str, loc)),
                    line=line,
                ) from None
            fields = ItemFields(
                it.id, it.input, it.expected, it.scorer, it.split, it.metadata, it.files
            )
        raw_id, item_input, expected, item_scorer, pinned, metadata, files = fields
        item_id = raw_id if type(raw_id) is str else str(raw_id)
        if not item_id.strip():
            raise InputError(
                "must not be empty",
                path=items_path,
                item=item_label(item, index),
                field="id",
                line=line,
            )
        if not item_id.isascii():
            try:
                item_id.encode()
            except UnicodeEncodeError:
                # a lone UTF-16 surrogate escape in JSON; it could not be hashed or stored
                raise InputError(
                    "must be valid Unicode text, not an unpaired surrogate escape",
                    path=items_path,
                    field="id",
                    line=line,
                ) from None
        if item_id in seen:
            first = seen[item_id]
            where = f" (first at line {first})" if first else ""
            raise InputError(
                f"duplicate id{where}", path=items_path, item=item_id, field="id", line=line
            )
        seen[item_id] = line
        if item_input is None:
            raise InputError(
                "must not be empty", path=items_path, item=item_id, field="input", line=line
            )

        for rel in files:
            problem = _file_path_problem(rel)
            if problem:
                raise InputError(
                    f"file {rel!r}: {problem}",
                    path=items_path,
                    item=item_id,
                    field="files",
                    line=line,
                )

        scorer = default_scorer
        if item_scorer is not None:
            key = json.dumps(item_scorer, sort_keys=True, default=str)
            if key not in scorer_cache:
                try:
                    scorer_cache[key] = build_scorer(item_scorer, base, run_code=run_code)
                except ValueError as exc:
                    if yaml_items:
                        line = line_of_key(
                            items_path, ("items", index, "scorer", *scorer_param(exc)), line
                        )
                    raise InputError(
                        str(exc), path=items_path, item=item_id, field="scorer", line=line
                    ) from None
            scorer = scorer_cache[key]
        trigger = scorer.name == TRIGGER_SCORER
        problem = scorer.check_item(expected)
        if problem:
            field = "should_trigger" if trigger else "expected"
            raise InputError(problem, path=items_path, item=item_id, field=field, line=line)
        if head is None:
            head = (item_id, trigger)
        elif head[1] != trigger:
            raise mixed_kinds(head[0], head[1], item_id, items_path, line)
        if trigger and not identity:
            raise InputError(
                "a trigger query is shown to the agent as the user would type it: a "
                "trigger suite takes no prompt template",
                path=path,
                field="prompt",
            )

        if identity and type(item_input) is str:
            prompt = item_input
        elif constant:
            prompt = template
        else:
            try:
                prompt = render_template(template, item_input, item_id)
            except KeyError as exc:
                raise InputError(
                    f"the prompt template uses {{{exc.args[0]}}} but this item's "
                    "input has no such field",
                    path=items_path,
                    item=item_id,
                    field="input",
                    line=line,
                ) from None
            except (ValueError, IndexError, AttributeError, TypeError) as exc:
                raise InputError(
                    f"cannot fill the prompt template: {exc}",
                    path=path,
                    item=item_id,
                    field="prompt",
                ) from None
        pins.append(pinned)
        tasks.append(
            Task(
                id=item_id,
                input=item_input,
                expected=expected,
                prompt=prompt,
                split=pinned or "",  # the free ones are ranked once all are read
                scorer=scorer,
                metadata=metadata,
                source=f"{source_prefix}{line}" if line else str(items_path),
                files=files,
            )
        )
    splits = assign_splits([t.id for t in tasks], fractions, pins)
    return [t if t.split == s else replace(t, split=s) for t, s in zip(tasks, splits)]


def _plain_item(item: dict[str, Any]) -> ItemFields | None:
    """The fields of an item that `ItemSpec` would accept unchanged, without paying for
    pydantic per item; None when anything is unusual, so that pydantic, and only
    pydantic, words the error (or coerces the value) exactly as it always has."""
    if not item.keys() <= _ITEM_FIELDS or "input" not in item:
        return None
    item_id = item.get("id")
    if type(item_id) is not str and type(item_id) is not int:  # not bool, not float
        return None
    scorer = item.get("scorer")
    if scorer is not None and type(scorer) is not str:
        if not isinstance(scorer, dict):
            return None
        scorer = dict(scorer)
    split = item.get("split")
    if split is not None and (type(split) is not str or split not in SPLITS):
        return None
    metadata = item.get("metadata")
    if metadata is None:
        if "metadata" in item:
            return None
        metadata = {}
    elif not isinstance(metadata, dict):
        return None
    else:
        metadata = dict(metadata)  # a copy, as pydantic made one
    files = item.get("files")
    if files is None:
        if "files" in item:
            return None
        files = {}
    elif not isinstance(files, dict) or not all(
        type(k) is str and type(v) is str for k, v in files.items()
    ):
        return None
    else:
        files = dict(files)
    return ItemFields(item_id, item["input"], item.get("expected"), scorer, split, metadata, files)


def _file_path_problem(rel: str) -> str | None:
    """Why a task file's path may not be written into a workspace (None if it may)."""
    p = PurePosixPath(rel.replace("\\", "/"))
    if not rel.strip() or p.is_absolute() or rel.startswith(("/", "\\")) or ":" in p.parts[0]:
        return "must be a relative path inside the workspace"
    if ".." in p.parts:
        return "must not contain '..'"
    if p.parts[0] in (".claude", ".agents", ".codex"):
        return f"must not be under {p.parts[0]}/, where the harness installs the skill"
    return None
