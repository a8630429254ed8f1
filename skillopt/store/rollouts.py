"""The SQLite rollout store: every rollout ever run, keyed by its fingerprint.

Invariants:
- Schema changes are append-only named migrations (`m001_…`), recorded in the
  `migrations` table; a database is migrated forward on open, never rewritten.
- Only *scored* rows are served as hits. Unscored rows are kept for inspection
  and replaced when a later attempt scores; a scored row is never overwritten.
- Safe for many threads (one connection, one lock) and for several processes
  (WAL journal, busy timeout). Opening a new database from several processes at
  once is safe: migrations run inside one `BEGIN IMMEDIATE` transaction that
  re-reads the migrations table, so each is applied exactly once.
- Processes sharing a store on disk claim a rollout before running it (a lease in
  `claims` that expires unless renewed), so two evaluations of the same skill pay
  for each rollout once; a killed claimer stops renewing and its leases lapse. A
  rollout's row, the release of its claim and its `spend` row are one transaction.
- `spend` is an append-only ledger: one row per paid thing (a rollout, an optimizer
  call) written with it, so a run's totals can be read back after any crash.
- Every text written is passed through `skillopt._util.text.safe` first: no lone
  surrogate or NUL can make SQLite raise, and no known secret is stored.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skillopt._util.text import safe
from skillopt.errors import InputError
from skillopt.models.base import Usage
from skillopt.rollouts.record import Rollout, canonical_json
from skillopt.runs.rundir import output_dir

LEASE_TTL = 30.0  # seconds a claim lives unless renewed (the engine renews every ttl/3)
BUSY_TIMEOUT = 30.0
_CHUNK = 500  # keys per `IN (...)`: well under SQLite's bound-parameter limit


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


def m003_claims(db: sqlite3.Connection) -> None:
    """Leases on rollouts being run, so processes sharing a store pay for each once."""
    db.execute("""
        CREATE TABLE claims (
            key TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires REAL NOT NULL
        )""")


def m004_spend(db: sqlite3.Connection) -> None:
    """The ledger: one row per paid thing, written in the transaction that records it.
    `rollouts`/`scored` count rollouts (1 for a 'rollout' row, n for a 'cached' row,
    NULL for calls that are not rollouts); `cost` NULL means the price is unknown."""
    db.execute("""
        CREATE TABLE spend (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            role TEXT NOT NULL,
            kind TEXT NOT NULL,
            key TEXT,
            rollouts INTEGER,
            scored INTEGER,
            calls INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            at REAL NOT NULL
        )""")
    db.execute("CREATE INDEX spend_run ON spend (run_id)")


def m005_cached_tokens(db: sqlite3.Connection) -> None:
    """Input tokens read from the provider's prompt cache: part of `input_tokens`
    (never added to it), billed at the provider's cache-read price. Rows written
    before this migration read 0."""
    for table in ("rollouts", "spend"):
        db.execute(f"ALTER TABLE {table} ADD COLUMN cached_input_tokens INTEGER NOT NULL DEFAULT 0")


def m006_replies(db: sqlite3.Connection) -> None:
    """Optimizer replies by the key of their request (model fingerprint, messages,
    parameters, and the attempt for a sampled model), so an identical request is
    never paid for twice; and `uses`: which rollouts and replies each run used, so a
    run can be bundled with exactly its rows and replayed."""
    db.execute("""
        CREATE TABLE replies (
            key TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            request TEXT NOT NULL,
            text TEXT NOT NULL,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            finish_reason TEXT,
            created_at REAL NOT NULL
        )""")
    db.execute("""
        CREATE TABLE uses (
            run_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('rollout', 'reply')),
            key TEXT NOT NULL,
            PRIMARY KEY (run_id, kind, key)
        )""")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_rollouts,
    m002_skills,
    m003_claims,
    m004_spend,
    m005_cached_tokens,
    m006_replies,
]

_COLUMNS = (
    "key, skill_hash, task_id, sample, split, status, score, passed, feedback, answer, "
    "error, error_kind, trajectory, input_tokens, output_tokens, cost, latency_s, "
    "model_calls, cached_input_tokens"
)


def _applied(db: sqlite3.Connection) -> set[str]:
    try:
        return {row[0] for row in db.execute("SELECT name FROM migrations")}
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise  # a busy database is not a new one: never migrate it twice
        return set()


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations this database has not seen; return their names.

    Safe when several processes open a new database at once: the write lock is taken
    (`BEGIN IMMEDIATE`) before the migrations table is read, so whoever comes second
    sees what the first applied. All pending migrations commit together."""
    if _applied(db) >= {m.__name__ for m in MIGRATIONS}:
        return []  # the common case: no write lock needed
    applied = []
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        done = _applied(db)
        for migration in MIGRATIONS:
            if migration.__name__ not in done:
                migration(db)
                db.execute(
                    "INSERT INTO migrations VALUES (?, ?)", (migration.__name__, time.time())
                )
                applied.append(migration.__name__)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return applied


def _locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def _open(path: str) -> sqlite3.Connection:
    """Connect, switch to WAL and migrate. Switching a new database to WAL needs an
    exclusive lock and can report "database is locked" at once (without waiting for
    the busy timeout) while another process does the same, so that is retried."""
    db = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT, isolation_level=None)
    deadline = time.monotonic() + BUSY_TIMEOUT
    delay = 0.002
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            migrate(db)
            return db
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        except BaseException:
            db.close()
            raise


class RolloutStore:
    """Persistent rollouts. `path=":memory:"` gives a private in-memory store.

    `lease_ttl` is how long a claim on a rollout lives without renewal: how long
    other processes wait for a claimer that was killed."""

    def __init__(self, path: str | Path = ":memory:", *, lease_ttl: float = LEASE_TTL):
        self.path = str(path)
        self.lease_ttl = lease_ttl
        # only a database on disk can be shared with another process
        self.shared = self.path not in (":memory:", "")
        if self.shared:
            try:
                output_dir(Path(self.path).parent)
            except OSError as exc:
                raise InputError(
                    f"cannot create the store directory: {exc.strerror}", path=self.path
                ) from None
        try:
            self._db = _open(self.path)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"not a usable rollout store: {exc}", path=self.path) from None
        self._lock = threading.Lock()
        self._skills_seen: set[str] = set()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the store's lock. IMMEDIATE takes SQLite's
        write lock up front, so reads inside it are not stale when it writes."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

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
            for chunk in _chunks(keys):
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
                return self._db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0]
            return self._db.execute(
                "SELECT COUNT(*) FROM rollouts WHERE status = ?", (status,)
            ).fetchone()[0]

    def skill_text(self, skill_hash: str) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text FROM skills WHERE hash = ?", (skill_hash,)
            ).fetchone()
        return row[0] if row else None

    # -- writes -------------------------------------------------------------------
    def remember_skill(self, skill_hash: str, text: str) -> None:
        if skill_hash in self._skills_seen:
            return
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO skills VALUES (?, ?, ?)", (skill_hash, text, time.time())
            )
            self._skills_seen.add(skill_hash)

    def put(self, rollout: Rollout, fingerprint: dict, run_id: str | None = None) -> None:
        """Insert or update one rollout and commit it. A scored row is final.

        In the same transaction the rollout's claim is released and, with `run_id`,
        its spend row (role 'target', kind 'rollout') is written: paid even when
        another process's scored row was there first."""
        now = time.time()
        status = "scored" if rollout.scored else "unscored"
        fp, task_id, feedback, answer, error, trajectory = _safe_all(
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
            if run_id is not None:
                db.execute(
                    _SPEND_INSERT,
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

    # -- claims: leases that keep processes sharing the store from paying twice ------
    def claim_many(self, keys: Iterable[str], owner: str, ttl: float | None = None) -> set[str]:
        """Claim `keys` for `owner` for `ttl` seconds (default `lease_ttl`); return the
        keys now held by `owner`. A key is claimable when nobody holds it, its lease
        expired, or `owner` already holds it, and it has no scored row (then it is
        served, not run). An in-memory store is private: every key is the caller's."""
        keys = list(keys)
        if not self.shared:
            return set(keys)
        ttl = self.lease_ttl if ttl is None else ttl
        mine: set[str] = set()
        with self._write() as db:
            now = time.time()
            for chunk in _chunks(keys):
                blocked = self._blocked(chunk, owner, now)
                new = [k for k in chunk if k not in blocked]
                db.executemany(
                    "INSERT OR REPLACE INTO claims VALUES (?, ?, ?)",
                    [(k, owner, now + ttl) for k in new],
                )
                mine.update(new)
        return mine

    def _blocked(self, keys: list[str], owner: str, now: float) -> set[str]:
        """Of `keys` (at most one chunk), those with a scored row or a live lease
        held by someone else."""
        marks = ",".join("?" * len(keys))
        blocked = {
            r[0]
            for r in self._db.execute(
                f"SELECT key FROM rollouts WHERE status = 'scored' AND key IN ({marks})", keys
            )
        }
        held = self._db.execute(
            f"SELECT key, owner FROM claims WHERE key IN ({marks}) AND owner != ? AND expires > ?",
            (*keys, owner, now),
        ).fetchall()
        dead: dict[str, bool] = {}
        for key, holder in held:
            if holder not in dead:
                dead[holder] = owner_is_gone(holder)
            if not dead[holder]:
                blocked.add(key)
        return blocked

    def renew(self, owner: str, ttl: float | None = None) -> int:
        """Extend every lease `owner` holds by `ttl` from now; return how many."""
        if not self.shared:
            return 0
        ttl = self.lease_ttl if ttl is None else ttl
        with self._lock:
            return self._db.execute(
                "UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + ttl, owner)
            ).rowcount

    def release(self, keys: Iterable[str], owner: str) -> None:
        """Give up `owner`'s claims on `keys` (an attempt that ended without a row)."""
        keys = list(keys)
        if not self.shared or not keys:
            return
        with self._write() as db:
            for chunk in _chunks(keys):
                db.execute(
                    f"DELETE FROM claims WHERE owner = ? AND key IN ({','.join('?' * len(chunk))})",
                    (owner, *chunk),
                )

    # -- optimizer replies, and what each run used ----------------------------------
    def get_reply(self, key: str) -> dict | None:
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
        model: dict,
        request: dict,
        text: str,
        usage: Usage,
        cost: float | None,
        finish_reason: str | None = None,
    ) -> None:
        """Keep a reply; the first one stored under a key stays."""
        model_json, request_json, text_safe = _safe_all(
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
        role: str,
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
                _SPEND_INSERT,
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

    def record_cached(self, run_id: str, count: int) -> None:
        """Record `count` rollouts served from the store (paid for by someone else)."""
        if count:
            with self._write() as db:
                db.execute(
                    _SPEND_INSERT,
                    (run_id, "target", "cached", None, count, count, 0, 0, 0, None, time.time(), 0),
                )

    def spend(self, run_id: str) -> dict[str, dict]:
        """What `run_id` paid, per role. Always has 'target' and 'optimizer'.

        'target': `rollouts` run, `cached` (served from the store), `unscored` (run,
        not scored), `calls`, `input_tokens`, `output_tokens`, `cached_input_tokens`
        (the part of `input_tokens` read from a provider's prompt cache), `cost` (sum
        of known prices, None if none known) and `cost_complete` (no row with calls
        but no price), `unpriced` (rows with calls but no price). Other roles: `calls`, tokens, `cost`, `cost_complete` and
        `rows`."""
        with self._lock:
            rows = self._db.execute(
                """SELECT role, kind, COUNT(*), COALESCE(SUM(rollouts), 0),
                          SUM(CASE WHEN scored = 0 THEN 1 ELSE 0 END), SUM(calls),
                          SUM(input_tokens), SUM(output_tokens), SUM(cost),
                          SUM(CASE WHEN calls > 0 AND cost IS NULL THEN 1 ELSE 0 END),
                          SUM(cached_input_tokens)
                   FROM spend WHERE run_id = ? GROUP BY role, kind""",
                (run_id,),
            ).fetchall()
        out: dict[str, dict] = {}
        for role in ("target", "optimizer"):
            _totals(out, role)
        for role, kind, n, rollouts, unscored, calls, tin, tout, cost, unpriced, tcached in rows:
            totals = _totals(out, role)
            totals["rows"] += n
            totals["calls"] += calls
            totals["input_tokens"] += tin
            totals["output_tokens"] += tout
            totals["cached_input_tokens"] += tcached
            if cost is not None:
                totals["cost"] = (totals["cost"] or 0.0) + cost
            totals["cost_complete"] = totals["cost_complete"] and not unpriced
            totals["unpriced"] += unpriced
            if role == "target":
                if kind == "rollout":
                    totals["rollouts"] += n
                    totals["unscored"] += unscored
                elif kind == "cached":
                    totals["cached"] += rollouts
            elif kind == "cached":  # replies served from the store
                totals["cached"] += n
        return out

    def spend_timeline(self, run_id: str) -> list[dict[str, Any]]:
        """The ledger rows of `run_id` in the order they were written: `at` (Unix
        seconds), `role`, `kind` (`rollout`, `cached`, or a call's kind), `rollouts`,
        `scored`, `calls`, `input_tokens`, `output_tokens`, `cost` (None: unpriced)."""
        with self._lock:
            rows = self._db.execute(
                """SELECT at, role, kind, rollouts, scored, calls, input_tokens,
                          output_tokens, cost
                   FROM spend WHERE run_id = ? ORDER BY at, id""",
                (run_id,),
            ).fetchall()
        names = ("at", "role", "kind", "rollouts", "scored", "calls")
        names += ("input_tokens", "output_tokens", "cost")
        return [dict(zip(names, row)) for row in rows]


_SPEND_INSERT = (
    "INSERT INTO spend (run_id, role, kind, key, rollouts, scored, calls, "
    "input_tokens, output_tokens, cost, at, cached_input_tokens) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _safe_all(*texts: str | None) -> list[str | None]:
    """`safe` applied to each text. Finding the known secrets is most of `safe`'s cost,
    so the texts are first checked together: when `safe` (which only replaces bad
    characters and secret substrings) leaves their concatenation unchanged, no text
    holds a bad character or a secret (a secret inside one text is inside the
    concatenation, and its mask is shorter than any secret), and each is kept as is."""
    joined = "\n".join(t for t in texts if t)
    if safe(joined) == joined:
        return list(texts)
    return [safe(t) for t in texts]


def _totals(out: dict[str, dict], role: str) -> dict:
    if role not in out:
        out[role] = {
            "calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cached_input_tokens": 0,
            "cost": None,
            "cost_complete": True,
            "unpriced": 0,
            "rows": 0,
        }
        out[role]["cached"] = 0
        if role == "target":
            out[role].update(rollouts=0, unscored=0)
    return out[role]


def owner_is_gone(owner: str) -> bool:
    """Whether a lease holder (`host:pid:nonce`, see `RolloutEngine.owner`) is a process
    of this machine that no longer exists: a run killed with -9 leaves live-looking
    leases, and its own `--resume` should not wait them out. A holder on another
    machine, or one that cannot be checked, counts as alive until its lease expires."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists, under another user
        return False
    return False


def _chunks(keys: list[str]) -> Iterator[list[str]]:
    for i in range(0, len(keys), _CHUNK):
        yield keys[i : i + _CHUNK]


def _from_row(row: tuple) -> Rollout:
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
