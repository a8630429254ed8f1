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
        t = c.trailers
        val, _, n = t.get("Skillopt-Val", "").partition(" (n=")
        kind = {"slow_update": "slow "}.get(t.get("Skillopt-Kind", ""), "")
        style = {"accepted": "green", "rejected": "red"}.get(c.decision, "")
        decision = f"{kind}{c.decision}"
        table.add_row(
            str(c.step),
            f"[{style}]{decision}[/]" if style else decision,
            escape(val.replace(" -> ", "→")),
            t.get("Skillopt-Delta", ""),
            t.get("Skillopt-P-Value", ""),
            n.rstrip(")"),
            escape(
                t.get("Skillopt-Edits", "").replace(" applied", " ok").replace(" skipped", " skip")
            ),
            c.sha[:8],
        )
    out.print(table)


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
