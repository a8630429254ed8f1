"""Reading what `claude -p` printed: its events (one result object, an array of
messages, or JSON lines), the tool steps of a trace, whether the skill under test
was loaded, the token usage and the run's facts (model, API retries).

Invariant: never raises on what the CLI printed: a value of an unexpected shape is
skipped or read as nothing. The skill counts as loaded only on evidence in the
trace: a `Skill` tool call that names it, or a read of its SKILL.md.
"""

from __future__ import annotations

import json

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


def run_facts(init: JsonObject | None, events: list[JsonObject]) -> JsonObject:
    """What the init event says ran (the model), and how the CLI's API retries went."""
    info: JsonObject = {}
    if isinstance(init, dict):
        if isinstance(init.get("model"), str):
            info["model"] = init["model"]
        if isinstance(init.get("claude_code_version"), str):
            info["cli_version"] = init["claude_code_version"]
    retries = [e for e in events if e.get("type") == "system" and e.get("subtype") == "api_retry"]
    if retries:
        info["api_retries"] = len(retries)
        status = retries[-1].get("error_status")
        if isinstance(status, int) and not isinstance(status, bool):
            info["api_retry_status"] = status
    return info


def model_calls(events: list[JsonObject], final: JsonObject) -> int:
    """API calls the agent made: one per assistant message (the CLI prints a message
    with text and a tool call as two events with the same id); without a trace, the
    result's turn count (which also counts tool results, so it is an upper bound)."""
    ids = {
        e["message"].get("id")
        for e in events
        if e.get("type") == "assistant"
        and isinstance(e.get("message"), dict)
        and e["message"].get("id")
    }
    return len(ids) or as_int(final.get("num_turns"), 1)


def skill_name(entry: object) -> str:
    """The name of one entry of a skill list the CLI printed."""
    if isinstance(entry, dict):
        return str(entry.get("name") or "?")
    return str(entry)


def lists(listed: list[object], name: str) -> bool:
    """Whether a list of skills (or commands) the CLI printed names skill `name`."""
    return any(skill_name(x) == name or skill_name(x).endswith(":" + name) for x in listed)


def expanded(init: JsonObject | None, name: str) -> bool:
    """Whether the CLI expanded an explicit `/name` in the prompt into the skill (it
    then calls no Skill tool, and its stream shows nothing of the expansion): the
    init event lists the skill among the commands it can expand."""
    commands = init.get("slash_commands") if isinstance(init, dict) else None
    return isinstance(commands, list) and lists(commands, name)


def read_events(stdout: str) -> list[JsonObject]:
    """The JSON objects claude printed: one object, an array of messages, or JSON
    lines. Lines that are not JSON objects are skipped."""
    text = stdout.strip()
    if not text:
        return []
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    if isinstance(whole, list):
        return [e for e in whole if isinstance(e, dict)]
    return json_lines(text)


def tool_steps(
    events: list[JsonObject], skill_name: str | None
) -> tuple[tuple[JsonObject, ...], bool | None, bool]:
    """(steps, skill invoked, whether the events hold a trace of messages)."""
    steps: list[JsonObject] = []
    by_id: dict[str, JsonObject] = {}
    traced = False
    invoked = False
    for event in events:
        kind = event.get("type")
        if kind not in ("assistant", "user"):
            continue
        traced = True
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                tool = str(block.get("name") or "?")
                tool_input = as_object(block.get("input"))
                use: JsonObject = {"type": "tool_use", "tool": tool, "input": clip_json(tool_input)}
                steps.append(use)
                if isinstance(block.get("id"), str):
                    by_id[block["id"]] = use
                if skill_name and _invokes(tool, tool_input, skill_name):
                    invoked = True
            elif block.get("type") == "tool_result":
                used = by_id.get(str(block.get("tool_use_id")))
                output = clip(_result_text(block.get("content")), STEP_OUTPUT_LIMIT, CLIPPED)
                if used is not None:
                    used["output"] = output
                    if block.get("is_error"):
                        used["is_error"] = True
                else:
                    steps.append({"type": "tool_result", "output": output})
    if not skill_name:
        return tuple(steps), None, traced
    return tuple(steps), invoked, traced


def _invokes(tool: str, tool_input: JsonObject, name: str) -> bool:
    if tool == "Skill":
        called = str(
            tool_input.get("skill") or tool_input.get("command") or tool_input.get("name") or ""
        ).lstrip("/")
        return called == name or called.endswith(":" + name)
    if tool == "Read":
        path = str(tool_input.get("file_path") or tool_input.get("path") or "")
        return path.replace("\\", "/").endswith(f"skills/{name}/SKILL.md")
    return False


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def usage_of(usage: JsonObject) -> Usage:
    """Tokens from the result's usage: input counts cache writes and reads too."""
    return Usage(
        input_tokens=sum(
            as_int(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ),
        output_tokens=as_int(usage.get("output_tokens")),
        cached_input_tokens=as_int(usage.get("cache_read_input_tokens")),
    )
