"""A rollout as a reader sees it (`skillopt show --task`, `eval --show-failures`, the
report's answers, eval's JSON): the prompt as the target saw it, its answer, the
expected value, the score and the scorer's feedback.

Invariant: built from what the rollout recorded (its trajectory's messages) and its
task's expected value, never by running anything again. Every text in it came
from outside (a model, an agent, a suite): whoever draws it escapes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skillopt.models import local_prompt
from skillopt.rollouts.record import Rollout

PASS, FAIL, UNSCORED, NOT_RUN = "pass", "fail", "unscored", "not run"


@dataclass(frozen=True)
class Answer:
    """One rollout of a task: what the target was sent (`messages`, the answer not
    among them, and `prompt`, the text the target read) and what came back."""

    task_id: str
    sample: int
    scored: bool
    score: float | None
    passed: bool | None
    answer: str | None
    feedback: str
    error: str | None
    expected: Any
    messages: tuple[dict[str, Any], ...]
    prompt: str

    @property
    def outcome(self) -> str:
        """pass, fail, or unscored (the target or its harness failed: no score)."""
        if not self.scored:
            return UNSCORED
        return PASS if self.passed else FAIL

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "sample": self.sample,
            "outcome": self.outcome,
            "score": self.score,
            "passed": self.passed,
            "answer": self.answer,
            "expected": self.expected,
            "feedback": self.feedback,
            "error": self.error,
            "prompt": self.prompt,
            "messages": [dict(m) for m in self.messages],
        }


def answer_of(rollout: Rollout, expected: Any, target: str | None) -> Answer:
    """The rollout as a reader sees it; `target` is the model's name (the embedded
    base model reads its messages as one completion prompt)."""
    sent = sent_messages(rollout.trajectory.get("messages"))
    return Answer(
        task_id=rollout.task_id,
        sample=rollout.sample,
        scored=rollout.scored,
        score=rollout.score,
        passed=rollout.passed,
        answer=rollout.answer,
        feedback=rollout.feedback,
        error=rollout.error,
        expected=expected,
        messages=sent,
        prompt=prompt_text(sent, target),
    )


def sent_messages(recorded: object) -> tuple[dict[str, Any], ...]:
    """The messages a trajectory recorded, without the answer that closes them; a
    malformed entry (a row written by hand, an old store) is left out."""
    if not isinstance(recorded, list):
        return ()
    kept = [
        {"role": str(m.get("role")), "content": m.get("content")}
        for m in recorded
        if isinstance(m, dict) and isinstance(m.get("content"), str)
    ]
    if kept and kept[-1]["role"] == "assistant":
        kept.pop()
    return tuple(kept)


def prompt_text(messages: Sequence[dict[str, Any]], target: str | None) -> str:
    """The prompt as the target read it: the embedded base model's one completion
    prompt (`local_prompt`), a single user message as it is, otherwise each message
    under its role."""
    if not messages:
        return ""
    if target == local_prompt.NAME:
        return local_prompt.completion_prompt(list(messages))
    if len(messages) == 1 and messages[0]["role"] == "user":
        return str(messages[0]["content"])
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


def shown(value: Any) -> str:
    """An expected value as text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def outcome_of(answers: Sequence[Answer]) -> tuple[str, float | None]:
    """A task's outcome over its samples, as the gate counts it: not run (none),
    unscored (none scored), else pass when at least half the scored samples passed;
    and the mean score of the scored ones."""
    scored = [a for a in answers if a.scored]
    if not scored:
        return (UNSCORED if answers else NOT_RUN), None
    passes = sum(1 for a in scored if a.passed)
    values = [a.score for a in scored if a.score is not None]
    mean = sum(values) / len(values) if values else None
    return (PASS if passes * 2 >= len(scored) else FAIL), mean
