"""A stuck step: several steps in a row on one skill were rejected or gave no
candidate. It tells the optimizer so (`ProposalRequest.stuck`), and shows it what
the last rejected candidate answered on the failures it is asked about, the tasks
that candidate was meant to fix (training tasks only).

Invariant: a pure read of the step records and the audit, plus training rollouts
of a skill the gate has already decided (served from the store when that
candidate ran them before); no validation or test task reaches the optimizer.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillopt._util.text import clip
from skillopt.optimize.base import STUCK
from skillopt.rollouts.record import Rollout
from skillopt.skill.document import Skill
from skillopt.training.core import RunCore
from skillopt.training.steps import BatchRecord, StepRecord

ANSWER_LIMIT = 200  # characters of an answer shown


def unproductive(steps: Sequence[StepRecord], incumbent: Skill) -> int:
    """The steps in a row, last first, that ran on `incumbent` and were rejected or
    gave no candidate (slow updates not counted)."""
    n = 0
    for rec in reversed(steps):
        if not isinstance(rec, BatchRecord):
            continue
        if rec.incumbent_hash != incumbent.hash or rec.decision == "accepted":
            break
        n += 1
    return n


def tried(
    core: RunCore, incumbent: Skill, failures: list[Rollout], step: int, stuck: int
) -> tuple[int, dict[str, Rollout]] | None:
    """(the step of the last candidate the gate rejected on `incumbent`, its rollouts
    on the tasks of `failures`), when the run is stuck and there is one, for an
    optimizer that reads a prompt (one that calls a model: `exemplars` reads none)."""
    if stuck < STUCK or not failures or not core.calls_model:
        return None
    rec = next(
        (
            r
            for r in reversed(core.state.steps)
            if isinstance(r, BatchRecord)
            and r.incumbent_hash == incumbent.hash
            and r.decision == "rejected"
            and r.commit
        ),
        None,
    )
    if rec is None or rec.commit is None:
        return None
    candidate = core.skill(core.audit.skill_text(rec.commit))
    tasks = [core.tasks[r.task_id] for r in failures]
    label = f"step {step} · train (the candidate rejected at step {rec.step})"
    return rec.step, {r.task_id: r for r in core.rollouts(candidate, tasks, label) if r.scored}


def tried_note(at: int, answers: dict[str, Rollout], failures: list[Rollout]) -> str:
    """What the rejected candidate of step `at` answered on these failures, in words."""
    lines = [
        f"What the candidate rejected at step {at} answered on these failed tasks (its edits "
        "were meant to fix them; learn from what it still got wrong):"
    ]
    for r in failures:
        got = answers.get(r.task_id)
        if got is not None:
            verdict = "now passes" if got.passed else "still fails"
            lines.append(f"- {r.task_id}: {clip(got.answer or '', ANSWER_LIMIT)!r} ({verdict})")
    return "\n".join(lines) if len(lines) > 1 else ""
