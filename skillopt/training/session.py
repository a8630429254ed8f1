"""Composition of a training run: a new run (`start`), its dry-run `plan`, and
`resume` of a checkpointed one. The loop itself is `skillopt.training.loop`.

Invariants: everything is validated before the first model call (a typo costs
nothing, and no run directory is made for it); objects a caller passes (an
optimizer, a gate, a harness, a target model) are recorded by name in `run.yaml`
under `objects`, and resuming such a run needs the same kinds of objects again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillopt.config import Settings
from skillopt.errors import (
    InputError,
    Interrupted,
    MissingCredentials,
    SystemicFailure,
    first_error,
)
from skillopt.eval import credentials
from skillopt.eval.context import (
    Context,
    Warn,
    budget_guard,
    check_skill,
    context_warnings,
    load,
    meter_judge,
    object_name,
    prepare,
    resolve_target,
    settings_for,
    tell,
    unpriced_roles,
)
from skillopt.harness import Harness, build_harness, takes_model
from skillopt.models.base import Model, Usage
from skillopt.models.metered import Meter, MeteredModel
from skillopt.models.resolve import resolve_model
from skillopt.models.stored import StoredModel
from skillopt.optimize.base import Optimizer
from skillopt.optimize.gate import Gate
from skillopt.optimize.plan import Plan, make_plan
from skillopt.rollouts.budget import Budget, BudgetExceeded, Guard, refuse_unpriced
from skillopt.runs.read import find_run
from skillopt.runs.rundir import RunDir, new_run_id
from skillopt.runs.summary import markdown, summary
from skillopt.skill.document import Skill
from skillopt.store.audit import Audit
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import require_split
from skillopt.suite.task import Suite
from skillopt.training.events import TrainObserver
from skillopt.training.loop import Trainer
from skillopt.training.state import TrainState

# the settings `resume` may change: a stopped run continues with a larger budget
BUDGET_KEYS = (
    "budget_usd",
    "max_target_rollouts",
    "max_optimizer_calls",
    "time_limit",
    "allow_unpriced",
)


@dataclass
class TrainResult:
    run_id: str
    run_dir: Path
    summary: dict[str, Any]
    audit_repo: str
    branch: str
    # report.html; None when it could not be written (`report_error` says why)
    report_html: Path | None = None
    report_error: str | None = None


@dataclass
class Components:
    """Objects given in place of the names the settings hold."""

    target: Model | None = None
    harness: Harness | None = None
    judge: Model | None = None
    optimizer: Optimizer | None = None
    gate: Gate | None = None

    def names(self) -> dict[str, str]:
        return {
            role: object_name(obj)
            for role, obj in (
                ("target", self.target),
                ("harness", self.harness),
                ("judge", self.judge),
                ("optimizer", self.optimizer),
                ("gate", self.gate),
            )
            if obj is not None
        }


def build_optimizer(
    name: str | None, settings: Settings, meter: Meter | None = None, books: _Ledger | None = None
) -> Optimizer:
    """The optimizer called `name`: a registered one (`exemplars`, a plugin's), or an
    LLM optimizer backed by the model of that name, whose every call goes to `meter`
    as it happens when given, and whose replies are kept in the run's store and
    served from it (`books`, when given: see `StoredModel`)."""
    from skillopt.optimize.reflect import LLMOptimizer
    from skillopt.plugins import registry

    if not name:
        raise InputError(
            "no optimizer: pass --optimizer MODEL, or set `optimizer:` in "
            "skillopt.yaml or in the suite's `defaults:`",
            field="optimizer",
        )
    entry = registry().find("optimizer", name)
    if entry is not None:
        optimizer: Optimizer = entry.check_built(
            entry.load()(settings, meter), Optimizer, "has no `name` and `propose(request)`"
        )
        return optimizer
    model = resolve_model(name, settings.model_settings(name), role="optimizer")
    if meter is not None:
        model = MeteredModel(model, meter)
    if books is not None:
        model = StoredModel(
            model,
            books.store,
            on_used=books.used,
            offline=books.offline,
            salt=f"seed:{settings.seed}",
        )
    return LLMOptimizer(model)


SMALL_VAL = 20  # fewer validation tasks than this: one task flipping decides the gate


def _check_splits(suite: Suite) -> None:
    for split in ("train", "val"):
        require_split(suite, split)


def split_warnings(suite: Suite) -> list[str]:
    """A warning when the validation split is too small for the gate to tell a real
    gain from one task's luck."""
    n = len(suite.split("val"))
    if n >= SMALL_VAL:
        return []
    return [
        f"the validation split has {n} tasks: a single task that flips decides the gate "
        f"(about {SMALL_VAL} or more make its decisions sturdier: add items, or raise the "
        "suite's `split: val` fraction)"
    ]


@dataclass
class _Ledger:
    """Sends every optimizer call to the run's spend ledger as it returns (the
    optimizer is built before the run exists, so the run is attached later)."""

    ctx: Context | None = None
    run: RunDir | None = None
    offline: bool = False  # replay: replies come from the store only

    def __call__(self, calls: int, usage: Usage, cost: float | None) -> None:
        # the model is first called inside the run, after both are attached
        assert self.ctx is not None and self.run is not None
        self.ctx.store.record_call(
            self.run.run_id,
            "optimizer",
            "call",
            calls,
            usage.input_tokens,
            usage.output_tokens,
            cost,
            cached_input_tokens=usage.cached_input_tokens,
        )

    def store(self) -> RolloutStore:
        assert self.ctx is not None
        return self.ctx.store

    def used(self, key: str, served: bool) -> None:
        """An optimizer reply the run used: noted for its bundle; one served from the
        store is a call not paid for, counted as such."""
        assert self.ctx is not None and self.run is not None
        self.ctx.store.note_uses(self.run.run_id, "reply", [key])
        if served:
            self.ctx.store.record_call(self.run.run_id, "optimizer", "cached", 0)


def plan(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    overrides: Mapping[str, Any] | None = None,
    *,
    settings: Settings | None = None,
    components: Components | None = None,
) -> Plan:
    """What `start` would do and roughly cost, with no model call and no run made."""
    parts = components or Components()
    suite_obj, the_skill, settings = _inputs(skill, suite, overrides, settings)
    keys = credentials.missing(suite_obj, settings, training=True, passed=vars(parts))
    optimizer: object
    try:  # a model without its key is planned all the same (and warned about)
        optimizer = parts.optimizer or build_optimizer(settings.optimizer, settings)
    except MissingCredentials:
        optimizer = str(settings.optimizer)  # a provider model: planned as the LLM optimizer
    warnings = check_skill(the_skill, None if isinstance(skill, Skill) else skill)
    try:
        target = parts.target or resolve_target(settings)
    except MissingCredentials:
        target = None
    if parts.harness is None and not takes_model(settings.harness):
        build_harness(settings)  # validates its settings; runs nothing
    result = make_plan(the_skill, suite_obj, settings, settings.target or "default", optimizer)
    problems = [*warnings, *context_warnings(the_skill, target), *split_warnings(suite_obj)]
    result.notes += [f"warning: {p}" for p in problems] + settings.notices
    result.missing_keys = keys
    return result


def _inputs(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    overrides: Mapping[str, Any] | None,
    settings: Settings | None,
) -> tuple[Suite, Skill, Settings]:
    suite_obj = load(suite)
    the_skill = skill if isinstance(skill, Skill) else Skill.load(skill)
    resolved = settings_for(suite_obj, overrides, settings)
    _check_splits(suite_obj)
    return suite_obj, the_skill, resolved


def start(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    overrides: Mapping[str, Any] | None = None,
    *,
    settings: Settings | None = None,
    components: Components | None = None,
    observers: Sequence[TrainObserver] = (),
    warn: Warn | None = None,
) -> TrainResult:
    """A new training run. The skill is linted first: errors raise `BadSkill` before
    any model call, and `warn` receives the warnings."""
    parts = components or Components()
    suite_obj, the_skill, settings = _inputs(skill, suite, overrides, settings)
    if the_skill.root is None:
        raise InputError("the skill to train needs a directory (load it with Skill.load)")
    skill_dir = the_skill.root
    credentials.require(suite_obj, settings, training=True, passed=vars(parts))
    ledger = _Ledger()
    optimizer = parts.optimizer or build_optimizer(settings.optimizer, settings, ledger, ledger)
    warnings = check_skill(the_skill, None if isinstance(skill, Skill) else skill)
    runs_dir = Path(settings.run_dir)
    run_id = new_run_id(the_skill.name)
    ctx = prepare(
        suite_obj,
        settings,
        skills=[the_skill],
        target=parts.target,
        harness=parts.harness,
        judge=parts.judge,
        keep_dir=runs_dir / run_id / "workspaces",  # failed tasks' workspaces stay with the run
    )
    tell(warn, warnings + context_warnings(the_skill, ctx.target))
    tell(warn, split_warnings(suite_obj))
    tell(warn, settings.notices)
    try:
        tell(warn, refuse_unpriced(Budget.of(settings), unpriced_roles(ctx, optimizer)))
        run = RunDir.create(runs_dir, run_id)
        audit = Audit.create(skill_dir, runs_dir, run.run_id)
    except BaseException:
        ctx.store.close()
        raise
    config: dict[str, Any] = {
        "run_id": run.run_id,
        "skill": str(skill_dir.resolve()),
        "suite": str(suite_obj.path.resolve()),
        "settings": settings.model_dump(),
        "audit": {"repo": audit.location, "branch": audit.branch, "skill_path": audit.skill_path},
    }
    if parts.names():
        config["objects"] = parts.names()
    run.write_config(config)
    state = TrainState.new(the_skill)
    state.save(run)
    ledger.ctx, ledger.run = ctx, run
    meter_judge(ctx, run.run_id)
    return _run(ctx, run, audit, config, state, skill_dir, optimizer, parts.gate, observers)


def resume(
    ref: str | Path,
    *,
    run_dir: str | Path | None = None,
    concurrency: int | None = None,
    executor: str | None = None,
    budget: Mapping[str, Any] | None = None,
    components: Components | None = None,
    observers: Sequence[TrainObserver] = (),
    warn: Warn | None = None,
) -> TrainResult:
    """Continue a checkpointed run with its recorded skill, suite and settings (only
    `concurrency`, `executor` and the budget may change, none of which changes a
    rollout's result: `budget` holds `budget_usd`,
    `max_target_rollouts`, `max_optimizer_calls`, `time_limit`, `allow_unpriced`);
    finished steps are not redone."""
    parts = components or Components()
    run = find_run(ref, run_dir)
    config = run.config()
    state = TrainState.load(run)
    if state is None:
        raise InputError("the run has no checkpoint yet; start it again", path=run.path)
    missing = [role for role in config.get("objects") or {} if getattr(parts, role) is None]
    if missing:
        names = ", ".join(f"{r} {config['objects'][r]!r}" for r in missing)
        raise InputError(
            f"run {run.run_id} was trained with objects passed in code ({names}); pass "
            f"the same to resume it ({', '.join(f'{r}=...' for r in missing)})",
            path=run.path,
        )
    skill_dir = Path(config["skill"])
    from skillopt.suite.loader import load_suite

    suite_obj = load_suite(config["suite"])
    recorded = dict(config["settings"])
    if concurrency:
        recorded["concurrency"] = concurrency
    if executor:
        recorded["executor"] = executor
    changed = {k: v for k, v in (budget or {}).items() if v is not None}
    unknown = set(changed) - set(BUDGET_KEYS)
    if unknown:
        raise InputError(f"resume changes only the budget, not {', '.join(sorted(unknown))}")
    recorded.update(changed)
    try:
        settings = Settings(**recorded)
    except ValidationError as exc:
        field, msg = first_error(exc)
        raise InputError(msg, field=field) from None
    _check_splits(suite_obj)
    if state.status != "finished":  # a finished run calls no model again
        credentials.require(
            suite_obj, settings, training=True, passed=vars(parts), origin=f"run {run.run_id}"
        )
    initial = Skill.parse(state.initial.text, root=skill_dir)
    ledger = _Ledger()
    ctx = prepare(
        suite_obj,
        settings,
        skills=[initial],
        target=parts.target,
        harness=parts.harness,
        judge=parts.judge,
        keep_dir=run.path / "workspaces",
    )
    ledger.ctx, ledger.run = ctx, run
    meter_judge(ctx, run.run_id)
    try:
        audit = Audit.open(config["audit"]["repo"], run.run_id, config["audit"]["skill_path"])
        optimizer = parts.optimizer or build_optimizer(settings.optimizer, settings, ledger, ledger)
        if state.status != "finished":
            tell(warn, refuse_unpriced(Budget.of(settings), unpriced_roles(ctx, optimizer)))
    except BaseException:
        ctx.store.close()
        raise
    if changed:  # the run's budget is now the one it was resumed with
        config["settings"] = settings.model_dump()
        run.write_config(config)
    return _run(ctx, run, audit, config, state, skill_dir, optimizer, parts.gate, observers)


def _run(
    ctx: Context,
    run: RunDir,
    audit: Audit,
    config: dict[str, Any],
    state: TrainState,
    skill_dir: Path,
    optimizer: Optimizer,
    gate: Gate | None,
    observers: Sequence[TrainObserver],
) -> TrainResult:
    guard = _guard(ctx, run, state, optimizer)
    engine = ctx.engine(run_id=run.run_id, guard=guard)
    stopped: BudgetExceeded | None = None
    try:
        trainer = Trainer(
            suite=ctx.suite,
            settings=ctx.settings,
            engine=engine,
            optimizer=optimizer,
            audit=audit,
            run=run,
            state=state,
            skill_root=skill_dir,
            observers=observers,
            gate=gate,
            guard=guard,
        )
        if state.status != "finished":
            try:
                trainer.run()
            except BudgetExceeded as exc:
                trainer.stopped_by_budget(exc)
                trainer.incumbent.write(run.path / "best")  # the best so far, as a file
                stopped = exc
            except KeyboardInterrupt:
                raise Interrupted(
                    f"run {run.run_id} is checkpointed; continue it with "
                    f"`skillopt train --resume {run.run_id}`"
                ) from None
            except SystemicFailure as exc:
                raise SystemicFailure(
                    f"{exc}; run {run.run_id} is checkpointed: continue it "
                    f"with `skillopt train --resume {run.run_id}`"
                ) from None
        summ = summary(trainer.state, config)
        run.write_text("summary.json", json.dumps(summ, indent=2, ensure_ascii=False) + "\n")
        run.write_text("report.md", markdown(summ))
        html, html_error = _html_report(ctx, run, audit)
    finally:
        engine.close()
        run.close()
        ctx.store.close()
    if stopped is not None:
        raise BudgetExceeded(
            f"{stopped}; run {run.run_id} is checkpointed (best so far: "
            f"{run.path / 'best' / 'SKILL.md'}): continue it with `skillopt train --resume "
            f"{run.run_id} {stopped.flag} <larger>`",
            limit=stopped.limit,
            where=stopped.where,
            detail=stopped.detail,
        )
    return TrainResult(run.run_id, run.path, summ, audit.location, audit.branch, html, html_error)


def _html_report(ctx: Context, run: RunDir, audit: Audit) -> tuple[Path | None, str | None]:
    """Write report.html beside report.md: (its path, None), or (None, why) when it
    could not be written. The run's results are already on disk either way, so a
    report that fails never fails the run."""
    from skillopt.runs.html import REPORT_FILE, data, page

    try:
        ledger = ctx.store.spend_timeline(run.run_id)
        html = page.render(data.collect(run, audit, ledger=ledger))
        return run.write_text(REPORT_FILE, html), None
    except Exception as exc:  # the run's results stand without their page
        run.event("report_failed", error=f"{type(exc).__name__}: {exc}")
        return None, f"{type(exc).__name__}: {exc}"


def _guard(ctx: Context, run: RunDir, state: TrainState, optimizer: Optimizer) -> Guard | None:
    """The run's budget, checked against its ledger (None: no budget is set)."""
    model = getattr(optimizer, "model", None)
    return budget_guard(ctx, run.run_id, Skill.parse(state.initial.text), model)
