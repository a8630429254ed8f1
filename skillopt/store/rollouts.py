"""The SQLite rollout store: every rollout ever run, keyed by its fingerprint.

Invariants:
- Schema changes are append-only named migrations (`m001_…`), recorded in the
  `migrations` table; a database is migrated forward on open, never rewritten.
- Only *scored* rows are served as hits. Unscored rows are kept for inspection
  and replaced when a later attempt scores; a scored row is never overwritten.
- Safe for many threads (one connection, one lock) and for several processes
  (WAL journal, busy timeout).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from skillopt.errors import InputError
from skillopt.models.base import Usage
from skillopt.rollout import Rollout, canonical_json


def m001_rollouts(db: sqlite3.Connection) -> None:
    db.execute("""
        CREATE TABLE rollouts (
            key TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            skill_hash TEXT NOT NULL,
            task_id TEXT NOT NULL,
            sample INTEGER NOT NULL,
            split TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('scored', 'unscored')),
            score REAL,
            passed INTEGER,
            feedback TEXT NOT NULL DEFAULT '',
            answer TEXT,
            error TEXT,
            error_kind TEXT,
            trajectory TEXT NOT NULL DEFAULT '{}',
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            latency_s REAL NOT NULL DEFAULT 0,
            model_calls INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 1,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""")
    db.execute("CREATE INDEX rollouts_skill ON rollouts (skill_hash)")
    db.execute("CREATE INDEX rollouts_task ON rollouts (task_id)")


def m002_skills(db: sqlite3.Connection) -> None:
    """Skill texts by hash, so any stored rollout can be traced to the exact text."""
    db.execute("""
        CREATE TABLE skills (
            hash TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            created_at REAL NOT NULL
        )""")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [m001_rollouts, m002_skills]

_COLUMNS = ("key, skill_hash, task_id, sample, split, status, score, passed, feedback, answer, "
            "error, error_kind, trajectory, input_tokens, output_tokens, cost, latency_s, "
            "model_calls")


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations this database has not seen; return their names."""
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    done = {row[0] for row in db.execute("SELECT name FROM migrations")}
    applied = []
    for migration in MIGRATIONS:
        if migration.__name__ in done:
            continue
        with db:
            migration(db)
            db.execute("INSERT INTO migrations VALUES (?, ?)", (migration.__name__, time.time()))
        applied.append(migration.__name__)
    return applied


class RolloutStore:
    """Persistent rollouts. `path=":memory:"` gives a private in-memory store."""

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"cannot create the store directory: {exc.strerror}",
                                 path=self.path) from None
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30,
                                       isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            migrate(self._db)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"not a usable rollout store: {exc}", path=self.path) from None
        self._lock = threading.Lock()
        self._skills_seen: set[str] = set()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RolloutStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reads --------------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, Rollout]:
        """Scored rollouts for the given keys (unscored rows are misses)."""
        keys = list(keys)
        out: dict[str, Rollout] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT {_COLUMNS} FROM rollouts WHERE status = 'scored' AND key IN ({marks})",
                    chunk).fetchall()
                for row in rows:
                    out[row[0]] = _from_row(row)
        return out

    def get(self, key: str, *, include_unscored: bool = False) -> Rollout | None:
        where = "" if include_unscored else " AND status = 'scored'"
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM rollouts WHERE key = ?{where}",
                                   (key,)).fetchone()
        return _from_row(row) if row else None

    def count(self, status: str | None = None) -> int:
        with self._lock:
            if status is None:
                return self._db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]
            return self._db.execute("SELECT COUNT(*) FROM rollouts WHERE status = ?",
                                    (status,)).fetchone()[0]

    def skill_text(self, skill_hash: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT text FROM skills WHERE hash = ?",
                                   (skill_hash,)).fetchone()
        return row[0] if row else None

    # -- writes -------------------------------------------------------------------
    def remember_skill(self, skill_hash: str, text: str) -> None:
        if skill_hash in self._skills_seen:
            return
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO skills VALUES (?, ?, ?)",
                             (skill_hash, text, time.time()))
            self._skills_seen.add(skill_hash)

    def put(self, rollout: Rollout, fingerprint: dict) -> None:
        """Insert or update one rollout and commit it. A scored row is final."""
        now = time.time()
        status = "scored" if rollout.scored else "unscored"
        row = (rollout.key, canonical_json(fingerprint), rollout.skill_hash, rollout.task_id,
               rollout.sample, rollout.split, status, rollout.score,
               None if rollout.passed is None else int(rollout.passed), rollout.feedback,
               rollout.answer, rollout.error, rollout.error_kind,
               json.dumps(rollout.trajectory, ensure_ascii=False, default=str),
               rollout.usage.input_tokens, rollout.usage.output_tokens, rollout.cost,
               rollout.latency_s, rollout.model_calls, now, now)
        with self._lock:
            self._db.execute(
                """INSERT INTO rollouts (key, fingerprint, skill_hash, task_id, sample, split,
                       status, score, passed, feedback, answer, error, error_kind, trajectory,
                       input_tokens, output_tokens, cost, latency_s, model_calls, created_at,
                       updated_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (key) DO UPDATE SET
                       status = excluded.status, score = excluded.score,
                       passed = excluded.passed, feedback = excluded.feedback,
                       answer = excluded.answer, error = excluded.error,
                       error_kind = excluded.error_kind, trajectory = excluded.trajectory,
                       input_tokens = excluded.input_tokens,
                       output_tokens = excluded.output_tokens, cost = excluded.cost,
                       latency_s = excluded.latency_s, model_calls = excluded.model_calls,
                       attempts = rollouts.attempts + 1, updated_at = excluded.updated_at
                   WHERE rollouts.status = 'unscored'""", row)


def _from_row(row: tuple) -> Rollout:
    (key, skill_hash, task_id, sample, split, status, score, passed, feedback, answer, error,
     error_kind, trajectory, input_tokens, output_tokens, cost, latency_s, model_calls) = row
    return Rollout(key=key, task_id=task_id, split=split, sample=sample, skill_hash=skill_hash,
                   scored=status == "scored", score=score,
                   passed=None if passed is None else bool(passed), feedback=feedback,
                   answer=answer, error=error, error_kind=error_kind,
                   usage=Usage(input_tokens, output_tokens), cost=cost, latency_s=latency_s,
                   model_calls=model_calls, trajectory=json.loads(trajectory))
