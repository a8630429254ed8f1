"""The library's entry points: everything the CLI does is one call here.

A facade only: each function takes explicit keywords, turns names-or-objects into
settings overrides and components, and calls the module that does the work
(`scoring`, `training`, `validate`, `export`, `runs`). Settings resolve along one
path (defaults < skillopt.yaml < the suite's `defaults:` < `SKILLOPT_*` < these
keywords); `settings=` skips that and uses the `Settings` given as is.

Anywhere a name is accepted, an object may be passed instead: a `Model` as
`target` or `judge`, a `Harness`, an `Optimizer`, a `Gate` (and a `RolloutStore`
as `store`). Every input is validated before the first model call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from skillopt.config import Settings
from skillopt.eval.context import Warn, object_name
from skillopt.eval.results import EvalResult
from skillopt.harness.base import Harness
from skillopt.models.base import Model
from skillopt.optimize.base import Optimizer
from skillopt.optimize.gate import Gate
from skillopt.rollouts.engine import Observer
from skillopt.skill.document import Skill
from skillopt.skill.lint import Findings
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.task import Suite

if TYPE_CHECKING:
    from skillopt.eval.validate import ValidateResult
    from skillopt.models.inventory import ModelInfo
    from skillopt.optimize.plan import Plan
    from skillopt.plugins import Listing
    from skillopt.rollouts.cluster import NodeReport
    from skillopt.runs.prune import Pruned
    from skillopt.runs.read import RunInfo, RunStep
    from skillopt.ship.export import AdoptResult, ExportResult
    from skillopt.store.audit import AuditCommit
    from skillopt.training.events import TrainObserver
    from skillopt.training.replay import ReplayResult
    from skillopt.training.session import TrainResult

Section = Mapping[str, Any]  # a partial settings section: {"isolate": False}


def _overrides(**values: object) -> dict[str, Any]:
    """The flags layer of the settings: every keyword that was given."""
    return {k: v for k, v in values.items() if v is not None}


_KINDS: dict[str, type[Any]] = {
    "target": Model,
    "harness": Harness,
    "judge": Model,
    "optimizer": Optimizer,
    "gate": Gate,
}


def _roles(**values: object) -> tuple[dict[str, str | None], dict[str, Any]]:
    """Each role's value split into (its name, for the settings and reports; the
    object, when one was passed instead of a name). A value that is neither a name
    nor an object with the role's contract is one `InputError`."""
    names: dict[str, str | None] = {}
    objects: dict[str, Any] = {}
    for role, value in values.items():
        kind = _KINDS[role]
        if value is None or isinstance(value, str):
            names[role], objects[role] = value, None
            continue
        if not isinstance(value, kind):
            from skillopt.errors import InputError

            raise InputError(
                f"{role} must be a name, or an object with the {kind.__name__} contract "
                f"(skillopt.{kind.__name__}); got {type(value).__name__}",
                field=role,
            )
        names[role], objects[role] = object_name(value), value
    return names, objects


# ---------------------------------------------------------------------- lint
def lint(paths: Sequence[str | Path], *, strict: bool = False) -> Findings:
    """Lint skills (directories, SKILL.md files, or folders of skills); with
    `strict`, warnings count as errors. The result is the list of problems, with
    the skills looked at in `.checked`."""
    from skillopt.skill.lint import lint_paths

    return lint_paths(list(paths), strict=strict)


# ---------------------------------------------------------------------- evaluate
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
    executor: Literal["local", "ray"] | None = None,
    store: str | Path | RolloutStore | None = None,
    agent: Section | None = None,
    claude_code: Section | None = None,
    codex: Section | None = None,
    command: Section | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    settings: Settings | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> EvalResult:
    """Score a skill on a suite's split ('train', 'val', 'test' or 'all').

    `no_skill` scores the bare model instead; `compare_no_skill` scores both and
    adds a comparison (delta and flipped tasks) per split. A skill with lint errors
    raises `BadSkill` before any model call, and so does a model whose key is not
    set (`MissingCredentials`, naming the variable); `warn` receives its warnings and the
    notices of settings resolution. A `store` object is used and left open. With a
    budget, a batch that would cross it is not started: `BudgetExceeded` (what was
    scored stays in the store, so running again with a larger budget continues)."""
    from skillopt.eval import run as scoring

    names, objects = _roles(target=target, harness=harness, judge=judge)
    overrides = _overrides(
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
    )
    return scoring.evaluate(
        skill,
        suite,
        overrides,
        split=split,
        no_skill=no_skill,
        compare_no_skill=compare_no_skill,
        settings=settings,
        store=store if isinstance(store, RolloutStore) else None,
        **objects,
        observers=observers,
        warn=warn,
    )


# ---------------------------------------------------------------------- training
def train(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    *,
    target: str | Model | None = None,
    harness: str | Harness | None = None,
    judge: str | Model | None = None,
    optimizer: str | Optimizer | None = None,
    optimizer_concurrency: int | None = None,
    gate: str | Gate | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    minibatch_size: int | None = None,
    lr: int | None = None,
    min_lr: int | None = None,
    schedule: Literal["constant", "linear", "cosine"] | None = None,
    min_delta: float | None = None,
    alpha: float | None = None,
    gate_full: bool | None = None,
    slow_update: bool | None = None,
    stall_patience: int | None = None,
    seed: int | None = None,
    samples: int | None = None,
    concurrency: int | None = None,
    executor: Literal["local", "ray"] | None = None,
    store: str | Path | None = None,
    run_dir: str | Path | None = None,
    agent: Section | None = None,
    claude_code: Section | None = None,
    codex: Section | None = None,
    command: Section | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    max_optimizer_calls: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    settings: Settings | None = None,
    observers: Sequence[TrainObserver] = (),
    warn: Warn | None = None,
) -> TrainResult:
    """Train `skill` on `suite` (`skillopt train`): rollouts, reflection, bounded
    edits, the validation gate, a git commit per candidate, then the test split.

    The skill is linted first: errors raise `BadSkill` before any model call, and
    `warn` receives the warnings; a model without its key raises
    `MissingCredentials` before anything runs. Interrupted (Ctrl-C) or stopped by a systemic
    failure, the run is checkpointed: continue it with `resume`."""
    from skillopt.training import session as training

    overrides, components = _train_inputs(locals())
    return training.start(
        skill,
        suite,
        overrides,
        settings=settings,
        components=components,
        observers=observers,
        warn=warn,
    )


def plan(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    *,
    target: str | Model | None = None,
    harness: str | Harness | None = None,
    judge: str | Model | None = None,
    optimizer: str | Optimizer | None = None,
    optimizer_concurrency: int | None = None,
    gate: str | Gate | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    minibatch_size: int | None = None,
    lr: int | None = None,
    min_lr: int | None = None,
    schedule: Literal["constant", "linear", "cosine"] | None = None,
    min_delta: float | None = None,
    alpha: float | None = None,
    gate_full: bool | None = None,
    slow_update: bool | None = None,
    stall_patience: int | None = None,
    seed: int | None = None,
    samples: int | None = None,
    concurrency: int | None = None,
    executor: Literal["local", "ray"] | None = None,
    store: str | Path | None = None,
    run_dir: str | Path | None = None,
    agent: Section | None = None,
    claude_code: Section | None = None,
    codex: Section | None = None,
    command: Section | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    max_optimizer_calls: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    settings: Settings | None = None,
) -> Plan:
    """What `train` would do and roughly cost (`skillopt train --dry-run`): no
    model call, no run made. Lint warnings and settings notices are in its notes,
    and the keys the run would lack in its `missing_keys`."""
    from skillopt.training import session as training

    overrides, components = _train_inputs(locals())
    return training.plan(skill, suite, overrides, settings=settings, components=components)


def resume(
    run: str | Path,
    *,
    run_dir: str | Path | None = None,
    concurrency: int | None = None,
    executor: Literal["local", "ray"] | None = None,
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


def replay(run: str | Path, *, run_dir: str | Path | None = None) -> ReplayResult:
    """Re-run a finished run (its id, directory, or a `bundle` file) from its recorded
    rollouts and optimizer replies only, with zero model calls, and compare: the
    result says whether it reproduced (same decisions, same best skill hash) or the
    first step that differs (`skillopt train --replay`)."""
    from skillopt.training.replay import replay as run_replay

    return run_replay(run, run_dir=run_dir)


def bundle(run: str | Path, out: str | Path, *, run_dir: str | Path | None = None) -> Path:
    """Pack a finished run into `out` (.tar.gz): its directory, git history, suite and
    exactly the store rows it used, so `replay(out)` works on another machine
    (`skillopt bundle`)."""
    from skillopt.training.replay import bundle as pack

    return pack(run, out, run_dir=run_dir)


def _train_inputs(values: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """(settings overrides, components) from `train`'s or `plan`'s keywords."""
    from skillopt.training import session as training

    names, objects = _roles(**{role: values[role] for role in _KINDS})
    components = training.Components(**objects)
    if objects["gate"] is not None:  # settings.gate names only registered gates
        names["gate"] = None
    overrides = _overrides(
        **names,
        **{
            key: values[key]
            for key in (
                "optimizer_concurrency",
                "epochs",
                "batch_size",
                "minibatch_size",
                "lr",
                "min_lr",
                "schedule",
                "min_delta",
                "alpha",
                "gate_full",
                "slow_update",
                "stall_patience",
                "seed",
                "samples",
                "concurrency",
                "executor",
                "agent",
                "claude_code",
                "codex",
                "command",
                "budget_usd",
                "max_target_rollouts",
                "max_optimizer_calls",
                "time_limit",
                "allow_unpriced",
            )
        },
        store=None if values["store"] is None else str(values["store"]),
        run_dir=None if values["run_dir"] is None else str(values["run_dir"]),
    )
    return overrides, components


# ---------------------------------------------------------------------- validate
def validate(
    skill: str | Path,
    suite: str | Path,
    *,
    split: str = "test",
    min_score: float | None = None,
    baseline: str | None = None,
    max_regressions: int | None = None,
    target: str | Model | None = None,
    harness: str | Harness | None = None,
    judge: str | Model | None = None,
    samples: int | None = None,
    concurrency: int | None = None,
    executor: Literal["local", "ray"] | None = None,
    store: str | Path | None = None,
    budget_usd: float | None = None,
    max_target_rollouts: int | None = None,
    time_limit: float | str | None = None,
    allow_unpriced: bool | None = None,
    settings: Settings | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> ValidateResult:
    """Lint `skill`, then score it (and `baseline`: a git ref of the skill's
    repository, or a path) on `split` of the suite, with thresholds (`skillopt
    validate`, the CI gate). `result.exit_code` is 0 when every check passed."""
    from skillopt.eval.validate import validate as run_validate

    names, objects = _roles(target=target, harness=harness, judge=judge)
    overrides = _overrides(
        **names,
        samples=samples,
        concurrency=concurrency,
        executor=executor,
        store=None if store is None else str(store),
        budget_usd=budget_usd,
        max_target_rollouts=max_target_rollouts,
        time_limit=time_limit,
        allow_unpriced=allow_unpriced,
    )
    return run_validate(
        skill,
        suite,
        split=split,
        min_score=min_score,
        baseline=baseline,
        max_regressions=max_regressions,
        overrides=overrides,
        settings=settings,
        **objects,
        observers=observers,
        warn=warn,
    )


# ---------------------------------------------------------------------- shipping
def export(
    source: str | Path,
    to: str,
    *,
    scope: str = "project",
    dest: Path | None = None,
    force: bool = False,
    run_dir: str | Path | None = None,
) -> ExportResult:
    """Export a skill (or a run's best skill, by run id or directory) where an agent
    loads it: `claude` (.claude/skills), `codex`/`agents` (.agents/skills) or a
    section of an AGENTS.md; see `skillopt.ship.export`."""
    from skillopt.runs.read import load_skill_or_run
    from skillopt.ship.export import export as export_skill

    return export_skill(load_skill_or_run(source, run_dir), to, scope=scope, dest=dest, force=force)


def adopt(
    run: str | Path, *, force: bool = False, run_dir: str | Path | None = None
) -> AdoptResult:
    """Write a run's best skill back into the skill directory it was trained from."""
    from skillopt.runs.read import find_run
    from skillopt.ship.export import adopt as adopt_run

    return adopt_run(find_run(run, run_dir), force=force)


# ---------------------------------------------------------------------- reading runs
def list_runs(*, run_dir: str | Path | None = None) -> list[RunInfo]:
    """Every run under the runs directory, newest first (`skillopt runs`): its skill,
    suite, models, status (finished, stopped, interrupted or unreadable), scores,
    rollouts and cost. A run that cannot be read is listed as `unreadable`."""
    from skillopt.runs import read as runs

    return runs.list_runs(run_dir)


def run_history(run: str | Path, *, run_dir: str | Path | None = None) -> list[AuditCommit]:
    """The training story of a run (one commit per candidate), read back from git."""
    from skillopt.runs import read as runs

    return runs.history(run, run_dir)


def run_diff(run: str | Path, step: int | None = None, *, run_dir: str | Path | None = None) -> str:
    """The skill diff of one step (against its parent), or of the whole run."""
    from skillopt.runs import read as runs

    return runs.diff(run, step, run_dir)


def run_step(run: str | Path, step: int, *, run_dir: str | Path | None = None) -> AuditCommit:
    """The audit commit of one step (its message holds the evidence)."""
    from skillopt.runs import read as runs

    return runs.step(run, step, run_dir)


def run_log(run: str | Path, *, run_dir: str | Path | None = None) -> list[RunStep]:
    """Every step of a run (`skillopt log`): its decision and reason, and its audit
    commit when it made a candidate."""
    from skillopt.runs import read as runs

    return runs.steps(run, run_dir)


def run_log_step(run: str | Path, step: int, *, run_dir: str | Path | None = None) -> RunStep:
    """One step of a run (`skillopt show`), committed or not."""
    from skillopt.runs import read as runs

    return runs.find_step(run, step, run_dir)


def run_report(
    run: str | Path,
    other: str | Path | None = None,
    *,
    out: str | Path | None = None,
    run_dir: str | Path | None = None,
) -> Path:
    """Write a run's HTML report (`skillopt report`): `report.html` in the run's
    directory unless `out` is given; with `other`, the page comparing the two runs
    (`compare-<other>.html` in the first run's directory). Returns its path."""
    from skillopt.runs import html as htmlreport

    if other is None:
        return htmlreport.write_report(run, run_dir, out=out)
    return htmlreport.write_comparison(run, other, run_dir, out=out)


def run_blame(run: str | Path, *, run_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Every line of the run's best skill with the step and edit that introduced it
    (`skillopt blame`): dicts with `line`, `text`, `step`, `decision`, `commit`,
    `edit` (index among the step's applied edits, or None), `op`, `rationale`,
    `evidence`."""
    from skillopt.runs.html.blame import blame_lines
    from skillopt.runs.read import open_run
    from skillopt.training.state import TrainState

    found, audit = open_run(run, run_dir)
    state = TrainState.load(found)
    records = {rec["step"]: dict(rec) for rec in state.steps} if state is not None else {}
    return blame_lines(audit, records)


def prune_runs(
    *,
    run_dir: str | Path | None = None,
    repos: Sequence[str | Path] = (),
    keep: int | None = None,
    older_than_days: float | None = None,
    everything: bool = False,
    dry_run: bool = False,
) -> list[Pruned]:
    """Delete the git refs runs left behind (`skillopt prune`): those of runs whose
    directory is gone, and with `keep` / `older_than_days` / `everything` more (see
    `skillopt.runs.prune.prune`)."""
    from skillopt.runs.prune import prune

    return prune(
        run_dir=run_dir,
        repos=repos,
        keep=keep,
        older_than_days=older_than_days,
        everything=everything,
        dry_run=dry_run,
    )


def plugins() -> Listing:
    """Every scorer, harness, optimizer, gate and model provider that can be named,
    with where it came from (built in, or the plugin distribution and version), and
    the plugins that failed to load (`skillopt plugins`)."""
    from skillopt.plugins import listing

    return listing()


def models(env: Mapping[str, str] | None = None) -> list[ModelInfo]:
    """What can be used here (`skillopt models`)."""
    from skillopt.models.inventory import models as inventory

    return inventory(None if env is None else dict(env))


def cluster_report(
    *,
    executor: Literal["local", "ray"] | None = None,
    ray: Section | None = None,
    settings: Settings | None = None,
) -> list[NodeReport] | None:
    """What every live node of the Ray cluster has for running rollouts (`skillopt
    models --executor ray`): Python, skillopt, Ray, the agent CLIs, the embedded
    model; each node's checks say what is missing, they never raise. None when the
    executor (settings resolved as for a run) is local; `InputError` naming
    ray.address when the cluster cannot be reached."""
    from skillopt.config import resolve_settings
    from skillopt.rollouts.cluster import cluster_report as check_nodes

    if settings is None:
        settings = resolve_settings(_overrides(executor=executor, ray=ray))
    if settings.executor != "ray":
        return None
    return check_nodes(settings)


__all__ = [
    "adopt",
    "cluster_report",
    "evaluate",
    "export",
    "lint",
    "list_runs",
    "models",
    "plan",
    "plugins",
    "prune_runs",
    "resume",
    "run_diff",
    "run_history",
    "run_log",
    "run_log_step",
    "run_step",
    "train",
    "validate",
]
