"""The codex harness: `codex exec --json` in a workspace holding
`.agents/skills/<name>/SKILL.md`, the prompt on stdin (`-`).

Events read (https://developers.openai.com/codex/noninteractive): `thread.started`,
`turn.started`, `turn.completed` (usage), `turn.failed` (error), `error`, and
`item.started|updated|completed` whose item is an `agent_message`, `reasoning`,
`command_execution`, `file_change`, `mcp_tool_call`, `web_search`, `todo_list` or
`error`. Unknown event and item types are kept as generic steps or skipped, never
an error; lines that are not JSON are skipped. Releases before late 2025 said
`item_type` and `assistant_message`: both spellings are read.

The answer is the `--output-last-message` file (written outside the workspace),
else the last agent message. `--full-auto` is never passed (removed upstream).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from skillopt._util.text import clip, tail
from skillopt.config import Settings
from skillopt.errors import HarnessError
from skillopt.harness.agent import (
    CLIPPED,
    STEP_OUTPUT_LIMIT,
    AgentHarness,
    as_int,
    classify,
    cli_model,
    clip_json,
    copy_private,
    json_lines,
)
from skillopt.harness.base import Trajectory
from skillopt.harness.process import ProcessResult
from skillopt.harness.workspace import Workspace, install_name
from skillopt.models.base import Usage
from skillopt.skill.document import Skill
from skillopt.suite.task import Task

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

LAST_MESSAGE = "last-message.txt"
CONFIG = "config.toml"
MESSAGE_TYPES = ("agent_message", "assistant_message")
# The settings of a user's config.toml that say which model runs and how codex reaches
# and authenticates with its provider: all a private CODEX_HOME keeps.
PROVIDER_KEYS = (
    "model",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "model_context_window",
    "model_max_output_tokens",
    "model_auto_compact_token_limit",
    "model_supports_reasoning_summaries",
    "preferred_auth_method",
    "forced_login_method",
    "forced_chatgpt_workspace_id",
    "chatgpt_base_url",
)
# what a sandbox that cannot start says (bubblewrap, landlock, seccomp), as opposed to
# one that works and refuses a write
SANDBOX_BROKEN = re.compile(
    r"bubblewrap|\bbwrap\b|landlock|seccomp|sandbox (error|failed)|"
    r"failed to (apply|set ?up|create) (the )?sandbox",
    re.I,
)


class CodexHarness(AgentHarness):
    name = "codex"
    binary_label = "codex"
    skills_dir = ".agents/skills"
    invoke_prefix = "$"
    # what codex reads from the environment itself (a provider's `env_key` and
    # `env_http_headers` variables are added from its config); it ignores
    # OPENAI_BASE_URL: a gateway is a `[model_providers.X]` table in config.toml
    env_names = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_ORGANIZATION", "OPENAI_PROJECT")
    env_prefixes = ("CODEX_",)
    install_hint = (
        "install Codex (npm install -g @openai/codex), set `codex.binary` in skillopt.yaml, "
    )
    supports_isolation = True

    def __init__(self, settings: Settings, *, keep_dir: Path | None = None):
        super().__init__(settings, settings.codex.binary, keep_dir=keep_dir)
        self.conf = settings.codex
        self.model = cli_model(settings.target, self.name, ("openai",))
        self._config: dict | None = None
        self._private_config: str | None = None  # the config.toml of a private CODEX_HOME

    shadow_reason = "Codex would list both copies and could read either,"
    agent_label = "Codex (`codex exec`)"

    def target_model(self) -> str | None:
        model = self.model or self.user_config().get("model")
        return str(model) if model else None

    def codex_home(self) -> Path:
        """The user's CODEX_HOME (config.toml, auth.json, AGENTS.md, sessions)."""
        codex_home = os.environ.get("CODEX_HOME")
        return Path(codex_home) if codex_home else Path.home() / ".codex"

    def user_skill_roots(self) -> list[Path]:
        return [Path.home() / ".agents" / "skills", self.codex_home() / "skills"]

    def user_config(self) -> dict:
        """The user's config.toml as codex reads it, with the active profile's keys laid
        over the top level; {} when there is none. A file codex could not read either
        stops the run before any task."""
        if self._config is None:
            self._config = read_config(self.codex_home() / CONFIG)
        return self._config

    def provider(self) -> tuple[str, dict]:
        """(name, table) of the model provider codex will use."""
        config = self.user_config()
        name = str(config.get("model_provider") or "openai")
        providers = config.get("model_providers")
        table = providers.get(name) if isinstance(providers, dict) else None
        return name, table if isinstance(table, dict) else {}

    def check(self, skills=()) -> None:
        self.user_config()
        super().check(skills)

    def options(self) -> dict:
        name, table = self.provider()
        return {
            "model": self.model or self.user_config().get("model"),
            "provider": {
                "name": name,
                "base_url": table.get("base_url"),
                "wire_api": table.get("wire_api"),
            },
            "isolate": self.isolated,
            "sandbox": self.conf.sandbox,
            "args": self.conf.args,
        }

    def env(self, ws: Workspace, skill: Skill, task: Task) -> dict[str, str]:
        env = super().env(ws, skill, task)
        _, table = self.provider()
        wanted = [table.get("env_key")]
        headers = table.get("env_http_headers")
        if isinstance(headers, dict):
            wanted += list(headers.values())
        for name in wanted:
            if isinstance(name, str) and name in os.environ:
                env[name] = os.environ[name]
        if self.isolated:
            env["CODEX_HOME"] = str(self.private_codex_home(ws))
        return env

    def private_codex_home(self, ws: Workspace) -> Path:
        """A CODEX_HOME of the rollout's own: the provider settings of the user's
        config.toml and its auth.json, nothing else (no AGENTS.md, skills, sessions,
        history, MCP servers or rules)."""
        home = ws.private("codex-home")
        if self._private_config is None:
            self._private_config = to_toml(provider_config(self.user_config()))
        (home / CONFIG).write_text(self._private_config, encoding="utf-8")
        copy_private(self.codex_home() / "auth.json", home / "auth.json")
        return home

    def argv(self, ws: Workspace, skill: Skill, task: Task) -> list[str]:
        argv = [
            self.executable(),
            "exec",
            "--json",
            "--sandbox",
            self.conf.sandbox,
            "--skip-git-repo-check",
            "-C",
            str(ws.path),
        ]
        if "--ephemeral" not in self.conf.args:
            argv += ["--ephemeral"]  # no session files under CODEX_HOME
        if self.model:
            argv += ["-m", self.model]
        argv += ["--output-last-message", str(ws.io / LAST_MESSAGE), *self.conf.args, "-"]
        return argv

    def parse(self, result: ProcessResult, ws: Workspace, skill: Skill, task: Task) -> Trajectory:
        events = read_jsonl(result.stdout)
        name = None if skill.is_empty else install_name(skill)
        steps, messages, invoked = item_steps(events, name)
        if name and self.agent.invoke == "explicit":
            # codex pastes an installed skill's SKILL.md into the conversation for a
            # `$name` in the prompt (observed with 0.171): no event shows it
            invoked = True
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
        info = {"turns": turns, "turns_completed": completed}
        thread = next(
            (e.get("thread_id") for e in events if e.get("type") == "thread.started"), None
        )
        if thread:
            info["thread_id"] = thread
        common = dict(
            usage=usage,
            model_calls=max(turns, 1),
            steps=steps,
            info=info,
            skill_invoked=invoked if events and name else None,
        )
        last_file = ws.io / LAST_MESSAGE
        answer = (
            last_file.read_text(encoding="utf-8", errors="replace") if last_file.is_file() else ""
        )
        if not answer.strip() and messages:
            answer = messages[-1]
        broken = sandbox_failures(steps)
        if broken:
            return Trajectory(
                error=f"codex's sandbox ({self.conf.sandbox}) could not run commands "
                f"({len(broken)} failed): {clip(broken[-1], 400, CLIPPED)}; fix the sandbox "
                "(bubblewrap) on this machine, or choose codex.sandbox: "
                "danger-full-access where the workspace is already isolated",
                error_kind="sandbox",
                **common,
            )
        if failures and not completed:
            message = clip(failures[-1].strip(), 800, CLIPPED)
            return Trajectory(
                error=f"codex turn failed: {message}", error_kind=classify(message), **common
            )
        if result.returncode not in (0, None):
            detail = result.stderr_tail() or (clip(failures[-1], 800, CLIPPED) if failures else "")
            traj = self.failure(result, detail or None)
            return Trajectory(error=traj.error, error_kind=traj.error_kind, **common)
        if not events:
            return Trajectory(
                error="codex printed no JSON events: " + (tail(result.stdout, 400) or "no output"),
                error_kind="bad_output",
                **common,
            )
        if not answer.strip() and not completed:
            stray = "\n".join(
                line
                for line in result.stdout.splitlines()
                if line.strip() and not line.lstrip().startswith("{")
            )
            return Trajectory(
                error="codex finished without completing a turn or a final "
                "message" + (f": {tail(stray, 400)}" if stray else ""),
                error_kind="bad_output",
                **common,
            )
        return Trajectory(answer=answer.strip("\n"), **common)


def read_config(path: Path) -> dict:
    """A codex config.toml, the active `profile`'s keys laid over the top level; {}
    when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: codex's config cannot be read: {exc}") from None
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(
            f"{path}: codex's config is not valid TOML ({exc}); codex would refuse it too"
        ) from None
    profiles = config.get("profiles")
    active = profiles.get(config.get("profile")) if isinstance(profiles, dict) else None
    if isinstance(active, dict):
        config = {**config, **active}
    return config


def provider_config(config: dict) -> dict:
    """What a private CODEX_HOME's config.toml holds: the provider settings of the
    user's; no analytics and no remote plugins (codex 0.171 otherwise contacts
    ab.chatgpt.com, chatgpt.com and github.com on every run), and a connection that
    cannot be made fails the turn instead of being retried without end."""
    kept = {k: config[k] for k in PROVIDER_KEYS if k in config}
    kept["analytics"] = {"enabled": False}
    kept["features"] = {"plugins": False, "unbounded_connection_retries": False}
    return kept


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def to_toml(data: dict, prefix: tuple[str, ...] = ()) -> str:
    """`data` (as tomllib read it) written back as TOML: values first, then each
    nested table under its dotted header."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    out = "\n".join(lines)
    for key, value in tables:
        path = (*prefix, key)
        body = to_toml(value, path)
        header = "[" + ".".join(_toml_key(k) for k in path) + "]"
        out += ("\n\n" if out else "") + header + ("\n" + body if body else "")
    return out + ("\n" if out and not prefix else "")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))  # dates and times: codex's provider keys have none


def read_jsonl(stdout: str) -> list[dict]:
    """The events codex printed: JSON lines with a `type`."""
    return [e for e in json_lines(stdout) if isinstance(e.get("type"), str)]


def item_steps(
    events: list[dict], skill_name: str | None
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


def _succeeded(step: dict) -> bool:
    """A step that ran to completion: reading SKILL.md in a command that failed (a
    broken sandbox) or never finished is not loading the skill."""
    if step.get("status") not in (None, "completed"):
        return False
    return step.get("exit_code") in (None, 0) if step.get("type") == "command" else True


def sandbox_failures(steps: tuple[dict, ...]) -> list[str]:
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


def _step(kind: str, item: dict) -> dict | None:
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
        changes = item.get("changes") if isinstance(item.get("changes"), list) else []
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
