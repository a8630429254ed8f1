"""The claude-code harness: `claude -p` in a workspace holding
`.claude/skills/<name>/SKILL.md`, the prompt on stdin.

Output shapes read (https://code.claude.com/docs/en/headless): the
`--output-format json` result object; the JSON array of all messages with the
result last (what verbose settings turn json into); and with trace capture,
`--output-format stream-json --verbose` JSON lines. The tool steps come from the
assistant `tool_use` blocks and the matching `tool_result` blocks; the skill
counts as invoked when a `Skill` tool_use names it (or the agent reads its
SKILL.md).

Outcome rules: a `success` result is the answer. `error_max_turns` and
`error_max_budget_usd` are the agent's own outcome (it ran out of turns or
budget on this task) and are scored with whatever it answered. Any other error
result, unreadable output or a crash is unscored, with the CLI's message.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from skillopt._util.text import clip, tail
from skillopt.config import Settings
from skillopt.harness.agent import AgentHarness, cli_model, copy_private
from skillopt.harness.agent_output import CLIPPED, JsonObject, as_object, classify, status_kind
from skillopt.harness.base import Trajectory
from skillopt.harness.claude_events import (
    expanded,
    lists,
    model_calls,
    read_events,
    run_facts,
    skill_name,
    tool_steps,
    usage_of,
)
from skillopt.harness.process import ProcessResult
from skillopt.harness.workspace import Workspace, install_name
from skillopt.skill.document import Skill
from skillopt.suite.task import Task

AGENT_OUTCOMES = ("error_max_turns", "error_max_budget_usd")
CREDENTIALS = ".credentials.json"  # where `claude /login` keeps its token on Linux


class ClaudeCodeHarness(AgentHarness):
    name = "claude-code"
    binary_label = "claude"
    reports_cost = True  # the result event's total_cost_usd: a budget can count it
    skills_dir = ".claude/skills"
    invoke_prefix = "/"
    env_names = (
        "AWS_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "CLOUD_ML_REGION",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "DISABLE_TELEMETRY",
        "DISABLE_AUTOUPDATER",
        "API_TIMEOUT_MS",
        "IS_SANDBOX",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
    )
    env_prefixes = ("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_CONFIG_DIR")
    install_hint = (
        "install Claude Code (npm install -g @anthropic-ai/claude-code), set "
        "`claude_code.binary` in skillopt.yaml, "
    )

    supports_isolation = True

    def __init__(self, settings: Settings, *, keep_dir: Path | None = None):
        super().__init__(settings, settings.claude_code.binary, keep_dir=keep_dir)
        self.conf = settings.claude_code
        self.model = cli_model(settings.target, self.name, ("anthropic",))
        self._settings: JsonObject | None = None

    @classmethod
    def build(
        cls, settings: Settings, target: object = None, keep_dir: Path | None = None
    ) -> ClaudeCodeHarness:
        """The registry's factory: the CLI is handed `settings.target` by name."""
        return cls(settings, keep_dir=keep_dir)

    shadow_reason = "Claude Code prefers personal skills to project skills,"
    agent_label = "Claude Code (`claude -p`, loading a skill with its `Skill` tool)"

    def target_model(self) -> str | None:
        return self.resolved_model()

    def config_dir(self) -> Path:
        """The user's Claude Code directory (settings, credentials, personal skills)."""
        config = os.environ.get("CLAUDE_CONFIG_DIR")
        return Path(config) if config else Path.home() / ".claude"

    def user_skill_roots(self) -> list[Path]:
        return [self.config_dir() / "skills"]

    def options(self) -> JsonObject:
        c = self.conf
        return {
            "model": self.resolved_model(),
            "endpoint": self.endpoint(),
            "isolate": self.isolated,
            "permission_mode": c.permission_mode,
            "allowed_tools": c.allowed_tools,
            "disallowed_tools": c.disallowed_tools,
            "tools": c.tools,
            "max_turns": c.max_turns,
            "args": c.args,
        }

    def user_settings(self) -> JsonObject:
        """The user's own settings.json, which the CLI reads only when not isolated
        (read once)."""
        if self._settings is None:
            self._settings = (
                {} if self.isolated else _read_json(self.config_dir() / "settings.json")
            )
        return self._settings

    def _setting(self, name: str) -> str | None:
        """A variable as the CLI sees it: the environment, else (not isolated) the
        `env` block of the user's settings."""
        if os.environ.get(name):
            return os.environ[name]
        env = self.user_settings().get("env")
        value = env.get(name) if isinstance(env, dict) else None
        return str(value) if value else None

    def resolved_model(self) -> str | None:
        """The model the CLI will run, as far as can be known before it runs: --model,
        else ANTHROPIC_MODEL, else (not isolated) the user's settings; None for the
        CLI's own default. Part of the fingerprint, so a change is never served from
        the store."""
        if self.model:
            return self.model
        model = self._setting("ANTHROPIC_MODEL") or self.user_settings().get("model")
        return str(model) if model else None

    def endpoint(self) -> str | None:
        """Where the CLI sends its requests, when not Anthropic's own API."""
        for flag, name in (
            ("CLAUDE_CODE_USE_BEDROCK", "bedrock"),
            ("CLAUDE_CODE_USE_VERTEX", "vertex"),
        ):
            if self._setting(flag) not in (None, "", "0", "false"):
                return name
        return self._setting("ANTHROPIC_BASE_URL")

    def env(self, ws: Workspace, skill: Skill, task: Task) -> dict[str, str]:
        env = super().env(ws, skill, task)
        env["CLAUDE_CODE_MAX_RETRIES"] = str(self.conf.max_retries)
        # a rollout needs no update check, telemetry or error reporting
        env.setdefault("DISABLE_AUTOUPDATER", "1")
        env.setdefault("DISABLE_TELEMETRY", "1")
        # also no session-title request: the rollout's only model calls are the agent's
        env.setdefault("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        if self.isolated:
            env.pop("CLAUDE_CONFIG_DIR", None)
            # cloud credentials stay where they are, read in place: only the CLI's own
            # home is private
            real = Path.home()
            for name, path in (
                ("AWS_CONFIG_FILE", real / ".aws" / "config"),
                ("AWS_SHARED_CREDENTIALS_FILE", real / ".aws" / "credentials"),
                (
                    "GOOGLE_APPLICATION_CREDENTIALS",
                    real / ".config" / "gcloud" / "application_default_credentials.json",
                ),
            ):
                if name not in env and path.is_file():
                    env[name] = str(path)
        return env

    def private_home(self, ws: Workspace) -> Path:
        home = super().private_home(ws)
        # a login made with `claude /login` (no API key in the environment)
        copy_private(self.config_dir() / CREDENTIALS, home / ".claude" / CREDENTIALS)
        return home

    def argv(self, ws: Workspace, skill: Skill, task: Task) -> list[str]:
        c = self.conf
        argv = [self.executable(), "-p"]
        if self.isolated and "--setting-sources" not in c.args:
            argv += ["--setting-sources", "project,local"]
        if "--no-session-persistence" not in c.args:
            argv += ["--no-session-persistence"]
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

    def parse(self, result: ProcessResult, ws: Workspace, skill: Skill, task: Task) -> Trajectory:
        events = read_events(result.stdout)
        name = None if skill.is_empty else install_name(skill)
        steps, invoked, traced = tool_steps(events, name)
        init = next(
            (e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), None
        )
        info = run_facts(init, events)
        if name and self.agent.invoke == "explicit" and expanded(init, name):
            invoked = True  # the CLI put the skill into the prompt: no Skill tool call
        final = next((e for e in reversed(events) if e.get("type") == "result"), None)
        listed = init.get("skills") if isinstance(init, dict) else None
        if name and isinstance(listed, list) and not lists(listed, name):
            shown = ", ".join(skill_name(x) for x in listed[:20]) or "none"
            return Trajectory(
                error=f"claude did not discover the skill {name!r} installed at "
                f"{self.skills_dir}/{name}/SKILL.md (the skills it lists: {shown}); "
                "check the skill's frontmatter and claude_code.args",
                error_kind="not_discovered",
                steps=steps,
                info=info,
                skill_invoked=None,
            )
        if final is None:
            if result.returncode not in (0, None):
                return _with(self.failure(result), steps, invoked, info)
            return _with(
                Trajectory(
                    error="claude printed no result object: "
                    + (tail(result.stdout, 400) or "no output"),
                    error_kind="bad_output",
                ),
                steps,
                invoked,
                info,
            )
        return self._outcome(final, events, steps, invoked if traced else None, info)

    def _outcome(
        self,
        final: JsonObject,
        events: list[JsonObject],
        steps: tuple[JsonObject, ...],
        invoked: bool | None,
        info: JsonObject,
    ) -> Trajectory:
        """The trajectory the result object `final` describes (see the module's
        outcome rules)."""
        subtype = str(final.get("subtype") or "")
        usage = as_object(final.get("usage"))
        info.update(
            {
                k: final.get(k)
                for k in (
                    "subtype",
                    "is_error",
                    "num_turns",
                    "stop_reason",
                    "session_id",
                    "api_error_status",
                )
                if k in final
            }
        )
        denials = final.get("permission_denials")
        if isinstance(denials, list) and denials:
            info["permission_denials"] = len(denials)
        cost = final.get("total_cost_usd")
        # what every outcome below carries; each adds its answer or its error
        done = Trajectory(
            usage=usage_of(usage),
            cost=float(cost) if isinstance(cost, (int, float)) else None,
            model_calls=model_calls(events, final),
            steps=steps,
            skill_invoked=invoked,
            info=info,
        )
        text = final.get("result")
        if subtype in AGENT_OUTCOMES:
            return replace(
                done,
                answer=text if isinstance(text, str) else "",
                steps=(*steps, {"type": "stopped", "reason": subtype}),
            )
        if final.get("is_error") or (subtype and subtype != "success"):
            errors = final.get("errors")
            message = (
                text
                if isinstance(text, str) and text.strip()
                else "; ".join(map(str, errors))
                if isinstance(errors, list) and errors
                else subtype or "error result"
            )
            message = clip(message.strip(), 800, CLIPPED)
            # the real CLI reports a provider's refusal as subtype "success" with
            # is_error and the HTTP status: the status decides, not the words
            status = final.get("api_error_status")
            kind = status_kind(status)
            what = f"API error {status}" if kind else subtype or "is_error"
            return replace(
                done,
                error=f"claude reported an error ({what}): {message}",
                error_kind=kind or classify(message),
            )
        if not isinstance(text, str):
            return replace(
                done, error="claude's result object has no `result` text", error_kind="bad_output"
            )
        return replace(done, answer=text)

    def timeout_cause(self, partial: Trajectory) -> tuple[str, str]:
        status = partial.info.get("api_retry_status")
        kind = status_kind(status)
        if kind is None:
            return "timeout", ""
        return kind, (
            f" while retrying a failed API call ({partial.info.get('api_retries')} "
            f"retries, the last answered HTTP {status})"
        )


def _read_json(path: Path) -> JsonObject:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _with(
    traj: Trajectory, steps: tuple[JsonObject, ...], invoked: bool | None, info: JsonObject
) -> Trajectory:
    return replace(
        traj, steps=steps, skill_invoked=invoked if steps else None, info={**traj.info, **info}
    )
