"""Evaluation results: per-split statistics (with whether the skill loaded: its load
rate, and a trigger suite's precision and recall, from `loading`) and
skill-versus-baseline comparisons.

Invariant: unscored rollouts are counted and shown but never enter a mean or a
pass rate; with several samples per task, a task's value is the mean of its
scored samples and it passes when at least half of them pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skillopt.eval.loading import LoadRate, TriggerReport, load_rate, trigger_report
from skillopt.rollouts.outcomes import (
    TaskOutcome,
    mean_value,
    pass_rate,
    scored_count,
    task_outcomes,
)
from skillopt.rollouts.record import Rollout
from skillopt.rollouts.view import PASS, Answer, answer_of, outcome_of


@dataclass
class SplitResult:
    """One skill variant ('skill' or 'no-skill') on one split."""

    variant: str
    split: str
    rollouts: list[Rollout]
    wall_s: float = 0.0
    skill_hash: str = ""
    # a trigger suite's queries: each one's should_trigger (empty for a task suite)
    expected: dict[str, bool] = field(default_factory=dict)
    # each task's expected value, for the reader of its answers (`answers`)
    task_expected: dict[str, Any] = field(default_factory=dict)

    @property
    def outcomes(self) -> dict[str, TaskOutcome]:
        return task_outcomes(self.rollouts)

    @property
    def n(self) -> int:
        """Tasks with at least one scored sample."""
        return scored_count(self.outcomes)

    @property
    def tasks(self) -> int:
        return len(self.outcomes)

    @property
    def unscored(self) -> int:
        return sum(1 for r in self.rollouts if not r.scored)

    @property
    def cached(self) -> int:
        return sum(1 for r in self.rollouts if r.cached)

    @property
    def mean(self) -> float | None:
        return mean_value(self.outcomes)

    @property
    def pass_rate(self) -> float | None:
        return pass_rate(self.outcomes)

    @property
    def fresh(self) -> list[Rollout]:
        """Rollouts run (and paid for) by this invocation, not served from the store."""
        return [r for r in self.rollouts if not r.cached]

    @property
    def tokens(self) -> int:
        return sum(r.usage.total for r in self.fresh)

    @property
    def input_tokens(self) -> int:
        return sum(r.usage.input_tokens for r in self.fresh)

    @property
    def cached_tokens(self) -> int:
        """Input tokens of the fresh rollouts that the provider read from its prompt
        cache (part of `tokens`, billed at its cache-read price)."""
        return sum(r.usage.cached_input_tokens for r in self.fresh)

    @property
    def cost(self) -> float | None:
        """USD spent now; None when no fresh rollout had a known price."""
        known = [r.cost for r in self.fresh if r.cost is not None]
        return sum(known) if known else None

    @property
    def cost_complete(self) -> bool:
        return all(r.cost is not None for r in self.fresh if r.model_calls)

    @property
    def model_calls(self) -> int:
        return sum(r.model_calls for r in self.fresh)

    @property
    def invocations(self) -> tuple[int, int]:
        """(scored rollouts whose trace shows the skill invoked, scored rollouts whose
        trace can tell). An unscored rollout (the agent never answered) says nothing
        about whether the skill is used."""
        known = [
            invoked
            for r in self.rollouts
            if r.scored and isinstance(invoked := r.trajectory.get("skill_invoked"), bool)
        ]
        return sum(known), len(known)

    @property
    def loads(self) -> LoadRate:
        """In how many tasks the skill loaded, as the traces show (`loading`)."""
        return load_rate(self.rollouts)

    @property
    def triggers(self) -> TriggerReport | None:
        """A trigger suite's precision, recall and per-query load rate; None for a
        task suite."""
        return trigger_report(self.rollouts, self.expected) if self.expected else None

    @property
    def kept_workspaces(self) -> list[str]:
        return [r.trajectory["workspace"] for r in self.fresh if r.trajectory.get("workspace")]

    def answers(self, target: str | None) -> list[Answer]:
        """Each rollout as a reader sees it: the prompt as `target` saw it, the answer,
        the expected value, score and feedback."""
        return [answer_of(r, self.task_expected.get(r.task_id), target) for r in self.rollouts]

    def failures(self, target: str | None) -> list[list[Answer]]:
        """The tasks that failed or went unscored, each with its samples' answers, in
        the order they were run."""
        by: dict[str, list[Answer]] = {}
        for a in self.answers(target):
            by.setdefault(a.task_id, []).append(a)
        return [found for found in by.values() if outcome_of(found)[0] != PASS]

    def summary(self) -> dict[str, Any]:
        invoked, traced = self.invocations
        return {
            "variant": self.variant,
            "split": self.split,
            "skill_hash": self.skill_hash,
            "skill_invoked": invoked if traced else None,
            "traced": traced,
            "mean": self.mean,
            "pass_rate": self.pass_rate,
            "n": self.n,
            "tasks": self.tasks,
            "unscored": self.unscored,
            "cached": self.cached,
            "model_calls": self.model_calls,
            "tokens": self.tokens,
            "cached_tokens": self.cached_tokens,
            "cost": self.cost,
            "cost_complete": self.cost_complete,
            "wall_s": round(self.wall_s, 3),
            "load": self.loads.to_dict(),
            "triggers": triggers.to_dict() if (triggers := self.triggers) else None,
        }


@dataclass
class Comparison:
    """`candidate` against `baseline` on the tasks both scored."""

    split: str
    baseline: str
    candidate: str
    n: int
    baseline_mean: float | None
    candidate_mean: float | None
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_fail: list[str] = field(default_factory=list)

    @property
    def delta(self) -> float | None:
        if self.baseline_mean is None or self.candidate_mean is None:
            return None
        return self.candidate_mean - self.baseline_mean

    def summary(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "n": self.n,
            "baseline_mean": self.baseline_mean,
            "candidate_mean": self.candidate_mean,
            "delta": self.delta,
            "fail_to_pass": self.fail_to_pass,
            "pass_to_fail": self.pass_to_fail,
        }


def compare(baseline: SplitResult, candidate: SplitResult) -> Comparison:
    """Paired comparison over tasks scored in both results."""
    b, c = baseline.outcomes, candidate.outcomes
    paired = [t for t in c if t in b and b[t].value is not None and c[t].value is not None]
    bm = sum(b[t].value or 0.0 for t in paired) / len(paired) if paired else None
    cm = sum(c[t].value or 0.0 for t in paired) / len(paired) if paired else None
    return Comparison(
        split=candidate.split,
        baseline=baseline.variant,
        candidate=candidate.variant,
        n=len(paired),
        baseline_mean=bm,
        candidate_mean=cm,
        fail_to_pass=[t for t in paired if not b[t].passed and c[t].passed],
        pass_to_fail=[t for t in paired if b[t].passed and not c[t].passed],
    )


@dataclass
class EvalResult:
    skill: str
    skill_hash: str
    suite: str
    target: str
    harness: str
    store: str
    results: list[SplitResult]
    comparisons: list[Comparison] = field(default_factory=list)
    splits: dict[str, int] = field(default_factory=dict)  # the suite's items per split
    # val and test items that nearly repeat an earlier split's (`suite.hygiene`)
    near_duplicates: list[dict[str, Any]] = field(default_factory=list)
    # `agent.invoke`: under `auto` the agent picks the skill itself, so its load rate
    # says whether the description fires; under `explicit` the prompt names it
    invoke: str = "auto"

    def result(self, variant: str, split: str) -> SplitResult | None:
        for r in self.results:
            if r.variant == variant and r.split == split:
                return r
        return None

    @property
    def all_rollouts(self) -> list[Rollout]:
        return [r for res in self.results for r in res.rollouts]

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "skill_hash": self.skill_hash,
            "suite": self.suite,
            "target": self.target,
            "harness": self.harness,
            "store": self.store,
            "splits": dict(self.splits),
            "near_duplicates": list(self.near_duplicates),
            "invoke": self.invoke,
            "results": [r.summary() for r in self.results],
            "comparisons": [c.summary() for c in self.comparisons],
            # each rollout with what it was sent and what was expected of it
            "rollouts": [
                {"variant": res.variant, **r.to_dict(), **_seen(a)}
                for res in self.results
                for r, a in zip(res.rollouts, res.answers(self.target))
            ],
        }


def _seen(a: Answer) -> dict[str, Any]:
    return {"expected": a.expected, "prompt": a.prompt, "messages": list(a.messages)}
