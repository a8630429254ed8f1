"""The SkillOpt loop: the baseline, then each epoch's steps in order (rollout →
reflect → merge → apply → gate → audit → memory, `training/step`), with a slow
update at each epoch end where the skill changed during the epoch and optimizer
notes owed on each epoch that a later prompt can read (`training/epoch`), then the
test split. A run that stalls (`training/stall`) stops early and finishes as usual.

Invariants:
- The incumbent only changes through the gate (`training/decide`).
- After each step the checkpoint (`state.json`, a `TrainState`) holds everything
  needed to continue: `--resume` redoes no finished step, and finished rollouts
  come back from the store.
- The optimizer sees training rollouts only; validation and test answers never
  reach it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import zip_longest
from typing import Any

from skillopt._util import display
from skillopt._util.display import NA
from skillopt.config import Settings
from skillopt.errors import NothingScored
from skillopt.eval.loading import expectations, trigger_report
from skillopt.optimize.base import Optimizer, SlowUpdater
from skillopt.optimize.gate import Gate, build_gate
from skillopt.optimize.schedule import chunks
from skillopt.rollouts.budget import BudgetExceeded, Guard
from skillopt.rollouts.engine import RolloutEngine
from skillopt.rollouts.outcomes import (
    TaskOutcome,
    mean_value,
    pass_rate,
    scored_count,
    task_outcomes,
)
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill, text_key
from skillopt.skill.library import Library
from skillopt.store.audit import Audit
from skillopt.store.trailers import StepTrailers
from skillopt.suite.task import Suite, Task
from skillopt.training.checkpoint import BudgetStop, EarlyStop, SplitScore
from skillopt.training.core import RunCore
from skillopt.training.decide import Held, Judge
from skillopt.training.description import DescriptionStep
from skillopt.training.epoch import Notes, SlowUpdate
from skillopt.training.events import (
    EpochEnd,
    Finished,
    InitialDecision,
    RunStarted,
    Stage,
    Stopped,
    TrainObserver,
)
from skillopt.training.stall import stalled
from skillopt.training.state import TrainState
from skillopt.training.step import StepRunner
from skillopt.training.steps import InitialRecord


class Trainer:
    """One training run over a checkpoint state: `run()` continues it from wherever
    the state says it is (`skillopt.training.session` builds it for a new or resumed run)."""

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
        observers: Sequence[TrainObserver] = (),
        gate: Gate | None = None,
        guard: Guard | None = None,
        library: Library = Library(),
    ):
        """`gate` decides every candidate; by default the one `settings.gate` names.
        `guard` checks the run's budget before each batch of optimizer calls (the
        engine checks it before each batch of rollouts). `library`: the skills the
        harness installs beside the trained one (read once, by the harness), which a
        description run shows the optimizer and finds collisions among."""
        self.core = RunCore(
            suite=suite,
            settings=settings,
            engine=engine,
            optimizer=optimizer,
            audit=audit,
            run=run,
            state=state,
            skill_root=skill_root,
            observers=observers,
            guard=guard,
        )
        self.s = settings
        self.state = state
        core, gate = self.core, gate if gate is not None else build_gate(settings)
        self.notes = Notes(core)
        if settings.part == "both":  # each part gated on its own items, holding the other's
            judge = Judge(core, gate, held=Held(core.trigger_val, "trigger queries", False))
            describe = Judge(core, gate, core.trigger_val, Held(core.val, "tasks", True))
            self.body: StepRunner | None = StepRunner(core, judge, self.notes)
        else:
            judge = describe = Judge(core, gate)
            self.body = StepRunner(core, judge, self.notes) if settings.part == "body" else None
        self.describe = (
            None
            if settings.part == "body"
            else DescriptionStep(core, describe, self.notes, library)
        )
        self.slow_update = SlowUpdate(core, judge)

    @property
    def incumbent(self) -> Skill:
        return self.core.incumbent

    # -- the loop ----------------------------------------------------------------------
    def run(self) -> dict[str, dict[str, Any]]:
        core, st = self.core, self.state
        core.emit(
            RunStarted(
                run_id=core.run_dir.run_id,
                steps=core.total_steps,
                epochs=self.s.epochs,
                resumed=st.status != "new",
                splits=core.suite.counts(),
            )
        )
        st.begin()
        if not st.steps:  # new, or stopped by a budget before step 0 was recorded
            self._initial()
        st.running()
        if st.stopped_early is None and st.epoch < self.s.epochs:
            self._stop_if_saturated(st.epoch)
        while st.epoch < self.s.epochs and st.stopped_early is None:
            epoch = st.epoch
            batches = self._batches(epoch)
            while st.k < len(batches) and st.stopped_early is None:
                self._stepper(batches[st.k]).run(epoch, st.k, batches[st.k])
                st.next_batch()
                self._stop_if_stalled(epoch)
                self._stop_if_saturated(epoch)
                core.checkpoint()
            if st.stopped_early is not None:
                break  # the rest of the epoch, its slow update and notes are not run
            self._end_epoch(epoch)
        result = self._finish()
        core.checkpoint()
        return result

    def _end_epoch(self, epoch: int) -> None:
        core, st = self.core, self.state
        # the slow update writes guidance into the body, which a description run keeps
        if self.s.slow_update and self.s.part != "description" and not st.slow_done:
            changed = st.incumbent.hash != st.epoch_start.hash
            self.notes.take_owed(isinstance(core.optimizer, SlowUpdater) and changed)
            self.slow_update.run(epoch)
            st.slow_update_done()
            core.checkpoint()
        if not st.notes_done and not self.notes.unread(epoch):
            # owed, in the checkpoint that ends the epoch: asked for before the next
            # optimizer call (`Notes.take_owed`), never if no call comes
            st.owe_notes(epoch + 1)
        core.emit(EpochEnd(epoch=epoch + 1, val=st.incumbent.val))
        st.next_epoch()
        core.checkpoint()

    def _stepper(self, batch: list[Task]) -> StepRunner:
        """Who runs a step on `batch`: the description's runner for trigger queries."""
        runner = self.describe if batch[0].is_trigger else self.body
        assert runner is not None  # `refuse_part` matched the part to the suite
        return runner

    def _batches(self, epoch: int) -> list[list[Task]]:
        """The epoch's batches, shuffled by the seed; with `--part both`, a batch of
        tasks and one of trigger queries in turn."""
        order = list(self.core.train)
        random.Random(f"{self.s.seed}:epoch:{epoch}").shuffle(order)
        tasks = chunks(order, self.s.batch_size)
        if self.core.triggers is None:
            return tasks
        queries = list(self.core.trigger_train)
        random.Random(f"{self.s.seed}:epoch:{epoch}:triggers").shuffle(queries)
        both = zip_longest(tasks, chunks(queries, self.s.batch_size))
        return [batch for pair in both for batch in pair if batch]

    def _initial(self) -> None:
        core = self.core
        core.begin()
        skill = core.incumbent
        core.stage(Stage(stage="baseline"))
        outcomes = self._baseline(skill, core.val, "baseline · val")
        val = mean_value(outcomes)
        assert val is not None  # `_baseline` stops a run with nothing scored
        title = f"step 0: initial skill — val {display.score(val, none=NA)}"
        if core.triggers is not None:  # both parts: the description's gate starts here too
            queries = self._baseline(skill, core.trigger_val, "baseline · trigger queries")
            title += f", trigger queries {display.score(mean_value(queries), none=NA)}"
        sha = core.audit.commit(
            skill,
            title,
            "",
            StepTrailers(
                step=0,
                decision="initial",
                val=val,
                n=scored_count(outcomes),
                skill_hash=skill.hash,
            ),
        )
        n = scored_count(outcomes)
        core.memory.gated_candidate(0, text_key(skill.text), "initial")  # never gated again
        record = InitialRecord(step=0, epoch=0, val=val, n=n, commit=sha, wall_s=core.seconds())
        # the initial decision and the status that says it is done are one checkpoint:
        # resume must never evaluate and record step 0 again
        self.state.start(record)
        core.checkpoint()
        core.emit(InitialDecision(step=0, accepted=True, val=val, best=val, commit=sha))

    def _baseline(self, skill: Skill, tasks: list[Task], label: str) -> dict[str, TaskOutcome]:
        """The initial skill's validation outcomes; none scored stops the run."""
        rollouts = self.core.rollouts(skill, tasks, label, self.s.samples)
        outcomes = task_outcomes(rollouts)
        if mean_value(outcomes) is None:
            first = next((r.error for r in rollouts if r.error), "unknown error")
            raise NothingScored(
                f"no validation rollout of the initial skill could be scored "
                f"({len(rollouts)} unscored), so there is nothing to improve "
                f"on; first error: {first}"
            )
        return outcomes

    def stopped_by_budget(self, exc: BudgetExceeded) -> None:
        """A budget stopped the run before a batch: say so, and checkpoint it as
        stopped (`--resume` continues from here with a larger budget)."""
        st = self.state
        st.stop_for_budget(BudgetStop.of(exc, st.step))
        self.core.emit(Stopped(step=st.step, epoch=st.epoch + 1, reason=exc.why, budget=exc.flag))
        self.core.checkpoint()

    def _stop_if_stalled(self, epoch: int) -> None:
        """End training after this step when the run has stalled (`stalled`), unless the
        step was the run's last anyway; the test split and reports follow as usual."""
        st = self.state
        if epoch + 1 == self.s.epochs and st.k == self.core.per_epoch:
            return
        reason = stalled(st.steps, self.s.stall_patience)
        if reason is not None:
            st.stop_early(EarlyStop(st.step, epoch + 1, reason))
            self.core.emit(Stopped(step=st.step, epoch=epoch + 1, reason=reason))

    def _stop_if_saturated(self, epoch: int) -> None:
        """End training when no candidate could beat the incumbent: it scores full
        marks on every validation task it was scored on, so every later step's
        training rollouts, reflection, slow update and notes would be spent for a
        gate that cannot accept. Said once; the test split follows as usual."""
        st, core = self.state, self.core
        val = st.incumbent.val
        if core.triggers is not None and val is not None:  # both parts must be saturated
            held = core.rollouts(
                self.incumbent, core.trigger_val, "trigger queries", self.s.samples
            )
            val = min(val, mean_value(task_outcomes(held)) or 0.0)
        if st.stopped_early is not None or val is None or val < 1.0 - 1e-9:
            return
        last = epoch + 1 == self.s.epochs and st.k == self.core.per_epoch
        slow = self.s.slow_update and self.s.part != "description"  # a description run has none
        if last and not (slow and isinstance(self.core.optimizer, SlowUpdater)):
            return  # the run's last step, and no slow update after it: nothing to skip
        reason = (
            f"validation saturated: the skill scores {display.score(val)} on the validation "
            f"{'tasks and trigger queries' if core.triggers is not None else 'tasks'}, so no "
            "candidate can beat it; training stops here (no more training "
            "rollouts, reflection, slow update or notes)"
        )
        st.stop_early(EarlyStop(st.step, epoch + 1, reason))
        self.core.emit(Stopped(step=st.step, epoch=epoch + 1, reason=reason))

    # -- end of run --------------------------------------------------------------------
    def _trigger_test(self, initial: Skill, best: Skill) -> dict[str, Any]:
        """Precision and recall of the initial and best skills on the test split's
        trigger queries (a description's run; nothing for a body's)."""
        core = self.core
        queries = core.trigger_test if core.triggers is not None else core.test
        if self.describe is None or not queries:
            return {}
        core.stage(Stage(stage="test"))
        expected = expectations(queries)
        out = {}
        for name, skill in (("initial", initial), ("best", best)):
            rollouts = core.rollouts(
                skill, queries, f"test · {name} · trigger queries", self.s.samples
            )
            report = trigger_report(rollouts, expected)
            missed, spurious = report.misfires()
            out[name] = {
                "precision": report.precision,
                "recall": report.recall,
                "n": len(report.queries),
                "missed": missed,
                "spurious": spurious,
            }
        return out

    def _finish(self) -> dict[str, dict[str, Any]]:
        core, st = self.core, self.state
        best = core.incumbent
        initial = core.skill(st.initial.text)
        best.write(core.run_dir.path / "best")  # with the skill's supporting files
        test: dict[str, SplitScore] = {}
        if core.test:
            core.stage(Stage(stage="test"))
            scored: dict[str, dict[str, TaskOutcome]] = {}  # skill hash -> outcomes
            skills = [("no_skill", Skill.empty()), ("initial", initial), ("best", best)]
            if core.test[0].is_trigger:  # without the skill there is nothing that could load
                skills = skills[1:]
            for name, skill in skills:
                core.begin()
                label = f"test · {name.replace('_', ' ')}"
                if skill.hash not in scored:  # the best may be the initial skill: scored once
                    rollouts = core.rollouts(skill, core.test, label, self.s.samples)
                    scored[skill.hash] = task_outcomes(rollouts)
                outcomes = scored[skill.hash]
                test[name] = SplitScore(
                    mean_value(outcomes),
                    scored_count(outcomes),
                    pass_rate(outcomes),
                    passed={t: o.passed for t, o in outcomes.items() if o.passed is not None},
                    wall_s=core.seconds(),
                )
        result = {name: score.totals() for name, score in test.items()}
        st.finish(test, self._trigger_test(initial, best))
        core.emit(Finished(test=result, best_val=st.incumbent.val, initial_val=st.initial.val))
        return result
