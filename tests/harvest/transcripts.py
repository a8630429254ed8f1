"""Session transcripts written in the shapes the real CLIs were seen to write
(claude 2.1.197 and codex-cli 0.171.0 against the loopback fakes, see
tests/realcli/test_real_harvest.py): only lines and fields seen there, plus the
interruption markers each agent documents."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

_n = itertools.count(1)


def _at() -> str:
    n = next(_n)  # in the order written, as the agents write them
    return f"2026-01-02T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


class Claude:
    """One Claude Code session, line by line."""

    def __init__(self, session: str = "c0ffee00-0000-4000-8000-000000000001", cwd: str = "/w/proj"):
        self.session, self.cwd = session, cwd
        self.lines: list[dict] = [
            {"type": "ai-title", "aiTitle": "A session", "sessionId": session},
        ]

    def _line(self, kind: str, message: dict, **extra) -> Claude:
        self.lines.append(
            {
                "parentUuid": None,
                "isSidechain": False,
                "type": kind,
                "message": message,
                "uuid": f"u{next(_n)}",
                "timestamp": _at(),
                "cwd": self.cwd,
                "sessionId": self.session,
                "version": "2.1.197",
                **extra,
            }
        )
        return self

    def user(self, text: str, **extra) -> Claude:
        self.lines.append(
            {"type": "queue-operation", "operation": "enqueue", "sessionId": self.session}
        )
        return self._line("user", {"role": "user", "content": text}, **extra)

    def user_blocks(self, *blocks: dict, **extra) -> Claude:
        return self._line("user", {"role": "user", "content": list(blocks)}, **extra)

    def say(self, text: str) -> Claude:
        return self._line(
            "assistant", {"role": "assistant", "content": [{"type": "text", "text": text}]}
        )

    def tool(self, name: str, **args) -> Claude:
        block = {"type": "tool_use", "id": f"toolu_{next(_n)}", "name": name, "input": args}
        return self._line("assistant", {"role": "assistant", "content": [block]})

    def result(self, text: str, error: bool = False) -> Claude:
        block = {"tool_use_id": "toolu_x", "type": "tool_result", "content": text}
        if error:
            block["is_error"] = True
        return self.user_blocks(block)

    def write(self, root: Path, name: str | None = None) -> Path:
        path = root / "-w-proj" / f"{name or self.session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


class Codex:
    """One Codex session (a rollout file), line by line."""

    def __init__(self, session: str = "01a244af-0000-7000-8000-000000000002", cwd: str = "/w/proj"):
        self.session = session
        self.lines: list[dict] = [
            {
                "timestamp": _at(),
                "type": "session_meta",
                "payload": {"id": session, "cwd": cwd, "cli_version": "0.171.0"},
            },
            self._item(
                {
                    "type": "message",
                    "role": "developer",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "<skills_instructions>x</skills_instructions>",
                        }
                    ],
                }
            ),
            self._item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>",
                        }
                    ],
                }
            ),
            {"timestamp": _at(), "type": "turn_context", "payload": {"cwd": cwd}},
        ]

    @staticmethod
    def _item(payload: dict) -> dict:
        return {"timestamp": _at(), "type": "response_item", "payload": payload}

    def user(self, text: str) -> Codex:
        self.lines.append(
            self._item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                }
            )
        )
        self.lines.append(
            {
                "timestamp": _at(),
                "type": "event_msg",
                "payload": {"type": "item_completed", "item": {"type": "UserMessage"}},
            }
        )
        return self

    def say(self, text: str) -> Codex:
        self.lines.append(
            self._item(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }
            )
        )
        return self

    def shell(self, cmd: str, output: str, code: int = 0) -> Codex:
        call = f"call_{next(_n)}"
        self.lines.append(
            self._item(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": cmd}),
                    "call_id": call,
                }
            )
        )
        said = f"Chunk ID: ab12\nWall time: 0.0000 seconds\nProcess exited with code {code}\nOutput:\n{output}"
        self.lines.append(
            self._item({"type": "function_call_output", "call_id": call, "output": said})
        )
        self.lines.append(
            {
                "timestamp": _at(),
                "type": "token_usage_record",
                "payload": {"usage": {"input_tokens": 1}},
            }
        )
        return self

    def aborted(self) -> Codex:
        self.lines.append(
            {"timestamp": _at(), "type": "event_msg", "payload": {"type": "turn_aborted"}}
        )
        return self

    def write(self, root: Path) -> Path:
        path = root / "2026" / "01" / "02" / f"rollout-2026-01-02T10-00-00-{self.session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path
