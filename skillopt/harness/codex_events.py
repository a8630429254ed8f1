"""Reading what `codex exec --json` printed: its events, the steps of its completed
items in order, its agent messages, whether the skill under test was loaded, and
whether a broken sandbox kept every command from running.

Invariant: never raises on what the CLI printed: unknown event and item types are
kept as generic steps or skipped, lines that are not JSON are skipped. Releases
before late 2025 said `item_type` and `assistant_message`: both spellings are read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from skillopt._util.text import clip
from skillopt.harness.agent_output import (
    CLIPPED,
    STEP_OUTPUT_LIMIT,
    JsonObject,
    as_int,
    as_object,
    clip_json,
    json_lines,
)
from skillopt.models.base import Usage

MESSAGE_TYPES = ("agent_message", "assistant_message")


@dataclass(frozen=True)
class Turns:
    """What the turn events say: how many started and completed, the tokens of the
    completed ones, and the failure messages (of failed turns and error events)."""

    started: int = 0
    completed: int = 0
    usage: Usage = field(default_factory=Usage)
    failures: tuple[str, ...] = ()


# what a sandbox that cannot start says (bubblewrap, landlock, seccomp), as opposed to
# one that works and refuses a write
SANDBOX_BROKEN = re.compile(
    r"bubblewrap|\bbwrap\b|landlock|seccomp|sandbox (error|failed)|"
    r"failed to (apply|set ?up|create) (the )?sandbox",
    re.I,
)


def read_jsonl(stdout: str) -> list[JsonObject]:
    """The events codex printed: JSON lines with a `type`."""
    return [e for e in json_lines(stdout) if isinstance(e.get("type"), str)]


def read_turns(events: list[JsonObject]) -> Turns:
    """The turns among `events`, in order."""
    usage = Usage()
    started = completed = 0
    failures: list[str] = []
    for e in events:
        kind = e.get("type")
        if kind == "turn.started":
            started += 1
        elif kind == "turn.completed":
            completed += 1
            u = as_object(e.get("usage"))
            usage = usage + Usage(  # codex's input_tokens include the cached ones
                as_int(u.get("input_tokens")),
                as_int(u.get("output_tokens")),
                as_int(u.get("cached_input_tokens")),
            )
        elif kind == "turn.failed":
            err = e.get("error")
            failures.append(str(err.get("message") if isinstance(err, dict) else err))
        elif kind == "error":
            failures.append(str(e.get("message") or "error event"))
    return Turns(started, completed, usage, tuple(failures))


def item_steps(
    events: list[JsonObject], skill_name: str | None
) -> tuple[tuple[JsonObject, ...], list[str], bool]:
    """(steps, agent messages, skill invoked) from the completed items, in order.
    An item only ever started (the run was cut short) counts as it was last seen."""
    last: dict[str, JsonObject] = {}
    order: list[str] = []
    for n, e in enumerate(events):
        if not str(e.get("type", "")).startswith("item.") or not isinstance(e.get("item"), dict):
            continue
        item = e["item"]
        key = str(item.get("id") or f"#{n}")
        if key not in last:
            order.append(key)
        last[key] = item
    steps: list[JsonObject] = []
    messages: list[str] = []
    invoked = False
    needle = f"skills/{skill_name}/SKILL.md" if skill_name else None
    for key in order:
        item = last[key]
        kind = str(item.get("type") or item.get("item_type") or "item")
        if kind in MESSAGE_TYPES:
            text = item.get("text")
            if isinstance(text, str):
                messages.append(text)
            continue
        step = _step(kind, item)
        if step is None:
            continue
        if (
            needle
            and _succeeded(step)
            and needle
            in json.dumps(
                {k: step.get(k) for k in ("command", "input", "tool")}, ensure_ascii=False
            )
        ):
            invoked = True
        steps.append(step)
    return tuple(steps), messages, invoked


def _succeeded(step: JsonObject) -> bool:
    """A step that ran to completion: reading SKILL.md in a command that failed (a
    broken sandbox) or never finished is not loading the skill."""
    if step.get("status") not in (None, "completed"):
        return False
    return step.get("exit_code") in (None, 0) if step.get("type") == "command" else True


def sandbox_failures(steps: tuple[JsonObject, ...]) -> list[str]:
    """The outputs of commands that failed because the sandbox itself could not start,
    when no command succeeded: then nothing the agent did ran, and its answer says
    nothing about the skill."""
    commands = [s for s in steps if s.get("type") == "command"]
    if any(_succeeded(s) for s in commands):
        return []
    return [
        str(s.get("output") or "")
        for s in commands
        if s.get("exit_code") not in (None, 0) and SANDBOX_BROKEN.search(str(s.get("output") or ""))
    ]


def _step(kind: str, item: JsonObject) -> JsonObject | None:
    if kind == "command_execution":
        step = {
            "type": "command",
            "command": str(item.get("command", "")),
            "output": clip(str(item.get("aggregated_output") or ""), STEP_OUTPUT_LIMIT, CLIPPED),
        }
        for k in ("exit_code", "status"):
            if item.get(k) is not None:
                step[k] = item[k]
        return step
    if kind == "file_change":
        found = item.get("changes")
        changes: list[object] = found if isinstance(found, list) else []
        return {
            "type": "file_change",
            "tool": "edit",
            "input": [
                {"path": c.get("path"), "kind": c.get("kind")}
                for c in changes
                if isinstance(c, dict)
            ],
            "status": item.get("status"),
        }
    if kind == "mcp_tool_call":
        return {
            "type": "mcp_tool_call",
            "tool": f"{item.get('server')}.{item.get('tool')}",
            "input": clip_json(item.get("arguments")),
            "output": clip(
                json.dumps(
                    item.get("result") or item.get("error"), ensure_ascii=False, default=str
                ),
                STEP_OUTPUT_LIMIT,
                CLIPPED,
            ),
        }
    if kind == "reasoning":
        text = item.get("text")
        return {"type": "reasoning", "text": clip(str(text), 600, CLIPPED)} if text else None
    if kind == "web_search":
        return {"type": "web_search", "tool": "web_search", "input": item.get("query")}
    if kind == "error":
        return {"type": "error", "text": clip(str(item.get("message", "")), 600, CLIPPED)}
    # todo_list, plan, collab_tool_call and anything newer: kept, compactly
    fields = {k: v for k, v in item.items() if k not in ("id", "type", "item_type")}
    return {
        "type": kind,
        "text": clip(json.dumps(fields, ensure_ascii=False, default=str), 600, CLIPPED),
    }
