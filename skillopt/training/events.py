"""What a training run tells its observers: one frozen event per kind, written to
`events.jsonl` as `{"t", "event", ...fields}` and handed to every observer
(progress bars, the event log).

Invariants:
- An event's fields are the keys of its line in `events.jsonl`, in the order they
  are written (`training/records` writes and reads them); a field some events of a
  kind carry and others do not (a stage's step, a stop's budget) is absent while
  unset, so the lines of every existing log are written again byte for byte.
- An observer switches on an event's class; its name in the log (`run_started`,
  `stage`, `rollout`, `proposal`, `decision`, `stopped`, `epoch_end`, `finished`)
  and its line are the log writer's alone (`event_name`, `event_json`).
- Reading a line (`read_event`) is lenient where an observer can be: a field a
  line lacks takes its default; its `event` and the fields that say what happened
  must be there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from skillopt.errors import InputError
from skillopt.training.records import named, optional, read, to_json


@dataclass(frozen=True, kw_only=True)
class RunStarted:
    run_id: str = ""
    steps: int
    epochs: int
    resumed: bool = False
    splits: dict[str, int] | None = None  # tasks per split


@dataclass(frozen=True, kw_only=True)
class Stage:
    """A stage of the run begins (baseline, rollout, reflect, gate, slow_update,
    notes, test), with where the run stands when the stage has a place in it."""

    stage: str
    step: int | None = optional()
    epoch: int | None = optional()
    k: int | None = optional()  # the batch of the epoch, from 1
    per_epoch: int | None = optional()
    budget: int | None = optional()  # the step's edit budget
    minibatches: int | None = optional()  # optimizer calls of a reflection


@dataclass(frozen=True, kw_only=True)
class RolloutDone:
    """One rollout of a batch finished (`done` of `total`, in the batch `label`)."""

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
class ProposalMade:
    """An optimizer call came back (a reflection minibatch, notes it skipped, or a
    slow update whose guidance held secret values)."""

    step: int
    call: str = named("kind")  # failures | repair | notes | slow_update
    tasks: list[str]
    edits: int
    skipped: str | None
    calls: int
    # known secret values blanked in its edits (or guidance) before any was applied
    secrets: int = optional(0)


@dataclass(frozen=True, kw_only=True)
class InitialDecision:
    step: int = 0
    step_kind: str = named("kind", "initial")
    accepted: bool = True
    val: float | None
    best: float | None
    commit: str = ""


@dataclass(frozen=True, kw_only=True)
class NoCandidate:
    """A step or slow update that gave nothing to gate (`no_candidate`, `skipped`)."""

    step: int
    step_kind: str = named("kind")  # step | slow_update
    accepted: bool = False
    decision: str
    reason: str
    val: float | None
    best: float | None


@dataclass(frozen=True, kw_only=True)
class GateDecision:
    """The gate accepted or rejected a candidate, with the validation tasks it turned
    from fail to pass (its gains) and from pass to fail (its regressions), among
    those the gate compared; None in a log written before the event had them."""

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
    fail_to_pass: tuple[str, ...] | None = optional()
    pass_to_fail: tuple[str, ...] | None = optional()
    # a decomposed step's later candidate: which of its edits ("edit 2 alone")
    trial: str | None = optional()
    # `--part both`: what `val` was measured on when not the run's validation tasks
    # ("trigger queries"), and the other part's score the gate held (part, n, means)
    gated_on: str | None = optional()
    held: dict[str, Any] | None = optional()


@dataclass(frozen=True, kw_only=True)
class Stopped:
    """The run stopped early: a stall, or a budget (`budget` names its flag)."""

    step: int
    epoch: int
    reason: str
    budget: str | None = optional()


@dataclass(frozen=True, kw_only=True)
class EpochEnd:
    epoch: int
    val: float | None


@dataclass(frozen=True, kw_only=True)
class Finished:
    test: dict[str, dict[str, Any]]  # skill -> {mean, n, pass_rate}
    best_val: float | None
    initial_val: float | None


Decided = InitialDecision | NoCandidate | GateDecision  # a `decision` line of the log

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

_NAMES: dict[type[TrainEvent], str] = {
    RunStarted: "run_started",
    Stage: "stage",
    RolloutDone: "rollout",
    ProposalMade: "proposal",
    InitialDecision: "decision",
    NoCandidate: "decision",
    GateDecision: "decision",
    Stopped: "stopped",
    EpochEnd: "epoch_end",
    Finished: "finished",
}
_BY_KIND: dict[str, type[TrainEvent]] = {
    name: c for c, name in _NAMES.items() if name != "decision"
}


def event_name(ev: TrainEvent) -> str:
    """The event's name in `events.jsonl` (its line's `event`)."""
    return _NAMES[type(ev)]


def event_json(ev: TrainEvent) -> dict[str, Any]:
    """The event's fields as its line in `events.jsonl` holds them (without `t` and
    `event`), in the order they are written."""
    data: dict[str, Any] = to_json(ev)
    return data


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
