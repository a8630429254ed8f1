"""Placing a problem in a suite for its author: the line where the key at fault is
written, pydantic's complaint in a suite author's words (with "did you mean" for an
unknown key), and an item's label.

Invariant: only called once something is wrong; finding a line streams the file's
parser events again and keeps no document in memory (`readers.key_line`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillopt._util.text import did_you_mean
from skillopt.suite.readers import key_line
from skillopt.suite.scorers.registry import BadScorerSpec

# pydantic's wording for a missing or unknown field, as a suite's author reads it
_MESSAGES = {"missing": "required", "extra_forbidden": "unknown field"}


def explain(
    exc: ValidationError, keys: Mapping[tuple[str | int, ...], list[str]]
) -> tuple[tuple[str | int, ...], str]:
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


def line_of_key(path: Path, keys: tuple[str | int, ...], fallback: int | None) -> int | None:
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


def scorer_param(exc: ValueError) -> tuple[str, ...]:
    """The scorer parameter a build error is about, as a key path (empty if none)."""
    param = exc.param if isinstance(exc, BadScorerSpec) else None
    return (param,) if param and "." not in param else ()


def item_label(item: Any, index: int) -> str:
    """How an item is named in a message: its id, or its position when it has none."""
    if isinstance(item, dict) and isinstance(item.get("id"), (str, int)):
        return str(item["id"])
    return f"#{index + 1}"
