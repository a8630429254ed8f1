"""Rollouts: the record of one run of a skill on a task, the engine that runs and
scores them (locally or as Ray tasks), and the budget that bounds their spend."""
