"""Scoring a skill on a suite's splits (`skillopt eval`): the skill, the bare model,
or both with a paired comparison per split."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from skillopt.config import Settings
from skillopt.errors import InputError
from skillopt.eval import credentials
from skillopt.eval.context import (
    Context,
    Warn,
    budget_guard,
    check_context,
    check_skill,
    load,
    prepare,
    settings_for,
    tell,
    unpriced_roles,
)
from skillopt.eval.loading import expectations, load_warnings
from skillopt.eval.results import EvalResult, SplitResult, compare
from skillopt.harness import Harness
from skillopt.models.base import Model
from skillopt.rollouts.budget import Budget, refuse_unpriced
from skillopt.rollouts.engine import Observer
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.hygiene import screen
from skillopt.suite.loader import require_split
from skillopt.suite.task import SPLITS, Suite, Task


def evaluate(
    skill: str | Path | Skill | None,
    suite: str | Path | Suite,
    overrides: Mapping[str, Any] | None = None,
    *,
    split: str = "test",
    no_skill: bool = False,
    compare_no_skill: bool = False,
    settings: Settings | None = None,
    store: RolloutStore | None = None,
    target: Model | None = None,
    harness: Harness | None = None,
    judge: Model | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> EvalResult:
    """See `skillopt.api.evaluate`."""
    if no_skill and compare_no_skill:
        raise InputError("--no-skill and --compare-no-skill cannot be combined")
    suite_obj = load(suite)
    if no_skill or skill is None:
        the_skill = Skill.empty()
    else:
        the_skill = skill if isinstance(skill, Skill) else Skill.load(skill)
    splits = [s for s in SPLITS if suite_obj.split(s)] if split == "all" else [split]
    tasks_by_split = {s: require_split(suite_obj, s) for s in splits}
    source = None if no_skill or skill is None or isinstance(skill, Skill) else skill
    warnings = check_skill(the_skill, source)
    resolved = settings_for(suite_obj, overrides, settings)
    # near-copies across splits are told (or refused) before anything is resolved
    found = screen(suite_obj, strict=resolved.strict_splits)
    tell(warn, [line for line in [found.warning()] if line])
    credentials.require(
        suite_obj, resolved, passed={"target": target, "harness": harness, "judge": judge}
    )
    # with a budget, what this evaluation pays (its judge's calls included) is written
    # to the ledger under an id of its own, and each batch is checked against it first
    ledger = f"eval-{uuid.uuid4().hex[:12]}" if Budget.of(resolved).is_set else None
    ctx = prepare(
        suite_obj,
        resolved,
        store=store,
        skills=[the_skill],
        target=target,
        harness=harness,
        judge=judge,
        ledger=ledger,
        warn=warn,
    )
    try:
        tell(warn, warnings + check_context(the_skill, ctx.target, ctx.settings))
        tell(warn, ctx.settings.notices)
        tell(warn, refuse_unpriced(Budget.of(ctx.settings), unpriced_roles(ctx)))
        result = _evaluate(ctx, the_skill, tasks_by_split, compare_no_skill, observers, ledger)
        tell(warn, load_warnings(result.results, result.invoke))
        return replace(result, near_duplicates=found.to_dicts())
    finally:
        if store is None:
            ctx.store.close()


def _evaluate(
    ctx: Context,
    the_skill: Skill,
    tasks_by_split: dict[str, list[Task]],
    compare_no_skill: bool,
    observers: Sequence[Observer],
    ledger: str | None,
) -> EvalResult:
    guard = budget_guard(ctx, ledger, the_skill) if ledger is not None else None
    engine = ctx.engine(observers, run_id=ledger, guard=guard)
    try:
        splits = list(tasks_by_split)
        variants = [("no-skill", Skill.empty())] if the_skill.is_empty else [("skill", the_skill)]
        if compare_no_skill and not the_skill.is_empty:
            variants.append(("no-skill", Skill.empty()))
        results: list[SplitResult] = []
        for variant, sk in variants:
            for s in splits:
                start = time.perf_counter()
                rollouts = engine.run(
                    sk, tasks_by_split[s], samples=ctx.settings.samples, label=f"{variant} · {s}"
                )
                wall = time.perf_counter() - start
                expected = expectations(tasks_by_split[s])
                wanted = {t.id: t.expected for t in tasks_by_split[s]}
                results.append(SplitResult(variant, s, rollouts, wall, sk.hash, expected, wanted))
    finally:
        engine.close()
    comparisons = []
    if len(variants) == 2:
        for s in splits:
            base, cand = (
                next(r for r in results if r.variant == v and r.split == s)
                for v in ("no-skill", "skill")
            )
            comparisons.append(compare(base, cand))
    return EvalResult(
        skill=the_skill.name,
        skill_hash=the_skill.hash,
        suite=ctx.suite.name,
        target=ctx.settings.target or "",
        harness=ctx.harness.name,
        store=ctx.store.path,
        results=results,
        comparisons=comparisons,
        splits=ctx.suite.counts(),
        invoke=ctx.settings.agent.invoke,
    )
