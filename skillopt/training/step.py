"""One training step on a batch: rollouts of the incumbent → reflection on the
failures (one optimizer call per minibatch) → merge of the proposed edits within
the step's budget → apply → the candidate decided (`training/decide`).

Invariants:
- The optimizer sees training rollouts only; validation and test answers never
  reach it.
- Paid optimizer replies are checkpointed before the step is recorded
  (`Pending`): a step resumed after a crash reuses them and never asks again.
- Every proposal is passed through `Proposal.without_secrets` as it arrives (asked,
  or read back from the checkpoint): no known secret value reaches a candidate, a
  commit, the memory or a record, and the step counts the values blanked.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from skillopt.optimize.base import Proposal, ProposalRequest, WholeBatch
from skillopt.optimize.merge import merge_edits
from skillopt.optimize.schedule import chunks, edit_budget, successes_to_protect
from skillopt.rollouts.engine import Rollout
from skillopt.rollouts.outcomes import mean_value, task_outcomes
from skillopt.skill.document import Skill, text_key
from skillopt.skill.edits import ApplyReport, apply_edits
from skillopt.suite.task import Task
from skillopt.training.checkpoint import Pending
from skillopt.training.core import RunCore
from skillopt.training.credit import StepEdits, StepGate, split
from skillopt.training.decide import Judge, no_candidate_reason
from skillopt.training.epoch import Notes
from skillopt.training.events import ProposalMade, Stage
from skillopt.training.steps import BatchRecord, StepRecord, Verdict
from skillopt.training.stuck import tried, tried_note, unproductive


class StepRunner:
    """Runs the steps of one run on its batches of training tasks."""

    def __init__(self, core: RunCore, judge: Judge, notes: Notes):
        self.core = core
        self.judge = judge
        self.notes = notes

    def run(self, epoch: int, k: int, batch: list[Task]) -> None:
        """Step `k` (from 0) of `epoch` (from 0) on `batch`, recorded once decided."""
        core, s = self.core, self.core.s
        core.begin()
        step = core.state.step + 1
        core.spend(f"step {step}")
        regular = epoch * core.per_epoch + k
        budget = edit_budget(
            regular,
            core.total_steps,
            max_edits=s.lr,
            min_edits=s.min_lr,
            schedule=s.schedule,
        )
        incumbent = core.incumbent
        core.stage(
            Stage(
                stage="rollout",
                step=step,
                epoch=epoch + 1,
                k=k + 1,
                per_epoch=core.per_epoch,
                budget=budget,
            )
        )
        rollouts = core.rollouts(incumbent, batch, f"step {step} · train")
        failures = [r for r in rollouts if r.scored and not r.passed]
        passed = [r for r in rollouts if r.scored and r.passed]
        train_mean = mean_value(task_outcomes(rollouts))
        if not failures and any(r.scored for r in rollouts):
            # nothing to learn from in this batch: the skill's failures elsewhere in
            # the training split are (served from the store where already run)
            failures = self.beyond_batch(incumbent, batch, step)
        protect = successes_to_protect(failures, passed, s.minibatch_size)  # to keep

        proposals = self.proposals(step, epoch, incumbent, failures, protect, budget)
        asked = [p.to_dict() for p in proposals]
        blanked = sum(p.secrets for p in proposals)
        failing = {r.task_id for r in failures}
        edits = self.candidate(incumbent, proposals, budget, failing)
        prior = self.repeat_of(incumbent, edits)
        repeated = ""
        if prior is not None:
            repair = self.repair(step, epoch, incumbent, failures, protect, budget, prior)
            if repair is not None:
                asked.append(repair.to_dict())
                blanked += repair.secrets
                edits = self.candidate(incumbent, [repair], budget, failing)
                again = self.repeat_of(incumbent, edits)
            else:
                again = prior
            if again is not None:
                repeated = (
                    "repeats the initial skill"
                    if again["decision"] == "initial"
                    else f"repeats the candidate the gate {again['decision']} at step "
                    f"{again['step']}"
                ) + " (whitespace aside)"
        # nothing gated when the candidate repeats: the step records no edit as applied
        report = ApplyReport() if repeated else edits.report

        def record(v: Verdict) -> StepRecord:
            return BatchRecord(
                step=step,
                epoch=epoch + 1,
                budget=budget,
                train_mean=train_mean,
                failures=len(failures),
                failing=tuple(sorted(failing)),
                incumbent_hash=incumbent.hash,
                successes=len(passed),
                unscored=sum(1 for r in rollouts if not r.scored),
                proposals=asked,
                dropped=[{"edit": e.to_dict(), "reason": why} for e, why in edits.merged.dropped],
                apply=report.to_list(),
                secrets=blanked,
                decision=v.decision,
                reason=v.reason,
                gate=v.gate,
                commit=v.commit,
                skill_hash=v.skill_hash,
                trials=v.trials,
                credit=v.credit,
                wall_s=core.seconds(),
            )

        for e, why in edits.merged.dropped:
            if why.startswith(("conflicts", "too large")):
                core.memory.skip(step, e, why)
        for r in report.not_applied:
            core.memory.skip(step, r.edit, f"{r.status}: {r.detail}" if r.detail else r.status)
        if repeated:
            self.judge.nothing(
                step,
                "step",
                f"{repeated}; asked once more for different edits, the optimizer gave none new: skipped",
                record,
            )
        elif not edits.applied or edits.candidate.hash == incumbent.hash:
            self.judge.nothing(
                step, "step", no_candidate_reason(report, asked, len(failures)), record
            )
        else:
            StepGate(core, self.judge).run(step, epoch, incumbent, edits, failing, record)

    def candidate(
        self, incumbent: Skill, proposals: list[Proposal], budget: int, failing: set[str]
    ) -> StepEdits:
        """The step's edits merged within its budget, applied, split into those gated
        first and those held back (`credit.split`), with the candidate of the first."""
        s = self.core.s
        merged = merge_edits(
            [p.edits for p in proposals],
            budget,
            max_edit_lines=s.max_edit_lines,
            max_step_lines=s.max_step_lines,
        )
        _, report = apply_edits(incumbent, merged.kept)
        applied = [r.edit for r in report.applied]
        group, held = split(applied, failing)
        candidate, first = apply_edits(incumbent, [applied[i - 1] for i in group])
        return StepEdits(merged, report, group, held, candidate, first)

    def repeat_of(self, incumbent: Skill, edits: StepEdits) -> dict[str, Any] | None:
        """The earlier gate decision on the candidate's text, when it repeats one."""
        if not edits.report.applied or edits.candidate.hash == incumbent.hash:
            return None
        return self.core.memory.gated_at(text_key(edits.candidate.text))

    def beyond_batch(self, incumbent: Skill, batch: list[Task], step: int) -> list[Rollout]:
        """The skill's failures among the training tasks outside `batch` (at most a
        batch of them), for a step whose own batch has none."""
        core = self.core
        inside = {t.id for t in batch}
        others = [t for t in core.train_like(batch) if t.id not in inside]
        if not others:
            return []
        rollouts = core.rollouts(incumbent, others, f"step {step} · train (beyond the batch)")
        return [r for r in rollouts if r.scored and not r.passed][: core.s.batch_size]

    def repair(
        self,
        step: int,
        epoch: int,
        incumbent: Skill,
        failures: list[Rollout],
        protect: list[Rollout],
        budget: int,
        prior: dict[str, Any],
    ) -> Proposal | None:
        """One more optimizer call (on the first minibatch of failures) told that its
        edits rebuilt a candidate the gate already decided; None when there is no
        failure to show. Checkpointed like the step's proposals."""
        core = self.core
        pending = core.state.pending
        if pending is not None and pending.step == step and pending.repair is not None:
            return Proposal.from_dict(pending.repair).without_secrets(incumbent)
        if not failures:
            return None
        before = (
            "the initial skill"
            if prior["decision"] == "initial"
            else f"the skill the validation gate {prior['decision']} at step {prior['step']}"
        )
        note = (
            f"NOTE: the edits proposed for these failures rebuild exactly {before}. "
            "Propose different edits: a different rule or example, another place, or a "
            "smaller change."
        )
        first = failures[: self.minibatch_size(len(failures))]
        request = self.request(incumbent, first, protect, budget, step, epoch, note=note)
        core.spend(f"step {step} · reflect (repair)", calls=1)
        proposal = core.optimizer.propose(request).without_secrets(incumbent)
        core.emit(
            ProposalMade(
                step=step,
                call="repair",
                tasks=[r.task_id for r in request.rollouts],
                edits=len(proposal.edits),
                skipped=proposal.skipped,
                calls=proposal.calls,
                secrets=proposal.secrets,
            )
        )
        core.stop_if_hopeless([proposal])
        done = pending.proposals if pending is not None and pending.step == step else None
        core.state.pend(Pending(step, proposals=done, repair=proposal.to_dict()))
        core.checkpoint()
        return proposal

    def proposals(
        self,
        step: int,
        epoch: int,
        incumbent: Skill,
        failures: list[Rollout],
        protect: list[Rollout],
        budget: int,
    ) -> list[Proposal]:
        """One reflection call per minibatch of failures, each showing `protect` (solved
        training tasks of the batch) as behaviour its edits must not break; none when
        the step has no failure."""
        core = self.core
        pending = core.state.pending
        if pending is not None and pending.step == step and pending.proposals is not None:
            # resumed inside this step: reuse finished calls (a checkpoint from before
            # successes were folded into the failures calls may hold a "successes" one)
            return [Proposal.from_dict(p).without_secrets(incumbent) for p in pending.proposals]
        stuck = unproductive(core.state.steps, incumbent)
        shown = tried(core, incumbent, failures, step, stuck)
        requests = [
            self.request(
                incumbent,
                mb,
                protect,
                budget,
                step,
                epoch,
                stuck=stuck,
                note=tried_note(shown[0], shown[1], mb) if shown else "",
            )
            for mb in chunks(failures, self.minibatch_size(len(failures)))
        ]
        self.notes.take_owed(len(requests))  # before the first call of an epoch reads them
        core.stage(Stage(stage="reflect", step=step, minibatches=len(requests)))
        if not requests:
            return []
        core.spend(f"step {step} · reflect", calls=len(requests))
        workers = max(1, min(core.s.optimizer_concurrency, len(requests)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skillopt-reflect") as pool:
            proposals = [
                p.without_secrets(incumbent) for p in pool.map(core.optimizer.propose, requests)
            ]
        for req, p in zip(requests, proposals):
            core.emit(
                ProposalMade(
                    step=step,
                    call=req.kind,
                    tasks=[r.task_id for r in req.rollouts],
                    edits=len(p.edits),
                    skipped=p.skipped,
                    calls=p.calls,
                    secrets=p.secrets,
                )
            )
        core.stop_if_hopeless(proposals)
        core.state.pend(Pending(step, proposals=[p.to_dict() for p in proposals]))
        core.checkpoint()
        return proposals

    def request(
        self,
        incumbent: Skill,
        failures: list[Rollout],
        protect: list[Rollout],
        budget: int,
        step: int,
        epoch: int,
        *,
        stuck: int = 0,
        note: str = "",
    ) -> ProposalRequest:
        """A reflection request on `failures` (one minibatch) within the run's limits."""
        core = self.core
        return ProposalRequest(
            incumbent,
            "failures",
            failures,
            core.tasks,
            budget,
            core.memory,
            step,
            epoch,
            core.context(),
            max_edit_lines=core.s.max_edit_lines,
            max_step_lines=core.s.max_step_lines,
            protect=list(protect),
            note=note,
            stuck=stuck,
        )

    def minibatch_size(self, failures: int) -> int:
        """Failures per optimizer call: `minibatch_size`, or all of them for an
        optimizer that asks for the whole batch (`WholeBatch`: no model context to
        fill, like `exemplars`)."""
        optimizer = self.core.optimizer
        if isinstance(optimizer, WholeBatch) and optimizer.whole_batch:
            return max(1, failures)
        return self.core.s.minibatch_size
