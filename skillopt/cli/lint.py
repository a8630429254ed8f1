"""`skillopt lint`: check skills against the Agent Skills rules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from skillopt import api
from skillopt.cli.common import err, handle_errors, out

if TYPE_CHECKING:
    from skillopt.api import Findings


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
    found = api.lint(paths, strict=strict)
    for p in found:
        style = "red" if p.severity == "error" else "yellow"
        out.print(f"[{style}]{escape(str(p))}[/]", soft_wrap=True)
    err.print(summary(found, strict=strict))
    if found.errors:
        raise typer.Exit(1)


def summary(found: Findings, *, strict: bool = False) -> str:
    """'ok: 3 skills checked, no problems', or the counts; --strict is suggested only
    when there are warnings it would fail on."""
    checked = _count(len(found.checked), "skill")
    if not found:
        return f"[green]ok[/]: {checked} checked, no problems"
    text = (
        f"{checked} checked: {_count(found.errors, 'error')}, {_count(found.warnings, 'warning')}"
    )
    if found.warnings and not strict:
        text += " (--strict fails on warnings)"
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
