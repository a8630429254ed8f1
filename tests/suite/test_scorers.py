"""Every scorer: value in [0, 1], the pass flag, and feedback that says what was
expected and what was got. Scorers that cannot judge raise `ScorerError`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import write_suite

from skillopt.errors import InputError, ModelError, ScorerError
from skillopt.models.scripted import ScriptedModel
from skillopt.plugins.builtins import SCORERS
from skillopt.suite import load_suite
from skillopt.suite.scorers import (
    Score,
    ScoreContext,
    build_scorer,
    extract_number,
    parse_json_answer,
    scorer_class,
)
from skillopt.suite.scorers.base import Unloaded
from skillopt.suite.task import Task


@pytest.fixture(autouse=True)
def _restore_imports(monkeypatch, tmp_path):
    """The python scorer puts the suite directory on sys.path and imports from it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def make_task(scorer, expected=None, *, metadata=None, prompt="What is the answer?", task_id="t1"):
    return Task(
        id=task_id,
        input=prompt,
        expected=expected,
        prompt=prompt,
        split="train",
        scorer=scorer,
        metadata=metadata or {},
    )


def score(spec, expected, answer, *, ctx=None, base_dir=Path("."), **task_kw) -> Score:
    scorer = build_scorer(spec, base_dir)
    result = scorer(make_task(scorer, expected, **task_kw), answer, ctx)
    assert isinstance(result, Score)
    assert 0.0 <= result.value <= 1.0
    assert isinstance(result.passed, bool)
    assert isinstance(result.feedback, str) and result.feedback
    return result


def check(spec, expected):
    return build_scorer(spec, Path(".")).check_item(expected)


# ---------------------------------------------------------------------- registry, specs
def test_all_scorers_are_registered():
    assert set(SCORERS) == {
        "exact",
        "normalized",
        "contains",
        "regex",
        "number",
        "choice",
        "json",
        "python",
        "command",
        "judge",
        "trigger",
        "all",
    }


def test_each_built_in_scorer_is_the_class_its_name_finds():
    for name in SCORERS:
        cls = scorer_class(name)
        assert cls.name == name
        assert build_scorer(name if name not in NEEDS_PARAMS else NEEDS_PARAMS[name], Path("."))


NEEDS_PARAMS = {
    "python": {"type": "python", "function": "json:dumps"},
    "command": {"type": "command", "run": "true"},
    "judge": {"type": "judge", "rubric": "r"},
    "all": {"type": "all", "of": ["exact"]},
}


def test_scorer_modules_load_when_a_scorer_is_first_looked_up():
    code = (
        "import sys\n"
        "import skillopt.suite.scorers as s\n"
        "from skillopt.suite import load_suite\n"
        "mods = lambda: sorted(m for m in sys.modules if m.startswith('skillopt.suite.scorers.'))\n"
        "print(mods())\n"
        "s.scorer_class('exact')\n"
        "print(mods())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        "['skillopt.suite.scorers.base', 'skillopt.suite.scorers.registry']",
        "['skillopt.suite.scorers.base', 'skillopt.suite.scorers.registry', "
        "'skillopt.suite.scorers.text']",
    ]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("exat", "unknown scorer 'exat'"),
        ({"type": "exact", "strp": True}, "parameter 'strp'"),
        ({"type": "number", "tolerance": "big"}, "parameter 'tolerance'"),
        ({"pattern": "x"}, "needs a 'type'"),
        ({"type": "judge"}, "parameter 'rubric'"),
        ({"type": "command"}, "parameter 'run'"),
        ({"type": "python"}, "parameter 'function'"),
        ({"type": "regex", "pattern": "(("}, "invalid pattern"),
        (42, "must be a name or a mapping"),
    ],
)
def test_build_scorer_errors(spec, needle):
    with pytest.raises(ValueError) as info:
        build_scorer(spec, Path("."))
    assert needle in str(info.value)


def test_spec_is_canonical():
    exact = build_scorer("exact", Path(".")).spec
    assert exact == {"type": "exact", "v": 1, "threshold": 1.0, "strip": True, "ignore_case": False}
    # defaults spelled out or left implicit give the same spec
    assert build_scorer({"type": "exact"}, Path(".")).spec == exact
    assert build_scorer({"type": "exact", "strip": True}, Path(".")).spec == exact
    json.dumps(exact, sort_keys=True)  # usable in a cache key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("exact", {"type": "exact", "ignore_case": True}),
        ("exact", {"type": "exact", "strip": False}),
        ("exact", "normalized"),
        ({"type": "regex", "pattern": "a"}, {"type": "regex", "pattern": "b"}),
        ({"type": "regex", "pattern": "a"}, {"type": "regex", "pattern": "a", "fullmatch": True}),
        ("number", {"type": "number", "tolerance": 0.5}),
        ({"type": "number", "tolerance": 0.5}, {"type": "number", "relative": 0.5}),
        ("contains", {"type": "contains", "threshold": 0.5}),
        ("choice", {"type": "choice", "choices": ["a", "b"]}),
        ({"type": "command", "run": "true"}, {"type": "command", "run": "false"}),
        ({"type": "command", "run": "true"}, {"type": "command", "run": "true", "timeout": 5}),
        ({"type": "judge", "rubric": "be kind"}, {"type": "judge", "rubric": "be strict"}),
        ({"type": "judge", "rubric": "r"}, {"type": "judge", "rubric": "r", "model": "m/x"}),
    ],
)
def test_spec_differs_when_parameters_differ(a, b):
    sa, sb = build_scorer(a, Path(".")).spec, build_scorer(b, Path(".")).spec
    assert sa != sb
    assert json.dumps(sa, sort_keys=True) != json.dumps(sb, sort_keys=True)


# ---------------------------------------------------------------------- exact
def test_exact_pass_strips_whitespace():
    s = score("exact", "Paris", "  Paris\n")
    assert (s.value, s.passed) == (1.0, True)


def test_exact_without_strip():
    s = score({"type": "exact", "strip": False}, "Paris", " Paris")
    assert (s.value, s.passed) == (0.0, False)
    assert "' Paris'" in s.feedback


def test_exact_case_hint():
    s = score("exact", "Paris", "paris")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "expected 'Paris', got 'paris' (differs only in letter case)"


@pytest.mark.parametrize(
    ("expected", "answer", "hint"),
    [
        ("New York", "NewYork", "differs only in whitespace"),
        ("Hello, world", "hello world!", "differs only in case, spacing or punctuation"),
        ("Paris", "The answer is Paris.", "the expected text appears inside a longer answer"),
    ],
)
def test_exact_hints(expected, answer, hint):
    s = score("exact", expected, answer)
    assert not s.passed
    assert f"expected {expected!r}" in s.feedback
    assert f"got {answer!r}" in s.feedback
    assert hint in s.feedback


def test_exact_no_hint_for_a_different_answer():
    s = score("exact", "Paris", "London")
    assert s.feedback == "expected 'Paris', got 'London'"


def test_exact_ignore_case():
    assert score({"type": "exact", "ignore_case": True}, "Paris", "PARIS").passed
    assert not score({"type": "exact", "ignore_case": True}, "Paris", "Pariss").passed


def test_exact_non_string_expected():
    assert score("exact", 42, "42").passed


def test_exact_long_answer_is_shortened_in_feedback():
    s = score("exact", "short", "x" * 5000)
    assert not s.passed
    assert "…" in s.feedback
    assert len(s.feedback) < 400


def test_exact_needs_expected():
    assert check("exact", None) == "required by scorer 'exact'"
    assert check("exact", "x") is None


# ---------------------------------------------------------------------- normalized
def test_normalized_ignores_case_spacing_punctuation():
    s = score("normalized", "Hello, World!", "  hello    world ")
    assert (s.value, s.passed) == (1.0, True)


def test_normalized_unicode_compatibility():
    assert score("normalized", "full", "ＦＵＬＬ").passed  # full-width letters


def test_normalized_failure_feedback():
    s = score("normalized", "Hello world", "Goodbye world.")
    assert (s.value, s.passed) == (0.0, False)
    assert "expected 'Hello world'" in s.feedback
    assert "got 'Goodbye world.'" in s.feedback
    assert "ignoring case, spacing and punctuation" in s.feedback


def test_normalized_keeping_punctuation():
    assert not score({"type": "normalized", "punctuation": False}, "a-b", "a b").passed
    assert score({"type": "normalized", "punctuation": False}, "A-B", "a-b").passed


# ---------------------------------------------------------------------- contains
def test_contains_single_needle():
    assert score("contains", "Paris", "I believe it is Paris.").passed
    s = score("contains", "Paris", "I believe it is Lyon.")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "answer is missing 'Paris'"


def test_contains_list_partial_value():
    s = score("contains", ["alpha", "beta", "gamma", "delta"], "alpha and gamma only")
    assert s.value == pytest.approx(0.5)
    assert not s.passed
    assert "'beta'" in s.feedback and "'delta'" in s.feedback
    assert "'alpha'" not in s.feedback and "'gamma'" not in s.feedback


def test_contains_all_needles():
    s = score("contains", ["alpha", "beta"], "beta, then alpha")
    assert (s.value, s.passed) == (1.0, True)


def test_contains_threshold():
    spec = {"type": "contains", "threshold": 0.5}
    assert score(spec, ["a1", "b2", "c3", "d4"], "a1 b2").passed
    assert not score(spec, ["a1", "b2", "c3", "d4"], "a1").passed


def test_contains_case():
    assert not score("contains", "Paris", "paris!").passed
    assert score(
        {"type": "contains", "ignore_case": True}, ["Paris", "FRANCE"], "paris, france"
    ).passed


def test_contains_numbers_as_needles():
    assert score("contains", [42, "x"], "x = 42").passed


def test_contains_check_item():
    assert "required" in check("contains", None)
    assert "list of strings" in check("contains", ["ok", {"no": 1}])
    assert check("contains", ["ok", 3]) is None


# ---------------------------------------------------------------------- regex
def test_regex_expected_as_pattern():
    assert score("regex", r"\bcat\b", "a cat sat").passed
    s = score("regex", r"\bcat\b", "  concatenate  ")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == r"answer 'concatenate' does not match /\bcat\b/"


def test_regex_pattern_parameter_ignores_expected():
    spec = {"type": "regex", "pattern": r"^\d{3}-\d{4}$"}
    s = score(spec, "unrelated expected", "555-1234")
    assert (s.value, s.passed) == (1.0, True)
    assert r"/^\d{3}-\d{4}$/" in s.feedback
    s = score(spec, r"555-1234", "call 555-1234")
    assert not s.passed
    assert r"does not match /^\d{3}-\d{4}$/" in s.feedback


def test_regex_fullmatch():
    assert score("regex", r"\d+", "123 apples").passed
    assert not score({"type": "regex", "fullmatch": True}, r"\d+", "123 apples").passed
    assert score({"type": "regex", "fullmatch": True}, r"\d+", " 123\n").passed


def test_regex_ignore_case():
    assert not score("regex", "yes", "YES").passed
    assert score({"type": "regex", "ignore_case": True}, "yes", "YES").passed
    assert score({"type": "regex", "pattern": "yes", "ignore_case": True}, None, "YES").passed


def test_regex_check_item():
    assert "required" in check("regex", None)
    assert "not a valid regular expression" in check("regex", "(")
    assert check({"type": "regex", "pattern": "x"}, None) is None
    assert build_scorer({"type": "regex", "pattern": "x"}, Path(".")).needs_expected is False
    assert build_scorer("regex", Path(".")).needs_expected is True


# ---------------------------------------------------------------------- number
@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("42", 42.0),
        ("The answer is 42.", 42.0),
        ("about 1,234,567 people", 1234567.0),
        ("-5 degrees", -5.0),
        ("\u22125 degrees", -5.0),  # unicode minus
        ("pi is 3.14159", 3.14159),
        ("roughly .5", 0.5),
        ("1e3 items", 1000.0),
        ("first 7 then 9", 7.0),
        ("well-known: 8", 8.0),
        ("no digits here", None),
        ("", None),
    ],
)
def test_extract_number(text, number):
    got = extract_number(text)
    assert got == (pytest.approx(number) if number is not None else None)


def test_number_pass_in_a_sentence():
    s = score("number", 42, "After thinking, the answer is 42.")
    assert (s.value, s.passed) == (1.0, True)


def test_number_thousands_separators():
    assert score("number", 1234567, "1,234,567").passed
    assert score("number", "1,234", "1234").passed


def test_number_failure_feedback():
    s = score("number", 42, "It is 41")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "expected 42, got 41 (off by -1)"


def test_number_absolute_tolerance():
    spec = {"type": "number", "tolerance": 0.01}
    assert score(spec, 3.14159, "3.14").passed
    s = score(spec, 3.14159, "3.2")
    assert not s.passed
    assert "expected 3.14159 (±0.01), got 3.2" in s.feedback


def test_number_relative_tolerance():
    spec = {"type": "number", "relative": 0.01}
    assert score(spec, 1000, "1009").passed
    assert score(spec, 1000, "991").passed
    s = score(spec, 1000, "1011")
    assert not s.passed
    assert "(±10)" in s.feedback
    assert "off by +11" in s.feedback


def test_number_tolerance_is_the_larger_of_the_two():
    spec = {"type": "number", "tolerance": 5, "relative": 0.01}
    assert score(spec, 100, "104").passed  # relative alone would allow only 1


def test_number_no_number_in_answer():
    s = score("number", 42, "I do not know.")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "expected the number 42; no number in 'I do not know.'"


def test_number_check_item():
    assert "required" in check("number", None)
    assert "needs a number" in check("number", "many")
    assert "needs a number" in check("number", True)
    assert check("number", "about 12") is None
    assert check("number", 3.5) is None


# ---------------------------------------------------------------------- choice
CHOICES = {"type": "choice", "choices": ["yes", "no", "maybe"]}


@pytest.mark.parametrize("answer", ["yes", "Yes.", "  YES ", "I think the answer is yes."])
def test_choice_pass(answer):
    s = score(CHOICES, "yes", answer)
    assert (s.value, s.passed) == (1.0, True)
    assert s.feedback == "chose 'yes'"


def test_choice_wrong_option():
    s = score(CHOICES, "yes", "Definitely no.")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "chose 'no', expected 'yes'"


def test_choice_several_options():
    s = score(CHOICES, "yes", "It is either yes or no")
    assert (s.value, s.passed) == (0.0, False)
    assert "several options" in s.feedback
    assert "'yes'" in s.feedback and "'no'" in s.feedback
    assert "expected only 'yes'" in s.feedback


def test_choice_no_option():
    s = score(CHOICES, "yes", "Yesterday I was unsure")  # "yes" inside a word does not count
    assert (s.value, s.passed) == (0.0, False)
    assert "names none of" in s.feedback
    assert "expected 'yes'" in s.feedback
    assert "Yesterday I was unsure" in s.feedback


def test_choice_case_sensitive():
    spec = {**CHOICES, "ignore_case": False}
    assert score(spec, "yes", "yes").passed
    assert "names none of" in score(spec, "yes", "YES").feedback


def test_choice_per_item_metadata_choices():
    meta = {"choices": ["red", "green", "blue"]}
    s = score("choice", "red", "green", metadata=meta)
    assert s.feedback == "chose 'green', expected 'red'"
    assert score("choice", "red", "I'd say red", metadata=meta).passed
    assert "several" in score("choice", "red", "red and blue", metadata=meta).feedback
    # without metadata the only known option is the expected one
    assert "names none of ['red']" in score("choice", "red", "green").feedback


def test_choice_metadata_overrides_scorer_choices():
    s = score(CHOICES, "red", "green", metadata={"choices": ["red", "green"]})
    assert s.feedback == "chose 'green', expected 'red'"


def test_choice_in_a_loaded_suite(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [
            {
                "id": "a",
                "input": "Colour?",
                "expected": "red",
                "metadata": {"choices": ["red", "green"]},
            },
        ],
        scorer="choice",
    )
    task = load_suite(path).tasks[0]
    assert task.scorer(task, "The answer: red").passed
    assert task.scorer(task, "green").feedback == "chose 'green', expected 'red'"


def test_choice_check_item():
    assert "required" in check("choice", None)
    assert "not one of" in check(CHOICES, "perhaps")
    assert check(CHOICES, "maybe") is None


# ---------------------------------------------------------------------- json
def test_json_exact_object():
    s = score("json", {"name": "Ada", "age": 36}, '{"age": 36, "name": "Ada"}')
    assert (s.value, s.passed) == (1.0, True)
    assert s.feedback == "JSON matches the expected fields"


def test_json_extra_fields_are_fine():
    assert score("json", {"name": "Ada"}, '{"name": "Ada", "born": 1815, "x": [1]}').passed


def test_json_nested_objects_and_lists():
    expected = {"user": {"name": "Ada", "langs": ["en", "fr"]}, "tags": [{"k": 1}, {"k": 2}]}
    answer = json.dumps(
        {
            "user": {"name": "Ada", "langs": ["en", "fr"], "id": 9},
            "tags": [{"k": 1, "extra": True}, {"k": 2}],
        }
    )
    assert score("json", expected, answer).passed
    wrong = json.dumps(
        {"user": {"name": "Ada", "langs": ["en", "de"]}, "tags": [{"k": 1}, {"k": 2}]}
    )
    s = score("json", expected, wrong)
    assert not s.passed
    assert s.value == pytest.approx(4 / 5)
    assert "$.user.langs[1]: expected 'fr', got 'de'" in s.feedback


def test_json_partial_credit_and_threshold():
    expected = {"a": 1, "b": 2, "c": 3, "d": 4}
    answer = '{"a": 1, "b": 2, "c": 0}'
    s = score("json", expected, answer)
    assert s.value == pytest.approx(0.5)
    assert not s.passed
    assert "$.c: expected 3, got 0" in s.feedback
    assert "$.d: missing" in s.feedback
    assert score({"type": "json", "threshold": 0.5}, expected, answer).passed
    assert not score({"type": "json", "threshold": 0.75}, expected, answer).passed


def test_json_list_length_mismatch():
    s = score("json", {"xs": [1, 2, 3]}, '{"xs": [1, 2]}')
    assert not s.passed
    assert "$.xs: expected a list of 3" in s.feedback


def test_json_type_strictness():
    assert score("json", {"n": 1}, '{"n": 1.0}').passed  # numbers compare by value
    assert not score("json", {"n": 1}, '{"n": "1"}').passed
    assert not score("json", {"flag": True}, '{"flag": 1}').passed
    assert not score("json", {"n": 1}, '{"n": true}').passed
    assert score("json", {"v": None}, '{"v": null}').passed


def test_json_type_mismatch_feedback_shows_the_types():
    # regression: numbers were quoted like strings, so this read "expected '1', got '1'"
    s = score("json", {"n": 1, "f": True, "s": "x"}, '{"n": "1", "f": "true", "s": 2}')
    assert s.value == 0.0
    assert "$.n: expected 1, got '1'" in s.feedback
    assert "$.f: expected true, got 'true'" in s.feedback
    assert "$.s: expected 'x', got 2" in s.feedback


def test_json_many_problems_are_capped():
    expected = {f"k{n}": n for n in range(12)}
    s = score("json", expected, "{}")
    assert s.value == 0.0
    assert s.feedback.count("missing") == 8
    assert s.feedback.endswith(" …")


def test_json_expected_object_got_array():
    s = score("json", {"a": 1}, "[1, 2]")
    assert s.value == 0.0
    assert "$: expected an object" in s.feedback


def test_json_fenced_answer():
    answer = 'Here it is:\n```json\n{"city": "Oslo", "pop": 700000}\n```\nAnything else?'
    assert score("json", {"city": "Oslo"}, answer).passed
    assert score("json", {"city": "Oslo"}, '```\n{"city": "Oslo"}\n```').passed


def test_json_prose_around_json():
    assert score("json", {"ok": True}, 'Sure! The result is {"ok": true} as requested.').passed


def test_json_not_json():
    s = score("json", {"ok": True}, "I could not do it {sorry}")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "answer is not JSON: 'I could not do it {sorry}'"


def test_json_expected_as_a_json_string():
    assert score("json", '{"a": [1, 2]}', '{"a": [1, 2], "b": 0}').passed


def test_json_check_item():
    assert "required" in check("json", None)
    assert "needs a JSON value" in check("json", "{broken")
    assert check("json", '{"a": 1}') is None
    assert check("json", {"a": 1}) is None


def test_parse_json_answer():
    assert parse_json_answer('  {"a": 1}  ') == {"a": 1}
    assert parse_json_answer("text [1, 2] more") == [1, 2]
    with pytest.raises(ValueError):
        parse_json_answer("nothing here")


# ---------------------------------------------------------------------- python
GRADING = """\
from skillopt.suite.scorers import Score


def as_bool(answer, expected, task):
    return answer.strip() == expected


def as_float(answer, expected, task):
    return len(answer) / 10


def as_dict(answer, expected, task):
    return {"score": 0.25, "feedback": f"task {task.id}: wanted {expected}, got {answer}"}


def as_dict_passed(answer, expected, task):
    return {"value": 0.25, "passed": True, "feedback": "lenient"}


def as_score(answer, expected, task):
    return Score(0.6, False, "custom feedback")


def raises(answer, expected, task):
    raise RuntimeError("grader is broken")


def returns_text(answer, expected, task):
    return "yes"


def dict_without_value(answer, expected, task):
    return {"feedback": "?"}
"""


def python_scorer(tmp_path, function, threshold=None, module="grading", source=GRADING):
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    spec = {"type": "python", "function": f"{module}:{function}"}
    if threshold is not None:
        spec["threshold"] = threshold
    return build_scorer(spec, tmp_path)


def test_python_scorer_from_a_loaded_suite(tmp_path, monkeypatch):
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "grading.py").write_text(GRADING, encoding="utf-8")
    path = write_suite(
        tmp_path / "suite" / "s.yaml",
        [
            {"id": "a", "input": "q", "expected": "42"},
        ],
        scorer={"type": "python", "function": "grading:as_bool"},
    )
    monkeypatch.chdir(tmp_path)  # imported from the suite's directory, not the cwd
    task = load_suite(path).tasks[0]
    assert task.scorer.spec["function"] == "grading:as_bool"
    good = task.scorer(task, " 42 ")
    assert (good.value, good.passed, good.feedback) == (1.0, True, "passed")
    bad = task.scorer(task, "41")
    assert (bad.value, bad.passed) == (0.0, False)
    assert bad.feedback == "grading:as_bool returned False"


def test_the_python_scorers_help_names_the_arguments_in_the_order_it_passes_them(tmp_path):
    """`skillopt plugins` documents the function a `python` scorer calls: a function
    written from that help must get each argument under the name the help gives it."""
    import re

    help = SCORERS["python"][1]
    names = re.search(r"`\(([a-z, ]+)\)", help).group(1).split(", ")
    source = (
        f"def graded({', '.join(names)}):\n"
        "    return answer == 'got' and expected == 'want' and task.id == 't1'\n"
    )
    scorer = python_scorer(tmp_path, "graded", module="from_help", source=source)
    assert scorer(make_task(scorer, expected="want"), "got").passed, help


def test_python_float_result(tmp_path):
    scorer = python_scorer(tmp_path, "as_float")
    s = scorer(make_task(scorer), "x" * 7)
    assert s.value == pytest.approx(0.7)
    assert not s.passed  # default threshold 1.0
    assert "scored 0.7" in s.feedback
    lenient = python_scorer(tmp_path, "as_float", threshold=0.5)
    assert lenient(make_task(lenient), "x" * 7).passed
    clamped = scorer(make_task(scorer), "x" * 30)
    assert (clamped.value, clamped.passed) == (1.0, True)


def test_python_dict_result_gets_answer_expected_and_task(tmp_path):
    scorer = python_scorer(tmp_path, "as_dict")
    s = scorer(make_task(scorer, "Paris", task_id="cap-1"), "Lyon")
    assert (s.value, s.passed) == (0.25, False)
    assert s.feedback == "task cap-1: wanted Paris, got Lyon"
    loose = python_scorer(tmp_path, "as_dict_passed")
    s = loose(make_task(loose), "anything")
    assert (s.value, s.passed, s.feedback) == (0.25, True, "lenient")


def test_python_score_result(tmp_path):
    scorer = python_scorer(tmp_path, "as_score")
    assert scorer(make_task(scorer), "a") == Score(0.6, False, "custom feedback")


def test_python_function_that_raises_is_unscored(tmp_path):
    scorer = python_scorer(tmp_path, "raises")
    with pytest.raises(ScorerError) as info:
        scorer(make_task(scorer), "answer")
    assert "grading:raises" in str(info.value)
    assert "RuntimeError: grader is broken" in str(info.value)


@pytest.mark.parametrize("function", ["returns_text", "dict_without_value"])
def test_python_unusable_result_is_unscored(tmp_path, function):
    scorer = python_scorer(tmp_path, function)
    with pytest.raises(ScorerError) as info:
        scorer(make_task(scorer), "answer")
    assert f"grading:{function}" in str(info.value)


def test_python_spec_has_a_source_hash_that_follows_the_file(tmp_path):
    first = python_scorer(tmp_path, "as_bool")
    again = python_scorer(tmp_path, "as_bool")
    assert first.spec == again.spec
    assert len(first.spec["source"]) == 16
    edited = GRADING.replace(
        "answer.strip() == expected", "answer.strip().lower() == str(expected).lower()  # edited"
    )
    changed = python_scorer(tmp_path, "as_bool", source=edited)
    assert changed.spec["source"] != first.spec["source"]
    assert {k: v for k, v in changed.spec.items() if k != "source"} == {
        k: v for k, v in first.spec.items() if k != "source"
    }
    # regression: the edited file is also what runs, not the module imported before
    assert changed(make_task(changed, "PARIS"), "paris").passed
    assert not first(make_task(first, "PARIS"), "paris").passed


def test_python_same_module_name_in_two_suites(tmp_path):
    # regression: the second suite used to get the first suite's cached module
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "check.py").write_text(
        "def f(answer, expected, task):\n    return answer == 'A'\n", encoding="utf-8"
    )
    (b / "check.py").write_text(
        "def f(answer, expected, task):\n    return answer == 'BB'\n", encoding="utf-8"
    )
    sa = build_scorer({"type": "python", "function": "check:f"}, a)
    sb = build_scorer({"type": "python", "function": "check:f"}, b)
    assert sa(make_task(sa), "A").passed
    assert sb(make_task(sb), "BB").passed
    assert not sb(make_task(sb), "A").passed
    assert sa.spec["source"] != sb.spec["source"]
    # and going back to the first directory finds its module again
    sa2 = build_scorer({"type": "python", "function": "check:f"}, a)
    assert sa2(make_task(sa2), "A").passed


def test_python_installed_module(tmp_path):
    scorer = build_scorer({"type": "python", "function": "os.path:isabs"}, tmp_path)
    # isabs(answer, expected, task) would be a TypeError: wrapped, unscored
    with pytest.raises(ScorerError):
        scorer(make_task(scorer), "/x")
    assert scorer.spec["source"]


# ---------------------------------------------------------------------- command
def command(run, **params):
    return {"type": "command", "run": run, **params}


def test_command_exit_zero_passes():
    s = score(command("exit 0"), None, "anything")
    assert (s.value, s.passed, s.feedback) == (1.0, True, "verifier passed")
    s = score(command("echo all 3 checks ok"), None, "anything")
    assert s.feedback == "all 3 checks ok"


def test_command_exit_one_fails_with_stderr_tail():
    s = score(command("echo 'assertion failed: 2 != 3' >&2; exit 1"), None, "x")
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "verifier exited 1: assertion failed: 2 != 3"
    quiet = score(command("exit 3"), None, "x")
    assert quiet.feedback == "verifier exited 3"


def test_command_long_output_keeps_the_tail():
    s = score(
        command(
            "i=0; while [ $i -lt 300 ]; do echo line-$i >&2; i=$((i+1)); done; "
            "echo FINAL-ERROR >&2; exit 1"
        ),
        None,
        "x",
    )
    assert not s.passed
    assert s.feedback.endswith("FINAL-ERROR")
    assert "line-0\n" not in s.feedback
    assert "…" in s.feedback
    assert len(s.feedback) < 700


def test_command_json_last_line():
    run = 'echo progress...; echo \'{"score": 0.5, "feedback": "half the tests pass"}\''
    s = score(command(run), None, "x")
    assert (s.value, s.passed, s.feedback) == (0.5, False, "half the tests pass")
    assert score(command(run, threshold=0.5), None, "x").passed
    # the JSON wins over the exit code
    s = score(command(run + "; exit 1"), None, "x")
    assert s.value == 0.5


def test_command_json_passed_and_clamping():
    s = score(command('echo \'{"score": 0.2, "passed": true}\''), None, "x")
    assert (s.value, s.passed) == (0.2, True)
    assert s.feedback == '{"score": 0.2, "passed": true}'  # no feedback: the output tail
    assert score(command("echo '{\"score\": 7}'"), None, "x").value == 1.0


def test_command_json_not_on_the_last_line_is_ignored():
    s = score(command("echo '{\"score\": 0.1}'; echo done; exit 1"), None, "x")
    assert s.value == 0.0
    assert s.feedback.startswith("verifier exited 1:")


def test_command_missing_binary_is_unscored():
    with pytest.raises(ScorerError) as info:
        score(command("definitely-not-a-real-verifier-xyz --check"), None, "x")
    assert "exit 127" in str(info.value)
    assert "definitely-not-a-real-verifier-xyz" in str(info.value)


def test_command_not_executable_is_unscored(tmp_path):
    script = tmp_path / "verify.sh"
    script.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    script.chmod(0o644)
    with pytest.raises(ScorerError) as info:
        score(command(str(script)), None, "x")
    assert "exit 126" in str(info.value)


def test_command_missing_workspace_is_unscored(tmp_path):
    with pytest.raises(ScorerError):
        score(command("true"), None, "x", ctx=ScoreContext(workspace=tmp_path / "gone"))


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_command_timeout_fails_and_kills_the_verifier(tmp_path):
    pid_file = tmp_path / "child.pid"
    start = time.monotonic()
    s = score(command(f"sleep 30 & echo $! > {pid_file}; wait", timeout=0.5), None, "x")
    assert time.monotonic() - start < 10
    assert (s.value, s.passed) == (0.0, False)
    assert s.feedback == "verifier timed out after 0.5s"
    # regression: the shell's children used to outlive the timeout
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)


def test_command_reads_answer_from_stdin():
    run = 'test "$(cat)" = "forty two"'
    assert score(command(run), None, "forty two").passed
    assert not score(command(run), None, "forty three").passed


def test_command_reads_answer_file():
    run = 'grep -qx "forty two" "$SKILLOPT_ANSWER_FILE"'
    assert score(command(run), None, "forty two").passed
    assert not score(command(run), None, "something else").passed


def test_command_gets_expected_task_id_and_suite_dir(tmp_path):
    run = 'test "$(cat)" = "$SKILLOPT_EXPECTED"'
    assert score(command(run), "Paris", "Paris").passed
    assert not score(command(run), "Paris", "Lyon").passed
    s = score(
        command('echo "$SKILLOPT_EXPECTED|$SKILLOPT_TASK_ID|$SKILLOPT_SUITE_DIR"'),
        {"a": [1, 2]},
        "x",
        base_dir=tmp_path,
        task_id="item-9",
    )
    exp, task_id, suite_dir = s.feedback.split("|")
    assert json.loads(exp) == {"a": [1, 2]}
    assert (task_id, suite_dir) == ("item-9", str(tmp_path))
    assert score(command('test -z "$SKILLOPT_EXPECTED"'), None, "x").passed


def test_command_runs_in_the_workspace(tmp_path):
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "built.txt").write_text("ok", encoding="utf-8")
    s = score(command("test -f built.txt && pwd -P"), None, "x", ctx=ScoreContext(workspace=ws))
    assert s.passed
    assert Path(s.feedback) == ws.resolve()
    # without a workspace it runs in a fresh temporary directory
    s = score(command("test -f built.txt"), None, "x")
    assert not s.passed
    s = score(command("pwd -P"), None, "x")
    assert "skillopt-verify-" in s.feedback
    assert Path(s.feedback) != Path.cwd().resolve()


def test_command_binary_output_does_not_crash():
    # regression: non-UTF-8 output raised UnicodeDecodeError out of the scorer
    s = score(command(r"printf 'bad \377\376 bytes'; exit 1"), None, "x")
    assert not s.passed
    assert s.feedback.startswith("verifier exited 1: bad ")


def test_command_script_next_to_the_suite(tmp_path):
    (tmp_path / "verify.sh").write_text(
        textwrap.dedent("""\
        #!/bin/sh
        answer=$(cat "$SKILLOPT_ANSWER_FILE")
        if [ "$answer" = "$SKILLOPT_EXPECTED" ]; then
            echo '{"score": 1, "feedback": "exactly right"}'
        else
            echo "wanted $SKILLOPT_EXPECTED, got $answer" >&2
            exit 1
        fi
        """),
        encoding="utf-8",
    )
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": "q", "expected": "yes"}],
        scorer=command('sh "$SKILLOPT_SUITE_DIR/verify.sh"', timeout=10),
    )
    task = load_suite(path).tasks[0]
    good = task.scorer(task, "yes")
    assert (good.value, good.passed, good.feedback) == (1.0, True, "exactly right")
    bad = task.scorer(task, "no")
    assert (bad.value, bad.passed) == (0.0, False)
    assert bad.feedback == "verifier exited 1: wanted yes, got no"


# ---------------------------------------------------------------------- judge
RUBRIC = "Award full marks only if the haiku has three lines."


def judge(reply, threshold=None):
    spec = {"type": "judge", "rubric": RUBRIC}
    if threshold is not None:
        spec["threshold"] = threshold
    scorer = build_scorer(spec, Path("."))
    model = ScriptedModel([reply])
    return scorer, model


def test_judge_scores_and_sees_rubric_task_and_answer():
    scorer, model = judge('{"score": 0.8, "feedback": "good"}')
    task = make_task(scorer, "An old silent pond", prompt="Write a haiku about a pond.")
    s = scorer(task, "Frog jumps in the pond", ScoreContext(judge=model))
    assert s == Score(0.8, True, "good")
    assert model.call_count == 1
    sent = model.calls[0].messages[-1]["content"]
    assert RUBRIC in sent
    assert "Write a haiku about a pond." in sent
    assert "Frog jumps in the pond" in sent
    assert "An old silent pond" in sent
    assert "{{" not in sent


def test_judge_without_expected():
    scorer, model = judge('{"score": 1, "feedback": "fine"}')
    scorer(make_task(scorer, None), "answer", ScoreContext(judge=model))
    assert "(none given)" in model.calls[0].messages[-1]["content"]


def test_judge_threshold():
    scorer, model = judge('{"score": 0.8, "feedback": "good"}', threshold=0.9)
    s = scorer(make_task(scorer), "a", ScoreContext(judge=model))
    assert (s.value, s.passed) == (0.8, False)


def test_judge_low_score_fails():
    scorer, model = judge('{"score": 0.2, "feedback": "only two lines"}')
    s = scorer(make_task(scorer), "a", ScoreContext(judge=model))
    assert (s.value, s.passed, s.feedback) == (0.2, False, "only two lines")


@pytest.mark.parametrize(
    "reply",
    [
        'Here is my verdict: {"score": 0.3, "feedback": "misses the form"} Hope that helps!',
        '```json\n{"score": 0.3, "feedback": "misses the form"}\n```',
    ],
)
def test_judge_reply_wrapped_in_prose(reply):
    scorer, model = judge(reply)
    s = scorer(make_task(scorer), "a", ScoreContext(judge=model))
    assert (s.value, s.passed, s.feedback) == (0.3, False, "misses the form")


def test_judge_reply_without_feedback_and_out_of_range():
    scorer, model = judge('{"score": 0.6}')
    assert scorer(make_task(scorer), "a", ScoreContext(judge=model)).feedback == "judge scored 0.60"
    scorer, model = judge('{"score": 3, "feedback": "wow"}')
    assert scorer(make_task(scorer), "a", ScoreContext(judge=model)).value == 1.0


@pytest.mark.parametrize(
    "reply",
    ["It is a lovely haiku, 8/10.", '{"feedback": "no score"}', '{"score": "high"}', "[0.8]"],
)
def test_judge_garbage_reply_is_unscored(reply):
    scorer, model = judge(reply)
    with pytest.raises(ScorerError) as info:
        scorer(make_task(scorer), "a", ScoreContext(judge=model))
    assert "no JSON score" in str(info.value)
    assert reply[:10] in str(info.value)


def test_judge_model_error_is_unscored():
    scorer, model = judge(ModelError("rate limited", kind="rate_limit"))
    with pytest.raises(ScorerError) as info:
        scorer(make_task(scorer), "a", ScoreContext(judge=model))
    assert "judge model failed" in str(info.value)
    assert "rate limited" in str(info.value)


def test_judge_without_a_model_is_unscored():
    scorer, _ = judge('{"score": 1}')
    with pytest.raises(ScorerError) as info:
        scorer(make_task(scorer), "a")
    assert "no judge model" in str(info.value)


# ---------------------------------------------------------------------- isolation
VERIFIER_SECRET = "sk-verifier-test-secret-0987654321"


def test_python_scorer_leaves_sys_path_as_it_was(tmp_path):
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    (suite_dir / "sibling_answers.py").write_text("WANT = '42'\n", encoding="utf-8")
    (suite_dir / "grading_sib.py").write_text(
        "from sibling_answers import WANT  # a sibling, imported at import time\n\n\n"
        "def check(answer, expected, task):\n    return answer.strip() == WANT\n",
        encoding="utf-8",
    )
    path = write_suite(
        suite_dir / "s.yaml",
        [{"id": "a", "input": "q"}],
        scorer={"type": "python", "function": "grading_sib:check"},
    )
    before = list(sys.path)
    task = load_suite(path).tasks[0]
    assert sys.path == before
    assert str(suite_dir) not in sys.path
    assert task.scorer(task, "42").passed
    assert not task.scorer(task, "41").passed
    assert sys.path == before


def test_python_scorer_restores_sys_path_when_the_import_fails(tmp_path):
    (tmp_path / "broken.py").write_text(
        "import sys\nsys.path.insert(0, '/somewhere/else')\nraise RuntimeError('boom')\n",
        encoding="utf-8",
    )
    before = list(sys.path)
    with pytest.raises(ValueError, match="cannot import module 'broken'.*boom"):
        build_scorer({"type": "python", "function": "broken:f"}, tmp_path)
    assert sys.path == before


def test_command_verifier_gets_a_scrubbed_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", VERIFIER_SECRET)
    monkeypatch.setenv("VERIFIER_TOOL_HOME", "/opt/tool")
    s = score(command('echo "[$OPENAI_API_KEY][$VERIFIER_TOOL_HOME][${PATH:+path}]"'), None, "x")
    assert s.feedback == "[][][path]"


def test_command_env_names_variables_to_pass(monkeypatch):
    monkeypatch.setenv("VERIFIER_TOOL_HOME", "/opt/tool")
    s = score(
        command('echo "[$VERIFIER_TOOL_HOME]"', env=["VERIFIER_TOOL_HOME", "UNSET_X"]), None, "x"
    )
    assert s.feedback == "[/opt/tool]"


def test_command_feedback_blanks_known_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", VERIFIER_SECRET)
    s = score(command('echo "key=$OPENAI_API_KEY" >&2; exit 1', env=["OPENAI_API_KEY"]), None, "x")
    assert s.feedback.startswith("verifier exited 1: key=")
    assert VERIFIER_SECRET not in s.feedback
    # in the JSON line too, even spelled with JSON escapes
    run = 'echo \'{"score": 0.5, "feedback": "saw \\u0073' + VERIFIER_SECRET[1:] + "\"}'"
    s = score(command(run), None, "x")
    assert s.value == 0.5 and s.feedback.startswith("saw ")
    assert VERIFIER_SECRET not in s.feedback


def test_command_feedback_is_storable():
    s = score(command('echo \'{"score": 0, "feedback": "bad \\ud800 char"}\''), None, "x")
    s.feedback.encode("utf-8")  # a lone surrogate is replaced, not kept
    assert s.feedback.startswith("bad ")


def test_command_verifier_cannot_see_us():
    from skillopt.harness import process

    # the patterns are split so that the command line holding them does not match
    s = score(
        command(
            "grep -ac py''test /proc/$PPID/cmdline; grep -ac ns_last''_pid "
            "/proc/$PPID/cmdline; ls /proc | grep -c '^[0-9]'"
        ),
        None,
        "x",
    )
    ours, init, count = s.feedback.splitlines()
    if process.pid_namespace_available():  # its parent is the namespace's init
        assert ours == "0" and int(init) >= 1
        assert int(count) <= 4  # the init, the shell and its pipeline


def test_command_spec_has_env_and_a_new_version():
    spec = build_scorer(command("true"), Path(".")).spec
    assert spec["v"] == 2  # the verifier's environment changed: stored scores are stale
    assert spec["env"] == []
    assert build_scorer(command("true", env=["A"]), Path(".")).spec != spec


# ---------------------------------------------------------------------- unloaded
def test_a_suite_loaded_without_its_code_imports_nothing_and_keys_the_same(tmp_path):
    """A replay loads a suite with `run_code=False`: its python and command scorers
    stand in with the same spec (the rollouts' keys) and never import or run."""
    marker = tmp_path / "imported.txt"
    (tmp_path / "sidecar.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
        "def score(answer, expected, task):\n    return True\n"
    )
    items = [
        {"id": "a", "input": "x", "expected": "x"},
        {"id": "b", "input": "y", "scorer": {"type": "command", "run": "touch nowhere"}},
        {"id": "c", "input": "z", "scorer": {"type": "python", "function": "json:dumps"}},
    ]
    path = write_suite(
        tmp_path / "s.yaml", items, scorer={"type": "python", "function": "sidecar:score"}
    )
    cold = load_suite(path, run_code=False)
    assert not marker.exists()
    assert all(isinstance(t.scorer, Unloaded) for t in cold.tasks)
    assert cold.tasks[0].scorer.code == "scorer.function: sidecar:score"
    assert cold.tasks[1].scorer.code == "scorer.run: touch nowhere"
    with pytest.raises(InputError, match="--trust-code"):
        cold.tasks[0].scorer(cold.tasks[0], "x")
    warm = load_suite(path)
    assert marker.exists()
    assert [t.scorer.spec for t in cold.tasks] == [t.scorer.spec for t in warm.tasks]
