"""What a training run tells its observers: one frozen event per kind, written to
`events.jsonl` as `{"t", "event", ...fields}` and handed to every observer
(progress bars, the event log).

Invariants:
- An event's fields are the keys of its line in `events.jsonl`, in the order they
  are written (`training/records` writes and reads them); a field some events of a
  kind carry and others do not (a stage's step, a stop's budget) is absent while
  unset, so the lines of every existing log are written again byte for byte.
- `kind` names the event (`run_started`, `stage`, `rollout`, `proposal`,
  `decision`, `stopped`, `epoch_end`, `finished`) and `data` is its JSON, which is
  what an observer that reads events as data sees.
- Reading a line (`read_event`) is lenient where an observer can be: a field a
  line lacks takes its default; its `event` and the fields that say what happened
  must be there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from skillopt.errors import InputError
from skillopt.training.records import named, optional, read, to_json


class _Event:
    kind: ClassVar[str]

    @property
    def data(self) -> dict[str, Any]:
        """The event's fields as JSON (its line in `events.jsonl` without `t`/`event`)."""
        data: dict[str, Any] = to_json(self)
        return data


@dataclass(frozen=True, kw_only=True)
class RunStarted(_Event):
    kind: ClassVar[str] = "run_started"
    run_id: str = ""
    steps: int
    epochs: int
    resumed: bool = False
    splits: dict[str, int] | None = None  # tasks per split


@dataclass(frozen=True, kw_only=True)
class Stage(_Event):
    """A stage of the run begins (baseline, rollout, reflect, gate, slow_update,
    notes, test), with where the run stands when the stage has a place in it."""

    kind: ClassVar[str] = "stage"
    stage: str
    step: int | None = optional()
    epoch: int | None = optional()
    k: int | None = optional()  # the batch of the epoch, from 1
    per_epoch: int | None = optional()
    budget: int | None = optional()  # the step's edit budget
    minibatches: int | None = optional()  # optimizer calls of a reflection


@dataclass(frozen=True, kw_only=True)
class RolloutDone(_Event):
    """One rollout of a batch finished (`done` of `total`, in the batch `label`)."""

    kind: ClassVar[str] = "rollout"
    stage: str = ""
    label: str
    done: int
    total: int
    task_id: str = ""
    score: float | None = None
    passed: bool | None = None  # None: unscored
    cached: bool = False
    scored: bool = False


@dataclass(frozen=True, kw_only=True)
class ProposalMade(_Event):
    """An optimizer call came back (a reflection minibatch, or notes it skipped)."""

    kind: ClassVar[str] = "proposal"
    step: int
    call: str = named("kind")  # failures | notes
    tasks: list[str]
    edits: int
    skipped: str | None
    calls: int


@dataclass(frozen=True, kw_only=True)
class InitialDecision(_Event):
    kind: ClassVar[str] = "decision"
    step: int = 0
    step_kind: str = named("kind", "initial")
    accepted: bool = True
    val: float | None
    best: float | None
    commit: str = ""


@dataclass(frozen=True, kw_only=True)
class NoCandidate(_Event):
    """A step or slow update that gave nothing to gate (`no_candidate`, `skipped`)."""

    kind: ClassVar[str] = "decision"
    step: int
    step_kind: str = named("kind")  # step | slow_update
    accepted: bool = False
    decision: str
    reason: str
    val: float | None
    best: float | None


@dataclass(frozen=True, kw_only=True)
class GateDecision(_Event):
    """The gate accepted or rejected a candidate."""

    kind: ClassVar[str] = "decision"
    step: int
    step_kind: str = named("kind")  # step | slow_update
    accepted: bool
    decision: str
    delta: float | None = None
    p_value: float | None = None
    gate: str = ""  # the gate's mode
    val: float | None  # the candidate's; None when a race left tasks unrun
    best: float | None
    reason: str
    commit: str = ""


@dataclass(frozen=True, kw_only=True)
class Stopped(_Event):
    """The run stopped early: a stall, or a budget (`budget` names its flag)."""

    kind: ClassVar[str] = "stopped"
    step: int
    epoch: int
    reason: str
    budget: str | None = optional()


@dataclass(frozen=True, kw_only=True)
class EpochEnd(_Event):
    kind: ClassVar[str] = "epoch_end"
    epoch: int
    val: float | None


@dataclass(frozen=True, kw_only=True)
class Finished(_Event):
    kind: ClassVar[str] = "finished"
    test: dict[str, dict[str, Any]]  # skill -> {mean, n, pass_rate}
    best_val: float | None
    initial_val: float | None


TrainEvent = (
    RunStarted
    | Stage
    | RolloutDone
    | ProposalMade
    | InitialDecision
    | NoCandidate
    | GateDecision
    | Stopped
    | EpochEnd
    | Finished
)
TrainObserver = Callable[[TrainEvent], None]

_BY_KIND: dict[str, type[TrainEvent]] = {
    c.kind: c for c in (RunStarted, Stage, RolloutDone, ProposalMade, Stopped, EpochEnd, Finished)
}


def event(kind: str, data: Mapping[str, Any]) -> TrainEvent:
    """The event `kind` with the fields `data` (a line of `events.jsonl` without its
    `t` and `event`); raises `InputError` naming the field that cannot be read."""

    def fail(where: str, what: str) -> InputError:
        return InputError(f"malformed {kind} event: {what}", field=where or None)

    fields = dict(data)
    if kind == "decision":
        if fields.get("kind") == "initial":
            return read(InitialDecision, fields, "", fail)
        if fields.get("decision") in ("no_candidate", "skipped"):
            return read(NoCandidate, fields, "", fail)
        return read(GateDecision, fields, "", fail)
    if kind not in _BY_KIND:
        raise fail("event", f"unknown event {kind!r}")
    return read(_BY_KIND[kind], fields, "", fail)


def read_event(line: Mapping[str, Any]) -> TrainEvent:
    """A line of `events.jsonl` as its event (its time `t` is the log's, not the event's)."""
    return event(str(line.get("event")), {k: v for k, v in line.items() if k not in ("t", "event")})
