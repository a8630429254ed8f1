"""The built-in scorers by type name (`SCORERS`), the lookup of any registered
scorer (built in or a plugin's, see `skillopt.plugins`), and `build_scorer`, which
turns a suite's spec into a scorer.

Invariant: a spec is validated when the suite loads, before any model call; a bad
one is a `ValueError` with a one-line reason the loader places in the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillopt.errors import first_error
from skillopt.suite.scorers.base import Scorer
from skillopt.suite.scorers.code import Command, Python
from skillopt.suite.scorers.judge import Judge
from skillopt.suite.scorers.structured import Json
from skillopt.suite.scorers.text import Choice, Contains, Exact, Normalized, Number, Regex

SCORERS: dict[str, type[Scorer]] = {
    cls.type: cls
    for cls in (Exact, Normalized, Contains, Regex, Number, Choice, Json, Python, Command, Judge)
}


def scorer_class(kind: str) -> type[Scorer]:
    """The scorer class registered as `kind`. Raises `ValueError` for an unknown
    name, `PluginError` for one that cannot be loaded or is misdeclared."""
    from skillopt.plugins import PluginError, registry

    reg = registry()
    entry = reg.find("scorer", kind)
    if entry is None:
        raise ValueError(
            f"unknown scorer {kind!r}; choose one of: {', '.join(reg.names('scorer'))}"
        )
    cls = entry.load()
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise PluginError(
            f"the scorer {kind!r} from {entry.origin} is {cls!r}, not a subclass of skillopt.Scorer"
        )
    if cls.type != kind:
        raise PluginError(
            f"the scorer {kind!r} from {entry.origin} declares type {cls.type!r}; they must match"
        )
    return cls


def build_scorer(spec: Any, base_dir: Path) -> Scorer:
    """Build a scorer from a spec (`"exact"` or `{type: regex, pattern: …}`).
    Raises `ValueError` with a one-line reason; the loader adds file and item."""
    if isinstance(spec, str):
        kind, params = spec, {}
    elif isinstance(spec, dict):
        params = dict(spec)
        kind = params.pop("type", None)
        if not isinstance(kind, str):
            raise ValueError("scorer mapping needs a 'type'")
    else:
        raise ValueError(f"scorer must be a name or a mapping, got {type(spec).__name__}")
    cls = scorer_class(kind)
    try:
        parsed = cls.Params(**params)
    except ValidationError as exc:
        loc, msg = first_error(exc)
        raise ValueError(f"scorer {kind!r} parameter {(loc or kind)!r}: {msg}") from None
    try:
        return cls(parsed, base_dir)
    except re.error as exc:
        raise ValueError(f"scorer {kind!r}: invalid pattern: {exc}") from None
