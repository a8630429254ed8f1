"""The CI gate (`skillopt validate`): lint a skill, then eval it on a split, with
optional thresholds and a baseline (the skill at a git ref, or at a path) scored on
the same tasks.

Exit codes: 0 every check passed; 1 a check failed (lint errors, a score below
`min_score`, more regressions than `max_regressions`, a load rate below
`min_load_rate`, nothing scored); 2 a usage
or input error (raised as `InputError` before any model call: a bad suite, an
unknown baseline ref, no skill at the path).

Invariants: lint runs first and a skill with lint errors costs no model call;
the baseline is scored through the same engine and store, so an unchanged
baseline is served from the store; unscored tasks are reported (JUnit
`skipped`) and never counted as failures or as zeros.

This package: `validate` (here) runs the gate; `checks` holds the records, the
threshold checks and the baseline; `junit` and `comment` render a result.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from skillopt.config import Settings
from skillopt.errors import InputError
from skillopt.eval.checks import Check, ValidateResult, resolve_baseline, threshold_checks
from skillopt.eval.loading import expectations, load_warnings
from skillopt.eval.results import SplitResult, compare
from skillopt.harness.base import Harness
from skillopt.models.base import Model
from skillopt.rollouts.engine import Observer
from skillopt.ship.diffs import files_diff, skill_files
from skillopt.skill.document import Skill, resolve_skill_file
from skillopt.skill.lint import lint_source


def validate(
    skill_path: str | Path,
    suite_path: str | Path,
    *,
    split: str = "test",
    min_score: float | None = None,
    baseline: str | None = None,
    max_regressions: int | None = None,
    min_load_rate: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    settings: Settings | None = None,
    target: Model | None = None,
    harness: Harness | None = None,
    judge: Model | None = None,
    observers: Sequence[Observer] = (),
    warn: Callable[[str], None] | None = None,
) -> ValidateResult:
    """Lint `skill_path`, then score it (and the baseline) on `split` of the suite."""
    from skillopt.eval import credentials
    from skillopt.eval.context import (
        budget_guard,
        check_context,
        prepare,
        settings_for,
        unpriced_roles,
    )
    from skillopt.rollouts.budget import Budget, refuse_unpriced
    from skillopt.suite.hygiene import screen
    from skillopt.suite.loader import load_suite, require_split

    if min_score is not None and not 0 <= min_score <= 1:
        raise InputError("must be between 0 and 1", field="--min-score")
    if max_regressions is not None and max_regressions < 0:
        raise InputError("must be 0 or more", field="--max-regressions")
    if max_regressions is not None and baseline is None:
        raise InputError(
            "--max-regressions needs --baseline REF|PATH to compare against",
            field="--max-regressions",
        )
    if min_load_rate is not None and not 0 <= min_load_rate <= 1:
        raise InputError("must be between 0 and 1", field="--min-load-rate")
    suite = load_suite(suite_path)
    tasks = require_split(suite, split)
    if min_load_rate is not None and suite.is_triggers:
        raise InputError(
            "a trigger suite's score already says whether the skill loaded when it "
            "should: use --min-score (the load rate is a task suite's)",
            field="--min-load-rate",
        )
    skill_path = Path(skill_path)
    # no skill at all is a usage error, as in eval, train and export (exit 2), not a
    # skill that failed its lint (exit 1)
    resolve_skill_file(skill_path)
    problems = lint_source(skill_path)  # a run's best/ is linted under its own name
    errors = [p for p in problems if p.severity == "error"]
    lint_check = Check(
        "lint",
        not errors,
        "no errors"
        if not errors
        else f"{len(errors)} error(s): " + "; ".join(str(p) for p in errors[:3]),
    )
    by_id = {t.id: t for t in tasks}
    if errors:  # nothing else runs: no model call for a broken skill
        return ValidateResult(
            skill=skill_path.name,
            skill_hash="",
            target="",
            harness="",
            checks=[lint_check],
            suite=suite.name,
            split=split,
            lint=problems,
            tasks=by_id,
            skill_path=str(skill_path),
        )
    skill = Skill.load(skill_path)
    resolved = settings_for(suite, overrides, settings)
    if min_load_rate is not None and resolved.agent.invoke == "explicit":
        raise InputError(
            "the load rate measures whether the agent picks the skill by itself; with "
            "`agent.invoke: explicit` the prompt names the skill: set `agent.invoke: auto`",
            field="--min-load-rate",
        )
    repeats = screen(suite, strict=resolved.strict_splits).warning()
    if warn is not None and repeats:
        warn(repeats)
    credentials.require(
        suite, resolved, passed={"target": target, "harness": harness, "judge": judge}
    )
    with resolve_baseline(skill, baseline) as (base_skill, base_label, base_note):
        ledger = f"validate-{uuid.uuid4().hex[:12]}"
        budgeted = Budget.of(resolved).is_set  # the judge's calls go to the ledger too
        ctx = prepare(
            suite,
            resolved,
            skills=[skill],
            target=target,
            harness=harness,
            judge=judge,
            ledger=ledger if budgeted else None,
            warn=warn,
        )
        try:
            unpriced = refuse_unpriced(Budget.of(ctx.settings), unpriced_roles(ctx))
            sized = check_context(skill, ctx.target, ctx.settings)
        except BaseException:
            ctx.store.close()
            raise
        if warn is not None:
            for notice in [*sized, *ctx.settings.notices, *unpriced]:
                warn(str(notice))
        guard = budget_guard(ctx, ledger, skill)
        engine = ctx.engine(observers, run_id=ledger if guard else None, guard=guard)
        start = time.perf_counter()
        try:
            t0 = time.perf_counter()
            rollouts = engine.run(
                skill, tasks, samples=ctx.settings.samples, label=f"skill · {split}"
            )
            expected = expectations(tasks)
            wall = time.perf_counter() - t0
            result = SplitResult("skill", split, rollouts, wall, skill.hash, expected)
            base_result = comparison = None
            if base_skill is not None:
                t0 = time.perf_counter()
                base_rollouts = engine.run(
                    base_skill, tasks, samples=ctx.settings.samples, label=f"baseline · {split}"
                )
                wall = time.perf_counter() - t0
                base_result = SplitResult(
                    "baseline", split, base_rollouts, wall, base_skill.hash, expected
                )
                comparison = compare(base_result, result)
        finally:
            engine.close()
            ctx.store.close()
        diff = (
            ""
            if base_skill is None
            else files_diff(skill_files(base_skill), skill_files(skill), skill.name)
        )
    if warn is not None:
        for line in load_warnings([result], ctx.settings.agent.invoke):
            warn(line)
    checks = [
        lint_check,
        *threshold_checks(result, comparison, min_score, max_regressions, min_load_rate),
    ]
    return ValidateResult(
        skill=skill.name,
        skill_hash=skill.hash,
        target=ctx.settings.target or ("" if ctx.target is not None else "default"),
        harness=ctx.harness.name,
        checks=checks,
        result=result,
        baseline=base_result,
        baseline_label=base_label,
        baseline_note=base_note,
        comparison=comparison,
        diff=diff,
        wall_s=time.perf_counter() - start,
        suite=suite.name,
        split=split,
        lint=problems,
        tasks=by_id,
        skill_path=str(skill_path),
        invoke=ctx.settings.agent.invoke,
    )
