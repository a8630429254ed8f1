"""What the optimizer is shown: the target as it describes itself, the state of the run,
the scored trajectories of a minibatch (the scorer's feedback and the expected answer
beside each), and the solved tasks an edit must not break.

Invariant: every field from outside (answers, feedback, trace steps) is clipped to a
fixed size, so one long answer cannot crowd the rest out of the prompt; test-split
tasks never reach it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from skillopt._util import display
from skillopt._util.display import NA
from skillopt._util.text import clip
from skillopt.optimize.base import STUCK, ProposalRequest, RunContext
from skillopt.rollouts.record import Rollout
from skillopt.suite.task import Task

FIELD_LIMIT = 1500


STEP_LIMIT = 600


NOT_DESCRIBED = "(the target did not describe itself)"


def clip_field(text: Any, limit: int) -> str:
    """`text` (a value other than a string as JSON) clipped for the optimizer's prompt,
    the cut marked on a line of its own with the number of characters cut."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return clip(s, limit, "\n…[truncated {cut} characters]")


def render_target(context: RunContext) -> str:
    """The target as every optimizer prompt describes it."""
    return context.target.strip() or NOT_DESCRIBED


def render_state(request: ProposalRequest) -> str:
    """Where the run stands: the step and the current and best validation scores
    (numbers only, no validation task)."""
    c = request.context
    where = f"Step {request.step}" + (f" of {c.total_steps}" if c.total_steps else "")
    if c.epochs:
        where += f" (epoch {request.epoch + 1} of {c.epochs})"
    best = request.memory.best_val(c.val)
    state = (
        f"{where}. Validation score of the current skill: {display.score(c.val, none=NA)}; "
        f"best so far: {display.score(best, none=NA)}."
    )
    if request.stuck >= STUCK:
        state += (
            f"\n\nNOTE: the last {request.stuck} steps on this same skill were all rejected "
            "by the validation gate or gave no candidate. Change strategy rather than adding "
            "more of the same: take out or rewrite what the skill already says that misleads "
            "the agent (a rule, an example), or address a different failure."
        )
    return f"{state}\n\n{request.note}" if request.note else state


def render_trajectories(
    rollouts: list[Rollout],
    tasks: dict[str, Task],
    task_as_seen: Callable[[str], str] | None = None,
    *,
    brief: bool = False,
) -> str:
    """Rollouts as the optimizer reads them: input (as the target read it, when
    `task_as_seen` says it reads a task otherwise than as it is), expected, answer,
    feedback, and the agent's tool steps when the harness recorded them (truncated,
    marked). `brief` keeps input, expected, answer and score only (solved tasks
    shown as behaviour to keep)."""
    parts = []
    for r in rollouts:
        task = tasks[r.task_id]
        seen = task_as_seen(task.prompt) if task_as_seen is not None else task.prompt
        lines = [
            f"## Task {r.task_id}",
            "Input (as the agent saw it"
            + (", right after the skill" if seen != task.prompt else "")
            + "):",
            "```",
            clip_field(seen, FIELD_LIMIT),
            "```",
        ]
        if task.expected is not None:
            lines += ["Expected answer:", "```", clip_field(task.expected, FIELD_LIMIT), "```"]
        lines += ["Agent's answer:", "```", clip_field(r.answer or "", FIELD_LIMIT), "```"]
        score = f"Score: {r.score:.2f} ({'pass' if r.passed else 'fail'})."
        if brief:
            parts.append("\n".join([*lines, score]))
            continue
        lines.append(f"{score} Feedback: {clip_field(r.feedback, 400)}")
        invoked = (r.trajectory or {}).get("skill_invoked")
        if invoked is not None:
            lines.append(
                "Skill invoked: " + ("yes" if invoked else "no — the agent never loaded the skill")
            )
        steps = (r.trajectory or {}).get("steps") or []
        if steps:
            lines.append("Agent's steps:")
            for s in steps[:20]:
                lines.append(f"- {clip_field(_step_text(s), STEP_LIMIT)}")
            if len(steps) > 20:
                lines.append(f"- …[{len(steps) - 20} more steps truncated]")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


NOTHING_TO_PROTECT = "(no task of this batch was solved)"


def render_protected(request: ProposalRequest) -> str:
    """The solved training tasks a failures prompt shows as behaviour to keep."""
    if not request.protect:
        return NOTHING_TO_PROTECT
    return render_trajectories(
        request.protect, request.tasks, request.context.task_as_seen, brief=True
    )


def _step_text(step: dict[str, Any]) -> str:
    kind = step.get("type", "step")
    if "command" in step:
        out = step.get("output", "")
        return f"{kind}: `{step['command']}` → {out}"
    if "tool" in step:
        call = f"{kind}: {step['tool']}({json.dumps(step.get('input', ''), ensure_ascii=False)})"
        return f"{call} → {step['output']}" if step.get("output") else call
    if "text" in step:
        return f"{kind}: {step['text']}"
    return f"{kind}: {json.dumps(step, ensure_ascii=False)}"
