"""Evaluation: resolve a command's inputs (`context`), score a skill on a suite's
splits (`run`), their statistics (`results`), and the CI gate (`validate`)."""
