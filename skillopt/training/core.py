"""What every part of a training run shares: the run's components, its checkpoint
state, its observers and its clock (`RunCore`). The loop (`training/loop`), a step
(`training/step`), the gate (`training/decide`) and the epoch's end
(`training/epoch`) each hold the same core.

Invariants:
- The state changes only through `TrainState`'s methods, and is saved
  (`checkpoint`) with the accounting read from the store's ledger.
- Every event goes to `events.jsonl` and then to each observer; an observer that
  raises is logged and ignored: observers never break training.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from skillopt.config import Settings
from skillopt.errors import SystemicFailure
from skillopt.models.base import Model
from skillopt.optimize.base import (
    CallsModel,
    Optimizer,
    Proposal,
    RunContext,
    SlowUpdater,
    TextResult,
)
from skillopt.optimize.schedule import steps_per_epoch
from skillopt.rollouts.budget import Guard
from skillopt.rollouts.engine import Rollout, RolloutEngine, RolloutEvent
from skillopt.rollouts.watch import HOPELESS
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.store.audit import Audit
from skillopt.suite.task import Suite, Task
from skillopt.training.checkpoint import Accounting
from skillopt.training.events import (
    RolloutDone,
    Stage,
    TrainEvent,
    TrainObserver,
    event_json,
    event_name,
)
from skillopt.training.state import TrainState
from skillopt.training.steps import StepRecord

log = logging.getLogger("skillopt")


class RunCore:
    """One run's components and state, and the plumbing its parts share."""

    def __init__(
        self,
        *,
        suite: Suite,
        settings: Settings,
        engine: RolloutEngine,
        optimizer: Optimizer,
        audit: Audit,
        run: RunDir,
        state: TrainState,
        skill_root: Any,
        observers: Sequence[TrainObserver],
        guard: Guard | None,
    ):
        self.suite = suite
        self.s = settings
        self.engine = engine
        self.optimizer = optimizer
        self.audit = audit
        self.run_dir = run
        self.state = state
        self.skill_root = skill_root
        self.observers = list(observers)
        self.guard = guard
        # whether the optimizer's proposals are model calls (a budget counts them)
        self.calls_model = isinstance(optimizer, CallsModel) and isinstance(optimizer.model, Model)
        self.train = suite.split("train")
        self.val = suite.split("val")
        self.test = suite.split("test")
        # `--part both`: the description trains on the suite's trigger queries
        self.triggers = suite.trigger_suite if settings.part == "both" else None
        trig = self.triggers.tasks if self.triggers is not None else ()
        self.trigger_train = [t for t in trig if t.split == "train"]
        self.trigger_val = [t for t in trig if t.split == "val"]
        self.trigger_test = [t for t in trig if t.split == "test"]
        self.tasks = {t.id: t for t in (*suite.tasks, *trig)}
        self.memory = state.memory
        self.per_epoch = steps_per_epoch(len(self.train), settings.batch_size) + (
            steps_per_epoch(len(self.trigger_train), settings.batch_size) if trig else 0
        )
        self.total_steps = self.per_epoch * settings.epochs
        self._stage = ""
        self._began = time.monotonic()  # when the step in progress began
        engine.subscribe(self._forward_rollout)

    def train_like(self, batch: Sequence[Task]) -> list[Task]:
        """The training items of `batch`'s kind: the trigger queries' for a `--part
        both` description step, else the suite's."""
        if self.triggers is not None and batch and batch[0].is_trigger:
            return self.trigger_train
        return self.train

    # -- skills ------------------------------------------------------------------------
    def skill(self, text: str) -> Skill:
        """A skill text of this run, with the original skill's supporting files."""
        return Skill.parse(text, root=self.skill_root, support=self.state.support)

    @property
    def incumbent(self) -> Skill:
        return self.skill(self.state.incumbent.text)

    # -- events ------------------------------------------------------------------------
    def emit(self, event: TrainEvent) -> None:
        name = event_name(event)
        self.run_dir.event(name, **event_json(event))
        for observer in self.observers:
            try:
                observer(event)
            except Exception as exc:  # observers never break training
                log.warning("an observer failed on a %s event; ignored: %s", name, exc)
                log.debug("the observer %r failed", observer, exc_info=True)

    def _forward_rollout(self, event: RolloutEvent) -> None:
        r = event.rollout
        self.emit(
            RolloutDone(
                stage=self._stage,
                label=event.label,
                done=event.done,
                total=event.total,
                task_id=r.task_id,
                score=r.score,
                passed=r.passed if r.scored else None,
                cached=r.cached,
                scored=r.scored,
            )
        )

    def stage(self, event: Stage) -> None:
        self._stage = event.stage
        self.emit(event)

    # -- the clock ---------------------------------------------------------------------
    def begin(self) -> None:
        """A step (or a test pass) begins: `seconds` counts from now."""
        self._began = time.monotonic()

    def seconds(self) -> float:
        """Seconds since the step in progress began."""
        return round(time.monotonic() - self._began, 3)

    # -- state -------------------------------------------------------------------------
    def checkpoint(self) -> None:
        self.state.account(self.accounting())
        self.state.save(self.run_dir)

    def accounting(self) -> Accounting:
        """What the run has spent, read from the store's ledger, where every paid rollout
        and optimizer call is written as it happens: true after any crash, unlike a
        counter kept in the checkpoint."""
        spend = self.engine.store.spend(self.run_dir.run_id)
        return Accounting.from_ledger(spend, self.state.steps)

    def record(self, record: StepRecord) -> None:
        """The step is done: its record is kept and its pending replies are spent."""
        self.state.record(record)

    # -- calls -------------------------------------------------------------------------
    def rollouts(
        self, skill: Skill, tasks: list[Task], label: str, samples: int = 1
    ) -> list[Rollout]:
        return self.engine.run(skill, tasks, samples=samples, label=label)

    def context(self) -> RunContext:
        """What the optimizer is told about the target and where the run stands (an
        epoch-end update takes a step number of its own)."""
        slow = self.s.slow_update and isinstance(self.optimizer, SlowUpdater)
        last = self.total_steps + (self.s.epochs if slow else 0)
        val = self.state.incumbent.val
        return RunContext.of(self.engine.harness, total_steps=last, epochs=self.s.epochs, val=val)

    def spend(self, where: str, calls: int = 0) -> None:
        """Check the budget before `calls` optimizer calls (or, with none, before a
        step starts: the time limit); raises `BudgetExceeded`."""
        if self.guard is not None:
            self.guard.before(calls=calls if self.calls_model else 0, where=where)

    def stop_if_hopeless(self, results: Sequence[Proposal | TextResult]) -> None:
        """An optimizer failure no retry can fix (a bad key, no quota, no such model)
        stops the run before it spends more: every later call would fail the same way.
        Nothing of the step is recorded, so `--resume` asks again once it is fixed."""
        failed = next((r for r in results if r.error_kind in HOPELESS), None)
        if failed is None:
            return
        self.checkpoint()
        raise SystemicFailure(
            f"stopped: the optimizer {self.optimizer.name} cannot be used "
            f"({failed.error_kind}): {failed.skipped}. Nothing more was spent "
            "on it; fix the cause and run again"
        )
