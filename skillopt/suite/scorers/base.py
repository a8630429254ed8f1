"""The scorer contract and what every scorer shares: `Score`, `ScoreContext`, the
`Scorer` base class with its `ScorerParams`, and `show` for feedback.

Contract: `Scorer(task, answer, ctx) -> Score`, a value in [0, 1], a pass flag and
feedback text. A scorer judges the *answer*; when it cannot (a judge model is down,
a verifier binary is missing, a user function raises) it raises `ScorerError` and
the rollout is stored as unscored — never as a score of 0. The feedback is written
for the optimizer: it says what was expected and how the answer differed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from skillopt._util.text import clip
from skillopt.suite.task import Task


@dataclass(frozen=True)
class Score:
    value: float
    passed: bool
    feedback: str


@dataclass
class ScoreContext:
    """What a scorer may use besides the answer: the finished workspace (agent
    harnesses) and the judge model (the `judge` scorer)."""

    workspace: Path | None = None
    judge: Any = None  # a skillopt.models.Model


class ScorerParams(BaseModel):
    """A scorer's parameters as written in a suite; an unknown one is an error."""

    model_config = ConfigDict(extra="forbid")
    threshold: float = 1.0


P = TypeVar("P", bound=ScorerParams)


class Scorer(Generic[P]):
    """Base class. Subclasses set `name` (what a suite's `type:` says), `Params`,
    `needs_expected`, and implement `score`; a subclass names its parameters' class
    twice, as `Scorer[ExactParams]` (so `self.params` is typed) and as `Params` (so
    the registry can validate a suite's spec into it). `spec` is the canonical
    mapping hashed into rollout fingerprints; its key stays `type`, as suites write
    it, so fingerprints do not depend on the attribute's name."""

    name: ClassVar[str] = ""
    version: ClassVar[int] = 1
    needs_expected: bool = True
    Params: ClassVar[type[ScorerParams]] = ScorerParams

    def __init__(self, params: P, base_dir: Path):
        self.params = params
        self.base_dir = base_dir

    @property
    def spec(self) -> dict[str, Any]:
        return {"type": self.name, "v": self.version, **self.params.model_dump()}

    def __call__(self, task: Task, answer: str, ctx: ScoreContext | None = None) -> Score:
        return self.score(task, answer, ctx or ScoreContext())

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:  # pragma: no cover
        raise NotImplementedError

    def check_item(self, expected: Any) -> str | None:
        """A problem with an item's `expected` for this scorer, or None."""
        if self.needs_expected and expected is None:
            return f"required by scorer {self.name!r}"
        return None

    def _graded(self, value: float, feedback_fail: str, feedback_pass: str = "correct") -> Score:
        """Pass at `threshold`; a partial pass still says what was missing."""
        value = min(1.0, max(0.0, float(value)))
        passed = value >= self.params.threshold
        if not passed:
            return Score(value, False, feedback_fail)
        if value < 1.0:
            return Score(
                value,
                True,
                f"passed at {value:.2f} (threshold {self.params.threshold:g}), but {feedback_fail}",
            )
        return Score(value, True, feedback_pass)


def show(text: Any, limit: int = 200) -> str:
    """`text` as feedback quotes it: a string in quotes, anything else as JSON (so 1
    and '1' look different), cut after `limit` characters."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    s = clip(s, limit)
    return repr(s) if isinstance(text, str) else s  # 1 and '1' must look different
