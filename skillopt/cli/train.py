"""`skillopt train`: run the training loop with live progress and a final summary
(`train_live` draws the progress, `train_summary` the plan and the summary).

Invariant: the train settings are `api.TrainOptions`, one list: each option is
named as its setting and goes to the api as it was given (`train_options`); a
test checks every option, and the default its help names, against `Settings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from skillopt import api
from skillopt.cli.common import (
    TASKS_HELP,
    AllowLongSkill,
    AllowUnpriced,
    BudgetUsd,
    Concurrency,
    Executor,
    Harness,
    Judge,
    LibraryDirs,
    MaxOptimizerCalls,
    MaxTargetRollouts,
    Samples,
    Store,
    StrictSplits,
    Target,
    TimeLimit,
    at_least,
    handle_errors,
    library_section,
    out,
    warn,
)
from skillopt.cli.models import refuse_missing_keys
from skillopt.cli.progress import open_display
from skillopt.cli.train_live import TrainProgress
from skillopt.cli.train_summary import render_plan, render_summary
from skillopt.errors import InputError

# the options that turn a setting one way only, named for what they do
SWITCHES = {"no_slow_update": ("slow_update", False)}


def train_options(params: Mapping[str, Any]) -> dict[str, Any]:
    """The api's train keywords from the command's parameters: every option named as
    a train setting that was given (a flag that is off was not given), and each
    switch as the setting it turns."""
    options = {
        key: value
        for key, value in params.items()
        if key in api.TRAIN_OPTIONS and value is not None and value is not False
    }
    for flag, (key, value) in SWITCHES.items():
        if params.get(flag):
            options[key] = value
    return options


@handle_errors
def train_cmd(
    ctx: typer.Context,
    skill: Annotated[
        Optional[Path],
        typer.Argument(help="Skill directory or SKILL.md.", metavar="SKILL", show_default=False),
    ] = None,
    tasks: Annotated[
        Optional[Path],
        typer.Option("--tasks", help=TASKS_HELP, metavar="SUITE", show_default=False),
    ] = None,
    target: Target = None,
    optimizer: Annotated[
        Optional[str],
        typer.Option(
            "--optimizer",
            help="What proposes the edits: exemplars (offline: worked examples from failed "
            "training tasks, no model calls) or a model that reads the failures and writes "
            "edits, by its litellm name (e.g. openai/gpt-4o).",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    part: Annotated[
        Optional[str],
        typer.Option(
            "--part",
            help="What training changes: body (on a task suite), description (the "
            "frontmatter's, on a trigger suite) or both (on a task suite naming its "
            "trigger suite with `triggers:`) [default: body].",
            metavar="PART",
            show_default=False,
        ),
    ] = None,
    optimizer_concurrency: Annotated[
        Optional[int],
        typer.Option(
            "--optimizer-concurrency",
            callback=at_least(1),
            metavar="N",
            help="Optimizer calls run at once, independent of --concurrency [default: 4].",
            show_default=False,
        ),
    ] = None,
    epochs: Annotated[
        Optional[int],
        typer.Option(
            "--epochs",
            callback=at_least(1),
            help="Passes over the train split [default: 4].",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    batch_size: Annotated[
        Optional[int],
        typer.Option(
            "--batch-size",
            callback=at_least(1),
            help="Train tasks per step [default: 40].",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    minibatch_size: Annotated[
        Optional[int],
        typer.Option(
            "--minibatch-size",
            callback=at_least(1),
            metavar="N",
            help="Rollouts per optimizer call [default: 8].",
            show_default=False,
        ),
    ] = None,
    lr: Annotated[
        Optional[int],
        typer.Option(
            "--lr",
            callback=at_least(1),
            help="Maximum edits per step [default: 4].",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    min_lr: Annotated[
        Optional[int],
        typer.Option(
            "--min-lr",
            callback=at_least(1),
            help="Minimum edits per step [default: 2].",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    schedule: Annotated[
        Optional[str],
        typer.Option(
            "--schedule",
            help="Edit budget schedule: constant, linear or cosine [default: cosine].",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    gate: Annotated[
        Optional[str],
        typer.Option(
            "--gate",
            help="Acceptance rule: strict, margin, paired or no-regression [default: strict].",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    min_delta: Annotated[
        Optional[float],
        typer.Option(
            "--min-delta",
            help="Margin a candidate must beat (margin and paired gates).",
            metavar="X",
            show_default=False,
        ),
    ] = None,
    max_regressions: Annotated[
        Optional[int],
        typer.Option(
            "--max-regressions",
            callback=at_least(0),
            help="Reject a candidate that turns more validation tasks than this from pass "
            "to fail, under any gate (no-regression: 0 unless set).",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    alpha: Annotated[
        Optional[float],
        typer.Option(
            "--alpha",
            help="p-value threshold of the paired gate [default: 0.05].",
            metavar="P",
            show_default=False,
        ),
    ] = None,
    samples: Samples = None,
    seed: Annotated[
        Optional[int],
        typer.Option(
            "--seed", help="Shuffling seed [default: 0].", metavar="N", show_default=False
        ),
    ] = None,
    concurrency: Concurrency = None,
    executor: Executor = None,
    harness: Harness = None,
    judge: Judge = None,
    store: Store = None,
    run_dir: Annotated[
        Optional[Path],
        typer.Option(
            "--run-dir",
            help="Where runs are written [default: runs].",
            metavar="DIR",
            show_default=False,
        ),
    ] = None,
    no_slow_update: Annotated[
        bool, typer.Option("--no-slow-update", help="Skip the epoch-end slow update.")
    ] = False,
    gate_full: Annotated[
        bool,
        typer.Option(
            "--gate-full",
            help="Score every validation task of every candidate, as an audit; by default "
            "a candidate stops being scored once the rest cannot change the decision "
            "(the decisions are the same).",
        ),
    ] = False,
    stall_patience: Annotated[
        Optional[int],
        typer.Option(
            "--stall-patience",
            callback=at_least(0),
            metavar="N",
            help="Stop early after this many steps in a row with the same failing train "
            "tasks, the same skill and no better candidate; 0: never [default: 3].",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        Optional[str],
        typer.Option(
            "--resume",
            help="Continue a run (its id or directory).",
            metavar="RUN",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and exit; no model calls.")
    ] = False,
    budget_usd: BudgetUsd = None,
    max_target_rollouts: MaxTargetRollouts = None,
    max_optimizer_calls: MaxOptimizerCalls = None,
    time_limit: TimeLimit = None,
    allow_unpriced: AllowUnpriced = False,
    allow_long_skill: AllowLongSkill = False,
    strict_splits: StrictSplits = False,
    library: LibraryDirs = None,
    replay: Annotated[
        Optional[str],
        typer.Option(
            "--replay",
            help="Re-run a finished run (its id, directory, or a `skillopt bundle` file) "
            "from its recorded calls only, with no model call, and check it reaches the "
            "same decisions and best skill.",
            metavar="RUN",
            show_default=False,
        ),
    ] = None,
    trust_code: Annotated[
        bool,
        typer.Option(
            "--trust-code",
            help="With --replay: load the suite's own code (python scorers, command "
            "verifiers), which a bundle carries from whoever made it. Without it, "
            "nothing of it is imported or run.",
        ),
    ] = False,
) -> None:
    """Train a skill: rollouts, reflection, bounded edits, validation gate, git audit."""
    if replay:
        replay_run(replay, run_dir, trust_code)
        return
    if trust_code:
        raise InputError("--trust-code only applies to --replay", field="--trust-code")
    options = train_options(ctx.params)
    if library:
        options["agent"] = library_section(library)
    if dry_run and resume:
        raise InputError(
            "--dry-run plans a new run; --resume continues one (drop one of them)",
            field="--dry-run",
        )
    if resume:
        with open_display() as progress:
            result = api.resume(
                resume,
                run_dir=run_dir,
                concurrency=concurrency,
                executor=executor,
                budget_usd=budget_usd,
                max_target_rollouts=max_target_rollouts,
                max_optimizer_calls=max_optimizer_calls,
                time_limit=time_limit,
                allow_unpriced=True if allow_unpriced else None,
                observers=[TrainProgress(progress)],
                warn=warn,
            )
        render_summary(result)
        return
    if skill is None or tasks is None:
        raise InputError("give a SKILL and --tasks SUITE (or --resume RUN)")
    if dry_run:
        plan = api.plan(skill, tasks, **options)
        render_plan(plan)
        refuse_missing_keys(plan.missing_keys)
        return
    with open_display() as progress:
        result = api.train(skill, tasks, **options, observers=[TrainProgress(progress)], warn=warn)
    render_summary(result)


REPLAY_DIFFERS = 1  # the run's decisions or best skill differ
REPLAY_INCOMPLETE = 3  # the recording lacks a call the replay needed


def replay_run(ref: str, run_dir: Path | None, trust_code: bool = False) -> None:
    """`--replay`: exit 0 when the run reproduced, 1 at the first difference, 3 when
    the recording is incomplete."""
    res = api.replay(ref, run_dir=run_dir, trust_code=trust_code)
    served = f"{res.served['rollouts']:,} rollouts and {res.served['replies']:,} optimizer replies"
    if res.reproduced:
        out.print(
            f"[green]reproduced[/] run {escape(res.run_id)}: {res.steps} steps, the same "
            f"decisions and best skill {res.best_hash[:12]} ({res.model_calls} model calls; "
            f"{served} from the recording)",
            soft_wrap=True,
        )
        return
    if res.verdict == "incomplete":
        out.print(
            f"[yellow]incomplete[/] recording of run {escape(res.run_id)}: it lacks a call "
            f"the replay needed, so nothing is known of the rest: "
            f"{escape(res.first_difference or '')} ({served} from the recording)",
            soft_wrap=True,
        )
        raise typer.Exit(REPLAY_INCOMPLETE)
    out.print(
        f"[red]differs[/] run {escape(res.run_id)}: {escape(res.first_difference or '')} "
        f"({res.model_calls} model calls; {served} from the recording)",
        soft_wrap=True,
    )
    raise typer.Exit(REPLAY_DIFFERS)
