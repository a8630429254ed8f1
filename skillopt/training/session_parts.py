"""What a run session builds its optimizer from: the optimizer the settings name
(`OptimizerChoice`), resolved before anything runs, and the run's spend ledger
(`SpendLedger`), which its model calls go to.

Invariant: the choice is made first, so a bad optimizer name costs nothing (no
store, no run directory); the optimizer itself is built once, when the run's store
is open and its id known, with its ledger given at construction: nothing is
attached to it later.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillopt.config import Settings
from skillopt.errors import InputError
from skillopt.models.base import Model, Usage
from skillopt.models.metered import MeteredModel
from skillopt.models.resolve import resolve_model
from skillopt.models.stored import StoredModel
from skillopt.optimize.base import Optimizer
from skillopt.optimize.describe import WritesDescriptions
from skillopt.plugins import Entry
from skillopt.rollouts.budget import Priors, Spent
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.task import Suite


@dataclass(frozen=True)
class SpendLedger:
    """Where a run's optimizer calls are written: the store's spend ledger under
    `run_id`, each call reserved before it is sent (at the estimate `priors` give)
    and settled when it returns, and the replies it used (for `skillopt bundle`).
    `offline` (a replay): the optimizer's replies come from the store only."""

    store: RolloutStore
    run_id: str
    offline: bool = False
    priors: Priors = Priors()

    def reserve(self) -> int:
        """One optimizer call about to be sent, recorded as spent at its estimate."""
        spent = Spent.from_ledger(self.store.spend(self.run_id))
        return self.store.reserve(self.run_id, "optimizer", "call", self.priors.call(spent))

    def settle(self, reservation: int, calls: int, usage: Usage, cost: float | None) -> None:
        """The reserved call returned: what it cost."""
        self.store.settle(reservation, calls, usage, cost)

    def __call__(self, calls: int, usage: Usage, cost: float | None) -> None:
        """A `Meter`: one optimizer call, answered or failed."""
        self.store.record_call(
            self.run_id,
            "optimizer",
            "call",
            calls,
            usage.input_tokens,
            usage.output_tokens,
            cost,
            cached_input_tokens=usage.cached_input_tokens,
        )

    def replies(self) -> RolloutStore:
        """The store the optimizer's replies are kept in and served from."""
        return self.store

    def used(self, key: str, served: bool) -> None:
        """An optimizer reply the run used: noted for its bundle; one served from the
        store is a call not paid for, counted as such."""
        self.store.note_uses(self.run_id, "reply", [key])
        if served:
            self.store.record_call(self.run_id, "optimizer", "cached", 0)


@dataclass(frozen=True)
class OptimizerChoice:
    """The optimizer called `name`, resolved but not built: a registered one (its
    `entry`, whose factory is `(settings, meter) -> Optimizer`), or the LLM optimizer backed by `model`."""

    name: str
    entry: Entry | None = None
    model: Model | None = None

    def build(self, settings: Settings, ledger: SpendLedger | None = None) -> Optimizer:
        """The optimizer, its every model call sent to `ledger` as it happens and its
        replies kept in (and served from) the run's store, when a ledger is given."""
        from skillopt.optimize.reflect import LLMOptimizer

        if self.entry is not None:
            optimizer: Optimizer = self.entry.build(
                Optimizer, "has no `name` and `propose(request)`", settings, ledger
            )
            return optimizer
        assert self.model is not None  # `choose_optimizer` gives one or the other
        model: Model = self.model
        if ledger is not None:
            model = StoredModel(
                MeteredModel(model, ledger),
                ledger.replies,
                on_used=ledger.used,
                offline=ledger.offline,
                salt=f"seed:{settings.seed}",
            )
        return LLMOptimizer(model)


def choose_optimizer(name: str | None, settings: Settings) -> OptimizerChoice:
    """The optimizer called `name`: a registered one (`exemplars`, a plugin's), or an
    LLM optimizer backed by the model of that name. An unknown name, or a model
    without its key, raises here, before anything runs."""
    from skillopt.plugins import registry

    if not name:
        raise InputError(
            "no optimizer: pass --optimizer MODEL, or set `optimizer:` in "
            "skillopt.yaml or in the suite's `defaults:`",
            field="optimizer",
        )
    entry = registry().find("optimizer", name)
    if entry is not None:
        entry.load()  # a plugin that cannot be imported fails here, before anything runs
        return OptimizerChoice(name, entry=entry)
    model = resolve_model(name, settings.model_settings(name), role="optimizer")
    return OptimizerChoice(name, model=model)


def build_optimizer(
    name: str | None, settings: Settings, ledger: SpendLedger | None = None
) -> Optimizer:
    """The optimizer called `name` (see `choose_optimizer`), built at once."""
    return choose_optimizer(name, settings).build(settings, ledger)


def refuse_part(suite: Suite, settings: Settings, optimizer: object) -> None:
    """The trained part (`settings.part`) against the suite and the optimizer, refused
    in one line before anything runs: the description trains on a trigger suite with
    an optimizer that writes descriptions, the body on a task suite, both on a task
    suite that names its trigger suite (`triggers: FILE`)."""
    part = settings.part
    suite_is_triggers = suite.is_triggers
    if part == "both" and (suite_is_triggers or suite.trigger_suite is None):
        raise InputError(
            "--part both trains the body on tasks and the description on trigger "
            "queries: give a task suite that names its trigger suite with "
            "`triggers: FILE`"
            + (" (this suite holds trigger queries)" if suite_is_triggers else ""),
            path=suite.path,
            field="triggers",
        )
    if part == "body" and suite_is_triggers:
        raise InputError(
            "a trigger suite scores whether the agent loads the skill, which its "
            "description decides and body edits cannot change: train it with --part "
            "description, or train the body on a task suite",
            field="part",
        )
    if part == "description" and not suite_is_triggers:
        raise InputError(
            "--part description trains on a trigger suite (items with query and "
            "should_trigger), and this suite holds tasks: give a trigger suite, or "
            "train the body with --part body",
            field="part",
        )
    if part in ("description", "both") and optimizer is not None:
        built = optimizer.build(settings) if isinstance(optimizer, OptimizerChoice) else optimizer
        if not isinstance(built, WritesDescriptions):
            name = optimizer.name if isinstance(optimizer, OptimizerChoice) else built
            raise InputError(
                f"the optimizer {name} cannot write a description (it edits the body): "
                f"use an LLM optimizer (--optimizer MODEL) with --part {part}",
                field="optimizer",
            )
