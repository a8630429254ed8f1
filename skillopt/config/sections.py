"""The settings sections of the harnesses and of each model (`models:`, `agent:`,
`claude_code:`, `codex:`, `command:`): each a pydantic model that forbids unknown
keys, so a typo in any of them fails naming the section and key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ModelSettings(BaseModel):
    """How to reach one model. `params` are extra request arguments (litellm's)."""

    model_config = ConfigDict(extra="forbid")
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(None, gt=0)
    timeout: float = Field(120.0, gt=0)
    retries: int = Field(4, ge=0)
    backoff: float = Field(1.0, ge=0)
    params: dict[str, Any] = Field(default_factory=dict)
    prompt_cache: bool = Field(
        True,
        description="mark a long system prompt (the skill) for the provider's prompt "
        "cache where the provider needs a marker (Anthropic); never in the fingerprint",
    )
    client: Literal["auto", "sdk", "litellm"] = Field(
        "auto",
        description="how requests are sent: sdk: the provider's own SDK (openai/…, "
        "anthropic/…); litellm: through litellm; auto: the SDK where it can send the "
        "model's settings as litellm would, else litellm. Never in the fingerprint: "
        "both send the same request",
    )


class AgentSettings(BaseModel):
    """`agent:` — how the agent harnesses (claude-code, codex, command) run a task."""

    model_config = ConfigDict(extra="forbid")
    timeout: float = Field(600.0, gt=0, description="seconds per task; the process group is killed")
    env: list[str] = Field(
        default_factory=list, description="extra environment variables passed to the agent"
    )
    keep_workspaces: Literal["failed", "all", "none"] = "failed"
    trace: bool = Field(True, description="record the agent's tool steps (claude: stream-json)")
    invoke: Literal["auto", "explicit"] = Field(
        "auto",
        description="auto: the agent picks the skill by its description; explicit: "
        "the prompt starts with /<name> (claude) or $<name> (codex)",
    )
    isolate: bool = Field(
        True,
        description="claude-code and codex: each rollout runs with a private HOME (and "
        "CODEX_HOME) holding only what the CLI needs to reach its provider, so "
        "the user's CLAUDE.md, AGENTS.md, personal skills, settings, sessions "
        "and history neither reach a rollout nor receive anything from it; "
        "false: the CLI runs with the user's own home",
    )
    pid_namespace: Literal["auto", "off"] = Field(
        "auto",
        description="auto: each agent runs in its own PID namespace with its own /proc "
        "when the platform allows (Linux, util-linux unshare), so it cannot "
        "see skillopt or any other process; off: never",
    )
    library: list[str] = Field(
        default_factory=list,
        description="other skills installed beside the one under test (claude-code, "
        "codex, router), so the agent chooses among them as at home: folders of "
        "skills (DIR/<name>/SKILL.md) or one skill folder each, or `user` for the "
        "user's own (~/.claude/skills, the project's .claude/skills, ~/.agents/skills); "
        "read-only, copied into each rollout, part of its fingerprint",
    )

    @field_validator("library", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        """`library: user` (one entry) reads as `library: [user]`."""
        return [value] if isinstance(value, str) else value


class ClaudeCodeSettings(BaseModel):
    """`claude_code:` — the `claude -p` invocation."""

    model_config = ConfigDict(extra="forbid")
    binary: str = "claude"
    permission_mode: Literal[
        "default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions"
    ] = "acceptEdits"
    allowed_tools: list[str] | None = None
    disallowed_tools: list[str] | None = None
    tools: list[str] | None = None
    max_turns: int | None = Field(30, ge=1)
    max_retries: int = Field(
        2,
        ge=0,
        description="CLAUDE_CODE_MAX_RETRIES for each rollout: "
        "how often claude retries a failed API call "
        "(its own default, 10, turns a bad key into "
        "minutes of waiting)",
    )
    args: list[str] = Field(default_factory=list, description="extra arguments, passed as is")


class CodexSettings(BaseModel):
    """`codex:` — the `codex exec` invocation."""

    model_config = ConfigDict(extra="forbid")
    binary: str = "codex"
    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    args: list[str] = Field(default_factory=list, description="extra arguments, passed as is")


class CommandSettings(BaseModel):
    """`command:` — any program as the agent, given as an argv template."""

    model_config = ConfigDict(extra="forbid")
    argv: list[str] | str | None = None
    output: str = Field(
        "stdout", description="'stdout', or a file the program writes, relative to the workspace"
    )
    skills_dir: str = Field(
        ".agents/skills", description="where the skill is installed in the workspace"
    )
    version: str = Field(
        "1", description="change it when the program changes, so stored rollouts are not reused"
    )
