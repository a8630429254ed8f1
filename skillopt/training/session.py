"""The entry points of a training run: a new run (`start`), its dry-run `plan`, and
`resume` of a checkpointed one. Each validates its inputs, then says what differs
to `RunSession.open` (`skillopt.training.session_build`), the one place a run is
assembled; the loop itself is `skillopt.training.loop`.

Invariants: everything is validated before the first model call (a typo costs
nothing, and no run directory is made for it); objects a caller passes (an
optimizer, a gate, a harness, a target model) are recorded by name in `run.yaml`
under `objects`, and resuming such a run needs the same kinds of objects again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
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
    Warn,
    check_context,
    check_skill,
    load,
    object_name,
    resolve_target,
    settings_for,
)
from skillopt.harness import Harness, build_harness, takes_model
from skillopt.models.base import Model
from skillopt.optimize.base import Optimizer
from skillopt.optimize.gate import Gate
from skillopt.optimize.plan import Plan, make_plan
from skillopt.rollouts.budget import BudgetExceeded
from skillopt.runs.read import find_run
from skillopt.runs.rundir import new_run_id
from skillopt.runs.summary import markdown, summary
from skillopt.skill.document import Skill
from skillopt.suite.hygiene import screen
from skillopt.suite.loader import require_split
from skillopt.suite.task import Suite
from skillopt.training.events import TrainObserver
from skillopt.training.session_build import Checkpoint, NewRun, RunSession
from skillopt.training.session_parts import (
    OptimizerChoice,
    build_optimizer,
    choose_optimizer,
    refuse_part,
)
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

    def given(self) -> dict[str, object | None]:
        """Each role and the object passed for it (None: the settings name it)."""
        return {
            "target": self.target,
            "harness": self.harness,
            "judge": self.judge,
            "optimizer": self.optimizer,
            "gate": self.gate,
        }

    def names(self) -> dict[str, str]:
        return {role: object_name(obj) for role, obj in self.given().items() if obj is not None}


SMALL_VAL = 20  # fewer validation tasks than this: one task flipping decides the gate


def _check_splits(suite: Suite, settings: Settings, optimizer: object = None) -> None:
    """Training needs training and validation tasks, of the kind its part trains: a
    trigger suite for the description, a task suite for the body, both for both
    (`refuse_part`)."""
    refuse_part(suite, settings, optimizer)
    for split in ("train", "val"):
        require_split(suite, split)
        if settings.part == "both" and suite.trigger_suite is not None:
            require_split(suite.trigger_suite, split)


def split_warnings(suite: Suite, settings: Settings) -> list[str]:
    """The suite's warnings: val or test items that nearly repeat an earlier split's
    (`suite.hygiene`; an `InputError` with `strict_splits`), and a validation split
    too small for the gate to tell a real gain from one task's luck."""
    repeats = screen(suite, strict=settings.strict_splits).warning()
    out = [repeats] if repeats else []
    n = len(suite.split("val"))
    if n >= SMALL_VAL:
        return out
    return out + [
        f"the validation split has {n} tasks: a single task that flips decides the gate "
        f"(about {SMALL_VAL} or more make its decisions sturdier: add items, or raise the "
        "suite's `split: val` fraction)"
    ]


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
    suite_warnings = split_warnings(suite_obj, settings)
    keys = credentials.missing(suite_obj, settings, training=True, passed=parts.given())
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
    problems = [*warnings, *check_context(the_skill, target, settings), *suite_warnings]
    notes = [*result.notes, *(f"warning: {p}" for p in problems), *settings.notices]
    return replace(result, notes=notes, missing_keys=keys)


def _inputs(
    skill: str | Path | Skill,
    suite: str | Path | Suite,
    overrides: Mapping[str, Any] | None,
    settings: Settings | None,
) -> tuple[Suite, Skill, Settings]:
    suite_obj = load(suite)
    the_skill = skill if isinstance(skill, Skill) else Skill.load(skill)
    resolved = settings_for(suite_obj, overrides, settings)
    _check_splits(suite_obj, resolved)
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
    suite_warnings = split_warnings(suite_obj, settings)  # refused here with strict_splits
    if the_skill.root is None:
        raise InputError("the skill to train needs a directory (load it with Skill.load)")
    skill_dir = the_skill.root
    credentials.require(suite_obj, settings, training=True, passed=parts.given())
    optimizer = parts.optimizer or choose_optimizer(settings.optimizer, settings)
    _check_splits(suite_obj, settings, optimizer)
    warnings = check_skill(the_skill, None if isinstance(skill, Skill) else skill)
    # the harness is given the target (prepare's rule), so its size is known up front
    target = parts.target
    if parts.harness is None and target is None:
        target = resolve_target(settings)
    where = NewRun(
        Path(settings.run_dir),
        new_run_id(the_skill.name),
        skill=str(skill_dir.resolve()),
        suite=str(suite_obj.path.resolve()),
        objects=parts.names(),
        suite_warnings=tuple(suite_warnings),
    )
    session = RunSession.open(
        suite_obj,
        settings,
        skill=the_skill,
        skill_dir=skill_dir,
        where=where,
        optimizer=optimizer,
        target=target,
        harness=parts.harness,
        judge=parts.judge,
        gate=parts.gate,
        observers=observers,
        warnings=[
            *warnings,
            *check_context(the_skill, target, settings),
            *suite_warnings,
            *settings.notices,
        ],
        warn=warn,
    )
    return _train(session)


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
    given = parts.given()
    missing = [role for role in config.get("objects") or {} if given.get(role) is None]
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
    settings, changed = _resumed_settings(
        config, concurrency, executor, budget, run.path / "run.yaml"
    )
    _check_splits(suite_obj, settings)
    if state.status != "finished":  # a finished run calls no model again
        credentials.require(
            suite_obj, settings, training=True, passed=given, origin=f"run {run.run_id}"
        )
    optimizer: Optimizer | OptimizerChoice = parts.optimizer or choose_optimizer(
        settings.optimizer, settings
    )
    session = RunSession.open(
        suite_obj,
        settings,
        skill=Skill.parse(state.initial.text, root=skill_dir),
        skill_dir=skill_dir,
        where=Checkpoint(run, config, state, rewrite_config=changed),
        optimizer=optimizer,
        target=parts.target,
        harness=parts.harness,
        judge=parts.judge,
        gate=parts.gate,
        observers=observers,
        warn=warn,
    )
    return _train(session)


def _resumed_settings(
    config: Mapping[str, Any],
    concurrency: int | None,
    executor: str | None,
    budget: Mapping[str, Any] | None,
    where: Path,
) -> tuple[Settings, bool]:
    """The run's recorded settings with what `resume` may change, and whether the
    budget changed (run.yaml then records the new one). Recorded settings out of
    shape are an `InputError` naming `where` (run.yaml) and the setting."""
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
        return Settings(**recorded), bool(changed)
    except ValidationError as exc:
        field, msg = first_error(exc)
        if field.split(".")[0] in changed:  # a flag given now, not the recorded run
            raise InputError(msg, field=field) from None
        raise InputError(msg, path=where, field=f"settings.{field}") from None


def _train(session: RunSession) -> TrainResult:
    """Run the session's trainer from its checkpoint, then write the run's summary and
    reports; a run a budget stopped keeps its best skill so far, as a file."""
    run, trainer, audit = session.run, session.trainer, session.audit
    stopped: BudgetExceeded | None = None
    try:
        if session.state.status != "finished":
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
        summ = summary(trainer.state, session.config)
        run.write_text("summary.json", json.dumps(summ, indent=2, ensure_ascii=False) + "\n")
        run.write_text("report.md", markdown(summ))
        html, html_error = _html_report(session)
    finally:
        session.close()
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


def _html_report(session: RunSession) -> tuple[Path | None, str | None]:
    """Write report.html beside report.md: (its path, None), or (None, why) when it
    could not be written. The run's results are already on disk either way, so a
    report that fails never fails the run."""
    from skillopt.runs.html import REPORT_FILE, data, page

    run = session.run
    try:
        ledger = session.ctx.store.spend_timeline(run.run_id)
        html = page.render(data.collect(run, session.audit, ledger=ledger))
        return run.write_text(REPORT_FILE, html), None
    except Exception as exc:  # the run's results stand without their page
        run.event("report_failed", error=f"{type(exc).__name__}: {exc}")
        return None, f"{type(exc).__name__}: {exc}"
