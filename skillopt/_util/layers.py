"""Layers of settings as plain mappings: finding the nearest project file, reading
one (YAML), and merging one layer over another.

Invariant: nothing here knows what a setting means; a later layer wins key by key,
and the sub-mappings named as merged by name or key by key are merged, not
replaced, so a layer may change one model's or one section's key alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import yaml

from skillopt._util.yaml_errors import yaml_problem
from skillopt.errors import InputError


def find_upwards(name: str, start: Path | None = None) -> Path | None:
    """The nearest file called `name` in `start` (default: the working directory) or
    its parents."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def read_yaml_mapping(path: Path, what: str) -> dict[str, Any]:
    """The YAML mapping in the file at `path` (empty for an empty file); an
    `InputError` naming the file (and the line, for invalid YAML) otherwise."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        problem, line = yaml_problem(exc)
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    if not isinstance(data, dict):
        raise InputError(f"must be a mapping of {what}", path=path)
    return data


def merge_layer(
    into: dict[str, Any],
    layer: Mapping[str, Any],
    *,
    by_name: Collection[str],
    by_key: Collection[str],
) -> None:
    """Merge `layer` over `into`. A key in `by_name` holds named mappings (models,
    sections): each name's mapping is merged key by key. A key in `by_key` holds one
    mapping, merged key by key when both layers have one. Anything else is replaced."""
    for key, value in layer.items():
        if key in by_name and isinstance(value, dict):
            named = into.setdefault(key, {})
            for name, conf in value.items():
                named[name] = {**named.get(name, {}), **(conf or {})}
        elif key in by_key and isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = {**into[key], **value}
        else:
            into[key] = value
