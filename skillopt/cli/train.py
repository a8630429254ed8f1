"""`skillopt train`: run the training loop with live progress and a final summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt._util import display
from skillopt.cli.common import (
    AllowUnpriced,
    BudgetUsd,
    Concurrency,
    Executor,
    Harness,
    Judge,
    MaxOptimizerCalls,
    MaxTargetRollouts,
    Samples,
    Store,
    Target,
    TimeLimit,
    at_least,
    budget_flags,
    handle_errors,
    out,
    warn,
)
from skillopt.cli.eta import RunEta
from skillopt.cli.models import refuse_missing_keys
from skillopt.cli.progress import Display, open_display
from skillopt.errors import InputError
from skillopt.training.events import TrainEvent


class TrainProgress:
    """The live view of a run: each batch of rollouts and each stage without rollouts
    (reflection, notes) is a stage of the display with its own count and clock; each
    decision is a line printed through the display, never over the bar. A live bar
    also says when the run should be done (`run ETA 3m 05s`), once a step has
    finished; a log does not."""

    def __init__(self, progress: Display):
        self.progress = progress
        self.epochs: int | None = None
        self.epoch = ""
        self.best: float | None = None
        self.eta = RunEta(progress.clock)

    def _describe(self, what: str) -> str:
        """What runs first (it survives a narrow terminal), then the time the run has
        left (live only), the best validation score and the epoch."""
        parts = [what.replace("no_skill", "no skill").replace("_", " ")]
        left = self.eta.left() if self.progress.live else None
        if left is not None:
            parts.append(f"run ETA {eta_text(left)}")
        if self.best is not None:
            parts.append(f"best val {display.score(self.best)}")
        if self.epoch:
            parts.append(self.epoch)
        return " · ".join(parts)

    def __call__(self, ev: TrainEvent) -> None:
        d = ev.data
        if ev.kind == "run_started":
            self.epochs = d.get("epochs")
            self.eta.started(d.get("steps") or 0, d.get("splits"))
            if d.get("splits") and not d.get("resumed"):
                self.progress.print(display.split_sizes(d["splits"]))
        elif ev.kind == "stage":
            if "epoch" in d:
                self.epoch = f"epoch {d['epoch']}" + (f"/{self.epochs}" if self.epochs else "")
            self.eta.stage(d)
            what = f"step {d['step']} · {d['stage']}" if "step" in d else d["stage"]
            self.progress.stage(self._describe(what))
        elif ev.kind == "rollout":
            self.progress.count(d["label"], d["done"], d["total"], self._describe(d["label"]))
        elif ev.kind == "decision":
            self.eta.decision(d)
            self.best = d.get("best")
            self.progress.print(decision_line(d))
        elif ev.kind == "stopped":
            self.progress.print(stopped_line(d))
        elif ev.kind == "proposal" and d.get("skipped"):
            what = (
                "meta notes"
                if d["kind"] == "notes"
                else f"{d['kind']} minibatch of {len(d.get('tasks') or [])} tasks"
            )
            self.progress.print(
                f"step {d['step']:<3} [yellow]skipped[/] {what} — {escape(d['skipped'])}"
            )


def eta_text(seconds: float) -> str:
    """`7s`, `42s`, `3m 05s`, `1h 02m`: whole seconds (an estimate has no tenths)."""
    from skillopt.runs.summary import duration

    return f"{round(seconds)}s" if seconds < 10 else duration(seconds)


def stopped_line(stop: dict) -> str:
    if stop.get("budget"):
        return f"[yellow]stopped: budget[/] after step {stop['step']} — {escape(stop['reason'])}"
    return (
        f"[yellow]stopped early[/] after step {stop['step']} (epoch {stop['epoch']}) — "
        f"{escape(stop['reason'])}"
    )


def decision_line(d: dict) -> str:
    step = d["step"]
    if d.get("kind") == "initial":
        return f"step 0   initial      val {display.score(d.get('val'))}"
    label = "slow " if d.get("kind") == "slow_update" else ""
    decision = d.get("decision", "")
    if decision in ("no_candidate", "skipped"):
        what = "no candidate" if decision == "no_candidate" else "skipped"
        return f"step {step:<3} {label}{what} — {escape(d.get('reason', ''))}"
    color = "green" if d.get("accepted") else "red"
    delta = d.get("delta")
    # the p-value is shown only where it decides (the `paired` gate): under `strict` and
    # `margin` an "accepted, p=0.500" reads as a contradiction
    p = d.get("p_value") if d.get("gate") not in ("strict", "margin") else None
    shown = f" ({display.delta(delta)})" if delta is not None else ""
    reason = d.get("reason", "")
    if shown and reason.endswith(shown):  # "better on validation (+0.083)": said once
        reason = reason[: -len(shown)]
    return (
        f"step {step:<3} {label}[{color}]{decision:<9}[/] val {display.score(d.get('val'))}"
        + shown
        + (f" p={display.p_value(p, floor=True)}" if p is not None else "")
        + f" · best {display.score(d.get('best'))} — {escape(reason)}"
    )


@handle_errors
def train_cmd(
    skill: Annotated[
        Optional[Path],
        typer.Argument(help="Skill directory or SKILL.md.", metavar="SKILL", show_default=False),
    ] = None,
    tasks: Annotated[
        Optional[Path],
        typer.Option(
            "--tasks", help="Task suite (YAML or JSONL).", metavar="SUITE", show_default=False
        ),
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
            help="Acceptance rule: strict, margin or paired [default: strict].",
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
) -> None:
    """Train a skill: rollouts, reflection, bounded edits, validation gate, git audit."""
    if replay:
        replay_run(replay, run_dir)
        return
    settings = {
        "target": target,
        "optimizer": optimizer,
        "optimizer_concurrency": optimizer_concurrency,
        "epochs": epochs,
        "batch_size": batch_size,
        "minibatch_size": minibatch_size,
        "lr": lr,
        "min_lr": min_lr,
        "schedule": schedule,
        "gate": gate,
        "min_delta": min_delta,
        "alpha": alpha,
        "samples": samples,
        "seed": seed,
        "concurrency": concurrency,
        "executor": executor,
        "harness": harness,
        "judge": judge,
        "store": store,
        "run_dir": run_dir,
        "slow_update": False if no_slow_update else None,
        "gate_full": True if gate_full else None,
        "stall_patience": stall_patience,
    }
    budget = budget_flags(
        budget_usd, max_target_rollouts, max_optimizer_calls, time_limit, allow_unpriced
    )
    if not resume and (skill is None or tasks is None):
        raise InputError("give a SKILL and --tasks SUITE (or --resume RUN)")
    if dry_run and resume:
        raise InputError(
            "--dry-run plans a new run; --resume continues one (drop one of them)",
            field="--dry-run",
        )
    if dry_run:
        plan = api.plan(skill, tasks, **settings, **budget)
        render_plan(plan)
        refuse_missing_keys(plan.missing_keys)
        return
    with open_display() as progress:
        observers = [TrainProgress(progress)]
        if resume:
            result = api.resume(
                resume,
                run_dir=run_dir,
                concurrency=concurrency,
                executor=executor,
                **budget,
                observers=observers,
                warn=warn,
            )
        else:
            result = api.train(skill, tasks, **settings, **budget, observers=observers, warn=warn)
    render_summary(result)


def replay_run(ref: str, run_dir: Path | None) -> None:
    """`--replay`: exit 0 when the run reproduced, 1 at the first difference."""
    from skillopt.training.replay import replay

    res = replay(ref, run_dir=run_dir)
    served = f"{res.served['rollouts']:,} rollouts and {res.served['replies']:,} optimizer replies"
    if res.reproduced:
        out.print(
            f"[green]reproduced[/] run {escape(res.run_id)}: {res.steps} steps, the same "
            f"decisions and best skill {res.best_hash[:12]} ({res.model_calls} model calls; "
            f"{served} from the recording)",
            soft_wrap=True,
        )
        return
    out.print(
        f"[red]differs[/] run {escape(res.run_id)}: {escape(res.first_difference or '')} "
        f"({res.model_calls} model calls; {served} from the recording)",
        soft_wrap=True,
    )
    raise typer.Exit(1)


def render_plan(plan) -> None:
    out.print("[bold]Plan[/] (dry run: no model was called)")
    out.print(
        "  " + display.split_sizes({"train": plan.n_train, "val": plan.n_val, "test": plan.n_test})
    )
    slow = f" (+{plan.slow_updates} slow updates)" if plan.slow_updates else ""
    out.print(
        f"  steps: {plan.epochs} epochs × {plan.steps_per_epoch} = {plan.total_steps}{slow}"
        if plan.total_steps
        else "  steps: 0"
    )
    out.print(f"  edit budget per step: {' '.join(str(b) for b in plan.budgets)}")
    out.print(
        f"  target rollouts: at most {plan.target_rollouts:,} (≈{plan.target_tokens:,} tokens)"
    )
    out.print(
        f"  optimizer calls: at most {plan.optimizer_calls:,} (≈{plan.optimizer_tokens:,} tokens)"
        if plan.optimizer_calls
        else f"  optimizer calls: none ({escape(plan.optimizer_note)})"
    )
    if plan.cost is None:
        cost = "unknown"
    elif plan.cost == 0:
        cost = "$0"
    else:
        cost = f"≈ {display.money(plan.cost, digits=4)}"
    out.print(
        f"  estimated cost: {cost}" + (f" ({escape(plan.cost_note)})" if plan.cost_note else ""),
        soft_wrap=True,
    )
    if plan.stages:
        out.print("  per stage (upper bounds):")
        for st in plan.stages:
            cost = "" if st.cost is None else f"  {display.money(st.cost, digits=4)}"
            out.print(
                f"    {st.stage:<12} {st.role:<9} {st.count:>7,} {st.unit:<8} "
                f"{'≈' + format(st.tokens, ','):>8} tokens{cost}",
                soft_wrap=True,
            )
    for line in plan.budget:
        out.print(f"  budget: {escape(line)}", soft_wrap=True)
    for note in plan.notes:
        out.print(f"  note: {escape(note)}", soft_wrap=True)


def render_summary(result: api.TrainResult) -> None:
    from skillopt.runs import summary as report

    s = result.summary
    acct = s["accounting"]
    out.print()
    out.print(
        f"[bold]Run {escape(result.run_id)}[/]: validation {display.score(s['initial_val'])} → "
        f"{display.score(s['best_val'])}",
        soft_wrap=True,
    )
    test = s.get("test") or {}
    if test:
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            title="test split",
            title_justify="left",
        )
        for col in ("skill", "mean", "pass", "n"):
            table.add_column(col, justify="left" if col == "skill" else "right")
        for key, label in (("no_skill", "no skill"), ("initial", "initial"), ("best", "best")):
            t = test.get(key)
            if t:
                table.add_row(
                    label, display.score(t["mean"]), display.pct(t["pass_rate"]), str(t["n"])
                )
        out.print(table)
        flips = s.get("test_flips")
        if flips is not None:
            out.print(
                f"best vs initial (n={flips['n']}): {escape(report.flips_line(flips))}",
                soft_wrap=True,
            )
            if flips["pass_to_fail"]:
                out.print(
                    f"[yellow]note:[/] validate --baseline <initial skill> fails with "
                    f"--max-regressions 0; --max-regressions {len(flips['pass_to_fail'])} "
                    "admits these tasks",
                    soft_wrap=True,
                )
    else:
        out.print("[yellow]the suite has no test split: no test scores[/]")
    out.print(f"decisions: {report.decision_counts(s['decisions'])}")
    if s.get("stopped_early"):
        out.print(stopped_line(s["stopped_early"]), soft_wrap=True)
    out.print(
        f"target rollouts: {acct.get('target_rollouts', 0):,} run, "
        f"{acct.get('cached_rollouts', 0):,} from the store · optimizer calls: "
        f"{acct.get('optimizer_calls', 0)}"
        + (
            f", {served:,} replies from the store"
            if (served := acct.get("optimizer_served"))
            else ""
        ),
        soft_wrap=True,
    )
    out.print(  # a line of its own: both fit 80 columns
        "cost: target "
        f"{display.spent(acct.get('target_cost'), acct.get('target_calls', 0))}, "
        + (
            f"optimizer {display.spent(acct.get('optimizer_cost'), acct['optimizer_calls'])}"
            if acct.get("optimizer_calls")
            else "optimizer none (no calls)"
        ),
        soft_wrap=True,
    )
    cached = report.cached_tokens_line(acct)
    if cached:  # only with a provider's prompt cache
        out.print(cached, soft_wrap=True)
    out.print(f"best skill: {escape(str(result.run_dir / 'best' / 'SKILL.md'))}", soft_wrap=True)
    if result.report_html is not None:
        out.print(f"report: {escape(str(result.report_html))} · report.md", soft_wrap=True)
    else:
        out.print(f"report: {escape(str(result.run_dir / 'report.md'))}", soft_wrap=True)
        warn(
            f"report.html could not be written ({result.report_error}); "
            f"`skillopt report {result.run_id}` tries again"
        )
    out.print(
        f"history: git log {escape(result.branch)}  (in {escape(result.audit_repo)})",
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    app.command("train")(train_cmd)
