"""The entry points that score a skill without training it: `lint`, `evaluate`
(`skillopt eval`) and `validate` (the CI gate).

Invariant: every input is validated before the first model call; the modules
that do the work are imported when a function runs, not with the api.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.api.options import Executor, Section, overrides, roles

if TYPE_CHECKING:
    from skillopt.config import Settings
    from skillopt.eval.checks import ValidateResult
    from skillopt.eval.context import Warn
    from skillopt.eval.results import EvalResult
    from skillopt.harness.base import Harness
    from skillopt.models.base import Model
    from skillopt.rollouts.engine import Observer
    from skillopt.skill.document import Skill
    from skillopt.skill.lint import Findings
    from skillopt.store.rollouts import RolloutStore
    from skillopt.suite.task import Suite


def lint(paths: Sequence[str | Path], *, strict: bool = False) -> Findings:
    """Lint skills (directories, SKILL.md files, or folders of skills); with
    `strict`, warnings count as errors. The result is the list of problems, with
    the skills looked at in `.checked`."""
    from skillopt.skill.lint import lint_paths

    return lint_paths(list(paths), strict=strict)


def evaluate(
    skill: str | Path | Skill | None,
    suite: str | Path | Suite,
    *,
    split: str = "test",
    no_skill: bool = False,
    compare_no_skill: bool = False,
    target: str | Model | None = None,
    harness: str | Harness | None = None,
    judge: str | Model | None = None,
    samples: int | None = None,
    concurrency: int | None = None,
    executor: Executor | None = None,
    store: str | Path | RolloutStore | None = None,
    agent: Section | None = None,
    claude_code: Section | None = None,
    codex: Section | None = None,
    command: Section | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    allow_long_skill: bool | None = None,
    strict_splits: bool | None = None,
    settings: Settings | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> EvalResult:
    """Score a skill on a suite's split ('train', 'val', 'test' or 'all').

    `no_skill` scores the bare model instead; `compare_no_skill` scores both and
    adds a comparison (delta and flipped tasks) per split. A skill with lint errors
    raises `BadSkill` before any model call, and so does a model whose key is not
    set (`MissingCredentials`, naming the variable); `warn` receives its warnings and the
    notices of settings resolution, and the near-duplicates across splits
    (`strict_splits` refuses them: `InputError`). A `store` object is used and left open. With a
    budget, a batch that would cross it is not started: `BudgetExceeded` (what was
    scored stays in the store, so running again with a larger budget continues)."""
    from skillopt.eval import run as scoring
    from skillopt.store.rollouts import RolloutStore

    names, objects = roles(target=target, harness=harness, judge=judge)
    flags = overrides(
        **names,
        samples=samples,
        concurrency=concurrency,
        executor=executor,
        store=None if store is None or isinstance(store, RolloutStore) else str(store),
        agent=agent,
        claude_code=claude_code,
        codex=codex,
        command=command,
        budget_usd=budget_usd,
        max_target_rollouts=max_target_rollouts,
        time_limit=time_limit,
        allow_unpriced=allow_unpriced,
        allow_long_skill=allow_long_skill,
        strict_splits=strict_splits,
    )
    return scoring.evaluate(
        skill,
        suite,
        flags,
        split=split,
        no_skill=no_skill,
        compare_no_skill=compare_no_skill,
        settings=settings,
        store=store if isinstance(store, RolloutStore) else None,
        **objects,
        observers=observers,
        warn=warn,
    )


def validate(
    skill: str | Path,
    suite: str | Path,
    *,
    split: str = "test",
    min_score: float | None = None,
    baseline: str | None = None,
    max_regressions: int | None = None,
    min_load_rate: float | None = None,
    target: str | Model | None = None,
    harness: str | Harness | None = None,
    judge: str | Model | None = None,
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
    settings: Settings | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> ValidateResult:
    """Lint `skill`, then score it (and `baseline`: a git ref of the skill's
    repository, or a path) on `split` of the suite, with thresholds (`skillopt
    validate`, the CI gate). `min_load_rate`: fail when the skill loads, unnamed,
    in a smaller share of the tasks than this. `result.exit_code` is 0 when every
    check passed."""
    from skillopt.eval.validate import validate as run_validate

    names, objects = roles(target=target, harness=harness, judge=judge)
    flags = overrides(
        **names,
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
    return run_validate(
        skill,
        suite,
        split=split,
        min_score=min_score,
        baseline=baseline,
        max_regressions=max_regressions,
        min_load_rate=min_load_rate,
        overrides=flags,
        settings=settings,
        **objects,
        observers=observers,
        warn=warn,
    )


def junit_xml(result: ValidateResult) -> str:
    """A validate result as JUnit XML: one testcase per task (`--junit`)."""
    from skillopt.eval.junit import junit_xml as render

    return render(result)


def summary_markdown(result: ValidateResult) -> str:
    """A validate result as Markdown for a pull-request comment (`--summary`)."""
    from skillopt.eval.comment import summary_markdown as render

    return render(result)
