"""What the optimizer must remember: the edits the gate accepted and rejected (with
their score deltas and flip counts, and, for an edit whose step was decomposed, its
own verdict), the edits that could not be applied or were held back (with their
reasons), every candidate the gate has seen (so none is gated twice), and its own
notes from earlier epochs.

Invariants:
- Memory is plain data (JSON-serialisable) persisted in the run's state, so it
  survives `--resume`; rendering for a prompt shows the most recent entries.
- It holds no validation or test content: a gate decision is kept as its delta,
  its score and its flip *counts*, never the tasks' ids, inputs or answers.
- A rejected or not-applied edit is rendered whole (fenced, newlines kept), never
  clipped to one line; an accepted edit is in the skill already, so it is summed up
  in one line (what changed where), not shown again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillopt._util import display
from skillopt._util.display import NA
from skillopt.skill.edits import Edit

Flips = tuple[int, int]  # (fail → pass, pass → fail) on the validation tasks


@dataclass
class Memory:
    # {step, edit, delta, reason, flips?, skill_hash?}: skill_hash is the rejected candidate's
    rejected: list[dict[str, Any]] = field(default_factory=list)
    not_applied: list[dict[str, Any]] = field(default_factory=list)  # {step, edit, reason}
    meta_notes: list[dict[str, Any]] = field(default_factory=list)  # {epoch, notes}
    accepted: list[dict[str, Any]] = field(default_factory=list)  # {step, edit, delta, val, flips?}
    # every candidate the gate decided: {step, key (`text_key`), decision}
    gated: list[dict[str, Any]] = field(default_factory=list)

    def accept(
        self,
        step: int,
        edits: list[Edit],
        delta: float | None,
        *,
        val: float | None = None,
        flips: Flips | None = None,
    ) -> None:
        """The gate kept `edits` (applied together at `step`); `val` is the new
        validation score, `flips` the (fail → pass, pass → fail) counts."""
        for e in edits:
            self.accepted.append(
                {"step": step, "edit": e.to_dict(), "delta": delta, "val": val, **_flips(flips)}
            )

    def reject(
        self,
        step: int,
        edits: list[Edit],
        delta: float | None,
        reason: str,
        *,
        flips: Flips | None = None,
        skill_hash: str | None = None,
        verdict: str | None = None,
    ) -> None:
        """The gate refused `edits` (applied together at `step`) for `reason`;
        `skill_hash` is the hash of the candidate they made, so that the same skill
        is not proposed again. `verdict`: what the gate found of this edit on its own
        (a decomposed step: "gated alone: lost 2 validation tasks")."""
        for e in edits:
            self.rejected.append(
                {
                    "step": step,
                    "edit": e.to_dict(),
                    "delta": delta,
                    "reason": reason,
                    **_flips(flips),
                    **({"skill_hash": skill_hash} if skill_hash else {}),
                    **({"verdict": verdict} if verdict else {}),
                }
            )

    def gated_candidate(self, step: int, key: str, decision: str) -> None:
        """The gate decided a candidate whose text has `key` (`text_key`) at `step`."""
        self.gated.append({"step": step, "key": key, "decision": decision})

    def gated_keys(self) -> set[str]:
        """The `text_key` of every candidate the gate decided (and the initial skill)."""
        return {g["key"] for g in self.gated}

    def gated_at(self, key: str) -> dict[str, Any] | None:
        """The first gate decision on a candidate whose text has `key`, if any."""
        return next((g for g in self.gated if g["key"] == key), None)

    def rejected_skills(self) -> dict[str, int]:
        """The hash of every candidate skill the gate rejected, with its step."""
        return {r["skill_hash"]: r["step"] for r in self.rejected if r.get("skill_hash")}

    def skip(self, step: int, edit: Edit, reason: str) -> None:
        self.not_applied.append({"step": step, "edit": edit.to_dict(), "reason": reason})

    def note(self, epoch: int, notes: str) -> None:
        if notes.strip():
            self.meta_notes.append({"epoch": epoch, "notes": notes.strip()})

    def best_val(self, current: float | None) -> float | None:
        """The best validation score the run has seen: `current` (the incumbent's)
        or one an accepted candidate reached."""
        values = [current, *(a.get("val") for a in self.accepted)]
        known = [v for v in values if v is not None]
        return max(known) if known else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rejected": self.rejected,
            "not_applied": self.not_applied,
            "meta_notes": self.meta_notes,
            "accepted": self.accepted,
            **({"gated": self.gated} if self.gated else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Memory:
        data = data or {}
        return cls(
            list(data.get("rejected", [])),
            list(data.get("not_applied", [])),
            list(data.get("meta_notes", [])),
            list(data.get("accepted", [])),
            list(data.get("gated", [])),
        )

    def render(self, limit: int = 12) -> str:
        """The memory as the optimizer reads it: the `limit` most recent entries of
        each kind, grouped by step (most recent last), every edit whole."""
        parts: list[str] = []
        if self.accepted:
            parts.append(
                _section(
                    "Edits ACCEPTED by the validation gate (in the skill now, so summed "
                    "up, not shown again):",
                    self.accepted,
                    limit,
                    lambda r: "accepted, " + gate_numbers(r["delta"], r.get("flips"), r.get("val")),
                    "accepted edits",
                    brief=True,
                )
            )
        if self.rejected:
            parts.append(
                _section(
                    "Edits tried and REJECTED by the validation gate (do not propose them "
                    "again unchanged; a tie with tasks flipped both ways did have an "
                    "effect: the edits fixed some validation tasks and broke as many; where "
                    "a step's edits were also gated apart, each edit's own verdict follows it):",
                    self.rejected,
                    limit,
                    lambda r: (
                        f"rejected ({r['reason']}), " + gate_numbers(r["delta"], r.get("flips"))
                    ),
                    "rejected edits",
                )
            )
        if self.not_applied:
            parts.append(
                _section(
                    "Edits NOT APPLIED because they could not be placed (fix the anchor or "
                    "the content) or were held back (see each reason):",
                    self.not_applied,
                    limit,
                    lambda r: f"not applied ({r['reason']})",
                    "edits not applied",
                    per_edit=True,
                )
            )
        return "\n\n".join(parts) if parts else "(nothing yet)"

    def render_notes(self) -> str:
        if not self.meta_notes:
            return "(none yet)"
        return "\n\n".join(f"After epoch {n['epoch']}:\n{n['notes']}" for n in self.meta_notes)


# ------------------------------------------------------------------------ rendering
def _flips(flips: Flips | None) -> dict[str, Any]:
    if flips is None:
        return {}
    return {"flips": {"fail_to_pass": int(flips[0]), "pass_to_fail": int(flips[1])}}


def gate_numbers(
    delta: float | None, flips: Mapping[str, int] | None, val: float | None = None
) -> str:
    """A gate decision as numbers: the delta, the flip counts and the score reached."""
    text = f"validation delta {display.delta(delta, none=NA)}"
    if flips is not None:
        text += (
            f" ({flips.get('fail_to_pass', 0)} fail → pass, "
            f"{flips.get('pass_to_fail', 0)} pass → fail)"
        )
    if val is not None:
        text += f", validation score {display.score(val)}"
    return text


def fenced(text: str) -> str:
    """`text` whole in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text.rstrip("\n")
    return f"{fence}\n{body}\n{fence}"


def render_edit(edit: Edit) -> str:
    """One edit whole: what it does, its anchor and content fenced, newlines kept."""
    content = fenced(edit.content or "")
    if edit.source == "slow_update":
        text = f"set the protected guidance block to:\n{content}"
    elif edit.op == "delete":
        text = f"delete:\n{fenced(edit.anchor or '')}"
    elif edit.op == "replace":
        text = f"replace:\n{fenced(edit.anchor or '')}\nwith:\n{content}"
    elif edit.anchor:
        text = f"add after the line containing:\n{fenced(edit.anchor)}\nthis content:\n{content}"
    elif edit.section:
        text = f"add at the end of the section {edit.section!r}:\n{content}"
    else:
        text = f"add at the end of the skill:\n{content}"
    rationale = " ".join(edit.rationale.split())
    return f"{text}\nWhy: {rationale}" if rationale else text


def _section(
    title: str,
    entries: list[dict[str, Any]],
    limit: int,
    outcome: Callable[[dict[str, Any]], str],
    noun: str,
    *,
    per_edit: bool = False,
    brief: bool = False,
) -> str:
    """`title`, then the last `limit` entries, one paragraph per step (or per edit),
    each headed by the step and `outcome(entry)`; `brief`: each edit in one line
    (`Edit.describe`) rather than whole."""
    shown = entries[-limit:] if limit > 0 else []
    lines = [title]
    if len(entries) > len(shown):
        lines.append(f"({len(entries) - len(shown)} earlier {noun} not shown)")
    for group in _groups(shown, per_edit):
        first = group[0]
        count = f"{len(group)} edits, gated together" if len(group) > 1 else "1 edit"
        lines.append("")
        lines.append(
            f"Step {first['step']} — {outcome(first)}" + ("" if per_edit else f" — {count}") + ":"
        )
        for i, entry in enumerate(group, 1):
            edit = Edit.from_dict(entry["edit"])
            prefix = f"Edit {i}: " if len(group) > 1 else ""
            if brief:
                lines.append(f"- {prefix}{edit.describe(80)}")
                continue
            lines.append(prefix + render_edit(edit))
            if entry.get("verdict"):
                lines.append(f"Verdict on this edit: {entry['verdict']}")
    return "\n".join(lines)


def _groups(entries: Iterable[dict[str, Any]], per_edit: bool) -> list[list[dict[str, Any]]]:
    """Consecutive entries of one step (one gate decision) together."""
    groups: list[list[dict[str, Any]]] = []
    for entry in entries:
        if groups and not per_edit and groups[-1][0]["step"] == entry["step"]:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    return groups
