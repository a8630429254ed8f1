"""Stopping a run whose tasks all fail for one cause (a bad key, no quota, a server
answering 500 to everything) instead of paying for every task to fail.

Invariants: a scored rollout, or one cancelled, resets the count; a run stops
when `STOP_AFTER` rollouts in a row fail with the same systemic kind, or with the
same message of any other kind (timeouts included), or when every rollout of a
smaller batch does, at least two, for a kind no retry can fix (`HOPELESS`). The
rollouts that failed stay unscored, never zeros.
"""

from __future__ import annotations

import re

from skillopt.errors import SystemicFailure
from skillopt.rollouts.record import Rollout

STOP_AFTER = 5
SYSTEMIC = frozenset({"auth", "quota", "not_found", "rate_limit", "not_discovered", "sandbox"})
# kinds no retry can fix: a bad key, no credit, an unknown model, a skill the agent did
# not discover where it was installed, a sandbox that cannot start
HOPELESS = frozenset({"auth", "quota", "not_found", "not_discovered", "sandbox"})
# what varies between two failures of the same cause: numbers, and ids or hashes
# (a word of six or more characters holding a digit)
_VARYING = re.compile(r"\b(?=\w*\d)\w{6,}\b|\d+")


def failure_shape(message: str | None) -> str:
    """A failure message with what varies from task to task (numbers, ids, hashes)
    blanked, cut to its start: two rollouts with the same shape failed the same way."""
    return _VARYING.sub("#", message or "")[:160]


class FailureWatch:
    """Counts the rollouts that fail the same way in a row, across batches."""

    def __init__(self) -> None:
        self._kind: str | None = None  # the failure being counted (kind, or kind:shape)
        self._count = 0

    def see(self, rollout: Rollout, batch: int) -> None:
        """Raise `SystemicFailure` when `rollout` makes too many in a row that failed
        the same way (`batch`: how many rollouts its batch runs)."""
        if rollout.scored or rollout.error_kind in (None, "cancelled"):
            self._kind, self._count = None, 0
            return
        systemic = rollout.error_kind in SYSTEMIC
        same = (
            rollout.error_kind
            if systemic
            else f"{rollout.error_kind}:{failure_shape(rollout.error)}"
        )
        self._count = self._count + 1 if self._kind == same else 1
        self._kind = same
        limit = max(2, min(STOP_AFTER, batch)) if rollout.error_kind in HOPELESS else STOP_AFTER
        if self._count >= limit:
            count = self._count
            self._kind, self._count = None, 0
            raise SystemicFailure(
                f"stopped: {count} tasks in a row failed the same way ({rollout.error_kind}): "
                f"{rollout.error}. These are unscored, not zeros; fix the cause and run again "
                "(every finished rollout is kept)"
            )
