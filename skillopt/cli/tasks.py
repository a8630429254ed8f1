"""`skillopt tasks …`: task suites made from where tasks already live (`import`) and
from the user's own agent sessions (`harvest`)."""

from __future__ import annotations

import typer

from skillopt.cli.harvest import harvest_cmd

tasks_app = typer.Typer(
    name="tasks",
    help="Make task suites from the evaluations and agent sessions you already have.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)

tasks_app.command("harvest")(harvest_cmd)
