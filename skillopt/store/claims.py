"""Claims: leases on rollouts being run, so processes sharing a store on disk pay
for each rollout once.

Invariants: a process claims a rollout before running it; the lease (a row in
`claims`) expires unless its owner renews it, so a killed claimer stops renewing
and its leases lapse, and one whose process is gone from this machine is not
waited for at all (`owner_is_gone`). A key with a scored row is never claimed: it
is served, not run. An in-memory store is private, so every key is the caller's.
The release of a claim and the rollout's row are one transaction (`put`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable

from skillopt.store.connection import Connection, chunks


class Claims(Connection):
    """The claim methods of `RolloutStore`, over its connection."""

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
            for chunk in chunks(keys):
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
            for chunk in chunks(keys):
                db.execute(
                    f"DELETE FROM claims WHERE owner = ? AND key IN ({','.join('?' * len(chunk))})",
                    (owner, *chunk),
                )


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
