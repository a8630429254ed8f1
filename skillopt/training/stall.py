"""When a run has stalled: the same skill keeps failing the same training tasks and
nothing the optimizer proposes for them beats it.

On a small suite every training rollout soon comes from the store, so each step
shows the optimizer the same failures of the same skill; once several such steps
in a row were tied, lost or gave no candidate, more of them spend calls and gates
for nothing. A pure function of the step records, so a resumed run decides
exactly as the uninterrupted one would.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from skillopt.training.steps import BatchRecord, StepRecord

UNPRODUCTIVE = ("rejected", "no_candidate")  # a tie or a loss at the gate, or nothing to gate


def stalled(steps: Sequence[StepRecord], patience: int) -> str | None:
    """Why the run has stalled, or None when it has not (always None for `patience`
    0). Stalled: each of the last `patience` training steps ran the same incumbent,
    saw the same non-empty set of failing training tasks, and was rejected or gave no
    candidate. Slow updates are not counted (an accepted one changes the incumbent,
    which ends the run of steps); a step with no failures never counts, since it has
    nothing to learn from rather than nothing new to try; and steps recorded without
    their failing tasks (by an older skillopt) never count."""
    if patience <= 0:
        return None
    recent = [rec for rec in steps if isinstance(rec, BatchRecord)][-patience:]
    if len(recent) < patience:
        return None
    failing, skill = recent[0].failing, recent[0].incumbent_hash
    if not failing or not skill:
        return None
    for rec in recent:
        if (
            rec.failing != failing
            or rec.incumbent_hash != skill
            or rec.decision not in UNPRODUCTIVE
        ):
            return None
    outcomes = Counter(rec.decision.replace("_", " ") for rec in recent)
    tasks = f"{len(failing)} failing training task" + ("" if len(failing) == 1 else "s")
    return (
        f"stalled: the last {patience} steps showed the optimizer the same {tasks} "
        "of the same skill, and none gave a better candidate ("
        + ", ".join(f"{n} {what}" for what, n in outcomes.items())
        + ")"
    )
