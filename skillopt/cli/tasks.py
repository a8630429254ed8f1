"""`skillopt tasks …`: task suites made from where tasks already live (`import`) and
from the user's own agent sessions (`harvest`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.markup import escape

from skillopt import api
from skillopt.cli.common import handle_errors, out
from skillopt.cli.harvest import harvest_cmd
from skillopt.cli.triggers import triggers_cmd

if TYPE_CHECKING:
    from skillopt.api import ImportResult

# the kinds of source `--format` names (as `skillopt.suite.sources.KINDS`, which the
# command line may not import)
KINDS = (
    "suite",
    "csv",
    "tsv",
    "json",
    "jsonl",
    "hf",
    "promptfoo",
    "inspect",
    "inspect-log",
    "skill-creator",
)

tasks_app = typer.Typer(
    name="tasks",
    help="Make task suites from the evaluations and agent sessions you already have.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)


def _opt(flag: str, help: str, metavar: str = "COL") -> Any:
    return typer.Option(flag, help=help, metavar=metavar, show_default=False)


@handle_errors
def import_cmd(
    source: Annotated[
        str,
        typer.Argument(
            help="Where the tasks are: a CSV/TSV, JSON/JSONL, a saved Hugging Face dataset "
            "(its directory) or hf:owner/name, a promptfoo config, an inspect_ai dataset or "
            "log, a skill with evals/evals.json.",
            metavar="SOURCE",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="The suite file to write, e.g. tasks/qa.yaml.",
            metavar="FILE",
            show_default=False,
        ),
    ] = ...,  # type: ignore[assignment]
    format: Annotated[
        Optional[str], _opt("--format", f"What SOURCE is: {', '.join(KINDS[1:])}.", "KIND")
    ] = None,
    input: Annotated[
        Optional[str],
        _opt(
            "--input",
            "The field holding the input (several: a,b — then {a} and {b} are prompt "
            "slots) [default: guessed: input, question, prompt, …].",
        ),
    ] = None,
    expected: Annotated[
        Optional[str],
        _opt("--expected", "The field holding the expected answer [default: guessed]."),
    ] = None,
    id: Annotated[
        Optional[str], _opt("--id", "The field holding the id [default: guessed, else the row].")
    ] = None,
    split_field: Annotated[
        Optional[str],
        _opt("--split-field", "A field pinning each item to train, val (validation, dev) or test."),
    ] = None,
    subset: Annotated[
        Optional[str], _opt("--subset", "Which part of SOURCE: a dataset's split.", "NAME")
    ] = None,
    prompt: Annotated[
        Optional[str],
        _opt("--prompt", "The suite's prompt template, e.g. 'Q: {input}'.", "TEMPLATE"),
    ] = None,
    scorer: Annotated[
        Optional[str], _opt("--scorer", "The suite's scorer [default: exact].", "NAME")
    ] = None,
    name: Annotated[
        Optional[str], _opt("--name", "The suite's name [default: the file's stem].", "NAME")
    ] = None,
    keep_unscored: Annotated[
        bool,
        typer.Option(
            "--keep-unscored",
            help="Keep an item some of whose checks have no skillopt scorer (scored by the "
            "rest) instead of skipping it.",
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the output file when it exists.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was written as JSON, for scripts.")
    ] = False,
) -> None:
    """Import tasks from where they already live into a suite file, and say what was
    made: items per split, scorers used, rows skipped and why."""
    result = api.import_tasks(
        source,
        output,
        format=format,
        input=input,
        expected=expected,
        id=id,
        split_field=split_field,
        subset=subset,
        prompt=prompt,
        scorer=scorer,
        name=name,
        keep_unscored=keep_unscored,
        force=force,
    )
    if as_json:
        out.print_json(json.dumps(result.to_dict(), ensure_ascii=False))
        return
    for line in import_lines(result):
        out.print(escape(line), soft_wrap=True)


def import_lines(result: ImportResult) -> list[str]:
    """What `skillopt tasks import` prints."""
    lines = []
    if result.path is not None:
        splits = " · ".join(f"{k} {v}" for k, v in result.splits.items())
        scorers = ", ".join(f"{k} {v}" for k, v in result.scorers.items())
        lines.append(f"wrote {result.path}: {result.items} items ({splits}) · scorers: {scorers}")
    skips = result.skip_lines()
    if skips:
        n = len(result.skipped)
        lines.append(f"skipped {n} row{'s' if n != 1 else ''}:")
        lines.extend(f"  {line}" for line in skips)
    if result.triggers is not None:
        lines.append(f"wrote {result.triggers}: {result.trigger_count} trigger evals")
    lines.extend(f"note: {note}" for note in result.notes)
    if result.path is not None:
        lines.append(f"next: skillopt eval SKILL --tasks {result.path}")
    return lines


tasks_app.command("import")(import_cmd)
tasks_app.command("harvest")(harvest_cmd)
tasks_app.command("triggers")(triggers_cmd)
