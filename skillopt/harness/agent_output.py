"""Reading what an agent CLI printed: JSON objects among its lines, counts and
clipped values for a trajectory's steps, and the error kind of a failure message
or of an HTTP status the CLI reports.

Invariant: nothing here raises on what a CLI printed; an unreadable line or value
is skipped or falls back to a default.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skillopt._util.text import clip

# A JSON object as a CLI printed it (keys and value types unchecked).
JsonObject = dict[str, Any]

STEP_OUTPUT_LIMIT = 2000  # characters of one tool output kept in a trajectory
STEP_INPUT_LIMIT = 1000
CLIPPED = "…[truncated {cut} chars]"  # the `clip` marker of steps and CLI messages

# The kinds `classify` gives; `rollouts.engine.SYSTEMIC` says which of them stop a run.
_KIND_PATTERNS = (
    (
        "auth",
        re.compile(
            r"invalid (x-)?api[ _-]?key|api key|authenticat|unauthori[sz]ed|\b401\b|\b403\b|"
            r"not logged in|please run /login|log ?in (is )?required|oauth token|permission denied "
            r"for model|forbidden|missing environment variable",
            re.I,
        ),
    ),
    (
        "quota",
        re.compile(
            r"quota|credit balance|billing|usage limit|insufficient[_ ](funds|credit)|"
            r"payment required|\b402\b|out of credits|spend limit",
            re.I,
        ),
    ),
    ("rate_limit", re.compile(r"rate[ _-]?limit|\b429\b|too many requests|overloaded", re.I)),
    ("not_found", re.compile(r"model[_ ]not[_ ]found|model `[^`]*` does not exist", re.I)),
    (
        "server",
        re.compile(
            r"high demand|internal server error|service unavailable|bad gateway|"
            r"\b50[0-4]\b|stream disconnected before completion",
            re.I,
        ),
    ),
)


def classify(message: str, default: str = "agent_error") -> str:
    """The error kind of an agent's failure message (auth, quota, rate_limit, …)."""
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(message or ""):
            return kind
    return default


def status_kind(status: object) -> str | None:
    """The error kind of an HTTP status a CLI reports from its provider, or None when
    the status says nothing (or is not a status)."""
    if not isinstance(status, int) or isinstance(status, bool):
        return None
    if status in (401, 403):
        return "auth"
    if status == 402:
        return "quota"
    if status == 404:
        return "not_found"
    if status in (429, 529):
        return "rate_limit"
    if 500 <= status < 600:
        return "server"
    return None


def json_lines(text: str) -> list[JsonObject]:
    """The JSON objects among the lines of `text`; anything else (progress, warnings,
    a half-written last line) is skipped."""
    objects: list[JsonObject] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            objects.append(obj)
    return objects


def as_object(value: object) -> JsonObject:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def clip_json(value: object, limit: int = STEP_INPUT_LIMIT) -> object:
    """`value` itself when its JSON fits in `limit` characters, else that JSON clipped
    with a marker."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else clip(text, limit, CLIPPED)


def as_int(value: object, default: int = 0) -> int:
    """A count from a CLI's JSON: numbers only (not booleans), else `default`."""
    return (
        int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default
    )
