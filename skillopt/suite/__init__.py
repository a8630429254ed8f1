"""Task suites: what a skill is tested on (loader, splits, templates, scorers)."""

from skillopt.suite.loader import load_suite, require_split
from skillopt.suite.scorers import Score, ScoreContext, build_scorer
from skillopt.suite.task import SPLITS, Suite, Task

__all__ = [
    "SPLITS",
    "Score",
    "ScoreContext",
    "Suite",
    "Task",
    "build_scorer",
    "load_suite",
    "require_split",
]
