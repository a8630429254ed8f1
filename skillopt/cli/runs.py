"""`skillopt runs`: the runs under the runs directory; `skillopt log`, `skillopt
diff`, `skillopt show`: a run's story, read from its checkpoint and git; `skillopt
prune`: tidy the git refs runs leave behind; `skillopt bundle`: pack a run to
replay elsewhere."""

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
from skillopt.cli.common import handle_errors, out
from skillopt.skill.edits import Edit

if TYPE_CHECKING:
    from skillopt.runs.read import RunInfo, RunStep

Run = Annotated[
    str, typer.Argument(help="Run id (under the runs directory) or run directory.", metavar="RUN")
]
RunDirOpt = Annotated[
    Optional[Path],
    typer.Option("--run-dir", help="Where runs are [default: runs].", show_default=False),
]


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
        from skillopt.runs.read import runs_dir

        out.print(f"no runs in {escape(str(runs_dir(run_dir)))}", soft_wrap=True)
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
def log_cmd(run: Run, run_dir: RunDirOpt = None) -> None:
    """The training story of a run: every step, its decision, reason and evidence."""
    steps = api.run_log(run, run_dir=run_dir)
    if steps:
        out.print(val_line(steps), highlight=False)
    rows = [_log_row(s) for s in steps]
    columns = ("step", "decision", "val", "Δ", "p", "n", "edits", "commit")
    table = _log_table(columns, [r[:-1] for r in rows])
    # the reasons go in a last column when it gets room enough, else below the table
    room = out.width - out.measure(table).maximum - 1
    if room >= _REASON_WIDTH:
        table = _log_table((*columns, "reason"), rows)
    out.print(table)
    if room < _REASON_WIDTH:
        out.print()
        for s, row in zip(steps, rows):
            if row[-1]:
                out.print(f"step {s.step}: {row[-1]}", soft_wrap=True)


_REASON_WIDTH = 30


def val_line(steps: list[RunStep]) -> str:
    """`val ▁▁█·  0.000 → 0.667 (best)`: each step's validation score (`·`: the step
    scored none), then the initial and the best skill's."""
    from skillopt.runs.read import best_val

    initial = steps[0].val if steps[0].kind == "initial" else None
    return (
        f"val {display.sparkline([s.val for s in steps])}  "
        f"{display.score(initial)} → {display.score(best_val(steps))} (best)"
    )


def _log_table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True
    )
    for col in columns:
        if col == "reason":
            table.add_column(col, overflow="fold", min_width=_REASON_WIDTH)
        else:
            right = col in ("step", "Δ", "p", "n")
            table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def _log_row(s: RunStep) -> tuple[str, ...]:
    """A step's cells (markup): step, decision, val, Δ, p, n, edits, commit, reason."""
    kind = "slow " if s.kind == "slow_update" else ""
    style = {"accepted": "green", "rejected": "red"}.get(s.decision, "")
    decision = f"{kind}{s.decision.replace('_', ' ')}"
    cells = ("", "", "", "", "", "")
    if s.commit is not None:
        t = s.commit.evidence
        val = _num(t.val, ".3f", t.gated or t.n is not None)
        if t.gated or t.incumbent_val is not None:
            val = f"{_num(t.incumbent_val, '.3f', True)}→{val}"
        edits = (
            f"{t.edits_applied or 0} ok, {t.edits_skipped or 0} skip"
            if t.edits_applied is not None or t.edits_skipped is not None
            else ""
        )
        cells = (
            escape(val),
            _num(t.delta, "+.3f", t.gated),
            _num(t.p_value, ".4f", t.gated),
            "" if t.n is None else str(t.n),
            escape(edits),
            s.commit.sha[:8],
        )
    return (
        str(s.step),
        f"[{style}]{decision}[/]" if style else decision,
        *cells,
        escape(s.reason),
    )


def _num(value: float | None, spec: str, known: bool) -> str:
    """A trailer value; `n/a` where the commit has it but it is unknown, blank where
    the commit has none (the initial commit compares nothing)."""
    if value is None:
        return "n/a" if known else ""
    return format(value, spec)


@handle_errors
def diff_cmd(
    run: Run,
    step: Annotated[
        Optional[int],
        typer.Argument(
            help="Step number; without it, the whole run (initial → best).", show_default=False
        ),
    ] = None,
    run_dir: RunDirOpt = None,
) -> None:
    """The skill diff of one step, or of the whole run."""
    text = api.run_diff(run, step, run_dir=run_dir)
    out.print(escape(text) if text else "(no change)", soft_wrap=True, highlight=False)


@handle_errors
def show_cmd(
    run: Run, step: Annotated[int, typer.Argument(help="Step number.")], run_dir: RunDirOpt = None
) -> None:
    """One step's evidence: decision, edits with their apply status, flips, trailers."""
    found = api.run_log_step(run, step, run_dir=run_dir)
    if found.commit is None:
        out.print(escape(found.describe()), soft_wrap=True)
        for line in _uncommitted_evidence(found.record):
            out.print(f"  {escape(line)}", soft_wrap=True)
        return
    out.print(f"[bold]commit {found.commit.sha}[/]")
    out.print(escape(found.commit.message.rstrip()), soft_wrap=True)


def _uncommitted_evidence(rec: dict) -> list[str]:
    """What a step with no candidate still recorded: its training batch, the optimizer
    calls it made, and the edits that were proposed but not applied."""
    lines = []
    if rec.get("train_mean") is not None or "failures" in rec:
        lines.append(
            f"train batch: mean {display.score(rec.get('train_mean'))}, "
            f"{rec.get('failures', 0)} failed, {rec.get('successes', 0)} passed, "
            f"{rec.get('unscored', 0)} unscored"
        )
    proposals = rec.get("proposals") or []
    if proposals:
        skipped = [p for p in proposals if p.get("skipped")]
        lines.append(
            f"optimizer calls: {len(proposals)}"
            + (f", {len(skipped)} skipped ({skipped[0]['skipped']})" if skipped else "")
        )
    for d in rec.get("dropped") or []:
        lines.append(f"[dropped] {Edit.from_dict(d['edit']).describe()} — {d['reason']}")
    for a in rec.get("apply") or []:
        detail = f" — {a['detail']}" if a.get("detail") else ""
        lines.append(f"[{a['status']}] {Edit.from_dict(a['edit']).describe()}{detail}")
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
    from skillopt.training.replay import bundle

    path = bundle(run, output, run_dir=run_dir)
    out.print(
        f"wrote {escape(str(path))} ({path.stat().st_size:,} bytes); replay it with "
        f"`skillopt train --replay {escape(str(path))}`",
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    app.command("runs")(runs_cmd)
    app.command("bundle")(bundle_cmd)
    app.command("log")(log_cmd)
    app.command("diff")(diff_cmd)
    app.command("show")(show_cmd)
    app.command("prune")(prune_cmd)
