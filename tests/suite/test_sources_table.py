"""CSV/TSV and JSON/JSONL tables read into a suite's shape: arbitrary field names,
quoting, guessed and named fields, ids, splits, skipped rows, and every bad input as
one error naming the file, the row and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt.errors import InputError
from skillopt.suite.sources import FieldMap, detect, read_source

# a spreadsheet's export: a byte-order mark, \r\n line ends, a header with a space,
# a field with a comma, a quoted quote, a line break inside a field, an empty input
ODD_CSV = (
    b"\xef\xbb\xbf"
    b"Question Text,Gold Answer,Notes\r\n"
    b'"Capital of France, in caps?",PARIS,geo\r\n'
    b'"Say ""hi""",SAY "HI",\r\n'
    b'"two\r\nlines","TWO\r\nLINES",multi\r\n'
    b",NOTHING,empty\r\n"
)


def write(path: Path, data: str | bytes) -> Path:
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def error(source: Path | str, **fields) -> InputError:
    with pytest.raises(InputError) as info:
        read_source(str(source), fields=FieldMap(**fields))
    return info.value


def test_a_csv_with_odd_names_and_quoting(tmp_path):
    path = write(tmp_path / "odd.csv", ODD_CSV)
    got = read_source(str(path), fields=FieldMap(input="Question Text", expected="Gold Answer"))
    assert got.kind == "csv"
    assert [i["id"] for i in got.items] == ["odd-0001", "odd-0002", "odd-0003"]
    assert [i["input"] for i in got.items] == [
        "Capital of France, in caps?",
        'Say "hi"',
        "two\nlines",
    ]
    assert [i["expected"] for i in got.items] == ["PARIS", 'SAY "HI"', "TWO\nLINES"]
    assert got.items[0]["metadata"] == {"Notes": "geo"}
    assert "metadata" not in got.items[1]  # an empty cell is no metadata
    assert [(s.where, s.reason) for s in got.skipped] == [("row 4", "empty input")]


def test_a_named_field_matches_without_case(tmp_path):
    path = write(tmp_path / "odd.csv", ODD_CSV)
    got = read_source(str(path), fields=FieldMap(input="question text", expected="gold answer"))
    assert got.items[0]["expected"] == "PARIS"


def test_a_tsv_with_guessed_fields(tmp_path):
    path = write(
        tmp_path / "qa.tsv", "ID\tQuery\tTarget\tfold\nq1\tabc\tABC\ttrain\nq2\td, e\tD, E\tdev\n"
    )
    got = read_source(str(path), fields=FieldMap(split="fold"))
    assert got.kind == "tsv"
    assert got.items == (
        {"id": "q1", "input": "abc", "expected": "ABC", "split": "train"},
        {"id": "q2", "input": "d, e", "expected": "D, E", "split": "val"},
    )


def test_a_json_array_and_an_object_holding_one_list(tmp_path):
    rows = [{"prompt": "x", "ideal": "X", "level": 3}, {"prompt": "y", "ideal": "Y"}]
    array = write(tmp_path / "arr.json", json.dumps(rows))
    wrapped = write(tmp_path / "wrapped.json", json.dumps({"version": 2, "data": rows}))
    for path in (array, wrapped):
        got = read_source(str(path))
        assert got.kind == "json"
        assert [(i["input"], i["expected"]) for i in got.items] == [("x", "X"), ("y", "Y")]
        assert got.items[0]["metadata"] == {"level": 3}  # the value keeps its type


def test_a_jsonl_with_other_field_names(tmp_path):
    path = write(
        tmp_path / "chat.jsonl",
        '{"uid": 7, "instruction": "hi", "output": "HI"}\n\n{"uid": 8, "instruction": "yo", "output": "YO"}\n',
    )
    assert detect(str(path)) == "jsonl"
    got = read_source(str(path))
    assert [(i["id"], i["input"], i["expected"]) for i in got.items] == [
        ("7", "hi", "HI"),
        ("8", "yo", "YO"),
    ]


def test_several_input_columns_make_a_mapping_and_a_template(tmp_path):
    path = write(tmp_path / "m.csv", "city,country,answer\nParis,France,yes\n")
    got = read_source(str(path), fields=FieldMap(input="city, country"))
    assert got.items[0]["input"] == {"city": "Paris", "country": "France"}
    assert got.prompt == "city: {city}\ncountry: {country}"


def test_ids_are_the_row_and_stay_when_rows_are_added(tmp_path):
    path = write(tmp_path / "qa.csv", "question,answer\na,A\nb,B\n")
    first = [i["id"] for i in read_source(str(path)).items]
    write(path, "question,answer\na,A\nb,B\nc,C\n")
    assert [i["id"] for i in read_source(str(path)).items][:2] == first == ["qa-0001", "qa-0002"]


def test_many_rows_skipped_for_one_reason_are_counted(tmp_path):
    from skillopt.suite.importing import skip_lines

    rows = "".join(f",A{i}\n" for i in range(1000))
    path = write(tmp_path / "qa.csv", "question,answer\nq,Q\n" + rows + "r,\n")
    got = read_source(str(path))
    assert len(got.items) == 1 and len(got.skipped) == 1001
    assert skip_lines(got.skipped) == [
        "empty input: 1,000 rows (row 2, row 3, row 4, …)",
        "row 1002: empty expected answer",
    ]


def test_no_expected_field_is_a_note_not_an_error(tmp_path):
    path = write(tmp_path / "q.csv", "question,difficulty\nwhy?,hard\n")
    got = read_source(str(path))
    assert "expected" not in got.items[0]
    assert any("--expected COL" in n for n in got.notes)


def test_nul_and_lone_surrogates_are_replaced(tmp_path):
    path = write(tmp_path / "bad.jsonl", '{"input": "a\\u0000b\\ud800", "expected": "x"}\n')
    got = read_source(str(path))
    assert got.items[0]["input"] == "a\ufffdb\ufffd"


# ------------------------------------------------------------------------ errors
def test_a_missing_named_field_names_the_file_field_and_the_columns(tmp_path):
    path = write(tmp_path / "odd.csv", ODD_CSV)
    err = error(path, input="Question")
    assert err.field == "input"
    assert str(err) == (
        f"{path}: field 'input': no field 'Question'; did you mean 'Question Text'? "
        "(fields: Question Text, Gold Answer, Notes)"
    )


def test_an_unguessable_input_lists_the_columns_and_the_flag(tmp_path):
    path = write(tmp_path / "odd.csv", ODD_CSV)
    err = error(path)
    assert "Question Text, Gold Answer, Notes" in str(err)
    assert "--input COL" in str(err)


def test_duplicate_ids_name_both_rows(tmp_path):
    path = write(tmp_path / "d.csv", "id,question,answer\nx,a,A\ny,b,B\nx,c,C\n")
    err = error(path)
    assert (err.field, str(err)) == (
        "id",
        f"{path}: field 'id': row 3: duplicate id 'x' (also row 1)",
    )


def test_a_bad_split_value_names_the_row(tmp_path):
    path = write(tmp_path / "s.csv", "question,answer,fold\na,A,train\nb,B,holdout\n")
    err = error(path, split="fold")
    assert err.field == "fold"
    assert "row 2: 'holdout' is not a split" in str(err)


def test_a_non_utf8_csv_names_the_line(tmp_path):
    path = write(tmp_path / "latin.csv", b"question,answer\nq,A\ncaf\xe9,B\n")
    err = error(path)
    assert err.line == 3 and "not valid UTF-8" in str(err) and str(path) in str(err)


def test_unreadable_and_malformed_files(tmp_path):
    assert "no such task source" in str(error(tmp_path / "missing.csv"))
    bad_json = write(tmp_path / "bad.json", '[{"input": "a"},')
    assert str(error(bad_json)).startswith(f"{bad_json}:1: invalid JSON")
    not_rows = write(tmp_path / "rows.json", '[{"input": "a"}, 3]')
    assert "row 2: a row must be an object, got int" in str(error(not_rows))
    two_lists = write(tmp_path / "two.json", '{"a": [], "b": []}')
    assert "it holds 2: a, b" in str(error(two_lists))
    ragged = write(tmp_path / "r.csv", "question,answer\na,b,c\n")
    assert "row 1: 3 fields, but the header names 2" in str(error(ragged))
    empty = write(tmp_path / "e.csv", "")
    assert "no header row" in str(error(empty))


def test_a_subset_is_refused_for_a_table(tmp_path):
    path = write(tmp_path / "q.csv", "question,answer\na,A\n")
    assert error(path, subset="test").field == "subset"
