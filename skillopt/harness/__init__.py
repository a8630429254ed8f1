"""Harnesses: how the frozen agent runs one task (see `base.Harness`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillopt.errors import InputError
from skillopt.harness.base import Harness, Trajectory, WorkspaceHarness
from skillopt.harness.chat import ChatHarness
from skillopt.models.base import Model

if TYPE_CHECKING:
    from skillopt.config import Settings

HARNESSES = ("chat", "claude-code", "codex", "command")
AGENT_HARNESSES = HARNESSES[1:]  # run a program in a workspace; the target is its --model


def build_harness(settings: Settings, target: Model | None = None) -> Harness:
    """The harness `settings.harness` names. `chat` needs the resolved target model;
    the agent harnesses hand the target's name to their CLI instead."""
    name = settings.harness
    if name == "chat":
        if target is None:
            raise InputError("the chat harness needs a target model", field="target")
        return ChatHarness(target)
    if name == "claude-code":
        from skillopt.harness.claude_code import ClaudeCodeHarness

        return ClaudeCodeHarness(settings)
    if name == "codex":
        from skillopt.harness.codex import CodexHarness

        return CodexHarness(settings)
    if name == "command":
        from skillopt.harness.command import CommandHarness

        return CommandHarness(settings)
    raise InputError(
        f"unknown harness {name!r}; choose one of: {', '.join(HARNESSES)}", field="harness"
    )


__all__ = [
    "AGENT_HARNESSES",
    "ChatHarness",
    "HARNESSES",
    "Harness",
    "Trajectory",
    "WorkspaceHarness",
    "build_harness",
]
