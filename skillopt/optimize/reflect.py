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

from collections.abc import Callable
from typing import Any

from skillopt.errors import ModelError
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
from skillopt.optimize.describe import (
    DESCRIPTION_SCHEMA,
    LIMITS,
    DescriptionRequest,
    description_edit,
    parse_description,
    render_library,
    render_queries,
)
from skillopt.optimize.memory import Memory
from skillopt.optimize.prompting import (
    clip_field,
    render_protected,
    render_state,
    render_target,
    render_trajectories,
)
from skillopt.optimize.replies import EDITS_SCHEMA, no_json_reason, parse_edits
from skillopt.prompts import load_prompt, render_prompt
from skillopt.skill.document import Skill
from skillopt.suite.scorers import parse_json_answer

RAW_LIMIT = 20_000  # characters of a raw reply kept in the checkpoint
REPAIR_ECHO_LIMIT = 8_000  # characters of a bad reply quoted back in the repair re-ask


# What the slow update asks for, by how the target reads a skill: a base model that
# continues a completion prompt imitates the worked examples right before its cue and
# gains little from prose, so its guidance is worked examples placed last; a chat
# model is given general lessons in bullets
COMPLETION_GUIDANCE = {
    "form": (
        "This target continues the text right before its answer cue and learns from "
        "worked examples in exactly the cue's shape far more than from prose (see the "
        "target above). Write the guidance as worked examples: at most 6, each an input "
        "and its answer in the cue's shape, chosen from the training tasks above that "
        "still fail or regressed, one for each kind of input that went wrong; before "
        "them at most 2 one-line rules, only for a lesson no example can show."
    ),
    "place": "at the very end of the skill, right before the cue, where this target reads best",
    "shape": "<a worked example in the cue's shape>\\n\\n<another worked example>",
}
CHAT_GUIDANCE = {
    "form": (
        "Write short, general guidance for the agent — at most 6 bullet points — that "
        "captures the lessons that hold across these tasks."
    ),
    "place": "at the end of the skill (before its worked examples, when it has some)",
    "shape": "- first lesson\\n- second lesson",
}


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
                    {"role": "assistant", "content": clip_field(raw, REPAIR_ECHO_LIMIT)},
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
        return _proposal(edits or [], skipped, acc, raw)

    def propose_description(self, request: DescriptionRequest) -> Proposal:
        """A new description for the misfires of `request` (`WritesDescriptions`)."""
        old = request.skill.description
        prompt = render_prompt(
            "reflect_description",
            target=render_target(request.context),
            skill_name=request.skill.name,
            description=old,
            misfires=render_queries(request.misfires, "(none)"),
            kept=render_queries(request.kept, "(none)"),
            library=render_library(request.library, request.collisions),
            memory=request.memory.render(),
            limits=LIMITS,
            note=f"\n{request.note}\n" if request.note else "",
        )
        parsed, skipped, acc, raw = self._ask(
            prompt, parse_description, self._structured(DESCRIPTION_SCHEMA, "skill_description")
        )
        ids = [q.task_id for q in request.misfires]
        edits = [description_edit(old, parsed[0], parsed[1], ids)] if parsed else []
        return _proposal(edits, skipped, acc, raw)

    def _text(self, prompt: str, key: str) -> TextResult:
        def parse(text: str) -> str:
            try:
                data = parse_json_answer(text)
            except ValueError as exc:
                raise ValueError(no_json_reason(exc)) from None
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
                **(COMPLETION_GUIDANCE if context.completion else CHAT_GUIDANCE),
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


def _proposal(edits: list[Any], skipped: str | None, acc: dict[str, Any], raw: str) -> Proposal:
    """A proposal of `edits` with what asking for them cost (`_ask`'s accounting)."""
    return Proposal(
        edits,
        skipped,
        acc["calls"],
        acc["usage"],
        acc["cost"],
        clip_field(raw, RAW_LIMIT),
        acc["error_kind"],
        acc["replaced"],
    )
