"""The `skillopt` command: composes one sub-command module per noun."""

from __future__ import annotations

import signal
from typing import Annotated

import typer

from skillopt import __version__
from skillopt.cli import eval as eval_cli
from skillopt.cli import lint as lint_cli
from skillopt.cli import models as models_cli
from skillopt.cli import runs as runs_cli
from skillopt.cli import ship as ship_cli
from skillopt.cli import train as train_cli
from skillopt.cli.common import set_debug

app = typer.Typer(
    name="skillopt",
    help="Train agent skills (SKILL.md) against scored tasks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"skillopt {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Train agent skills (SKILL.md) against scored tasks."""
    set_debug(debug)


train_cli.register(app)
eval_cli.register(app)
lint_cli.register(app)
runs_cli.register(app)
models_cli.register(app)
ship_cli.register(app)


def run() -> None:
    # a stop from outside (a CI job's timeout, `kill`) is handled as Ctrl-C is: the
    # agents still running are killed and every finished rollout is kept
    signal.signal(signal.SIGTERM, _terminated)
    app()


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt
