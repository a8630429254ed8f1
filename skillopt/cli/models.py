"""`skillopt models`: what can be used on this machine."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt.cli.common import Executor, err, handle_errors, out, warn

if TYPE_CHECKING:
    from skillopt.api import NodeReport


@handle_errors
def models_cmd(executor: Executor = None) -> None:
    """List what can be used: the embedded model, each provider with the variable its
    key goes in (and whether it is set), configured models, agent CLIs; with
    --executor ray, also what each node of the Ray cluster has."""
    nodes = api.cluster_report(executor=executor)  # first: an unreachable cluster stops here
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("model", "kind", "usable", "detail"):
        table.add_column(col, no_wrap=col != "detail", overflow="fold")
    for m in api.models():
        table.add_row(
            escape(m.name), m.kind, "[green]yes[/]" if m.usable else "[red]no[/]", escape(m.detail)
        )
    out.print(table)
    if nodes is not None:
        render_nodes(nodes)


def render_nodes(nodes: list[NodeReport]) -> None:
    """One table: a row per check of every node of the cluster."""
    out.print()
    out.print(f"[bold]Ray cluster[/]: {len(nodes)} live node(s)")
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("node", "check", "ok", "detail"):
        table.add_column(col, no_wrap=col != "detail", overflow="fold")
    for i, node in enumerate(nodes):
        label = node.node + (f" ({node.node_id[:8]})" if node.node_id else "")
        for j, c in enumerate(node.checks):
            table.add_row(
                escape(label) if j == 0 else "",
                escape(c.name),
                "[green]ok[/]" if c.ok else "[red]no[/]",
                escape(c.detail),
                end_section=j == len(node.checks) - 1 and i < len(nodes) - 1,
            )
    out.print(table)


@handle_errors
def plugins_cmd(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the list as JSON, for scripts.")
    ] = False,
) -> None:
    """List scorers, harnesses, optimizers, gates and model providers, and where each
    came from (built in, or an installed plugin)."""
    found = api.plugins()
    if as_json:
        rows = [
            {
                "kind": e.kind,
                "name": e.name,
                "origin": e.origin,
                "where": e.where,
                "help": e.help,
                "section": e.options.get("section"),
            }
            for e in found.entries
        ]
        problems = [{"origin": p.origin, "message": p.message} for p in found.problems]
        out.print_json(json.dumps({"components": rows, "problems": problems}))
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("kind", "name", "from", "detail"):
        table.add_column(col, no_wrap=col in ("kind", "name"), overflow="fold")
    # what any other name of a kind resolves to, listed after that kind's names
    fallback = {
        "optimizer": ("<model name>", "the LLM optimizer"),
        "model": ("<other>/…", "openai/…, anthropic/…: their SDKs; the rest: litellm"),
    }
    for i, e in enumerate(found.entries):
        name = f"{e.name}/…" if e.kind == "model" else e.name
        detail = e.help
        if e.kind == "harness" and "section" in e.options:
            detail = f"{detail} (settings: {e.options['section']})".lstrip()
        table.add_row(e.kind, escape(name), escape(e.origin), escape(detail))
        last_of_kind = i + 1 == len(found.entries) or found.entries[i + 1].kind != e.kind
        if last_of_kind and e.kind in fallback:
            other, what = fallback[e.kind]
            table.add_row(e.kind, other, api.builtin_origin(), what)
    out.print(table)
    for problem in found.problems:
        err.print(f"[yellow]warning:[/] plugin {escape(problem.origin)}: {escape(problem.message)}")


def refuse_missing_keys(lines: list[str]) -> None:
    """After a dry run's plan: warn about each key the run would lack, and exit 2
    (as the run itself would) when one is missing."""
    for line in lines:
        warn(f"{line} (the run would not start)")
    if lines:
        raise typer.Exit(2)
