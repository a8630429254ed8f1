"""The entry points that score a skill on every combination of targets and harnesses
(`skillopt eval --target A --target B --harness chat --harness claude-code`), hold
every combination to `validate`'s thresholds, and draw the matrix as one HTML page.

Invariant: each cell is an ordinary `evaluate` (or `validate`), with the same
settings, store and cache; a cell that cannot run here is reported with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.api.options import Executor, Section, overrides

if TYPE_CHECKING:
    from skillopt.eval.context import Warn
    from skillopt.eval.matrix import MatrixResult, MatrixValidation
    from skillopt.rollouts.engine import Observer


def evaluate_matrix(
    skill: str | Path,
    suite: str | Path,
    *,
    targets: Sequence[str] = (),
    harnesses: Sequence[str] = (),
    split: str = "test",
    judge: str | None = None,
    samples: int | None = None,
    concurrency: int | None = None,
    executor: Executor | None = None,
    store: str | Path | None = None,
    agent: Section | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    allow_long_skill: bool | None = None,
    strict_splits: bool | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> MatrixResult:
    """Score `skill` and the bare model on `split` of the suite for every target on
    every harness (targets outer; none given: the settings' own). A cell whose key
    is not set or whose agent CLI is not installed is returned unscored with its
    reason; an unknown name is an `InputError` before any model call. The budget
    and limits hold in each cell."""
    from skillopt.eval.matrix import evaluate_matrix as run

    flags = overrides(
        judge=judge,
        samples=samples,
        concurrency=concurrency,
        executor=executor,
        store=None if store is None else str(store),
        agent=agent,
        budget_usd=budget_usd,
        max_target_rollouts=max_target_rollouts,
        time_limit=time_limit,
        allow_unpriced=allow_unpriced,
        allow_long_skill=allow_long_skill,
        strict_splits=strict_splits,
    )
    return run(
        skill,
        suite,
        flags,
        targets=targets,
        harnesses=harnesses,
        split=split,
        observers=observers,
        warn=warn,
    )


def validate_matrix(
    skill: str | Path,
    suite: str | Path,
    *,
    targets: Sequence[str] = (),
    harnesses: Sequence[str] = (),
    split: str = "test",
    min_score: float | None = None,
    baseline: str | None = None,
    max_regressions: int | None = None,
    min_load_rate: float | None = None,
    judge: str | None = None,
    samples: int | None = None,
    concurrency: int | None = None,
    executor: Executor | None = None,
    store: str | Path | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    allow_long_skill: bool | None = None,
    strict_splits: bool | None = None,
    agent: Section | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> MatrixValidation:
    """`validate` in every (target, harness) cell: lint once, then each cell scored
    and held to the thresholds (`min_score` on each cell's mean, …). A cell that
    cannot run fails, its reason named; `result.failures` names the cell of each
    failed check, and `result.exit_code` is 0 when every check of every cell passed."""
    from skillopt.eval.matrix import validate_matrix as run

    flags = overrides(
        judge=judge,
        samples=samples,
        concurrency=concurrency,
        executor=executor,
        store=None if store is None else str(store),
        budget_usd=budget_usd,
        max_target_rollouts=max_target_rollouts,
        time_limit=time_limit,
        allow_unpriced=allow_unpriced,
        allow_long_skill=allow_long_skill,
        strict_splits=strict_splits,
        agent=agent,
    )
    return run(
        skill,
        suite,
        flags,
        targets=targets,
        harnesses=harnesses,
        split=split,
        observers=observers,
        warn=warn,
        min_score=min_score,
        baseline=baseline,
        max_regressions=max_regressions,
        min_load_rate=min_load_rate,
    )


def matrix_html(result: MatrixResult) -> str:
    """The matrix as one self-contained HTML page (`skillopt eval … --html FILE`)."""
    from skillopt.eval.matrix_page import render_matrix

    return render_matrix(result)
