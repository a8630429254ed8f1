"""`skillopt runs`: the runs under the runs directory; `skillopt prune`: tidy the
git refs runs leave behind; `skillopt bundle`: pack a run to replay elsewhere.
(A run's story, `log`, `diff` and `show`, is `skillopt.cli.log`.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from skillopt import api
from skillopt._util import display
from skillopt.cli.common import Run, RunDirOpt, handle_errors, out

if TYPE_CHECKING:
    from skillopt.api import RunInfo


# the keys of each object `skillopt runs --json` prints (`RunInfo.to_dict`)
RUN_KEYS = (
    "id, path, status (finished, stopped, interrupted or unreadable), reason, skill, "
    "suite, target, optimizer, started_at (seconds since the epoch), started (UTC), "
    "stopped_by (the budget's flag), val_initial, val_best, test_best, test_no_skill "
    "(null: no test split was run), target_rollouts, cached_rollouts, target_cost, "
    "optimizer_cost, cost (USD), cost_complete (false: some calls had no known price)"
)


@handle_errors
def runs_cmd(
    run_dir: RunDirOpt = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help=f"Print the runs as a JSON list, for scripts; each has {RUN_KEYS}."
        ),
    ] = False,
) -> None:
    """List the runs, newest first: skill, suite, models, when each started (UTC), its
    status, validation (initial → best), test (best vs no skill), target rollouts and
    cost. A finished run is done; a run stopped by a budget, or interrupted (killed,
    Ctrl-C), continues with `skillopt train --resume RUN`; an unreadable run says why."""
    found = api.list_runs(run_dir=run_dir)
    if as_json:
        out.print_json(json.dumps([r.to_dict() for r in found], ensure_ascii=False))
        return
    if not found:
        out.print(f"no runs in {escape(str(api.runs_dir(run_dir)))}", soft_wrap=True)
        return
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        caption="val: initial → best · test: best vs no skill · rollouts: run by the "
        "target +served from the store · cost: target + optimizer",
        caption_justify="left",
    )
    for col in _RUN_COLUMNS:
        right = col in ("rollouts", "cost")
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for r in found:
        table.add_row(*_run_row(r))
    if out.measure(table, options=out.options.update(max_width=10_000)).maximum > out.width:
        # a terminal too narrow for the table: a few lines per run, the same figures
        for i, r in enumerate(found):
            if i:
                out.print()
            for line in _run_lines(r):
                out.print(line, highlight=False)
        return
    out.print(table)
    notes = [r for r in found if r.reason]
    if notes:
        out.print()
    for r in notes:
        out.print(f"{escape(r.id)}: {_status(r)}: {escape(r.reason)}", soft_wrap=True)


_RUN_COLUMNS = (
    "run",
    "skill",
    "suite",
    "target",
    "optimizer",
    "started",
    "status",
    "val",
    "test",
    "rollouts",
    "cost",
)
_STATUS_STYLE = {"stopped": "yellow", "interrupted": "yellow", "unreadable": "red"}


def _status(r: RunInfo) -> str:
    """`finished`, `stopped: budget`, `interrupted`, `unreadable` (markup)."""
    text = "stopped: budget" if r.status == "stopped" and r.stopped_by else r.status
    style = _STATUS_STYLE.get(r.status)
    return f"[{style}]{text}[/]" if style else text


def _run_row(r: RunInfo) -> tuple[str, ...]:
    """A run's cells (markup), in `_RUN_COLUMNS` order; blank where unknown."""
    if r.status == "unreadable":
        return (escape(r.id), "", "", "", "", r.started, _status(r), "", "", "", "")
    test = (
        ""
        if r.test_best is None and r.test_no_skill is None
        else f"{display.score(r.test_best)} vs {display.score(r.test_no_skill)}"
    )
    return (
        escape(r.id),
        escape(r.skill or ""),
        escape(r.suite or ""),
        escape(r.target or ""),
        escape(r.optimizer or ""),
        r.started,
        _status(r),
        f"{display.score(r.val_initial)} → {display.score(r.val_best)}",
        test,
        f"{r.target_rollouts or 0:,} +{r.cached_rollouts or 0:,}",
        display.money(r.cost, r.cost_complete),
    )


def _run_lines(r: RunInfo) -> list[str]:
    """A run as a few lines (markup), for a terminal too narrow for the table."""
    head = f"{escape(r.id)}  {_status(r)}" + (f" · {r.started} UTC" if r.started else "")
    if r.status == "unreadable":
        return [head, f"  {escape(r.reason)}"]
    row = dict(zip(_RUN_COLUMNS, _run_row(r)))
    lines = [
        head,
        f"  skill {row['skill']} · suite {row['suite']}",
        f"  target {row['target']} · optimizer {row['optimizer']}",
        f"  val {row['val']}"
        + (f" · test {row['test']} (best vs no skill)" if row["test"] else ""),
        f"  rollouts {r.target_rollouts or 0:,} run, {r.cached_rollouts or 0:,} from the store"
        f" · cost {row['cost']}",
    ]
    if r.reason:
        lines.append(f"  {escape(r.reason)}")
    return lines


@handle_errors
def prune_cmd(
    run_dir: RunDirOpt = None,
    repo: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--repo",
            help="Repository to tidy (repeatable) [default: the one holding the current "
            "directory, and RUN_DIR/audit.git].",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
    keep: Annotated[
        Optional[int],
        typer.Option(
            "--keep",
            min=0,
            help="Also prune all but the newest N runs.",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    older_than: Annotated[
        Optional[float],
        typer.Option(
            "--older-than",
            min=0,
            help="Also prune runs whose newest commit is older than this many days.",
            metavar="DAYS",
            show_default=False,
        ),
    ] = None,
    everything: Annotated[bool, typer.Option("--all", help="Prune every run's refs.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")
    ] = False,
) -> None:
    """Delete the git branches (skillopt/<run-id>) and rejected-candidate refs of runs
    whose run directory is gone, or older or more than you keep. Run directories are
    never touched."""
    pruned = api.prune_runs(
        run_dir=run_dir,
        repos=repo or (),
        keep=keep,
        older_than_days=older_than,
        everything=everything,
        dry_run=dry_run,
    )
    verb = "would delete" if dry_run else "deleted"
    for p in pruned:
        kept = f" (kept skillopt/{p.run_id}: {p.kept})" if p.kept else ""
        out.print(
            f"{verb} {_many(len(p.refs), 'ref')} of {escape(p.run_id)} in "
            f"{escape(p.repo)}: {escape(p.why)}{escape(kept)}",
            soft_wrap=True,
            highlight=False,
        )
    refs = sum(len(p.refs) for p in pruned)
    out.print(
        f"{verb} {_many(refs, 'ref')} of {_many(len(pruned), 'run')}"
        if pruned
        else "nothing to prune",
        highlight=False,
    )


def _many(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


@handle_errors
def bundle_cmd(
    run: Run,
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="The bundle to write (.tar.gz).",
            metavar="FILE",
            show_default=False,
        ),
    ] = ...,  # type: ignore[assignment]
    run_dir: RunDirOpt = None,
) -> None:
    """Pack a finished run for another machine: its directory, git history, suite and
    exactly the store rows it used (`skillopt train --replay FILE` replays it)."""
    path = api.bundle(run, output, run_dir=run_dir)
    out.print(
        f"wrote {escape(str(path))} ({path.stat().st_size:,} bytes); replay it with "
        f"`skillopt train --replay {escape(str(path))}`",
        soft_wrap=True,
    )
