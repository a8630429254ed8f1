"""The one SQLite connection the rollout store's parts share (rows, claims, ledger),
with the lock and the write transaction every write goes through.

Invariants: every use of the connection holds the store's lock, so one store is
safe for many threads; every write is one `BEGIN IMMEDIATE` transaction, so reads
inside it are not stale when it writes, and several processes sharing a database
on disk (WAL journal, busy timeout) never interleave half a write. Every text
written is passed through `skillopt._util.text.safe` first (`safe_all`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillopt._util.text import safe
from skillopt.errors import InputError
from skillopt.runs.rundir import output_dir
from skillopt.store.schema import open_db

LEASE_TTL = 30.0  # seconds a claim lives unless renewed (the engine renews every ttl/3)
_CHUNK = 500  # keys per `IN (...)`: well under SQLite's bound-parameter limit


class Connection:
    """An open, migrated store database. `path=":memory:"` gives a private one;
    only a database on disk is `shared` with other processes. `lease_ttl` is how
    long a claim on a rollout lives without renewal (see `skillopt.store.claims`)."""

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
            self._db = open_db(self.path)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"not a usable rollout store: {exc}", path=self.path) from None
        self._lock = threading.Lock()

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


def chunks(keys: list[str]) -> Iterator[list[str]]:
    """`keys` in slices small enough for one `IN (...)`."""
    for i in range(0, len(keys), _CHUNK):
        yield keys[i : i + _CHUNK]


def safe_all(*texts: str | None) -> list[str | None]:
    """`safe` applied to each text. Finding the known secrets is most of `safe`'s cost,
    so the texts are first checked together: when `safe` (which only replaces bad
    characters and secret substrings) leaves their concatenation unchanged, no text
    holds a bad character or a secret (a secret inside one text is inside the
    concatenation, and its mask is shorter than any secret), and each is kept as is."""
    joined = "\n".join(t for t in texts if t)
    if safe(joined) == joined:
        return list(texts)
    return [safe(t) for t in texts]
