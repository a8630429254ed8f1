"""Scorers: turn an answer into a value in [0, 1], a pass flag and feedback text.

Contract (`base`): `Scorer(task, answer, ctx) -> Score`. A scorer judges the
*answer*; when it cannot (a judge model is down, a verifier binary is missing, a
user function raises) it raises `ScorerError` and the rollout is stored as
unscored — never as a score of 0. The feedback is written for the optimizer: it
says what was expected and how the answer differed.

Every scorer is built from a spec (a type name or a mapping with `type:` and its
parameters) by `build_scorer` (`registry`) and validated when the suite loads,
before any model call. The scorers themselves: `text` (exact, normalized,
contains, regex, number, choice), `structured` (json), `code` (python, command)
and `judge`.
"""

from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams, show
from skillopt.suite.scorers.code import Command, Python
from skillopt.suite.scorers.judge import Judge
from skillopt.suite.scorers.registry import SCORERS, build_scorer, scorer_class
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

__all__ = [
    "scorer_class",
    "MAX_JSON_DEPTH",
    "MAX_JSON_STARTS",
    "NO_JSON",
    "SCORERS",
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
    "show",
]
