"""`skillopt export`, `skillopt adopt` and `skillopt validate`: ship a trained skill
and keep it good in CI."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, ParamSpec, TypeVar

import typer
from rich.markup import escape

from skillopt import api
from skillopt._util import display
from skillopt._util.text import safe
from skillopt.cli.common import (
    TASKS_HELP,
    AllowLongSkill,
    AllowUnpriced,
    BudgetUsd,
    Concurrency,
    Executor,
    JsonOut,
    Judge,
    LibraryDirs,
    MaxTargetRollouts,
    RunDir,
    Samples,
    Store,
    StrictSplits,
    TimeLimit,
    at_least,
    err,
    handle_errors,
    library_section,
    out,
    warn,
    write_json,
)
from skillopt.cli.eval import ProgressObserver, Split, render_triggers
from skillopt.cli.matrix import Harnesses, Targets, is_matrix, one, validate_matrix
from skillopt.cli.progress import open_display
from skillopt.errors import InputError

if TYPE_CHECKING:
    from skillopt import SplitResult, ValidateResult

P = ParamSpec("P")
R = TypeVar("R")


def print_diff(diff: str) -> None:
    for line in diff.splitlines():
        style = (
            "green"
            if line.startswith("+") and not line.startswith("+++")
            else "red"
            if line.startswith("-") and not line.startswith("---")
            else "cyan"
            if line.startswith("@@")
            else ""
        )
        out.print(
            f"[{style}]{escape(line)}[/]" if style else escape(line),
            soft_wrap=True,
            highlight=False,
        )


def _refusals(fn: Callable[P, R]) -> Callable[P, R]:
    """Show the diff of a refused overwrite and the lint problems of a refused skill."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except api.Refused as exc:
            print_diff(exc.diff)
            raise
        except api.LintFailed as exc:
            for p in exc.problems:
                out.print(f"[red]{escape(str(p))}[/]", soft_wrap=True)
            raise

    return wrapper


@handle_errors
@_refusals
def export_cmd(
    source: Annotated[
        str,
        typer.Argument(
            help="Skill directory, or a run id / run directory (its best skill).",
            metavar="SKILL|RUN",
        ),
    ],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where to: " + ", ".join(api.EXPORT_TARGETS) + ".",
            metavar="AGENT",
            show_default=False,
        ),
    ] = ...,  # type: ignore[assignment]
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            help="project (the current directory or --dest) or user (your home).",
            metavar="SCOPE",
        ),
    ] = "project",
    dest: Annotated[
        Optional[Path],
        typer.Option(
            "--dest",
            help="Use this directory instead of the project directory (or home).",
            metavar="DIR",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a different skill already there.")
    ] = False,
    run_dir: RunDir = None,
) -> None:
    """Write a skill where an agent loads it: .claude/skills/, .agents/skills/ or AGENTS.md."""
    result = api.export(source, to, scope=scope, dest=dest, force=force, run_dir=run_dir)
    for w in result.warnings:
        err.print(f"[yellow]warning[/]: {escape(w)}", soft_wrap=True)
    if result.action == "unchanged":
        err.print(f"unchanged: {escape(str(result.path))} already holds this skill")
        return
    if result.action == "updated":
        print_diff(result.diff)
    err.print(f"{result.action}: {escape(str(result.path))} ({result.target})")


@handle_errors
@_refusals
def adopt_cmd(
    run: Annotated[str, typer.Argument(help="Run id or run directory.", metavar="RUN")],
    force: Annotated[
        bool,
        typer.Option("--force", help="Overwrite edits made to the skill since the run started."),
    ] = False,
    run_dir: RunDir = None,
) -> None:
    """Write a run's best skill back into its skill directory, for you to review and commit."""
    result = api.adopt(run, force=force, run_dir=run_dir)
    if result.action == "unchanged":
        err.print(f"unchanged: {escape(str(result.path))} already holds the run's best skill")
        return
    print_diff(result.diff)
    review = (
        "review with `git diff` and commit it"
        if result.in_git
        else "the diff above is what changed (not in a git repository: nothing else "
        "keeps the previous text)"
    )
    err.print(f"updated {escape(str(result.path))} from run {escape(result.run_id)}; {review}")


@handle_errors
def validate_cmd(
    skill: Annotated[Path, typer.Argument(help="Skill directory or SKILL.md.", metavar="SKILL")],
    tasks: Annotated[
        Path,
        typer.Option("--tasks", help=TASKS_HELP, metavar="SUITE", show_default=False),
    ] = ...,  # type: ignore[assignment]
    split: Split = "test",
    min_score: Annotated[
        Optional[float],
        typer.Option(
            "--min-score",
            help="Fail when the mean score is below this (0–1).",
            metavar="SCORE",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        Optional[str],
        typer.Option(
            "--baseline",
            help="Score the skill as it is at this git ref (e.g. main) or path, on "
            "the same tasks; report the delta and flips.",
            metavar="REF|PATH",
            show_default=False,
        ),
    ] = None,
    max_regressions: Annotated[
        Optional[int],
        typer.Option(
            "--max-regressions",
            callback=at_least(0),
            help="Fail when more tasks than this go pass→fail against the baseline.",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    min_load_rate: Annotated[
        Optional[float],
        typer.Option(
            "--min-load-rate",
            help="Fail when the agent, not told to use the skill, loads it in fewer of "
            "the tasks than this share (0–1).",
            metavar="RATE",
            show_default=False,
        ),
    ] = None,
    junit: Annotated[
        Optional[Path],
        typer.Option(
            "--junit",
            help="Write a JUnit XML report (one testcase per task).",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    summary: Annotated[
        Optional[Path],
        typer.Option(
            "--summary",
            help="Write a Markdown summary for a pull-request comment.",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    json_file: JsonOut = None,
    fmt: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            hidden=True,  # the spelling before --json: `--format json` is `--json -`
            help="text or json (on stdout); deprecated: use --json -.",
        ),
    ] = None,
    target: Targets = None,
    concurrency: Concurrency = None,
    executor: Executor = None,
    harness: Harnesses = None,
    judge: Judge = None,
    samples: Samples = None,
    store: Store = None,
    budget_usd: BudgetUsd = None,
    max_target_rollouts: MaxTargetRollouts = None,
    time_limit: TimeLimit = None,
    allow_unpriced: AllowUnpriced = False,
    allow_long_skill: AllowLongSkill = False,
    strict_splits: StrictSplits = False,
    library: LibraryDirs = None,
) -> None:
    """CI gate: lint, then score the skill; exit 1 below --min-score or past --max-regressions."""
    if fmt not in (None, "text", "json"):
        raise InputError(
            f"unknown format {fmt!r}; choose text or json (or rather --json FILE, or "
            "--json - for stdout)",
            field="--format",
        )
    if fmt == "json":
        json_file = Path("-")
    if is_matrix(target, harness):
        validate_matrix(
            skill,
            tasks,
            json_file=json_file,
            junit=junit,
            summary=summary,
            observe=ProgressObserver,
            targets=target or [],
            harnesses=harness or [],
            split=split,
            min_score=min_score,
            baseline=baseline,
            max_regressions=max_regressions,
            min_load_rate=min_load_rate,
            concurrency=concurrency,
            executor=executor,
            judge=judge,
            samples=samples,
            store=store,
            budget_usd=budget_usd,
            max_target_rollouts=max_target_rollouts,
            time_limit=time_limit,
            allow_unpriced=True if allow_unpriced else None,
            allow_long_skill=True if allow_long_skill else None,
            strict_splits=True if strict_splits else None,
            agent=library_section(library),
            warn=warn,
        )
    with open_display() as progress:
        result = api.validate(
            skill,
            tasks,
            split=split,
            min_score=min_score,
            baseline=baseline,
            max_regressions=max_regressions,
            min_load_rate=min_load_rate,
            target=one(target),
            concurrency=concurrency,
            executor=executor,
            harness=one(harness),
            judge=judge,
            samples=samples,
            store=store,
            budget_usd=budget_usd,
            max_target_rollouts=max_target_rollouts,
            time_limit=time_limit,
            allow_unpriced=True if allow_unpriced else None,
            allow_long_skill=True if allow_long_skill else None,
            strict_splits=True if strict_splits else None,
            observers=[ProgressObserver(progress)],
            agent=library_section(library),
            warn=warn,
        )
    for path, text in (
        (junit, api.junit_xml(result) if junit else ""),
        (summary, api.summary_markdown(result) if summary else ""),
    ):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(safe(text) or "", encoding="utf-8")  # a CI artifact: no secret in it
            err.print(f"wrote {escape(str(path))}")
    if json_file is None or str(json_file) != "-":
        render(result)
    if json_file is not None:
        write_json(json_file, result.to_dict())
    raise typer.Exit(result.exit_code)


def render(result: ValidateResult) -> None:
    for p in result.lint:
        style = "red" if p.severity == "error" else "yellow"
        out.print(f"[{style}]{escape(str(p))}[/]", soft_wrap=True)
    r, b, c = result.result, result.baseline, result.comparison
    if r is not None:
        out.print(
            f"[bold]{escape(result.skill)}[/] ({result.skill_hash[:12]}) on "
            f"[bold]{escape(result.suite)}[/] · {result.split} · target "
            f"{escape(result.target or 'default')} · harness {result.harness}",
            soft_wrap=True,
        )
        out.print(
            f"skill:    mean {display.score(r.mean)} · pass {display.pct(r.pass_rate)} · "
            f"scored {r.n}/{r.tasks}"
            + (f" · unscored {r.unscored}" if r.unscored else "")
            + _invoked(r, result.invoke),
            soft_wrap=True,
        )
        if r.triggers is not None:
            render_triggers(r.triggers, f"skill · {result.split}")
        if b is not None:
            out.print(
                f"baseline: mean {display.score(b.mean)} · pass {display.pct(b.pass_rate)} · "
                f"scored {b.n}/{b.tasks}{_invoked(b, result.invoke)} "
                f"({escape(result.baseline_label or '')})",
                soft_wrap=True,
            )
        if c is not None:
            out.print(
                f"Δ {display.delta(c.delta)} (n={c.n}) · fail→pass {len(c.fail_to_pass)} · "
                f"pass→fail {len(c.pass_to_fail)}"
                + (f": {escape(', '.join(c.pass_to_fail[:10]))}" if c.pass_to_fail else ""),
                soft_wrap=True,
            )
        if result.baseline_note:
            out.print(f"baseline: {escape(result.baseline_note)}")
    for check in result.checks:
        mark = "[green]pass[/]" if check.passed else "[red]FAIL[/]"
        out.print(f"{mark} {check.name}: {escape(check.detail)}", soft_wrap=True)
    out.print("[green]validate passed[/]" if result.passed else "[red]validate failed[/]")


def _invoked(r: SplitResult, invoke: str) -> str:
    """The load rate of a task suite's run (under explicit invocation, said to be
    named in the prompt); for a trigger suite, its precision and recall."""
    triggers = r.triggers
    if triggers is not None:
        return (
            f" · precision {display.score(triggers.precision, 2)} · recall "
            f"{display.score(triggers.recall, 2)}"
        )
    if not r.loads.tasks:
        return ""
    return f" · skill {r.loads.phrase()}" + (
        " (named in the prompt)" if invoke == "explicit" else ""
    )
