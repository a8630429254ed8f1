"""Scorers that compare the answer's text with the item's `expected`: `exact`,
`normalized`, `contains`, `regex`, `number` and `choice`.

Each one says in its feedback what was expected and how the answer differed (only
letter case, only whitespace, a missing part, the number it was off by).
"""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path
from typing import Any

from skillopt.errors import ScorerError
from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams, show
from skillopt.suite.task import Task


def _diff_hint(expected: str, got: str) -> str:
    if expected.casefold() == got.casefold():
        return " (differs only in letter case)"
    if "".join(expected.split()) == "".join(got.split()):
        return " (differs only in whitespace)"
    if _normalize(expected) == _normalize(got):
        return " (differs only in case, spacing or punctuation)"
    if expected in got:
        return " (the expected text appears inside a longer answer)"
    return ""


# ---------------------------------------------------------------------- text match
class ExactParams(ScorerParams):
    strip: bool = True
    ignore_case: bool = False


class Exact(Scorer[ExactParams]):
    name = "exact"
    Params = ExactParams

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        exp, got = str(task.expected), answer
        if self.params.strip:
            exp, got = exp.strip(), got.strip()
        same = exp.casefold() == got.casefold() if self.params.ignore_case else exp == got
        if same:
            return Score(1.0, True, "exact match")
        return Score(0.0, False, f"expected {show(exp)}, got {show(got)}{_diff_hint(exp, got)}")


def _normalize(text: str, punctuation: bool = True) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    if punctuation:
        text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


class NormalizedParams(ScorerParams):
    punctuation: bool = True


class Normalized(Scorer[NormalizedParams]):
    name = "normalized"
    Params = NormalizedParams

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        exp = _normalize(str(task.expected), self.params.punctuation)
        got = _normalize(answer, self.params.punctuation)
        if exp == got:
            return Score(1.0, True, "match after normalising case, spacing and punctuation")
        return Score(
            0.0,
            False,
            f"expected {show(str(task.expected))}, got {show(answer.strip())}"
            " (compared ignoring case, spacing and punctuation)",
        )


class ContainsParams(ScorerParams):
    ignore_case: bool = False


class Contains(Scorer[ContainsParams]):
    """`expected` is a string or a list of strings that must all appear; the
    value is the fraction found (pass needs `threshold`, default all)."""

    name = "contains"
    Params = ContainsParams

    def check_item(self, expected: Any) -> str | None:
        if expected is None:
            return "required by scorer 'contains'"
        if isinstance(expected, list) and not all(
            isinstance(x, (str, int, float)) for x in expected
        ):
            return "must be a string or a list of strings for scorer 'contains'"
        if expected in ([], ""):
            return "must not be empty for scorer 'contains'"
        return None

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        needles = task.expected if isinstance(task.expected, list) else [task.expected]
        needles = [str(n) for n in needles]
        hay = answer.casefold() if self.params.ignore_case else answer
        missing = [
            n for n in needles if (n.casefold() if self.params.ignore_case else n) not in hay
        ]
        value = 1 - len(missing) / len(needles) if needles else 1.0
        return self._graded(
            value,
            "answer is missing " + ", ".join(show(m) for m in missing),
            "answer contains the expected text",
        )


class RegexParams(ScorerParams):
    pattern: str | None = None
    ignore_case: bool = False
    fullmatch: bool = False


class Regex(Scorer[RegexParams]):
    """Matches `pattern` (or, without one, the item's `expected` as a pattern)."""

    name = "regex"
    Params = RegexParams

    def __init__(self, params: RegexParams, base_dir: Path):
        super().__init__(params, base_dir)
        # without a pattern of its own, the item's `expected` is the pattern
        self.needs_expected = params.pattern is None
        self._compiled = (
            None if params.pattern is None else _compile(params.pattern, params.ignore_case)
        )

    def check_item(self, expected: Any) -> str | None:
        if self.params.pattern is None:
            if expected is None:
                return "required by scorer 'regex' when it has no 'pattern'"
            try:
                re.compile(str(expected))
            except re.error as exc:
                return f"not a valid regular expression: {exc}"
        return None

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        pattern = self.params.pattern if self.params.pattern is not None else str(task.expected)
        rx = (
            self._compiled
            if self._compiled is not None
            else _compile(pattern, self.params.ignore_case)
        )
        got = answer.strip()
        m = rx.fullmatch(got) if self.params.fullmatch else rx.search(got)
        if m:
            return Score(1.0, True, f"matches /{pattern}/")
        return Score(0.0, False, f"answer {show(got)} does not match /{pattern}/")


def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE if ignore_case else 0)


# ---------------------------------------------------------------------- numbers, choices
_NUMBER = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")


def extract_number(text: str) -> float | None:
    """The first number in `text` (thousands separators and a unicode minus allowed)."""
    for m in _NUMBER.finditer(text):
        token = m.group(0)
        if not any(ch.isdigit() for ch in token):
            continue
        try:
            return float(token.replace(",", "").replace("−", "-"))
        except ValueError:
            continue
    return None


class NumberParams(ScorerParams):
    tolerance: float = 0.0
    relative: float = 0.0


class Number(Scorer[NumberParams]):
    """Passes when |answer - expected| <= max(tolerance, relative * |expected|)."""

    name = "number"
    Params = NumberParams

    def check_item(self, expected: Any) -> str | None:
        if expected is None:
            return "required by scorer 'number'"
        if isinstance(expected, bool) or extract_number(str(expected)) is None:
            return f"scorer 'number' needs a number, got {expected!r}"
        return None

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        exp = extract_number(str(task.expected))
        if exp is None:  # `check_item` refused such an item when the suite loaded
            raise ScorerError(f"scorer 'number' needs a number, got {task.expected!r}")
        got = extract_number(answer)
        allowed = max(self.params.tolerance, self.params.relative * abs(exp))
        tol = f" (±{allowed:g})" if allowed else ""
        if got is None:
            return Score(
                0.0,
                False,
                f"expected the number {exp:g}{tol}; no number in {show(answer.strip())}",
            )
        if math.isclose(got, exp, abs_tol=allowed + 1e-12, rel_tol=0.0):
            return Score(1.0, True, f"{got:g} is within tolerance of {exp:g}")
        return Score(0.0, False, f"expected {exp:g}{tol}, got {got:g} (off by {got - exp:+g})")


class ChoiceParams(ScorerParams):
    choices: list[str | int | float] | None = None
    ignore_case: bool = True


class Choice(Scorer[ChoiceParams]):
    """One of a fixed set of options; the answer may be the option itself or a
    sentence naming exactly one option. Per-item `metadata.choices` overrides."""

    name = "choice"
    Params = ChoiceParams

    def _choices(self, task: Task) -> list[str]:
        item_choices = task.metadata.get("choices") if task.metadata else None
        return [str(c) for c in (item_choices or self.params.choices or [])]

    def check_item(self, expected: Any) -> str | None:
        if expected is None:
            return "required by scorer 'choice'"
        if self.params.choices is not None:
            options = {self._fold(str(c)) for c in self.params.choices}
            if self._fold(str(expected)) not in options:
                return f"{expected!r} is not one of the scorer's choices {self.params.choices}"
        return None

    def _fold(self, s: str) -> str:
        return s.strip().casefold() if self.params.ignore_case else s.strip()

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        choices = self._choices(task) or [str(task.expected)]
        got = self._fold(answer).rstrip(".")
        picked = [c for c in choices if self._fold(c) == got]
        if not picked:
            picked = [
                c
                for c in choices
                if re.search(r"(?<!\w)" + re.escape(self._fold(c)) + r"(?!\w)", self._fold(answer))
            ]
        expected = str(task.expected)
        if len(picked) == 1:
            if self._fold(picked[0]) == self._fold(expected):
                return Score(1.0, True, f"chose {expected!r}")
            return Score(0.0, False, f"chose {picked[0]!r}, expected {expected!r}")
        if not picked:
            return Score(
                0.0,
                False,
                f"answer {show(answer.strip())} names none of {choices}; expected {expected!r}",
            )
        return Score(
            0.0, False, f"answer names several options {picked}; expected only {expected!r}"
        )
