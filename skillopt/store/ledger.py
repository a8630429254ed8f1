"""The ledger: what each run paid (`spend`), the optimizer replies kept by the key of
their request (`replies`), and which rollouts and replies each run used (`uses`).

Invariants: `spend` has one row per paid thing (a rollout, an optimizer or judge
call, a count served from the store) written in the transaction that records it,
so a run's totals can be read back after any crash; they are summed into typed
records (`skillopt.rollouts.spend`) here and only here. A call or rollout is
recorded *before* it is sent, as a pending row at its estimate (`reserve`), and
settled with what it really cost once it returns (`settle`, or the rollout's own
row replacing it in `RolloutStore.put`): a process killed while it is in flight
leaves it pending, counted at its estimate in every total and budget, because the
provider may have billed it. Only a settle changes a row, and only a pending one. The first reply
stored under a key stays. Texts are made safe before they are written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from skillopt.models.base import Usage
from skillopt.rollouts.record import canonical_json
from skillopt.rollouts.spend import ROLES, Role, RoleSpend, Spend, TargetSpend
from skillopt.store.connection import Connection, safe_all

SPEND_INSERT = (
    "INSERT INTO spend (run_id, role, kind, key, rollouts, scored, calls, "
    "input_tokens, output_tokens, cost, at, cached_input_tokens) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class Ledger(Connection):
    """The reply, use and spend methods of `RolloutStore`, over its connection."""

    # -- optimizer replies, and what each run used ----------------------------------
    def get_reply(self, key: str) -> dict[str, Any] | None:
        """A stored reply: text, input_tokens, output_tokens, cost, finish_reason."""
        with self._lock:
            row = self._db.execute(
                "SELECT text, input_tokens, output_tokens, cost, finish_reason "
                "FROM replies WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        text, tin, tout, cost, finish = row
        return {
            "text": text,
            "input_tokens": tin,
            "output_tokens": tout,
            "cost": cost,
            "finish_reason": finish,
        }

    def put_reply(
        self,
        key: str,
        model: dict[str, Any],
        request: dict[str, Any],
        text: str,
        usage: Usage,
        cost: float | None,
        finish_reason: str | None = None,
    ) -> None:
        """Keep a reply; the first one stored under a key stays."""
        model_json, request_json, text_safe = safe_all(
            canonical_json(model), canonical_json(request), text
        )
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model_json,
                    request_json,
                    text_safe,
                    usage.input_tokens,
                    usage.output_tokens,
                    cost,
                    finish_reason,
                    time.time(),
                ),
            )

    def note_uses(self, run_id: str, kind: str, keys: Iterable[str]) -> None:
        """Record that `run_id` used these rollouts ('rollout') or replies ('reply')."""
        rows = [(run_id, kind, k) for k in keys]
        if rows:
            with self._write() as db:
                db.executemany("INSERT OR IGNORE INTO uses VALUES (?, ?, ?)", rows)

    def uses(self, run_id: str, kind: str) -> list[str]:
        with self._lock:
            return [
                r[0]
                for r in self._db.execute(
                    "SELECT key FROM uses WHERE run_id = ? AND kind = ? ORDER BY key",
                    (run_id, kind),
                )
            ]

    # -- spend: the ledger of what a run paid for --------------------------------------
    def record_call(
        self,
        run_id: str,
        role: Role,
        kind: str,
        calls: int = 1,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost: float | None = None,
        *,
        cached_input_tokens: int = 0,
    ) -> None:
        """Record one paid thing that is not a rollout (an optimizer call, …).
        `cached_input_tokens` are the part of `input_tokens` read from the provider's
        prompt cache."""
        with self._write() as db:
            db.execute(
                SPEND_INSERT,
                (
                    run_id,
                    role,
                    kind,
                    None,
                    None,
                    None,
                    calls,
                    input_tokens,
                    output_tokens,
                    cost,
                    time.time(),
                    cached_input_tokens,
                ),
            )

    def reserve(
        self, run_id: str, role: Role, kind: str, cost: float | None, *, key: str | None = None
    ) -> int:
        """Record one call (kind 'call') or rollout ('rollout', with its `key`) about to
        be sent, as pending at the estimated `cost` (None: unknown); the id to settle
        it with. A rollout counts as one rollout of one call until settled."""
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO spend (run_id, role, kind, key, rollouts, calls, cost, at, "
                "pending) VALUES (?, ?, ?, ?, ?, 1, ?, ?, 1)",
                (run_id, role, kind, key, 1 if kind == "rollout" else None, cost, time.time()),
            )
            reservation = cursor.lastrowid
        assert reservation is not None  # an INSERT always gives one
        return reservation

    def settle(
        self,
        reservation: int,
        calls: int,
        usage: Usage,
        cost: float | None,
    ) -> None:
        """A reserved call returned (answered, or failed after `calls` requests): its
        row now says what it cost."""
        with self._write() as db:
            db.execute(
                "UPDATE spend SET pending = 0, calls = ?, input_tokens = ?, "
                "output_tokens = ?, cost = ?, cached_input_tokens = ?, at = ? "
                "WHERE id = ? AND pending = 1",
                (
                    calls,
                    usage.input_tokens,
                    usage.output_tokens,
                    cost,
                    usage.cached_input_tokens,
                    time.time(),
                    reservation,
                ),
            )

    def record_cached(self, run_id: str, count: int) -> None:
        """Record `count` rollouts served from the store (paid for by someone else)."""
        if count:
            with self._write() as db:
                db.execute(
                    SPEND_INSERT,
                    (run_id, "target", "cached", None, count, count, 0, 0, 0, None, time.time(), 0),
                )

    def spend(self, run_id: str) -> Spend:
        """What `run_id` paid, per role (see `Spend`): for the target, the rollouts run,
        those served from the store (`cached`) and those run but not scored
        (`unscored`); for every role its calls, tokens, cost (the sum of known
        prices, None if none is known) and whether every priced row had a price."""
        with self._lock:
            rows = self._db.execute(
                """SELECT role, kind, COUNT(*), COALESCE(SUM(rollouts), 0),
                          SUM(CASE WHEN scored = 0 THEN 1 ELSE 0 END), SUM(calls),
                          SUM(input_tokens), SUM(output_tokens), SUM(cost),
                          SUM(CASE WHEN calls > 0 AND cost IS NULL THEN 1 ELSE 0 END),
                          SUM(cached_input_tokens), SUM(pending),
                          SUM(CASE WHEN pending = 1 THEN cost ELSE 0 END)
                   FROM spend WHERE run_id = ? GROUP BY role, kind""",
                (run_id,),
            ).fetchall()
        totals: dict[str, dict[str, Any]] = {role: _zero(role) for role in ROLES}
        for row in rows:
            role, kind, n, rollouts, unscored, calls, tin, tout, cost, unpriced, tcached = row[:11]
            pending, pending_cost = row[11:]
            if role not in totals:
                continue  # this code writes no other role (`Role`)
            t = totals[role]
            t["rows"] += n
            t["calls"] += calls
            t["input_tokens"] += tin
            t["output_tokens"] += tout
            t["cached_input_tokens"] += tcached
            if cost is not None:
                t["cost"] = (t["cost"] or 0.0) + cost
            t["cost_complete"] = t["cost_complete"] and not unpriced
            t["unpriced"] += unpriced
            t["estimated"] += pending
            t["estimated_cost"] += pending_cost or 0.0
            if role == "target":
                if kind == "rollout":
                    t["rollouts"] += n
                    t["unscored"] += unscored
                elif kind == "cached":
                    t["cached"] += rollouts
            elif kind == "cached":  # replies served from the store
                t["cached"] += n
        return Spend(
            target=TargetSpend(**totals["target"]),
            optimizer=RoleSpend(**totals["optimizer"]),
            judge=RoleSpend(**totals["judge"]),
        )

    def spend_timeline(self, run_id: str) -> list[LedgerRow]:
        """The ledger rows of `run_id` in the order they were written."""
        with self._lock:
            rows = self._db.execute(
                """SELECT at, role, kind, rollouts, scored, calls, input_tokens,
                          output_tokens, cost
                   FROM spend WHERE run_id = ? ORDER BY at, id""",
                (run_id,),
            ).fetchall()
        return [LedgerRow(*row) for row in rows]


@dataclass(frozen=True)
class LedgerRow:
    """One row of the spend ledger, as `spend_timeline` reads it back: `at` (Unix
    seconds, as written), `role`, `kind` (`rollout`, `cached`, or a call's kind),
    `rollouts` and `scored` (None for calls that are not rollouts), `calls`, tokens,
    and `cost` (None: unpriced)."""

    at: float
    role: str
    kind: str
    rollouts: int | None
    scored: int | None
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None


def _zero(role: str) -> dict[str, Any]:
    """A role's totals before any row: the fields of its record, as numbers to add to."""
    zero = TargetSpend() if role == "target" else RoleSpend()
    return zero.to_dict()
