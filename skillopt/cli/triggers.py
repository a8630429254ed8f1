"""`skillopt tasks triggers`: a starter trigger suite for review, drafted from the skill's
description (requests that should load it) and the descriptions of the skills installed
beside it (requests that should not)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from skillopt import api
from skillopt.cli.common import handle_errors, out, warn


@handle_errors
def triggers_cmd(
    skill: Annotated[
        Path,
        typer.Option(
            "--skill",
            help="The skill directory (or SKILL.md).",
            metavar="SKILL",
            show_default=False,
        ),
    ],
    from_library: Annotated[
        list[str],
        typer.Option(
            "--from-library",
            help="The other skills (a folder of skills, one skill folder, or `user` for "
            "yours); repeatable. Their descriptions give the requests that should not "
            "load SKILL.",
            metavar="DIR",
            show_default=False,
        ),
    ],
    output: Annotated[
        Optional[Path],
        typer.Option(
            "-o",
            "--output",
            help="The trigger suite to write [default: tasks/<skill>-triggers.yaml].",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the output file when it exists.")
    ] = False,
) -> None:
    """Draft a starter trigger suite for review: should-trigger requests from the skill's
    description, should-not ones from the other skills'."""
    found = api.draft_triggers(skill, from_library, output, force=force)
    for line in found.skipped:
        warn(line)
    neighbours = ", ".join(found.library) or "none"
    out.print(
        escape(
            f"wrote {found.path}: {found.positives} should trigger {found.skill} (from its "
            f"description), {found.negatives} should not (from {len(found.library)} library "
            f"skills: {neighbours}); every item is a draft marked for review"
        ),
        soft_wrap=True,
    )
    if not found.negatives:
        warn("no library skill gave a request that should not trigger: add some by hand")
