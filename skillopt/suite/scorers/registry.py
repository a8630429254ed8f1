"""The lookup of a registered scorer by name (built in or a plugin's: the one list
of them is `skillopt.plugins`' registry, which imports a scorer's module when it is
first looked up), and `build_scorer`, which turns a suite's spec into a scorer.

Invariant: a spec is validated when the suite loads, before any model call; a bad
one is a `ValueError` with a one-line reason the loader places in the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillopt._util.text import did_you_mean
from skillopt.errors import InputError, first_error
from skillopt.plugins.catalog import Entry, PluginError
from skillopt.suite.scorers.base import Scorer, Unloaded


def scorer_class(kind: str) -> type[Scorer[Any]]:
    """The scorer class registered as `kind`. Raises `ValueError` for an unknown
    name, `PluginError` for one that cannot be loaded or is misdeclared."""
    return _registered(kind)[1]


def _registered(kind: str) -> tuple[Entry, type[Scorer[Any]]]:
    """The registry's entry for the scorer `kind`, and its checked class."""
    from skillopt.plugins import registry

    reg = registry()
    entry = reg.find("scorer", kind)
    if entry is None:
        names = reg.names("scorer")
        hint = did_you_mean(kind, names)
        raise ValueError(
            f"unknown scorer {kind!r}; " + (f"{hint} " if hint else "") + f"choose one of: "
            f"{', '.join(names)}"
        )
    cls = entry.load()
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise PluginError(
            f"the scorer {kind!r} from {entry.origin} is {cls!r}, not a subclass of skillopt.Scorer"
        )
    if cls.name != kind:
        raise PluginError(
            f"the scorer {kind!r} from {entry.origin} declares name {cls.name!r}; they must match"
        )
    return entry, cls


class BadScorerSpec(ValueError):
    """A scorer spec with a bad parameter; `param` names it, so the loader can point at
    the line where it is written."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def _bad_params(exc: ValidationError, kind: str, cls: type[Scorer[Any]]) -> BadScorerSpec:
    """What is wrong with a scorer's parameters, naming the scorer: an unknown one
    (reported first: a typo explains a missing one) with the closest known name and
    the scorer's parameters, else pydantic's word on the first bad value."""
    errors = exc.errors()
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    param = ".".join(str(p) for p in err["loc"])
    fields = list(cls.Params.model_fields)
    names = [
        "type",
        *(f for f in fields if f != "threshold"),
        *(["threshold"] if "threshold" in fields else []),
    ]
    if err["type"] == "extra_forbidden":
        hint = did_you_mean(param, names)
        return BadScorerSpec(
            f"scorer {kind!r} has no parameter {param!r}"
            + (f"; {hint}" if hint else "")
            + f" (its parameters: {', '.join(names)})",
            param,
        )
    _, msg = first_error(exc)
    return BadScorerSpec(f"scorer {kind!r} parameter {(param or kind)!r}: {msg}", param or None)


def build_scorer(spec: Any, base_dir: Path, *, run_code: bool = True) -> Scorer[Any]:
    """Build a scorer from a spec (`"exact"` or `{type: regex, pattern: …}`).
    Raises `ValueError` with a one-line reason; the loader adds file and item.
    Without `run_code`, a scorer that runs the suite's code is built `Unloaded`."""
    if isinstance(spec, str):
        kind, params = spec, {}
    elif isinstance(spec, dict):
        params = dict(spec)
        kind = params.pop("type", None)
        if not isinstance(kind, str):
            raise ValueError("scorer mapping needs a 'type'")
    else:
        raise ValueError(f"scorer must be a name or a mapping, got {type(spec).__name__}")
    entry, cls = _registered(kind)
    try:
        parsed = cls.Params(**params)
    except ValidationError as exc:
        raise _bad_params(exc, kind, cls) from None
    if cls.runs_code and not run_code:
        return Unloaded(cls, parsed, base_dir)
    try:
        # a scorer's own complaint (ValueError, a bad pattern) is placed in the suite
        scorer: Scorer[Any] = entry.call(
            cls, parsed, base_dir, passes=(ValueError, re.error, InputError)
        )
    except re.error as exc:
        raise ValueError(f"scorer {kind!r}: invalid pattern: {exc}") from None
    return scorer
