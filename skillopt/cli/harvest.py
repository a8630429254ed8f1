"""`skillopt tasks harvest`: candidate tasks from the user's own Claude Code and Codex
sessions into a review file, and a reviewed file into a suite."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from skillopt import api
from skillopt.cli.common import JsonOut, err, handle_errors, out, write_json
from skillopt.errors import InputError

if TYPE_CHECKING:
    from skillopt.api import HarvestResult, HarvestSuite


@handle_errors
def harvest_cmd(
    sources: Annotated[
        Optional[list[str]],
        typer.Option(
            "--from",
            help="A session file, a ~/.claude/projects/<project> directory or a Codex "
            "sessions directory (repeatable). Nothing is read unless named here.",
            metavar="PATH",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "-o",
            "--output",
            help="The review file to write (with --from), or the suite (with --reviewed).",
            show_default=False,
        ),
    ] = None,
    reviewed: Annotated[
        Optional[Path],
        typer.Option(
            "--reviewed",
            help="Make a suite of the entries you kept (keep: true) in this review file.",
            show_default=False,
        ),
    ] = None,
    judge: Annotated[
        Optional[str],
        typer.Option(
            "--judge",
            help="A model that drafts a rubric for each candidate, for you to approve.",
            metavar="MODEL",
            show_default=False,
        ),
    ] = None,
    name: Annotated[
        Optional[str],
        typer.Option(
            "--name",
            help="The suite's name [default: the file's].",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
    json_file: JsonOut = None,
) -> None:
    """Harvest candidate tasks from your own agent sessions (redacted, near-duplicates
    merged) into a review file; after you review it, make a suite of what you kept."""
    if output is None:
        raise InputError("name the file to write with -o", field="-o")
    if reviewed is not None:
        if sources:
            raise InputError("give either --from (harvest) or --reviewed (make the suite)")
        made = api.harvest_suite(reviewed, output, name=name, force=force)
        if json_file is not None:
            write_json(json_file, dataclasses.asdict(made))
        if json_file is None or str(json_file) != "-":
            _show_suite(made, reviewed)
        return
    result = api.harvest(sources or [], output, judge=judge, force=force)
    if json_file is not None:
        write_json(json_file, dataclasses.asdict(result))
    if json_file is None or str(json_file) != "-":
        _show_harvest(result)


def _show_harvest(r: HarvestResult) -> None:
    read = r.read
    kinds = ", ".join(f"{n} {agent}" for agent, n in sorted(read.sessions.items())) or "none"
    out.print(f"read {read.files} files: sessions {kinds}; {read.lines} lines", soft_wrap=True)
    for path, n in read.unreadable:
        out.print(f"  {n} line{'s' if n != 1 else ''} unreadable in {escape(path)}", soft_wrap=True)
    if read.unknown:
        out.print(f"  {read.unknown} lines of an unknown shape skipped")
    if read.not_sessions:
        out.print(f"  {len(read.not_sessions)} files are not agent sessions, skipped")
    for path, why in read.failed:
        out.print(f"  could not open {escape(path)}: {escape(why)}", soft_wrap=True)
    if read.over_limit:
        out.print(f"  {read.over_limit} files past the first {read.files} left unread")
    signals = ", ".join(f"{k} {n}" for k, n in r.signals.items()) or "none"
    folded = f", {r.corrections} a correction of the request before" if r.corrections else ""
    out.print(
        f"candidates: {r.candidates} ({r.found} requests found, {r.merged} merged as "
        f"near-duplicates{folded}); signals: {signals}",
        soft_wrap=True,
    )
    total = sum(r.redactions.values())
    kinds = ", ".join(f"{k} {n}" for k, n in r.redactions.items())
    out.print(f"redacted: {total}" + (f" ({kinds})" if total else ""), soft_wrap=True)
    if r.drafted or r.draft_notes:
        out.print(f"rubrics drafted: {r.drafted}; without a draft: {len(r.draft_notes)}")
    out.print(f"review file: {escape(str(r.review))}", soft_wrap=True)
    if r.candidates:
        err.print(
            "next: set keep: true and write expected: or rubric: for the tasks you want, then\n"
            f"  skillopt tasks harvest --reviewed {escape(str(r.review))} -o tasks/NAME.yaml",
            soft_wrap=True,
        )


def _show_suite(s: HarvestSuite, reviewed: Path) -> None:
    written = ", ".join(escape(str(p)) for p in s.written)
    splits = " · ".join(f"{k} {n}" for k, n in s.splits.items())
    scorers = ", ".join(f"{k} {n}" for k, n in sorted(s.scorers.items()))
    items = f"{s.kept} item{'s' if s.kept != 1 else ''}"
    # worded as `skillopt tasks import` words what it wrote
    out.print(f"wrote {written}: {items} ({splits}) · scorers: {scorers}", soft_wrap=True)
    out.print(f"left out: {s.dropped} (keep: false in {escape(str(reviewed))})", soft_wrap=True)
    total = sum(s.redactions.values())
    if total:
        kinds = ", ".join(f"{k} {n}" for k, n in s.redactions.items())
        out.print(f"redacted in your edits: {total} ({kinds})")
    if s.scorers.get("judge"):
        err.print("items with a rubric are scored by a judge: pass --judge MODEL to eval and train")
