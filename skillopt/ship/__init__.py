"""Shipping a skill: export it to where agents load it, adopt a run's best skill."""
