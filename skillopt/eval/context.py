"""Composition: everything a command needs, resolved and validated before the first
model call (suite, settings, target, harness, judge, store), for `evaluate`,
`validate` and training alike.

Invariant: every input (suite, skill, settings, model names, harness) is loaded and
validated here before the first model call, so a typo costs nothing. Objects a
caller passes (a `Model`, a `Harness`) are used as given, in place of the names the
settings hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skillopt.config import Settings, resolve_settings
from skillopt.errors import BadSkill, InputError
from skillopt.harness import Harness, build_harness, takes_model
from skillopt.harness.base import InstallsLibrary, Recalls
from skillopt.models.base import Model, Usage
from skillopt.models.resolve import context_window, resolve_model
from skillopt.rollouts.budget import Guard, Priors
from skillopt.rollouts.engine import Observer, RolloutEngine
from skillopt.skill.document import SKILL_FILE, Skill, resolve_skill_file
from skillopt.skill.lint import Problem, is_run_best, lint_loaded, lint_skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite
from skillopt.suite.task import Suite

Warn = Callable[[str], None]


def load(suite: str | Path | Suite) -> Suite:
    return suite if isinstance(suite, Suite) else load_suite(suite)


@runtime_checkable
class Named(Protocol):
    """An object with a `name` (a model, a harness, an optimizer, a gate)."""

    name: str


@runtime_checkable
class ReportsCost(Protocol):
    """A harness that says whether its runs report what they cost (an agent CLI's
    own total), so a budget can count them."""

    reports_cost: bool


@runtime_checkable
class ModelBacked(Protocol):
    """An optimizer whose proposals are calls of `model` (the LLM optimizer): its
    price counts in a budget."""

    model: Model


def object_name(obj: object) -> str:
    """How an object passed in place of a name is called in settings, `run.yaml` and
    reports: its `name`, else its type's."""
    if isinstance(obj, Named) and isinstance(obj.name, str):
        return obj.name
    return type(obj).__name__


def settings_for(
    suite: Suite, overrides: Mapping[str, Any] | None = None, settings: Settings | None = None
) -> Settings:
    """`settings` as given, or the layers resolved for `suite` (project file, the
    suite's `defaults:`, environment) with `overrides` (flags) on top."""
    if settings is not None:
        return settings
    return resolve_settings(
        dict(overrides or {}), suite_defaults=suite.defaults, suite_path=suite.path
    )


def check_skill(skill: Skill, source: str | Path | None = None) -> list[Problem]:
    """Lint a skill about to be scored, before anything is loaded or called: lint
    errors (an empty body, a NUL byte, a FIFO in its directory, a bad frontmatter, …)
    raise `BadSkill`; the warnings are returned. `source` is the path the skill was
    given by, if any."""
    if skill.is_empty and source is None and skill.root is None:  # the no-skill baseline
        return []  # (an empty SKILL.md on disk is a bad skill, never the baseline)
    if source is not None and is_run_best(Path(source)):
        problems = lint_loaded(skill)  # `best/` is not named after the skill, by design
    elif source is not None:
        problems = lint_skill(source)
    elif skill.root is not None and _on_disk_as_is(skill):
        problems = lint_skill(skill.root)
    else:
        problems = lint_loaded(skill)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        where = source if source is not None else (skill.root or skill.name)
        raise BadSkill(
            f"the skill has {len(errors)} lint error{'s' if len(errors) > 1 else ''}"
            f"; nothing was scored (fix them; `skillopt lint {where}` shows them "
            "again)",
            errors,
        )
    return [p for p in problems if p.severity == "warning"]


# no target takes more: the largest context windows are a million tokens
MAX_SKILL_TOKENS = 1_000_000


def check_context(skill: Skill, target: Model | None, settings: Settings) -> list[Problem]:
    """The skill's size against the target's context window (or, when the window is
    unknown, `MAX_SKILL_TOKENS`): above it nothing can be scored, so it is refused
    before any call unless `allow_long_skill`; above half of it, a warning."""
    window = context_window(target) if target is not None else None
    tokens = len(skill.text) // 4
    where = skill.root / SKILL_FILE if skill.root else Path(skill.name)
    limit = window or MAX_SKILL_TOKENS
    if tokens > limit and not settings.allow_long_skill:
        whose = (
            f"{target.name}'s {window:,}-token context"
            if target is not None and window
            else f"the {MAX_SKILL_TOKENS:,} tokens any model takes"
        )
        raise InputError(
            f"the skill is about {tokens:,} tokens, more than {whose}: nothing was "
            "scored (pass --allow-long-skill, or `allow_long_skill: true`, to run it anyway)",
            path=where,
            field="body",
        )
    if target is None or not window or tokens <= window // 2:
        return []
    return [
        Problem(
            where,
            "body",
            f"about {tokens:,} tokens: more than half of {target.name}'s "
            f"{window:,}-token context, so tasks and answers may not fit",
            "warning",
        )
    ]


def _on_disk_as_is(skill: Skill) -> bool:
    if skill.root is None:
        return False
    try:
        return resolve_skill_file(skill.root).read_bytes().decode("utf-8") == skill.text
    except (OSError, UnicodeDecodeError, InputError):
        return False


def tell(warn: Warn | None, lines: Sequence[object]) -> None:
    """Say each line (a lint problem, a notice) to `warn`, when there is one."""
    if warn is not None:
        for line in lines:
            warn(str(line))


@dataclass(frozen=True)
class Context:
    """Everything a run needs, resolved and validated. With a spend ledger, the judge
    is metered from the start (see `prepare`)."""

    suite: Suite
    settings: Settings
    target: Model | None  # None for the harnesses that hand the target's name to a program
    harness: Harness
    store: RolloutStore
    judge: Model | None

    def engine(
        self,
        observers: Sequence[Observer] = (),
        *,
        run_id: str | None = None,
        guard: Guard | None = None,
        offline: bool = False,
        priors: Priors | None = None,
    ) -> RolloutEngine:
        """An engine over this context; with `run_id`, what it pays is written to the
        store's spend ledger under that run (each rollout before it starts, at the
        estimate `priors` give, or the guard's); with `guard`, each batch it pays for
        is checked against the budget first; `offline` (a replay), it pays for
        nothing and a rollout the store does not hold raises `ReplayMiss`."""
        remote = None
        if self.settings.executor == "ray":
            from skillopt.rollouts.ray_executor import RayExecutor

            remote = RayExecutor(self.settings.ray, self.harness, self.judge)
        return RolloutEngine(
            self.harness,
            self.store,
            concurrency=self.settings.concurrency,
            judge=self.judge,
            observers=observers,
            run_id=run_id,
            guard=guard,
            remote=remote,
            offline=offline,
            priors=priors or (guard.priors if guard is not None else Priors()),
        )


def prepare(
    suite: Suite,
    settings: Settings,
    *,
    skills: Sequence[Skill] = (),
    store: RolloutStore | None = None,
    target: Model | None = None,
    harness: Harness | None = None,
    judge: Model | None = None,
    keep_dir: Path | None = None,
    check: bool = True,
    recorded_harness: Mapping[str, Any] | None = None,
    ledger: str | None = None,
    warn: Warn | None = None,
) -> Context:
    """Resolve the models, build the harness (unless given) and check it can run
    `skills` and connect to the Ray cluster of `executor: ray` (unless `check` is
    false: a replay runs nothing), open the store
    (unless given). `keep_dir` is where the harness keeps workspaces (a training
    run keeps them in its own directory). With `ledger` (a run id), the judge's
    calls go to the store's spend ledger under it as they happen. `recorded_harness`
    (a replay's, with `check` false): the harness fingerprint the replayed rollouts
    were recorded with, for what the harness learns only by running its program.
    What the harness skipped of the user's library is told to `warn`."""
    if suite.is_triggers and settings.agent.invoke == "explicit":
        raise InputError(
            "a trigger suite measures whether the agent picks the skill by its "
            "description; with `agent.invoke: explicit` the prompt names the skill, so it "
            "always loads: run it with `agent.invoke: auto`",
            path=suite.path,
            field="agent.invoke",
        )
    if harness is None:
        if target is None:
            target = resolve_target(settings)
        harness = build_harness(settings, target, keep_dir=keep_dir)
    if check:
        harness.check(skills)
        if isinstance(harness, InstallsLibrary):
            tell(warn, harness.library.warnings)
        if settings.executor == "ray":
            # an unreachable cluster stops the command here, before a store or a run is made
            from skillopt.rollouts.ray_executor import connect

            connect(settings.ray)
    elif recorded_harness is not None and isinstance(harness, Recalls):
        harness.recall(recorded_harness)
    if judge is None:
        judge = resolve_judge(suite, settings)
    if store is None:
        store = RolloutStore(settings.store)
    if judge is not None and ledger is not None:
        from skillopt.models.metered import MeteredModel

        judge = MeteredModel(judge, JudgeMeter(store, ledger))
    return Context(suite, settings, target, harness, store, judge)


@dataclass(frozen=True)
class JudgeMeter:
    """A `Meter` writing the judge's calls to `store`'s spend ledger under `ledger`,
    each reserved before it is sent (its price unknown until it returns)."""

    store: RolloutStore
    ledger: str

    def reserve(self) -> int:
        return self.store.reserve(self.ledger, "judge", "call", None)

    def settle(self, reservation: int, calls: int, usage: Usage, cost: float | None) -> None:
        self.store.settle(reservation, calls, usage, cost)

    def __call__(self, calls: int, usage: Usage, cost: float | None) -> None:
        self.store.record_call(
            self.ledger, "judge", "call", calls, usage.input_tokens, usage.output_tokens, cost
        )


def resolve_target(settings: Settings) -> Model | None:
    """The target model for a harness that calls it itself (chat); the others pass
    the target's name to their program (no target: its default), so there is
    nothing to resolve."""
    if not takes_model(settings.harness):
        return None
    if not settings.target:
        raise InputError(
            "no target model: pass --target MODEL, or set `target:` in "
            "skillopt.yaml or in the suite's `defaults:`",
            field="target",
        )
    return resolve_model(settings.target, settings.model_settings(settings.target), role="target")


def resolve_judge(suite: Suite, settings: Settings) -> Model | None:
    """The judge model, when a task is scored by the `judge` scorer."""
    judged = [s for t in suite.tasks for s in t.scorer.leaves() if s.name == "judge"]
    if not judged:
        return None
    judge_name = (
        next((s.params.model for s in judged if s.params.model), None)
        or settings.judge
        or suite.judge
    )
    if not judge_name:
        raise InputError(
            "the judge scorer needs a model: set `judge:` in the suite, "
            "`model:` in the scorer, or pass --judge MODEL",
            path=suite.path,
            field="judge",
        )
    return resolve_model(judge_name, settings.model_settings(judge_name), role="judge")


def unpriced_roles(ctx: Context, optimizer: object = None) -> list[str]:
    """The roles of a run whose spend cannot be priced ("target openai/x"): a model
    litellm has no price for, or an agent harness that reports no cost."""
    from skillopt.optimize.plan import price_known

    out = []
    if ctx.target is not None:
        if not price_known(ctx.target):
            out.append(f"target {ctx.target.name}")
    elif not (isinstance(ctx.harness, ReportsCost) and ctx.harness.reports_cost):
        out.append(f"the {ctx.harness.name} harness's runs (it reports no cost)")
    if ctx.judge is not None and not price_known(ctx.judge):
        out.append(f"judge {ctx.judge.name}")
    if isinstance(optimizer, ModelBacked) and not price_known(optimizer.model):
        out.append(f"optimizer {optimizer.model.name}")
    return out


def run_priors(ctx: Context, skill: Skill, optimizer: object = None) -> Priors:
    """The dry run's price of one rollout of `skill` and, when `optimizer` is backed by
    a model (or is one), of one optimizer call: what a budget projects with before
    the run has paid anything, and what a call in flight is counted at."""
    from skillopt.optimize.plan import priors

    s = ctx.settings
    model = optimizer.model if isinstance(optimizer, ModelBacked) else optimizer
    return priors(skill, ctx.suite, s, ctx.target or s.target or "", model)


def budget_guard(
    ctx: Context,
    ledger: str,
    skill: Skill,
    optimizer: object = None,
    *,
    known: Priors | None = None,
) -> Guard | None:
    """The settings' budget as a `Guard` over what the store's spend ledger holds
    under `ledger` (a run id); None when no budget is set. The price of `optimizer`'s
    model, when it has one, projects its first calls (`known`: those priors, already
    made)."""
    from skillopt.rollouts.budget import Budget, Spent

    budget = Budget.of(ctx.settings)
    if not budget.is_set:
        return None
    return Guard(
        budget,
        lambda: Spent.from_ledger(ctx.store.spend(ledger)),
        priors=known or run_priors(ctx, skill, optimizer),
    )
