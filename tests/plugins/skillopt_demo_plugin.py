"""A tiny third-party plugin, installed by the tests into a temporary site
directory with its own dist-info (entry point group `skillopt`). It registers one of
each kind, written only against skillopt's public API."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

import skillopt
from skillopt import Completion, Decision, Proposal, Score, Scorer, Trajectory, Usage


class Shouted(Scorer):
    """Passes when the answer is the expected text in capitals."""

    name = "shouted"
    version = 1

    def score(self, task, answer, ctx):
        want = str(task.expected).upper()
        if answer.strip() == want:
            return Score(1.0, True, "shouted correctly")
        return Score(0.0, False, f"expected {want!r}, got {answer.strip()!r}")


class Parrot:
    """Model provider `parrot/...`: repeats the user's text, in capitals when the
    system prompt says SHOUT."""

    def __init__(self, name: str, settings=None):
        self.name = name

    def fingerprint(self) -> dict:
        return {"name": self.name, "plugin": "demo"}

    def complete(self, prompt, **params) -> Completion:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        system = "".join(m["content"] for m in messages if m["role"] == "system")
        text = messages[-1]["content"]
        return Completion(text.upper() if "SHOUT" in system else text, Usage(3, 2), cost=0.0)


class EchoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: str = ""


class EchoHarness:
    """Harness `demo-echo`: one call to the target with the skill as system prompt;
    its `demo_echo.prefix` setting is put before every prompt."""

    name = "demo-echo"
    version = "1"

    def __init__(self, settings, target):
        self.conf = settings.section("demo_echo", EchoSettings)
        self.target = target

    def fingerprint(self) -> dict:
        return {
            "harness": self.name,
            "prefix": self.conf.prefix,
            "target": self.target.fingerprint(),
        }

    def check(self, skills=()) -> None:
        pass

    def run(self, skill, task) -> Trajectory:
        messages = [{"role": "system", "content": skill.body}] if skill.body.strip() else []
        messages.append({"role": "user", "content": self.conf.prefix + task.prompt})
        reply = self.target.complete(messages)
        return Trajectory(tuple(messages), reply.text, reply.usage, reply.cost, model_calls=1)


def build_echo(settings, target, keep_dir=None):
    return EchoHarness(settings, target)


class AddShout:
    """Optimizer `demo-shout`: on failures, proposes one line telling the agent to
    SHOUT (no model call)."""

    name = "demo-shout"

    def propose(self, request) -> Proposal:
        if request.kind != "failures" or "SHOUT" in request.skill.body:
            return Proposal()
        edit = skillopt.Edit(
            op="add",
            section=None,
            content="SHOUT every answer.",
            rationale="failures were not in capitals",
            evidence=tuple(r.task_id for r in request.rollouts),
            source="demo-shout",
        )
        return Proposal([edit])


class Lenient:
    """Gate `demo-lenient`: keeps a candidate unless it scores lower."""

    name = "demo-lenient"

    def decide(self, incumbent, candidate) -> Decision:
        ids = [
            t
            for t in candidate
            if t in incumbent and candidate[t].value is not None and incumbent[t].value is not None
        ]
        inc = sum(incumbent[t].value for t in ids) / len(ids) if ids else None
        cand = sum(candidate[t].value for t in ids) / len(ids) if ids else None
        ok = inc is not None and cand >= inc
        reason = "not worse on validation" if ok else "worse on validation"
        return Decision(ok, reason, self.name, len(ids), inc, cand, None)


def register(registry) -> None:
    registry.scorer("shouted", Shouted, help="the expected text, in capitals")
    registry.model_provider("parrot", Parrot, help="repeats the prompt")
    registry.harness(
        "demo-echo", build_echo, settings=EchoSettings, takes_model=True, help="one call, a prefix"
    )
    registry.optimizer("demo-shout", lambda settings, meter: AddShout(), help="adds SHOUT")
    registry.gate("demo-lenient", lambda settings: Lenient(), help="keeps ties")
