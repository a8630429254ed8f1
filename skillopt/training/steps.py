"""The run's evidence log: one frozen record per recorded step, one class per kind
(the initial skill, a step on a batch, a slow update, a slow update skipped), each
with the gate's decision typed (`GateRecord`).

Invariants:
- A record's fields are its keys in `state.json`, in the order they are written
  (`training/records` writes and reads them); a key a kind of record has only
  sometimes (no gate without a candidate) or that was added after runs were written
  without it (`failing`, `incumbent_hash`, `wall_s`) is absent while unset.
- Readers (the report, the optimizer's epoch notes, a replay's comparison) read a
  record by its attributes, narrowing the union by its class; its JSON is
  `records.to_json(rec)`, and nothing reads a record as a mapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from skillopt.optimize.gate import Decision
from skillopt.training.records import Fail, kind_of, optional, read

Json = dict[str, Any]  # a nested piece of evidence kept as its owner writes it


@dataclass(frozen=True, kw_only=True)
class GateRecord:
    """The gate's decision on a candidate as recorded (`Decision.to_dict()`)."""

    accepted: bool
    reason: str
    mode: str
    n: int
    incumbent_mean: float | None
    candidate_mean: float | None
    delta: float | None
    p_value: float | None
    fail_to_pass: tuple[str, ...]
    pass_to_fail: tuple[str, ...]
    per_task: dict[str, Any]  # task id -> [incumbent, candidate]
    unrun: int = optional(0)  # validation tasks a racing gate did not need to run
    held: Json | None = optional(None)  # `--part both`: the other part's score (part, n, means)

    @classmethod
    def of(cls, d: Decision) -> GateRecord:
        return cls(
            accepted=d.accepted,
            reason=d.reason,
            mode=d.mode,
            n=d.n,
            incumbent_mean=d.incumbent_mean,
            candidate_mean=d.candidate_mean,
            delta=d.delta,
            p_value=d.p_value,
            fail_to_pass=d.fail_to_pass,
            pass_to_fail=d.pass_to_fail,
            per_task=d.per_task,
            unrun=d.unrun,
            held=d.held,
        )


Gated = Literal["accepted", "rejected", "no_candidate"]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What became of a candidate: the decision, why, and with a gate run its
    evidence, audit commit and the candidate's hash."""

    decision: Gated
    reason: str
    gate: GateRecord | None = None
    commit: str | None = None
    skill_hash: str | None = None
    trials: list[Json] | None = None  # a decomposed step's gated candidates (`Trial`)
    credit: list[Json] | None = None  # each edit's verdict (`EditCredit`)


@dataclass(frozen=True, kw_only=True)
class InitialRecord:
    """Step 0: the initial skill's validation score and its audit commit."""

    step: int
    kind: Literal["initial"] = "initial"
    epoch: int
    val: float
    n: int
    commit: str
    decision: Literal["initial"] = "initial"
    wall_s: float | None = optional()  # seconds the step took (in the process that ran it)


@dataclass(frozen=True, kw_only=True)
class BatchRecord:
    """A step on a batch of training tasks: what failed, what the optimizer proposed,
    what was applied, and the verdict on the candidate."""

    step: int
    kind: Literal["step"] = "step"
    epoch: int
    budget: int
    train_mean: float | None
    failures: int
    failing: tuple[str, ...] | None = optional()  # failing training task ids, sorted
    incumbent_hash: str | None = optional()  # the skill the step started from
    # the installed skills its misfired queries loaded instead (a description step)
    collisions: tuple[str, ...] | None = optional()
    successes: int
    unscored: int
    proposals: list[Json]  # Proposal.to_dict() each
    dropped: list[Json]  # {edit, reason}
    apply: list[Json]  # EditResult.to_dict() each
    # known secret values blanked in the proposed edits before any was applied
    secrets: int = optional(0)
    decision: Gated
    reason: str
    gate: GateRecord | None = optional()
    commit: str | None = optional()
    skill_hash: str | None = optional()
    # every candidate the step gated, in order, when it gated more than one (the
    # whole was rejected and subsets of its edits followed): `Trial.to_dict()` each
    trials: list[Json] | None = optional()
    # each applied edit's verdict (`EditCredit.to_dict()`), when the step gated any
    credit: list[Json] | None = optional()
    wall_s: float | None = optional()


@dataclass(frozen=True, kw_only=True)
class SlowUpdateRecord:
    """An epoch's slow update: the guidance the optimizer gave and its verdict."""

    step: int
    kind: Literal["slow_update"] = "slow_update"
    epoch: int
    guidance: str | None
    skipped: str | None
    calls: int
    apply: list[Json] | None = optional()
    secrets: int = optional(0)  # known secret values blanked in the guidance
    decision: Gated
    reason: str
    gate: GateRecord | None = optional()
    commit: str | None = optional()
    skill_hash: str | None = optional()
    wall_s: float | None = optional()


@dataclass(frozen=True, kw_only=True)
class SkippedSlowUpdate:
    """An epoch's slow update not asked for (the epoch left the skill unchanged)."""

    step: int
    kind: Literal["slow_update"] = "slow_update"
    epoch: int
    decision: Literal["skipped"] = "skipped"
    reason: str
    wall_s: float | None = optional()


StepRecord = InitialRecord | BatchRecord | SlowUpdateRecord | SkippedSlowUpdate


def read_step(data: object, where: str, fail: Fail) -> StepRecord:
    """The step record of `data`, by its kind (and, for a slow update, its decision)."""
    if not isinstance(data, dict):
        raise fail(where, f"expected an object, got {kind_of(data)}")
    for key, what in (("step", int), ("kind", str), ("decision", str)):
        if key not in data:
            raise fail(f"{where}.{key}", "missing")
        read(what, data[key], f"{where}.{key}", fail)
    kind = data["kind"]
    if kind == "initial":
        return read(InitialRecord, data, where, fail)
    if kind == "step":
        return read(BatchRecord, data, where, fail)
    if kind == "slow_update" and data["decision"] == "skipped":
        return read(SkippedSlowUpdate, data, where, fail)
    if kind == "slow_update":
        return read(SlowUpdateRecord, data, where, fail)
    raise fail(f"{where}.kind", f"expected one of initial, step, slow_update, got {kind!r}")


def gate_of(rec: StepRecord) -> GateRecord | None:
    """The gate's decision a step recorded: None for the initial skill, a skipped slow
    update and a step or slow update that made no candidate."""
    return rec.gate if isinstance(rec, (BatchRecord, SlowUpdateRecord)) else None


def gate_commit(rec: StepRecord) -> str | None:
    """The audit commit a step's record names: the candidate that settled it."""
    return rec.commit if isinstance(rec, (BatchRecord, SlowUpdateRecord)) else None


def apply_of(rec: StepRecord) -> list[Json]:
    """What applying a step's edits (a slow update's guidance) gave, one entry each
    (`EditResult.to_dict()`); none for a record that applied nothing."""
    if isinstance(rec, (BatchRecord, SlowUpdateRecord)):
        return list(rec.apply or [])
    return []
