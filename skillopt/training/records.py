"""One way to write the run's records as JSON and read them back: the step records
of `state.json` (`training/steps`) and the events of `events.jsonl`
(`training/events`) are frozen dataclasses, written and read here by their fields.

Invariants:
- A record is written as a JSON object whose keys are its fields in declaration
  order (the order on disk), under the field's name or its `json` name; a field
  declared with `optional()` is left out while it holds its default (a key added
  to a format after runs were written with it, or one a kind of record has only
  sometimes), so the bytes of every existing file are written again unchanged.
- Reading checks every value against its field's type and raises the error its
  caller makes (an `InputError` naming the file and the field, for a checkpoint);
  a missing field takes its default when it has one, an unknown field is an error.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeGuard, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")
_OMIT = "skillopt.omit"  # field metadata: leave the key out while the value is its default
_KEY = "skillopt.json"  # field metadata: the key on disk, when it is not the field's name

Fail = Callable[[str, str], Exception]  # (where, what is wrong) -> the error to raise


def optional(default: Any = None, *, key: str | None = None) -> Any:
    """A field written only when it is not `default` and read as `default` when absent."""
    meta: dict[str, object] = {_OMIT: True}
    if key is not None:
        meta[_KEY] = key
    return dataclasses.field(default=default, metadata=meta)


def named(key: str, default: Any = dataclasses.MISSING) -> Any:
    """A field stored under `key` (a name the Python field cannot take)."""
    return dataclasses.field(default=default, metadata={_KEY: key})


def _key(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get(_KEY, f.name))


def to_json(value: object) -> Any:
    """`value` as JSON data: a dataclass by its fields (see the module's invariants),
    tuples as lists, mappings and lists element by element."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = value.__dict__[f.name]
            if f.metadata.get(_OMIT) and item == f.default:
                continue
            out[_key(f)] = to_json(item)
        return out
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    return value


def kind_of(value: object) -> str:
    """How an error names the JSON type of `value`."""
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_SCALARS: dict[object, Callable[[object], bool]] = {
    int: is_int,
    float: is_num,
    bool: lambda v: isinstance(v, bool),
    str: lambda v: isinstance(v, str),
}


def read(cls: type[T], data: object, where: str, fail: Fail) -> T:
    """A record of dataclass `cls` from JSON `data` found at `where`."""
    value: T = _read(cls, data, where, fail)
    return value


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _read(tp: Any, value: object, where: str, fail: Fail) -> Any:
    if tp is Any or tp is object:
        return value
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and rest[0] in _SCALARS:  # name both choices: "a number or null"
            if not _SCALARS[rest[0]](value):
                raise fail(where, f"expected {_describe(tp)}, got {kind_of(value)}")
            return value
        if len(rest) == 1 and dataclasses.is_dataclass(rest[0]) and not isinstance(value, dict):
            raise fail(where, f"expected an object or null, got {kind_of(value)}")
        if len(rest) == 1:
            return _read(rest[0], value, where, fail)
        raise TypeError(f"unsupported union {tp!r}")  # a record declares no such field
    if origin is Literal:
        if value not in get_args(tp):
            allowed = ", ".join(str(a) for a in get_args(tp))
            raise fail(where, f"expected one of {allowed}, got {value!r}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise fail(where, f"expected a list, got {kind_of(value)}")
        item = get_args(tp)[0]
        items = [_read(item, v, f"{where}[{i}]", fail) for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise fail(where, f"expected an object, got {kind_of(value)}")
        item = get_args(tp)[1]
        return {k: _read(item, v, _at(where, k), fail) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _record(tp, value, where, fail)
    if tp in _SCALARS:
        if not _SCALARS[tp](value):
            raise fail(where, f"expected {_describe(tp)}, got {kind_of(value)}")
        return value
    raise TypeError(f"unsupported field type {tp!r}")


def _record(cls: type[Any], value: object, where: str, fail: Fail) -> Any:
    if not isinstance(value, dict):
        raise fail(where, f"expected an object, got {kind_of(value)}")
    hints, fields = _shape(cls)
    keys = {_key(f) for f in fields}
    for key in value:
        if key not in keys:
            raise fail(_at(where, key), "unknown field")
    given: dict[str, Any] = {}
    for f in fields:
        key = _key(f)
        if key in value:
            given[f.name] = _read(hints[f.name], value[key], _at(where, key), fail)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise fail(_at(where, key), "missing")
    return cls(**given)


Shape = tuple[dict[str, Any], list[dataclasses.Field[Any]]]
_SHAPES: dict[type[Any], Shape] = {}


def _shape(cls: type[Any]) -> Shape:
    """A record class's field types and fields, resolved once per class (a checkpoint
    holds a record per step; two threads resolving one class at once agree)."""
    shape = _SHAPES.get(cls)
    if shape is None:
        shape = _SHAPES[cls] = (
            get_type_hints(cls),
            [f for f in dataclasses.fields(cls) if f.init],
        )
    return shape


def _describe(tp: Any) -> str:
    names = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}
    if tp in names:
        return names[tp]
    args = [a for a in get_args(tp) if a is not type(None)]
    if len(args) == 1 and len(get_args(tp)) == 2:
        return f"{_describe(args[0])} or null"
    return str(tp)
