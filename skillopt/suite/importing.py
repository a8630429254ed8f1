"""Writing a task source as a suite file (`skillopt tasks import`): read it, check its
items as a suite's, write the suite (and the trigger suite of its trigger evals), and
say what was made and what was left out.

Invariants: an existing file is replaced only when asked (`force`); nothing is
replaced until the new suite has been written beside it and loaded back whole (a
temporary directory next to the output, then a rename on the same filesystem), so a
failed import leaves the old suite as it was and no half-written file behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.suite.loader import load_imported, load_suite
from skillopt.suite.sources import FieldMap, Imported, Skipped, read_source
from skillopt.suite.sources.records import write_suite

SKIPS_NAMED = 3  # rows named per reason; the rest are counted


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote and what it left out."""

    path: Path | None  # the suite written (None: the source held trigger evals only)
    name: str
    source: str
    kind: str
    splits: dict[str, int]  # items per split, as the suite assigns them
    scorers: dict[str, int]  # items per scorer type
    skipped: tuple[Skipped, ...]
    triggers: Path | None = None  # the trigger suite written beside it
    trigger_count: int = 0
    notes: tuple[str, ...] = ()

    @property
    def items(self) -> int:
        return sum(self.splits.values())

    def skip_lines(self) -> list[str]:
        """The skipped rows by reason: one named when it is alone (`row 7: empty
        input`), else counted with the first few named."""
        return skip_lines(self.skipped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path) if self.path else None,
            "name": self.name,
            "source": self.source,
            "format": self.kind,
            "items": self.items,
            "splits": dict(self.splits),
            "scorers": dict(self.scorers),
            "skipped": [{"where": s.where, "reason": s.reason} for s in self.skipped],
            "triggers": str(self.triggers) if self.triggers else None,
            "trigger_count": self.trigger_count,
            "notes": list(self.notes),
        }


def skip_lines(skipped: Sequence[Skipped]) -> list[str]:
    """`row 7: empty input` for a reason met once; `empty input: 1,204 rows (row 3,
    row 9, row 12, …)` for one met often."""
    by_reason: dict[str, list[str]] = {}
    for s in skipped:
        by_reason.setdefault(s.reason, []).append(s.where)
    lines = []
    for reason, places in by_reason.items():
        if len(places) == 1:
            lines.append(f"{places[0]}: {reason}")
        else:
            shown = ", ".join(places[:SKIPS_NAMED])
            more = ", …" if len(places) > SKIPS_NAMED else ""
            lines.append(f"{reason}: {len(places):,} rows ({shown}{more})")
    return lines


def import_source(
    source: str,
    output: Path,
    *,
    kind: str | None = None,
    fields: FieldMap | None = None,
    prompt: str | None = None,
    scorer: str | None = None,
    name: str | None = None,
    force: bool = False,
) -> ImportResult:
    """Read `source` and write it as the suite `output` (see the invariants)."""
    output = Path(output)
    name = name or output.stem
    triggers_path = output.with_name(f"{output.stem}-triggers{output.suffix or '.yaml'}")
    if not force:
        for existing in (output, triggers_path):
            if existing.exists():
                raise InputError("already exists; pass --force to replace it", path=existing)
    imported = read_source(source, kind, fields)
    if prompt is not None:
        imported = replace(imported, prompt=prompt)
    if scorer is not None:
        imported = replace(imported, scorer=scorer)
    if not imported.items and not imported.triggers:
        why = "; ".join(skip_lines(imported.skipped)) or "the source holds no rows"
        raise InputError(f"no items to write ({why})", path=source)
    splits: dict[str, int] = {}
    if imported.items:
        splits = load_imported(imported, name).counts()  # a problem names the source
    written = _write(imported, output, name)
    return ImportResult(
        path=output if output in written else None,
        name=name,
        source=source,
        kind=imported.kind,
        splits=splits,
        scorers=dict(imported.scorers_used().most_common()) if imported.items else {},
        skipped=imported.skipped,
        triggers=triggers_path if triggers_path in written else None,
        trigger_count=len(imported.triggers),
        notes=imported.notes,
    )


def _write(imported: Imported, output: Path, name: str) -> list[Path]:
    """Write beside `output`, load the suite back, then rename into place."""
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    try:
        staged = write_suite(imported, staging / output.name, name)
        if imported.items:
            load_suite(staged[0])  # what was written reads back as a suite
        final = [output.parent / p.name for p in staged]
        for src, dest in zip(staged, final):
            os.replace(src, dest)
        return final
    finally:
        shutil.rmtree(staging, ignore_errors=True)
