"""The claude-code harness: `claude -p` in a workspace holding
`.claude/skills/<name>/SKILL.md`, the prompt on stdin.

Output shapes read (formats.md §3): the `--output-format json` result object; the
JSON array of all messages with the result last (what verbose settings turn json
into); and with trace capture, `--output-format stream-json --verbose` JSON lines.
The tool steps come from the assistant `tool_use` blocks and the matching
`tool_result` blocks; the skill counts as invoked when a `Skill` tool_use names
it (or the agent reads its SKILL.md).

Outcome rules: a `success` result is the answer. `error_max_turns` and
`error_max_budget_usd` are the agent's own outcome (it ran out of turns or
budget on this task) and are scored with whatever it answered. Any other error
result, unreadable output or a crash is unscored, with the CLI's message.
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

AGENT_OUTCOMES = ("error_max_turns", "error_max_budget_usd")


class ClaudeCodeHarness(AgentHarness):
    name = "claude-code"
    binary_label = "claude"
    skills_dir = ".claude/skills"
    invoke_prefix = "/"
    env_names = ("AWS_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "CLOUD_ML_REGION",
                 "GOOGLE_APPLICATION_CREDENTIALS", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER")
    env_prefixes = ("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_CONFIG_DIR")
    install_hint = "install Claude Code (npm install -g @anthropic-ai/claude-code), set " \
                   "`claude_code.binary` in skillopt.yaml, "

    def __init__(self, settings: Settings):
        super().__init__(settings, settings.claude_code.binary)
        self.conf = settings.claude_code
        self.model = cli_model(settings.target, self.name, ("anthropic",))

    shadow_reason = "Claude Code prefers personal skills to project skills,"

    def user_skill_roots(self) -> list[Path]:
        config = os.environ.get("CLAUDE_CONFIG_DIR")
        return [(Path(config) if config else Path.home() / ".claude") / "skills"]

    def options(self) -> dict:
        c = self.conf
        return {"model": self.model, "permission_mode": c.permission_mode,
                "allowed_tools": c.allowed_tools, "disallowed_tools": c.disallowed_tools,
                "tools": c.tools, "max_turns": c.max_turns, "args": c.args}

    def argv(self, ws: Workspace, skill: Skill, task: Task) -> list[str]:
        c = self.conf
        argv = [self.executable(), "-p"]
        if self.agent.trace:
            argv += ["--output-format", "stream-json", "--verbose"]
        else:
            argv += ["--output-format", "json"]
        argv += ["--permission-mode", c.permission_mode]
        if c.allowed_tools is not None:
            argv += ["--allowedTools", ",".join(c.allowed_tools)]
        if c.disallowed_tools is not None:
            argv += ["--disallowedTools", ",".join(c.disallowed_tools)]
        if c.tools is not None:
            argv += ["--tools", ",".join(c.tools)]
        if c.max_turns is not None:
            argv += ["--max-turns", str(c.max_turns)]
        if self.model:
            argv += ["--model", self.model]
        return argv + list(c.args)

    def parse(self, result: ProcessResult, ws: Workspace, skill: Skill,
              task: Task) -> Trajectory:
        events = read_events(result.stdout)
        steps, invoked, traced = tool_steps(events, None if skill.is_empty
                                            else install_name(skill))
        final = next((e for e in reversed(events) if e.get("type") == "result"), None)
        if final is None:
            if result.returncode not in (0, None):
                return _with(self.failure(result), steps, invoked)
            return _with(Trajectory(error="claude printed no result object: "
                                          + (tail(result.stdout, 400) or "no output"),
                                    error_kind="bad_output"), steps, invoked)
        subtype = str(final.get("subtype") or "")
        usage = final.get("usage") if isinstance(final.get("usage"), dict) else {}
        info = {k: final.get(k) for k in ("subtype", "is_error", "num_turns", "stop_reason",
                                          "session_id") if k in final}
        denials = final.get("permission_denials")
        if isinstance(denials, list) and denials:
            info["permission_denials"] = len(denials)
        cost = final.get("total_cost_usd")
        common = dict(usage=_usage(usage), cost=float(cost) if isinstance(cost, (int, float))
                      else None, model_calls=as_int(final.get("num_turns"), 1), steps=steps,
                      skill_invoked=invoked if traced else None, info=info)
        text = final.get("result")
        if subtype in AGENT_OUTCOMES:
            steps = (*steps, {"type": "stopped", "reason": subtype})
            common["steps"] = steps
            return Trajectory(answer=text if isinstance(text, str) else "", **common)
        if final.get("is_error") or (subtype and subtype != "success"):
            errors = final.get("errors")
            message = (text if isinstance(text, str) and text.strip() else
                       "; ".join(map(str, errors)) if isinstance(errors, list) and errors else
                       subtype or "error result")
            message = clip(message.strip(), 800)
            return Trajectory(error=f"claude reported an error ({subtype or 'is_error'}): "
                                    f"{message}", error_kind=classify(message), **common)
        if not isinstance(text, str):
            return Trajectory(error="claude's result object has no `result` text",
                              error_kind="bad_output", **common)
        return Trajectory(answer=text, **common)


def read_events(stdout: str) -> list[dict]:
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


def tool_steps(events: list[dict], skill_name: str | None
               ) -> tuple[tuple[dict, ...], bool | None, bool]:
    """(steps, skill invoked, whether the events hold a trace of messages)."""
    steps: list[dict] = []
    by_id: dict[str, dict] = {}
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
                tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
                step = {"type": "tool_use", "tool": tool,
                        "input": clip_json(tool_input)}
                steps.append(step)
                if isinstance(block.get("id"), str):
                    by_id[block["id"]] = step
                if skill_name and _invokes(tool, tool_input, skill_name):
                    invoked = True
            elif block.get("type") == "tool_result":
                step = by_id.get(str(block.get("tool_use_id")))
                output = clip(_result_text(block.get("content")), STEP_OUTPUT_LIMIT)
                if step is not None:
                    step["output"] = output
                    if block.get("is_error"):
                        step["is_error"] = True
                else:
                    steps.append({"type": "tool_result", "output": output})
    if not skill_name:
        return tuple(steps), None, traced
    return tuple(steps), invoked, traced


def _invokes(tool: str, tool_input: dict, name: str) -> bool:
    if tool == "Skill":
        called = str(tool_input.get("skill") or tool_input.get("command")
                     or tool_input.get("name") or "").lstrip("/")
        return called == name or called.endswith(":" + name)
    if tool == "Read":
        path = str(tool_input.get("file_path") or tool_input.get("path") or "")
        return path.replace("\\", "/").endswith(f"skills/{name}/SKILL.md")
    return False


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c)
                         for c in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _usage(usage: dict) -> Usage:
    return Usage(input_tokens=sum(as_int(usage.get(k)) for k in (
                     "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")),
                 output_tokens=as_int(usage.get("output_tokens")))


def _with(traj: Trajectory, steps: tuple, invoked: bool | None) -> Trajectory:
    from dataclasses import replace

    return replace(traj, steps=steps, skill_invoked=invoked if steps else None)
