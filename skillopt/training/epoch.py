"""An epoch's end: the slow update (longitudinal guidance, gated like any
candidate) and the optimizer's notes on the epoch, which a later prompt reads.

Invariants:
- A slow update runs only when the epoch changed the skill (otherwise it would
  compare the skill with itself): it is recorded as skipped, with no call.
- Guidance and notes are passed through `TextResult.without_secrets` as they
  arrive: no known secret value enters the skill or a later prompt.
- Notes on an epoch are owed, not taken, at its end: they are asked for just
  before the first optimizer call of a later epoch (`Notes.take_owed`), each
  checkpointed once paid for (never asked twice); notes no call would read (after
  the last epoch, or after one that left nothing to learn) are never owed.
"""

from __future__ import annotations

import random

from skillopt.optimize.base import NoteTaker, SlowUpdater, TextResult
from skillopt.optimize.evidence import comparison
from skillopt.skill.edits import (
    ApplyReport,
    Edit,
    EditResult,
    guidance_of,
    has_protected_marker,
    set_guidance,
)
from skillopt.training.checkpoint import Pending, SkippedNote
from skillopt.training.core import RunCore
from skillopt.training.decide import Judge, no_candidate_reason
from skillopt.training.events import NoCandidate, ProposalMade, Stage
from skillopt.training.history import epoch_history
from skillopt.training.steps import (
    BatchRecord,
    SkippedSlowUpdate,
    SlowUpdateRecord,
    StepRecord,
    Verdict,
)


class Notes:
    """The optimizer's notes on finished epochs, taken when a later call reads them."""

    def __init__(self, core: RunCore):
        self.core = core

    def take_owed(self, calls: int | bool = 1) -> None:
        """Before `calls` optimizer calls (none: nothing to do) that read the memory:
        take the notes owed on finished epochs, oldest first, one request per epoch on
        that epoch's history, each checkpointed once paid for (never asked twice)."""
        st = self.core.state
        while calls and st.notes_owed:
            self._take(st.notes_owed[0] - 1)
            st.notes_taken()
            self.core.checkpoint()

    def _take(self, epoch: int) -> None:
        core = self.core
        optimizer = core.optimizer
        if not isinstance(optimizer, NoteTaker):
            return
        history = epoch_history(core.state.steps, epoch + 1)
        core.spend(f"notes of epoch {epoch + 1}", calls=1)
        core.stage(Stage(stage="notes", epoch=epoch + 1))
        result = optimizer.meta_notes(epoch + 1, history, core.context()).without_secrets()
        core.stop_if_hopeless([result])
        if result.skipped:
            core.state.skip_notes(SkippedNote(epoch + 1, result.skipped))
            core.emit(
                ProposalMade(
                    step=core.state.step,
                    call="notes",
                    tasks=[],
                    edits=0,
                    skipped=result.skipped,
                    calls=result.calls,
                )
            )
        if result.text:
            core.memory.note(epoch + 1, result.text)

    def unread(self, epoch: int) -> bool:
        """No prompt would read notes taken after this epoch: it is the last, or it left
        nothing to learn (the skill it began with passed every training task, unscored
        none), so every later epoch is served the same rollouts from the store, has no
        failure to reflect on and no change for a slow update: no optimizer call."""
        core, st = self.core, self.core.state
        if epoch + 1 >= core.s.epochs:
            return True
        steps = [r for r in st.steps if isinstance(r, BatchRecord) and r.epoch == epoch + 1]
        return (
            st.incumbent.hash == st.epoch_start.hash
            and len(steps) == core.per_epoch
            and all(r.failures == 0 and r.unscored == 0 for r in steps)
        )


class SlowUpdate:
    """The slow update at an epoch's end: guidance from how the epoch's changes moved
    a sample of training tasks, decided by the gate."""

    def __init__(self, core: RunCore, judge: Judge):
        self.core = core
        self.judge = judge

    def run(self, epoch: int) -> None:
        core = self.core
        core.begin()
        st = core.state
        step = st.step + 1
        current = core.incumbent
        previous = core.skill(st.epoch_start.text)
        optimizer = core.optimizer
        if not isinstance(optimizer, SlowUpdater):
            return
        if st.incumbent.hash == st.epoch_start.hash:
            # the comparison would be the skill with itself: no call, no rollouts, no gate
            self._skip(step, epoch, f"the skill has not changed since epoch {epoch + 1} began")
            return
        core.stage(Stage(stage="slow_update", step=step, epoch=epoch + 1))
        n = min(core.s.batch_size, len(core.train))
        sample = random.Random(f"{core.s.seed}:slow:{epoch}").sample(core.train, n)
        before = core.rollouts(previous, sample, f"slow update {epoch + 1} · before")
        after = core.rollouts(current, sample, f"slow update {epoch + 1} · after")
        pending = st.pending
        if pending is not None and pending.step == step and pending.slow_update is not None:
            # asked before a restart
            result = TextResult.from_dict(pending.slow_update).without_secrets()
        else:
            moved = comparison(sample, before, after)
            core.spend(f"slow update {epoch + 1}", calls=1)
            result = optimizer.slow_update(
                current, previous, moved, core.memory, core.context()
            ).without_secrets()
            core.stop_if_hopeless([result])
            # checkpointed like proposals: a restart gates this guidance, never a new one
            st.pend(Pending(step, slow_update=result.to_dict()))
            core.checkpoint()
            if result.secrets:
                core.emit(
                    ProposalMade(
                        step=step,
                        call="slow_update",
                        tasks=[],
                        edits=1,
                        skipped=None,
                        calls=result.calls,
                        secrets=result.secrets,
                    )
                )
        if not result.text or _same_text(guidance_of(current), result.text):
            reason = (
                "the guidance is the one the skill holds already"
                if result.text
                else result.skipped or "the optimizer gave no guidance"
            )
            core.record(
                self._record(
                    step, epoch, result, None, Verdict(decision="no_candidate", reason=reason)
                )
            )
            val = st.incumbent.val
            core.emit(
                NoCandidate(
                    step=step,
                    step_kind="slow_update",
                    decision="no_candidate",
                    reason=reason,
                    val=val,
                    best=val,
                )
            )
            return
        edit = Edit(
            "replace" if "skillopt:protected guidance" in current.body else "add",
            content=result.text,
            rationale="longitudinal guidance from the slow update",
            source="slow_update",
        )
        if has_protected_marker(result.text):  # it would end the block early: refused, as edits are
            candidate = current
            report = ApplyReport(
                [EditResult(edit, "protected", "content may not contain protected markers")]
            )
        else:
            candidate = set_guidance(current, result.text, last=core.context().completion)
            report = ApplyReport([EditResult(edit, "applied", "guidance block")])

        def record(v: Verdict) -> StepRecord:
            return self._record(step, epoch, result, report, v)

        nothing = no_candidate_reason(report, [], None)
        self.judge.decide(
            step, epoch, current, candidate, report, record, kind="slow_update", nothing=nothing
        )

    def _record(
        self, step: int, epoch: int, result: TextResult, report: ApplyReport | None, v: Verdict
    ) -> SlowUpdateRecord:
        return SlowUpdateRecord(
            step=step,
            epoch=epoch + 1,
            guidance=result.text,
            skipped=result.skipped,
            calls=result.calls,
            apply=None if report is None else report.to_list(),
            secrets=result.secrets,
            decision=v.decision,
            reason=v.reason,
            gate=v.gate,
            commit=v.commit,
            skill_hash=v.skill_hash,
            wall_s=self.core.seconds(),
        )

    def _skip(self, step: int, epoch: int, reason: str) -> None:
        core = self.core
        core.record(
            SkippedSlowUpdate(step=step, epoch=epoch + 1, reason=reason, wall_s=core.seconds())
        )
        val = core.state.incumbent.val
        core.emit(
            NoCandidate(
                step=step,
                step_kind="slow_update",
                decision="skipped",
                reason=reason,
                val=val,
                best=val,
            )
        )


def _same_text(a: str | None, b: str | None) -> bool:
    """Whether two blocks of Markdown say the same: equal line by line once spaces
    are collapsed and blank lines dropped (a candidate differing only so would be
    gated for nothing)."""
    if a is None or b is None:
        return False

    def lines(text: str) -> list[str]:
        return [" ".join(line.split()) for line in text.splitlines() if line.strip()]

    return lines(a) == lines(b)
