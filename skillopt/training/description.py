"""A training step of `train --part description`: the incumbent's trigger rollouts on
a batch of training queries → one optimizer call for a new description, shown the
misfires (with each query's load rate), the other installed skills and the ones the
misfires loaded instead → lint → the candidate decided by the same gate as a body.

Invariants:
- Only the frontmatter's `description:` value changes (`skill.description`): the
  body and every other byte of SKILL.md are the incumbent's.
- A candidate description that fails lint is never gated: the optimizer is told
  why once (a repair ask), and a second failure skips the step.
- Paid replies are checkpointed before the step is recorded (`Pending`), as for body
  steps: a resumed step reuses them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from skillopt.errors import InputError
from skillopt.optimize.base import Proposal
from skillopt.optimize.describe import DescriptionRequest, Query, WritesDescriptions
from skillopt.rollouts.engine import Rollout
from skillopt.rollouts.outcomes import mean_value, task_outcomes
from skillopt.skill.description import description_problems, with_description
from skillopt.skill.document import Skill, text_key
from skillopt.skill.edits import ApplyReport, EditResult
from skillopt.skill.library import Library
from skillopt.suite.task import Task
from skillopt.training.checkpoint import Pending
from skillopt.training.core import RunCore
from skillopt.training.decide import Judge
from skillopt.training.epoch import Notes
from skillopt.training.events import ProposalMade, Stage
from skillopt.training.step import StepRunner
from skillopt.training.steps import BatchRecord, StepRecord, Verdict

# an agent that reads a skill's SKILL.md loads it: Claude Code's Read tool, or a
# command (codex has no Skill tool: it `cat`s the file) that ran to completion
_SKILL_FILE = re.compile(r"skills/([A-Za-z0-9_.-]+)/SKILL\.md")


def loaded_instead(rollout: Rollout, names: Sequence[str]) -> list[str]:
    """The installed skills (of `names`) a rollout loaded: the router's answer, or in
    an agent's trace its Skill tool calls and its reads of a skill's SKILL.md (the
    Read tool, or a command that succeeded: how codex loads a skill)."""
    found = [rollout.answer] if rollout.answer and rollout.answer in names else []
    for step in rollout.trajectory.get("steps") or []:
        if not isinstance(step, dict):
            continue
        args = step.get("input")
        args = args if isinstance(args, dict) else {}
        called: list[str] = []
        if step.get("tool") == "Skill":
            name = str(args.get("skill") or args.get("command") or "")
            called = [name.lstrip("/").rsplit(":", 1)[-1]]
        elif step.get("tool") == "Read":
            called = _SKILL_FILE.findall(str(args.get("file_path") or args.get("path") or ""))
        elif step.get("type") == "command" and step.get("status") in (None, "completed"):
            if step.get("exit_code") in (None, 0):
                called = _SKILL_FILE.findall(str(step.get("command") or ""))
        for name in called:
            if name in names and name not in found:
                found.append(name)
    return found


def queries(
    rollouts: Sequence[Rollout], tasks: dict[str, Task], names: Sequence[str]
) -> list[Query]:
    """Each query of `rollouts` with its load rate and the skills loaded instead."""
    out: dict[str, Query] = {}
    for r in rollouts:
        invoked = r.trajectory.get("skill_invoked")
        if not r.scored or not isinstance(invoked, bool):
            continue
        q = out.get(r.task_id) or Query(
            r.task_id, tasks[r.task_id].prompt, bool(tasks[r.task_id].expected), 0, 0
        )
        instead = tuple(dict.fromkeys([*q.instead, *loaded_instead(r, names)]))
        out[r.task_id] = Query(
            q.task_id, q.query, q.should_trigger, q.loaded + invoked, q.traced + 1, instead
        )
    return list(out.values())


class DescriptionStep(StepRunner):
    """Runs the steps of a run that trains the description."""

    def __init__(self, core: RunCore, judge: Judge, notes: Notes, library: Library):
        super().__init__(core, judge, notes)
        if not isinstance(core.optimizer, WritesDescriptions):
            raise InputError(
                f"the optimizer {core.optimizer.name!r} cannot write a description: use an "
                "LLM optimizer (--optimizer MODEL) with --part description",
                field="optimizer",
            )
        self.writer: WritesDescriptions = core.optimizer
        self.library = sorted(
            (s.name, " ".join(s.description.split()))
            for s in library.skills
            if s.name != core.incumbent.name
        )

    def run(self, epoch: int, k: int, batch: list[Task]) -> None:
        core = self.core
        core.begin()
        step = core.state.step + 1
        core.spend(f"step {step}")
        incumbent = core.incumbent
        stage = Stage(
            stage="rollout", step=step, epoch=epoch + 1, k=k + 1, per_epoch=core.per_epoch, budget=1
        )
        core.stage(stage)
        rollouts = core.rollouts(incumbent, batch, f"step {step} · train", core.s.samples)
        outcomes = task_outcomes(rollouts)
        names = [n for n, _ in self.library]
        seen = queries(rollouts, core.tasks, names)
        misfires = [q for q in seen if outcomes[q.task_id].passed is False]
        kept = [q for q in seen if outcomes[q.task_id].passed]
        if not misfires and seen:  # nothing wrong in this batch: the split's misfires
            misfires = queries(self.beyond_batch(incumbent, batch, step), core.tasks, names)
        collisions = tuple(sorted({n for q in misfires if q.should_trigger for n in q.instead}))
        failing = tuple(sorted(q.task_id for q in misfires))
        asked: list[Proposal] = []
        report = ApplyReport()
        candidate: Skill | None = None
        reason = "no misfire to learn from and no description proposed"
        for attempt in range(2):
            if not misfires:
                break
            note = "" if attempt == 0 else self.refusal_note(report)
            proposal = self.ask(step, epoch, incumbent, misfires, kept, collisions, note, attempt)
            asked.append(proposal)
            if not proposal.edits:
                reason = (
                    f"the optimizer proposed no description ({proposal.skipped or 'empty reply'})"
                )
                break
            edit = proposal.edits[0]
            try:
                candidate = with_description(incumbent, edit.content or "")
                problems = description_problems(candidate)
            except ValueError as exc:
                candidate, problems = None, [str(exc)]
            report = ApplyReport(
                [EditResult(edit, "applied" if not problems else "invalid", "; ".join(problems))]
            )
            if not problems:
                break
            core.memory.skip(step, edit, f"fails lint: {'; '.join(problems)}")
            candidate = None
            reason = f"the proposed description fails lint ({'; '.join(problems)})" + (
                "; told why once, the next one failed too: skipped" if attempt else ""
            )

        def record(v: Verdict) -> StepRecord:
            return BatchRecord(
                step=step,
                epoch=epoch + 1,
                budget=1,
                train_mean=mean_value(outcomes),
                failures=len(misfires),
                failing=failing,
                incumbent_hash=incumbent.hash,
                collisions=collisions,
                successes=len(kept),
                unscored=sum(1 for r in rollouts if not r.scored),
                proposals=[p.to_dict() for p in asked],
                dropped=[],
                apply=report.to_list(),
                secrets=sum(p.secrets for p in asked),
                decision=v.decision,
                reason=v.reason,
                gate=v.gate,
                commit=v.commit,
                skill_hash=v.skill_hash,
                wall_s=core.seconds(),
            )

        prior = None if candidate is None else core.memory.gated_at(text_key(candidate.text))
        if candidate is None or prior is not None:
            if prior is not None:
                reason = f"the description repeats the one gated at step {prior['step']} ({prior['decision']}): skipped"
            self.judge.nothing(step, "step", reason, record)
            return
        if candidate.body != incumbent.body:  # `with_description` keeps it; never gate otherwise
            raise AssertionError("a description candidate changed the body")
        self.judge.decide(
            step,
            epoch,
            incumbent,
            candidate,
            report,
            record,
            kind="step",
            nothing="the description is unchanged",
        )

    @staticmethod
    def refusal_note(report: ApplyReport) -> str:
        problems = report.results[0].detail if report.results else ""
        return (
            f"NOTE: your last description was refused before any test: {problems}. "
            "Write one that keeps every limit above."
        )

    def ask(
        self,
        step: int,
        epoch: int,
        incumbent: Skill,
        misfires: list[Query],
        kept: list[Query],
        collisions: tuple[str, ...],
        note: str,
        attempt: int,
    ) -> Proposal:
        """The step's description call (`attempt` 0) or its one repair ask (1),
        reused from the checkpoint when the step is resumed."""
        core = self.core
        pending = core.state.pending
        if pending is not None and pending.step == step:
            done = (
                pending.proposals
                if attempt == 0
                else ([pending.repair] if pending.repair else None)
            )
            if done:
                return Proposal.from_dict(done[0]).without_secrets(incumbent)
        if attempt == 0:
            core.stage(Stage(stage="reflect", step=step, minibatches=1))
        request = DescriptionRequest(
            incumbent,
            misfires,
            kept,
            self.library,
            collisions,
            core.memory,
            step,
            epoch,
            core.context(),
            note,
        )
        core.spend(f"step {step} · describe" + (" (repair)" if attempt else ""), calls=1)
        proposal = self.writer.propose_description(request).without_secrets(incumbent)
        core.emit(
            ProposalMade(
                step=step,
                call="repair" if attempt else "description",
                tasks=[q.task_id for q in misfires],
                edits=len(proposal.edits),
                skipped=proposal.skipped,
                calls=proposal.calls,
                secrets=proposal.secrets,
            )
        )
        core.stop_if_hopeless([proposal])
        if attempt == 0:
            core.state.pend(Pending(step, proposals=[proposal.to_dict()]))
        else:
            first = pending.proposals if pending is not None and pending.step == step else None
            core.state.pend(Pending(step, proposals=first, repair=proposal.to_dict()))
        core.checkpoint()
        return proposal
