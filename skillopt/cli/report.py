"""`skillopt report`: a run's HTML report, or two runs compared; `skillopt blame`:
which step and edit brought each line of a run's best skill."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt.cli.common import Run, RunDirOpt, handle_errors, out, warn


@handle_errors
def report_cmd(
    run: Run,
    other: Annotated[
        Optional[str],
        typer.Argument(
            help="A second run (of the same suite) to compare with the first.",
            metavar="RUN_B",
            show_default=False,
        ),
    ] = None,
    html: Annotated[
        Optional[Path],
        typer.Option(
            "--html",
            help="Where to write the page [default: RUN's directory: report.html, or "
            "compare-RUN_B.html with two runs].",
            show_default=False,
        ),
    ] = None,
    open_it: Annotated[
        bool, typer.Option("--open", help="Open the page in the web browser.")
    ] = False,
    run_dir: RunDirOpt = None,
) -> None:
    """Write a run's HTML report (one self-contained file: scores per step, spend,
    the task × step grid, the test split, each step's diff and edits, the blame of
    the best skill, the settings), or with RUN_B the page comparing two runs."""
    path = api.run_report(run, other, out=html, run_dir=run_dir)
    out.print(f"report: {escape(str(path))}", soft_wrap=True)
    if other is not None:
        suites = [api.run_config(r, run_dir=run_dir).get("suite") for r in (run, other)]
        if suites[0] != suites[1]:
            warn(
                f"the two runs were trained on different suites ({suites[0]} and "
                f"{suites[1]}): their scores are not on the same tasks"
            )
    if open_it and not webbrowser.open(path.resolve().as_uri()):
        warn(f"no web browser could be started: open {path} yourself")


@handle_errors
def blame_cmd(run: Run, run_dir: RunDirOpt = None) -> None:
    """Every line of a run's best skill with the step that brought it, that step's
    decision, and the rationale of the edit (`report.html` links each to its
    evidence)."""
    lines = api.run_blame(run, run_dir=run_dir)
    if not lines:
        out.print("(the run has no committed skill yet)")
        return
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    table.add_column("line", justify="right", no_wrap=True)
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("decision", no_wrap=True)
    table.add_column("text", overflow="fold")
    table.add_column("why", overflow="fold", max_width=48)
    for b in lines:
        why = b["rationale"] or ""
        if b["step"] and b["edit"] is not None:
            why = f"edit {b['edit']} ({b['op']}): {why}" if why else f"edit {b['edit']} ({b['op']})"
        elif b["op"] == "guidance":
            why = "slow-update guidance"
        table.add_row(
            str(b["line"]),
            str(b["step"]),
            b["decision"],
            escape(b["text"]),
            escape(_short(why)),
        )
    out.print(table)


def _short(text: str, width: int = 72) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
