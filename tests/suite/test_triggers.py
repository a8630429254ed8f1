"""Trigger suites: items with `query` and `should_trigger` (skillopt's own trigger
suite, the `<stem>-triggers.yaml` that `skillopt tasks import` writes, and a
skill-creator trigger-eval JSON given as it is), the `trigger` scorer, and every
way a trigger file can be wrong."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import write_suite

from skillopt.errors import InputError, ScorerError
from skillopt.harness.base import Trajectory
from skillopt.rollouts.job import score_trajectory
from skillopt.skill.document import Skill
from skillopt.suite.importing import import_source
from skillopt.suite.loader import load_suite
from skillopt.suite.scorers import ScoreContext

QUERIES = [
    {"id": "t1", "query": "make this text all capitals", "should_trigger": True},
    {"id": "t2", "query": "what is the weather in Oslo", "should_trigger": False},
]


def test_a_trigger_suite_loads_each_query_as_typed(tmp_path):
    path = write_suite(tmp_path / "caps-triggers.yaml", QUERIES)
    suite = load_suite(path)
    assert suite.is_triggers
    t1, t2 = (suite.get(i) for i in ("t1", "t2"))
    assert t1.prompt == "make this text all capitals" and t1.expected is True
    assert t2.expected is False and t2.is_trigger
    assert t1.scorer.spec == {"type": "trigger", "v": 1, "threshold": 1.0}
    # the expectation is part of what a rollout's key hashes
    assert t1.content()["expected"] is True


def test_the_trigger_suite_import_writes_loads_as_it_is(tmp_path):
    evals = tmp_path / "skill" / "evals"
    evals.mkdir(parents=True)
    (evals / "trigger_evals.json").write_text(
        json.dumps([{"query": q["query"], "should_trigger": q["should_trigger"]} for q in QUERIES])
    )
    result = import_source(str(evals.parent), tmp_path / "tasks" / "caps.yaml")
    assert result.triggers == tmp_path / "tasks" / "caps-triggers.yaml"
    suite = load_suite(result.triggers)
    assert suite.name == "caps-triggers" and suite.is_triggers
    assert [(t.id, t.prompt, t.expected) for t in suite.tasks] == [
        ("trigger-1", "make this text all capitals", True),
        ("trigger-2", "what is the weather in Oslo", False),
    ]


def test_a_skill_creator_trigger_eval_json_is_a_suite_as_it_is(tmp_path):
    path = tmp_path / "eval_set.json"
    path.write_text(
        json.dumps([{"query": q["query"], "should_trigger": q["should_trigger"]} for q in QUERIES])
    )
    suite = load_suite(path)
    assert suite.name == "eval_set" and suite.is_triggers
    assert [t.expected for t in suite.tasks] == [True, False]
    assert suite.tasks[0].prompt == "make this text all capitals"


@pytest.mark.parametrize(
    ("item", "field", "says"),
    [
        ({"id": "q", "should_trigger": True}, "query", "required"),
        ({"id": "q", "query": "x", "should_trigger": "yes"}, "should_trigger", "true or false"),
        ({"id": "q", "query": "x", "should_trigger": 1}, "should_trigger", "true or false"),
        ({"id": "q", "query": "x"}, "should_trigger", "required"),
        ({"id": "q", "query": " ", "should_trigger": True}, "query", "non-empty text"),
        ({"id": "q", "query": "x", "should_trigger": True, "expected": "y"}, "expected", "task"),
        ({"id": "q", "query": "x", "should_trigger": True, "input": "y"}, "input", "task"),
        ({"id": "q", "query": "x", "should_trigger": True, "scorer": "exact"}, "scorer", "task"),
        ({"id": "q", "query": "x", "should_trigger": True, "quer": 1}, "quer", "query"),
    ],
)
def test_a_bad_trigger_item_is_one_error_naming_file_item_and_field(tmp_path, item, field, says):
    path = write_suite(tmp_path / "t.yaml", [item])
    with pytest.raises(InputError) as exc:
        load_suite(path)
    assert (exc.value.path, exc.value.item, exc.value.field) == (path, "q", field)
    assert says in str(exc.value)
    # the line where the field is written, else the item's own
    lines = path.read_text().splitlines()
    written = [n for n, text in enumerate(lines, 1) if text.strip(" -").startswith(f"{field}:")]
    assert exc.value.line == (written[0] if written else 3)


def test_a_skill_creator_trigger_eval_with_a_bad_value_names_it(tmp_path):
    path = tmp_path / "triggers.json"
    path.write_text(json.dumps([{"query": "x", "should_trigger": "sometimes"}]))
    with pytest.raises(InputError) as exc:
        load_suite(path)
    assert (exc.value.item, exc.value.field) == ("evals[0]", "should_trigger")


@pytest.mark.parametrize("trigger_first", [True, False])
def test_a_suite_mixing_tasks_and_trigger_queries_is_refused(tmp_path, trigger_first):
    task = {"id": "w1", "input": "word-1", "expected": "WORD-1"}
    items = [QUERIES[0], task] if trigger_first else [task, QUERIES[0]]
    path = write_suite(tmp_path / "mixed.yaml", items)
    with pytest.raises(InputError) as exc:
        load_suite(path)
    second = items[1]["id"]
    assert exc.value.item == second
    assert exc.value.field == ("input" if trigger_first else "should_trigger")
    assert "not both" in str(exc.value) and "-triggers.yaml" in str(exc.value)


@pytest.mark.parametrize(
    ("top", "field"), [({"prompt": "Q: {input}"}, "prompt"), ({"scorer": "exact"}, "scorer")]
)
def test_a_trigger_suite_takes_no_template_nor_other_scorer(tmp_path, top, field):
    path = write_suite(tmp_path / "t.yaml", QUERIES, **top)
    with pytest.raises(InputError) as exc:
        load_suite(path)
    assert exc.value.field == field and "as the user would type" in str(exc.value)


def test_a_task_scored_by_trigger_needs_a_true_or_false_expectation(tmp_path):
    path = write_suite(
        tmp_path / "t.yaml", [{"id": "a", "input": "x", "expected": "yes"}], scorer="trigger"
    )
    with pytest.raises(InputError) as exc:
        load_suite(path)
    assert (exc.value.item, exc.value.field) == ("a", "should_trigger")


def _trigger_task(tmp_path, should: bool):
    path = write_suite(tmp_path / "t.yaml", [{**QUERIES[0], "should_trigger": should}])
    return load_suite(path).tasks[0]


@pytest.mark.parametrize(
    ("should", "loaded", "value", "says"),
    [
        (True, True, 1.0, "loaded, as"),
        (False, False, 1.0, "stayed unloaded"),
        (True, False, 0.0, "did not load, though this query should"),
        (False, True, 0.0, "loaded, though this query should not"),
    ],
)
def test_the_trigger_scorer_matches_loading_with_should_trigger(
    tmp_path, should, loaded, value, says
):
    task = _trigger_task(tmp_path, should)
    score = task.scorer(task, "any answer", ScoreContext(skill_invoked=loaded))
    assert score.value == value and score.passed is (value == 1.0)
    assert says in score.feedback


def test_a_trace_that_cannot_tell_leaves_a_trigger_query_unscored(tmp_path):
    task = _trigger_task(tmp_path, True)
    with pytest.raises(ScorerError, match="does not show whether the skill was loaded"):
        task.scorer(task, "answer", ScoreContext())
    skill = Skill.parse("---\nname: caps\ndescription: Caps.\n---\n# Caps\n")
    rollout = score_trajectory(None, skill, task, 0, "k", Trajectory(answer="a"))
    assert not rollout.scored and rollout.score is None
    assert rollout.error_kind == "scorer" and "trace does not show" in (rollout.error or "")
    loaded = score_trajectory(None, skill, task, 0, "k", Trajectory(answer="a", skill_invoked=True))
    assert loaded.scored and loaded.score == 1.0 and loaded.trajectory["skill_invoked"] is True


def test_an_imported_trigger_suite_round_trips_through_yaml(tmp_path):
    """What `write_suite` writes is exactly what a person would write by hand."""
    path = write_suite(tmp_path / "t.yaml", QUERIES)
    data = yaml.safe_load(path.read_text())
    assert set(data["items"][0]) == {"id", "query", "should_trigger"}
