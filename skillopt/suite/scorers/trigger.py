"""The `trigger` scorer: whether the agent loaded the skill for a query, against the
item's `should_trigger` (a trigger suite's items, `suite.triggers`).

Invariant: it judges the trace, never the answer: the rollout's `skill_invoked`
(what the harness saw: a Skill tool call naming the skill, a read of its SKILL.md)
reaches it through `ScoreContext`. A trace that cannot tell (a chat harness, an agent
run without its trace) raises `ScorerError`, so the rollout is unscored with the
reason, never a 0.
"""

from __future__ import annotations

from typing import Any

from skillopt.errors import ScorerError
from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams
from skillopt.suite.task import Task


class Trigger(Scorer[ScorerParams]):
    """1 when the skill loaded exactly as `expected` (the item's `should_trigger`)
    says it should; its feedback says which way a misfire went."""

    name = "trigger"
    Params = ScorerParams

    def check_item(self, expected: Any) -> str | None:
        if not isinstance(expected, bool):
            return "a trigger item's should_trigger must be true or false"
        return None

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        loaded = ctx.skill_invoked
        if loaded is None:
            raise ScorerError(
                "the run's trace does not show whether the skill was loaded (a trigger "
                "query needs an agent harness that records its trace: claude-code or "
                "codex with `agent.trace: true`)"
            )
        should = bool(task.expected)
        if loaded and should:
            return Score(1.0, True, "the skill loaded, as the query should make it")
        if not loaded and not should:
            return Score(1.0, True, "the skill stayed unloaded, as it should for this query")
        if should:
            return Score(
                0.0,
                False,
                "the skill did not load, though this query should load it (the "
                "description did not make the agent pick it)",
            )
        return Score(
            0.0,
            False,
            "the skill loaded, though this query should not load it (the description "
            "claims a request it is not for)",
        )
