"""The `judge` scorer: an LLM grades the answer against a rubric.

A judge model that fails or replies without a JSON score makes the rollout
unscored (`ScorerError`), never a score of 0.
"""

from __future__ import annotations

from skillopt.errors import ModelError, ScorerError
from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams, show
from skillopt.suite.scorers.structured import parse_json_answer
from skillopt.suite.task import Task


class JudgeParams(ScorerParams):
    rubric: str
    model: str | None = None
    threshold: float = 0.5


class Judge(Scorer[JudgeParams]):
    """An LLM grades the answer against a rubric (and the expected answer when the
    item has one). The judge model comes from the spec's `model`, the suite's
    `judge:` or the `--judge` setting; its reply must hold a JSON object with a
    `score` in [0, 1] and a `feedback` string."""

    name = "judge"
    needs_expected = False
    Params = JudgeParams

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        if ctx.judge is None:
            raise ScorerError("judge scorer has no judge model")
        from skillopt.prompts import render_prompt

        prompt = render_prompt(
            "judge",
            rubric=self.params.rubric,
            task=task.prompt,
            expected="(none given)" if task.expected is None else str(task.expected),
            answer=answer,
        )
        try:
            reply = ctx.judge.complete([{"role": "user", "content": prompt}])
        except ModelError as exc:
            raise ScorerError(f"judge model failed: {exc}") from exc
        try:
            data = parse_json_answer(reply.text)
            value = float(data["score"])
        except (ValueError, KeyError, TypeError):
            raise ScorerError(f"judge reply has no JSON score: {show(reply.text)}") from None
        value = min(1.0, max(0.0, value))
        feedback = str(data.get("feedback", "")).strip() or f"judge scored {value:.2f}"
        return Score(value, value >= self.params.threshold, feedback)
