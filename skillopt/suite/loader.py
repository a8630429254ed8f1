"""Load a task suite (YAML with inline items or a referenced JSONL, or any task
source `sourced` reads: a CSV, a JSON table, a Hugging Face dataset, …) into a `Suite`.

Invariants:
- Every problem is reported before any model call, as one `InputError` naming the
  file (with line), the item id and the field.
- Splits are assigned by the rank of a seeded hash of each item's id (`splits`).
- Loading is linear in the file's size and never hangs (see `suite.limits` for the
  bounds on YAML aliases and nesting).
- With `run_code=False` (a replay not told to trust the suite's code), loading
  imports and runs nothing the suite names: its python and command scorers are
  built `Unloaded` (same rollout keys, no code).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skillopt.errors import InputError
from skillopt.suite.items import build_tasks, render_template
from skillopt.suite.problems import explain, line_of_key, scorer_param
from skillopt.suite.readers import read_jsonl, read_yaml
from skillopt.suite.scorers import build_scorer
from skillopt.suite.sourced import (
    MappingSpec,
    filled,
    read_items_source,
    source_kind,
    source_name,
)
from skillopt.suite.sources import Imported, read_source
from skillopt.suite.splits import SplitSpec
from skillopt.suite.task import SPLITS, Suite, Task
from skillopt.suite.yaml_values import ItemList, line_of, take_items


class SuiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    description: str = ""
    prompt: str = "{input}"
    scorer: str | dict[Any, Any] = "exact"
    split: SplitSpec = SplitSpec()
    judge: str | None = None
    defaults: dict[Any, Any] = Field(default_factory=dict)
    mapping: MappingSpec | None = None
    # the trigger suite of `train --part both`: a file under this suite's folder
    triggers: str | None = None
    items: list[Any] | str


# the keys a suite may have, by where they are written (for "did you mean")
_SUITE_KEYS: dict[tuple[str | int, ...], list[str]] = {
    (): list(SuiteSpec.model_fields),
    ("split",): list(SplitSpec.model_fields),
    ("mapping",): list(MappingSpec.model_fields),
}


def load_suite(path: str | Path, *, run_code: bool = True, follow: bool = True) -> Suite:
    """Read and validate a suite file, or a task source given in its place (a CSV,
    a JSON table, `hf:owner/name`, …: see `sourced`). Raises `InputError` on the
    first problem. Without `run_code`, no scorer's code is imported (see the
    invariants); without `follow`, a `triggers:` key is not followed (the trigger
    suite's own load, so that a suite naming itself cannot loop)."""
    source = str(path)
    path = Path(path)
    kind = source_kind(source)
    if kind is not None:
        imported = read_source(source, kind)
        return _load(imported.suite(source_name(source, kind)), path, None, run_code, imported)
    if not path.is_file():
        raise InputError("no such task suite file", path=path)
    if path.suffix == ".jsonl":
        raw: dict[str, Any] = {"name": path.stem, "items": path.name}
        return _load(raw, path, None, run_code)
    raw = read_yaml(path)
    return _load(raw, path, line_of(raw), run_code, follow=follow)


def load_imported(imported: Imported, name: str) -> Suite:
    """The suite a source's items make, named `name`, checked as a suite file's are
    (a problem names the source and the item)."""
    return _load(imported.suite(name), Path(imported.source), None, True, imported)


def _load(
    raw: dict[str, Any],
    path: Path,
    data_line: int | None,
    run_code: bool,
    imported: Imported | None = None,
    *,
    follow: bool = True,
) -> Suite:
    items = raw.get("items")
    try:
        # the items are checked one by one below, not copied into the spec
        spec = SuiteSpec.model_validate({**raw, "items": []} if isinstance(items, list) else raw)
    except ValidationError as exc:
        loc, msg = explain(exc, _SUITE_KEYS)
        line = line_of_key(path, loc, data_line) if data_line else None
        raise InputError(msg, path=path, field=".".join(map(str, loc)), line=line) from None
    base = path.parent
    if spec.mapping is not None and not isinstance(items, str):
        line = line_of_key(path, ("mapping",), data_line) if data_line else None
        raise InputError(
            "a mapping says how a source's fields are read (`items: data.csv`); "
            "items written in the suite need none",
            path=path,
            field="mapping",
            line=line,
        )
    if imported is None and isinstance(items, str):
        imported = read_items_source(items, base, spec.mapping)
        if imported is not None:
            spec = SuiteSpec.model_validate({**filled(raw, imported, path.stem), "items": []})
    rows: Iterable[tuple[int | None, Any]]
    if imported is not None:
        items_path = Path(imported.source)
        rows = ((None, item) for item in imported.rows)
    elif isinstance(items, str):
        items_path = base / items
        rows = read_jsonl(items_path)
    else:
        items_path = path
        assert isinstance(items, list)  # SuiteSpec took it as a list
        rows = (
            take_items(items)
            if isinstance(items, ItemList)
            else ((line_of(it), it) for it in items)
        )

    try:
        default_scorer = build_scorer(spec.scorer, base, run_code=run_code)
    except ValueError as exc:
        line = line_of_key(path, ("scorer", *scorer_param(exc)), data_line) if data_line else None
        raise InputError(str(exc), path=path, field="scorer", line=line) from None
    try:
        render_template(spec.prompt, "x", "x") if "{" in spec.prompt else None
    except (ValueError, IndexError, AttributeError, TypeError) as exc:
        raise InputError(f"invalid template: {exc}", path=path, field="prompt") from None
    except KeyError:
        pass  # slots from mapping inputs are checked per item below

    yaml_items = items_path == path and data_line is not None  # key lines can be found
    tasks = build_tasks(
        rows, spec.prompt, spec.split, items_path, path, default_scorer, yaml_items, run_code
    )
    if not tasks:
        raise InputError("the suite has no items", path=items_path, field="items")
    if tasks[0].is_trigger:
        _check_trigger_suite(raw, path, data_line)
    trigger_suite = None
    if spec.triggers is not None and (follow or tasks[0].is_trigger):
        line = line_of_key(path, ("triggers",), data_line) if data_line else None
        trigger_suite = _trigger_suite(spec.triggers, path, tasks, line, run_code)
    return Suite(
        name=spec.name or path.stem,
        description=spec.description,
        path=path,
        tasks=tuple(tasks),
        defaults=dict(spec.defaults),
        judge=spec.judge,
        trigger_suite=trigger_suite,
    )


def _trigger_suite(
    name: str, path: Path, tasks: list[Task], line: int | None, run_code: bool
) -> Suite:
    """The trigger suite a task suite names (`triggers: FILE`): a file under the task
    suite's folder (so that a bundle carries it), holding trigger queries whose ids are
    not the tasks'."""

    def refuse(why: str) -> InputError:
        return InputError(why, path=path, field="triggers", line=line)

    if tasks[0].is_trigger:
        raise refuse("a trigger suite names no trigger suite: `triggers:` belongs in a task suite")
    base = path.parent.resolve()
    target = (base / name).resolve()
    if not target.is_relative_to(base):
        raise refuse(
            f"{name!r} is outside the suite's folder: keep the trigger suite beside the "
            "task suite (or below its folder), so that the two travel together"
        )
    if not target.is_file():
        raise refuse(f"no such trigger suite: {name!r} (looked for {target})")
    found = load_suite(target, run_code=run_code, follow=False)
    if not found.is_triggers:
        raise refuse(
            f"{name!r} holds tasks: `triggers:` names a trigger suite (items with `query` "
            "and `should_trigger`)"
        )
    shared = sorted({t.id for t in tasks} & {t.id for t in found.tasks})
    if shared:
        raise refuse(
            f"{name!r} reuses task ids ({', '.join(shared[:3])}): a trigger query's id "
            "must differ from every task's, so each outcome names one item"
        )
    return found


def _check_trigger_suite(raw: dict[str, Any], path: Path, data_line: int | None) -> None:
    """A trigger suite's queries are shown as typed and scored on loading: a `prompt`
    template or another scorer written at its top is refused, not ignored."""
    for key, allowed in (("prompt", "{input}"), ("scorer", "trigger")):
        if key in raw and raw[key] != allowed:
            line = line_of_key(path, (key,), data_line) if data_line else None
            raise InputError(
                "a trigger suite's queries are shown to the agent as the user would "
                "type them and scored on whether the skill loaded: leave out "
                f"`{key}:`",
                path=path,
                field=key,
                line=line,
            )


def require_split(suite: Suite, split: str) -> list[Task]:
    """The tasks of `split` ('all' for every task); an empty split is an input error."""
    if split != "all" and split not in SPLITS:
        raise InputError(f"unknown split {split!r}; choose train, val, test or all")
    tasks = suite.split(split)
    if not tasks:
        counts = ", ".join(f"{k}={v}" for k, v in suite.counts().items())
        raise InputError(
            f"split {split!r} is empty ({counts}); pin items with `split:` "
            "or change the suite's split fractions",
            path=suite.path,
            field="split",
        )
    return tasks
