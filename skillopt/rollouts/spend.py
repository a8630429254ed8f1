"""What a run paid, per role, as the store's spend ledger sums it: typed records
that the budget, the checkpoint's accounting and a replay read instead of dicts.

A leaf module (it imports nothing of skillopt), so the `RolloutCache` contract can
name `Spend` without loading the store.

Invariant: a record is a sum over ledger rows and never changes once built;
`cost` is the sum of known prices (None while no row had one), `cost_complete`
False as soon as one row with calls had no price (then `cost` is a lower bound).
A row still pending (recorded before its call was sent, never settled: the
process was killed while it was in flight) is in every total at its estimate,
and `estimated` / `estimated_cost` say how much of the totals that is.
Their dictionary form (`to_dict`) is built here and only here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# who paid: the target (rollouts), the optimizer, the judge scoring answers
Role = Literal["target", "optimizer", "judge"]
ROLES: tuple[Role, ...] = ("target", "optimizer", "judge")


@dataclass(frozen=True)
class RoleSpend:
    """One role's totals. `cached`: things served from the store instead of paid
    (replies for the optimizer); `rows`: ledger rows summed; `unpriced`: rows with
    calls but no known price; `cached_input_tokens`: the part of `input_tokens`
    read from a provider's prompt cache; `estimated`: rows still pending (a call, or
    for the target a rollout, in flight when its process was killed), counted in
    `calls` (one each), in the target's `rollouts` and in `cost` at their estimate,
    `estimated_cost` of `cost`."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost: float | None = None
    cost_complete: bool = True
    unpriced: int = 0
    cached: int = 0
    rows: int = 0
    estimated: int = 0
    estimated_cost: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TargetSpend(RoleSpend):
    """The target's totals: also `rollouts` run (`cached`: rollouts served from the
    store, paid for by someone else) and, of those run, `unscored`."""

    rollouts: int = 0
    unscored: int = 0


@dataclass(frozen=True)
class Spend:
    """What one run paid: every role, zero where it paid nothing."""

    target: TargetSpend = field(default_factory=TargetSpend)
    optimizer: RoleSpend = field(default_factory=RoleSpend)
    judge: RoleSpend = field(default_factory=RoleSpend)

    def roles(self) -> Iterator[tuple[Role, RoleSpend]]:
        """Each role with its totals, the target first."""
        yield "target", self.target
        yield "optimizer", self.optimizer
        yield "judge", self.judge

    @property
    def cost(self) -> float:
        """The sum of every known price (0 when none is known)."""
        return sum(r.cost or 0.0 for _, r in self.roles())

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: totals.to_dict() for name, totals in self.roles()}
