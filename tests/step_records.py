"""Builders for the training loop's step records (`skillopt.training.steps`), for
tests that hand-build a run's history: each takes the fields a test cares about
and fills the rest with what a step that did nothing would record."""

from __future__ import annotations

from typing import Any

from skillopt.training.steps import (
    BatchRecord,
    GateRecord,
    InitialRecord,
    SkippedSlowUpdate,
    SlowUpdateRecord,
)


def gate(**fields: Any) -> GateRecord:
    """A gate decision; unset numbers are None, unset task lists empty."""
    given: dict[str, Any] = {
        "accepted": False,
        "reason": "",
        "mode": "strict",
        "n": 0,
        "incumbent_mean": None,
        "candidate_mean": None,
        "delta": None,
        "p_value": None,
        "fail_to_pass": (),
        "pass_to_fail": (),
        "per_task": {},
    }
    return GateRecord(**(given | fields))


def initial(val: float = 0.0, **fields: Any) -> InitialRecord:
    return InitialRecord(**({"step": 0, "epoch": 0, "val": val, "n": 0, "commit": ""} | fields))


def batch(step: int, decision: str = "no_candidate", **fields: Any) -> BatchRecord:
    """A step on a batch (`epoch` 1 unless given)."""
    given: dict[str, Any] = {
        "step": step,
        "epoch": 1,
        "budget": 0,
        "train_mean": None,
        "failures": 0,
        "successes": 0,
        "unscored": 0,
        "proposals": [],
        "dropped": [],
        "apply": [],
        "decision": decision,
        "reason": "",
    }
    return BatchRecord(**(given | fields))


def slow_update(step: int, epoch: int, decision: str, **fields: Any) -> SlowUpdateRecord:
    given: dict[str, Any] = {
        "step": step,
        "epoch": epoch,
        "guidance": None,
        "skipped": None,
        "calls": 0,
        "decision": decision,
        "reason": "",
    }
    return SlowUpdateRecord(**(given | fields))


def skipped_slow_update(step: int, epoch: int, reason: str = "") -> SkippedSlowUpdate:
    return SkippedSlowUpdate(step=step, epoch=epoch, reason=reason)
