"""Suites whose items come from a task source: a source given where a suite is
(`--tasks data.csv`, `--tasks hf:owner/name`), or a suite file that names one
(`items: data.csv`, with a `mapping:` block saying which fields are which).

Invariants: a skillopt suite (YAML, `items: x.jsonl` without a mapping, a `.jsonl`
of items in skillopt's shape) is never read as a source, so it loads exactly as it
always has; a source's items go through the same checks as a suite file's, and the
suite file's own keys (`prompt`, `scorer`, …) win over what the source says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from skillopt.suite.sources import FieldMap, Imported, detect, read_source
from skillopt.suite.sources.hf import is_hub_id

# a source's suffixes that `detect` may find to be a skillopt suite after all
_MAYBE_SUITE = (".yaml", ".yml", ".jsonl", ".json")


class MappingSpec(BaseModel):
    """A suite's `mapping:` block: which of the source's fields hold each part."""

    model_config = ConfigDict(extra="forbid")
    input: str | None = None
    expected: str | None = None
    id: str | None = None
    split: str | None = None
    subset: str | None = None
    keep_unscored: bool = False

    def fields(self) -> FieldMap:
        return FieldMap(**self.model_dump())


def source_kind(source: str) -> str | None:
    """The kind of task source `source` is, or None when it is a skillopt suite file
    (or nothing at all: the loader says so)."""
    if is_hub_id(source):
        return "hf"
    path = Path(source)
    if path.is_dir():
        return detect(source)  # a directory that is no source: its own error
    if not path.is_file():
        return None
    suffix = path.suffix.lower()
    if suffix in _MAYBE_SUITE:
        kind = detect(source)
        return None if kind == "suite" else kind
    if suffix in (".csv", ".tsv", ".eval"):
        return detect(source)
    return None  # read as YAML, as a suite of any other name always was


def read_items_source(items: str, base: Path, mapping: MappingSpec | None) -> Imported | None:
    """The source a suite file's `items: REF` names, read with its mapping; None when
    REF is a file of items in skillopt's shape (a `.jsonl` and no mapping)."""
    ref = items if is_hub_id(items) else str(base / items)
    if mapping is None and not is_hub_id(items) and Path(ref).suffix.lower() == ".jsonl":
        return None
    fields = mapping.fields() if mapping else FieldMap()
    return read_source(ref, None, fields)


def filled(raw: dict[str, Any], imported: Imported, name: str) -> dict[str, Any]:
    """The suite mapping: what the source gives (`Imported.suite`), under the keys
    the suite file writes itself."""
    out = imported.suite(name)
    out.update({k: v for k, v in raw.items() if k not in ("mapping", "items")})
    return out


def source_name(source: str, kind: str) -> str:
    """The name of the suite a source given as the suite makes: the file's stem, or a
    hub dataset's own name."""
    return Path(source.partition("?")[0]).name if kind == "hf" else Path(source).stem


def inlined(path: str | Path) -> dict[str, Any] | None:
    """The suite at `path` with its items written in, when they come from a task
    source (a source given as the suite, or a suite file's `items: data.csv` with its
    mapping); None for a suite that holds or names its own items. Loading the result
    gives the same tasks, so a run's bundle can carry it instead of the source."""
    from skillopt.suite.readers import read_yaml

    source = str(path)
    kind = source_kind(source)
    if kind is not None:
        return _plain_map(read_source(source, kind).suite(source_name(source, kind)))
    path = Path(path)
    if path.suffix == ".jsonl" or not path.is_file():
        return None
    raw = read_yaml(path)
    items = raw.get("items")
    if not isinstance(items, str):
        return None
    mapping = raw.get("mapping")
    spec = MappingSpec.model_validate(mapping) if mapping is not None else None
    imported = read_items_source(items, path.parent, spec)
    if imported is None:
        return None
    return _plain_map(filled(raw, imported, path.stem))


def _plain_map(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in mapping.items()}


def _plain(value: Any) -> Any:
    """`value` with the reader's line-knowing mappings and lists made plain ones, which
    any YAML writer can write."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
