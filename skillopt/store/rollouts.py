"""The SQLite rollout store: every rollout ever run, keyed by its fingerprint.

`RolloutStore` is one object over one connection (`skillopt.store.connection`),
composed of its parts: the rows by fingerprint (here), the claims that keep
processes sharing a store from paying twice (`skillopt.store.claims`), and the
ledger of spend, replies and uses (`skillopt.store.ledger`); the schema and its
named migrations are in `skillopt.store.schema`.

Invariants:
- Only *scored* rows are served as hits. Unscored rows are kept for inspection
  and replaced when a later attempt scores; a scored row is never overwritten.
- A rollout's row, the release of its claim and its `spend` row are one
  transaction, so no rollout is stored unpaid and no payment lacks its rollout.
- Every text written is passed through `skillopt._util.text.safe` first: no lone
  surrogate or NUL can make SQLite raise, and no known secret is stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from skillopt.models.base import Usage
from skillopt.rollouts.record import Rollout, canonical_json
from skillopt.store.claims import Claims
from skillopt.store.connection import LEASE_TTL, chunks, safe_all
from skillopt.store.ledger import SPEND_INSERT, Ledger

_COLUMNS = (
    "key, skill_hash, task_id, sample, split, status, score, passed, feedback, answer, "
    "error, error_kind, trajectory, input_tokens, output_tokens, cost, latency_s, "
    "model_calls, cached_input_tokens"
)


class RolloutStore(Claims, Ledger):
    """Persistent rollouts. `path=":memory:"` gives a private in-memory store.

    `lease_ttl` is how long a claim on a rollout lives without renewal: how long
    other processes wait for a claimer that was killed."""

    def __init__(self, path: str | Path = ":memory:", *, lease_ttl: float = LEASE_TTL):
        super().__init__(path, lease_ttl=lease_ttl)
        self._skills_seen: set[str] = set()

    def __enter__(self) -> RolloutStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads --------------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, Rollout]:
        """Scored rollouts for the given keys (unscored rows are misses)."""
        keys = list(keys)
        out: dict[str, Rollout] = {}
        with self._lock:
            for chunk in chunks(keys):
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM rollouts WHERE status = 'scored' AND key IN ({marks})",
                    chunk,
                ).fetchall()
                for row in rows:
                    out[row[0]] = _from_row(row)
        return out

    def get(self, key: str, *, include_unscored: bool = False) -> Rollout | None:
        where = "" if include_unscored else " AND status = 'scored'"
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM rollouts WHERE key = ?{where}", (key,)
            ).fetchone()
        return _from_row(row) if row else None

    def count(self, status: str | None = None) -> int:
        with self._lock:
            if status is None:
                return int(self._db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0])
            return int(
                self._db.execute(
                    "SELECT COUNT(*) FROM rollouts WHERE status = ?", (status,)
                ).fetchone()[0]
            )

    def used_by(self, run_id: str) -> list[tuple[Rollout, dict[str, Any]]]:
        """Every rollout the run used (`note_uses`), scored or not, with its
        fingerprint (which holds the task as it was run: prompt, expected): what a
        reader of the run shows of its answers."""
        cols = ", ".join(f"r.{c.strip()}" for c in _COLUMNS.split(","))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {cols}, r.fingerprint FROM rollouts r JOIN uses u ON u.key = r.key "
                "WHERE u.run_id = ? AND u.kind = 'rollout' ORDER BY r.task_id, r.sample",
                (run_id,),
            ).fetchall()
        out = []
        for row in rows:
            try:
                fp = json.loads(row[-1])
            except ValueError:  # a row written by hand: shown without its task
                fp = {}
            out.append((_from_row(row[:-1]), fp if isinstance(fp, dict) else {}))
        return out

    def skill_text(self, skill_hash: str) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text FROM skills WHERE hash = ?", (skill_hash,)
            ).fetchone()
        return str(row[0]) if row else None

    # -- writes -------------------------------------------------------------------
    def remember_skill(self, skill_hash: str, text: str) -> None:
        if skill_hash in self._skills_seen:
            return
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO skills VALUES (?, ?, ?)", (skill_hash, text, time.time())
            )
            self._skills_seen.add(skill_hash)

    def put(
        self,
        rollout: Rollout,
        fingerprint: dict[str, Any],
        run_id: str | None = None,
        *,
        reserved: int | None = None,
    ) -> None:
        """Insert or update one rollout and commit it. A scored row is final.

        In the same transaction the rollout's claim is released and, with `run_id`,
        its spend row (role 'target', kind 'rollout') is written: paid even when
        another process's scored row was there first. It replaces the pending row
        `reserved` (`Ledger.reserve`, written before the rollout started), so the
        rollout is counted once."""
        now = time.time()
        status = "scored" if rollout.scored else "unscored"
        fp, task_id, feedback, answer, error, trajectory = safe_all(
            canonical_json(fingerprint),
            rollout.task_id,
            rollout.feedback,
            rollout.answer,
            rollout.error,
            json.dumps(rollout.trajectory, ensure_ascii=False, default=str),
        )
        row = (
            rollout.key,
            fp,
            rollout.skill_hash,
            task_id,
            rollout.sample,
            rollout.split,
            status,
            rollout.score,
            None if rollout.passed is None else int(rollout.passed),
            feedback,
            answer,
            error,
            rollout.error_kind,
            trajectory,
            rollout.usage.input_tokens,
            rollout.usage.output_tokens,
            rollout.cost,
            rollout.latency_s,
            rollout.model_calls,
            rollout.usage.cached_input_tokens,
            now,
            now,
        )
        with self._write() as db:
            db.execute(
                """INSERT INTO rollouts (key, fingerprint, skill_hash, task_id, sample, split,
                       status, score, passed, feedback, answer, error, error_kind, trajectory,
                       input_tokens, output_tokens, cost, latency_s, model_calls,
                       cached_input_tokens, created_at, updated_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (key) DO UPDATE SET
                       status = excluded.status, score = excluded.score,
                       passed = excluded.passed, feedback = excluded.feedback,
                       answer = excluded.answer, error = excluded.error,
                       error_kind = excluded.error_kind, trajectory = excluded.trajectory,
                       input_tokens = excluded.input_tokens,
                       output_tokens = excluded.output_tokens, cost = excluded.cost,
                       latency_s = excluded.latency_s, model_calls = excluded.model_calls,
                       cached_input_tokens = excluded.cached_input_tokens,
                       attempts = rollouts.attempts + 1, updated_at = excluded.updated_at
                   WHERE rollouts.status = 'unscored'""",
                row,
            )
            if self.shared:
                db.execute("DELETE FROM claims WHERE key = ?", (rollout.key,))
            if reserved is not None:
                db.execute("DELETE FROM spend WHERE id = ? AND pending = 1", (reserved,))
            if run_id is not None:
                db.execute(
                    SPEND_INSERT,
                    (
                        run_id,
                        "target",
                        "rollout",
                        rollout.key,
                        1,
                        int(rollout.scored),
                        rollout.model_calls,
                        rollout.usage.input_tokens,
                        rollout.usage.output_tokens,
                        rollout.cost,
                        now,
                        rollout.usage.cached_input_tokens,
                    ),
                )


def _from_row(row: tuple[Any, ...]) -> Rollout:
    (
        key,
        skill_hash,
        task_id,
        sample,
        split,
        status,
        score,
        passed,
        feedback,
        answer,
        error,
        error_kind,
        trajectory,
        input_tokens,
        output_tokens,
        cost,
        latency_s,
        model_calls,
        cached_input_tokens,
    ) = row
    return Rollout(
        key=key,
        task_id=task_id,
        split=split,
        sample=sample,
        skill_hash=skill_hash,
        scored=status == "scored",
        score=score,
        passed=None if passed is None else bool(passed),
        feedback=feedback,
        answer=answer,
        error=error,
        error_kind=error_kind,
        usage=Usage(input_tokens, output_tokens, cached_input_tokens),
        cost=cost,
        latency_s=latency_s,
        model_calls=model_calls,
        trajectory=json.loads(trajectory),
    )
