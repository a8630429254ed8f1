"""`skillopt eval` and `skillopt validate` over several targets or harnesses: the
repeatable `--target` and `--harness`, and the one table of every combination
(rows target × harness: no skill, skill, Δ, n, and the load rate where the traces
tell it).

Invariant: with one target and one harness (and no `--html`) the commands take
their single-eval path and print what they always did; the matrix is a loop of
those evaluations, each cell cached as a single one is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
from rich import box
from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt._util import display
from skillopt._util.text import safe
from skillopt.cli.common import err, out, write_json
from skillopt.cli.progress import Display, open_display
from skillopt.errors import InputError

if TYPE_CHECKING:
    from skillopt.api import MatrixResult, MatrixValidation, RolloutEvent

# what feeds a command's rollout events into its progress display
Observe = Callable[[Display], Callable[["RolloutEvent"], None]]

Targets = Annotated[
    Optional[list[str]],
    typer.Option(
        "--target",
        "-t",
        help="Model the agent runs on: local/gemma-3-270m (the embedded offline model), "
        "scripted/echo (repeats the task back: a free dry run of the plumbing) or a "
        "litellm name (e.g. openai/gpt-4o-mini); for claude-code and codex, the CLI's "
        "--model (or 'default'). Repeat it to score every target (a matrix).",
        metavar="MODEL",
        show_default=False,
    ),
]
Harnesses = Annotated[
    Optional[list[str]],
    typer.Option(
        "--harness",
        help="How the agent runs a task: chat (the skill as system prompt), "
        "claude-code (claude -p), codex (codex exec), command (any program; `command:` in "
        "skillopt.yaml) or router (the model only picks which skill it would load) "
        "[default: chat]. Repeat it to score every harness (a matrix).",
        metavar="NAME",
        show_default=False,
    ),
]
HtmlOut = Annotated[
    Optional[Path],
    typer.Option(
        "--html",
        help="Write the target × harness matrix as one self-contained HTML page.",
        metavar="FILE",
        show_default=False,
    ),
]


def is_matrix(targets: list[str] | None, harnesses: list[str] | None) -> bool:
    """Whether the options ask for more than one target or harness."""
    return len(set(targets or [])) > 1 or len(set(harnesses or [])) > 1


def one(values: list[str] | None) -> str | None:
    """The single value of a repeatable option given at most once (its only value)."""
    return values[0] if values else None


def eval_matrix(
    skill: Path | None,
    tasks: Path,
    *,
    no_skill: bool,
    compare_no_skill: bool,
    json_file: Path | None,
    html_file: Path | None,
    observe: Observe,
    **options: Any,
) -> None:
    """`skillopt eval` over every cell: the table, `--json`, `--html`; exit 1 when no
    cell scored anything."""
    if skill is None or no_skill:
        raise InputError(
            "a matrix scores the bare model beside the skill in every cell: give a SKILL "
            "path (without --no-skill)",
            field="SKILL",
        )
    del compare_no_skill  # every cell compares with the bare model
    with open_display() as progress:
        result = api.evaluate_matrix(skill, tasks, observers=[observe(progress)], **options)
    if json_file is None or str(json_file) != "-":
        render(result)
    if json_file is not None:
        write_json(json_file, result.to_dict())
    if html_file is not None:
        html_file.parent.mkdir(parents=True, exist_ok=True)
        html_file.write_text(safe(api.matrix_html(result)) or "", encoding="utf-8")
        err.print(f"wrote {escape(str(html_file))}")
    if not any(c.scored for c in result.cells):
        err.print("[bold red]error:[/] no cell was scored; see the reasons above")
        raise typer.Exit(1)


def render(result: MatrixResult) -> None:
    """The matrix: one row per cell (and split), the unscored cells with their reason."""
    out.print(
        f"[bold]{escape(result.skill)}[/] ({result.skill_hash[:12]}) on "
        f"[bold]{escape(result.suite)}[/] · {escape(result.split)} · "
        f"{len(result.cells)} target × harness cells",
        soft_wrap=True,
    )
    many = len({row.split for cell in result.cells for row in cell.rows}) > 1
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    columns: list[tuple[str, JustifyMethod]] = [("target", "left"), ("harness", "left")]
    columns += [("split", "left")] if many else []
    columns += [("no skill", "right"), ("skill", "right"), ("Δ", "right"), ("n", "right")]
    columns += [("load", "right")] if result.agents else []
    for col, justify in columns:
        table.add_column(col, justify=justify, no_wrap=col not in ("target",))
    for cell in result.cells:
        names = [escape(cell.target or "default"), escape(cell.harness)]
        if not cell.scored:
            rest = ["", "—", "—", "—", "0"] if many else ["—", "—", "—", "0"]
            table.add_row(*names, *rest, *(["—"] if result.agents else []))
            continue
        for row in cell.rows:
            table.add_row(
                *names,
                *([row.split] if many else []),
                display.score(row.no_skill),
                display.score(row.skill),
                display.delta(row.delta),
                str(row.n),
                *([row.loaded or "—"] if result.agents else []),
            )
    out.print(table)
    for cell in result.cells:
        if not cell.scored:
            out.print(f"unscored {escape(cell.label)}: {escape(cell.why_unscored)}", soft_wrap=True)
        elif cell.rows and any(row.unscored for row in cell.rows):
            count = sum(row.unscored for row in cell.rows)
            err.print(f"[yellow]{count} rollout(s) unscored[/] in {escape(cell.label)}")


def validate_matrix(
    skill: Path,
    tasks: Path,
    *,
    json_file: Path | None,
    junit: Path | None,
    summary: Path | None,
    observe: Observe,
    **options: Any,
) -> NoReturn:
    """`skillopt validate` over every cell; exit 1 when any check of any cell failed."""
    if junit is not None or summary is not None:
        raise InputError(
            "--junit and --summary report one target on one harness: run validate once "
            "per cell for them",
            field="--junit" if junit is not None else "--summary",
        )
    with open_display() as progress:
        result = api.validate_matrix(skill, tasks, observers=[observe(progress)], **options)
    if json_file is None or str(json_file) != "-":
        render_validation(result)
    if json_file is not None:
        write_json(json_file, result.to_dict())
    raise typer.Exit(result.exit_code)


def render_validation(result: MatrixValidation) -> None:
    """Each cell's mean and checks, then every failure naming its cell."""
    mark = {True: "[green]pass[/]", False: "[red]FAIL[/]"}
    out.print(f"{mark[result.lint.passed]} lint: {escape(result.lint.detail)}", soft_wrap=True)
    for cell in result.cells:
        r = cell.result.result if cell.result is not None else None
        score = (
            f"mean {display.score(r.mean)} · pass {display.pct(r.pass_rate)} · "
            f"scored {r.n}/{r.tasks}"
            if r is not None
            else "not scored"
        )
        out.print(f"[bold]{escape(cell.label)}[/]: {score}", soft_wrap=True)
        for check in cell.checks:
            out.print(
                f"  {mark[check.passed]} {check.name}: {escape(check.detail)}", soft_wrap=True
            )
    for line in result.failures:
        err.print(f"[red]failed[/] {escape(line)}")
    out.print("[green]validate passed[/]" if result.passed else "[red]validate failed[/]")
