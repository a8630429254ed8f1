"""The SkillOpt loop: rollout → reflect → merge → apply → gate → audit → memory,
with a slow update at each epoch end where the skill changed during the epoch, and
optimizer notes on each epoch that a later prompt can read (not the last epoch, nor
one that left nothing to learn), asked for only just before the first optimizer call
of a later epoch: notes that no call reads are never written.
A run that stalls (`optimize/stall`) stops early and finishes as usual.

Invariants:
- The incumbent only changes through the gate: a candidate is kept only when it
  beats the incumbent on the same validation tasks (the incumbent's scores come
  from the rollout store, so re-scoring it costs nothing).
- Every candidate is committed to git with its decision and evidence.
- After each step the checkpoint (`state.json`, a `TrainState`) holds everything
  needed to continue: `--resume` redoes no finished step, and finished rollouts
  come back from the store.
- The optimizer sees training rollouts only; validation and test answers never
  reach it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from skillopt._util import display
from skillopt._util.display import NA
from skillopt.config import Settings
from skillopt.errors import NothingScored, SystemicFailure
from skillopt.eval.results import TaskOutcome, mean_value, pass_rate, scored_count, task_outcomes
from skillopt.models.base import Model
from skillopt.optimize.base import (
    NoteTaker,
    Optimizer,
    Proposal,
    ProposalRequest,
    RunContext,
    SlowUpdater,
    TextResult,
)
from skillopt.optimize.evidence import commit_message, comparison
from skillopt.optimize.gate import Gate, Race, ThresholdGate, build_gate
from skillopt.optimize.memory import epoch_history
from skillopt.optimize.merge import merge_edits
from skillopt.optimize.schedule import (
    chunks,
    edit_budget,
    steps_per_epoch,
    successes_to_protect,
)
from skillopt.rollouts.budget import BudgetExceeded, Guard
from skillopt.rollouts.engine import Rollout, RolloutEngine, RolloutEvent
from skillopt.rollouts.watch import HOPELESS
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.skill.edits import (
    ApplyReport,
    Edit,
    EditResult,
    apply_edits,
    guidance_of,
    has_protected_marker,
    set_guidance,
)
from skillopt.store.audit import Audit
from skillopt.store.trailers import StepTrailers
from skillopt.suite.task import Suite, Task
from skillopt.training.stall import stalled
from skillopt.training.state import (
    Accounting,
    EarlyStop,
    Pending,
    Revision,
    SkippedNote,
    SplitScore,
    StepRecord,
    TrainState,
)


@dataclass(frozen=True)
class TrainEvent:
    """Progress for observers: kind is run_started, stage, rollout, proposal,
    decision, stopped (a stall ended training early), epoch_end or finished; `data`
    holds the details."""

    kind: str
    data: dict = field(default_factory=dict)


TrainObserver = Callable[[TrainEvent], None]


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
    ):
        """`gate` decides every candidate; by default the one `settings.gate` names.
        `guard` checks the run's budget before each batch of optimizer calls (the
        engine checks it before each batch of rollouts)."""
        self.suite = suite
        self.s = settings
        self.engine = engine
        self.optimizer = optimizer
        self.gate = gate if gate is not None else build_gate(settings)
        self.guard = guard
        # whether the optimizer's proposals are model calls (a budget counts them)
        self._calls_model = isinstance(getattr(optimizer, "model", None), Model)
        self.audit = audit
        self.run_dir = run
        self.state = state
        self.skill_root = skill_root
        self.observers = list(observers)
        self.train = suite.split("train")
        self.val = suite.split("val")
        self.test = suite.split("test")
        self.tasks = {t.id: t for t in suite.tasks}
        self.memory = state.memory
        self.per_epoch = steps_per_epoch(len(self.train), settings.batch_size)
        self.total_steps = self.per_epoch * settings.epochs
        engine.subscribe(self._forward_rollout)
        self._stage = ""
        self._began = time.monotonic()  # when the step in progress began

    # -- plumbing ----------------------------------------------------------------------
    def _skill(self, text: str) -> Skill:
        """A skill text of this run, with the original skill's supporting files."""
        return Skill.parse(text, root=self.skill_root, support=self.state.support)

    @property
    def incumbent(self) -> Skill:
        return self._skill(self.state.incumbent.text)

    def emit(self, kind: str, /, **data: Any) -> None:
        event = TrainEvent(kind, data)
        self.run_dir.event(kind, **data)
        for observer in self.observers:
            try:
                observer(event)
            except Exception:  # observers never break training
                pass

    def _forward_rollout(self, event: RolloutEvent) -> None:
        r = event.rollout
        self.emit(
            "rollout",
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

    def stage(self, name: str, **data: Any) -> None:
        self._stage = name
        self.emit("stage", stage=name, **data)

    def checkpoint(self) -> None:
        self.state.accounting = self.accounting()
        self.state.save(self.run_dir)

    def accounting(self) -> Accounting:
        """What the run has spent, read from the store's ledger, where every paid rollout
        and optimizer call is written as it happens: true after any crash, unlike a
        counter kept in the checkpoint."""
        return Accounting.from_ledger(
            self.engine.store.spend(self.run_dir.run_id), self.state.steps
        )

    def rollouts(
        self, skill: Skill, tasks: list[Task], label: str, samples: int = 1
    ) -> list[Rollout]:
        return self.engine.run(skill, tasks, samples=samples, label=label)

    def _context(self) -> RunContext:
        """What the optimizer is told about the target and where the run stands (an
        epoch-end update takes a step number of its own)."""
        slow = self.s.slow_update and isinstance(self.optimizer, SlowUpdater)
        last = self.total_steps + (self.s.epochs if slow else 0)
        val = self.state.incumbent.val
        return RunContext.of(self.engine.harness, total_steps=last, epochs=self.s.epochs, val=val)

    def val_outcomes(self, skill: Skill, label: str):
        return task_outcomes(self.rollouts(skill, self.val, label, self.s.samples))

    def raced_outcomes(
        self, skill: Skill, incumbent: dict[str, TaskOutcome], label: str
    ) -> tuple[dict[str, TaskOutcome], Race | None]:
        """The candidate's validation outcomes, raced when the gate allows it (a
        built-in gate, and not `gate_full`): the tasks in the order that settles the
        gate soonest, stopped once no outcome of the rest could accept (`Race`).

        A race is decided on the shortest settled prefix of that order, whatever
        finished first: rollouts still in flight when it settled are kept in the
        store but are not evidence, so the decision and its evidence are the same
        at any concurrency, on a resume and on a replay."""
        if self.s.gate_full or not isinstance(self.gate, ThresholdGate):
            return self.val_outcomes(skill, label), None
        race = Race.plan(self.gate, incumbent, [t.id for t in self.val], self._recent_flips())
        by_id = {t.id: t for t in self.val}
        tasks = [by_id[t] for t in race.order]
        samples = self.s.samples
        prefix: list[Rollout] = []  # the rollouts of the complete tasks at the front
        checked = -1  # the prefix length (in rollouts) last found unsettled
        at: int | None = None  # the prefix length, in tasks, once it settles

        def settled(results: Sequence[Rollout | None]) -> bool:
            nonlocal checked, at
            while at is None:
                if len(prefix) != checked:  # each prefix is judged once
                    checked = len(prefix)
                    if race.settled(task_outcomes(prefix)):
                        at = len(prefix) // samples
                        break
                chunk = results[len(prefix) : len(prefix) + samples]
                if len(chunk) < samples or any(r is None for r in chunk):
                    return False
                prefix.extend(r for r in chunk if r is not None)
            return True

        rollouts = self.engine.run(skill, tasks, samples=samples, label=label, until=settled)
        if at is None:  # everything came at once (from the store): find the prefix now
            by_task: dict[str, list[Rollout]] = {}
            for r in rollouts:
                by_task.setdefault(r.task_id, []).append(r)
            settled([r for t in race.order for r in by_task.get(t, [None] * samples)])
        if at is not None:  # the evidence is the settled prefix, whatever else finished
            kept = set(race.order[:at])
            rollouts = [r for r in rollouts if r.task_id in kept]
        return task_outcomes(rollouts), race

    def _recent_flips(self, steps: int = 3) -> list[str]:
        """The validation tasks that flipped either way in the last few gates."""
        flips: list[str] = []
        gated = [r for r in self.state.steps if r.get("gate")][-steps:]
        for record in reversed(gated):
            gate = record["gate"]
            flips += gate.get("fail_to_pass", []) + gate.get("pass_to_fail", [])
        return flips

    # -- the loop ----------------------------------------------------------------------
    def run(self) -> dict:
        st = self.state
        self.emit(
            "run_started",
            run_id=self.run_dir.run_id,
            steps=self.total_steps,
            epochs=self.s.epochs,
            resumed=st.status != "new",
            splits=self.suite.counts(),
        )
        st.stop = None
        if not st.steps:  # new, or stopped by a budget before step 0 was recorded
            self._initial()
        st.status = "running"
        while st.epoch < self.s.epochs and st.stopped_early is None:
            epoch = st.epoch
            batches = self._batches(epoch)
            while st.k < len(batches) and st.stopped_early is None:
                self._step(epoch, st.k, batches[st.k])
                st.k += 1
                self._stop_if_stalled(epoch)
                self.checkpoint()
            if st.stopped_early is not None:
                break  # the rest of the epoch, its slow update and notes are not run
            if self.s.slow_update and not st.slow_done:
                changed = st.incumbent.hash != st.epoch_start.hash
                self._owed_notes(isinstance(self.optimizer, SlowUpdater) and changed)
                self._slow_update(epoch)
                st.slow_done = True
                self.checkpoint()
            if not st.notes_done and not self._notes_unread(epoch):
                # owed, in the checkpoint that ends the epoch: asked for before the next
                # optimizer call (`_owed_notes`), never if no call comes
                st.notes_owed.append(epoch + 1)
            self.emit("epoch_end", epoch=epoch + 1, val=st.incumbent.val)
            st.epoch, st.k = epoch + 1, 0
            st.slow_done = st.notes_done = False
            st.epoch_start = st.incumbent
            self.checkpoint()
        result = self._finish()
        st.status = "finished"
        self.checkpoint()
        return result

    def _notes_unread(self, epoch: int) -> bool:
        """No prompt would read notes taken after this epoch: it is the last, or it left
        nothing to learn (the skill it began with passed every training task, unscored
        none), so every later epoch is served the same rollouts from the store, has no
        failure to reflect on and no change for a slow update: no optimizer call."""
        st = self.state
        if epoch + 1 >= self.s.epochs:
            return True
        steps = [r for r in st.steps if r["kind"] == "step" and r["epoch"] == epoch + 1]
        return (
            st.incumbent.hash == st.epoch_start.hash
            and len(steps) == self.per_epoch
            and all(r.get("failures") == 0 and r.get("unscored") == 0 for r in steps)
        )

    def _batches(self, epoch: int) -> list[list[Task]]:
        order = list(self.train)
        random.Random(f"{self.s.seed}:epoch:{epoch}").shuffle(order)
        return chunks(order, self.s.batch_size)

    def _initial(self) -> None:
        st = self.state
        self._began = time.monotonic()
        skill = self.incumbent
        self.stage("baseline")
        rollouts = self.rollouts(skill, self.val, "baseline · val", self.s.samples)
        outcomes = task_outcomes(rollouts)
        val = mean_value(outcomes)
        if val is None:
            first = next((r.error for r in rollouts if r.error), "unknown error")
            raise NothingScored(
                f"no validation rollout of the initial skill could be scored "
                f"({len(rollouts)} unscored), so there is nothing to improve "
                f"on; first error: {first}"
            )
        st.incumbent = replace(st.incumbent, val=val)
        st.initial = replace(st.initial, val=val)
        st.epoch_start = st.incumbent
        sha = self.audit.commit(
            skill,
            f"step 0: initial skill — val {display.score(val, none=NA)}",
            "",
            StepTrailers(
                step=0,
                decision="initial",
                val=val,
                n=scored_count(outcomes),
                skill_hash=skill.hash,
            ),
        )
        st.steps.append(
            {
                "step": 0,
                "kind": "initial",
                "epoch": 0,
                "val": val,
                "n": scored_count(outcomes),
                "commit": sha,
                "decision": "initial",
                "wall_s": self._seconds(),
            }
        )
        # the initial decision and the status that says it is done are one checkpoint:
        # resume must never evaluate and record step 0 again
        st.status = "running"
        self.checkpoint()
        self.emit("decision", step=0, kind="initial", accepted=True, val=val, best=val, commit=sha)

    def _spend(self, where: str, calls: int = 0) -> None:
        """Check the budget before `calls` optimizer calls (or, with none, before a
        step starts: the time limit); raises `BudgetExceeded`."""
        if self.guard is not None:
            self.guard.before(calls=calls if self._calls_model else 0, where=where)

    def stopped_by_budget(self, exc: BudgetExceeded) -> None:
        """A budget stopped the run before a batch: say so, and checkpoint it as
        stopped (`--resume` continues from here with a larger budget)."""
        st = self.state
        st.status = "stopped"
        st.stop = {**exc.to_dict(), "step": st.step}
        self.emit("stopped", step=st.step, epoch=st.epoch + 1, reason=exc.why, budget=exc.flag)
        self.checkpoint()

    def _step(self, epoch: int, k: int, batch: list[Task]) -> None:
        self._began = time.monotonic()
        step = self.state.step + 1
        self._spend(f"step {step}")
        regular = epoch * self.per_epoch + k
        budget = edit_budget(
            regular,
            self.total_steps,
            max_edits=self.s.lr,
            min_edits=self.s.min_lr,
            schedule=self.s.schedule,
        )
        incumbent = self.incumbent
        self.stage(
            "rollout", step=step, epoch=epoch + 1, k=k + 1, per_epoch=self.per_epoch, budget=budget
        )
        rollouts = self.rollouts(incumbent, batch, f"step {step} · train")
        failures = [r for r in rollouts if r.scored and not r.passed]
        passed = [r for r in rollouts if r.scored and r.passed]
        protect = successes_to_protect(failures, passed, self.s.minibatch_size)  # to keep
        train_mean = mean_value(task_outcomes(rollouts))

        proposals = self._proposals(step, epoch, incumbent, failures, protect, budget)
        merged = merge_edits(
            [p.edits for p in proposals],
            budget,
            max_edit_lines=self.s.max_edit_lines,
            max_step_lines=self.s.max_step_lines,
        )
        candidate, report = apply_edits(incumbent, merged.kept)
        record: StepRecord = {
            "step": step,
            "kind": "step",
            "epoch": epoch + 1,
            "budget": budget,
            "train_mean": train_mean,
            "failures": len(failures),
            "failing": sorted({r.task_id for r in failures}),
            "incumbent_hash": incumbent.hash,
            "successes": len(passed),
            "unscored": sum(1 for r in rollouts if not r.scored),
            "proposals": [p.to_dict() for p in proposals],
            "dropped": [{"edit": e.to_dict(), "reason": why} for e, why in merged.dropped],
            "apply": report.to_list(),
        }
        for e, why in merged.dropped:
            if why.startswith(("conflicts", "too large")):
                self.memory.skip(step, e, why)
        for r in report.not_applied:
            self.memory.skip(step, r.edit, f"{r.status}: {r.detail}" if r.detail else r.status)
        self._judge(step, epoch, incumbent, candidate, report, record)

    def _proposals(self, step, epoch, incumbent, failures, protect, budget) -> list[Proposal]:
        """One reflection call per minibatch of failures, each showing `protect` (solved
        training tasks of the batch) as behaviour its edits must not break; none when
        the step has no failure."""
        st = self.state
        pending = st.pending
        if pending is not None and pending.step == step and pending.proposals is not None:
            # resumed inside this step: reuse finished calls (a checkpoint from before
            # successes were folded into the failures calls may hold a "successes" one)
            return [Proposal.from_dict(p) for p in pending.proposals]
        ctx = self._context()
        limits = {"max_edit_lines": self.s.max_edit_lines, "max_step_lines": self.s.max_step_lines}
        requests = [
            ProposalRequest(
                incumbent,
                "failures",
                mb,
                self.tasks,
                budget,
                self.memory,
                step,
                epoch,
                ctx,
                **limits,
                protect=list(protect),
            )
            for mb in chunks(failures, self._minibatch_size(len(failures)))
        ]
        self._owed_notes(len(requests))  # before the first call of an epoch reads them
        self.stage("reflect", step=step, minibatches=len(requests))
        if not requests:
            return []
        self._spend(f"step {step} · reflect", calls=len(requests))
        workers = max(1, min(self.s.optimizer_concurrency, len(requests)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skillopt-reflect") as pool:
            proposals = list(pool.map(self.optimizer.propose, requests))
        for req, p in zip(requests, proposals):
            self.emit(
                "proposal",
                step=step,
                kind=req.kind,
                tasks=[r.task_id for r in req.rollouts],
                edits=len(p.edits),
                skipped=p.skipped,
                calls=p.calls,
            )
        self._stop_if_hopeless(proposals)
        st.pending = Pending(step, proposals=[p.to_dict() for p in proposals])
        self.checkpoint()
        return proposals

    def _minibatch_size(self, failures: int) -> int:
        """Failures per optimizer call: `minibatch_size`, or all of them for an
        optimizer with `whole_batch` (no model context to fill, like `exemplars`)."""
        if getattr(self.optimizer, "whole_batch", False):
            return max(1, failures)
        return self.s.minibatch_size

    def _stop_if_stalled(self, epoch: int) -> None:
        """End training after this step when the run has stalled (`stalled`), unless the
        step was the run's last anyway; the test split and reports follow as usual."""
        st = self.state
        if epoch + 1 == self.s.epochs and st.k == self.per_epoch:
            return
        reason = stalled(st.steps, self.s.stall_patience)
        if reason is not None:
            st.stopped_early = EarlyStop(st.step, epoch + 1, reason)
            self.emit("stopped", step=st.step, epoch=epoch + 1, reason=reason)

    def _stop_if_hopeless(self, results: Sequence[Proposal | TextResult]) -> None:
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

    def _judge(
        self,
        step: int,
        epoch: int,
        incumbent: Skill,
        candidate: Skill,
        report: ApplyReport,
        record: StepRecord,
        kind: str = "step",
    ) -> None:
        """Gate the candidate, commit it, update incumbent and memory, record."""
        st = self.state
        applied = [r.edit for r in report.applied]
        if not applied or candidate.hash == incumbent.hash:
            if applied:
                reason = "the edits left the skill unchanged"
            elif report.results:
                reason = f"none of the {len(report.results)} proposed edits could be applied"
            elif skipped := [
                p["skipped"] for p in record.get("proposals") or [] if p.get("skipped")
            ]:
                reason = (
                    f"the optimizer proposed no edit: {len(skipped)} of "
                    f"{len(record['proposals'])} optimizer calls skipped ({skipped[0]})"
                )
            elif record.get("failures") == 0 and kind == "step":
                reason = "no failures to learn from and no edit proposed"
            else:
                reason = "the optimizer proposed no edit"
            record.update(decision="no_candidate", reason=reason)
            self._record(record)
            self.emit(
                "decision",
                step=step,
                kind=kind,
                accepted=False,
                decision="no_candidate",
                reason=record["reason"],
                val=st.incumbent.val,
                best=st.incumbent.val,
            )
            return
        self.stage("gate", step=step)
        inc = self.val_outcomes(incumbent, f"step {step} · val (incumbent)")
        cand, race = self.raced_outcomes(candidate, inc, f"step {step} · val (candidate)")
        decision = self.gate.decide(inc, cand)
        if race is not None and len(cand) < len(race.order):
            decision = decision.raced(len(cand), len(race.order))
        verdict = "accepted" if decision.accepted else "rejected"
        subject, body, evidence = commit_message(
            step, epoch, kind, verdict, decision, report, self.gate.name, candidate.hash
        )
        sha = self.audit.commit(candidate, subject, body, evidence)
        flips = (len(decision.fail_to_pass), len(decision.pass_to_fail))
        if decision.accepted:
            st.incumbent = Revision(candidate.text, candidate.hash, decision.candidate_mean)
            self.memory.accept(step, applied, decision.delta, val=st.incumbent.val, flips=flips)
        else:
            self.memory.reject(
                step,
                applied,
                decision.delta,
                decision.reason,
                flips=flips,
                skill_hash=candidate.hash,
            )
        record.update(
            decision=verdict,
            reason=decision.reason,
            gate=decision.to_dict(),
            commit=sha,
            skill_hash=candidate.hash,
        )
        self._record(record)
        self.emit(
            "decision",
            step=step,
            kind=kind,
            accepted=decision.accepted,
            decision=verdict,
            delta=decision.delta,
            p_value=decision.p_value,
            gate=decision.mode,
            val=None if decision.unrun else decision.candidate_mean,
            best=st.incumbent.val,
            reason=decision.reason,
            commit=sha,
        )

    def _record(self, record: StepRecord) -> None:
        """The step is done: its record is kept and its pending replies are spent."""
        st = self.state
        record["wall_s"] = self._seconds()
        st.steps.append(record)
        st.step = record["step"]
        st.pending = None

    # -- epoch end ---------------------------------------------------------------------
    def _seconds(self) -> float:
        """Seconds since the step in progress began."""
        return round(time.monotonic() - self._began, 3)

    def _slow_update(self, epoch: int) -> None:
        self._began = time.monotonic()
        st = self.state
        step = st.step + 1
        current = self.incumbent
        previous = self._skill(st.epoch_start.text)
        if not isinstance(self.optimizer, SlowUpdater):
            return
        if st.incumbent.hash == st.epoch_start.hash:
            # the comparison would be the skill with itself: no call, no rollouts, no gate
            self._skip_slow_update(
                step, epoch, f"the skill has not changed since epoch {epoch + 1} began"
            )
            return
        self.stage("slow_update", step=step, epoch=epoch + 1)
        n = min(self.s.batch_size, len(self.train))
        sample = random.Random(f"{self.s.seed}:slow:{epoch}").sample(self.train, n)
        before = self.rollouts(previous, sample, f"slow update {epoch + 1} · before")
        after = self.rollouts(current, sample, f"slow update {epoch + 1} · after")
        pending = st.pending
        if pending is not None and pending.step == step and pending.slow_update is not None:
            result = TextResult.from_dict(pending.slow_update)  # asked before a restart
        else:
            moved = comparison(sample, before, after)
            self._spend(f"slow update {epoch + 1}", calls=1)
            result = self.optimizer.slow_update(
                current, previous, moved, self.memory, self._context()
            )
            self._stop_if_hopeless([result])
            # checkpointed like proposals: a restart gates this guidance, never a new one
            st.pending = Pending(step, slow_update=result.to_dict())
            self.checkpoint()
        record: StepRecord = {
            "step": step,
            "kind": "slow_update",
            "epoch": epoch + 1,
            "guidance": result.text,
            "skipped": result.skipped,
            "calls": result.calls,
        }
        unchanged = _same_text(guidance_of(current), result.text)
        if not result.text or unchanged:
            reason = (
                "the guidance is the one the skill holds already"
                if result.text
                else result.skipped or "the optimizer gave no guidance"
            )
            record.update(decision="no_candidate", reason=reason)
            self._record(record)
            self.emit(
                "decision",
                step=step,
                kind="slow_update",
                accepted=False,
                decision="no_candidate",
                reason=record["reason"],
                val=st.incumbent.val,
                best=st.incumbent.val,
            )
            return
        edit = Edit(
            "replace" if "skillopt:protected guidance" in current.body else "add",
            content=result.text,
            rationale="longitudinal guidance from the slow update",
            source="slow_update",
        )
        if has_protected_marker(result.text):  # it would end the block early: refused, as edits are
            candidate = current
            report = ApplyReport(
                [EditResult(edit, "protected", "content may not contain protected markers")]
            )
        else:
            candidate = set_guidance(current, result.text)
            report = ApplyReport([EditResult(edit, "applied", "guidance block")])
        record["apply"] = report.to_list()
        self._judge(step, epoch, current, candidate, report, record, kind="slow_update")

    def _skip_slow_update(self, step: int, epoch: int, reason: str) -> None:
        st = self.state
        record: StepRecord = {
            "step": step,
            "kind": "slow_update",
            "epoch": epoch + 1,
            "decision": "skipped",
            "reason": reason,
        }
        self._record(record)
        self.emit(
            "decision",
            step=step,
            kind="slow_update",
            accepted=False,
            decision="skipped",
            reason=reason,
            val=st.incumbent.val,
            best=st.incumbent.val,
        )

    def _owed_notes(self, calls: int | bool = 1) -> None:
        """Before `calls` optimizer calls (none: nothing to do) that read the memory:
        take the notes owed on finished epochs, oldest first, one request per epoch on
        that epoch's history, each checkpointed once paid for (never asked twice)."""
        st = self.state
        while calls and st.notes_owed:
            self._meta_notes(st.notes_owed[0] - 1)
            st.notes_owed.pop(0)
            self.checkpoint()

    def _meta_notes(self, epoch: int) -> None:
        if not isinstance(self.optimizer, NoteTaker):
            return
        history = epoch_history(self.state.steps, epoch + 1)
        self._spend(f"notes of epoch {epoch + 1}", calls=1)
        self.stage("notes", epoch=epoch + 1)
        result = self.optimizer.meta_notes(epoch + 1, history, self._context())
        self._stop_if_hopeless([result])
        if result.skipped:
            self.state.skipped_notes.append(SkippedNote(epoch + 1, result.skipped))
            self.emit(
                "proposal",
                step=self.state.step,
                kind="notes",
                tasks=[],
                edits=0,
                skipped=result.skipped,
                calls=result.calls,
            )
        if result.text:
            self.memory.note(epoch + 1, result.text)

    # -- end of run --------------------------------------------------------------------
    def _finish(self) -> dict:
        st = self.state
        best = self.incumbent
        initial = self._skill(st.initial.text)
        best.write(self.run_dir.path / "best")  # with the skill's supporting files
        test: dict[str, SplitScore] = {}
        if self.test:
            self.stage("test")
            scored: dict[str, dict[str, TaskOutcome]] = {}  # skill hash -> outcomes
            for name, skill in (("no_skill", Skill.empty()), ("initial", initial), ("best", best)):
                self._began = time.monotonic()
                label = f"test · {name.replace('_', ' ')}"
                if skill.hash not in scored:  # the best may be the initial skill: scored once
                    rollouts = self.rollouts(skill, self.test, label, self.s.samples)
                    scored[skill.hash] = task_outcomes(rollouts)
                outcomes = scored[skill.hash]
                test[name] = SplitScore(
                    mean_value(outcomes),
                    scored_count(outcomes),
                    pass_rate(outcomes),
                    passed={t: o.passed for t, o in outcomes.items() if o.passed is not None},
                    wall_s=self._seconds(),
                )
        st.test = test
        result = {name: score.totals() for name, score in test.items()}
        self.emit("finished", test=result, best_val=st.incumbent.val, initial_val=st.initial.val)
        return result


def _same_text(a: str | None, b: str | None) -> bool:
    """Whether two blocks of Markdown say the same: equal line by line once spaces
    are collapsed and blank lines dropped (a candidate differing only so would be
    gated for nothing)."""
    if a is None or b is None:
        return False

    def lines(text: str) -> list[str]:
        return [" ".join(line.split()) for line in text.splitlines() if line.strip()]

    return lines(a) == lines(b)
