"""Persistence: the SQLite rollout store (and, later, run directories and the git audit)."""

from skillopt.store.rollouts import RolloutStore

__all__ = ["RolloutStore"]
