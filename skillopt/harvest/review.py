"""The review file of a harvest: written for the user to edit (keep or drop each
candidate, give it an expected answer or a rubric), then read back into a suite.

Invariants: only entries the user marked `keep: true` become items; a kept entry
with neither `expected` nor an approved `rubric` is one `InputError` naming the
file, its id and the field; the user's edited text is redacted again before the
suite is written (they may have pasted a secret while reviewing).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.harvest.candidates import Candidate, Candidates, scrubbed
from skillopt.harvest.sessions import ReadReport
from skillopt.suite.readers import read_yaml
from skillopt.suite.sources.records import Imported, Skipped, dump

VERSION = 1
TEXT_SCORERS = ("contains", "exact", "normalized")
HEADER = """\
# skillopt harvest: candidate tasks from your own agent sessions, for you to review.
#
# Secrets were redacted before this file was written ({redactions}).
# For each candidate you want as a task:
#   - set `keep: true`;
#   - write the right answer under `expected:` (scored by `scorer:`: contains,
#     exact or normalized), or what a right answer must do under `rubric:`
#     (scored by a judge model: pass --judge MODEL to eval and train);
#   - a rubric drafted by a model has `rubric_draft: true`: read it, fix it, then
#     set `rubric_draft: false` to approve it.
# Entries left at `keep: false` are left out. Then make the suite:
#   skillopt tasks harvest --reviewed {path} -o tasks/NAME.yaml
"""


@dataclass(frozen=True)
class Reviewed:
    """The suite made from a review file, and what was left out."""

    imported: Imported
    kept: int
    dropped: int  # entries left at keep: false
    redactions: dict[str, int]


def review_text(found: Candidates, read: ReadReport, sources: list[str], path: Path) -> str:
    """The review file's text: the header, then one entry per candidate."""
    total = sum(found.redactions.values())
    kinds = ", ".join(f"{k} {n}" for k, n in found.redactions.items())
    said = f"{total}: {kinds}" if total else "none found"
    body = {
        "harvest": {
            "version": VERSION,
            "read": sources,
            "sessions": dict(read.sessions),
            "candidates": len(found.items),
            "merged": found.merged,
            "corrections": found.corrections,
            "redactions": dict(found.redactions),
        },
        "candidates": [_entry(c) for c in found.items],
    }
    return HEADER.format(redactions=said, path=path) + dump(body)


def _entry(c: Candidate) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": c.id,
        "keep": False,
        "request": c.request,
        "context": {"cwd": c.cwd, "files_read": list(c.reads)},
        "what_happened": {"tools": dict(c.tools), "answer": c.answer},
        "signal": c.signal,
        "expected": "",
        "rubric": c.rubric,
    }
    if c.rubric:
        entry["rubric_draft"] = True
    if c.rubric_note:
        entry["rubric_note"] = c.rubric_note
    entry["scorer"] = c.scorer
    entry["seen"] = [{"agent": s.agent, "session": s.session, "at": s.at} for s in c.seen]
    return entry


def read_review(path: Path) -> Reviewed:
    """The suite items of the entries kept in the review file at `path`."""
    data = read_yaml(path)
    entries = data.get("candidates")
    if not isinstance(entries, list):
        raise InputError("not a harvest review file: no `candidates` list", path=path)
    counts: Counter[str] = Counter()
    items: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    ids: set[str] = set()
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError("an entry must be a mapping", path=path, item=f"candidates[{n}]")
        ident = entry.get("id")
        if not isinstance(ident, str) or not ident.strip():
            raise InputError("needs an `id`", path=path, item=f"candidates[{n}]", field="id")
        if ident in ids:
            raise InputError("two entries have this id", path=path, item=ident, field="id")
        ids.add(ident)
        keep = entry.get("keep", False)
        if not isinstance(keep, bool):
            raise InputError("must be true or false", path=path, item=ident, field="keep")
        if not keep:
            skipped.append(Skipped(ident, "keep: false"))
            continue
        items.append(_item(path, ident, entry, counts))
    imported = Imported(
        source=str(path),
        kind="harvest",
        items=tuple(items),
        prompt="{input}",
        scorer="contains",
        description="Tasks harvested from agent sessions and reviewed.",
        skipped=tuple(skipped),
    )
    return Reviewed(imported, len(items), len(skipped), dict(sorted(counts.items())))


def _item(path: Path, ident: str, entry: dict[str, Any], counts: Counter[str]) -> dict[str, Any]:
    def text(name: str, limit: int) -> str:
        value = entry.get(name)
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise InputError("must be text", path=path, item=ident, field=name)
        return scrubbed(str(value), limit, counts)

    request = text("request", 20_000)
    if not request:
        raise InputError("a kept entry needs its request", path=path, item=ident, field="request")
    expected, rubric = text("expected", 20_000), text("rubric", 20_000)
    if not expected and not rubric:
        raise InputError(
            "kept, but has neither an expected answer nor a rubric: write one (or set keep: false)",
            path=path,
            item=ident,
            field="expected",
        )
    if rubric and entry.get("rubric_draft") is True:
        raise InputError(
            "the rubric is a model's draft: read it, then set rubric_draft: false to approve it",
            path=path,
            item=ident,
            field="rubric_draft",
        )
    item: dict[str, Any] = {"id": ident, "input": request}
    if expected:
        item["expected"] = expected
    if rubric:
        item["scorer"] = {"type": "judge", "rubric": rubric}
    else:
        scorer = entry.get("scorer") or "contains"
        if scorer not in TEXT_SCORERS and scorer != "judge":
            raise InputError(
                f"must be one of {', '.join(TEXT_SCORERS)} (or give a rubric)",
                path=path,
                item=ident,
                field="scorer",
            )
        if scorer == "judge":
            raise InputError(
                "scored by a judge, but has no rubric: write one (or choose contains, "
                "exact or normalized)",
                path=path,
                item=ident,
                field="rubric",
            )
        if scorer != "contains":
            item["scorer"] = scorer
    seen = entry.get("seen")
    meta: dict[str, Any] = {"harvested": True}
    if isinstance(entry.get("signal"), str) and entry["signal"]:
        meta["signal"] = scrubbed(entry["signal"], 500, counts)
    if isinstance(seen, list) and seen and isinstance(seen[0], dict):
        meta["session"] = scrubbed(str(seen[0].get("session", "")), 80, counts)
    item["metadata"] = meta
    return item
