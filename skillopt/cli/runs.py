"""`skillopt log`, `skillopt diff`, `skillopt show`: a run's story, read from git."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt.cli.common import handle_errors, out

Run = Annotated[
    str, typer.Argument(help="Run id (under the runs directory) or run directory.", metavar="RUN")
]
RunDirOpt = Annotated[
    Optional[Path],
    typer.Option("--run-dir", help="Where runs are [default: runs].", show_default=False),
]


@handle_errors
def log_cmd(run: Run, run_dir: RunDirOpt = None) -> None:
    """The training story of a run: every candidate, its decision and evidence."""
    history = api.run_history(run, run_dir=run_dir)
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    for col in ("step", "decision", "val", "Δ", "p", "n", "edits", "commit"):
        table.add_column(
            col, justify="right" if col in ("step", "Δ", "p", "n") else "left", no_wrap=True
        )
    for c in history:
        t = c.evidence
        kind = "slow " if t.kind == "slow_update" else ""
        style = {"accepted": "green", "rejected": "red"}.get(c.decision, "")
        decision = f"{kind}{c.decision}"
        val = _num(t.val, ".3f", t.gated or t.n is not None)
        if t.gated or t.incumbent_val is not None:
            val = f"{_num(t.incumbent_val, '.3f', True)}→{val}"
        edits = (
            f"{t.edits_applied or 0} ok, {t.edits_skipped or 0} skip"
            if t.edits_applied is not None or t.edits_skipped is not None
            else ""
        )
        table.add_row(
            str(c.step),
            f"[{style}]{decision}[/]" if style else decision,
            escape(val),
            _num(t.delta, "+.3f", t.gated),
            _num(t.p_value, ".4f", t.gated),
            "" if t.n is None else str(t.n),
            escape(edits),
            c.sha[:8],
        )
    out.print(table)


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
    run: Run, step: Annotated[int, typer.Argument(help="Step number.")], run_dir: RunDirOpt = None
) -> None:
    """One step's evidence: decision, edits with their apply status, flips, trailers."""
    commit = api.run_step(run, step, run_dir=run_dir)
    out.print(f"[bold]commit {commit.sha}[/]")
    out.print(escape(commit.message.rstrip()), soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("log")(log_cmd)
    app.command("diff")(diff_cmd)
    app.command("show")(show_cmd)
