"""Loading task suites: inline YAML items, referenced or direct JSONL, prompt
templates, and one located `InputError` per problem."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers import write_suite

from skillopt.errors import InputError
from skillopt.suite import SPLITS, Suite, load_suite, require_split
from skillopt.suite.scorers import Contains, Exact, Regex


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def load_error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_suite(path)
    return info.value


ITEMS = [
    {"id": "a", "input": "2+2?", "expected": "4"},
    {"id": "b", "input": "3+3?", "expected": "6"},
]


# ---------------------------------------------------------------------- happy paths
def test_inline_items_load_into_tasks(tmp_path):
    path = write(
        tmp_path / "math.yaml",
        """\
        name: arithmetic
        description: Small sums.
        judge: openai/gpt-4o-mini
        defaults: {concurrency: 3}
        items:
          - id: a
            input: 2+2?
            expected: "4"
            metadata: {level: easy}
          - id: b
            input: 3+3?
            expected: "6"
            files: {notes.txt: "hello"}
        """,
    )
    suite = load_suite(path)
    assert isinstance(suite, Suite)
    assert suite.name == "arithmetic"
    assert suite.description == "Small sums."
    assert suite.judge == "openai/gpt-4o-mini"
    assert suite.defaults == {"concurrency": 3}
    assert suite.path == path
    assert [t.id for t in suite.tasks] == ["a", "b"]
    a, b = suite.tasks
    assert (a.input, a.expected, a.prompt) == ("2+2?", "4", "2+2?")
    assert a.metadata == {"level": "easy"}
    assert b.files == {"notes.txt": "hello"}
    assert a.source == f"{path}:6"
    assert b.source == f"{path}:10"
    assert all(t.split in SPLITS for t in suite.tasks)
    assert isinstance(a.scorer, Exact)
    assert suite.get("b") is b
    with pytest.raises(KeyError):
        suite.get("zzz")


def test_name_defaults_to_file_stem(tmp_path):
    path = tmp_path / "capitals.yaml"
    path.write_text(
        textwrap.dedent("""\
        items:
          - {id: x, input: Capital of France, expected: Paris}
        """),
        encoding="utf-8",
    )
    assert load_suite(path).name == "capitals"


def test_write_suite_helper_roundtrip(tmp_path):
    path = write_suite(tmp_path / "s.yaml", ITEMS, description="via helper", scorer="normalized")
    suite = load_suite(str(path))  # a str path works too
    assert suite.name == "s"
    assert suite.description == "via helper"
    assert [t.expected for t in suite.tasks] == ["4", "6"]
    assert {t.scorer.name for t in suite.tasks} == {"normalized"}


def test_referenced_jsonl_items(tmp_path):
    (tmp_path / "data").mkdir()
    data = tmp_path / "data" / "rows.jsonl"
    data.write_text(
        '{"id": "r1", "input": "one", "expected": "1"}\n'
        "\n"
        '{"id": "r2", "input": "two", "expected": "2"}\n',
        encoding="utf-8",
    )
    path = write(
        tmp_path / "suite.yaml",
        """\
        name: numbers
        items: data/rows.jsonl
        """,
    )
    suite = load_suite(path)
    assert [t.id for t in suite.tasks] == ["r1", "r2"]
    assert [t.expected for t in suite.tasks] == ["1", "2"]
    # blank lines are skipped but still counted for line numbers
    assert suite.tasks[0].source == f"{data}:1"
    assert suite.tasks[1].source == f"{data}:3"


def test_jsonl_given_directly_as_the_suite(tmp_path):
    path = write_jsonl(
        tmp_path / "trivia-qa.jsonl",
        [
            {"id": 1, "input": "Capital of France?", "expected": "Paris"},
            {"id": 2, "input": "Capital of Italy?", "expected": "Rome"},
        ],
    )
    suite = load_suite(path)
    assert suite.name == "trivia-qa"
    assert [t.id for t in suite.tasks] == ["1", "2"]
    assert suite.tasks[0].prompt == "Capital of France?"
    assert isinstance(suite.tasks[0].scorer, Exact)
    assert suite.tasks[1].source == f"{path}:2"


def test_integer_ids_become_strings(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [
            {"id": 7, "input": "q", "expected": "a"},
            {"id": "8", "input": "q", "expected": "a"},
        ],
    )
    suite = load_suite(path)
    assert [t.id for t in suite.tasks] == ["7", "8"]
    assert all(isinstance(t.id, str) for t in suite.tasks)
    assert suite.get("7").id == "7"


def test_item_scorer_overrides_suite_scorer(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [
            {"id": "a", "input": "q", "expected": "x"},
            {"id": "b", "input": "q", "expected": ["x", "y"], "scorer": "contains"},
            {"id": "c", "input": "q", "scorer": {"type": "regex", "pattern": "^ok$"}},
        ],
        scorer={"type": "exact", "ignore_case": True},
    )
    a, b, c = load_suite(path).tasks
    assert isinstance(a.scorer, Exact) and a.scorer.params.ignore_case is True
    assert isinstance(b.scorer, Contains)
    assert isinstance(c.scorer, Regex) and c.expected is None


def test_task_content_is_what_changes_the_outcome(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": {"q": 1}, "expected": "x", "files": {"f.txt": "hi"}}],
        prompt="Q{q}",
    )
    task = load_suite(path).tasks[0]
    assert task.content() == {
        "id": "a",
        "input": {"q": 1},
        "expected": "x",
        "prompt": "Q1",
        "files": {"f.txt": "hi"},
    }


def test_yaml_merge_keys_may_override_merged_fields(tmp_path):
    # regression: a key overriding one merged in by `<<` was reported as a duplicate
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - &base
            id: a
            input: shared question
            expected: x
          - <<: *base
            id: b
            expected: y
        """,
    )
    a, b = load_suite(path).tasks
    assert (a.id, a.input, a.expected) == ("a", "shared question", "x")
    assert (b.id, b.input, b.expected) == ("b", "shared question", "y")


# ---------------------------------------------------------------------- templates
def test_template_with_string_input(tmp_path):
    path = write_suite(tmp_path / "s.yaml", ITEMS, prompt="Solve: {input}\nAnswer with a number.")
    assert load_suite(path).tasks[0].prompt == "Solve: 2+2?\nAnswer with a number."


def test_template_mapping_input_exposes_keys_and_json_input(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [
            {"id": "a", "input": {"city": "Lyon", "country": "France", "n": 3}, "expected": "x"},
        ],
        prompt="{city} is in {country} ({n}) [{id}] :: {input}",
    )
    prompt = load_suite(path).tasks[0].prompt
    head, _, tail = prompt.partition(" :: ")
    assert head == "Lyon is in France (3) [a]"
    assert json.loads(tail) == {"city": "Lyon", "country": "France", "n": 3}


def test_template_non_string_input_is_json(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": ["é", 2], "expected": "x"}],
        prompt="Data: {input}",
    )
    assert load_suite(path).tasks[0].prompt == 'Data: ["é", 2]'  # ensure_ascii off


def test_template_double_braces_are_literal(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": {"k": "v"}, "expected": "x"}],
        prompt='Reply as {{"key": "{k}"}} not {{k}}',
    )
    assert load_suite(path).tasks[0].prompt == 'Reply as {"key": "v"} not {k}'


def test_template_slot_missing_from_string_input(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        prompt: "Hello {name}"
        items:
          - id: first
            input: just text
            expected: x
        """,
    )
    err = load_error(path)
    msg = str(err)
    assert f"{path}:3" in msg
    assert "item 'first'" in msg
    assert "field 'input'" in msg
    assert "{name}" in msg
    assert (err.item, err.field, err.line) == ("first", "input", 3)


def test_template_slot_missing_from_one_mapping_input(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        prompt: "{city} in {country}"
        items:
          - id: ok
            input: {city: Lyon, country: France}
            expected: x
          - id: partial
            input: {city: Oslo}
            expected: x
        """,
    )
    err = load_error(path)
    assert err.item == "partial"
    assert "{country}" in str(err)
    assert f"{path}:6" in str(err)


@pytest.mark.parametrize(
    "template", ["Broken {input", "{input!z}", "{0}", "{input.upper.x}", "{input[key]}"]
)
def test_invalid_template_names_the_prompt_field(tmp_path, template):
    path = write_suite(tmp_path / "s.yaml", ITEMS, prompt=template)
    err = load_error(path)
    assert err.field == "prompt"
    assert str(path) in str(err)
    assert "field 'prompt'" in str(err)


def test_template_error_that_depends_on_the_item(tmp_path):
    # regression: `{q[name]}` on a string slot raised a bare TypeError
    path = write_suite(
        tmp_path / "s.yaml",
        [
            {"id": "ok", "input": {"q": {"name": "Bo"}}, "expected": "x"},
            {"id": "bad", "input": {"q": "text"}, "expected": "x"},
        ],
        prompt="Hi {q[name]}",
    )
    err = load_error(path)
    assert (err.item, err.field) == ("bad", "prompt")
    assert "cannot fill the prompt template" in str(err)


# ---------------------------------------------------------------------- file-level errors
def test_missing_suite_file(tmp_path):
    err = load_error(tmp_path / "nope.yaml")
    assert "no such task suite file" in str(err)
    assert str(tmp_path / "nope.yaml") in str(err)


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: [unclosed
            expected: x
          - id: b
        """,
    )
    err = load_error(path)
    assert str(err).startswith(f"{path}:")
    assert "invalid YAML" in str(err)
    # the line of the bracket left open, not the one where the parser gave up
    assert err.line == 3 and f"{path}:3:" in str(err)
    assert "(line 4) in the flow sequence that begins on this line" in str(err)


def test_an_unclosed_quote_is_reported_on_its_own_line(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """        items:
          - id: a
            input: "unclosed
            expected: x
          - id: b
        """,
    )
    err = load_error(path)
    assert err.line == 3 and "in the quoted scalar that begins on this line" in str(err)


def test_malformed_yaml_indentation_reports_its_line(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
           expected: x
        """,
    )
    err = load_error(path)
    assert "invalid YAML" in str(err)
    assert err.line == 4
    assert f"{path}:4" in str(err)


def test_yaml_that_is_not_a_mapping(tmp_path):
    path = write(tmp_path / "s.yaml", "- id: a\n  input: q\n")
    err = load_error(path)
    assert "must be a YAML mapping" in str(err)
    assert str(path) in str(err)


def test_suite_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"items:\n  - id: a\n    input: caf\xe9\n")
    err = load_error(path)
    assert "UTF-8" in str(err)
    assert str(path) in str(err)


def test_unknown_top_level_field(tmp_path):
    path = write_suite(tmp_path / "s.yaml", ITEMS, scorrer="exact")
    err = load_error(path)
    assert err.field == "scorrer"
    assert "unknown field" in str(err)
    assert str(path) in str(err)


def test_items_missing_entirely(tmp_path):
    path = write(tmp_path / "s.yaml", "name: x\n")
    err = load_error(path)
    assert err.field == "items"
    assert "required" in str(err)


def test_empty_items_list(tmp_path):
    path = write_suite(tmp_path / "s.yaml", [])
    err = load_error(path)
    assert "no items" in str(err)
    assert err.field == "items"
    assert str(path) in str(err)


def test_empty_jsonl_file(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("\n\n", encoding="utf-8")
    path = write(tmp_path / "s.yaml", "items: rows.jsonl\n")
    err = load_error(path)
    assert "no items" in str(err)
    assert str(data) in str(err)


def test_missing_jsonl_file(tmp_path):
    path = write(tmp_path / "s.yaml", "items: data/missing.jsonl\n")
    err = load_error(path)
    assert "not found" in str(err)
    assert str(tmp_path / "data" / "missing.jsonl") in str(err)
    assert err.field == "items"


def test_malformed_jsonl_line_names_the_line(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text(
        '{"id": "a", "input": "q", "expected": "x"}\n'
        '{"id": "b", "input": "q", "expected": "x"}\n'
        '{"id": "c", "input": "q" "expected": "x"}\n',
        encoding="utf-8",
    )
    path = write(tmp_path / "s.yaml", "items: rows.jsonl\n")
    err = load_error(path)
    assert f"{data}:3" in str(err)
    assert "invalid JSON" in str(err)
    assert err.line == 3


def test_malformed_jsonl_given_directly(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"id": "a", "input": "q", "expected": "x"}\nnot json\n', encoding="utf-8")
    err = load_error(data)
    assert f"{data}:2" in str(err)


# ---------------------------------------------------------------------- item-level errors
def test_non_mapping_item_in_yaml(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - just a string
        """,
    )
    err = load_error(path)
    assert "must be a mapping" in str(err)
    assert "got str" in str(err)
    assert err.item == "#2"
    assert str(path) in str(err)


def test_non_mapping_item_in_jsonl(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"id": "a", "input": "q", "expected": "x"}\n[1, 2]\n', encoding="utf-8")
    err = load_error(data)
    assert "must be a mapping" in str(err)
    assert "got list" in str(err)
    assert f"{data}:2" in str(err)


def test_missing_input(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - id: no-input
            expected: x
        """,
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("no-input", "input", 5)
    assert "required" in str(err)
    assert str(err).startswith(f"{path}:5: item 'no-input': field 'input'")


def test_null_input(tmp_path):
    path = write_suite(tmp_path / "s.yaml", [{"id": "a", "input": None, "expected": "x"}])
    err = load_error(path)
    assert (err.item, err.field) == ("a", "input")
    assert "must not be empty" in str(err)


def test_missing_id(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": "q", "expected": "x"}, {"input": "q", "expected": "x"}],
    )
    err = load_error(path)
    assert err.field == "id"
    assert err.item == "#2"
    assert "required" in str(err)


def test_blank_id(tmp_path):
    path = write_suite(tmp_path / "s.yaml", [{"id": "  ", "input": "q", "expected": "x"}])
    err = load_error(path)
    assert err.field == "id"
    assert "must not be empty" in str(err)


def test_missing_expected_for_exact(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        scorer: exact
        items:
          - id: a
            input: q
            expected: x
          - id: b
            input: q
        """,
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("b", "expected", 6)
    assert "required by scorer 'exact'" in str(err)
    assert str(path) in str(err)


def test_missing_expected_is_fine_when_the_scorer_does_not_need_it(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml", [{"id": "a", "input": "q"}], scorer={"type": "regex", "pattern": "ok"}
    )
    assert load_suite(path).tasks[0].expected is None


def test_missing_expected_in_jsonl_names_the_line(tmp_path):
    data = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"id": "a", "input": "q", "expected": "x"}, {"id": "b", "input": "q"}],
    )
    err = load_error(data)
    assert f"{data}:2" in str(err)
    assert (err.item, err.field) == ("b", "expected")


def test_duplicate_ids_mention_the_first_occurrence(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - id: b
            input: q
            expected: x
          - id: a
            input: q2
            expected: y
        """,
    )
    err = load_error(path)
    msg = str(err)
    assert (err.item, err.field, err.line) == ("a", "id", 8)
    assert "duplicate id" in msg
    assert "first at line 2" in msg
    assert msg.startswith(f"{path}:8")


def test_duplicate_ids_in_jsonl(tmp_path):
    data = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {"id": "a", "input": "q", "expected": "x"},
            {"id": "b", "input": "q", "expected": "x"},
            {"id": "c", "input": "q", "expected": "x"},
            {"id": "b", "input": "q", "expected": "x"},
        ],
    )
    err = load_error(data)
    assert f"{data}:4" in str(err)
    assert "first at line 2" in str(err)


def test_int_and_string_ids_that_collide_are_duplicates(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": 1, "input": "q", "expected": "x"}, {"id": "1", "input": "q", "expected": "x"}],
    )
    err = load_error(path)
    assert "duplicate id" in str(err)
    assert err.item == "1"


def test_duplicate_yaml_key_within_an_item(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - id: b
            input: q
            expected: x
            expected: y
        """,
    )
    err = load_error(path)
    msg = str(err)
    assert msg.startswith(f"{path}:8")
    assert "duplicate key 'expected'" in msg
    assert "item 'b'" in msg
    assert "first at line 7" in msg


def test_duplicate_top_level_key(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        prompt: "{input}"
        prompt: "again {input}"
        items:
          - {id: a, input: q, expected: x}
        """,
    )
    err = load_error(path)
    assert "duplicate key 'prompt'" in str(err)
    assert err.line == 2


def test_unhashable_yaml_key_is_an_input_error(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
            ? [1, 2]
            : z
        """,
    )
    err = load_error(path)
    assert "invalid YAML" in str(err)
    assert str(path) in str(err)


def test_unknown_item_field(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - id: typo
            input: q
            expectd: x
        """,
    )
    err = load_error(path)
    msg = str(err)
    assert (err.item, err.field, err.line) == ("typo", "expectd", 7)  # the key's own line
    assert msg == f"{path}:7: item 'typo': field 'expectd': unknown field; did you mean 'expected'?"


def test_invalid_split_pin(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml", [{"id": "a", "input": "q", "expected": "x", "split": "dev"}]
    )
    err = load_error(path)
    assert (err.item, err.field) == ("a", "split")
    assert "train" in str(err)


def test_metadata_must_be_a_mapping(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml", [{"id": "a", "input": "q", "expected": "x", "metadata": ["x"]}]
    )
    err = load_error(path)
    assert (err.item, err.field) == ("a", "metadata")


# ---------------------------------------------------------------------- scorer errors
def test_unknown_suite_scorer(tmp_path):
    path = write_suite(tmp_path / "s.yaml", ITEMS, scorer="exat")
    err = load_error(path)
    msg = str(err)
    assert err.field == "scorer"
    assert "unknown scorer 'exat'" in msg
    assert "exact" in msg.split("choose one of:")[1]
    assert str(path) in msg


def test_unknown_item_scorer(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - id: b
            input: q
            expected: x
            scorer: fuzzy
        """,
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("b", "scorer", 8)
    assert "unknown scorer 'fuzzy'" in str(err)


def test_unknown_scorer_parameter(tmp_path):
    path = write_suite(tmp_path / "s.yaml", ITEMS, scorer={"type": "exact", "ignorecase": True})
    err = load_error(path)
    assert err.field == "scorer"
    assert "'ignorecase'" in str(err)
    assert "'exact'" in str(err)


def test_unknown_item_scorer_parameter(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [
            {
                "id": "a",
                "input": "q",
                "expected": "4",
                "scorer": {"type": "number", "tolerence": 1},
            },
        ],
    )
    err = load_error(path)
    assert (err.item, err.field) == ("a", "scorer")
    assert "'tolerence'" in str(err)


def test_bad_scorer_parameter_type(tmp_path):
    path = write_suite(tmp_path / "s.yaml", ITEMS, scorer={"type": "number", "tolerance": "lots"})
    err = load_error(path)
    assert err.field == "scorer"
    assert "'tolerance'" in str(err)


def test_scorer_mapping_without_type(tmp_path):
    path = write_suite(tmp_path / "s.yaml", ITEMS, scorer={"pattern": "x"})
    err = load_error(path)
    assert err.field == "scorer"
    assert "'type'" in str(err)


def test_invalid_regex_parameter(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": "q"}],
        scorer={"type": "regex", "pattern": "(unclosed"},
    )
    err = load_error(path)
    assert err.field == "scorer"
    assert "invalid pattern" in str(err)
    assert str(path) in str(err)


def test_invalid_regex_as_expected(tmp_path):
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": "q", "expected": "ok"}, {"id": "b", "input": "q", "expected": "[a-"}],
        scorer="regex",
    )
    err = load_error(path)
    assert (err.item, err.field) == ("b", "expected")
    assert "not a valid regular expression" in str(err)


@pytest.mark.parametrize(
    ("function", "needle"),
    [
        ("no_such_module_xyz:check", "cannot import module 'no_such_module_xyz'"),
        ("checks_mod:missing", "has no function 'missing'"),
        ("checks_mod", "module:function"),
        ("broken_mod:check", "SyntaxError"),
    ],
)
def test_python_scorer_that_cannot_be_imported(tmp_path, function, needle):
    (tmp_path / "checks_mod.py").write_text(
        "def check(a, e, t):\n    return True\n", encoding="utf-8"
    )
    (tmp_path / "broken_mod.py").write_text(
        "def check(a, e, t)\n    return True\n", encoding="utf-8"
    )
    path = write_suite(
        tmp_path / "s.yaml",
        [{"id": "a", "input": "q"}],
        scorer={"type": "python", "function": function},
    )
    err = load_error(path)
    assert err.field == "scorer"
    assert needle in str(err)
    assert str(path) in str(err)


def test_python_item_scorer_that_cannot_be_imported(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - id: b
            input: q
            scorer: {type: python, function: "nowhere_mod_abc:f"}
        """,
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("b", "scorer", 7)
    assert "cannot import module" in str(err)


@pytest.mark.parametrize(
    ("scorer", "expected", "needle"),
    [
        ("number", "many", "needs a number"),
        ("number", True, "needs a number"),
        ({"type": "choice", "choices": ["yes", "no"]}, "maybe", "not one of"),
        ("json", "{not json", "needs a JSON value"),
        ("contains", [{"a": 1}], "list of strings"),
    ],
)
def test_expected_invalid_for_the_scorer(tmp_path, scorer, expected, needle):
    path = write_suite(
        tmp_path / "s.yaml", [{"id": "a", "input": "q", "expected": expected}], scorer=scorer
    )
    err = load_error(path)
    assert (err.item, err.field) == ("a", "expected")
    assert needle in str(err)


# ---------------------------------------------------------------------- require_split
def pinned_suite(tmp_path) -> Suite:
    items = [{"id": f"i{n}", "input": "q", "expected": "x", "split": "train"} for n in range(3)]
    items.append({"id": "t", "input": "q", "expected": "x", "split": "test"})
    return load_suite(write_suite(tmp_path / "pinned.yaml", items))


def test_require_split_returns_the_split(tmp_path):
    suite = pinned_suite(tmp_path)
    assert [t.id for t in require_split(suite, "train")] == ["i0", "i1", "i2"]
    assert [t.id for t in require_split(suite, "test")] == ["t"]
    assert [t.id for t in require_split(suite, "all")] == ["i0", "i1", "i2", "t"]
    assert suite.counts() == {"train": 3, "val": 0, "test": 1}


def test_require_split_on_an_empty_split(tmp_path):
    suite = pinned_suite(tmp_path)
    with pytest.raises(InputError) as info:
        require_split(suite, "val")
    msg = str(info.value)
    assert "'val' is empty" in msg
    assert "train=3" in msg and "val=0" in msg and "test=1" in msg
    assert str(suite.path) in msg
    assert info.value.field == "split"


def test_require_split_unknown_name(tmp_path):
    suite = pinned_suite(tmp_path)
    with pytest.raises(InputError) as info:
        require_split(suite, "dev")
    assert "unknown split 'dev'" in str(info.value)
    assert "train, val, test or all" in str(info.value)


# -- typos: the key's own line and the closest name -------------------------------------
def test_top_level_typo_points_at_its_line_and_suggests(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        name: codes
        description: product codes
        scorrer: exact
        items:
          - {id: a, input: q, expected: x}
        """,
    )
    err = load_error(path)
    assert (err.field, err.line) == ("scorrer", 3)
    assert str(err) == f"{path}:3: field 'scorrer': unknown field; did you mean 'scorer'?"


def test_split_typo_points_at_its_line_and_suggests(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        name: codes
        split:
          seed: 3
          train: 0.5
          valid: 0.5
        items:
          - {id: a, input: q, expected: x}
        """,
    )
    err = load_error(path)
    assert (err.field, err.line) == ("split.valid", 5)
    assert str(err).endswith("field 'split.valid': unknown field; did you mean 'val'?")


def test_the_outermost_typo_is_reported_first(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        split: {train: 0.5, valid: 0.5}
        scorrer: exact
        items:
          - {id: a, input: q, expected: x}
        """,
    )
    assert (load_error(path).field, load_error(path).line) == ("scorrer", 2)


def test_an_unknown_key_with_nothing_close_lists_the_allowed_ones(tmp_path):
    path = write(tmp_path / "s.yaml", "items:\n  - {id: a, input: q, expected: x}\nzzz: 1\n")
    err = load_error(path)
    assert err.line == 3
    assert str(err).endswith(
        "field 'zzz': unknown field; allowed: name, description, prompt, scorer, split, "
        "judge, defaults, mapping, triggers, items"
    )


def test_item_typo_is_reported_before_the_missing_key_it_explains(tmp_path):
    """`imput` is unknown and so `input` is missing: the typo is the problem to name."""
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: x
          - id: b
            expected: y
            imput: q
        """,
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("b", "imput", 7)
    assert str(err).endswith("field 'imput': unknown field; did you mean 'input'?")


def test_item_key_line_in_flow_style(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        "items:\n  - {id: a, input: q, expected: x}\n  - {id: b, input: q,\n     Expected: y}\n",
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("b", "Expected", 4)
    assert "did you mean 'expected'?" in str(err)


def test_scorer_parameter_typo_names_the_scorer_and_its_parameters(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        name: codes
        scorer:
          type: regex
          patern: "^[A-Z]+-[0-9]+$"
        items:
          - {id: a, input: q}
        """,
    )
    err = load_error(path)
    assert (err.field, err.line) == ("scorer", 4)
    message = str(err)
    assert "Extra inputs" not in message
    assert message == (
        f"{path}:4: field 'scorer': scorer 'regex' has no parameter 'patern'; did you mean "
        "'pattern'? (its parameters: type, pattern, ignore_case, fullmatch, threshold)"
    )


def test_item_scorer_parameter_typo_points_at_the_parameter(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        """\
        items:
          - id: a
            input: q
            expected: 4
            scorer:
              type: number
              tolerence: 0.5
        """,
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("a", "scorer", 7)
    assert "scorer 'number' has no parameter 'tolerence'; did you mean 'tolerance'?" in str(err)
    assert "(its parameters: type, tolerance, relative, threshold)" in str(err)


def test_a_bad_parameter_value_points_at_the_parameter(tmp_path):
    path = write(
        tmp_path / "s.yaml",
        "scorer:\n  type: number\n  tolerance: lots\nitems:\n  - {id: a, input: q, expected: 1}\n",
    )
    err = load_error(path)
    assert (err.field, err.line) == ("scorer", 3)
    assert "scorer 'number' parameter 'tolerance'" in str(err)


def test_unknown_scorer_type_suggests_the_closest(tmp_path):
    path = write(tmp_path / "s.yaml", "scorer: exatc\nitems:\n  - {id: a, input: q, expected: x}\n")
    err = load_error(path)
    assert err.line == 1
    assert "unknown scorer 'exatc'; did you mean 'exact'? choose one of: exact," in str(err)


def test_a_key_written_through_a_merge_falls_back_to_its_item(tmp_path):
    """A key that came from a `<<` merge is not written in the item: its line is the
    item's."""
    path = write(
        tmp_path / "s.yaml",
        """\
        defaults: &base {expectd: x}
        items:
          - id: a
            input: q
            <<: *base
        """,
    )
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("a", "expectd", 3)
    assert "did you mean 'expected'?" in str(err)


def test_jsonl_items_keep_the_jsonl_line(tmp_path):
    items = write_jsonl(
        tmp_path / "items.jsonl",
        [{"id": "a", "input": "q", "expected": "x"}, {"id": "b", "inptu": "q"}],
    )
    path = write(tmp_path / "s.yaml", f"name: s\nitems: {items.name}\n")
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("b", "inptu", 2)
    assert "did you mean 'input'?" in str(err)


@pytest.mark.parametrize(
    "keys, line",
    [
        (("name",), 1),
        (("split", "val"), 3),
        (("items", 0, "id"), 5),
        (("items", 1, "input"), 7),
        (("items", 1, "scorer", "type"), 8),
        (("items", 2, "id"), 9),
        (("items", 2, "metadata", "k"), 9),
        (("items", 3, "id"), None),  # no fourth item
        (("nope",), None),
        (("split", "nope"), None),
        ((), None),
    ],
)
def test_key_line(tmp_path, keys, line):
    from skillopt.suite.readers import key_line

    path = write(
        tmp_path / "s.yaml",
        """\
        name: x
        split:
          val: 0.5
        items:
          - id: a
          - id: b
            input: [1, {input: 2}]
            scorer: {type: exact}
          - {id: c, metadata: {k: v}, ? [complex, key] : 1}
        """,
    )
    assert key_line(path, keys) == line


def test_key_line_on_an_unreadable_file(tmp_path):
    from skillopt.suite.readers import key_line

    assert key_line(tmp_path / "missing.yaml", ("a",)) is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    assert key_line(bad, ("b",)) is None
