"""Suite file readers: YAML (line numbers, duplicate keys, bounded aliases and
nesting) and JSONL (one line at a time), both yielding raw items for the loader; and
`key_line`, which finds where a key is written, to place an error.

Invariants: reading is linear in the file's size and never hangs. The bounds on YAML
aliases and on nesting (`limits`) are checked while parsing, before anything is
built (`yaml_compose`); YAML items are built one at a time, so memory holds the
tasks, not the parse. Every problem is an `InputError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from skillopt._util.yaml_errors import yaml_problem
from skillopt.errors import InputError
from skillopt.suite import limits
from skillopt.suite.yaml_compose import Refused, YamlReader
from skillopt.suite.yaml_values import EVENT_LOADER, LINE_LOADER

# the loader a suite is read with (libyaml's parser when PyYAML has it)
_LineLoader = LINE_LOADER


def read_yaml(path: Path) -> dict[str, Any]:
    """The suite file at `path` as a mapping (a `LineDict`: it knows its line)."""
    data = read_yaml_value(path)
    if not isinstance(data, dict):
        raise InputError("a suite must be a YAML mapping with an `items` list", path=path)
    return data


def read_yaml_value(path: Path, text: str | None = None) -> Any:
    """The one document of the YAML file at `path` (its `text` when already read),
    read with the suite reader's bounds; mappings are `LineDict`s."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 (byte {exc.start})", path=path) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=path) from None
    loader = _LineLoader(text)
    try:
        return YamlReader(loader).read()
    except Refused as exc:
        raise InputError(str(exc), path=path, line=exc.line) from None
    except yaml.YAMLError as exc:
        problem, line = yaml_problem(exc)
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    finally:
        loader.dispose()


def key_line(path: Path, keys: Sequence[str | int]) -> int | None:
    """The line where the key at `keys` (mapping keys and list indexes from the top:
    `("split", "valid")`, `("items", 3, "imput")`) is written in the YAML file at
    `path`; None when it is not written there (it came from a `<<` merge or an
    alias) or the file cannot be read. Only called to place an error: it streams the
    parser's events once and keeps no document in memory."""
    target = tuple(keys)
    if not target:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    loader = EVENT_LOADER(text)
    try:
        return _find_key(loader, target)
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()


_NO_KEY = object()  # the key of a pair whose key is not a plain scalar


class _Open:
    """A mapping or sequence still open while looking for a key: where it is (None
    inside a complex key, where no path leads) and where its next child goes."""

    __slots__ = ("is_map", "path", "want_key", "key", "index")

    def __init__(self, is_map: bool, path: tuple[Any, ...] | None):
        self.is_map, self.path = is_map, path
        self.want_key = True  # a mapping's next node is a key
        self.key: Any = None
        self.index = -1

    def place(self, scalar: str | None) -> tuple[bool, tuple[Any, ...] | None]:
        """Where the next child goes, given its text when it is a scalar: (whether it
        is a mapping's key, its path; None where no path leads)."""
        path = self.path
        if self.is_map and self.want_key:
            self.want_key = False
            self.key = _NO_KEY if scalar is None else scalar
            return True, None if path is None or scalar is None else (*path, scalar)
        if self.is_map:
            self.want_key = True
            return False, None if path is None or self.key is _NO_KEY else (*path, self.key)
        self.index += 1
        return False, None if path is None else (*path, self.index)


def _find_key(loader: yaml.SafeLoader | yaml.CSafeLoader, target: tuple[Any, ...]) -> int | None:
    get: Callable[[], Any] = loader.get_event  # events as Any: see `yaml_compose`
    stack: list[_Open] = []
    depth = len(target)
    while True:
        event = get()
        kind = type(event)
        if kind is StreamEndEvent:
            return None
        starts = kind is MappingStartEvent or kind is SequenceStartEvent
        if not (starts or kind is ScalarEvent or kind is AliasEvent):
            if kind is MappingEndEvent or kind is SequenceEndEvent:
                stack.pop()
            continue
        where: tuple[Any, ...] | None = ()
        if stack:
            is_key, where = stack[-1].place(event.value if kind is ScalarEvent else None)
            if is_key:
                if where == target:
                    return int(event.start_mark.line) + 1
                where = None  # nothing below a key (a complex one) is on a path
            elif where is not None and (len(where) >= depth or where != target[: len(where)]):
                where = None  # not on the way to the key: nothing below can match
        if starts:
            stack.append(_Open(kind is MappingStartEvent, where))


# ---------------------------------------------------------------------- JSONL
def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) per non-blank line, read lazily: the file is never held
    whole. Lines end at '\\n' only, as JSON Lines says; a '\\u2028' inside a string
    is text, not a line break."""
    if not path.is_file():
        raise InputError("items file not found", path=path, field="items")
    return _jsonl_rows(path)


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        stream = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path, field="items") from None
    loads = json.loads
    with stream:
        offset = 0
        for number, raw in enumerate(stream, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not valid UTF-8 (byte {offset + exc.start})", path=path, line=number
                ) from None
            offset += len(raw)
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]  # a byte-order mark, as some editors write
            if not line.strip():
                continue
            try:
                value = loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number
                ) from None
            except RecursionError:
                raise InputError(limits.TOO_DEEP, path=path, line=number) from None
            # every level opens with a bracket, so few brackets means shallow enough
            if line.count("[") + line.count("{") > limits.MAX_NESTING and limits.nested_too_deep(
                value
            ):
                raise InputError(limits.TOO_DEEP, path=path, line=number)
            yield number, value
