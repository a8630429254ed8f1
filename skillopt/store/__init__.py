"""Persistence: the SQLite rollout store (its schema, rows, claims and spend ledger)
and the git audit trail (one commit per candidate, evidence in trailers)."""

from skillopt.store.rollouts import RolloutStore

__all__ = ["RolloutStore"]
