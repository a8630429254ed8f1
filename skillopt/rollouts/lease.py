"""Keeping an engine's claims on rollouts alive while they run.

Invariant: while a `Heartbeat` lives, every lease its owner holds in the store is
renewed every third of the store's lease time, so a rollout that runs for minutes
keeps its claim; once it stops (or its process is killed), the claims lapse and
another process sharing the store may take the rollouts over.
"""

from __future__ import annotations

import logging
import threading

from skillopt.rollouts.record import RolloutCache

log = logging.getLogger("skillopt")

# How often a run waiting on rollouts another process is running looks again.
POLL_S = 0.2


class Heartbeat:
    """Renews every lease `owner` holds, every ttl/3, until stopped: a rollout that
    runs for minutes keeps its claim, and a killed process's claims lapse."""

    def __init__(self, store: RolloutCache, owner: str):
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(store, owner), name="skillopt-lease", daemon=True
        )
        self._thread.start()

    def _beat(self, store: RolloutCache, owner: str) -> None:
        while not self._stop.wait(store.lease_ttl / 3):
            try:
                store.renew(owner)
            except Exception:  # a busy or closed store: the next beat tries again
                log.debug("lease renewal failed", exc_info=True)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)
