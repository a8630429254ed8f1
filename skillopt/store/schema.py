"""The rollout store's schema: append-only named migrations (`m001_…`) and the
one way a database is opened (WAL journal, busy timeout, migrated forward).

Invariants: a migration, once released, never changes and is never removed; new
ones are appended. The `migrations` table records each applied one by name, and a
database is migrated forward on open, never rewritten. Opening a new database from
several processes at once is safe: the migrations run inside one `BEGIN IMMEDIATE`
transaction that re-reads the migrations table, so each is applied exactly once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

BUSY_TIMEOUT = 30.0


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


def m007_pending_spend(db: sqlite3.Connection) -> None:
    """A call or rollout recorded before it is sent (`pending` 1, at its estimate) and
    settled with what it cost once it returns, so a process killed meanwhile leaves
    it counted: the provider may have billed it. Rows written before this migration
    are settled (0)."""
    db.execute("ALTER TABLE spend ADD COLUMN pending INTEGER NOT NULL DEFAULT 0")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    m001_rollouts,
    m002_skills,
    m003_claims,
    m004_spend,
    m005_cached_tokens,
    m006_replies,
    m007_pending_spend,
]


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
    applied: list[str] = []
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


def open_db(path: str) -> sqlite3.Connection:
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
