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
from skillopt.plugins.catalog import BUILTIN, PluginError
from skillopt.suite.scorers.base import Scorer, Unloaded


def scorer_class(kind: str) -> type[Scorer[Any]]:
    """The scorer class registered as `kind`. Raises `ValueError` for an unknown
    name, `PluginError` for one that cannot be loaded or is misdeclared."""
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
    return cls


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
    cls = scorer_class(kind)
    try:
        parsed = cls.Params(**params)
    except ValidationError as exc:
        raise _bad_params(exc, kind, cls) from None
    if cls.runs_code and not run_code:
        return Unloaded(cls, parsed, base_dir)
    try:
        return cls(parsed, base_dir)
    except re.error as exc:
        raise ValueError(f"scorer {kind!r}: invalid pattern: {exc}") from None
    except (ValueError, InputError):
        raise
    except (Exception, SystemExit) as exc:
        origin = _origin(kind)
        if origin == BUILTIN:
            raise
        raise PluginError(
            f"the scorer {kind!r} from {origin} failed to build: {type(exc).__name__}: {exc}"
        ) from None


def _origin(kind: str) -> str:
    from skillopt.plugins import registry

    entry = registry().find("scorer", kind)
    return entry.origin if entry is not None else BUILTIN
