"""The entry points of training: `train`, its dry run `plan`, `resume`, and
`replay` / `bundle` of a finished run.

Invariant: `train` and `plan` take the same keywords, `TrainOptions` (one list,
checked against `Settings` by a test); the training modules are imported when a
function runs, not with the api.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.api.options import Executor, train_inputs

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from skillopt.api.options import TrainOptions
    from skillopt.config import Settings
    from skillopt.eval.context import Warn
    from skillopt.harness.base import Harness
    from skillopt.models.base import Model
    from skillopt.optimize.base import Optimizer
    from skillopt.optimize.gate import Gate
    from skillopt.optimize.plan import Plan
    from skillopt.skill.document import Skill
    from skillopt.suite.task import Suite
    from skillopt.training.events import TrainObserver
    from skillopt.training.replay import ReplayResult
    from skillopt.training.session import TrainResult


def train(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    *,
    settings: Settings | None = None,
    observers: Sequence[TrainObserver] = (),
    warn: Warn | None = None,
    **options: Unpack[TrainOptions],
) -> TrainResult:
    """Train `skill` on `suite` (`skillopt train`): rollouts, reflection, bounded
    edits, the validation gate, a git commit per candidate, then the test split.
    `options` are the settings of `TrainOptions` (epochs=2, target=…, optimizer=…).

    The skill is linted first: errors raise `BadSkill` before any model call, and
    `warn` receives the warnings; a model without its key raises
    `MissingCredentials` before anything runs. Interrupted (Ctrl-C) or stopped by a systemic
    failure, the run is checkpointed: continue it with `resume`."""
    from skillopt.training import session as training

    flags, components = train_inputs("train", options)
    return training.start(
        skill,
        suite,
        flags,
        settings=settings,
        components=components,
        observers=observers,
        warn=warn,
    )


def plan(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    *,
    settings: Settings | None = None,
    **options: Unpack[TrainOptions],
) -> Plan:
    """What `train` would do and roughly cost (`skillopt train --dry-run`), with the
    same keywords: no model call, no run made. Lint warnings and settings notices
    are in its notes, and the keys the run would lack in its `missing_keys`."""
    from skillopt.training import session as training

    flags, components = train_inputs("plan", options)
    return training.plan(skill, suite, flags, settings=settings, components=components)


def resume(
    run: str | Path,
    *,
    run_dir: str | Path | None = None,
    concurrency: int | None = None,
    executor: Executor | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    max_optimizer_calls: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    target: Model | None = None,
    harness: Harness | None = None,
    judge: Model | None = None,
    optimizer: Optimizer | None = None,
    gate: Gate | None = None,
    observers: Sequence[TrainObserver] = (),
    warn: Warn | None = None,
) -> TrainResult:
    """Continue a checkpointed run (by id under `run_dir`, or its directory) with its
    recorded skill, suite and settings; only `concurrency`, `executor` and the budget
    may change (a run a budget stopped continues with a larger one). A run trained with objects
    passed in code needs the same kinds of objects again."""
    from skillopt.training import session as training

    components = training.Components(target, harness, judge, optimizer, gate)
    budget = {
        "budget_usd": budget_usd,
        "max_target_rollouts": max_target_rollouts,
        "max_optimizer_calls": max_optimizer_calls,
        "time_limit": time_limit,
        "allow_unpriced": allow_unpriced,
    }
    return training.resume(
        run,
        run_dir=run_dir,
        concurrency=concurrency,
        executor=executor,
        budget=budget,
        components=components,
        observers=observers,
        warn=warn,
    )


def replay(
    run: str | Path, *, run_dir: str | Path | None = None, trust_code: bool = False
) -> ReplayResult:
    """Re-run a finished run (its id, directory, or a `bundle` file) from its recorded
    rollouts and optimizer replies only, with zero model calls, and compare: the
    verdict says whether it reproduced (same decisions, same best skill hash), the
    first step that differs, or what the recording lacks (`skillopt train --replay`).
    Nothing of the suite's code (python scorers, command verifiers) is loaded unless
    `trust_code`; the user's store and runs are only read."""
    from skillopt.training.replay import replay as run_replay

    return run_replay(run, run_dir=run_dir, trust_code=trust_code)


def bundle(run: str | Path, out: str | Path, *, run_dir: str | Path | None = None) -> Path:
    """Pack a finished run into `out` (.tar.gz): its directory, git history, suite and
    exactly the store rows it used, so `replay(out)` works on another machine
    (`skillopt bundle`). A run whose recording could not replay is refused."""
    from skillopt.training.bundle import bundle as pack

    return pack(run, out, run_dir=run_dir)
