"""Anthropic skill-creator evals read into suites: `evals/evals.json` (prompt,
expected_output, files, expectations → a judge rubric) and trigger evals (kept for
trigger training, no tasks); then `skillopt eval` offline with a judge that passes an
answer only when its rubric lists the eval's expectations."""

from __future__ import annotations

import json

import pytest
import yaml

from skillopt.errors import InputError
from skillopt.suite.sources import detect, read_source
from skillopt.suite.sources.records import write_suite
from suite import import_eval
from suite.import_eval import YES, evaluate

EVALS = {
    "skill_name": "csv-cleaner",
    "evals": [
        {
            "id": 1,
            "prompt": "Clean the attached CSV [[clean]]",
            "expected_output": "A CSV without duplicate rows",
            "files": ["evals/files/input.csv"],
            "expectations": ["The output removes the duplicate Ada row", "The output keeps 2 rows"],
        },
        {
            "id": 2,
            "prompt": "Summarise [[sum]]",
            "expectations": ["The summary names the row count"],
        },
        {"id": 3, "prompt": "Nothing to check"},
    ],
}
TRIGGERS = [
    {"query": "please tidy this csv file", "should_trigger": True},
    {"query": "what's the weather", "should_trigger": False},
]


@pytest.fixture
def skill(tmp_path):
    root = tmp_path / "csv-cleaner"
    (root / "evals" / "files").mkdir(parents=True)
    (root / "SKILL.md").write_text(
        "---\nname: csv-cleaner\ndescription: Cleans CSV files. Use for CSV.\n---\n"
    )
    (root / "evals" / "files" / "input.csv").write_text("name\nAda\nAda\nGrace\n")
    (root / "evals" / "evals.json").write_text(json.dumps(EVALS))
    (root / "evals" / "trigger_evals.json").write_text(json.dumps(TRIGGERS))
    return root


def test_evals_become_judged_items_and_trigger_evals_are_kept_apart(skill, tmp_path, monkeypatch):
    assert detect(str(skill)) == "skill-creator"
    imported = read_source(str(skill))
    first, second = imported.items
    assert (first["id"], first["input"], first["expected"]) == (
        "1",
        "Clean the attached CSV [[clean]]",
        "A CSV without duplicate rows",
    )
    assert first["files"] == {"evals/files/input.csv": "name\nAda\nAda\nGrace\n"}
    rubric = first.get("scorer", imported.scorer)["rubric"]
    assert "- The output removes the duplicate Ada row\n- The output keeps 2 rows" in rubric
    assert first["metadata"]["skill_name"] == "csv-cleaner"
    assert [(s.where, s.reason) for s in imported.skipped] == [
        ("evals[2]", "no expectations and no expected_output to grade by")
    ]
    assert imported.triggers == (
        {"id": "trigger-1", "query": "please tidy this csv file", "should_trigger": True},
        {"id": "trigger-2", "query": "what's the weather", "should_trigger": False},
    )
    assert any("a trigger suite of their own" in n for n in imported.notes)
    written = write_suite(imported, tmp_path / "out" / "csv.yaml")
    assert [p.name for p in written] == ["csv.yaml", "csv-triggers.yaml"]
    assert yaml.safe_load(written[1].read_text())["items"][1]["should_trigger"] is False
    # the judge passes only when the rubric it gets lists eval 1's expectations
    monkeypatch.setattr(import_eval, "REQUIRED_RUBRIC", ["- The output keeps 2 rows"])
    passed = evaluate(imported, tmp_path, {"clean": f"done {YES}", "sum": f"done {YES}"})
    assert passed == {"1": True, "2": False}


def test_a_trigger_eval_file_alone(tmp_path):
    path = tmp_path / "eval_set.json"
    path.write_text(json.dumps({"evals": [{"prompt": "tidy csv", "should_trigger": True}]}))
    assert detect(str(path)) == "skill-creator"
    imported = read_source(str(path))
    assert imported.items == () and imported.triggers[0]["query"] == "tidy csv"


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"files": ["../../secret.txt"]}, "files", "outside"),
        ({"files": ["evals/files/missing.csv"]}, "files", "no such file"),
        ({"prompt": ""}, "prompt", "non-empty"),
        ({"expectations": "one string"}, "expectations", "list of statements"),
    ],
)
def test_a_bad_eval_is_one_error_naming_the_file_the_eval_and_the_field(
    skill, change, field, words
):
    (skill.parent / "secret.txt").write_text("s3cret")
    evals = json.loads(json.dumps(EVALS))
    evals["evals"][1].update(change)
    (skill / "evals" / "evals.json").write_text(json.dumps(evals))
    with pytest.raises(InputError) as err:
        read_source(str(skill))
    message = str(err.value)
    assert "evals.json" in message and "evals[1]" in message and f"field {field!r}" in message
    assert words in message and "s3cret" not in message


def test_a_binary_input_file_skips_its_eval(skill):
    (skill / "evals" / "files" / "input.csv").write_bytes(b"\xff\xfe\x00binary")
    imported = read_source(str(skill / "evals" / "evals.json"))
    assert [i["id"] for i in imported.items] == ["2"]
    assert (
        imported.skipped[0].reason
        == "files: evals/files/input.csv is not text (a task's files are text)"
    )


def test_a_skill_with_trigger_evals_only(skill):
    (skill / "evals" / "evals.json").unlink()
    assert detect(str(skill)) == "skill-creator"
    imported = read_source(str(skill))
    assert imported.items == () and len(imported.triggers) == 2
