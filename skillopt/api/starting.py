"""The entry point that starts a new skill (`skillopt init`): its folder, a suite of
example items and the settings to score and train it offline at once.

Invariant: the starter module is imported when `init` runs, not with the api.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillopt.starter import Created

# the scorers `init` offers, the first its default (kept here so the command line
# can ask without loading the starter)
SCORERS = ("exact", "normalized", "contains", "regex", "number", "judge")


def init(
    name: str,
    directory: str | Path = ".",
    *,
    description: str | None = None,
    scorer: str | None = None,
    force: bool = False,
) -> Created:
    """Write `skills/NAME/SKILL.md`, `tasks/NAME.yaml` (12 example items, 4 per split,
    scored by `scorer`) and `skillopt.yaml` (the embedded model, the `exemplars`
    optimizer) under `directory`. A bad NAME, description or scorer, or a file that
    exists (unless `force`), is one `InputError` and nothing is written. Without a
    `description`, one for the example task is used."""
    from skillopt.starter import create

    return create(name, directory, description=description, scorer=scorer, force=force)


def check_init(name: str, directory: str | Path = ".", *, force: bool = False) -> None:
    """What `init` would refuse before anything is asked: a bad NAME, or files that
    exist (unless `force`); one `InputError`."""
    from skillopt.starter import draw, refuse_existing

    refuse_existing(draw(name, Path(directory)), force=force)


def init_defaults() -> tuple[str, str]:
    """The description and scorer `init` uses when none is given."""
    from skillopt.starter import DEFAULT_DESCRIPTION, DEFAULT_SCORER

    return DEFAULT_DESCRIPTION, DEFAULT_SCORER
