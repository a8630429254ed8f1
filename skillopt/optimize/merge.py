"""Merge the minibatches' proposals into one ranked, conflict-free, budgeted list.

Invariants: duplicates are merged (their support and evidence add up); no two
kept edits touch the same text; failure-derived edits rank before
success-derived ones, then deletions after the edits that add or rewrite (a
delete only takes away what the skill says, and optimizers propose deleting right
rules, often in several minibatches at once, so its support is no sign it helps),
then by support and evidence; the list is clipped to the step's budget
of edits and, when limits are given, to what an edit and the whole step may add
(non-blank lines of content: an edit carrying ten examples is not one edit's
worth). Every dropped edit is returned with its reason, so nothing silently
vanishes; an edit is never cut short.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from skillopt.skill.edits import LINE_CHARS, Edit

_SOURCE_RANK = {"failures": 0, "slow_update": 0, "exemplars": 0, "successes": 1}
_OP_RISK = {"add": 0, "replace": 0, "delete": 1}


@dataclass
class MergeResult:
    kept: list[Edit] = field(default_factory=list)
    dropped: list[tuple[Edit, str]] = field(default_factory=list)  # (edit, reason)


def _norm(text: str | None) -> str:
    return " ".join((text or "").split()).casefold()


# what makes two edits the same edit: op, anchor (or section), content, normalised
_Key = tuple[str, str, str, str]


def _key(edit: Edit) -> _Key:
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


def merge_edits(
    proposals: list[list[Edit]],
    budget: int,
    *,
    max_edit_lines: int | None = None,
    max_step_lines: int | None = None,
) -> MergeResult:
    """Deduplicate, rank, resolve conflicts and clip `proposals` to `budget` edits.
    An edit adding more than `max_edit_lines` non-blank lines, or more than
    `max_edit_lines` × `LINE_CHARS` characters, is dropped as too large (its reason
    starts "too large"); one that would bring the kept edits past
    `max_step_lines` is dropped and a smaller one after it may still fit (None: no
    limit)."""
    result = MergeResult()
    merged: dict[_Key, Edit] = {}
    order: dict[_Key, int] = {}
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
            _OP_RISK.get(merged[k].op, 0),
            -merged[k].support,
            -len(merged[k].evidence),
            order[k],
        ),
    )
    added = 0  # non-blank lines the kept edits add
    for k in ranked:
        edit = merged[k]
        clash = next((kept for kept in result.kept if _touches(kept, edit)), None)
        if max_edit_lines is not None and edit.lines > max_edit_lines:
            result.dropped.append(
                (
                    edit,
                    f"too large: {edit.lines} non-blank lines of content, over the "
                    f"limit of {max_edit_lines} per edit",
                )
            )
        elif max_edit_lines is not None and len(edit.content or "") > max_edit_lines * LINE_CHARS:
            result.dropped.append(
                (
                    edit,
                    f"too large: {len(edit.content or ''):,} characters of content, over the "
                    f"limit of {max_edit_lines * LINE_CHARS:,} per edit",
                )
            )
        elif clash is not None:
            result.dropped.append(
                (edit, f"conflicts with a higher-ranked edit: {clash.describe()}")
            )
        elif len(result.kept) >= budget:
            result.dropped.append((edit, f"over this step's budget of {budget} edits"))
        elif max_step_lines is not None and added + edit.lines > max_step_lines:
            result.dropped.append(
                (
                    edit,
                    f"over this step's limit of {max_step_lines} non-blank lines of content "
                    f"({added} kept, this edit adds {edit.lines})",
                )
            )
        else:
            result.kept.append(edit)
            added += edit.lines
    return result
