"""The training loop: reflect, merge, schedule, gate, memory, trainer."""
