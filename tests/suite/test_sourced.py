"""Task sources where a suite is expected: `load_suite` on a CSV, a JSON table or a
saved dataset, a suite file whose `items:` names a source with a `mapping:`, and the
items of a source checked as a suite's own are."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from skillopt.errors import InputError
from skillopt.suite.loader import load_suite


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(path: Path | str) -> InputError:
    with pytest.raises(InputError) as info:
        load_suite(path)
    return info.value


def test_a_csv_is_a_suite(tmp_path):
    path = write(tmp_path / "qa.csv", "question,answer,fold\nabc,ABC,test\ndef,DEF,\n")
    suite = load_suite(path)
    assert suite.name == "qa" and suite.path == path
    assert [(t.id, t.prompt, t.expected) for t in suite.tasks] == [
        ("qa-0001", "abc", "ABC"),
        ("qa-0002", "def", "DEF"),
    ]
    assert suite.tasks[0].metadata == {"fold": "test"}  # not a split unless named one


def test_a_json_table_is_a_suite_and_its_items_are_checked(tmp_path):
    good = write(tmp_path / "t.json", json.dumps([{"prompt": "p", "answer": "A"}]))
    assert load_suite(good).tasks[0].input == "p"
    bad = write(tmp_path / "bad.json", json.dumps([{"prompt": "p"}]))
    err = load_error(bad)  # no expected answer for the default exact scorer
    assert (err.path, err.item, err.field) == (bad, "bad-0001", "expected")


def test_a_suite_reads_its_items_from_a_csv_with_a_mapping(tmp_path):
    write(
        tmp_path / "data.csv",
        "qid,Question Text,Reply,Fold\nq1,abc,ABC,train\nq2,xyz,XYZ,validation\n",
    )
    suite = load_suite(
        write(
            tmp_path / "qa.yaml",
            """\
            name: qa
            prompt: "Q: {input}"
            scorer: normalized
            items: data.csv
            mapping: {input: Question Text, expected: Reply, id: qid, split: Fold}
            """,
        )
    )
    assert [(t.id, t.prompt, t.expected, t.split) for t in suite.tasks] == [
        ("q1", "Q: abc", "ABC", "train"),
        ("q2", "Q: xyz", "XYZ", "val"),
    ]
    assert suite.tasks[0].scorer.spec["type"] == "normalized"


def test_a_suite_reads_a_saved_dataset_split(tmp_path):
    import datasets

    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"q": ["a"], "a": ["A"]}),
            "test": datasets.Dataset.from_dict({"q": ["b", "c"], "a": ["B", "C"]}),
        }
    ).save_to_disk(str(tmp_path / "ds"))
    path = write(tmp_path / "s.yaml", "items: ds\nmapping: {input: q, expected: a, subset: test}\n")
    assert [t.input for t in load_suite(path).tasks] == ["b", "c"]


def test_a_mapping_typo_gets_did_you_mean_and_its_line(tmp_path):
    write(tmp_path / "data.csv", "question,answer\na,A\n")
    path = write(
        tmp_path / "s.yaml", "items: data.csv\nmapping:\n  input: question\n  expeted: answer\n"
    )
    err = load_error(path)
    assert (err.field, err.line) == ("mapping.expeted", 4)
    assert "did you mean 'expected'?" in str(err)


def test_a_mapping_for_inline_items_is_refused(tmp_path):
    path = write(
        tmp_path / "s.yaml", "mapping: {input: q}\nitems:\n  - {id: a, input: b, expected: c}\n"
    )
    err = load_error(path)
    assert (err.field, err.line) == ("mapping", 1)


def test_a_missing_mapped_field_names_the_source(tmp_path):
    data = write(tmp_path / "data.csv", "question,answer\na,A\n")
    path = write(tmp_path / "s.yaml", "items: data.csv\nmapping: {input: Question Txt}\n")
    err = load_error(path)
    assert (err.path, err.field) == (data, "input")


def test_skillopt_jsonl_items_are_read_as_before(tmp_path):
    """`items: x.jsonl` without a mapping is skillopt's own shape: an unknown key is
    still an error, not a field to guess around."""
    write(tmp_path / "rows.jsonl", '{"id": "a", "input": "q", "expected": "x", "extra": 1}\n')
    path = write(tmp_path / "s.yaml", "items: rows.jsonl\n")
    err = load_error(path)
    assert (err.item, err.field, err.line) == ("a", "extra", 1)


def test_a_jsonl_of_other_fields_given_as_the_suite(tmp_path):
    path = write(tmp_path / "qa.jsonl", '{"question": "q", "answer": "Q"}\n')
    assert [(t.id, t.input) for t in load_suite(path).tasks] == [("qa-0001", "q")]


def test_a_hub_id_as_the_suite_is_one_error_offline():
    err = load_error("hf:nobody/no-such-set")
    assert str(err).startswith("hf:nobody/no-such-set: cannot load Hugging Face dataset")


def test_a_suite_written_as_json_is_still_a_suite(tmp_path):
    """YAML reads JSON, so a suite written as JSON always loaded as one: its prompt,
    scorer and name are its own, not a table's guesses."""
    path = tmp_path / "s.json"
    path.write_text(
        '{"name": "j", "prompt": "Q: {input}", "scorer": "contains", "items": '
        '[{"id": "a", "input": "x", "expected": "X"}, {"id": "b", "input": "y", "expected": "Y"}]}'
    )
    suite = load_suite(path)
    assert suite.name == "j"
    assert [t.prompt for t in suite.tasks] == ["Q: x", "Q: y"]
    assert {t.scorer.spec["type"] for t in suite.tasks} == {"contains"}
