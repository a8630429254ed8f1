"""The settings a report shows: a run's own, without the sections that cannot apply
to it (an agent CLI's for a chat run, Ray's for a local one) unless changed from
their defaults; and, for two runs, the settings in which they differ, first.

Invariant: a setting left out is one at its default in a section the run's harness
or executor never reads; every value shown is the run's, flattened to dotted keys
(`agent.timeout`), secrets already blanked by the caller.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

# the settings sections each harness or executor reads: a section is shown when the
# run's harness or executor is among its readers (a plugin harness may run an agent)
_AGENT_HARNESSES = ("claude-code", "codex", "command")
_READERS: dict[str, tuple[str, ...]] = {
    "agent": _AGENT_HARNESSES,
    "claude_code": ("claude-code",),
    "codex": ("codex",),
    "command": ("command",),
}


def flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, JSON value) of every leaf; an empty mapping inside is a leaf `{}`."""
    if isinstance(value, dict):
        out: list[tuple[str, str]] = []
        for k, v in value.items():
            out += flatten(v, f"{prefix}{k}.")
        return out or ([(prefix.rstrip("."), "{}")] if prefix else [])
    return [(prefix.rstrip("."), json.dumps(value, ensure_ascii=False, default=str))]


@cache
def _defaults() -> dict[str, str]:
    from skillopt.config import Settings

    return dict(flatten(Settings().model_dump(mode="json")))


def _applies(section: str, settings: dict[str, Any]) -> bool:
    harness = str(settings.get("harness") or "chat")
    if section == "ray":
        return settings.get("executor") == "ray"
    if section in _READERS:
        known = harness in ("chat", "router", *_AGENT_HARNESSES)
        return harness in _READERS[section] or (section == "agent" and not known)
    return True


def shown_settings(settings: dict[str, Any]) -> tuple[list[tuple[str, str, bool]], list[str]]:
    """(key, value, changed from its default) of each setting the run's report shows,
    and the sections left out because they do not apply to the run (all of whose
    settings are at their defaults)."""
    defaults = _defaults()
    shown: list[tuple[str, str, bool]] = []
    left_out: dict[str, None] = {}
    for key, value in flatten(settings):
        section = key.split(".", 1)[0]
        changed = defaults.get(key) != value
        if "." in key and not changed and not _applies(section, settings):
            left_out[section] = None
            continue
        shown.append((key, value, changed))
    return shown, [s for s in left_out if not any(k.startswith(f"{s}.") for k, _, _ in shown)]


def differing(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, a's value, b's value) of every setting in which two runs differ (`—`
    where one has no such setting), in the order the settings are written."""
    fa, fb = dict(flatten(a)), dict(flatten(b))
    keys = list(fa) + [k for k in fb if k not in fa]
    return [(k, fa.get(k, "—"), fb.get(k, "—")) for k in keys if fa.get(k) != fb.get(k)]
