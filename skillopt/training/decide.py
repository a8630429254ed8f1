"""Deciding a candidate: the gate on the validation tasks (raced when the gate
allows it), the audit commit with its evidence, the incumbent and memory updated,
and the step recorded.

Invariants:
- The incumbent only changes here, through the gate: a candidate is kept only when
  it beats the incumbent on the same validation tasks (the incumbent's scores come
  from the rollout store, so scoring it again costs nothing).
- Every gated candidate is committed to git with its decision and evidence.
- A race is decided on the shortest settled prefix of its order, whatever finished
  first, so the decision and its evidence are the same at any concurrency, on a
  resume and on a replay.
- With `--part both`, a candidate the gate accepts on its own part's validation
  items is still rejected when its score on the other part's (`Held`) falls below
  the incumbent's; those are run in full, never raced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from skillopt._util import display
from skillopt.optimize.evidence import commit_message
from skillopt.optimize.gate import Decision, Gate, Race, ThresholdGate
from skillopt.rollouts.engine import Rollout
from skillopt.rollouts.outcomes import TaskOutcome, mean_value, scored_count, task_outcomes
from skillopt.skill.document import Skill, text_key
from skillopt.skill.edits import ApplyReport
from skillopt.suite.task import Task
from skillopt.training.checkpoint import Revision
from skillopt.training.core import RunCore
from skillopt.training.events import GateDecision, NoCandidate, Stage
from skillopt.training.steps import (
    BatchRecord,
    GateRecord,
    SlowUpdateRecord,
    StepRecord,
    Verdict,
)

StepKind = Literal["step", "slow_update"]
Build = Callable[[Verdict], StepRecord]  # the step's record, once its verdict is known


def no_candidate_reason(
    report: ApplyReport, proposals: Sequence[Mapping[str, Any]], failures: int | None
) -> str:
    """Why a step gave nothing to gate: its edits changed nothing, none applied, every
    optimizer call was skipped, or there was nothing to learn from (`failures` 0: a
    step's failing training tasks; None for a slow update)."""
    if report.applied:
        return "the edits left the skill unchanged"
    if report.results:
        return f"none of the {len(report.results)} proposed edits could be applied"
    if skipped := [p["skipped"] for p in proposals if p.get("skipped")]:
        return (
            f"the optimizer proposed no edit: {len(skipped)} of "
            f"{len(proposals)} optimizer calls skipped ({skipped[0]})"
        )
    if failures == 0:
        return "no failures to learn from and no edit proposed"
    return "the optimizer proposed no edit"


@dataclass(frozen=True)
class Measured:
    """A candidate the gate has decided and that is not committed yet: which of the
    step's edits it holds (1-based; all of them for a slow update), in words, and the
    decision."""

    trial: int  # 1: the step's whole candidate; 2, 3…: subsets of its edits
    edits: tuple[int, ...]
    label: str
    candidate: Skill
    report: ApplyReport
    decision: Decision

    @property
    def accepted(self) -> bool:
        return self.decision.accepted


@dataclass(frozen=True)
class Held:
    """What `--part both` keeps from falling while the other part trains: that part's
    validation items, their name in a reason, and whether their mean is the run's
    validation score (the tasks', held by a description step)."""

    tasks: list[Task]
    noun: str  # "trigger queries", "tasks"
    is_run_val: bool

    @property
    def noun_of_val(self) -> str | None:
        """What the judge's own validation items are, said where they are not the
        run's validation tasks (a description step's trigger queries)."""
        return "trigger queries" if self.is_run_val else None


class Judge:
    """Gates candidates for one run: `decide` gates one candidate and records the step
    with its verdict; a step that decomposes its candidate (`training/credit`) uses
    `measure`, `commit` and `settle` one by one. `val`: the validation items it gates
    on (the suite's by default; a `--part both` description step's are the trigger
    queries); `held`: the other part's, which must not fall."""

    def __init__(
        self,
        core: RunCore,
        gate: Gate,
        val: list[Task] | None = None,
        held: Held | None = None,
    ):
        self.core = core
        self.gate = gate
        self.val = core.val if val is None else val
        self.held = held

    def nothing(self, step: int, kind: StepKind, reason: str, build: Build) -> None:
        """Record a step that gave nothing to gate, and why."""
        core = self.core
        core.record(build(Verdict(decision="no_candidate", reason=reason)))
        val = core.state.incumbent.val
        core.emit(
            NoCandidate(
                step=step, step_kind=kind, decision="no_candidate", reason=reason, val=val, best=val
            )
        )

    def decide(
        self,
        step: int,
        epoch: int,
        incumbent: Skill,
        candidate: Skill,
        report: ApplyReport,
        build: Build,
        *,
        kind: StepKind,
        nothing: str,
    ) -> None:
        """Gate the candidate, commit it, update incumbent and memory, record the step
        (`build` makes its record from the verdict). `nothing`: why there is no
        candidate, when no edit applied or the skill did not change."""
        applied = [r.edit for r in report.applied]
        if not applied or candidate.hash == incumbent.hash:
            self.nothing(step, kind, nothing, build)
            return
        self.core.stage(Stage(stage="gate", step=step))
        edits = tuple(range(1, len(applied) + 1))
        m = Measured(1, edits, "", candidate, report, self.measure(incumbent, candidate, step))
        sha = self.commit(step, epoch, kind, m)
        self.settle(step, kind, [m], [sha], build)

    def measure(
        self, incumbent: Skill, candidate: Skill, step: int, recent: Sequence[str] = ()
    ) -> Decision:
        """The gate's decision on `candidate` against `incumbent` on the validation
        tasks (raced when the gate allows it; `recent`: tasks to run early, where
        candidates of this step changed the outcome)."""
        inc = self.val_outcomes(incumbent, f"step {step} · val (incumbent)")
        return self.against(inc, candidate, step, recent)[0]

    def against(
        self,
        base: dict[str, TaskOutcome],
        candidate: Skill,
        step: int,
        recent: Sequence[str] = (),
    ) -> tuple[Decision, dict[str, TaskOutcome]]:
        """The gate's decision on `candidate` against the validation outcomes `base`
        (the incumbent's, or another candidate's), with the candidate's outcomes."""
        cand, race = self.raced_outcomes(
            candidate, base, f"step {step} · val (candidate)", [*recent, *self.recent_flips()]
        )
        decision = self.gate.decide(base, cand)
        if race is not None and len(cand) < len(race.order):
            decision = decision.raced(len(cand), len(race.order))
        return self.hold(decision, candidate, step), cand

    def hold(self, decision: Decision, candidate: Skill, step: int) -> Decision:
        """`decision`, rejected when the candidate's score on the other part's items
        (`held`) falls below the incumbent's; with those scores as its `held`."""
        held, core = self.held, self.core
        if held is None or not decision.accepted:
            return decision
        before, after = (
            task_outcomes(
                core.rollouts(
                    skill, held.tasks, f"step {step} · {held.noun} ({who})", core.s.samples
                )
            )
            for skill, who in ((core.incumbent, "incumbent"), (candidate, "candidate"))
        )
        was, now = mean_value(before), mean_value(after)
        n = scored_count(after)
        record = {"part": held.noun, "n": n, "incumbent_mean": was, "candidate_mean": now}
        if was is None or (now is not None and now >= was - 1e-9):
            return replace(decision, held=record)
        fell = (
            f"its {held.noun} could not be scored"
            if now is None
            else f"its score on the {n} validation {held.noun} would fall "
            f"({display.score(was)} → {display.score(now)})"
        )
        reason = (
            f"{decision.reason}; rejected: {fell}, and --part both keeps each part from falling"
        )
        return replace(decision, accepted=False, reason=reason, held=record)

    def run_val(self, decision: Decision) -> float | None:
        """The run's validation score of an accepted candidate: its mean on the gated
        items, or on the held tasks when those are the run's (a description step)."""
        if self.held is not None and self.held.is_run_val and decision.held is not None:
            mean = decision.held.get("candidate_mean")
            return mean if isinstance(mean, (int, float)) else self.core.state.incumbent.val
        return decision.candidate_mean

    def commit(
        self, step: int, epoch: int, kind: StepKind, m: Measured, credit: Sequence[str] = ()
    ) -> str:
        """The audit commit of a decided candidate (with each edit's verdict, `credit`,
        on the one that settled a decomposed step)."""
        verdict = "accepted" if m.accepted else "rejected"
        subject, body, evidence = commit_message(
            step,
            epoch,
            kind,
            verdict,
            m.decision,
            m.report,
            self.gate.name,
            m.candidate.hash,
            trial=m.trial,
            label=m.label,
            credit=credit,
        )
        self.core.memory.gated_candidate(step, text_key(m.candidate.text), verdict)
        return self.core.audit.commit(m.candidate, subject, body, evidence)

    def settle(
        self,
        step: int,
        kind: StepKind,
        trials: Sequence[Measured],
        shas: Sequence[str],
        build: Build,
        *,
        trial_records: list[dict[str, Any]] | None = None,
        credit: list[dict[str, Any]] | None = None,
        memory: bool = True,
    ) -> None:
        """The step's verdict: the accepted trial (at most one, the last) becomes the
        incumbent, else the first trial's rejection stands; the step is recorded and a
        decision event emitted per trial. `memory` False: the caller tells the memory
        each edit's verdict itself."""
        core, st = self.core, self.core.state
        final = trials[-1] if trials[-1].accepted else trials[0]
        sha = shas[-1] if trials[-1].accepted else shas[0]
        d = final.decision
        applied = [r.edit for r in final.report.applied]
        if d.accepted:
            st.accept(Revision(final.candidate.text, final.candidate.hash, self.run_val(d)))
            if memory:
                core.memory.accept(step, applied, d.delta, val=st.incumbent.val, flips=d.flips)
        elif memory:
            core.memory.reject(
                step, applied, d.delta, d.reason, flips=d.flips, skill_hash=final.candidate.hash
            )
        verdict: Literal["accepted", "rejected"] = "accepted" if d.accepted else "rejected"
        core.record(
            build(
                Verdict(
                    decision=verdict,
                    reason=d.reason,
                    gate=GateRecord.of(d),
                    commit=sha,
                    skill_hash=final.candidate.hash,
                    trials=trial_records,
                    credit=credit,
                )
            )
        )
        for m, commit in zip(trials, shas):
            dm = m.decision
            core.emit(
                GateDecision(
                    step=step,
                    step_kind=kind,
                    accepted=dm.accepted,
                    decision="accepted" if dm.accepted else "rejected",
                    delta=dm.delta,
                    p_value=dm.p_value,
                    gate=dm.mode,
                    val=None if dm.unrun else dm.candidate_mean,
                    best=st.incumbent.val,
                    reason=dm.reason,
                    commit=commit,
                    fail_to_pass=dm.fail_to_pass,
                    pass_to_fail=dm.pass_to_fail,
                    trial=m.label if m.trial > 1 else None,
                    gated_on=self.held.noun_of_val if self.held is not None else None,
                    held=dm.held,
                )
            )

    def val_outcomes(self, skill: Skill, label: str) -> dict[str, TaskOutcome]:
        core = self.core
        return task_outcomes(core.rollouts(skill, self.val, label, core.s.samples))

    def raced_outcomes(
        self,
        skill: Skill,
        incumbent: dict[str, TaskOutcome],
        label: str,
        recent: Sequence[str] = (),
    ) -> tuple[dict[str, TaskOutcome], Race | None]:
        """The candidate's validation outcomes, raced when the gate allows it (a
        built-in gate, and not `gate_full`): the tasks in the order that settles the
        gate soonest, stopped once no outcome of the rest could accept (`Race`).

        A race is decided on the shortest settled prefix of that order, whatever
        finished first: rollouts still in flight when it settled are kept in the
        store but are not evidence, so the decision and its evidence are the same
        at any concurrency, on a resume and on a replay."""
        core = self.core
        if core.s.gate_full or not isinstance(self.gate, ThresholdGate):
            return self.val_outcomes(skill, label), None
        race = Race.plan(self.gate, incumbent, [t.id for t in self.val], recent)
        by_id = {t.id: t for t in self.val}
        tasks = [by_id[t] for t in race.order]
        samples = core.s.samples
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

        rollouts = core.engine.run(skill, tasks, samples=samples, label=label, until=settled)
        if at is None:  # everything came at once (from the store): find the prefix now
            by_task: dict[str, list[Rollout | None]] = {}
            for r in rollouts:
                by_task.setdefault(r.task_id, []).append(r)
            settled([r for t in race.order for r in by_task.get(t, [None] * samples)])
        if at is not None:  # the evidence is the settled prefix, whatever else finished
            kept = set(race.order[:at])
            rollouts = [r for r in rollouts if r.task_id in kept]
        return task_outcomes(rollouts), race

    def recent_flips(self, steps: int = 3) -> list[str]:
        """The validation tasks that flipped either way in the last few gates."""
        flips: list[str] = []
        gated = [
            r.gate
            for r in self.core.state.steps
            if isinstance(r, (BatchRecord, SlowUpdateRecord)) and r.gate is not None
        ][-steps:]
        for gate in reversed(gated):
            flips += [*gate.fail_to_pass, *gate.pass_to_fail]
        return flips
