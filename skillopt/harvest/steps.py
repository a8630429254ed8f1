"""What one line of an agent's session transcript says, whichever agent wrote it: a
request of the user's, a tool call, a tool's result, the agent's words, an
interruption.

Invariant: a `Step` holds text already clipped to `MAX_TEXT` characters (a pasted
log or a file's contents never grows memory past it), and nothing in it has been
written anywhere: redaction comes later, before anything leaves the harvest.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

MAX_TEXT = 8_192
# programs whose file arguments the agent read (`cat notes.md`, `head -n 5 x.py`)
READERS = frozenset("cat head tail less more bat nl wc sed grep rg".split())
# a whole message that is one tag block is the agent program speaking, not the user:
# `<environment_context>…</environment_context>`, `<command-name>…`, `<skill>…`
_WRAPPED = re.compile(r"^\s*<([A-Za-z_][\w\-]*)[^>]*>[\s\S]*</\1>\s*$")
INJECTED = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
    "<user-prompt-submit-hook>",
    "<environment_context>",
    "<user_instructions>",
    "<skill>",
    "<turn_aborted>",
    "<user_shell_command>",
    "Caveat: The messages below were generated",
    "Base directory for this skill:",
    "# AGENTS.md instructions",
    "This session is being continued from a previous conversation",
)
INTERRUPTED = "[Request interrupted by user"


@dataclass(frozen=True)
class Step:
    """One thing a session line says. `kind` is "request" (the user asked `text`),
    "tool" (the agent called `tool` with `call`, reading the files in `reads`),
    "result" (a tool answered; `error` when it failed, `text` its message then),
    "answer" (the agent said `text`), "interrupt" (the user stopped the turn),
    "meta" (where the session ran: `cwd`, its id in `text`) or "sidechain" (a
    subagent's line: its requests are the agent's, not the user's)."""

    kind: str
    text: str = ""
    tool: str = ""
    call: str = ""
    reads: tuple[str, ...] = ()
    error: bool = False
    at: str = ""
    cwd: str = ""


def text_of(value: Any) -> str:
    """The text of a message's content: a string, or the `text` of its blocks."""
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, list):
        parts = []
        for block in value[:200]:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"][:MAX_TEXT])
            elif isinstance(block, str):
                parts.append(block[:MAX_TEXT])
        return "\n".join(parts)[:MAX_TEXT]
    return ""


def is_injected(text: str) -> bool:
    """Whether a user-role text is the agent program's (a command wrapper, a skill
    body, the environment context) rather than what the user typed."""
    stripped = text.lstrip()
    return stripped.startswith(INJECTED) or bool(_WRAPPED.match(stripped[:MAX_TEXT]))


def request_steps(text: str, at: str) -> list[Step]:
    """A user-role text as steps: an interruption, nothing (injected text), or a
    request."""
    stripped = text.strip()
    if not stripped:
        return []
    if stripped.startswith(INTERRUPTED):
        return [Step("interrupt", at=at)]
    if is_injected(stripped):
        return []
    return [Step("request", text=stripped, at=at)]


def call_text(value: Any) -> str:
    """A tool call's input as canonical text: two calls are the same call (a retry)
    when these are equal."""
    if isinstance(value, str):
        return value[:MAX_TEXT]
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)[:MAX_TEXT]
    except (TypeError, ValueError, RecursionError):
        return ""


def files_read(command: str) -> tuple[str, ...]:
    """The files a shell command reads with `cat`, `head`, `sed -n` and the like: each
    simple command's arguments that are not options (sed's and grep's first, the
    script or pattern, left out). A command that cannot be split reads nothing."""
    found: list[str] = []
    for part in re.split(r"&&|\|\||[|;\n]", command[:4096]):
        try:
            argv = shlex.split(part)
        except ValueError:
            continue
        if not argv or argv[0].rsplit("/", 1)[-1] not in READERS:
            continue
        program = argv[0].rsplit("/", 1)[-1]
        args = [a for a in argv[1:] if not a.startswith("-") and not a.isdigit()]
        if program in ("sed", "grep", "rg"):
            args = args[1:]
        found.extend(a for a in args if not a.startswith(("<", ">")))
    return tuple(dict.fromkeys(found))[:20]
