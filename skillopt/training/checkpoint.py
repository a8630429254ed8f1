"""The small values a training checkpoint holds besides its step records: skill
revisions, optimizer replies pending inside a step, skipped notes, an early stop,
test results and what the run has spent.

Invariant: each is a frozen dataclass written by `training/records.to_json`; a
field added within checkpoint version 2 is declared `optional()` (written only when
set, read as its default when absent), so a checkpoint of that version written
before it existed still loads and one that does not use it reads in an older
skillopt of the same version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skillopt.training.records import optional, to_json
from skillopt.training.steps import BatchRecord, StepRecord

if TYPE_CHECKING:
    from skillopt.rollouts.budget import BudgetExceeded
    from skillopt.rollouts.spend import Spend
    from skillopt.skill.document import Skill


class JsonRecord:
    """A record written by its fields (`training/records`)."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = to_json(self)
        return data


@dataclass(frozen=True)
class Revision(JsonRecord):
    """A revision of the skill the run keeps track of: its text, content hash and
    mean validation score (None until scored)."""

    text: str
    hash: str
    val: float | None = None

    @classmethod
    def of(cls, skill: Skill) -> Revision:
        return cls(skill.text, skill.hash)


@dataclass(frozen=True)
class Pending(JsonRecord):
    """Optimizer replies of the step in progress, paid for and checkpointed before the
    step is recorded, so a restart reuses them instead of asking again: the
    reflection proposals of a step, or the guidance of a slow update."""

    step: int
    proposals: list[dict[str, Any]] | None = optional()  # Proposal.to_dict() each
    slow_update: dict[str, Any] | None = optional()  # TextResult.to_dict()
    # the step's one repair ask (its edits repeated a candidate already gated)
    repair: dict[str, Any] | None = optional()  # Proposal.to_dict()


@dataclass(frozen=True, kw_only=True)
class BudgetStop(JsonRecord):
    """Why a budget stopped the run (`BudgetExceeded`), and after which step: the
    budget's flag, before what it stopped and the numbers. `--resume` with a larger
    budget continues the run."""

    reason: str = "budget"
    budget: str  # the flag: --budget-usd, --max-target-rollouts, …
    where: str
    detail: str
    step: int

    @classmethod
    def of(cls, exc: BudgetExceeded, step: int) -> BudgetStop:
        return cls(budget=exc.flag, where=exc.where, detail=exc.detail, step=step)


@dataclass(frozen=True)
class SkippedNote(JsonRecord):
    """Epoch-end notes the optimizer could not give, and why."""

    epoch: int
    reason: str


@dataclass(frozen=True)
class EarlyStop(JsonRecord):
    """The run stopped before its last epoch: after which step, in which epoch, why."""

    step: int
    epoch: int
    reason: str


@dataclass(frozen=True)
class SplitScore(JsonRecord):
    """One skill's result on the test split: its mean, tasks scored and pass rate;
    whether each scored task passed (`passed`, in task order: the report compares
    skills task by task) and the seconds scoring took (`wall_s`). The last two were
    added within version 2: None in checkpoints written before them, and written
    only when set."""

    mean: float | None
    n: int
    pass_rate: float | None
    passed: dict[str, bool] | None = optional()
    wall_s: float | None = optional()

    def totals(self) -> dict[str, Any]:
        """Mean, tasks scored and pass rate (what the summary and events show)."""
        return {"mean": self.mean, "n": self.n, "pass_rate": self.pass_rate}


@dataclass(frozen=True)
class Accounting(JsonRecord):
    """What the run has spent, from the store's ledger totals and the step records.
    The counters added within version 2 are written only when nonzero: a run without
    prompt caching writes the accounting an older skillopt reads. `*_estimated`:
    calls (for the target, rollouts) in flight when a process of the run was
    killed, counted in the totals at their estimate (`estimated_cost` of the costs),
    because the provider may have billed them."""

    optimizer_calls: int = 0
    optimizer_input_tokens: int = 0
    optimizer_output_tokens: int = 0
    optimizer_cost: float | None = None
    optimizer_served: int = optional(0)  # replies served from the store (no call paid)
    skipped_minibatches: int = 0
    target_rollouts: int = 0
    cached_rollouts: int = 0
    unscored_rollouts: int = 0
    target_calls: int = 0
    target_input_tokens: int = 0
    target_output_tokens: int = 0
    target_cost: float | None = None
    # input tokens read from the provider's prompt cache, part of `*_input_tokens`
    target_cached_tokens: int = optional(0)
    optimizer_cached_tokens: int = optional(0)
    target_estimated: int = optional(0)
    optimizer_estimated: int = optional(0)
    estimated_cost: float = optional(0.0)

    @classmethod
    def from_ledger(cls, spend: Spend, steps: Sequence[StepRecord]) -> Accounting:
        target, opt = spend.target, spend.optimizer
        skipped = sum(
            1
            for rec in steps
            if isinstance(rec, BatchRecord)
            for p in rec.proposals
            if p.get("skipped")
        )
        return cls(
            optimizer_calls=opt.calls,
            optimizer_input_tokens=opt.input_tokens,
            optimizer_output_tokens=opt.output_tokens,
            optimizer_cost=opt.cost,
            optimizer_served=opt.cached,
            skipped_minibatches=skipped,
            target_rollouts=target.rollouts,
            cached_rollouts=target.cached,
            unscored_rollouts=target.unscored,
            target_calls=target.calls,
            target_input_tokens=target.input_tokens,
            target_output_tokens=target.output_tokens,
            target_cost=target.cost,
            target_cached_tokens=target.cached_input_tokens,
            optimizer_cached_tokens=opt.cached_input_tokens,
            target_estimated=target.estimated,
            optimizer_estimated=opt.estimated,
            estimated_cost=target.estimated_cost + opt.estimated_cost,
        )


# written only when nonzero; read as 0 when absent
ADDED_IN_V2 = frozenset(
    {
        "target_cached_tokens",
        "optimizer_cached_tokens",
        "optimizer_served",
        "target_estimated",
        "optimizer_estimated",
        "estimated_cost",
    }
)
