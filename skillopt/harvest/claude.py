"""Claude Code's session transcripts (`~/.claude/projects/<cwd-slug>/<session>.jsonl`),
one line at a time, as `Step`s.

What claude 2.1.197 was seen to write: lines with a `type` (`user`, `assistant`,
`attachment`, `queue-operation`, `last-prompt`, `ai-title`, `mode`, `system`,
`summary`, …), `sessionId`, `timestamp`, `cwd` and `isSidechain`. A `user` line's
`message.content` is what the user typed (a string) or blocks: `tool_result`
(`tool_use_id`, `content`, `is_error`) or `text` (a skill's body after the Skill
tool, marked by its first line). An `assistant` line holds one content block of
the reply (`text`, `tool_use {name, input}`, `thinking`). A subagent's lines carry
`isSidechain: true`: its "user" turns are the main agent's prompts, never the user's.

Invariant: a line of another shape gives None (counted as unknown by the caller),
never an exception.
"""

from __future__ import annotations

from typing import Any

from skillopt.harvest.steps import MAX_TEXT, Step, call_text, files_read, request_steps, text_of

# line types that say nothing about the conversation
QUIET = frozenset(
    "attachment queue-operation last-prompt ai-title mode system summary "
    "file-history-snapshot custom-title tag progress".split()
)
# a tool reading the file named in its input, and a shell running a command
READ_TOOLS = {"Read": "file_path", "NotebookRead": "notebook_path"}
SHELL_TOOLS = frozenset({"Bash"})


def is_claude(line: dict[str, Any]) -> bool:
    """Whether a transcript line is Claude Code's."""
    kind = line.get("type")
    return isinstance(kind, str) and (
        kind in QUIET or (kind in ("user", "assistant") and isinstance(line.get("message"), dict))
    )


def steps(line: dict[str, Any]) -> list[Step] | None:
    """What one line says, or None for a line of a shape not known here."""
    kind = line.get("type")
    at = str(line.get("timestamp") or "")[:40]
    if kind in QUIET:
        return []
    message = line.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return None
    if line.get("isSidechain") is True:
        return [Step("sidechain")]
    found: list[Step] = []
    cwd = line.get("cwd")
    if isinstance(cwd, str) and cwd:
        found.append(Step("meta", text=str(line.get("sessionId") or "")[:80], cwd=cwd[:1024]))
    content = message.get("content")
    if kind == "user":
        if line.get("isMeta") is True or line.get("isCompactSummary") is True:
            return found  # text the CLI added (a skill's body, a summary)
        found.extend(_user(content, at))
    else:
        found.extend(_assistant(content, at))
    return found


def _user(content: Any, at: str) -> list[Step]:
    if isinstance(content, str):
        return request_steps(content, at)
    if not isinstance(content, list):
        return []
    blocks = [b for b in content[:200] if isinstance(b, dict)]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if results:
        # text beside tool results is the CLI's (a skill body after the Skill tool)
        return [
            Step(
                "result",
                text=text_of(b.get("content")) if b.get("is_error") is True else "",
                error=b.get("is_error") is True,
                at=at,
            )
            for b in results
        ]
    texts = [
        b["text"][:MAX_TEXT]
        for b in blocks
        if b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return request_steps("\n".join(texts), at)


def _assistant(content: Any, at: str) -> list[Step]:
    if isinstance(content, str):
        return [Step("answer", text=content[:MAX_TEXT], at=at)] if content.strip() else []
    if not isinstance(content, list):
        return []
    found = []
    for block in content[:200]:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            if block["text"].strip():
                found.append(Step("answer", text=block["text"][:MAX_TEXT], at=at))
        elif block.get("type") == "tool_use":
            name = str(block.get("name") or "?")[:80]
            raw = block.get("input")
            args: dict[str, Any] = raw if isinstance(raw, dict) else {}
            found.append(
                Step("tool", tool=name, call=call_text(args), reads=_reads(name, args), at=at)
            )
    return found


def _reads(name: str, args: dict[str, Any]) -> tuple[str, ...]:
    key = READ_TOOLS.get(name)
    if key is not None and isinstance(args.get(key), str):
        return (args[key][:1024],)
    if name in SHELL_TOOLS and isinstance(args.get("command"), str):
        return files_read(args["command"])
    return ()
