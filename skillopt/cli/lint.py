"""`skillopt lint`: check skills against the Agent Skills rules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from skillopt import api
from skillopt.cli.common import err, handle_errors, out


@handle_errors
def lint_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Skill directories, SKILL.md files, or directories holding skills.", metavar="PATH"
        ),
    ],
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Treat warnings (Claude-only keys, portability) as errors."),
    ] = False,
) -> None:
    """Check SKILL.md files: name, description, allowed keys; one line per problem."""
    problems = api.lint(paths, strict=strict)
    for p in problems:
        style = "red" if p.severity == "error" else "yellow"
        out.print(f"[{style}]{escape(str(p))}[/]", soft_wrap=True)
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    if not problems:
        err.print("[green]ok[/]: no problems")
    else:
        err.print(f"{errors} error(s), {warnings} warning(s)")
    if errors:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("lint")(lint_cmd)
