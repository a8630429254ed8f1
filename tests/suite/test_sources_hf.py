"""Hugging Face datasets as task sources: a saved `Dataset`, a saved `DatasetDict`
(its splits pinning the items), one split chosen, and the errors (a missing split, a
hub id while offline, the library not installed), each one line naming the source."""

from __future__ import annotations

import sys

import datasets  # the `dev` extra holds it: its absence fails here, never skips
import pytest

from skillopt.errors import InputError
from skillopt.suite.sources import FieldMap, detect, read_source


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved Dataset and a saved DatasetDict (train, validation, test and an odd split)."""
    root = tmp_path_factory.mktemp("hf")
    rows = {"question": ["abc", "def", ""], "answer": ["ABC", "DEF", "X"], "level": [1, 2, 3]}
    datasets.Dataset.from_dict(rows).save_to_disk(str(root / "single"))
    parts = {
        "train": {"question": ["t1", "t2"], "answer": ["T1", "T2"]},
        "validation": {"question": ["v1"], "answer": ["V1"]},
        "test": {"question": ["s1", "s2"], "answer": ["S1", "nope"]},
        "scratch": {"question": ["z"], "answer": ["Z"]},
    }
    datasets.DatasetDict(
        {name: datasets.Dataset.from_dict(cols) for name, cols in parts.items()}
    ).save_to_disk(str(root / "splits"))
    return root


def test_a_saved_dataset(saved):
    source = str(saved / "single")
    assert detect(source) == "hf"
    got = read_source(source)
    assert got.kind == "hf"
    assert got.items == (
        {"id": "single-0001", "input": "abc", "expected": "ABC", "metadata": {"level": 1}},
        {"id": "single-0002", "input": "def", "expected": "DEF", "metadata": {"level": 2}},
    )
    assert [(s.where, s.reason) for s in got.skipped] == [("row 3", "empty input")]


def test_a_saved_dataset_dict_pins_its_splits(saved):
    got = read_source(str(saved / "splits"))
    assert [(i["id"], i["split"]) for i in got.items] == [
        ("splits-train-0001", "train"),
        ("splits-train-0002", "train"),
        ("splits-validation-0001", "val"),
        ("splits-test-0001", "test"),
        ("splits-test-0002", "test"),
    ]
    assert got.notes == (
        "split 'scratch' (1 rows) left out: not train, validation or test; "
        "read it alone with --subset scratch",
    )


def test_one_split_chosen_is_not_pinned(saved):
    got = read_source(str(saved / "splits"), fields=FieldMap(subset="test"))
    assert [(i["id"], i["input"]) for i in got.items] == [
        ("splits-0001", "s1"),
        ("splits-0002", "s2"),
    ]
    assert all("split" not in i for i in got.items)


def test_a_missing_split_is_named_with_the_ones_there(saved):
    with pytest.raises(InputError) as info:
        read_source(str(saved / "splits"), fields=FieldMap(subset="tst"))
    assert info.value.field == "subset"
    assert "no split 'tst'; did you mean 'test'? (splits: train, validation, test, scratch)" in str(
        info.value
    )


def test_a_named_field_missing_from_a_dataset(saved):
    with pytest.raises(InputError) as info:
        read_source(str(saved / "single"), fields=FieldMap(expected="gold"))
    assert (info.value.field, "(fields: question, answer, level)" in str(info.value)) == (
        "expected",
        True,
    )


@pytest.mark.parametrize(
    "source",
    [
        "hf:nobody/no-such-set",
        "hf://datasets/nobody/no-such-set",
        "huggingface://datasets/nobody/no-such-set?split=test",
    ],
)
def test_a_hub_id_offline_is_one_error_naming_it(source):
    with pytest.raises(InputError) as info:
        read_source(source)
    message = str(info.value)
    assert message.startswith(f"{source}: cannot load Hugging Face dataset 'nobody/no-such-set'")
    assert "\n" not in message


def test_a_bad_hub_id_and_a_damaged_directory(tmp_path):
    with pytest.raises(InputError, match="not a Hugging Face dataset id"):
        read_source("hf:../../etc")
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "dataset_info.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="cannot read a saved Hugging Face dataset"):
        read_source(str(damaged))


def test_without_the_library_the_error_names_the_extra(saved, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` fails
    with pytest.raises(InputError) as info:
        read_source(str(saved / "single"))
    assert str(info.value) == (
        'reading Hugging Face datasets needs the `datasets` library: pip install "skillopt[hf]"'
    )
