"""`skillopt log`, `skillopt diff`, `skillopt show`: a run's story, read from its
checkpoint and its git audit (and a step's answers from its rollout store).

Invariant: reading only; a step that made no candidate is shown from what its
checkpoint recorded (its batch, its optimizer calls, the edits not applied).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt._util import display
from skillopt.cli import answers as answers_cli
from skillopt.cli.common import Run, RunDirOpt, handle_errors, out
from skillopt.errors import InputError

if TYPE_CHECKING:
    from skillopt.api import RunStep


@handle_errors
def log_cmd(run: Run, run_dir: RunDirOpt = None) -> None:
    """The training story of a run: every step, its decision, reason and evidence."""
    steps = api.run_log(run, run_dir=run_dir)
    if steps:
        out.print(val_line(steps), highlight=False)
    rows = [_log_row(s) for s in steps]
    # flips: `+3 -1`, the validation tasks the candidate turned fail→pass and pass→fail
    columns = ("step", "decision", "val", "Δ", "p", "n", "flips", "edits", "commit")
    table = _log_table(columns, [r[:-1] for r in rows])
    # the reasons go in a last column when it gets room enough, else below the table
    room = out.width - out.measure(table).maximum - 1
    if room >= _REASON_WIDTH:
        table = _log_table((*columns, "reason"), rows)
    out.print(table)
    for s in steps:
        if s.unrun and s.commit is not None and s.commit.evidence.n is not None:
            n = s.commit.evidence.n
            out.print(
                f"step {s.step} raced: its val and Δ are on the {n} task{'s' if n != 1 else ''} "
                f"scored, of {n + s.unrun}; the rest could not change the decision",
                soft_wrap=True,
            )
    if room < _REASON_WIDTH:
        out.print()
        for s, row in zip(steps, rows):
            if row[-1]:
                out.print(f"step {s.step}: {row[-1]}", soft_wrap=True)


_REASON_WIDTH = 30


def val_line(steps: list[RunStep]) -> str:
    """`val ▁▁█·  0.000 → 0.667 (best)`: each step's validation score (`·`: the step
    scored none), then the initial and the best skill's."""
    initial = steps[0].val if steps[0].kind == "initial" else None
    return (
        f"val {display.sparkline([s.val for s in steps])}  "
        f"{display.score(initial)} → {display.score(api.best_val(steps))} (best)"
    )


def _log_table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    for col in columns:
        if col == "reason":
            table.add_column(col, overflow="fold", min_width=_REASON_WIDTH)
        else:
            right = col in ("step", "Δ", "p", "n", "flips")
            table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def _log_row(s: RunStep) -> tuple[str, ...]:
    """A step's cells (markup): step, decision, val, Δ, p, n, flips, edits, commit,
    reason."""
    kind = "slow " if s.kind == "slow_update" else ""
    style = {"accepted": "green", "rejected": "red"}.get(s.decision, "")
    decision = f"{kind}{s.decision.replace('_', ' ')}"
    cells = ("", "", "", "", "", "", "")
    if s.commit is not None:
        t = s.commit.evidence
        val = _num(t.val, ".3f", t.gated or t.n is not None)
        if t.gated or t.incumbent_val is not None:
            val = f"{_num(t.incumbent_val, '.3f', True)}→{val}"
        edits = (
            f"{t.edits_applied or 0} ok, {t.edits_skipped or 0} skip"
            if t.edits_applied is not None or t.edits_skipped is not None
            else ""
        )
        cells = (
            escape(val),
            _num(t.delta, "+.3f", t.gated),
            _num(t.p_value, ".4f", t.gated),
            "" if t.n is None else f"{t.n}/{t.n + s.unrun}" if s.unrun else str(t.n),
            f"+{t.fail_to_pass} -{t.pass_to_fail}"
            if t.fail_to_pass is not None and t.pass_to_fail is not None
            else "",
            escape(edits),
            s.commit.sha[:8],
        )
    return (
        str(s.step),
        f"[{style}]{decision}[/]" if style else decision,
        *cells,
        escape(s.reason),
    )


def _num(value: float | None, spec: str, known: bool) -> str:
    """A trailer value; `n/a` where the commit has it but it is unknown, blank where
    the commit has none (the initial commit compares nothing)."""
    if value is None:
        return "n/a" if known else ""
    return format(value, spec)


@handle_errors
def diff_cmd(
    run: Run,
    step: Annotated[
        Optional[int],
        typer.Argument(
            help="Step number; without it, the whole run (initial → best).", show_default=False
        ),
    ] = None,
    run_dir: RunDirOpt = None,
) -> None:
    """The skill diff of one step, or of the whole run."""
    text = api.run_diff(run, step, run_dir=run_dir)
    out.print(escape(text) if text else "(no change)", soft_wrap=True, highlight=False)


@handle_errors
def show_cmd(
    run: Run,
    step: Annotated[str, typer.Argument(help="Step number, or `test` (the test split's tasks).")],
    task: Annotated[
        Optional[str],
        typer.Option(
            "--task",
            help="One task of the step: its prompt, answer, expected value, score and "
            "feedback, the incumbent beside the candidate.",
            metavar="ID",
            show_default=False,
        ),
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Print long prompts and answers whole.")
    ] = False,
    run_dir: RunDirOpt = None,
) -> None:
    """One step's evidence (decision, edits with their apply status, flips, trailers)
    and its tasks with their outcome and flip; with --task, that task's answers."""
    if step != "test" and not step.isdigit():
        raise InputError(f"STEP {step!r} is neither a step number nor `test`")
    if task is not None:
        for i, view in enumerate(api.run_tasks(run, step, task=task, run_dir=run_dir)):
            if i:
                out.print()
            answers_cli.task(view, full=full)
        return
    if step != "test":
        _evidence(api.run_log_step(run, int(step), run_dir=run_dir))
    try:
        views = api.run_tasks(run, step, run_dir=run_dir)
    except InputError as exc:
        if step == "test":
            raise
        out.print(f"\n[dim]tasks: {escape(str(exc))}[/]", soft_wrap=True)
        return
    out.print()
    out.print(
        f"tasks at {'the test split' if step == 'test' else 'step ' + step}"
        " (`--task ID` shows one):"
    )
    answers_cli.listing(views)


def _evidence(found: RunStep) -> None:
    if found.commit is None:
        out.print(escape(found.describe()), soft_wrap=True)
        for line in found.evidence():
            out.print(f"  {escape(line)}", soft_wrap=True)
        return
    out.print(f"[bold]commit {found.commit.sha}[/]")
    out.print(escape(found.commit.message.rstrip()), soft_wrap=True)
