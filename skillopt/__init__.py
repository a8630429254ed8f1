"""skillopt: train agent skill documents against scored tasks.

The library is complete on its own; the `skillopt` command is a thin shell over
it. The public API is what this module exports: the entry points (`evaluate`,
`train`, `plan`, `resume`, `validate`, `lint`, `export`), the core types, and the
contracts a user implements to bring their own model, harness, scorer, optimizer or
gate (pass the object in place of a name, or register it from a plugin: see
`skillopt.plugins`).

Importing `skillopt` is cheap: each name loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillopt._util.version import __version__ as __version__
    from skillopt.api import (
        adopt,
        bundle,
        evaluate,
        export,
        lint,
        plan,
        replay,
        resume,
        train,
        validate,
    )
    from skillopt.config import Settings
    from skillopt.errors import BadSkill, InputError, MissingCredentials, SkilloptError
    from skillopt.eval.checks import ValidateResult
    from skillopt.eval.results import EvalResult, SplitResult
    from skillopt.harness.base import (
        Cancellable,
        Harness,
        ReleasesWorkspaces,
        Trajectory,
        WorkspaceHarness,
    )
    from skillopt.models.base import Completion, Model, Usage
    from skillopt.optimize.base import (
        NoteTaker,
        Optimizer,
        Proposal,
        ProposalRequest,
        SlowUpdater,
        TextResult,
    )
    from skillopt.optimize.gate import Decision, Gate
    from skillopt.optimize.plan import Plan
    from skillopt.plugins import Registry
    from skillopt.rollouts.budget import BudgetExceeded
    from skillopt.rollouts.outcomes import TaskOutcome
    from skillopt.rollouts.record import Rollout
    from skillopt.skill.document import Skill
    from skillopt.skill.edits import Edit
    from skillopt.suite.scorers import Score, ScoreContext, Scorer
    from skillopt.suite.task import Suite, Task
    from skillopt.training.session import TrainResult

_EXPORTS = {
    "skillopt._util.version": ("__version__",),
    "skillopt.api": (
        "adopt",
        "bundle",
        "evaluate",
        "export",
        "lint",
        "plan",
        "replay",
        "resume",
        "train",
        "validate",
    ),
    "skillopt.rollouts.budget": ("BudgetExceeded",),
    "skillopt.config": ("Settings",),
    "skillopt.errors": ("BadSkill", "InputError", "MissingCredentials", "SkilloptError"),
    "skillopt.eval.results": ("EvalResult", "SplitResult"),
    "skillopt.rollouts.outcomes": ("TaskOutcome",),
    "skillopt.harness.base": (
        "Cancellable",
        "Harness",
        "ReleasesWorkspaces",
        "Trajectory",
        "WorkspaceHarness",
    ),
    "skillopt.models.base": ("Completion", "Model", "Usage"),
    "skillopt.optimize.base": (
        "NoteTaker",
        "Optimizer",
        "Proposal",
        "ProposalRequest",
        "SlowUpdater",
        "TextResult",
    ),
    "skillopt.optimize.gate": ("Decision", "Gate"),
    "skillopt.optimize.plan": ("Plan",),
    "skillopt.plugins": ("Registry",),
    "skillopt.rollouts.record": ("Rollout",),
    "skillopt.skill.document": ("Skill",),
    "skillopt.skill.edits": ("Edit",),
    "skillopt.suite.scorers": ("Score", "ScoreContext", "Scorer"),
    "skillopt.suite.task": ("Suite", "Task"),
    "skillopt.training.session": ("TrainResult",),
    "skillopt.eval.checks": ("ValidateResult",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'skillopt' has no attribute {name!r}")
    value = vars(importlib.import_module(module))[name]
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "BadSkill",
    "BudgetExceeded",
    "Cancellable",
    "Completion",
    "Decision",
    "Edit",
    "EvalResult",
    "Gate",
    "Harness",
    "InputError",
    "MissingCredentials",
    "Model",
    "NoteTaker",
    "Optimizer",
    "Plan",
    "Proposal",
    "ProposalRequest",
    "Registry",
    "ReleasesWorkspaces",
    "Rollout",
    "Score",
    "ScoreContext",
    "Scorer",
    "Settings",
    "Skill",
    "SkilloptError",
    "SlowUpdater",
    "SplitResult",
    "Suite",
    "Task",
    "TaskOutcome",
    "TextResult",
    "TrainResult",
    "Trajectory",
    "Usage",
    "ValidateResult",
    "WorkspaceHarness",
    "adopt",
    "bundle",
    "evaluate",
    "export",
    "lint",
    "plan",
    "replay",
    "resume",
    "train",
    "validate",
    "__version__",
]
