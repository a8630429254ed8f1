"""Persistence: the SQLite rollout store, run directories and the git audit trail."""

from skillopt.store.rollouts import RolloutStore

__all__ = ["RolloutStore"]
