"""Load a task suite (YAML with inline items or a referenced JSONL) into a `Suite`.

Invariants:
- Every problem is reported before any model call, as one `InputError` naming the
  file (with line), the item id and the field.
- Splits are assigned by the rank of a seeded hash of each item's id, never by
  position: the sizes match the fractions exactly, and adding or removing an item
  moves at most one other item across each boundary between splits. An item may
  pin its split with `split:`.
- Loading is linear in the file's size and never hangs (see `suite.readers` for
  the bounds on YAML aliases and nesting).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from skillopt._util.text import did_you_mean
from skillopt.errors import InputError
from skillopt.suite.readers import key_line, read_jsonl, read_yaml
from skillopt.suite.scorers import Scorer, build_scorer
from skillopt.suite.scorers.registry import BadScorerSpec
from skillopt.suite.task import SPLITS, Suite, Task
from skillopt.suite.yaml_values import ItemList, line_of, take_items


class SplitSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = 0
    train: float = Field(0.4, ge=0, le=1)
    val: float = Field(0.3, ge=0, le=1)
    test: float = Field(0.3, ge=0, le=1)

    @model_validator(mode="after")
    def _sums_to_one(self):
        total = self.train + self.val + self.test
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + val + test must be 1, got {total:g}")
        return self


class SuiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    description: str = ""
    prompt: str = "{input}"
    scorer: str | dict = "exact"
    split: SplitSpec = SplitSpec()
    judge: str | None = None
    defaults: dict = Field(default_factory=dict)
    items: list | str


class ItemSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | int
    input: Any
    expected: Any = None
    scorer: str | dict | None = None
    split: Literal["train", "val", "test"] | None = None
    metadata: dict = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)


_ITEM_FIELDS = frozenset(ItemSpec.model_fields)


def split_sizes(n: int, spec: SplitSpec) -> dict[str, int]:
    """How many of `n` items each split gets: the fractions' cumulative shares
    rounded down (45 items at 0.4/0.3/0.3: 18 / 31 -> 18, 13, 14)."""
    train = math.floor(spec.train * n + 1e-9)
    train_val = max(train, min(n, math.floor((spec.train + spec.val) * n + 1e-9)))
    return {"train": train, "val": train_val - train, "test": n - train_val}


def assign_splits(
    ids: Sequence[str], spec: SplitSpec, pinned: Sequence[str | None] | None = None
) -> list[str]:
    """The split of each item of `ids`, in order: the sizes match the fractions
    exactly (`split_sizes` of the whole suite), and the items are ranked by a
    seeded sha256 of their id, the lowest to train, then val, then test.

    An item's split depends on its rank, not its position, so reordering or
    editing items moves none, and adding or removing one item moves at most one
    existing item across each boundary between splits (the rank of everything
    after it shifts by one while each boundary moves by at most one). Pinned items
    (`pinned[i]` not None) keep their split and count toward its size; when they
    overfill a split, the others are shared out in proportion to what each split
    still needs."""
    pins = list(pinned) if pinned is not None else [None] * len(ids)
    prefix = f"{spec.seed}\0".encode()
    free = [i for i, pin in enumerate(pins) if pin is None]
    target = split_sizes(len(ids), spec)
    for pin in pins:
        if pin is not None:
            target[pin] -= 1
    need = {name: max(0, size) for name, size in target.items()}
    if sum(need.values()) != len(free):  # pins overfilled a split
        weights = SplitSpec.model_construct(
            seed=spec.seed, **{k: v / (sum(need.values()) or 1) for k, v in need.items()}
        )
        need = split_sizes(len(free), weights)
    sha256 = hashlib.sha256
    ranked = sorted(free, key=lambda i: (sha256(prefix + ids[i].encode()).digest(), ids[i]))
    out = [pin or "" for pin in pins]
    edges = (need["train"], need["train"] + need["val"])
    for rank, i in enumerate(ranked):
        out[i] = "train" if rank < edges[0] else "val" if rank < edges[1] else "test"
    return out


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


class _Slots(dict):
    def __missing__(self, key):
        raise KeyError(key)


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file. Raises `InputError` on the first problem."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such task suite file", path=path)
    if path.suffix == ".jsonl":
        raw: dict = {"name": path.stem, "items": path.name}
        data_line = None
    else:
        raw = read_yaml(path)
        data_line = line_of(raw)
    items = raw.get("items")
    try:
        # the items are checked one by one below, not copied into the spec
        spec = SuiteSpec.model_validate({**raw, "items": []} if isinstance(items, list) else raw)
    except ValidationError as exc:
        loc, msg = _explain(exc, _SUITE_KEYS)
        line = _line(path, loc, data_line) if data_line else None
        raise InputError(msg, path=path, field=".".join(map(str, loc)), line=line) from None
    base = path.parent
    if isinstance(items, str):
        items_path = base / items
        rows = read_jsonl(items_path)
    else:
        items_path = path
        rows = take_items(items) if type(items) is ItemList else ((line_of(it), it) for it in items)

    try:
        default_scorer = build_scorer(spec.scorer, base)
    except ValueError as exc:
        line = _line(path, ("scorer", *_param(exc)), data_line) if data_line else None
        raise InputError(str(exc), path=path, field="scorer", line=line) from None
    try:
        render_template(spec.prompt, "x", "x") if "{" in spec.prompt else None
    except (ValueError, IndexError, AttributeError, TypeError) as exc:
        raise InputError(f"invalid template: {exc}", path=path, field="prompt") from None
    except KeyError:
        pass  # slots from mapping inputs are checked per item below

    yaml_items = items_path == path and data_line is not None  # key lines can be found
    tasks = _build_tasks(rows, spec, items_path, path, default_scorer, yaml_items)
    if not tasks:
        raise InputError("the suite has no items", path=items_path, field="items")
    return Suite(
        name=spec.name or path.stem,
        description=spec.description,
        path=path,
        tasks=tuple(tasks),
        defaults=dict(spec.defaults),
        judge=spec.judge,
    )


def _build_tasks(
    rows,
    spec: SuiteSpec,
    items_path: Path,
    path: Path,
    default_scorer: Scorer,
    yaml_items: bool = False,
) -> list[Task]:
    """One `Task` per (line, item) row, in order; raises on the first bad item. With
    `yaml_items`, a bad key of an item is placed on its own line of the YAML file."""
    base = path.parent
    tasks: list[Task] = []
    seen: dict[str, int | None] = {}
    scorer_cache: dict[str, Scorer] = {}
    template = spec.prompt
    # an identity or constant template needs no formatting per item
    identity = template == "{input}"
    constant = "{" not in template and "}" not in template
    source_prefix = f"{items_path}:"
    pins: list[str | None] = []
    for index, (line, item) in enumerate(rows):
        if not isinstance(item, dict):
            raise InputError(
                f"an item must be a mapping, got {type(item).__name__}",
                path=items_path,
                item=_label(item, index),
                line=line,
            )
        fields = _plain_item(item)
        if fields is None:  # pydantic says what is wrong, or coerces (True -> 1)
            try:
                it = ItemSpec.model_validate(item)
            except ValidationError as exc:
                loc, msg = _explain(exc, _ITEM_KEYS)
                if yaml_items and loc:
                    line = _line(items_path, ("items", index, *loc), line)
                raise InputError(
                    msg,
                    path=items_path,
                    item=_label(item, index),
                    field=".".join(map(str, loc)),
                    line=line,
                ) from None
            fields = (it.id, it.input, it.expected, it.scorer, it.split, it.metadata, it.files)
        raw_id, item_input, expected, item_scorer, pinned, metadata, files = fields
        item_id = raw_id if type(raw_id) is str else str(raw_id)
        if not item_id.strip():
            raise InputError(
                "must not be empty",
                path=items_path,
                item=_label(item, index),
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
                    scorer_cache[key] = build_scorer(item_scorer, base)
                except ValueError as exc:
                    if yaml_items:
                        line = _line(items_path, ("items", index, "scorer", *_param(exc)), line)
                    raise InputError(
                        str(exc), path=items_path, item=item_id, field="scorer", line=line
                    ) from None
            scorer = scorer_cache[key]
        problem = scorer.check_item(expected)
        if problem:
            raise InputError(problem, path=items_path, item=item_id, field="expected", line=line)

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
    splits = assign_splits([t.id for t in tasks], spec.split, pins)
    return [t if t.split == s else replace(t, split=s) for t, s in zip(tasks, splits)]


def _plain_item(item: dict) -> tuple | None:
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
    return item_id, item["input"], item.get("expected"), scorer, split, metadata, files


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


def _label(item: Any, index: int) -> str:
    if isinstance(item, dict) and isinstance(item.get("id"), (str, int)):
        return str(item["id"])
    return f"#{index + 1}"


# pydantic's wording for a missing or unknown field, as a suite's author reads it
_MESSAGES = {"missing": "required", "extra_forbidden": "unknown field"}
# the keys a suite may have, by where they are written (for "did you mean")
_SUITE_KEYS: dict[tuple, list[str]] = {
    (): list(SuiteSpec.model_fields),
    ("split",): list(SplitSpec.model_fields),
}
_ITEM_KEYS: dict[tuple, list[str]] = {(): list(ItemSpec.model_fields)}


def _explain(exc: ValidationError, keys: dict[tuple, list[str]]) -> tuple[tuple, str]:
    """(where, what) of the problem to report: an unknown key first (a typo is also
    why a required key seems missing), with the closest key allowed there; else
    pydantic's first problem, in a suite author's words."""
    errors = exc.errors()
    unknown = sorted(
        (e for e in errors if e["type"] == "extra_forbidden"), key=lambda e: len(e["loc"])
    )
    err = unknown[0] if unknown else errors[0]  # the outermost unknown key first
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden" and loc[:-1] in keys:
        allowed = keys[loc[:-1]]
        hint = did_you_mean(str(loc[-1]), allowed)
        return loc, "unknown field; " + (hint or f"allowed: {', '.join(allowed)}")
    if err["type"] in _MESSAGES:
        return loc, _MESSAGES[err["type"]]
    return loc, str(err["msg"]).removeprefix("Value error, ")


def _line(path: Path, keys: tuple, fallback: int | None) -> int | None:
    """The line of the key at `keys` in the YAML file, or of the nearest key above it
    that is written there (not above a list item: that is `fallback`, the item's
    line), or `fallback`."""
    for end in range(len(keys), 0, -1):
        if isinstance(keys[end - 1], int):
            break
        line = key_line(path, keys[:end])
        if line is not None:
            return line
    return fallback


def _param(exc: ValueError) -> tuple[str, ...]:
    """The scorer parameter a build error is about, as a key path (empty if none)."""
    param = exc.param if isinstance(exc, BadScorerSpec) else None
    return (param,) if param and "." not in param else ()
