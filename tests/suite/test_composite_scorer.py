"""The `all` scorer (several checks on one answer, each with its own `expected` and
weight) and the json scorer's `kind` (any JSON of a kind, no `expected` needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt.suite.scorers import ScoreContext, build_scorer
from skillopt.suite.task import Task


def task(scorer, expected=None):
    return Task(id="t", input="x", expected=expected, prompt="x", split="test", scorer=scorer)


SPEC = {
    "type": "all",
    "of": [
        {"type": "contains", "expected": "Paris", "weight": 3},
        {"type": "regex", "pattern": "^[A-Z]"},
        "exact",  # no `expected` of its own: the item's
    ],
}


def test_every_part_must_pass_and_the_value_is_the_weighted_mean():
    scorer = build_scorer(SPEC, Path("."))
    assert scorer(task(scorer, "Paris"), "Paris").passed
    s = scorer(task(scorer, "Paris is big"), "Paris")
    assert (s.value, s.passed) == (0.8, False)  # 3 + 1 of 5
    assert s.feedback.splitlines()[0] == "1 of 3 checks failed"
    assert "3. exact: FAIL: expected 'Paris is big'" in s.feedback


def test_a_threshold_replaces_the_all_pass_rule():
    scorer = build_scorer({**SPEC, "threshold": 0.75}, Path("."))
    assert scorer(task(scorer, "Paris is big"), "Paris").passed


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (
            {"type": "all", "of": ["exact", {"type": "regex", "pattern": "("}]},
            "part 2: scorer 'regex': invalid pattern",
        ),
        (
            {"type": "all", "of": [{"type": "python", "function": "m:f"}]},
            "part 1: scorer 'python' runs the suite's code",
        ),
        (
            {"type": "all", "of": [{"type": "exact", "weight": -1}]},
            "part 1: weight must be a number >= 0",
        ),
        ({"type": "all", "of": []}, "parameter 'of'"),
    ],
)
def test_a_bad_part_is_named_by_its_index(spec, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        build_scorer(spec, Path("."))


def test_an_item_is_checked_against_each_part():
    scorer = build_scorer(SPEC, Path("."))
    assert (
        scorer.check_item(None)
        == "part 3 (exact), the item's `expected`: required by scorer 'exact'"
    )
    assert scorer.check_item("Paris") is None


def test_a_judge_inside_is_found_through_the_leaves():
    scorer = build_scorer(
        {"type": "all", "of": ["exact", {"type": "judge", "rubric": "r"}]}, Path(".")
    )
    assert [s.name for s in scorer.leaves()] == ["exact", "judge"]


def test_json_kind_needs_no_expected_and_keeps_old_specs_unchanged():
    plain = build_scorer("json", Path("."))
    assert plain.spec == {"type": "json", "v": 1, "threshold": 1.0}  # stored rollouts still match
    scorer = build_scorer({"type": "json", "kind": "object"}, Path("."))
    assert scorer.check_item(None) is None and plain.check_item(None)
    assert scorer(task(scorer), 'sure: {"a": 1}', ScoreContext()).passed
    failed = scorer(task(scorer), "[1, 2]")
    assert not failed.passed and failed.feedback == "expected a JSON object, got [1, 2]"
    anything = build_scorer({"type": "json", "kind": "any"}, Path("."))
    assert anything(task(anything), "3").passed and not anything(task(anything), "three").passed
    with_expected = build_scorer({"type": "json", "kind": "object"}, Path("."))
    assert not with_expected(task(with_expected, {"a": 2}), '{"a": 1}').passed
