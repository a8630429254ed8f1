"""The entry point that drafts a starter trigger suite for review from a skill and the
other skills installed beside it (`skillopt tasks triggers --from-library`).

Invariant: the modules that do the work are imported when the function runs, not with
the api.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillopt.starter.triggers import TriggerDraft


def draft_triggers(
    skill: str | Path,
    library: Sequence[str | Path],
    output: str | Path | None = None,
    *,
    force: bool = False,
) -> TriggerDraft:
    """Write a starter trigger suite (`name`, `items: [{id, query, should_trigger}]`) for
    `skill`: requests drafted from its description should trigger it, requests drafted
    from each library skill's description (`library`: folders of skills, one skill
    folder, or `user`) should not. `output` defaults to `tasks/<skill>-triggers.yaml`;
    an existing file is replaced only with `force`. Every item is marked for review."""
    from skillopt.skill.document import Skill
    from skillopt.skill.library import load_library
    from skillopt.starter import triggers

    the_skill = Skill.load(skill)
    lib = load_library([str(entry) for entry in library])
    path = Path(output) if output is not None else Path("tasks") / f"{the_skill.name}-triggers.yaml"
    found = triggers.draft(the_skill, lib, path)
    triggers.write(found, force=force)
    return found
