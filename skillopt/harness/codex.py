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

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from skillopt._util.text import clip, tail
from skillopt.config import Settings
from skillopt.harness.agent import AgentHarness, cli_model, copy_private
from skillopt.harness.agent_output import CLIPPED, JsonObject, classify
from skillopt.harness.base import Trajectory
from skillopt.harness.codex_config import CONFIG, provider_config, read_config, to_toml
from skillopt.harness.codex_events import item_steps, read_jsonl, read_turns, sandbox_failures
from skillopt.harness.process import ProcessResult
from skillopt.harness.workspace import Workspace, install_name
from skillopt.skill.document import Skill
from skillopt.suite.task import Task

LAST_MESSAGE = "last-message.txt"


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
        self._config: JsonObject | None = None
        self._private_config: str | None = None  # the config.toml of a private CODEX_HOME

    @classmethod
    def build(
        cls, settings: Settings, target: object = None, keep_dir: Path | None = None
    ) -> CodexHarness:
        """The registry's factory: the CLI is handed `settings.target` by name."""
        return cls(settings, keep_dir=keep_dir)

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

    def user_config(self) -> JsonObject:
        """The user's config.toml as codex reads it, with the active profile's keys laid
        over the top level; {} when there is none. A file codex could not read either
        stops the run before any task."""
        if self._config is None:
            self._config = read_config(self.codex_home() / CONFIG)
        return self._config

    def provider(self) -> tuple[str, JsonObject]:
        """(name, table) of the model provider codex will use."""
        config = self.user_config()
        name = str(config.get("model_provider") or "openai")
        providers = config.get("model_providers")
        table = providers.get(name) if isinstance(providers, dict) else None
        return name, table if isinstance(table, dict) else {}

    def check(self, skills: Sequence[Skill] = ()) -> None:
        self.user_config()
        super().check(skills)

    def options(self) -> JsonObject:
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
        turns = read_turns(events)
        info: JsonObject = {"turns": turns.started, "turns_completed": turns.completed}
        thread = next(
            (e.get("thread_id") for e in events if e.get("type") == "thread.started"), None
        )
        if thread:
            info["thread_id"] = thread
        # what every outcome below carries; each adds its answer or its error
        done = Trajectory(
            usage=turns.usage,
            model_calls=max(turns.started, 1),
            steps=steps,
            info=info,
            skill_invoked=invoked if events and name else None,
        )
        failures, completed = turns.failures, turns.completed
        last_file = ws.io / LAST_MESSAGE
        answer = (
            last_file.read_text(encoding="utf-8", errors="replace") if last_file.is_file() else ""
        )
        if not answer.strip() and messages:
            answer = messages[-1]
        broken = sandbox_failures(steps)
        if broken:
            return replace(
                done,
                error=f"codex's sandbox ({self.conf.sandbox}) could not run commands "
                f"({len(broken)} failed): {clip(broken[-1], 400, CLIPPED)}; fix the sandbox "
                "(bubblewrap) on this machine, or choose codex.sandbox: "
                "danger-full-access where the workspace is already isolated",
                error_kind="sandbox",
            )
        if failures and not completed:
            message = clip(failures[-1].strip(), 800, CLIPPED)
            return replace(
                done, error=f"codex turn failed: {message}", error_kind=classify(message)
            )
        if result.returncode not in (0, None):
            detail = result.stderr_tail() or (clip(failures[-1], 800, CLIPPED) if failures else "")
            traj = self.failure(result, detail or None)
            return replace(done, error=traj.error, error_kind=traj.error_kind)
        if not events:
            return replace(
                done,
                error="codex printed no JSON events: " + (tail(result.stdout, 400) or "no output"),
                error_kind="bad_output",
            )
        if not answer.strip() and not completed:
            stray = "\n".join(
                line
                for line in result.stdout.splitlines()
                if line.strip() and not line.lstrip().startswith("{")
            )
            return replace(
                done,
                error="codex finished without completing a turn or a final "
                "message" + (f": {tail(stray, 400)}" if stray else ""),
                error_kind="bad_output",
            )
        return replace(done, answer=answer.strip("\n"))
