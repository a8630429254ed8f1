"""Merge the minibatches' proposals into one ranked, conflict-free, budgeted list.

Invariants: duplicates are merged (their support and evidence add up); no two
kept edits touch the same text; failure-derived edits rank before
success-derived ones, then by support; the list is clipped to the step's budget.
Every dropped edit is returned with its reason, so nothing silently vanishes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from skillopt.skill.edits import Edit

_SOURCE_RANK = {"failures": 0, "slow_update": 0, "exemplars": 0, "successes": 1}


@dataclass
class MergeResult:
    kept: list[Edit] = field(default_factory=list)
    dropped: list[tuple[Edit, str]] = field(default_factory=list)  # (edit, reason)


def _norm(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()


def _key(edit: Edit) -> tuple:
    return (
        edit.op,
        _norm(edit.anchor),
        _norm(edit.section) if not edit.anchor else "",
        _norm(edit.content),
    )


def _touches(a: Edit, b: Edit) -> bool:
    """Would applying both edits change (or depend on) the same text?"""
    ta, tb = _norm(a.anchor), _norm(b.anchor)
    if not ta or not tb:
        return False
    if a.op == "add" and b.op == "add":
        return False  # two insertions after the same line can both apply
    return ta in tb or tb in ta


def merge_edits(proposals: list[list[Edit]], budget: int) -> MergeResult:
    """Deduplicate, rank, resolve conflicts and clip `proposals` to `budget`."""
    result = MergeResult()
    merged: dict[tuple, Edit] = {}
    order: dict[tuple, int] = {}
    for edits in proposals:
        for edit in edits:
            k = _key(edit)
            if k in merged:
                prev = merged[k]
                evidence = tuple(dict.fromkeys(prev.evidence + edit.evidence))
                source = min(prev.source, edit.source, key=lambda s: _SOURCE_RANK.get(s, 1))
                merged[k] = replace(
                    prev, support=prev.support + edit.support, evidence=evidence, source=source
                )
                result.dropped.append((edit, "duplicate of another proposal"))
            else:
                merged[k] = edit
                order[k] = len(order)
    ranked = sorted(
        merged,
        key=lambda k: (
            _SOURCE_RANK.get(merged[k].source, 1),
            -merged[k].support,
            -len(merged[k].evidence),
            order[k],
        ),
    )
    for k in ranked:
        edit = merged[k]
        clash = next((kept for kept in result.kept if _touches(kept, edit)), None)
        if clash is not None:
            result.dropped.append(
                (edit, f"conflicts with a higher-ranked edit: {clash.describe()}")
            )
        elif len(result.kept) >= budget:
            result.dropped.append((edit, f"over this step's budget of {budget} edits"))
        else:
            result.kept.append(edit)
    return result
