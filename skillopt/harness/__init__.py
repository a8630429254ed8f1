"""Harnesses: how the frozen agent runs one task (see `base.Harness`)."""

from __future__ import annotations

from skillopt.errors import InputError
from skillopt.harness.base import Harness, Trajectory
from skillopt.harness.chat import ChatHarness
from skillopt.models.base import Model

HARNESSES = ("chat",)


def build_harness(name: str, target: Model) -> Harness:
    if name == "chat":
        return ChatHarness(target)
    raise InputError(f"unknown harness {name!r}; choose one of: {', '.join(HARNESSES)}",
                     field="harness")


__all__ = ["ChatHarness", "HARNESSES", "Harness", "Trajectory", "build_harness"]
