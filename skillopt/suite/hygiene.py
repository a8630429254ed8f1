"""Split hygiene: items of a later split (val, test) that nearly repeat an item of an
earlier one (train, val), found with `suite.similar` before any model call.

Invariants: only pairs across splits count: a test item seen in training inflates
the test score, a val item seen in training inflates the gate's; two near-copies in
the same split only weigh one task twice, which no split hides from another. Two
items are near-duplicates when their inputs are (the text, or canonical JSON for a
structured input) and their workspace files are too (both none, or the files'
paths and contents near-duplicates): an agent suite's items often share one
workspace and differ by the request, and the same request on other files is
another task. The check reads the suite only; `strict` turns a finding into an
`InputError` (exit 2) and no finding is ever a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from skillopt.errors import InputError
from skillopt.suite.similar import THRESHOLD, near_duplicates, similarity
from skillopt.suite.task import SPLITS, Suite, Task

SHOWN = 3  # pairs quoted in the warning line


@dataclass(frozen=True)
class Repeat:
    """Item `item` of split `split` nearly repeats item `seen` of the earlier split
    `seen_split` (`similarity` of their inputs, in [threshold, 1])."""

    split: str
    item: str
    seen_split: str
    seen: str
    similarity: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "id": self.item,
            "repeats_split": self.seen_split,
            "repeats_id": self.seen,
            "similarity": round(self.similarity, 3),
        }


@dataclass(frozen=True)
class SplitCheck:
    """What `check_splits` found in a suite: each later-split item that nearly
    repeats an earlier-split one (with the first such earlier item)."""

    suite: str
    repeats: tuple[Repeat, ...]

    def warning(self) -> str | None:
        """The finding as one line, or None when there is none."""
        if not self.repeats:
            return None
        return f"{self.suite}: {self.finding()}; --strict refuses"

    def finding(self) -> str:
        """What was found, in words: how many items of which splits, the first pairs,
        and why it matters."""
        counts = [(s, sum(1 for r in self.repeats if r.split == s)) for s in ("test", "val")]
        whom = " and ".join(f"{n} item{'s' if n > 1 else ''} in {s}" for s, n in counts if n)
        pairs = ", ".join(
            f"{r.split} {r.item} ≈ {r.seen_split} {r.seen}" for r in self.repeats[:SHOWN]
        )
        more = ", …" if len(self.repeats) > SHOWN else ""
        return (
            f"{whom} nearly repeat items of an earlier split ({pairs}{more}); a test item "
            "seen in training inflates the score (and a val item the gate's)"
        )

    def to_dicts(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.repeats]


def item_text(task: Task) -> str:
    """What an item's input is compared as: its text, or canonical JSON for a
    structured input (sorted keys, so two dicts written in another order are one)."""
    if isinstance(task.input, str):
        return task.input
    return json.dumps(task.input, sort_keys=True, ensure_ascii=False, default=str)


def _files_text(task: Task) -> str:
    return "\n".join(f"{path}\n{body}" for path, body in sorted(task.files.items()))


def _same_files(a: Task, b: Task, threshold: float) -> bool:
    if not a.files and not b.files:
        return True
    if not a.files or not b.files:
        return False
    return similarity(_files_text(a), _files_text(b)) >= threshold - 1e-9


def check_splits(suite: Suite, threshold: float = THRESHOLD) -> SplitCheck:
    """Every val or test item that nearly repeats an item of an earlier split (val
    after train, test after train or val), each reported once, with the earliest
    split's item it repeats; in the suite's item order."""
    tasks = [t for t in suite.tasks if t.split in SPLITS]
    order = {s: i for i, s in enumerate(SPLITS)}
    found: dict[int, tuple[int, float]] = {}  # later item -> (earlier item, similarity)
    for i, j, sim in near_duplicates([item_text(t) for t in tasks], threshold):
        a, b = tasks[i], tasks[j]
        if a.split == b.split or not _same_files(a, b, threshold):
            continue
        later, earlier = (i, j) if order[a.split] > order[b.split] else (j, i)
        best = found.get(later)
        rank = (order[tasks[earlier].split], earlier)
        if best is None or rank < (order[tasks[best[0]].split], best[0]):
            found[later] = (earlier, sim)
    repeats = tuple(
        Repeat(tasks[k].split, tasks[k].id, tasks[e].split, tasks[e].id, sim)
        for k, (e, sim) in sorted(found.items())
    )
    return SplitCheck(str(suite.path), repeats)


def screen(suite: Suite, *, strict: bool = False) -> SplitCheck:
    """`check_splits` of `suite`, before any model call: with `strict`, a finding is an
    `InputError` naming the suite (exit 2); otherwise the caller says its warning."""
    found = check_splits(suite)
    if strict and found.repeats:
        raise InputError(
            f"{found.finding()}; refused (--strict): drop the repeats or move them to one split",
            path=found.suite,
            item=found.repeats[0].item,
            field="input",
        )
    return found
