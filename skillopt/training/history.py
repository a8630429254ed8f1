"""An epoch's steps in words, for the optimizer's meta-notes prompt at the epoch's
end: each step's decision with its delta and flip counts, the edits applied and
those that were not (with why), every edit whole.

Invariant: no validation task is named (a gate is shown by its delta and flip
counts only), so the notes the optimizer writes cannot carry validation content.
"""

from __future__ import annotations

from collections.abc import Sequence

from skillopt.optimize.memory import gate_numbers, render_edit
from skillopt.skill.edits import Edit
from skillopt.training.steps import BatchRecord, InitialRecord, StepRecord, apply_of, gate_of


def epoch_history(steps: Sequence[StepRecord], epoch: int) -> str:
    """What happened in `epoch` (1-based): one paragraph per step or slow update."""
    parts = []
    for rec in steps:
        if rec.epoch != epoch or isinstance(rec, InitialRecord):
            continue
        gate = gate_of(rec)
        head = f"Step {rec.step} ({rec.kind}): {rec.decision}"
        if gate is not None:
            flips = {"fail_to_pass": len(gate.fail_to_pass), "pass_to_fail": len(gate.pass_to_fail)}
            head += f", {gate_numbers(gate.delta, flips)}"
        if rec.reason:
            head += f" — {rec.reason}"
        lines = [head]
        results = apply_of(rec)
        applied = [a for a in results if a.get("status") == "applied"]
        failed = [a for a in results if a.get("status") != "applied"]
        dropped = rec.dropped if isinstance(rec, BatchRecord) else []
        if applied:
            lines.append(f"Applied ({len(applied)}):")
            lines += [render_edit(Edit.from_dict(a["edit"])) for a in applied]
        if failed or dropped:
            lines.append(f"Not applied ({len(failed) + len(dropped)}):")
            for a in failed:
                why = f"{a['status']}: {a['detail']}" if a.get("detail") else a["status"]
                lines.append(f"{render_edit(Edit.from_dict(a['edit']))}\nNot applied: {why}")
            for d in dropped:
                lines.append(
                    f"{render_edit(Edit.from_dict(d['edit']))}\nNot applied: {d['reason']}"
                )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) or "(no steps)"
