"""`skillopt init`: start a new skill: its folder, a suite of example items and a
`skillopt.yaml`, so that `eval` and `train` run on it at once, offline.

Invariant: on a terminal it asks what the flags left out; without one (a pipe, CI)
it never waits for an answer: it uses the defaults and says which.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from skillopt import api
from skillopt._util import display
from skillopt.cli.common import err, handle_errors, out


@handle_errors
def init_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="The skill's name: lowercase letters, digits and single hyphens.",
            metavar="NAME",
            show_default=False,
        ),
    ],
    directory: Annotated[
        Path,
        typer.Argument(help="The project folder to write into [default: .].", metavar="DIR"),
    ] = Path("."),
    description: Annotated[
        Optional[str],
        typer.Option(
            "--description",
            help="What the skill does and when to use it (asked on a terminal).",
            metavar="TEXT",
            show_default=False,
        ),
    ] = None,
    scorer: Annotated[
        Optional[str],
        typer.Option(
            "--scorer",
            help=f"How answers are checked: {', '.join(api.INIT_SCORERS)} (asked on a "
            "terminal) [default: exact].",
            metavar="NAME",
            show_default=False,
        ),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Ask nothing: use the defaults.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that exist.")] = False,
) -> None:
    """Start a skill: SKILL.md, a suite of example tasks and skillopt.yaml, ready to eval."""
    api.check_init(name, directory, force=force)  # before anything is asked
    default_description, default_scorer = api.init_defaults()
    if not yes and sys.stdin.isatty():
        if description is None:
            description = typer.prompt(
                "What does the skill do, and when should an agent use it?",
                default=default_description,
            )
        while scorer is None or scorer not in api.INIT_SCORERS:
            if scorer is not None:
                err.print(f"unknown scorer {escape(scorer)!r}")
            scorer = typer.prompt(
                f"How are answers checked ({', '.join(api.INIT_SCORERS)})?",
                default=default_scorer,
            )
    elif not yes:
        told = [
            f"{what} (pass {flag})"
            for what, flag, given in (
                ("the example task's description", "--description", description),
                (f"scorer {default_scorer}", "--scorer", scorer),
            )
            if given is None
        ]
        if told:
            err.print(f"not a terminal, so nothing was asked: using {' and '.join(told)}")
    made = api.init(name, directory, description=description, scorer=scorer, force=force)
    for path in made.written:
        out.print(f"wrote {escape(str(path))}", soft_wrap=True)
    out.print(
        f"{display.split_sizes(made.splits)} · scorer {made.starter.scorer} · target "
        f"{made.target} · optimizer {made.optimizer}",
        soft_wrap=True,
    )
    out.print(
        "the example task (a number in words, written in digits) is there to try skillopt "
        "with: replace the items and the skill's body with your own",
        soft_wrap=True,
    )
    for note in made.notes:
        out.print(f"note: {escape(note)}", soft_wrap=True)
    out.print("next:")
    if made.cd is not None:
        out.print(f"  cd {escape(made.cd)}", soft_wrap=True)
    for command in made.commands:
        out.print(f"  {escape(command)}", soft_wrap=True)
