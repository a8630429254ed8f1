"""inspect_ai logs and datasets read into suites: a `.eval` zip and a JSON log in the
layout inspect_ai writes (header.json, samples/<id>_epoch_<n>.json; epochs 2, a chat
input, a list target, choices), an error-status log, a JSONL dataset with files; then
`skillopt eval` offline, whose per-task results come out right only if each sample's
input, target and scorer were read right."""

from __future__ import annotations

import base64
import json
import re
import struct
import zipfile
import zlib

import pytest

from skillopt.errors import InputError
from skillopt.suite.sources import FieldMap, detect, read_source
from suite.import_eval import evaluate

EVAL = {
    "task": "qa",
    "model": "mockllm/model",
    "dataset": {"samples": 4, "sample_ids": ["s1", 2, "m1", "s3"], "shuffled": False},
    "config": {"epochs": 2},
    "scorers": [{"name": "match", "options": {}, "metrics": [], "metadata": {}}],
}
RESULTS = {"total_samples": 8, "scores": [{"name": "match", "scorer": "match"}]}


def sample(sample_id, epoch, input, target, **extra):
    """A sample as inspect_ai logs it: what the model answered and how it scored
    besides the fields a task is made of."""
    return {
        "id": sample_id,
        "epoch": epoch,
        "input": input,
        "target": target,
        "metadata": extra.pop("metadata", {}),
        "scores": {"match": {"value": "I", "answer": "LOGGED ANSWER", "explanation": "x"}},
        "output": {"model": "mockllm", "completion": "LOGGED ANSWER", "choices": []},
        "messages": [],
        "events": [],
        **extra,
    }


def samples():
    chat = [
        {"id": "m0", "role": "system", "content": "Be terse."},
        {
            "id": "m1",
            "role": "user",
            "content": [
                {"type": "text", "text": "Capital of France? [[capital]]"},
                {"type": "image", "image": "data:image/png;base64,AAAA"},
            ],
        },
    ]
    out = []
    for epoch in (1, 2):
        # a later epoch's copy differs, to show the first is the one taken
        out += [
            sample(
                "s1",
                epoch,
                "What is 2+2? [[sum]]",
                "4" if epoch == 1 else "5",
                metadata={"topic": "math"},
            ),
            sample(2, epoch, chat, ["Paris", "paris"]),
            sample(
                "m1",
                epoch,
                "Which is a fruit? [[fruit]]",
                "B",
                choices=["Carrot", "Apple", "Potato"],
                files=["notes.txt"],
            ),
            sample("s3", epoch, "What is 3+4? [[seven]]", "7"),
        ]
    return out


def write_eval(path, members, method=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for name, value in members.items():
            z.writestr(name, json.dumps(value))


def eval_members(status="success"):
    members = {"_journal/start.json": {"version": 2, "eval": EVAL, "plan": {}}}
    # the zip holds samples in the order they finished, not the dataset's
    for s in reversed(samples()):
        members[f"samples/{s['id']}_epoch_{s['epoch']}.json"] = s
    members["summaries.json"] = []
    members["reductions.json"] = []
    members["header.json"] = {
        "version": 2,
        "status": status,
        "eval": EVAL,
        "plan": {},
        "results": RESULTS,
        "stats": {},
        "error": None,
    }
    return members


def zstd_zip(path, members):
    """A zip whose members are zstd-compressed (method 93), as inspect_ai writes them."""
    import zstandard

    local, central = b"", b""
    for name, value in members.items():
        data = json.dumps(value).encode()
        packed = zstandard.ZstdCompressor().compress(data)
        crc, encoded = zlib.crc32(data), name.encode()
        offset = len(local)
        local += (
            struct.pack(
                "<4sHHHHHIIIHH",
                b"PK\x03\x04",
                63,
                0,
                93,
                0,
                33,
                crc,
                len(packed),
                len(data),
                len(encoded),
                0,
            )
            + encoded
            + packed
        )
        central += (
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                63,
                63,
                0,
                93,
                0,
                33,
                crc,
                len(packed),
                len(data),
                len(encoded),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + encoded
        )
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(local), 0
    )
    path.write_bytes(local + central + end)


ANSWERS = {"sum": " 4.", "capital": "PARIS", "fruit": "ANSWER: B", "seven": "8"}
RESULT = {"s1": True, "2": True, "m1": True, "s3": False}


def check_log(imported):
    assert imported.kind == "inspect-log" and imported.skipped == ()
    by_id = {i["id"]: i for i in imported.items}
    assert list(by_id) == ["s1", "2", "m1", "s3"]  # each sample once, in the dataset's order
    assert by_id["s1"]["expected"] == "4"  # the first epoch's target, never the logged output
    assert by_id["s1"]["metadata"] == {
        "topic": "math",
        "log_model": "mockllm/model",
        "log_scores": {"match": "I"},
    }
    assert by_id["2"]["input"] == "System: Be terse.\n\nUser: Capital of France? [[capital]]"
    # inspect's match(): a target at the answer's end, case and edge punctuation aside;
    # any of several targets passes
    capital = by_id["2"]["scorer"]
    assert capital["type"] == "regex" and capital["ignore_case"] is True
    assert re.search(capital["pattern"], "The capital is PARIS.", re.I)
    assert not re.search(capital["pattern"], "Paris, I think", re.I)
    assert by_id["m1"]["input"].endswith(
        "Which is a fruit? [[fruit]]\n\nA) Carrot\nB) Apple\nC) Potato"
    )
    assert (by_id["m1"]["expected"], by_id["m1"]["metadata"]["choices"]) == ("B", ["A", "B", "C"])
    total = by_id["s1"].get("scorer", imported.scorer)
    assert [bool(re.search(total["pattern"], a, re.I)) for a in (" 4.", "It is 4", "4 it is")] == [
        True,
        True,
        False,
    ]
    notes = " ".join(imported.notes)
    assert "2 epochs" in notes and "match()" in notes and "not imported" in notes
    assert "only the text is kept" in notes  # the image part of the chat message


def test_an_eval_zip_log(tmp_path):
    path = tmp_path / "2026-01-01T00-00-00_qa_x.eval"
    write_eval(path, eval_members())
    assert detect(str(path)) == "inspect-log"
    imported = read_source(str(path))
    check_log(imported)
    assert evaluate(imported, tmp_path, ANSWERS) == RESULT


def test_a_zstd_eval_zip_log(tmp_path):
    pytest.importorskip("zstandard")
    path = tmp_path / "log.eval"
    zstd_zip(path, eval_members())
    check_log(read_source(str(path)))


def test_a_json_log_with_error_status(tmp_path):
    path = tmp_path / "log.json"
    log = {
        "version": 2,
        "status": "error",
        "eval": EVAL,
        "plan": {},
        "results": None,
        "stats": {},
        "error": {"message": "boom"},
        "samples": samples(),
        "reductions": [],
    }
    path.write_text(json.dumps(log))
    assert detect(str(path)) == "inspect-log"
    imported = read_source(str(path))
    check_log(imported)
    assert "the log's status is error: its samples are still tasks" in imported.notes
    assert evaluate(imported, tmp_path, ANSWERS) == RESULT


def test_a_log_with_a_model_grader_is_judged(tmp_path):
    path = tmp_path / "log.json"
    graded = {**EVAL, "scorers": [{"name": "inspect_ai/model_graded_fact"}]}
    log = {
        "version": 2,
        "status": "success",
        "eval": graded,
        "samples": [sample("f", 1, "Tell [[fact]]", ["Water is wet", "H2O is wet"])],
    }
    path.write_text(json.dumps(log))
    imported = read_source(str(path))
    (item,) = imported.items
    spec = item.get("scorer", imported.scorer)
    assert spec["type"] == "judge" and item["expected"] == "Water is wet | H2O is wet"
    assert any("--judge" in n for n in imported.notes)
    assert evaluate(imported, tmp_path, {"fact": "JUDGE-YES"}) == {"f": True}


def test_a_jsonl_dataset_with_files_and_a_field_mapping(tmp_path):
    (tmp_path / "data.txt").write_text("beside the dataset")
    encoded = base64.b64encode(b"encoded text").decode()
    rows = [
        {
            "question": "Sum [[sum]]",
            "answer": "4",
            "id": "a",
            "difficulty": "easy",
            "setup": "pip install x",
            "files": {
                "inline.txt": "inline text",
                "data.txt": "data.txt",
                "b64.txt": f"data:text/plain;base64,{encoded}",
            },
        },
        {
            "question": "Pick [[fruit]]",
            "answer": "Apple",
            "id": "b",
            "choices": ["Carrot", "Apple"],
        },
        {"question": "No target", "id": "c"},
    ]
    path = tmp_path / "dataset.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    fields = FieldMap(input="question", expected="answer")
    imported = read_source(str(path), "inspect", fields)
    a, b = imported.items
    assert (a["input"], a["expected"], a["metadata"]) == (
        "Sum [[sum]]",
        "4",
        {"difficulty": "easy"},
    )
    assert a["files"] == {
        "inline.txt": "inline text",
        "data.txt": "beside the dataset",
        "b64.txt": "encoded text",
    }
    assert (b["expected"], b.get("scorer", imported.scorer)) == (
        "B",
        "choice",
    )  # the option's text → its letter
    assert [(s.where, s.reason) for s in imported.skipped] == [
        ("sample 'c'", "no target: nothing to score it by")
    ]
    assert any("runs neither" in n for n in imported.notes)
    assert evaluate(imported, tmp_path, {"sum": "4", "fruit": "A"}) == {"a": True, "b": False}


def test_an_inspect_dataset_is_detected_by_its_sample_fields(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"input": "x", "target": "y"}) + "\n")
    assert detect(str(path)) == "inspect"
    imported = read_source(str(path))
    assert [(i["id"], i["input"], i["expected"]) for i in imported.items] == [("1", "x", "y")]
    assert imported.scorer == "exact"  # a dataset does not say how its task scored


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        (
            {"input": "x", "target": "y", "files": {"s.txt": "../secret.txt"}},
            "files.s.txt",
            "outside",
        ),
        ({"input": "", "target": "y"}, "input", "must not be empty"),
        ({"input": "x", "target": {"a": 1}}, "target", "list of texts"),
        (
            {"input": [{"role": "user", "content": "x"}, "hi"], "target": "y"},
            "input[1]",
            "chat message",
        ),
    ],
)
def test_a_bad_sample_is_one_error_naming_the_file_the_sample_and_the_field(
    tmp_path, row, field, words
):
    (tmp_path / "secret.txt").write_text("s3cret")
    (tmp_path / "data").mkdir()
    path = tmp_path / "data" / "d.jsonl"
    path.write_text(json.dumps({"id": "bad", **row}) + "\n")
    with pytest.raises(InputError) as err:
        read_source(str(path), "inspect")
    message = str(err.value)
    assert str(path) in message and "sample 'bad'" in message and f"field {field!r}" in message
    assert words in message and "s3cret" not in message


def test_a_zip_member_larger_than_declared_limits_is_refused(tmp_path, monkeypatch):
    from skillopt.suite.sources import inspect_logs

    path = tmp_path / "big.eval"
    write_eval(path, eval_members())
    monkeypatch.setattr(inspect_logs, "MAX_MEMBER_BYTES", 100)
    with pytest.raises(InputError, match="larger than"):
        read_source(str(path))


def test_only_a_scorer_items_share_becomes_the_suite_default():
    from skillopt.suite.sources.records import common_scorer

    one = {"type": "regex", "pattern": "x"}
    items = [{"id": "a", "scorer": dict(one)}, {"id": "b"}]
    # b has no scorer of its own, so the default must stay exact for it
    assert common_scorer(items) == "exact" and items[0]["scorer"] == one
    items = [
        {"id": "a", "scorer": dict(one)},
        {"id": "b", "scorer": {"type": "regex", "pattern": "y"}},
    ]
    assert common_scorer(items) == "exact"  # no spec is shared: each item keeps its own
    items = [{"id": n, "scorer": dict(one)} for n in "abc"] + [{"id": "d", "scorer": "exact"}]
    assert common_scorer(items) == one
    assert [i.get("scorer") for i in items] == [None, None, None, "exact"]
