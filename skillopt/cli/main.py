"""The `skillopt` command: composes one sub-command module per noun, in the order
`skillopt --help` lists them.

Invariant: building the app imports the command modules and what they import at
the top (typer, rich, `skillopt.api`), nothing else: no engine, no git, no
subprocess; a command loads what it uses when it runs.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperCommand

from skillopt import __version__
from skillopt.cli import eval as eval_cli
from skillopt.cli import init as init_cli
from skillopt.cli import lint as lint_cli
from skillopt.cli import log as log_cli
from skillopt.cli import models as models_cli
from skillopt.cli import report as report_cli
from skillopt.cli import runs as runs_cli
from skillopt.cli import ship as ship_cli
from skillopt.cli import tasks as tasks_cli
from skillopt.cli import train as train_cli
from skillopt.cli.common import set_debug

if TYPE_CHECKING:
    # the click typer runs on (typer 0.2x carries its own copy; its types are these)
    from typer._click import Context, HelpFormatter, Parameter

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


COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("init", init_cli.init_cmd),
    ("train", train_cli.train_cmd),
    ("eval", eval_cli.eval_cmd),
    ("lint", lint_cli.lint_cmd),
    ("runs", runs_cli.runs_cmd),
    ("bundle", runs_cli.bundle_cmd),
    ("log", log_cli.log_cmd),
    ("diff", log_cli.diff_cmd),
    ("show", log_cli.show_cmd),
    ("prune", runs_cli.prune_cmd),
    ("report", report_cli.report_cmd),
    ("blame", report_cli.blame_cmd),
    ("models", models_cli.models_cmd),
    ("plugins", models_cli.plugins_cmd),
    ("export", ship_cli.export_cmd),
    ("adopt", ship_cli.adopt_cmd),
    ("validate", ship_cli.validate_cmd),
)
for name, command in COMMANDS:
    app.command(name)(command)
app.add_typer(tasks_cli.tasks_app, name="tasks")


class Command(TyperCommand):
    """A command whose help names each argument by its metavar alone (typer would
    append the Python type, `PATH <list[Path]>`), an option without a metavar by
    click's word for its type, and writes the usage line as click does (`SKILL`,
    `[SKILL]`, `PATH...`)."""

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((_argument(param), record[1]))
            elif param.metavar is None and "<" in record[0]:
                # an option declared without a metavar: click's word for its type
                # (`--run-dir PATH`), not typer's Python type (`--run-dir <path>`)
                name = _TYPE_MARK.sub(lambda m: " " + _type_word(m.group(1)), record[0])
                opts.append((name, record[1]))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _argument(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces


_TYPE_MARK = re.compile(r" <([^<>]*)>")
_TYPE_WORDS = {"int": "N", "int range": "N", "float": "X", "path": "PATH", "str": "TEXT"}


def _type_word(label: str) -> str:
    """A metavar for typer's type label (`int` → `N`, `path` → `PATH`)."""
    return _TYPE_WORDS.get(label, "VALUE")


def _argument(param: Parameter) -> str:
    name = param.metavar or (param.name or "").upper()
    return name + ("..." if param.nargs != 1 else "")


def _use_command_class(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        if info.cls is None or info.cls is TyperCommand:  # not one a command chose
            info.cls = Command
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _use_command_class(group.typer_instance)


_use_command_class(app)


def run() -> None:
    # a stop from outside (a CI job's timeout, `kill`) is handled as Ctrl-C is: the
    # agents still running are killed and every finished rollout is kept
    signal.signal(signal.SIGTERM, _terminated)
    app()


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
