"""`skillopt eval`: score a skill on a task suite and draw the result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich import box
from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt._util import display
from skillopt.cli import answers as answers_cli
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
    Samples,
    Store,
    StrictSplits,
    TimeLimit,
    err,
    handle_errors,
    library_section,
    out,
    warn,
    write_json,
)
from skillopt.cli.matrix import Harnesses, HtmlOut, Targets, eval_matrix, is_matrix, one
from skillopt.cli.progress import Display, open_display
from skillopt.errors import InputError

if TYPE_CHECKING:
    from skillopt import EvalResult
    from skillopt.api import RolloutEvent, TriggerReport

Split = Annotated[str, typer.Option("--split", help="train, val, test or all.", metavar="SPLIT")]


class ProgressObserver:
    """Feeds rollout events into the progress display: each batch (a variant on a
    split, such as `skill · test`) is a stage with its own count and clock."""

    def __init__(self, progress: Display):
        self.progress = progress

    def __call__(self, event: RolloutEvent) -> None:
        self.progress.count(event.label, event.done, event.total, event.label)


@handle_errors
def eval_cmd(
    skill: Annotated[
        Optional[Path],
        typer.Argument(help="Skill directory or SKILL.md.", metavar="SKILL", show_default=False),
    ] = None,
    tasks: Annotated[
        Path,
        typer.Option("--tasks", help=TASKS_HELP, metavar="SUITE", show_default=False),
    ] = ...,  # type: ignore[assignment]
    split: Split = "test",
    target: Targets = None,
    no_skill: Annotated[bool, typer.Option("--no-skill", help="Score the bare model.")] = False,
    compare_no_skill: Annotated[
        bool,
        typer.Option(
            "--compare-no-skill", help="Also score the bare model; show the delta and flips."
        ),
    ] = False,
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
    json_file: JsonOut = None,
    html_file: HtmlOut = None,
    library: LibraryDirs = None,
    show_failures: Annotated[
        bool,
        typer.Option(
            "--show-failures",
            help="After the table, each failed or unscored task: its prompt, answer, "
            "expected value, score and feedback.",
        ),
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="With --show-failures: long texts whole.")
    ] = False,
) -> None:
    """Score a skill on a task suite: mean score, pass rate, tokens, cost per split."""
    if is_matrix(target, harness) or html_file is not None:
        eval_matrix(
            skill,
            tasks,
            no_skill=no_skill,
            compare_no_skill=compare_no_skill,
            json_file=json_file,
            html_file=html_file,
            targets=target or [],
            harnesses=harness or [],
            split=split,
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
            observe=ProgressObserver,
            warn=warn,
        )
        return
    if skill is None and not no_skill:
        raise InputError("give a SKILL path, or --no-skill", field="SKILL")
    with open_display() as progress:
        result = api.evaluate(
            None if no_skill else skill,
            tasks,
            split=split,
            no_skill=no_skill,
            compare_no_skill=compare_no_skill,
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
            agent=library_section(library),
            observers=[ProgressObserver(progress)],
            warn=warn,
        )
    if json_file is None or str(json_file) != "-":
        render(result)
        if show_failures:
            render_failures(result, full=full)
    if json_file is not None:
        write_json(json_file, result.to_dict())
    rollouts = result.all_rollouts
    if rollouts and not any(r.scored for r in rollouts):
        err.print("[bold red]error:[/] no rollout was scored; see the errors above")
        raise typer.Exit(1)


def render_failures(result: EvalResult, *, full: bool = False) -> None:
    """Each failed or unscored task of every split and variant scored, with what the
    target was sent and answered."""
    for r in result.results:
        failed = r.failures(result.target)
        out.print()
        out.print(f"[bold]failures ({r.variant} · {r.split}): {len(failed)} of {r.tasks} tasks[/]")
        for answers in failed:
            first = answers[0]
            out.print()
            out.print(f"[bold]{escape(first.task_id)}[/]", soft_wrap=True)
            for a in answers:
                answers_cli.answer(a, full=full, samples=len(answers) > 1)


def render_triggers(report: TriggerReport, label: str) -> None:
    """A trigger suite's precision and recall, and each query's load rate."""
    should = sum(1 for q in report.queries if q.should_trigger)
    out.print(
        f"triggers ({label}): precision {display.score(report.precision, 2)} · recall "
        f"{display.score(report.recall, 2)} · {should} should load, "
        f"{len(report.queries) - should} should not",
        soft_wrap=True,
    )
    width = max((len(q.task_id) for q in report.queries), default=0)
    for q in report.queries:
        verdict = {True: "", False: "  [red]misfire[/]", None: "  unscored"}[q.passed]
        out.print(
            f"  {escape(q.task_id.ljust(width))}  "
            f"{'should load    ' if q.should_trigger else 'should not load'}"
            f"  loaded {q.loaded}/{q.traced}{verdict}",
            soft_wrap=True,
        )


def render(result: EvalResult) -> None:
    out.print(
        f"[bold]{escape(result.skill)}[/] ({result.skill_hash[:12]}) on "
        f"[bold]{escape(result.suite)}[/] · target {escape(result.target or 'default')} · "
        f"harness {result.harness}"
        + (f" · {display.split_sizes(result.splits)}" if result.splits else ""),
        soft_wrap=True,
    )
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    columns: list[tuple[str, JustifyMethod]] = [
        ("split", "left"),
        ("variant", "left"),
        ("mean", "right"),
        ("pass", "right"),
        ("n", "right"),
        ("unscored", "right"),
        ("cached", "right"),
        ("tokens", "right"),
        ("cost", "right"),
        ("wall", "right"),
    ]
    for col, justify in columns:
        table.add_column(col, justify=justify, no_wrap=True)
    for r in result.results:
        table.add_row(
            r.split,
            r.variant,
            display.score(r.mean),
            display.pct(r.pass_rate),
            str(r.n),
            str(r.unscored) if r.unscored else "0",
            str(r.cached),
            f"{r.tokens:,}",
            display.money(r.cost, r.cost_complete) if r.model_calls else "$0",
            f"{r.wall_s:.2f}s",
        )
    out.print(table)
    for r in result.results:
        if r.cached_tokens:  # only with a provider's prompt cache: other output unchanged
            out.print(
                f"cached tokens ({r.variant} · {r.split}): {r.cached_tokens:,} of "
                f"{r.input_tokens:,} input tokens read from the provider's prompt cache",
                soft_wrap=True,
            )
    for c in result.comparisons:
        out.print(
            f"Δ {c.split}: {display.delta(c.delta)} mean vs no skill (n={c.n}) · "
            + escape(display.flips(c.fail_to_pass, c.pass_to_fail)),
            soft_wrap=True,
        )
    ran = sorted(
        {
            str(r.trajectory["info"]["model"])
            for r in result.all_rollouts
            if isinstance((r.trajectory.get("info") or {}).get("model"), str)
        }
    )
    if ran:  # what the agent CLI says it ran: the answer to "target default"
        out.print(f"model reported by the agent: {escape(', '.join(ran))}", soft_wrap=True)
    for r in result.results:
        triggers = r.triggers
        if triggers is not None:
            render_triggers(triggers, f"{r.variant} · {r.split}")
        elif r.loads.tasks:
            named = "; named in the prompt" if result.invoke == "explicit" else ""
            out.print(f"skill {r.loads.phrase()} ({r.variant} · {r.split}{named})")
    kept = [w for r in result.results for w in r.kept_workspaces]
    if kept:
        err.print(
            f"kept {len(kept)} workspace(s) of failed tasks for inspection under "
            f"{escape(str(Path(kept[0]).parent))}"
        )
    unscored = [r for r in result.all_rollouts if not r.scored]
    if unscored:
        err.print(
            f"[yellow]{len(unscored)} rollout(s) unscored[/] (not counted in any score; "
            "rerun to retry them):"
        )
        for rollout in unscored[:5]:
            err.print(f"  {escape(rollout.task_id)}: {escape(rollout.error or '')}")
        if len(unscored) > 5:
            err.print(f"  … and {len(unscored) - 5} more")
