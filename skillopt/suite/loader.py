"""Load a task suite (YAML with inline items or a referenced JSONL) into a `Suite`.

Invariants:
- Every problem is reported before any model call, as one `InputError` naming the
  file (with line), the item id and the field.
- Splits are assigned by a seeded hash of each item's id, never by position, so
  adding or removing items leaves every other item in its split. An item may pin
  its split with `split:`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from skillopt.errors import InputError
from skillopt.suite.scorers import Scorer, build_scorer
from skillopt.suite.task import SPLITS, Suite, Task


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


def assign_split(item_id: str, spec: SplitSpec) -> str:
    """Deterministic split of one item: a uniform draw from sha256(seed, id)."""
    digest = hashlib.sha256(f"{spec.seed}\0{item_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < spec.train:
        return "train"
    if u < spec.train + spec.val:
        return "val"
    return "test"


def render_template(template: str, item_input: Any, item_id: str) -> str:
    """Fill a prompt template: `{input}` is the item's input (JSON when it is not a
    string) and, when the input is a mapping, its keys are slots too."""
    values: dict[str, Any] = {"id": item_id}
    if isinstance(item_input, dict):
        values.update({str(k): v for k, v in item_input.items()})
    values["input"] = item_input if isinstance(item_input, str) else json.dumps(
        item_input, ensure_ascii=False)
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
        raw = _read_yaml(path)
        data_line = getattr(raw, "line", None)
    try:
        spec = SuiteSpec(**raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise InputError(_pyd_msg(err), path=path, field=field, line=data_line) from None
    base = path.parent
    if isinstance(spec.items, str):
        items_path = base / spec.items
        raw_items = _read_jsonl(items_path)
    else:
        items_path = path
        raw_items = [(getattr(it, "line", None), it) for it in spec.items]
    if not raw_items:
        raise InputError("the suite has no items", path=items_path, field="items")

    try:
        default_scorer = build_scorer(spec.scorer, base)
    except ValueError as exc:
        raise InputError(str(exc), path=path, field="scorer") from None
    try:
        render_template(spec.prompt, "x", "x") if "{" in spec.prompt else None
    except (ValueError, IndexError, AttributeError, TypeError) as exc:
        raise InputError(f"invalid template: {exc}", path=path, field="prompt") from None
    except KeyError:
        pass  # slots from mapping inputs are checked per item below

    tasks: list[Task] = []
    seen: dict[str, int | None] = {}
    scorer_cache: dict[str, Scorer] = {}
    for index, (line, item) in enumerate(raw_items):
        label = _label(item, index)
        if not isinstance(item, dict):
            raise InputError(f"an item must be a mapping, got {type(item).__name__}",
                             path=items_path, item=label, line=line)
        try:
            it = ItemSpec(**item)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise InputError(_pyd_msg(err), path=items_path, item=label, field=field,
                             line=line) from None
        item_id = str(it.id)
        if not item_id.strip():
            raise InputError("must not be empty", path=items_path, item=label, field="id", line=line)
        if item_id in seen:
            first = seen[item_id]
            where = f" (first at line {first})" if first else ""
            raise InputError(f"duplicate id{where}", path=items_path, item=item_id, field="id",
                             line=line)
        seen[item_id] = line
        if it.input is None:
            raise InputError("must not be empty", path=items_path, item=item_id, field="input",
                             line=line)

        for rel in it.files:
            problem = _file_path_problem(rel)
            if problem:
                raise InputError(f"file {rel!r}: {problem}", path=items_path, item=item_id,
                                 field="files", line=line)

        scorer = default_scorer
        if it.scorer is not None:
            key = json.dumps(it.scorer, sort_keys=True, default=str)
            if key not in scorer_cache:
                try:
                    scorer_cache[key] = build_scorer(it.scorer, base)
                except ValueError as exc:
                    raise InputError(str(exc), path=items_path, item=item_id, field="scorer",
                                     line=line) from None
            scorer = scorer_cache[key]
        problem = scorer.check_item(it.expected)
        if problem:
            raise InputError(problem, path=items_path, item=item_id, field="expected", line=line)

        try:
            prompt = render_template(spec.prompt, it.input, item_id)
        except KeyError as exc:
            raise InputError(f"the prompt template uses {{{exc.args[0]}}} but this item's input "
                             "has no such field", path=items_path, item=item_id, field="input",
                             line=line) from None
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            raise InputError(f"cannot fill the prompt template: {exc}", path=path, item=item_id,
                             field="prompt") from None
        tasks.append(Task(
            id=item_id, input=it.input, expected=it.expected, prompt=prompt,
            split=it.split or assign_split(item_id, spec.split), scorer=scorer,
            metadata=it.metadata, source=f"{items_path}:{line}" if line else str(items_path),
            files=it.files,
        ))

    return Suite(name=spec.name or path.stem, description=spec.description, path=path,
                 tasks=tuple(tasks), defaults=dict(spec.defaults), judge=spec.judge)


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
        raise InputError(f"split {split!r} is empty ({counts}); pin items with `split:` "
                         "or change the suite's split fractions", path=suite.path, field="split")
    return tasks


# ---------------------------------------------------------------------- file readers
class _LineDict(dict):
    line: int | None = None


# libyaml's parser when PyYAML has it (several times faster on large suites)
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_BaseLoader):
    """SafeLoader whose mappings remember their line and reject duplicate keys."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode):
    data = _LineDict()
    data.line = node.start_mark.line + 1
    yield data
    # own keys only, before `<<` merges are flattened in: an own key may override a merged one
    item_id = next((v.value for k, v in node.value if isinstance(k, yaml.ScalarNode)
                    and k.value == "id" and isinstance(v, yaml.ScalarNode)), None)
    seen: dict = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        ident = (key_node.tag, key_node.value)
        if ident in seen:
            where = f" in item {item_id!r}" if item_id is not None else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key_node.value!r}{where} (first at line {seen[ident]})",
                key_node.start_mark)
        seen[ident] = key_node.start_mark.line + 1
    data.update(loader.construct_mapping(node, deep=True))


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", path=path,
                         line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise InputError("a suite must be a YAML mapping with an `items` list", path=path)
    return data


def _read_jsonl(path: Path) -> list[tuple[int, Any]]:
    if not path.is_file():
        raise InputError("items file not found", path=path, field="items")
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path,
                             line=n) from None
    return rows


def _label(item: Any, index: int) -> str:
    if isinstance(item, dict) and isinstance(item.get("id"), (str, int)):
        return str(item["id"])
    return f"#{index + 1}"


def _pyd_msg(err: dict) -> str:
    if err["type"] == "missing":
        return "required"
    if err["type"] == "extra_forbidden":
        return "unknown field"
    return err["msg"]
