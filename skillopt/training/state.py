"""The training checkpoint as typed values: what `state.json` holds, and the
transitions the trainer makes on it.

Invariants:
- `TrainState.to_dict()` is the checkpoint in the current format (`STATE_VERSION`);
  `from_dict` reads it and every older version, which is migrated in memory
  (`training/state_format`) and written in the current format at the next save.
- A checkpoint this code cannot read (a newer or unknown version, a missing or
  mistyped field) is one `InputError` naming the file and the field; nothing is
  guessed and nothing is resumed from it.
- A field added within a version (`stopped_early`, `notes_owed`, `stop`, the
  accounting's `optimizer_served` and `*_cached_tokens`) is written only when it is set
  and read as its default when absent: checkpoints of that version written before
  it existed still load, and an older skillopt of the same version still reads
  every checkpoint the field does not concern. A version is bumped only for a
  change a default cannot bridge.
- The trainer changes the state only through its methods (`start`, `record`,
  `next_epoch`, `finish`, ...), one per transition of a run; the step records
  (`training/steps`) are the run's evidence log, appended once per step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from skillopt.optimize.memory import Memory
from skillopt.training.checkpoint import (
    Accounting,
    BudgetStop,
    EarlyStop,
    Pending,
    Revision,
    SkippedNote,
    SplitScore,
)
from skillopt.training.records import to_json
from skillopt.training.state_format import STATE_VERSION, Reader, current
from skillopt.training.steps import InitialRecord, StepRecord

if TYPE_CHECKING:
    from skillopt.runs.rundir import RunDir
    from skillopt.skill.document import Skill

Status = Literal["new", "running", "stopped", "finished"]


@dataclass
class TrainState:
    """Everything a run needs to continue where it stopped. The trainer changes it
    through its methods and saves it after every step (`save`); `--resume` loads it
    (`load`)."""

    status: Status
    epoch: int  # the epoch in progress, from 0 (== epochs once training is done)
    k: int  # the next batch of that epoch
    step: int  # the last recorded step number (0: the initial skill)
    slow_done: bool  # this epoch's slow update is recorded
    # this epoch's optimizer notes were taken at its end: only checkpoints written
    # before notes were taken lazily set it; it keeps them from being owed again
    notes_done: bool
    incumbent: Revision  # the best skill so far: only the gate replaces it
    initial: Revision
    epoch_start: Revision  # the incumbent when this epoch began (for the slow update)
    support: tuple[tuple[str, str], ...]  # the skill's supporting files (path, digest)
    steps: list[StepRecord]
    pending: Pending | None
    memory: Memory
    accounting: Accounting
    started_at: float
    skipped_notes: list[SkippedNote] = field(default_factory=list)
    test: dict[str, SplitScore] = field(default_factory=dict)  # no_skill, initial, best
    stopped_early: EarlyStop | None = None  # set when a stall ended training early
    # finished epochs (1-based) whose notes a later optimizer call would read and that
    # no call has read yet: they are asked for just before the next call, then dropped
    notes_owed: list[int] = field(default_factory=list)
    # why a budget stopped the run (status "stopped"): {reason, budget, where, detail, step}
    stop: BudgetStop | None = None
    # a run that trained the description: precision and recall of the initial and
    # best skills on the test split's trigger queries ({initial, best})
    triggers: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, skill: Skill) -> TrainState:
        """The state of a run that has not started: the skill is all three revisions."""
        rev = Revision.of(skill)
        return cls(
            status="new",
            epoch=0,
            k=0,
            step=0,
            slow_done=False,
            notes_done=False,
            incumbent=rev,
            initial=rev,
            epoch_start=rev,
            support=skill.support,
            steps=[],
            pending=None,
            memory=Memory(),
            accounting=Accounting(),
            started_at=time.time(),
        )

    # -- transitions -------------------------------------------------------------------
    def begin(self) -> None:
        """A run (new or resumed) begins: a budget's earlier stop no longer holds."""
        self.stop = None

    def start(self, record: InitialRecord) -> None:
        """The initial skill is scored and recorded (step 0): training runs."""
        self.incumbent = replace(self.incumbent, val=record.val)
        self.initial = replace(self.initial, val=record.val)
        self.epoch_start = self.incumbent
        self.steps.append(record)
        self.status = "running"

    def running(self) -> None:
        self.status = "running"

    def pend(self, pending: Pending) -> None:
        """Optimizer replies of the step in progress, paid for: kept for a restart."""
        self.pending = pending

    def accept(self, incumbent: Revision) -> None:
        """The gate accepted a candidate: it is the incumbent."""
        self.incumbent = incumbent

    def record(self, record: StepRecord) -> None:
        """A step is done: its record is kept and its pending replies are spent."""
        self.steps.append(record)
        self.step = record.step
        self.pending = None

    def next_batch(self) -> None:
        self.k += 1

    def slow_update_done(self) -> None:
        self.slow_done = True

    def owe_notes(self, epoch: int) -> None:
        """Notes on finished `epoch` (1-based) are owed to the next optimizer call."""
        self.notes_owed.append(epoch)

    def notes_taken(self) -> None:
        """The oldest owed notes were taken."""
        self.notes_owed.pop(0)

    def skip_notes(self, note: SkippedNote) -> None:
        self.skipped_notes.append(note)

    def next_epoch(self) -> None:
        """The epoch in progress ended: the next one begins from its first batch."""
        self.epoch, self.k = self.epoch + 1, 0
        self.slow_done = self.notes_done = False
        self.epoch_start = self.incumbent

    def stop_early(self, stop: EarlyStop) -> None:
        self.stopped_early = stop

    def stop_for_budget(self, stop: BudgetStop) -> None:
        """A budget stopped the run (`--resume` continues it with a larger one)."""
        self.status = "stopped"
        self.stop = stop

    def finish(self, test: dict[str, SplitScore], triggers: dict[str, Any] | None = None) -> None:
        """Training is done and the test split scored (and its trigger queries')."""
        self.test = test
        self.triggers = dict(triggers or {})
        self.status = "finished"

    def account(self, accounting: Accounting) -> None:
        self.accounting = accounting

    # -- files -------------------------------------------------------------------------
    @classmethod
    def load(cls, run: RunDir) -> TrainState | None:
        """The run's checkpoint, or None if it has none yet."""
        data = run.load_state()
        return None if data is None else cls.from_dict(data, path=run.state_path)

    def save(self, run: RunDir) -> None:
        run.save_state(self.to_dict())

    # -- the format --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The checkpoint as JSON data, in the current format. Memory is shared, not
        copied: serialise the result before changing the state."""
        data = {
            "version": STATE_VERSION,
            "status": self.status,
            "epoch": self.epoch,
            "k": self.k,
            "step": self.step,
            "slow_done": self.slow_done,
            "notes_done": self.notes_done,
            "incumbent": self.incumbent.to_dict(),
            "initial": self.initial.to_dict(),
            "epoch_start": self.epoch_start.to_dict(),
            "support": [list(x) for x in self.support],
            "steps": to_json(self.steps),
            "pending": None if self.pending is None else self.pending.to_dict(),
            "memory": self.memory.to_dict(),
            "accounting": self.accounting.to_dict(),
            "started_at": self.started_at,
            "skipped_notes": to_json(self.skipped_notes),
            "test": to_json(self.test),
        }
        if self.stopped_early is not None:  # added within version 2: only when set
            data["stopped_early"] = self.stopped_early.to_dict()
        if self.notes_owed:  # added within version 2: only when set
            data["notes_owed"] = list(self.notes_owed)
        if self.stop is not None:  # added within version 2: only when set
            data["stop"] = self.stop.to_dict()
        if self.triggers:  # added within version 2: only when set
            data["triggers"] = self.triggers
        return data

    @classmethod
    def from_dict(cls, data: Any, *, path: object = None) -> TrainState:
        """A state from checkpoint data of any known version. `path` is the file it
        came from, named in the error when the data cannot be read."""
        data = current(data, path)
        r = Reader(path)
        r.only(data, {f.name for f in fields(TrainState)} | {"version"})
        return TrainState(
            status=r.status(data),
            epoch=r.get(data, "epoch", "int"),
            k=r.get(data, "k", "int"),
            step=r.get(data, "step", "int"),
            slow_done=r.get(data, "slow_done", "bool"),
            notes_done=r.get(data, "notes_done", "bool"),
            incumbent=r.revision(data, "incumbent"),
            initial=r.revision(data, "initial"),
            epoch_start=r.revision(data, "epoch_start"),
            support=r.support(data),
            steps=r.steps(data),
            pending=r.pending(data),
            memory=r.memory(data),
            accounting=r.accounting(data),
            started_at=r.get(data, "started_at", "num"),
            skipped_notes=r.skipped_notes(data),
            test=r.test(data),
            stopped_early=r.stopped_early(data),
            notes_owed=r.notes_owed(data),
            stop=r.stop(data),
            triggers=(r.get(data, "triggers", "dict?") or {}) if "triggers" in data else {},
        )
