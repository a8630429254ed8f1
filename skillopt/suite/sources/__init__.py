"""Where tasks already live, read into the shape of a suite: CSV/TSV and JSON/JSONL
tables with a field mapping, Hugging Face datasets, promptfoo configs, inspect_ai
datasets and logs, skill-creator `evals/evals.json` (`detect` names which; each
reader returns an `Imported`).

Invariants: a reader only reads (nothing it reads is run: a promptfoo `javascript`
or `python` assert is reported as unmapped, never executed); every item it makes has
an `id` and an `input`; a row it cannot use is kept in `skipped` with its place and
the reason, never dropped silently; a bad source is one `InputError` naming the
file, the row and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

from skillopt.errors import InputError
from skillopt.suite.sources.records import FieldMap, Imported, Skipped

__all__ = ["KINDS", "FieldMap", "Imported", "Skipped", "detect", "read_source"]

# every kind of source, as `--format` names it
KINDS = (
    "suite",
    "csv",
    "tsv",
    "json",
    "jsonl",
    "hf",
    "promptfoo",
    "inspect",
    "inspect-log",
    "skill-creator",
)
# also `huggingface:/datasets/…`: the double slash folded, as a path-typed option hands it
HF_PREFIXES = ("hf:", "hf://datasets/", "huggingface://datasets/", "huggingface:/datasets/")


def detect(source: str) -> str:
    """The kind of `source` (one of `KINDS`): a path's suffix, and for JSON and YAML a
    look at its top level; `hf:ID` (or `huggingface://datasets/ID`) and a directory
    written by `datasets`' `save_to_disk` are Hugging Face datasets."""
    if source.startswith(HF_PREFIXES):
        return "hf"
    path = Path(source)
    if path.is_dir():
        if any((path / name).is_file() for name in _HF_DISK_FILES):
            return "hf"
        evals = path / "evals"
        if (evals / "evals.json").is_file() or (evals / "trigger_evals.json").is_file():
            return "skill-creator"
        if any((path / name).is_file() for name in _PROMPTFOO_CONFIGS):
            return "promptfoo"
        raise InputError(
            "not a task source: a directory is read when it is a saved Hugging Face "
            "dataset, a skill with evals/evals.json or a promptfoo project",
            path=path,
        )
    if not path.is_file():
        raise InputError("no such task source (a file, a directory or hf:ID)", path=path)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "promptfoo" if _promptfoo_csv(path) else suffix[1:]
    if suffix == ".eval":
        return "inspect-log"
    if suffix == ".json":
        return _json_kind(path)
    if suffix == ".jsonl":
        return _jsonl_kind(path)
    if suffix in (".yaml", ".yml"):
        return _yaml_kind(path)
    raise InputError(
        f"cannot tell what kind of task source {suffix or 'a file without a suffix'} is; "
        f"name it with --format ({', '.join(KINDS)})",
        path=path,
    )


def read_source(source: str, kind: str | None = None, fields: FieldMap | None = None) -> Imported:
    """The items of `source`, read as `kind` (`detect`ed when None) with the field
    mapping `fields` (guessed where a field is not named)."""
    kind = kind or detect(source)
    fields = fields or FieldMap()
    if kind in ("csv", "tsv", "json", "jsonl"):
        from skillopt.suite.sources.table import read_table

        return read_table(Path(source), kind, fields)
    if kind == "hf":
        from skillopt.suite.sources.hf import read_hf

        return read_hf(source, fields)
    if kind == "promptfoo":
        from skillopt.suite.sources.promptfoo import read_promptfoo

        return read_promptfoo(Path(source), fields)
    if kind in ("inspect", "inspect-log"):
        from skillopt.suite.sources.inspect_ai import read_inspect

        return read_inspect(Path(source), kind, fields)
    if kind == "skill-creator":
        from skillopt.suite.sources.skill_creator import read_skill_creator

        return read_skill_creator(Path(source), fields)
    if kind == "suite":
        raise InputError("already a skillopt suite: use it as it is", path=source)
    raise InputError(f"unknown source format {kind!r}; choose one of {', '.join(KINDS)}")


_HF_DISK_FILES = ("dataset_info.json", "dataset_dict.json", "state.json")
_PROMPTFOO_CONFIGS = ("promptfooconfig.yaml", "promptfooconfig.yml", "promptfooconfig.json")
# inspect_ai's Sample fields: a table with `input` and `target` is one of its datasets
_INSPECT_FIELDS = frozenset({"input", "target"})


def _json_kind(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return "json"  # the table reader words the problem
    if isinstance(data, dict):
        if "items" in data:
            return "suite"  # a suite written as JSON (YAML reads it), as it always was
        if isinstance(data.get("evals"), list):
            return "skill-creator"
        if "items" not in data and {"tests", "prompts", "providers"} & set(data):
            return "promptfoo"
        if isinstance(data.get("samples"), list) and ("eval" in data or "version" in data):
            return "inspect-log"
        return "json"
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        if all("should_trigger" in r for r in data):
            return "skill-creator"
        if _INSPECT_FIELDS <= set(data[0]):
            return "inspect"
    return "json"


def _promptfoo_csv(path: Path) -> bool:
    """A CSV whose header has promptfoo's `__expected` column (its tests files)."""
    try:
        with path.open(encoding="utf-8-sig") as stream:
            header = stream.readline()
    except (OSError, UnicodeDecodeError):
        return False  # the table reader words the problem
    return "__expected" in header


def _jsonl_kind(path: Path) -> str:
    try:
        with path.open(encoding="utf-8") as stream:
            first = next((line for line in stream if line.strip()), "")
        row = json.loads(first) if first else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return "suite"  # the suite loader words the problem with its line
    if isinstance(row, dict) and _INSPECT_FIELDS <= set(row):
        return "inspect"
    if isinstance(row, dict) and "id" in row and "input" in row:
        return "suite"
    return "jsonl"


def _yaml_kind(path: Path) -> str:
    """promptfoo (a mapping with `tests`, `prompts` or `providers` and no `items`, or
    a list of tests with `vars` or `assert`) or a suite, from the top-level keys
    alone: the parser's events are read, no document is built (so an alias bomb costs
    nothing here; the suite reader bounds them)."""
    keys = _yaml_top_keys(path)
    if keys is None:
        return "suite"  # the suite reader words the problem with its line
    is_list, names = keys
    if is_list:
        return "promptfoo" if {"vars", "assert"} & names else "suite"
    if "items" not in names and {"tests", "prompts", "providers"} & names:
        return "promptfoo"
    return "suite"


def _yaml_top_keys(path: Path) -> tuple[bool, set[str]] | None:
    """(whether the document is a list, the keys of the mapping at its top or, for a
    list, of its first item); None when it cannot be read."""
    import yaml
    from yaml.events import (
        CollectionEndEvent,
        CollectionStartEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceStartEvent,
        StreamEndEvent,
    )

    from skillopt.suite.yaml_values import EVENT_LOADER

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    loader = EVENT_LOADER(text)
    names: set[str] = set()
    is_list = False
    depth = 0  # collections open; keys are read at the mapping's own level
    want_key = True
    try:
        while True:
            event = loader.get_event()
            if event is None or isinstance(event, StreamEndEvent):
                return is_list, names
            top = depth == (2 if is_list else 1)
            if isinstance(event, CollectionStartEvent):
                if depth == 0:
                    is_list = isinstance(event, SequenceStartEvent)
                elif top:
                    want_key = True  # a value that is a collection
                depth += 1
                if depth == 2 and is_list and not isinstance(event, MappingStartEvent):
                    return is_list, names
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
                if depth <= (1 if is_list else 0):
                    return is_list, names
            elif top and isinstance(event, ScalarEvent):
                if want_key:
                    names.add(str(event.value))
                want_key = not want_key
            elif top:
                want_key = not want_key  # an alias as a key or a value
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
