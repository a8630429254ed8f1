"""One rollout, start to end: the harness runs the task, the answer is scored in
the agent's workspace, and the workspace is put away.

Invariant: where a rollout runs (a thread of the engine, a Ray worker) does not
change what it returns; a failure of the harness or of the scorer is an *unscored*
rollout carrying the error, never a score of 0. The caller stores the result.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from skillopt._util.text import replaced_note
from skillopt.errors import ScorerError
from skillopt.harness.base import Harness, ReleasesWorkspaces, Trajectory
from skillopt.models.base import Model
from skillopt.rollouts.record import Rollout
from skillopt.skill.document import Skill
from skillopt.suite.scorers import ScoreContext
from skillopt.suite.task import Task


def run_one(
    harness: Harness,
    releases: ReleasesWorkspaces | None,
    judge: Model | None,
    skill: Skill,
    task: Task,
    sample: int,
    key: str,
) -> Rollout:
    """One rollout, start to end: the harness runs the task, the answer is scored
    (in the agent's workspace, before it is put away) and the workspace released.
    Where it runs (a thread here, a Ray worker) does not change what it returns;
    the caller stores it."""
    traj = harness.run(skill, task)
    try:
        rollout = score_trajectory(judge, skill, task, sample, key, traj)
    except BaseException:
        if releases is not None:
            releases.release(traj, failed=True)
        raise
    if releases is not None:
        kept = releases.release(traj, failed=not (rollout.scored and rollout.passed))
        if kept is not None:
            rollout = replace(rollout, trajectory={**rollout.trajectory, "workspace": str(kept)})
    return rollout


def score_trajectory(
    judge: Model | None, skill: Skill, task: Task, sample: int, key: str, traj: Trajectory
) -> Rollout:
    """The rollout of a finished trajectory: scored, or unscored when the harness or
    the scorer failed."""
    unscored = Rollout(
        key=key,
        task_id=task.id,
        split=task.split,
        sample=sample,
        skill_hash=skill.hash,
        scored=False,
        answer=traj.answer,
        usage=traj.usage,
        cost=traj.cost,
        latency_s=traj.latency_s,
        model_calls=traj.model_calls,
        trajectory=_trajectory_record(traj),
    )
    if not traj.ok:
        return replace(
            unscored,
            error=traj.error or "the harness returned no answer",
            error_kind=traj.error_kind or "harness",
        )
    try:
        verdict = task.scorer(
            task,
            traj.answer,
            ScoreContext(workspace=traj.workspace, judge=judge, skill_invoked=traj.skill_invoked),
        )
    except ScorerError as exc:
        return replace(unscored, error=str(exc), error_kind="scorer")
    except Exception as exc:  # a scorer bug: say so, don't score 0
        return replace(
            unscored, error=f"scorer crashed: {type(exc).__name__}: {exc}", error_kind="scorer"
        )
    feedback = verdict.feedback
    if traj.replaced:  # say so: the scorer saw U+FFFD where the agent sent something else
        feedback = f"{feedback} ({replaced_note(traj.replaced, 'the answer')})".lstrip()
    return replace(
        unscored, scored=True, score=verdict.value, passed=verdict.passed, feedback=feedback
    )


def _trajectory_record(traj: Trajectory) -> dict[str, Any]:
    record: dict[str, Any] = {"messages": list(traj.messages), "steps": list(traj.steps)}
    if traj.skill_invoked is not None:
        record["skill_invoked"] = traj.skill_invoked
    if traj.info:
        record["info"] = dict(traj.info)
    return record
