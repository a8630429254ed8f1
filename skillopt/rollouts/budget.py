"""Spend control: limits a run may not cross, checked before every batch of calls.

A `Budget` holds the limits (`--budget-usd`, `--max-target-rollouts`,
`--max-optimizer-calls`, `--time-limit`); a `Guard` checks them before each batch
of paid work (a batch of rollouts the store cannot serve, a step's optimizer calls,
an epoch-end call) against what the run has spent so far, read from the store's
spend ledger, and raises `BudgetExceeded` instead of starting a batch that would
cross a limit. Nothing already paid for is lost: every rollout and call is in the
store, and the checkpoint says where the run stopped.

Invariants (the bounds the tests check):
- Rollouts and optimizer calls: a batch is started only when all of it fits, so
  `--max-target-rollouts` is never exceeded, and `--max-optimizer-calls` only by
  the repair re-asks and provider retries of one step's calls (a call is projected
  as one request).
- USD: a batch starts only when the spend so far plus its projection (the run's own
  average price per rollout and per optimizer call, or the dry run's estimate
  before any price is known) stays within the budget. Whatever the projection, the
  spend when a run stops is below the budget plus the cost of one batch (the
  largest is a validation pass or a training batch of rollouts, or one step's
  optimizer calls).
- Time: no batch starts after the limit; the batch in flight finishes, so a run
  ends within the limit plus one batch's time.
- What was sent counts, answered or not: every rollout and call is in the ledger
  (at its estimate, `Priors`) before it is sent, so a run resumed after a kill
  counts the ones that were in flight against every limit, and
  `--max-optimizer-calls` holds across kills.
- Every role counts: target rollouts (an agent CLI's own reported cost included),
  optimizer calls and judge calls. A price that is unknown is never counted as 0:
  with a USD budget set, an unpriced model is refused up front unless allowed
  (`--allow-unpriced`), and then the budget covers the priced calls only.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from skillopt._util import display
from skillopt.errors import InputError, SkilloptError
from skillopt.rollouts.spend import Spend

# what each limit is called on the command line and in settings
FLAGS = {
    "usd": "--budget-usd",
    "target_rollouts": "--max-target-rollouts",
    "optimizer_calls": "--max-optimizer-calls",
    "time_limit": "--time-limit",
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr|d)?\s*$", re.I)
_UNIT = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "d": 86400}


def parse_duration(value: object) -> float:
    """Seconds from a number (seconds) or a text such as '90s', '45m', '2h'."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 300, '45m' or '2h'")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration: use seconds, or e.g. '45m' or '2h'")
        seconds = float(match.group(1)) * _UNIT[(match.group(2) or "s").lower()]
    if seconds <= 0:
        raise ValueError("a time limit must be more than 0 seconds")
    return seconds


def duration_text(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


class Limits(Protocol):
    """Where a `Budget` is read from: the settings' spend-control fields (`Settings`
    has them; this module does not import the settings, which import it)."""

    @property
    def budget_usd(self) -> float | None: ...
    @property
    def max_target_rollouts(self) -> int | None: ...
    @property
    def max_optimizer_calls(self) -> int | None: ...
    @property
    def time_limit(self) -> float | None: ...
    @property
    def allow_unpriced(self) -> bool: ...


@dataclass(frozen=True)
class Budget:
    """The limits of one invocation; None: no limit. The USD, rollout and call limits
    cover the whole run (a resumed run counts what it spent before); the time limit
    is this invocation's wall clock."""

    usd: float | None = None
    target_rollouts: int | None = None
    optimizer_calls: int | None = None
    time_limit: float | None = None  # seconds
    allow_unpriced: bool = False

    @classmethod
    def of(cls, settings: Limits) -> Budget:
        """The budget a `Settings` holds."""
        return cls(
            usd=settings.budget_usd,
            target_rollouts=settings.max_target_rollouts,
            optimizer_calls=settings.max_optimizer_calls,
            time_limit=settings.time_limit,
            allow_unpriced=settings.allow_unpriced,
        )

    @property
    def is_set(self) -> bool:
        return any(
            v is not None
            for v in (self.usd, self.target_rollouts, self.optimizer_calls, self.time_limit)
        )

    def describe(self) -> list[str]:
        """Each limit that is set, as its flag and value ('--budget-usd $5.00')."""
        out = []
        if self.usd is not None:
            out.append(f"{FLAGS['usd']} {usd(self.usd)}")
        if self.target_rollouts is not None:
            out.append(f"{FLAGS['target_rollouts']} {self.target_rollouts:,}")
        if self.optimizer_calls is not None:
            out.append(f"{FLAGS['optimizer_calls']} {self.optimizer_calls:,}")
        if self.time_limit is not None:
            out.append(f"{FLAGS['time_limit']} {duration_text(self.time_limit)}")
        return out


@dataclass(frozen=True)
class Spent:
    """What a run has paid so far, every role together."""

    usd: float = 0.0  # the sum of known prices
    unpriced: int = 0  # paid calls or rollouts whose price is unknown
    target_rollouts: int = 0  # rollouts run (not those served from the store)
    target_usd: float = 0.0  # of `usd`: rollouts and the judge calls scoring them
    optimizer_calls: int = 0
    optimizer_usd: float = 0.0

    @classmethod
    def from_ledger(cls, spend: Spend) -> Spent:
        """From `RolloutStore.spend(run_id)`."""
        usd = target_usd = optimizer_usd = 0.0
        unpriced = 0
        for role, totals in spend.roles():
            cost = totals.cost or 0.0
            usd += cost
            if role == "optimizer":
                optimizer_usd += cost
            else:  # target, judge: the price of scoring rollouts
                target_usd += cost
            unpriced += totals.unpriced
        return cls(
            usd=usd,
            unpriced=unpriced,
            target_rollouts=spend.target.rollouts,
            target_usd=target_usd,
            optimizer_calls=spend.optimizer.calls,
            optimizer_usd=optimizer_usd,
        )


def usd(amount: float) -> str:
    """A budget in dollars as the user gave it: '$5.00', '$0.10', '$0.001'."""
    if round(amount, 2) == amount:
        return f"${amount:,.2f}"
    return f"${amount:,.6f}".rstrip("0")


def why(limit: str, where: str, detail: str) -> str:
    at = f" before {where}" if where else ""
    return f"{FLAGS[limit]} reached{at} ({detail})"


class BudgetExceeded(SkilloptError):
    """A batch would cross a budget, so it was not started: the run stopped cleanly.
    `limit` is the budget's key in `Budget` ('usd', 'target_rollouts', …)."""

    exit_code = 3

    def __init__(self, message: str, *, limit: str, where: str, detail: str):
        super().__init__(message)
        self.limit = limit
        self.where = where
        self.detail = detail

    @property
    def flag(self) -> str:
        return FLAGS[self.limit]

    @property
    def why(self) -> str:
        """Which limit, before what, and the numbers: '--max-target-rollouts reached
        before step 3 · val (candidate) (60 rollouts run, 12 more needed, limit 60)'."""
        return why(self.limit, self.where, self.detail)

    def to_dict(self) -> dict[str, str]:
        return {"reason": "budget", "budget": self.flag, "where": self.where, "detail": self.detail}


@dataclass(frozen=True)
class Priors:
    """Prices to project with before the run has paid anything: USD per rollout and
    per optimizer call (None: unknown, projected as 0). They also price a rollout or
    call recorded before it is sent (`Ledger.reserve`): one left pending by a killed
    process counts at that estimate."""

    rollout_usd: float | None = None
    call_usd: float | None = None

    def rollout(self, s: Spent) -> float | None:
        """What one more rollout is estimated to cost: the run's own average price per
        rollout once it has one, else the dry run's."""
        if s.target_rollouts and s.target_usd:
            return s.target_usd / s.target_rollouts
        return self.rollout_usd

    def call(self, s: Spent) -> float | None:
        """What one more optimizer call is estimated to cost, likewise."""
        if s.optimizer_calls and s.optimizer_usd:
            return s.optimizer_usd / s.optimizer_calls
        return self.call_usd


class Guard:
    """Checks a `Budget` before each batch. `spent` reads what the run has paid so far
    (the store's ledger), `clock` is the monotonic clock the time limit runs on, from
    when the guard is made."""

    def __init__(
        self,
        budget: Budget,
        spent: Callable[[], Spent],
        *,
        priors: Priors = Priors(),
        clock: Callable[[], float] = time.monotonic,
    ):
        self.budget = budget
        self._spent = spent
        self.priors = priors
        self._clock = clock
        self.started = clock()

    def elapsed(self) -> float:
        return self._clock() - self.started

    def before(self, *, rollouts: int = 0, calls: int = 0, where: str = "") -> None:
        """Raise `BudgetExceeded` unless `rollouts` more rollouts and `calls` more
        optimizer calls fit every limit."""
        b = self.budget
        if not b.is_set:
            return
        if b.time_limit is not None and self.elapsed() >= b.time_limit:
            self._stop(
                "time_limit",
                where,
                f"{duration_text(round(self.elapsed(), 1))} elapsed of "
                f"{duration_text(b.time_limit)}",
            )
        if not rollouts and not calls:
            return
        s = self._spent()
        if (
            b.target_rollouts is not None
            and rollouts
            and s.target_rollouts + rollouts > b.target_rollouts
        ):
            self._stop(
                "target_rollouts",
                where,
                f"{s.target_rollouts:,} rollouts run, {rollouts:,} more needed, "
                f"limit {b.target_rollouts:,}",
            )
        if (
            b.optimizer_calls is not None
            and calls
            and s.optimizer_calls + calls > b.optimizer_calls
        ):
            self._stop(
                "optimizer_calls",
                where,
                f"{s.optimizer_calls:,} optimizer calls made, {calls:,} more needed, "
                f"limit {b.optimizer_calls:,}",
            )
        if b.usd is not None:
            per_rollout = self.priors.rollout(s) or 0.0
            projected = rollouts * per_rollout + calls * (self.priors.call(s) or 0.0)
            if s.usd >= b.usd or s.usd + projected > b.usd:
                self._stop(
                    "usd",
                    where,
                    f"{display.money(s.usd)} spent, the next batch ≈{display.money(projected)}, "
                    f"budget {usd(b.usd)}",
                )

    def _stop(self, limit: str, where: str, detail: str) -> None:
        raise BudgetExceeded(
            f"budget {why(limit, where, detail)}", limit=limit, where=where, detail=detail
        )


def refuse_unpriced(budget: Budget, unpriced: Iterable[str]) -> list[str]:
    """With a USD budget, the roles whose price is unknown (e.g. "target
    openai/my-model: no price known") are refused up front, unless the budget allows
    them; then they are returned as warnings to say once."""
    names = list(unpriced)
    if budget.usd is None or not names:
        return []
    listed = "; ".join(names)
    if not budget.allow_unpriced:
        raise InputError(
            f"--budget-usd cannot be enforced: the price of {listed} is unknown, so its "
            "spend cannot be counted. Pass --allow-unpriced to run anyway (the budget then "
            "covers the priced calls only, and the unpriced ones are counted as unknown)",
            field="budget_usd",
        )
    return [
        f"--budget-usd covers priced calls only: the price of {listed} is unknown "
        "(--allow-unpriced); those calls are counted, not priced"
    ]
