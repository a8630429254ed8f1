"""The codex harness: `codex exec --json` in a workspace holding
`.agents/skills/<name>/SKILL.md`, the prompt on stdin (`-`).

Events read (formats.md §2.3): `thread.started`, `turn.started`, `turn.completed`
(usage), `turn.failed` (error), `error`, and `item.started|updated|completed`
whose item is an `agent_message`, `reasoning`, `command_execution`, `file_change`,
`mcp_tool_call`, `web_search`, `todo_list` or `error`. Unknown event and item
types are kept as generic steps or skipped, never an error; lines that are not
JSON are skipped. Releases before late 2025 said `item_type` and
`assistant_message`: both spellings are read.

The answer is the `--output-last-message` file (written outside the workspace),
else the last agent message. `--full-auto` is never passed (removed upstream).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from skillopt.config import Settings
from skillopt.harness.agent import (
    STEP_OUTPUT_LIMIT,
    AgentHarness,
    as_int,
    classify,
    cli_model,
    clip,
    clip_json,
    json_lines,
)
from skillopt.harness.base import Trajectory
from skillopt.harness.process import ProcessResult, tail
from skillopt.harness.workspace import Workspace, install_name
from skillopt.models.base import Usage
from skillopt.skill.document import Skill
from skillopt.suite.task import Task

LAST_MESSAGE = "last-message.txt"
MESSAGE_TYPES = ("agent_message", "assistant_message")


class CodexHarness(AgentHarness):
    name = "codex"
    binary_label = "codex"
    skills_dir = ".agents/skills"
    invoke_prefix = "$"
    env_names = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_ORGANIZATION",
                 "OPENAI_PROJECT", "AZURE_OPENAI_API_KEY")
    env_prefixes = ("CODEX_",)
    install_hint = "install Codex (npm install -g @openai/codex), set `codex.binary` in " \
                   "skillopt.yaml, "

    def __init__(self, settings: Settings):
        super().__init__(settings, settings.codex.binary)
        self.conf = settings.codex
        self.model = cli_model(settings.target, self.name, ("openai",))

    shadow_reason = "Codex would list both copies and could read either,"

    def user_skill_roots(self) -> list[Path]:
        codex_home = os.environ.get("CODEX_HOME")
        return [Path.home() / ".agents" / "skills",
                (Path(codex_home) if codex_home else Path.home() / ".codex") / "skills"]

    def options(self) -> dict:
        return {"model": self.model, "sandbox": self.conf.sandbox, "args": self.conf.args}

    def argv(self, ws: Workspace, skill: Skill, task: Task) -> list[str]:
        argv = [self.executable(), "exec", "--json", "--sandbox", self.conf.sandbox,
                "--skip-git-repo-check", "-C", str(ws.path)]
        if self.model:
            argv += ["-m", self.model]
        argv += ["--output-last-message", str(ws.io / LAST_MESSAGE), *self.conf.args, "-"]
        return argv

    def parse(self, result: ProcessResult, ws: Workspace, skill: Skill,
              task: Task) -> Trajectory:
        events = read_jsonl(result.stdout)
        name = None if skill.is_empty else install_name(skill)
        steps, messages, invoked = item_steps(events, name)
        usage = Usage()
        turns = completed = 0
        failures = []
        for e in events:
            kind = e.get("type")
            if kind == "turn.started":
                turns += 1
            elif kind == "turn.completed":
                completed += 1
                u = e.get("usage") if isinstance(e.get("usage"), dict) else {}
                usage = usage + Usage(as_int(u.get("input_tokens")), as_int(u.get("output_tokens")))
            elif kind == "turn.failed":
                err = e.get("error")
                failures.append(str(err.get("message") if isinstance(err, dict) else err))
            elif kind == "error":
                failures.append(str(e.get("message") or "error event"))
        info = {"turns": turns, "turns_completed": completed}
        thread = next((e.get("thread_id") for e in events if e.get("type") == "thread.started"),
                      None)
        if thread:
            info["thread_id"] = thread
        common = dict(usage=usage, model_calls=max(turns, 1), steps=steps, info=info,
                      skill_invoked=invoked if events and name else None)
        last_file = ws.io / LAST_MESSAGE
        answer = last_file.read_text(encoding="utf-8", errors="replace") \
            if last_file.is_file() else ""
        if not answer.strip() and messages:
            answer = messages[-1]
        if failures and not completed:
            message = clip(failures[-1].strip(), 800)
            return Trajectory(error=f"codex turn failed: {message}",
                              error_kind=classify(message), **common)
        if result.returncode not in (0, None):
            detail = result.stderr_tail() or (clip(failures[-1], 800) if failures else "")
            traj = self.failure(result, detail or None)
            return Trajectory(error=traj.error, error_kind=traj.error_kind, **common)
        if not events:
            return Trajectory(error="codex printed no JSON events: "
                                    + (tail(result.stdout, 400) or "no output"),
                              error_kind="bad_output", **common)
        if not answer.strip() and not completed:
            stray = "\n".join(line for line in result.stdout.splitlines()
                              if line.strip() and not line.lstrip().startswith("{"))
            return Trajectory(error="codex finished without completing a turn or a final "
                                    "message" + (f": {tail(stray, 400)}" if stray else ""),
                              error_kind="bad_output", **common)
        return Trajectory(answer=answer.strip("\n"), **common)


def read_jsonl(stdout: str) -> list[dict]:
    """The events codex printed: JSON lines with a `type`."""
    return [e for e in json_lines(stdout) if isinstance(e.get("type"), str)]


def item_steps(events: list[dict], skill_name: str | None
               ) -> tuple[tuple[dict, ...], list[str], bool]:
    """(steps, agent messages, skill invoked) from the completed items, in order.
    An item only ever started (the run was cut short) counts as it was last seen."""
    last: dict[str, dict] = {}
    order: list[str] = []
    for n, e in enumerate(events):
        if not str(e.get("type", "")).startswith("item.") or not isinstance(e.get("item"), dict):
            continue
        item = e["item"]
        key = str(item.get("id") or f"#{n}")
        if key not in last:
            order.append(key)
        last[key] = item
    steps: list[dict] = []
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
        if needle and needle in json.dumps(step, ensure_ascii=False):
            invoked = True
        steps.append(step)
    return tuple(steps), messages, invoked


def _step(kind: str, item: dict) -> dict | None:
    if kind == "command_execution":
        step = {"type": "command", "command": str(item.get("command", "")),
                "output": clip(str(item.get("aggregated_output") or ""), STEP_OUTPUT_LIMIT)}
        for k in ("exit_code", "status"):
            if item.get(k) is not None:
                step[k] = item[k]
        return step
    if kind == "file_change":
        changes = item.get("changes") if isinstance(item.get("changes"), list) else []
        return {"type": "file_change", "tool": "edit", "input": [
            {"path": c.get("path"), "kind": c.get("kind")} for c in changes
            if isinstance(c, dict)], "status": item.get("status")}
    if kind == "mcp_tool_call":
        return {"type": "mcp_tool_call", "tool": f"{item.get('server')}.{item.get('tool')}",
                "input": clip_json(item.get("arguments")),
                "output": clip(json.dumps(item.get("result") or item.get("error"),
                                          ensure_ascii=False, default=str), STEP_OUTPUT_LIMIT)}
    if kind == "reasoning":
        text = item.get("text")
        return {"type": "reasoning", "text": clip(str(text), 600)} if text else None
    if kind == "web_search":
        return {"type": "web_search", "tool": "web_search", "input": item.get("query")}
    if kind == "error":
        return {"type": "error", "text": clip(str(item.get("message", "")), 600)}
    # todo_list, plan, collab_tool_call and anything newer: kept, compactly
    fields = {k: v for k, v in item.items() if k not in ("id", "type", "item_type")}
    return {"type": kind, "text": clip(json.dumps(fields, ensure_ascii=False, default=str),
                                       600)}
