"""The settings sections that plugin harnesses declare (`registry.harness(...,
settings=Model)`): lifting them out of one layer of settings (a project file, a
suite's `defaults:`) and validating each with its plugin's model.

Invariant: a section is checked where it is written, so a typo in it fails naming
that file and the section's key; a top-level key that no plugin declared is left in
place, for the settings' own validation to refuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from skillopt.errors import InputError, first_error
from skillopt.plugins import registry


def lift_sections(data: dict[str, Any], unknown: Iterable[str], where: object) -> dict[str, Any]:
    """`data` with each `unknown` key (not one of skillopt's own settings) that a
    plugin declared as its section moved under `sections`, once its plugin's model
    accepts it; `where` names the layer in errors."""
    declared = registry().sections()
    out = dict(data)
    sections = dict(out.get("sections") or {})
    for key in unknown:
        entry = declared.get(key)
        if entry is None:
            continue
        value = out.pop(key)
        try:
            entry.options["settings"].model_validate(value or {})
        except ValidationError as exc:
            loc, msg = first_error(exc, {"extra_forbidden": "unknown setting"})
            raise InputError(msg, path=where, field=f"{key}.{loc}" if loc else key) from None
        sections[key] = dict(value or {})
    out["sections"] = sections
    return out
