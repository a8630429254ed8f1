"""The rollout record: what one (skill, task, sample) run produced, its
fingerprint, and the cache contract the rollout engine writes it through.

A leaf module: the store, the evaluation statistics and the gate import the record
without loading harnesses, models, suites or settings.

Invariant: a rollout's key is sha256 over the canonical JSON of exactly the fields
that change its outcome (skill hash, task content, sample index, harness and
scorer fingerprints), so an identical evaluation is found again in the store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from skillopt.models.base import Usage

if TYPE_CHECKING:
    from skillopt.rollouts.spend import Role, Spend
    from skillopt.suite.task import Task


@dataclass(frozen=True)
class Rollout:
    key: str
    task_id: str
    split: str
    sample: int
    skill_hash: str
    scored: bool
    score: float | None = None
    passed: bool | None = None
    feedback: str = ""
    answer: str | None = None
    error: str | None = None
    error_kind: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    latency_s: float = 0.0
    model_calls: int = 0
    cached: bool = False
    trajectory: dict[str, Any] = field(default_factory=dict, compare=False)  # messages, steps

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "split": self.split,
            "sample": self.sample,
            "scored": self.scored,
            "score": self.score,
            "passed": self.passed,
            "feedback": self.feedback,
            "answer": self.answer,
            "error": self.error,
            "error_kind": self.error_kind,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cached_input_tokens": self.usage.cached_input_tokens,
            "cost": self.cost,
            "latency_s": round(self.latency_s, 6),
            "cached": self.cached,
            "key": self.key,
            "skill_invoked": self.trajectory.get("skill_invoked"),
            "workspace": self.trajectory.get("workspace"),
            "info": self.trajectory.get("info") or {},  # what the harness saw: model, turns
        }


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(
    skill_hash: str, task: Task, sample: int, harness_fp: dict[str, Any], scorer_fp: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """(key, fingerprint): the key is sha256 over canonical JSON of exactly the
    fields that change a rollout's outcome."""
    fp = {
        "skill": skill_hash,
        "task": task.content(),
        "sample": sample,
        "harness": harness_fp,
        "scorer": scorer_fp,
    }
    # surrogatepass: a task whose text holds a lone surrogate still gets a stable key
    return hashlib.sha256(canonical_json(fp).encode("utf-8", "surrogatepass")).hexdigest(), fp


class RolloutCache(Protocol):
    """What the rollout engine needs of a store (`skillopt.store.RolloutStore` is
    the one skillopt ships): scored rollouts by key, and, when several processes
    share it (`shared`), leases so each rollout is paid for once.

    Contract: `get_many` returns scored rollouts only; `put` never loses a scored
    row to a later unscored one; `claim_many` returns the keys the caller now holds
    (a key another live owner holds is left out), `renew` extends every lease of an
    owner, `release` frees the given keys; `note_uses` records which rollouts a
    run used (for its bundle); `spend` sums what a run paid, from the ledger that
    `put` (with a run id) and `record_cached` write; `reserve` records a rollout
    as spent before it starts, at its estimate, and `put(..., reserved=)` settles
    it. None of them raises for one rollout's content (texts are made storable on
    write)."""

    shared: bool
    lease_ttl: float

    def get_many(self, keys: Iterable[str]) -> Mapping[str, Rollout]: ...

    def put(
        self,
        rollout: Rollout,
        fingerprint: dict[str, Any],
        run_id: str | None = None,
        *,
        reserved: int | None = None,
    ) -> None: ...

    def reserve(
        self, run_id: str, role: Role, kind: str, cost: float | None, *, key: str | None = None
    ) -> int: ...

    def remember_skill(self, skill_hash: str, text: str) -> None: ...

    def record_cached(self, run_id: str, count: int) -> None: ...

    def note_uses(self, run_id: str, kind: str, keys: Iterable[str]) -> None: ...

    def spend(self, run_id: str) -> Spend: ...

    def claim_many(self, keys: Iterable[str], owner: str, ttl: float | None = None) -> set[str]: ...

    def renew(self, owner: str, ttl: float | None = None) -> int: ...

    def release(self, keys: Iterable[str], owner: str) -> None: ...
