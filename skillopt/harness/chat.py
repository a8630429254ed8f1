"""The chat harness: the skill body as the target sees it (`Skill.for_target`: no
protection markers) is the system prompt, the rendered task the user message, the
model's reply the answer.

Invariants:
- An empty skill sends no system message at all, so the no-skill baseline is the
  bare model, not a model with an empty instruction.
- The skill is the prompt's stable prefix: the system message comes first and is
  the same text in every rollout of a skill, with everything that varies (the task)
  after it. Providers that cache a repeated prefix by themselves (OpenAI-style)
  then bill the skill at their cached-input price after the first rollout, and
  the provider model marks it for providers that cache only a marked prefix
  (Anthropic). Nothing task-specific may ever be put before or into it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillopt.errors import InputError, ModelError
from skillopt.harness.base import Describes, ShowsTask, Trajectory
from skillopt.models.base import Completion, Model, SelfChecking
from skillopt.skill.document import Skill
from skillopt.suite.task import Task


class ChatHarness:
    name = "chat"
    version = "2"  # 2: the target sees the skill without protection markers

    def __init__(self, model: Model):
        self.model = model

    @classmethod
    def build(
        cls, settings: Any, target: Model | None, keep_dir: Path | None = None
    ) -> ChatHarness:
        """The registry's factory: the chat harness calls the resolved target itself."""
        if target is None:
            raise InputError("the chat harness needs a target model", field="target")
        return cls(target)

    def fingerprint(self) -> dict[str, Any]:
        return {"harness": self.name, "version": self.version, "target": self.model.fingerprint()}

    def check(self, skills: Sequence[Skill] = ()) -> None:
        """Models that load something (the embedded model) do it now, before any task."""
        if isinstance(self.model, SelfChecking):
            self.model.check()

    def describe_target(self) -> str:
        """The target for the optimizer: the model, how the skill and task reach it,
        and the model's own account of how it reads them when it offers one."""
        text = (
            f"The target is the model `{self.model.name}`, called through the chat "
            "harness: the skill body is the system message, the task is the user "
            "message, and the model's reply is the answer (scored as it is). The "
            "skill's frontmatter is not sent, and the model uses no tools."
        )
        if isinstance(self.model, Describes):
            text += "\n\n" + self.model.describe_target()
        return text

    def task_as_seen(self, task: str) -> str:
        """The task as the model reads it (its own shape, when it has one)."""
        return self.model.task_as_seen(task) if isinstance(self.model, ShowsTask) else task

    def messages(self, skill: Skill, task: Task) -> list[dict[str, Any]]:
        messages = []
        body = skill.for_target().body.strip()
        if body:
            messages.append({"role": "system", "content": body})
        messages.append({"role": "user", "content": task.prompt})
        return messages

    def run(self, skill: Skill, task: Task) -> Trajectory:
        messages = self.messages(skill, task)
        start = time.perf_counter()
        reply = ask(self.model, messages, start)
        if isinstance(reply, Trajectory):
            return reply
        answer = reply.text
        return Trajectory(
            messages=(*messages, {"role": "assistant", "content": answer}),
            answer=answer,
            usage=reply.usage,
            cost=reply.cost,
            latency_s=time.perf_counter() - start,
            model_calls=reply.attempts,
            replaced=reply.replaced,
        )


def ask(model: Model, messages: list[dict[str, Any]], start: float) -> Completion | Trajectory:
    """`model`'s reply to `messages`, or the trajectory of its failure (a `ModelError`
    as the model classed it; any other exception as `exception`: a model bug must not
    take the whole run down), timed from `start`."""
    try:
        return model.complete(messages)
    except ModelError as exc:
        return Trajectory(
            messages=tuple(messages),
            error=str(exc),
            error_kind=exc.kind,
            latency_s=time.perf_counter() - start,
            model_calls=exc.attempts,
        )
    except Exception as exc:
        return Trajectory(
            messages=tuple(messages),
            error=f"{type(exc).__name__}: {exc}",
            error_kind="exception",
            latency_s=time.perf_counter() - start,
            model_calls=1,
        )
