"""The scorer contract and what every scorer shares: `Score`, `ScoreContext`, the
`Scorer` base class with its `ScorerParams`, and `show` for feedback.

Contract: `Scorer(task, answer, ctx) -> Score`, a value in [0, 1], a pass flag and
feedback text. A scorer judges the *answer*; when it cannot (a judge model is down,
a verifier binary is missing, a user function raises) it raises `ScorerError` and
the rollout is stored as unscored — never as a score of 0. The feedback is written
for the optimizer: it says what was expected and how the answer differed.

A scorer that runs the suite's own code (`runs_code`: a python function, a shell
verifier) can be built `Unloaded` instead (`build_scorer(..., run_code=False)`, what
a replay does unless told to trust the code): it has the same `spec`, so rollouts
are found in the store under the same keys, but nothing of the suite's code is
imported or run, and scoring afresh is refused with an `InputError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from skillopt._util.text import clip
from skillopt.errors import InputError
from skillopt.suite.task import Task


@dataclass(frozen=True)
class Score:
    value: float
    passed: bool
    feedback: str


@dataclass
class ScoreContext:
    """What a scorer may use besides the answer: the finished workspace (agent
    harnesses), the judge model (the `judge` scorer) and whether the run's trace shows
    the skill loaded (the `trigger` scorer; None when the trace cannot tell)."""

    workspace: Path | None = None
    judge: Any = None  # a skillopt.models.Model
    skill_invoked: bool | None = None


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
    # it runs code the suite names (a module, a command), so it can be built `Unloaded`
    runs_code: ClassVar[bool] = False

    def __init__(self, params: P, base_dir: Path):
        self.params = params
        self.base_dir = base_dir

    @property
    def spec(self) -> dict[str, Any]:
        return type(self).spec_of(self.params, self.base_dir)

    @classmethod
    def spec_of(cls, params: ScorerParams, base_dir: Path) -> dict[str, Any]:
        """The `spec` a scorer of these parameters has, found without building it (and
        so without running any of the suite's code)."""
        return {"type": cls.name, "v": cls.version, **params.model_dump()}

    @classmethod
    def code_of(cls, params: ScorerParams) -> str:
        """The code a `runs_code` scorer runs, as the suite writes it (for messages)."""
        return ""

    def __call__(self, task: Task, answer: str, ctx: ScoreContext | None = None) -> Score:
        return self.score(task, answer, ctx or ScoreContext())

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:  # pragma: no cover
        raise NotImplementedError

    def check_item(self, expected: Any) -> str | None:
        """A problem with an item's `expected` for this scorer, or None."""
        if self.needs_expected and expected is None:
            return f"required by scorer {self.name!r}"
        return None

    def leaves(self) -> list[Scorer[Any]]:
        """The scorers that judge an answer: this one, or a composite's parts (what
        needs a judge model is found through these)."""
        return [self]

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


class Unloaded(Scorer[ScorerParams]):
    """A `runs_code` scorer standing in without its code: the same `spec` (rollout
    keys), the same item checks, and a refusal to score. A replay builds these, so
    that rollouts served from its recording never import or run anything the suite
    names; one that would have to be scored afresh stops the replay instead."""

    name = "unloaded"

    def __init__(self, real: type[Scorer[Any]], params: ScorerParams, base_dir: Path):
        super().__init__(params, base_dir)
        self.real = real
        self.needs_expected = real.needs_expected
        self._spec = real.spec_of(params, base_dir)

    @property
    def spec(self) -> dict[str, Any]:
        return self._spec

    @property
    def code(self) -> str:
        """What the suite's scorer would run, e.g. `scorer.function: mod:score`."""
        return f"scorer.{self.real.code_of(self.params)}"

    def check_item(self, expected: Any) -> str | None:
        if self.needs_expected and expected is None:
            return f"required by scorer {self.real.name!r}"
        return None

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        raise InputError(
            f"scoring task {task.id} afresh would run the suite's own code ({self.code}), "
            "which a replay loads only when told to trust it (--trust-code)",
            path=self.base_dir,
        )


def show(text: Any, limit: int = 200) -> str:
    """`text` as feedback quotes it: a string in quotes, anything else as JSON (so 1
    and '1' look different), cut after `limit` characters."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    s = clip(s, limit)
    return repr(s) if isinstance(text, str) else s  # 1 and '1' must look different
