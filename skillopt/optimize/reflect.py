"""Reflection: the optimizer turns scored rollouts into proposed edits.

Contract (`Optimizer`): `propose(request) -> Proposal` never raises for a bad
reply or a failed call. A reply that is not JSON, breaks the schema or uses an
unknown op gets one repair re-ask; if that fails too the minibatch is recorded as
*skipped* with the reason. The optimizer only ever sees training rollouts.

Every prompt describes the target (`RunContext.target`, from the harness) and the
reflection prompts say where the run stands (step, scores, memory): scores and
counts, never a validation or test task.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from skillopt._util import display
from skillopt._util.display import NA
from skillopt._util.text import clip
from skillopt.errors import ModelError, first_error
from skillopt.models.base import Completion, JsonMode, Model, Usage
from skillopt.optimize.base import (
    NO_CONTEXT,
    NoteTaker,
    Optimizer,
    Proposal,
    ProposalRequest,
    RunContext,
    SlowUpdater,
    TextResult,
)
from skillopt.optimize.memory import Memory
from skillopt.prompts import load_prompt, render_prompt
from skillopt.rollouts.record import Rollout
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit
from skillopt.suite.scorers import NO_JSON, parse_json_answer
from skillopt.suite.task import Task

FIELD_LIMIT = 1500
STEP_LIMIT = 600
RAW_LIMIT = 20_000  # characters of a raw reply kept in the checkpoint
REPAIR_ECHO_LIMIT = 8_000  # characters of a bad reply quoted back in the repair re-ask
NOT_DESCRIBED = "(the target did not describe itself)"


# ---------------------------------------------------------------------- reply schema
class EditSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")
    op: Literal["add", "delete", "replace"]
    anchor: str | None = None
    section: str | None = None
    content: str | None = None
    rationale: str = ""
    evidence: list[str] = []


class EditsReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    edits: list[EditSpec]


EDITS_SCHEMA = {
    "type": "object",
    "properties": {
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["add", "delete", "replace"]},
                    "anchor": {"type": ["string", "null"]},
                    "section": {"type": ["string", "null"]},
                    "content": {"type": ["string", "null"]},
                    "rationale": {"type": "string"},
                    "evidence": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["op", "anchor", "section", "content", "rationale", "evidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["edits"],
    "additionalProperties": False,
}


def parse_edits(text: str, source: str) -> list[Edit]:
    """Edits from a model reply (bare JSON, fenced, or inside prose). Raises
    ValueError with a reason the repair prompt can quote."""
    try:
        data = parse_json_answer(text)
    except ValueError as exc:
        raise ValueError(_no_json(exc)) from None
    if isinstance(data, list):
        data = {"edits": data}
    try:
        reply = EditsReply.model_validate(data)
    except ValidationError as exc:
        loc, msg = first_error(exc)
        raise ValueError(f"{loc}: {msg}") from None
    edits = []
    for i, e in enumerate(reply.edits):
        if e.op in ("delete", "replace") and not (e.anchor or "").strip():
            raise ValueError(f"edits.{i}: a {e.op} needs an anchor copied from the skill")
        if e.op in ("add", "replace") and not (e.content or "").strip():
            raise ValueError(f"edits.{i}: an {e.op} needs content")
        edits.append(
            Edit(
                op=e.op,
                anchor=e.anchor or None,
                section=e.section or None,
                content=e.content,
                rationale=e.rationale,
                evidence=tuple(e.evidence),
                source=source,
            )
        )
    return edits


def _no_json(exc: ValueError) -> str:
    """The repair prompt's reason for a reply `parse_json_answer` refused."""
    return "the reply contains no JSON object" if str(exc) == NO_JSON else str(exc)


def _clip(text: Any, limit: int) -> str:
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
    return (
        f"{where}. Validation score of the current skill: {display.score(c.val, none=NA)}; "
        f"best so far: {display.score(best, none=NA)}."
    )


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
            _clip(seen, FIELD_LIMIT),
            "```",
        ]
        if task.expected is not None:
            lines += ["Expected answer:", "```", _clip(task.expected, FIELD_LIMIT), "```"]
        lines += ["Agent's answer:", "```", _clip(r.answer or "", FIELD_LIMIT), "```"]
        score = f"Score: {r.score:.2f} ({'pass' if r.passed else 'fail'})."
        if brief:
            parts.append("\n".join([*lines, score]))
            continue
        lines.append(f"{score} Feedback: {_clip(r.feedback, 400)}")
        invoked = (r.trajectory or {}).get("skill_invoked")
        if invoked is not None:
            lines.append(
                "Skill invoked: " + ("yes" if invoked else "no — the agent never loaded the skill")
            )
        steps = (r.trajectory or {}).get("steps") or []
        if steps:
            lines.append("Agent's steps:")
            for s in steps[:20]:
                lines.append(f"- {_clip(_step_text(s), STEP_LIMIT)}")
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


class LLMOptimizer:
    """An optimizer backed by any `Model` (litellm, scripted)."""

    def __init__(self, model: Model):
        self.model = model
        self.name = model.name
        self._system = load_prompt("optimizer_system")

    def _structured(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        """The model's JSON-mode arguments, when the model offers any."""
        return self.model.json_params(schema, name) if isinstance(self.model, JsonMode) else {}

    def _call(
        self, messages: list[dict[str, Any]], params: dict[str, Any], acc: dict[str, Any]
    ) -> str:
        try:
            reply = self._counted(messages, params, acc)
        except ModelError as exc:
            if params and exc.kind == "bad_request":  # provider refused the JSON mode
                reply = self._counted(messages, {}, acc)
            else:
                raise
        return reply.text

    def _counted(
        self, messages: list[dict[str, Any]], params: dict[str, Any], acc: dict[str, Any]
    ) -> Completion:
        """One call, counted whether it is answered or fails (a failed call is still a
        request the provider saw)."""
        try:
            reply = self.model.complete(messages, **params)
        except ModelError as exc:
            acc["calls"] += exc.attempts
            raise
        acc["calls"] += reply.attempts
        acc["usage"] = acc["usage"] + reply.usage
        acc["replaced"] += reply.replaced
        if reply.cost is not None:
            acc["cost"] = (acc["cost"] or 0.0) + reply.cost
        return reply

    def _ask(
        self, prompt: str, parse: Callable[[str], Any], params: dict[str, Any]
    ) -> tuple[Any, str | None, dict[str, Any], str]:
        """(parsed, why skipped, accounting, last raw reply). Never raises for a reply:
        one that cannot be parsed (not JSON, nested too deep, the wrong shape) gets one
        repair re-ask, then the request is skipped with the reason."""
        acc = {"calls": 0, "usage": Usage(), "cost": None, "replaced": 0, "error_kind": None}
        messages = [
            {"role": "system", "content": self._system},
            {"role": "user", "content": prompt},
        ]
        raw = ""
        try:
            raw = self._call(messages, params, acc)
            try:
                return parse(raw), None, acc, raw
            except (ValueError, RecursionError) as first:
                messages += [
                    {"role": "assistant", "content": _clip(raw, REPAIR_ECHO_LIMIT)},
                    {"role": "user", "content": render_prompt("repair", error=first)},
                ]
                raw = self._call(messages, params, acc)
                try:
                    return parse(raw), None, acc, raw
                except (ValueError, RecursionError) as second:
                    return None, f"invalid reply after one repair: {second}", acc, raw
        except ModelError as exc:
            acc["error_kind"] = exc.kind
            return None, f"optimizer call failed: {exc}", acc, raw

    def propose(self, request: ProposalRequest) -> Proposal:
        template = "reflect_failures" if request.kind == "failures" else "reflect_successes"
        prompt = render_prompt(
            template,
            target=render_target(request.context),
            state=render_state(request),
            skill=request.skill.body,
            trajectories=render_trajectories(
                request.rollouts, request.tasks, request.context.task_as_seen
            ),
            memory=request.memory.render(),
            notes=request.memory.render_notes(),
            budget=request.budget,
            edit_limits=request.edit_limits,
            protect=render_protected(request),  # a slot of the failures prompt only
        )
        edits, skipped, acc, raw = self._ask(
            prompt,
            lambda t: parse_edits(t, request.kind),
            self._structured(EDITS_SCHEMA, "skill_edits"),
        )
        return Proposal(
            edits or [],
            skipped,
            acc["calls"],
            acc["usage"],
            acc["cost"],
            _clip(raw, RAW_LIMIT),
            acc["error_kind"],
            acc["replaced"],
        )

    def _text(self, prompt: str, key: str) -> TextResult:
        def parse(text: str) -> str:
            try:
                data = parse_json_answer(text)
            except ValueError as exc:
                raise ValueError(_no_json(exc)) from None
            if not isinstance(data, dict) or not isinstance(data.get(key), str):
                raise ValueError(f"expected an object with a string field {key!r}")
            value: str = data[key]
            return value.strip()

        schema = {
            "type": "object",
            "properties": {key: {"type": "string"}},
            "required": [key],
            "additionalProperties": False,
        }
        text, skipped, acc, _ = self._ask(prompt, parse, self._structured(schema, f"skill_{key}"))
        return TextResult(
            text or None,
            skipped,
            acc["calls"],
            acc["usage"],
            acc["cost"],
            acc["error_kind"],
            acc["replaced"],
        )

    def slow_update(
        self,
        skill: Skill,
        previous: Skill,
        comparison: str,
        memory: Memory,
        context: RunContext = NO_CONTEXT,
    ) -> TextResult:
        return self._text(
            render_prompt(
                "slow_update",
                target=render_target(context),
                skill=skill.body,
                previous=previous.body,
                comparison=comparison,
                memory=memory.render(),
            ),
            "guidance",
        )

    def meta_notes(self, epoch: int, history: str, context: RunContext = NO_CONTEXT) -> TextResult:
        return self._text(
            render_prompt(
                "meta_notes", target=render_target(context), epoch=epoch, history=history
            ),
            "notes",
        )


__all__ = [
    "LLMOptimizer",
    "NoteTaker",
    "Optimizer",
    "Proposal",
    "ProposalRequest",
    "RunContext",
    "SlowUpdater",
    "TextResult",
    "parse_edits",
    "render_protected",
    "render_state",
    "render_target",
    "render_trajectories",
]
