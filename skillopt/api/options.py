"""The keywords the entry points share, written once: `TrainOptions` is the one
list of the settings `train` and `plan` take (each a `Settings` field; a test
fails when they drift), and the helpers that turn keywords into the settings'
flags layer and names-or-objects into components.

Invariant: a keyword left out (or None) is no flag at all, so the layers below it
(skillopt.yaml, the suite's `defaults:`, `SKILLOPT_*`) decide; nothing heavy is
imported here before a function runs (`import skillopt.api` stays cheap).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from skillopt.harness.base import Harness
    from skillopt.models.base import Model
    from skillopt.optimize.base import Optimizer
    from skillopt.optimize.gate import Gate
    from skillopt.training.session import Components

Section = Mapping[str, Any]  # a partial settings section: {"isolate": False}
Executor = Literal["local", "ray"]


class BudgetOptions(TypedDict, total=False):
    """Spend control (`skillopt.rollouts.budget`): what a run may spend, every role
    together; None is no limit."""

    budget_usd: float | None
    max_target_rollouts: int | None
    max_optimizer_calls: int | None
    time_limit: float | str | None  # seconds, or e.g. '45m', '2h'
    allow_unpriced: bool | None


class TrainOptions(BudgetOptions, total=False):
    """The settings `train` and `plan` take as keywords, each named as its `Settings`
    field (see `skillopt.config.Settings` for its meaning and default). A model, the
    harness, the optimizer and the gate may each be an object instead of a name."""

    target: str | Model | None
    harness: str | Harness | None
    judge: str | Model | None
    optimizer: str | Optimizer | None
    part: Literal["body", "description", "both"] | None
    optimizer_concurrency: int | None
    gate: str | Gate | None
    epochs: int | None
    batch_size: int | None
    minibatch_size: int | None
    lr: int | None
    min_lr: int | None
    schedule: Literal["constant", "linear", "cosine"] | None
    min_delta: float | None
    max_regressions: int | None
    alpha: float | None
    gate_full: bool | None
    allow_long_skill: bool | None
    strict_splits: bool | None
    slow_update: bool | None
    stall_patience: int | None
    seed: int | None
    samples: int | None
    concurrency: int | None
    executor: Executor | None
    store: str | Path | None
    run_dir: str | Path | None
    agent: Section | None
    claude_code: Section | None
    codex: Section | None
    command: Section | None


TRAIN_OPTIONS: tuple[str, ...] = tuple(TrainOptions.__annotations__)
ROLES = ("target", "harness", "judge", "optimizer", "gate")  # a name, or an object


def overrides(**values: object) -> dict[str, Any]:
    """The flags layer of the settings: every keyword that was given."""
    return {k: v for k, v in values.items() if v is not None}


def _kinds() -> dict[str, type[Any]]:
    """Each role's contract (imported when a role is checked, not with the api)."""
    from skillopt.harness.base import Harness
    from skillopt.models.base import Model
    from skillopt.optimize.base import Optimizer
    from skillopt.optimize.gate import Gate

    return {
        "target": Model,
        "harness": Harness,
        "judge": Model,
        "optimizer": Optimizer,
        "gate": Gate,
    }


def roles(**values: object) -> tuple[dict[str, str | None], dict[str, Any]]:
    """Each role's value split into (its name, for the settings and reports; the
    object, when one was passed instead of a name). A value that is neither a name
    nor an object with the role's contract is one `InputError`."""
    from skillopt.eval.context import object_name

    # the contracts are imported only when an object needs checking against one
    given = [v for v in values.values() if v is not None and not isinstance(v, str)]
    kinds = _kinds() if given else {}
    names: dict[str, str | None] = {}
    objects: dict[str, Any] = {}
    for role, value in values.items():
        if value is None or isinstance(value, str):
            names[role], objects[role] = value, None
            continue
        kind = kinds[role]
        if not isinstance(value, kind):
            from skillopt.errors import InputError

            raise InputError(
                f"{role} must be a name, or an object with the {kind.__name__} contract "
                f"(skillopt.{kind.__name__}); got {type(value).__name__}",
                field=role,
            )
        names[role], objects[role] = object_name(value), value
    return names, objects


def train_inputs(caller: str, options: Mapping[str, Any]) -> tuple[dict[str, Any], Components]:
    """(settings overrides, components) from `train`'s or `plan`'s keywords; a
    keyword that is not a train setting is a TypeError, as for any function."""
    from skillopt.training.session import Components

    unknown = [key for key in options if key not in TRAIN_OPTIONS]
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    names, objects = roles(**{role: options.get(role) for role in ROLES})
    components = Components(**objects)
    if objects["gate"] is not None:  # settings.gate names only registered gates
        names["gate"] = None
    paths = {key: str(options[key]) for key in ("store", "run_dir") if options.get(key) is not None}
    rest = {key: value for key, value in options.items() if key not in ROLES and key not in paths}
    return overrides(**names, **rest, **paths), components
