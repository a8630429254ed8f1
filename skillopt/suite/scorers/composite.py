"""The `all` scorer: several checks on one answer, as promptfoo writes several
asserts on one test (`{type: all, of: [{type: contains, expected: Paris}, {type:
regex, pattern: "^[A-Z]"}]}`).

Invariants: each part is built through `build_scorer`, so a bad part is the same
one-line error any scorer spec gives, prefixed with its index (`part 2: …`); a part
may carry its own `expected` (else it checks the item's) and a `weight`; the value is
the weighted mean of the parts' values and the answer passes only when every part
passes (or, with `threshold`, when the weighted mean reaches it: promptfoo's test
`threshold` replaces the all-pass rule the same way). A part that cannot score
(`ScorerError`) leaves the whole answer unscored, never scored 0. A part that runs
the suite's code (`python`, `command`) is refused: a composite is built without the
run-code switch a replay relies on.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field

from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams
from skillopt.suite.task import Task

_ABSENT = object()  # a part without an `expected` of its own


class AllParams(ScorerParams):
    of: list[str | dict[str, Any]] = Field(min_length=1)
    # pass when the weighted mean reaches this, instead of when every part passes
    threshold: float | None = None  # type: ignore[assignment]


class All(Scorer[AllParams]):
    """Every part must pass; the value is the weighted mean of the parts' values and
    the feedback lists each part's, so the optimizer sees which check failed."""

    name = "all"
    Params = AllParams
    needs_expected = False

    def __init__(self, params: AllParams, base_dir: Path):
        from skillopt.suite.scorers.registry import build_scorer, scorer_class

        super().__init__(params, base_dir)
        self.parts: list[tuple[Scorer[Any], Any, float]] = []
        for index, spec in enumerate(params.of, 1):
            own: Any = _ABSENT
            weight = 1.0
            if isinstance(spec, dict):
                spec = dict(spec)
                own = spec.pop("expected", _ABSENT)
                weight = spec.pop("weight", 1.0)
                if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight < 0:
                    raise ValueError(f"part {index}: weight must be a number >= 0, got {weight!r}")
            try:
                kind = spec if isinstance(spec, str) else spec.get("type")
                if isinstance(kind, str) and kind != "all" and scorer_class(kind).runs_code:
                    raise ValueError(
                        f"scorer {kind!r} runs the suite's code, which a part of 'all' may not"
                    )
                part = build_scorer(spec, base_dir)
            except ValueError as exc:
                raise ValueError(f"part {index}: {exc}") from None
            self.parts.append((part, own, float(weight)))

    def leaves(self) -> list[Scorer[Any]]:
        return [leaf for part, _, _ in self.parts for leaf in part.leaves()]

    def check_item(self, expected: Any) -> str | None:
        for index, (part, own, _) in enumerate(self.parts, 1):
            problem = part.check_item(expected if own is _ABSENT else own)
            if problem:
                where = "the item's `expected`" if own is _ABSENT else "its `expected`"
                return f"part {index} ({part.name}), {where}: {problem}"
        return None

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        scores = [
            (part(task if own is _ABSENT else replace(task, expected=own), answer, ctx), weight)
            for part, own, weight in self.parts
        ]
        total = sum(weight for _, weight in scores)
        if total:
            value = sum(s.value * weight for s, weight in scores) / total
        else:  # every weight 0: promptfoo counts such checks for pass/fail only
            value = 1.0 if all(s.passed for s, _ in scores) else 0.0
        if self.params.threshold is None:
            passed = all(s.passed for s, _ in scores)
        else:
            passed = value >= self.params.threshold
        failed = sum(not s.passed for s, _ in scores)
        head = (
            f"all {len(scores)} checks passed"
            if not failed
            else f"{failed} of {len(scores)} checks failed"
        )
        lines = [
            f"{index}. {part.name}: {'pass' if s.passed else 'FAIL'}: {s.feedback}"
            for index, ((s, _), (part, _, _)) in enumerate(zip(scores, self.parts), 1)
        ]
        return Score(value, passed, "\n".join([head, *lines]))
