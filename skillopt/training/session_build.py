"""The one place a training run is assembled: `RunSession.open` builds the context
(store, harness, judge metered from the start), the spend ledger, the optimizer,
the run directory (made, or opened to continue), the git audit, the checkpoint,
the budget guard, the rollout engine and the trainer, in that order, each given
everything it needs at construction. `start`, `resume` and `replay` differ only in
what they pass.

Invariants: nothing is attached to an object after it is built; the store is
opened only once every name has resolved, and the run directory only once the
budget has accepted every price; whatever was opened is closed again when a later
step fails. An `offline` session (a replay) reaches no model: its engine and its
optimizer's stored replies are offline from construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt.config import Settings
from skillopt.eval.context import (
    Context,
    Warn,
    budget_guard,
    prepare,
    run_priors,
    tell,
    unpriced_roles,
)
from skillopt.harness import Harness
from skillopt.harness.base import InstallsLibrary
from skillopt.models.base import Model
from skillopt.optimize.base import Optimizer
from skillopt.optimize.gate import Gate
from skillopt.rollouts.budget import Budget, Guard, refuse_unpriced
from skillopt.rollouts.engine import RolloutEngine
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.skill.library import Library
from skillopt.store.audit import Audit
from skillopt.suite.task import Suite
from skillopt.training.events import TrainObserver
from skillopt.training.loop import Trainer
from skillopt.training.session_parts import OptimizerChoice, SpendLedger
from skillopt.training.state import TrainState


@dataclass(frozen=True)
class NewRun:
    """A run to make: `run_id` under `runs_dir`, the skill's history kept beside
    it. run.yaml records where the skill and the suite were read from, the
    objects passed in code by name (resuming needs the same kinds again) and the
    suite's warnings (`suite_warnings`, which the summary and report repeat)."""

    runs_dir: Path
    run_id: str
    skill: str
    suite: str
    objects: dict[str, str] = field(default_factory=dict)
    suite_warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checkpoint:
    """A run to continue from its checkpoint. `rewrite_config`: the settings changed
    (a larger budget), so run.yaml records the ones it continues with."""

    run: RunDir
    config: dict[str, Any]
    state: TrainState
    rewrite_config: bool = False


@dataclass(frozen=True)
class RunSession:
    """Everything one training run needs, built together by `open`; `close` puts it
    away."""

    ctx: Context
    run: RunDir
    audit: Audit
    config: dict[str, Any]
    state: TrainState
    optimizer: Optimizer
    guard: Guard | None
    engine: RolloutEngine
    trainer: Trainer

    @classmethod
    def open(
        cls,
        suite: Suite,
        settings: Settings,
        *,
        skill: Skill,
        skill_dir: Path,
        where: NewRun | Checkpoint,
        optimizer: Optimizer | OptimizerChoice,
        target: Model | None = None,
        harness: Harness | None = None,
        judge: Model | None = None,
        gate: Gate | None = None,
        observers: Sequence[TrainObserver] = (),
        offline: bool = False,
        recorded_harness: Mapping[str, Any] | None = None,
        warnings: Sequence[object] = (),
        warn: Warn | None = None,
    ) -> RunSession:
        """Build the session of the run `where` names, training `skill` (the run's
        initial skill, in `skill_dir`). `optimizer` is an object passed in code, or
        the settings' choice, built here with the run's ledger. `warnings` are told
        to `warn` once the context is ready; `offline`: a replay, whose harness takes
        what only running its program would tell from `recorded_harness`."""
        run_id = where.run_id if isinstance(where, NewRun) else where.run.run_id
        run_path = where.runs_dir / run_id if isinstance(where, NewRun) else where.run.path
        ctx = prepare(
            suite,
            settings,
            skills=[skill],
            target=target,
            harness=harness,
            judge=judge,
            keep_dir=run_path / "workspaces",  # failed tasks' workspaces stay with the run
            check=not offline,  # a replay runs nothing
            recorded_harness=recorded_harness,
            ledger=run_id,
            warn=warn,
        )
        opened: list[RunDir | RolloutEngine] = []
        try:
            tell(warn, [*warnings])
            # what a call or rollout in flight is counted at (and a budget projects with)
            priors = run_priors(ctx, skill, optimizer)
            if isinstance(optimizer, OptimizerChoice):
                ledger = SpendLedger(ctx.store, run_id, offline, priors)
                optimizer = optimizer.build(settings, ledger)
            if isinstance(where, NewRun) or where.state.status != "finished":
                # a finished run calls no model again
                tell(warn, refuse_unpriced(Budget.of(settings), unpriced_roles(ctx, optimizer)))
            if isinstance(where, NewRun):
                run, audit, config, state = _create(where, settings, skill, skill_dir)
            else:
                run, config, state = where.run, where.config, where.state
                audit = Audit.open(config["audit"]["repo"], run_id, config["audit"]["skill_path"])
                if where.rewrite_config:
                    config = {**config, "settings": settings.model_dump()}
                    run.write_config(config)
            opened.append(run)
            initial = Skill.parse(state.initial.text)
            guard = budget_guard(ctx, run_id, initial, optimizer, known=priors)
            engine = ctx.engine(run_id=run_id, guard=guard, offline=offline, priors=priors)
            opened.append(engine)
            trainer = Trainer(
                suite=suite,
                settings=settings,
                engine=engine,
                optimizer=optimizer,
                audit=audit,
                run=run,
                state=state,
                skill_root=skill_dir,
                observers=observers,
                gate=gate,
                guard=guard,
                library=ctx.harness.library
                if isinstance(ctx.harness, InstallsLibrary)
                else Library(),
            )
        except BaseException:
            for thing in reversed(opened):
                thing.close()
            ctx.store.close()
            raise
        return cls(ctx, run, audit, config, state, optimizer, guard, engine, trainer)

    def close(self) -> None:
        """Stop the engine, close the run's event log and the store."""
        try:
            self.engine.close()
        finally:
            try:
                self.run.close()
            finally:
                self.ctx.store.close()


def _create(
    where: NewRun, settings: Settings, skill: Skill, skill_dir: Path
) -> tuple[RunDir, Audit, dict[str, Any], TrainState]:
    """A new run's directory, git audit, run.yaml and first checkpoint."""
    run = RunDir.create(where.runs_dir, where.run_id)
    audit = Audit.create(skill_dir, where.runs_dir, run.run_id)
    config: dict[str, Any] = {
        "run_id": run.run_id,
        "skill": where.skill,
        "suite": where.suite,
        "settings": settings.model_dump(),
        "audit": {"repo": audit.location, "branch": audit.branch, "skill_path": audit.skill_path},
    }
    if where.objects:
        config["objects"] = dict(where.objects)
    if where.suite_warnings:
        config["suite_warnings"] = list(where.suite_warnings)
    run.write_config(config)
    state = TrainState.new(skill)
    state.save(run)
    return run, audit, config, state
