"""What the optimizer must remember: rejected edits with their score deltas,
not-applied edits with their reasons, and its own notes from earlier epochs.

Invariant: memory is plain data (JSON-serialisable) persisted in the run's state,
so it survives `--resume`; rendering for a prompt shows the most recent entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skillopt import display
from skillopt.display import NA
from skillopt.skill.edits import Edit


@dataclass
class Memory:
    rejected: list[dict] = field(default_factory=list)  # {step, edit, delta, reason}
    not_applied: list[dict] = field(default_factory=list)  # {step, edit, reason}
    meta_notes: list[dict] = field(default_factory=list)  # {epoch, notes}

    def reject(self, step: int, edits: list[Edit], delta: float | None, reason: str) -> None:
        for e in edits:
            self.rejected.append(
                {"step": step, "edit": e.to_dict(), "delta": delta, "reason": reason}
            )

    def skip(self, step: int, edit: Edit, reason: str) -> None:
        self.not_applied.append({"step": step, "edit": edit.to_dict(), "reason": reason})

    def note(self, epoch: int, notes: str) -> None:
        if notes.strip():
            self.meta_notes.append({"epoch": epoch, "notes": notes.strip()})

    def to_dict(self) -> dict:
        return {
            "rejected": self.rejected,
            "not_applied": self.not_applied,
            "meta_notes": self.meta_notes,
        }

    @classmethod
    def from_dict(cls, data: dict | None) -> Memory:
        data = data or {}
        return cls(
            list(data.get("rejected", [])),
            list(data.get("not_applied", [])),
            list(data.get("meta_notes", [])),
        )

    def render(self, limit: int = 12) -> str:
        """The memory as the optimizer reads it (most recent entries last)."""
        lines: list[str] = []
        if self.rejected:
            lines.append(
                "Edits tried and REJECTED by the validation gate (do not propose "
                "them again unchanged):"
            )
            for r in self.rejected[-limit:]:
                delta = display.delta(r["delta"], none=NA)
                lines.append(
                    f"- step {r['step']}: {Edit.from_dict(r['edit']).describe(90)} "
                    f"(validation delta {delta})"
                )
        if self.not_applied:
            lines.append(
                "Edits NOT APPLIED because they could not be placed (fix the anchor "
                "or the content):"
            )
            for r in self.not_applied[-limit:]:
                lines.append(
                    f"- step {r['step']}: {Edit.from_dict(r['edit']).describe(90)} — {r['reason']}"
                )
        return "\n".join(lines) if lines else "(nothing yet)"

    def render_notes(self) -> str:
        if not self.meta_notes:
            return "(none yet)"
        return "\n".join(f"- after epoch {n['epoch']}: {n['notes']}" for n in self.meta_notes)
