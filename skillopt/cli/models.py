"""`skillopt models`: what can be used on this machine."""

from __future__ import annotations

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt.cli.common import handle_errors, out


@handle_errors
def models_cmd() -> None:
    """List usable models: the embedded one, providers with a key set, configured ones."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("model", "kind", "usable", "detail"):
        table.add_column(col, no_wrap=col != "detail", overflow="fold")
    for m in api.models():
        table.add_row(
            escape(m.name), m.kind, "[green]yes[/]" if m.usable else "[red]no[/]", escape(m.detail)
        )
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("models")(models_cmd)
