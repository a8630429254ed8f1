"""Scorers: turn an answer into a value in [0, 1], a pass flag and feedback text.

Contract (`base`): `Scorer(task, answer, ctx) -> Score`. A scorer judges the
*answer*; when it cannot (a judge model is down, a verifier binary is missing, a
user function raises) it raises `ScorerError` and the rollout is stored as
unscored — never as a score of 0. The feedback is written for the optimizer: it
says what was expected and how the answer differed.

Every scorer is built from a spec (a name or a mapping with `type:` and its
parameters) by `build_scorer` (`registry`) and validated when the suite loads,
before any model call. The scorers themselves: `text` (exact, normalized,
contains, regex, number, choice), `structured` (json), `code` (python, command),
`judge`, `composite` (all) and `trigger` (whether the skill loaded); they are listed once, in `skillopt.plugins.builtins`.

Invariant: importing this package loads only the contract and the registry; a
scorer's module loads when the scorer is first looked up (or a name below is
first used).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams, show
from skillopt.suite.scorers.registry import build_scorer, scorer_class

if TYPE_CHECKING:
    from skillopt.suite.scorers.code import Command, Python
    from skillopt.suite.scorers.composite import All
    from skillopt.suite.scorers.judge import Judge
    from skillopt.suite.scorers.structured import (
        MAX_JSON_DEPTH,
        MAX_JSON_STARTS,
        NO_JSON,
        Json,
        json_depth,
        parse_json_answer,
    )
    from skillopt.suite.scorers.text import (
        Choice,
        Contains,
        Exact,
        Normalized,
        Number,
        Regex,
        extract_number,
    )
    from skillopt.suite.scorers.trigger import Trigger

_LAZY = {
    "code": ("Command", "Python"),
    "composite": ("All",),
    "judge": ("Judge",),
    "structured": (
        "MAX_JSON_DEPTH",
        "MAX_JSON_STARTS",
        "NO_JSON",
        "Json",
        "json_depth",
        "parse_json_answer",
    ),
    "trigger": ("Trigger",),
    "text": ("Choice", "Contains", "Exact", "Normalized", "Number", "Regex", "extract_number"),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = vars(importlib.import_module(f"{__name__}.{module}"))[name]
    globals()[name] = value  # looked up once
    return value


__all__ = [
    "MAX_JSON_DEPTH",
    "All",
    "MAX_JSON_STARTS",
    "NO_JSON",
    "Choice",
    "Command",
    "Contains",
    "Exact",
    "Json",
    "Judge",
    "Normalized",
    "Number",
    "Python",
    "Regex",
    "Score",
    "ScoreContext",
    "Scorer",
    "ScorerParams",
    "build_scorer",
    "extract_number",
    "json_depth",
    "parse_json_answer",
    "scorer_class",
    "show",
    "Trigger",
]
