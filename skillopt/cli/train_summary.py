"""What `skillopt train` prints before and after a run: the plan of a dry run
(steps, calls, tokens, cost per stage) and the summary of a finished one (the
validation and test scores, decisions, spend, where the best skill and report are).

Invariant: drawing only; every figure comes from the api's result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt._util import display
from skillopt.cli.common import out, warn
from skillopt.cli.train_live import stopped_line

if TYPE_CHECKING:
    from skillopt.api import Plan, TrainResult


def render_plan(plan: Plan) -> None:
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


def render_summary(result: TrainResult) -> None:
    s = result.summary
    acct = s["accounting"]
    out.print()
    out.print(
        f"[bold]Run {escape(result.run_id)}[/]: validation {display.score(s['initial_val'])} → "
        f"{display.score(s['best_val'])}",
        soft_wrap=True,
    )
    described = s.get("description")  # a `--part description|both` run
    if described:
        out.print(
            f"description: {escape(repr(described['initial']))} → {escape(repr(described['best']))}",
            soft_wrap=True,
        )
        if described["collisions"]:
            names = ", ".join(described["collisions"])
            out.print(
                f"collided with: {escape(names)} (misfired training queries loaded it instead)",
                soft_wrap=True,
            )
    triggers = s.get("triggers") or {}
    if triggers.get("initial") and triggers.get("best"):
        was, now = triggers["initial"], triggers["best"]
        out.print(
            f"test trigger queries ({now['n']}): precision {display.score(was['precision'], 2)} → "
            f"{display.score(now['precision'], 2)} · recall {display.score(was['recall'], 2)} → "
            f"{display.score(now['recall'], 2)}",
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
                f"best vs initial (n={flips['n']}): {escape(display.flips(flips['fail_to_pass'], flips['pass_to_fail']))}",
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
    out.print(f"decisions: {api.decision_counts(s['decisions'])}")
    if s.get("stopped_early"):
        stop = s["stopped_early"]
        stopped = stopped_line(stop["step"], stop["epoch"], stop["reason"])
        out.print(stopped, soft_wrap=not out.is_terminal)  # a terminal: between words
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
    cached = api.cached_tokens_line(acct)
    if cached:  # only with a provider's prompt cache
        out.print(cached, soft_wrap=True)
    estimated = api.estimated_line(acct)
    if estimated:  # only after a kill with calls in flight
        out.print(estimated, soft_wrap=True)
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
        f"history: git log {escape(result.branch)}  (in {escape(_from_here(result.audit_repo))})",
        soft_wrap=True,
    )


def _from_here(path: str) -> str:
    """`path` as the user can type it from where they are: relative to the working
    directory when inside it (`runs/audit.git`), else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return path
