"""Codex's session files (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`), one
line at a time, as `Step`s.

What codex-cli 0.171.0 was seen to write: lines `{timestamp, type, payload}`;
`session_meta` first (`payload.id`, `payload.cwd`), then `turn_context` (`cwd`),
`response_item` (`payload.type` `message` with a `role` — `developer` for codex's
own instructions, `user` both for `<environment_context>` blocks and for what the
user typed, `assistant` for the agent's words — or `function_call` `{name,
arguments, call_id}` and `function_call_output` `{call_id, output}`, whose output
says `Process exited with code N`), and `event_msg`, `world_state`,
`token_usage_record` lines that repeat or count what the items say.

Invariant: a line of another shape gives None (counted as unknown by the caller),
never an exception.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skillopt.harvest.steps import MAX_TEXT, Step, call_text, files_read, request_steps, text_of

KINDS = frozenset(
    "session_meta turn_context response_item event_msg world_state compacted token_usage_record".split()
)
QUIET = frozenset({"world_state", "token_usage_record", "compacted"})
SHELL_TOOLS = frozenset({"exec_command", "shell", "shell_command", "local_shell", "container.exec"})
_EXIT = re.compile(r"(?:Process exited with code|exit code:?)\s*(-?\d+)", re.I)


def is_codex(line: dict[str, Any]) -> bool:
    """Whether a session line is Codex's."""
    return line.get("type") in KINDS and isinstance(line.get("payload"), dict)


def steps(line: dict[str, Any]) -> list[Step] | None:
    """What one line says, or None for a line of a shape not known here."""
    kind, payload = line.get("type"), line.get("payload")
    at = str(line.get("timestamp") or "")[:40]
    if kind in QUIET:
        return []
    if not isinstance(payload, dict):
        return None
    if kind in ("session_meta", "turn_context"):
        cwd = payload.get("cwd")
        ident = str(payload.get("id") or "")[:80]
        return [Step("meta", text=ident, cwd=cwd[:1024])] if isinstance(cwd, str) else []
    if kind == "event_msg":
        return [Step("interrupt", at=at)] if payload.get("type") == "turn_aborted" else []
    if kind != "response_item":
        return None
    item = payload.get("type")
    if item == "message":
        text = text_of(payload.get("content"))
        if payload.get("role") == "user":
            return request_steps(text, at)
        if payload.get("role") == "assistant" and text.strip():
            return [Step("answer", text=text, at=at)]
        return []
    if item in ("function_call", "custom_tool_call", "local_shell_call"):
        name = str(payload.get("name") or item)[:80]
        args = _arguments(payload)
        return [Step("tool", tool=name, call=call_text(args), reads=_reads(name, args), at=at)]
    if item in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        output = _output(payload.get("output"))
        failed = _failed(output)
        # codex heads a command's output with its chunk id, wall time and exit code
        said = output.split("\nOutput:\n", 1)[-1] if failed else ""
        return [Step("result", text=said, error=failed, at=at)]
    return []  # reasoning, web searches: nothing a candidate keeps


def _arguments(payload: dict[str, Any]) -> Any:
    raw = payload.get("arguments", payload.get("input", payload.get("action")))
    if isinstance(raw, str):
        try:
            return json.loads(raw[: MAX_TEXT * 4])
        except (ValueError, RecursionError):
            return raw[:MAX_TEXT]
    return raw


def _reads(name: str, args: Any) -> tuple[str, ...]:
    if name not in SHELL_TOOLS or not isinstance(args, dict):
        return ()
    command = args.get("cmd", args.get("command"))
    if isinstance(command, list):
        words = [str(w) for w in command[:50]]
        # ["bash", "-lc", "cat x"]: the script is the command
        command = words[2] if len(words) >= 3 and words[1] in ("-c", "-lc") else " ".join(words)
    return files_read(command) if isinstance(command, str) else ()


def _output(value: Any) -> str:
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, dict):
        return text_of(value.get("content")) or call_text(value)
    return text_of(value)


def _failed(output: str) -> bool:
    match = _EXIT.search(output[:2048])
    if match is not None:
        return match.group(1) != "0"
    head = output[:2048]
    try:
        data = json.loads(head) if head.startswith("{") else None
    except ValueError:
        data = None
    meta = data.get("metadata") if isinstance(data, dict) else None
    return isinstance(meta, dict) and meta.get("exit_code") not in (None, 0)
