"""The entry points that harvest tasks from the user's own agent sessions
(`skillopt tasks harvest`): candidates into a review file, and a reviewed file into
a suite.

Invariant: nothing is read but the paths given; nothing is written, printed or sent
to a model before it has been redacted; an existing file is never overwritten
without `force`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.errors import InputError

if TYPE_CHECKING:
    from skillopt.harvest.sessions import ReadReport
    from skillopt.models.base import Model


@dataclass(frozen=True)
class HarvestResult:
    """What `harvest` read, found and wrote."""

    review: Path
    read: ReadReport
    found: int  # candidates before merging
    candidates: int  # in the review file
    merged: int  # near-duplicates merged into another candidate
    corrections: int  # requests correcting the one before: that one's signal, no task
    redactions: dict[str, int]  # by kind
    signals: dict[str, int]  # candidates with each signal ("corrected", "tool-error", …)
    drafted: int = 0  # rubrics drafted by the judge model
    draft_notes: tuple[str, ...] = ()  # why some drafts are missing


@dataclass(frozen=True)
class HarvestSuite:
    """The suite made from a reviewed file."""

    written: list[Path]
    kept: int
    dropped: int  # entries left at keep: false
    splits: dict[str, int]  # items per split (the suite's default split)
    scorers: dict[str, int]  # items per scorer
    redactions: dict[str, int] = field(default_factory=dict)  # found again in the edits


def harvest(
    sources: Sequence[str | Path],
    output: str | Path,
    *,
    judge: str | Model | None = None,
    force: bool = False,
    threshold: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HarvestResult:
    """Read the sessions under `sources` (directories or files; never a default
    place), turn each request of the user's into a redacted candidate, merge
    near-duplicates (`threshold`, the similarity at which two requests are one) and
    write the review file `output`. With `judge` (a model name or a `Model`), a
    rubric is drafted for each candidate; a failed draft is a note, not an error."""
    from skillopt.harvest.candidates import candidates
    from skillopt.harvest.review import review_text
    from skillopt.harvest.rubric import draft_rubrics
    from skillopt.harvest.sessions import read_sessions
    from skillopt.suite.similar import THRESHOLD

    out = _writable(Path(output), force, "-o")
    model = _judge(judge) if judge is not None else None
    exchanges, read = read_sessions(sources)
    found = candidates(exchanges, THRESHOLD if threshold is None else threshold)
    if model is not None:
        found = draft_rubrics(found, model, progress)
    signals: Counter[str] = Counter(s for c in found.items for s in c.signals)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = review_text(found, read, [str(s) for s in sources], out)
    out.write_text(text, encoding="utf-8")
    return HarvestResult(
        review=out,
        read=read,
        found=found.found,
        candidates=len(found.items),
        merged=found.merged,
        corrections=found.corrections,
        redactions=found.redactions,
        signals=dict(sorted(signals.items())),
        drafted=sum(1 for c in found.items if c.rubric),
        draft_notes=tuple(c.rubric_note for c in found.items if c.rubric_note),
    )


def harvest_suite(
    reviewed: str | Path, output: str | Path, *, name: str | None = None, force: bool = False
) -> HarvestSuite:
    """The suite `output` made from the entries kept in the review file `reviewed`
    (named `name`, else after the file)."""
    from skillopt.harvest.review import read_review
    from skillopt.suite.sources.records import write_suite
    from skillopt.suite.splits import SplitSpec, assign_splits

    source = Path(reviewed)
    if not source.is_file():
        raise InputError("no such file", path=source, field="--reviewed")
    out = _writable(Path(output), force, "-o")
    done = read_review(source)
    if not done.kept:
        raise InputError(
            "no entry is kept: set `keep: true` on the candidates to make tasks of",
            path=source,
        )
    written = write_suite(done.imported, out, name)
    ids = [str(item["id"]) for item in done.imported.items]
    splits = Counter(assign_splits(ids, SplitSpec()))
    return HarvestSuite(
        written=written,
        kept=done.kept,
        dropped=done.dropped,
        splits={s: splits.get(s, 0) for s in ("train", "val", "test")},
        scorers=dict(done.imported.scorers_used()),
        redactions=done.redactions,
    )


def _writable(path: Path, force: bool, flag: str) -> Path:
    if path.exists() and not force:
        raise InputError("already exists: pass --force to overwrite it", path=path, field=flag)
    if path.is_dir():
        raise InputError("is a directory: name a file", path=path, field=flag)
    return path


def _judge(judge: str | Model) -> Model:
    """The model that drafts rubrics: a `Model`, or a name resolved with the
    project's model settings (skillopt.yaml); a missing key is refused up front."""
    if not isinstance(judge, str):
        from skillopt.api.options import roles

        return roles(judge=judge)[1]["judge"]  # type: ignore[no-any-return]
    from skillopt.config import resolve_settings
    from skillopt.errors import MissingCredentials
    from skillopt.models.keys import missing
    from skillopt.models.resolve import resolve_model

    settings = resolve_settings().model_settings(judge)
    lacking = missing(judge, settings)
    if lacking:
        names = " or ".join("/".join(group) for group in lacking)
        raise MissingCredentials(f"{names} is not set: needed by judge {judge} (--judge)")
    return resolve_model(judge, settings, role="judge")
