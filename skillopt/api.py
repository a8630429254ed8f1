"""Library entry points: everything the CLI does is one call here.

Invariant: every input (suite, skill, settings, model names, harness) is loaded
and validated before the first model call, so a typo costs nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt.config import Settings, resolve_settings
from skillopt.errors import InputError
from skillopt.evaluation import EvalResult, SplitResult, compare
from skillopt.harness import Harness, build_harness
from skillopt.models import Model, resolve_model
from skillopt.rollout import Observer, RolloutEngine
from skillopt.skill.document import Skill
from skillopt.skill.lint import Problem, lint_paths
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite, require_split
from skillopt.suite.task import SPLITS, Suite


def lint(paths: Sequence[str | Path], *, strict: bool = False) -> list[Problem]:
    """Lint skills; see `skillopt.skill.lint`."""
    return lint_paths(list(paths), strict=strict)


@dataclass
class Context:
    """Everything a run needs, resolved and validated."""

    suite: Suite
    settings: Settings
    target: Model
    harness: Harness
    store: RolloutStore
    judge: Model | None

    def engine(self, observers: Sequence[Observer] = ()) -> RolloutEngine:
        return RolloutEngine(self.harness, self.store, concurrency=self.settings.concurrency,
                             judge=self.judge, observers=observers)


def prepare(suite: str | Path | Suite, flags: dict[str, Any] | None = None, *,
            store: RolloutStore | None = None) -> Context:
    """Load the suite, resolve settings and models, check the harness, open the store."""
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    settings = resolve_settings(flags, suite_defaults=suite.defaults, suite_path=suite.path)
    if not settings.target:
        raise InputError("no target model: pass --target MODEL, or set `target:` in "
                         "skillopt.yaml or in the suite's `defaults:`", field="target")
    target = resolve_model(settings.target, settings.model_settings(settings.target),
                           role="target")
    harness = build_harness(settings.harness, target)
    harness.check()
    judge = None
    if any(t.scorer.type == "judge" for t in suite.tasks):
        judge_name = (next((t.scorer.params.model for t in suite.tasks
                            if t.scorer.type == "judge" and t.scorer.params.model), None)
                      or settings.judge or suite.judge)
        if not judge_name:
            raise InputError("the judge scorer needs a model: set `judge:` in the suite, "
                             "`model:` in the scorer, or pass --judge MODEL",
                             path=suite.path, field="judge")
        judge = resolve_model(judge_name, settings.model_settings(judge_name), role="judge")
    if store is None:
        store = RolloutStore(settings.store)
    return Context(suite, settings, target, harness, store, judge)


def evaluate(skill: str | Path | Skill | None, suite: str | Path | Suite, *,
             split: str = "test", no_skill: bool = False, compare_no_skill: bool = False,
             flags: dict[str, Any] | None = None, store: RolloutStore | None = None,
             observers: Sequence[Observer] = ()) -> EvalResult:
    """Score a skill on a suite's split ('train', 'val', 'test' or 'all').

    `no_skill` scores the bare model instead; `compare_no_skill` scores both and
    adds a comparison (delta and flipped tasks) per split."""
    if no_skill and compare_no_skill:
        raise InputError("--no-skill and --compare-no-skill cannot be combined")
    suite_obj = suite if isinstance(suite, Suite) else load_suite(suite)
    if no_skill or skill is None:
        the_skill = Skill.empty()
    else:
        the_skill = skill if isinstance(skill, Skill) else Skill.load(skill)
    splits = [s for s in SPLITS if suite_obj.split(s)] if split == "all" else [split]
    tasks_by_split = {s: require_split(suite_obj, s) for s in splits}
    ctx = prepare(suite_obj, flags, store=store)
    try:
        return _evaluate(ctx, the_skill, tasks_by_split, compare_no_skill, observers)
    finally:
        if store is None:
            ctx.store.close()


def _evaluate(ctx: Context, the_skill: Skill, tasks_by_split: dict, compare_no_skill: bool,
              observers: Sequence[Observer]) -> EvalResult:
    engine = ctx.engine(observers)
    splits = list(tasks_by_split)

    variants = [("no-skill", Skill.empty())] if the_skill.is_empty else [("skill", the_skill)]
    if compare_no_skill and not the_skill.is_empty:
        variants.append(("no-skill", Skill.empty()))
    results: list[SplitResult] = []
    for variant, sk in variants:
        for s in splits:
            start = time.perf_counter()
            rollouts = engine.run(sk, tasks_by_split[s], samples=ctx.settings.samples,
                                  label=f"{variant} · {s}")
            results.append(SplitResult(variant, s, rollouts, time.perf_counter() - start,
                                       sk.hash))
    comparisons = []
    if len(variants) == 2:
        for s in splits:
            base, cand = (next(r for r in results if r.variant == v and r.split == s)
                          for v in ("no-skill", "skill"))
            comparisons.append(compare(base, cand))
    return EvalResult(skill=the_skill.name, skill_hash=the_skill.hash, suite=ctx.suite.name,
                      target=ctx.settings.target or "", harness=ctx.harness.name,
                      store=ctx.store.path, results=results, comparisons=comparisons)
