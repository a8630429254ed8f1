"""Harnesses: how the frozen agent runs one task (see `base.Harness`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.errors import InputError
from skillopt.harness.base import (
    Cancellable,
    Describes,
    Harness,
    ReleasesWorkspaces,
    ShowsTask,
    Trajectory,
    WorkspaceHarness,
)
from skillopt.harness.chat import ChatHarness
from skillopt.models.base import Model

if TYPE_CHECKING:
    from skillopt.config import Settings


def takes_model(name: str) -> bool:
    """Whether the harness `name` calls a resolved target `Model` itself (chat), rather
    than handing the target's name to a program (the agent harnesses). Unknown
    names: False (building the harness then says it is unknown)."""
    from skillopt.plugins import registry

    entry = registry().find("harness", name)
    return bool(entry is not None and entry.options.get("takes_model"))


def build_harness(
    settings: Settings, target: Model | None = None, *, keep_dir: Path | None = None
) -> Harness:
    """The harness `settings.harness` names (a built-in or a plugin's). `target` is
    the resolved target for a harness that takes a model (chat); `keep_dir` is where
    kept workspaces go (default `<run_dir>/workspaces`), made absolute against this
    process's working directory."""
    from skillopt.plugins import registry

    reg = registry()
    name = settings.harness
    entry = reg.find("harness", name)
    if entry is None:
        raise InputError(
            f"unknown harness {name!r}; choose one of: {', '.join(reg.names('harness'))}",
            field="harness",
        )
    built: Harness = entry.build(
        Harness,
        "lacks the Harness contract (name, version, fingerprint, check, run)",
        settings,
        target,
        # absolute here, on the driver: a copy of the harness on a Ray worker would
        # resolve a relative path against the worker's own working directory
        keep_dir.resolve() if keep_dir is not None else None,
    )
    return built


__all__ = [
    "Cancellable",
    "ChatHarness",
    "Describes",
    "Harness",
    "ReleasesWorkspaces",
    "ShowsTask",
    "Trajectory",
    "WorkspaceHarness",
    "build_harness",
    "takes_model",
]
