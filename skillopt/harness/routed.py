"""The routed harness: a chat model acting as an agent that chooses its own skill. A
task is first routed as the router harness routes it (the model picks a skill from
the listing of names and descriptions, or none), then answered through the chat
harness with the skill it picked: the one under test, a library skill, or none. A
trigger query's rollout is the routing alone.

It is the chat model's stand-in for implicit invocation, so that `train --part
both` can train a description and a body together on a chat model: a description
that misses costs its tasks their skill, as it does in Claude Code or Codex.

Invariants: a task's answer comes from the chat call alone, and what the model saw
then (`messages`) is what it was answered from; `skill_invoked` is the routing's
choice; a failed routing is the rollout's failure (no answer is asked for); usage,
cost, time and calls are the two calls' sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.harness.base import Trajectory
from skillopt.harness.chat import ChatHarness
from skillopt.harness.router import RouterHarness
from skillopt.models.base import Model
from skillopt.skill.document import Skill
from skillopt.skill.library import Library, load_library
from skillopt.suite.task import Task


class RoutedHarness:
    name = "routed"
    version = "1"

    def __init__(self, model: Model, library: Library | None = None):
        self.router = RouterHarness(model, library)
        self.chat = ChatHarness(model)

    @classmethod
    def build(
        cls, settings: Any, target: Model | None, keep_dir: Path | None = None
    ) -> RoutedHarness:
        """The registry's factory: the resolved target routes and answers, with the
        library of `agent.library`."""
        if target is None:
            raise InputError("the routed harness needs a target model", field="target")
        return cls(target, load_library(settings.agent.library))

    @property
    def library(self) -> Library:
        return self.router.library

    def fingerprint(self) -> dict[str, Any]:
        return {
            "harness": self.name,
            "version": self.version,
            "router": self.router.fingerprint(),
            "chat": self.chat.fingerprint(),
        }

    def check(self, skills: Sequence[Skill] = ()) -> None:
        self.router.check(skills)  # the library against the skills; loads the model

    def describe_target(self) -> str:
        return (
            f"The target is the model `{self.router.model.name}` acting as an agent that "
            "chooses its skill: it first sees only the names and descriptions of the "
            f"installed skills (this one and {len(self.library.skills)} others) and the "
            "task, and picks one or none; then it answers the task with the body of the "
            "skill it picked as its system message (none when it picked none). A task "
            "whose skill was not picked is answered without it, whatever the body says."
        )

    def run(self, skill: Skill, task: Task) -> Trajectory:
        routed = self.router.run(skill, task)
        if task.is_trigger or not routed.ok:
            return routed
        chosen = routed.answer
        by_name = {s.name: s for s in self.library.skills}
        picked = skill if routed.skill_invoked else by_name.get(chosen or "", Skill.empty())
        answered = self.chat.run(picked, task)
        return Trajectory(
            messages=answered.messages,
            answer=answered.answer,
            usage=routed.usage + answered.usage,
            cost=None
            if routed.cost is None or answered.cost is None
            else routed.cost + answered.cost,
            latency_s=routed.latency_s + answered.latency_s,
            error=answered.error,
            error_kind=answered.error_kind,
            model_calls=routed.model_calls + answered.model_calls,
            skill_invoked=routed.skill_invoked,
            info={**routed.info, "picked": chosen},
            replaced=answered.replaced,
        )
