"""`skillopt tasks import` end to end: each kind of table and a saved Hugging Face
dataset imported, what it printed, the suite it wrote run through `skillopt eval`
offline with per-task outcomes; the same sources given directly as `--tasks`; and
every bad input as one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from helpers import write_skill
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()
UPPER = "scripted/scripted_targets:upper"  # answers the prompt in capitals

ODD_CSV = (
    b"\xef\xbb\xbf"
    b"Question Text,Gold Answer,Notes\r\n"
    b'"paris, france","PARIS, FRANCE",geo\r\n'
    b'"say ""hi""","SAY ""HI""",\r\n'
    b'"two\r\nlines","TWO\r\nLINES",multi\r\n'
    b",NOTHING,empty\r\n"
    b"abc,ABD,wrong on purpose\r\n"
)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def outcomes(skill: Path, tasks: str | Path, out: str = "eval.json") -> dict[str, bool]:
    """Each task's pass or fail under `skillopt eval --split all` with the scripted
    target that answers in capitals."""
    res = invoke(
        "eval", skill, "--tasks", tasks, "--split", "all", "--target", UPPER, "--json", out
    )
    assert res.exit_code == 0, res.output
    rollouts = json.loads(Path(out).read_text(encoding="utf-8"))["rollouts"]
    return {r["task_id"]: r["passed"] for r in rollouts}


@pytest.fixture
def skill(isolated):
    return write_skill(isolated / "skills", "caps", body="# Caps\n\nAnswer in capitals.\n")


def test_a_csv_with_odd_names_imported_then_evaluated(skill, isolated):
    (isolated / "odd.csv").write_bytes(ODD_CSV)
    res = invoke(
        "tasks", "import", "odd.csv", "-o", "tasks/odd.yaml",
        "--input", "Question Text", "--expected", "Gold Answer",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [
        "wrote tasks/odd.yaml: 4 items (train 1 · val 1 · test 2) · scorers: exact 4",
        "skipped 1 row:",
        "  row 4: empty input",
        "next: skillopt eval SKILL --tasks tasks/odd.yaml",
    ]
    assert outcomes(skill, "tasks/odd.yaml") == {
        "odd-0001": True,
        "odd-0002": True,
        "odd-0003": True,
        "odd-0005": False,
    }


@pytest.mark.parametrize(
    "name, text",
    [
        ("qa.tsv", "ID\tQuery\tTarget\nq1\tabc\tABC\nq2\tx, y\tX, Z\n"),
        (
            "qa.json",
            json.dumps({"data": [{"id": "q1", "prompt": "abc", "ideal": "ABC"},
                                 {"id": "q2", "prompt": "x, y", "ideal": "X, Z"}]}),
        ),
        (
            "qa.jsonl",
            '{"qid": "q1", "instruction": "abc", "output": "ABC"}\n'
            '{"qid": "q2", "instruction": "x, y", "output": "X, Z"}\n',
        ),
    ],
)  # fmt: skip
def test_tables_imported_and_given_directly(skill, isolated, name, text):
    (isolated / name).write_text(text, encoding="utf-8")
    res = invoke("tasks", "import", name, "-o", "tasks/qa.yaml")
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("wrote tasks/qa.yaml: 2 items (")
    expected = {"q1": True, "q2": False}
    assert outcomes(skill, "tasks/qa.yaml", "a.json") == expected
    assert outcomes(skill, name, "b.json") == expected  # the same source as --tasks


def test_a_saved_dataset_dict_imported_with_its_splits(skill, isolated):
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"question": ["ab"], "answer": ["AB"]}),
            "validation": datasets.Dataset.from_dict({"question": ["cd"], "answer": ["CD"]}),
            "test": datasets.Dataset.from_dict({"question": ["ef", "gh"], "answer": ["EF", "no"]}),
        }
    ).save_to_disk(str(isolated / "qa-data"))
    res = invoke("tasks", "import", "qa-data", "-o", "tasks/qa.yaml", "--json")
    assert res.exit_code == 0, res.output
    made = json.loads(res.stdout)
    assert (made["format"], made["splits"], made["scorers"]) == (
        "hf",
        {"train": 1, "val": 1, "test": 2},
        {"exact": 4},
    )
    expected = {
        "qa-data-train-0001": True,
        "qa-data-validation-0001": True,
        "qa-data-test-0001": True,
        "qa-data-test-0002": False,
    }
    assert outcomes(skill, "tasks/qa.yaml", "a.json") == expected
    assert outcomes(skill, "qa-data", "b.json") == expected


def test_a_saved_dataset_split_with_a_prompt_and_a_scorer(skill, isolated):
    datasets.DatasetDict(
        {"test": datasets.Dataset.from_dict({"q": ["ab", "cd"], "a": ["Q: AB", "q: cd"]})}
    ).save_to_disk(str(isolated / "ds"))
    res = invoke(
        "tasks", "import", "ds", "-o", "tasks/ds.yaml", "--subset", "test", "--input", "q",
        "--expected", "a", "--prompt", "q: {input}", "--scorer", "normalized", "--name", "mine",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "scorers: normalized 2" in res.stdout
    assert outcomes(skill, "tasks/ds.yaml") == {"ds-0001": True, "ds-0002": True}


def test_the_output_is_replaced_only_with_force(isolated):
    (isolated / "qa.csv").write_text("question,answer\na,A\n", encoding="utf-8")
    out = isolated / "tasks" / "qa.yaml"
    out.parent.mkdir()
    out.write_text("mine\n", encoding="utf-8")
    res = invoke("tasks", "import", "qa.csv", "-o", out)
    assert (res.exit_code, res.stderr) == (
        2,
        f"error: {out}: already exists; pass --force to replace it\n",
    )
    assert out.read_text(encoding="utf-8") == "mine\n"
    assert invoke("tasks", "import", "qa.csv", "-o", out, "--force").exit_code == 0
    assert "input: a" in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in out.parent.iterdir()) == ["qa.yaml"]  # nothing staged is left


def test_an_item_the_suite_cannot_score_writes_nothing(isolated):
    (isolated / "qa.csv").write_text("question,answer\na,A\nb,many\n", encoding="utf-8")
    res = invoke("tasks", "import", "qa.csv", "-o", "tasks/qa.yaml", "--scorer", "number")
    assert res.exit_code == 2
    assert res.stderr == (
        "error: qa.csv: item 'qa-0001': field 'expected': scorer 'number' needs a number, got 'A'\n"
    )
    assert not (isolated / "tasks" / "qa.yaml").exists()


@pytest.mark.parametrize(
    "data, args, message",
    [
        (b"question,answer\na,A\n", ["--input", "Question Txt"],
         "qa.csv: field 'input': no field 'Question Txt'; did you mean 'question'? (fields: question, answer)"),
        (b"q,a\nx,X\n", [],
         "qa.csv: field 'input': cannot tell which field is the input (fields: q, a); "
         "name it with --input COL (or `mapping: {input: COL}`)"),
        (b"id,question,answer\n1,a,A\n1,b,B\n", [],
         "qa.csv: field 'id': row 2: duplicate id '1' (also row 1)"),
        (b"question,answer,fold\na,A,holdout\n", ["--split-field", "fold"],
         "qa.csv: field 'fold': row 1: 'holdout' is not a split; use train, val (validation, "
         "valid, dev) or test, or leave it empty"),
        (b"question,answer\ncaf\xe9,A\n", [],
         "qa.csv:2: not valid UTF-8 (byte 4 of the line); save the file as UTF-8"),
        (b"question,answer\n,A\n", [], "qa.csv: no items to write (row 1: empty input)"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(isolated, data, args, message):
    (isolated / "qa.csv").write_bytes(data)
    res = invoke("tasks", "import", "qa.csv", "-o", "tasks/qa.yaml", *args)
    assert (res.exit_code, res.stderr) == (2, f"error: {message}\n")
    assert not (isolated / "tasks").exists() or not any((isolated / "tasks").iterdir())


def test_sources_that_cannot_be_read(isolated):
    res = invoke("tasks", "import", "missing.csv", "-o", "t.yaml")
    assert (res.exit_code, res.stderr) == (
        2,
        "error: missing.csv: no such task source (a file, a directory or hf:ID)\n",
    )
    res = invoke("tasks", "import", "hf:nobody/no-such-set", "-o", "t.yaml", "--subset", "test")
    assert res.exit_code == 2
    assert res.stderr.startswith(
        "error: hf:nobody/no-such-set: cannot load Hugging Face dataset 'nobody/no-such-set' "
        "(split 'test'): "
    )
    assert res.stderr.count("\n") == 1


def test_eval_on_a_source_that_cannot_be_read_is_one_line(skill, isolated):
    (isolated / "qa.csv").write_text("q,a\nx,X\n", encoding="utf-8")
    res = invoke("eval", skill, "--tasks", "qa.csv", "--target", UPPER)
    assert res.exit_code == 2
    assert res.stderr.startswith("error: qa.csv: field 'input': cannot tell which field")
    assert res.stderr.count("\n") == 1


def test_the_formats_the_command_offers_are_the_ones_it_reads():
    # the command line keeps its own copy (importing the readers would load YAML for
    # `skillopt --help`): the two must not drift apart
    from skillopt.cli.tasks import KINDS as offered
    from skillopt.suite.sources import KINDS as read

    assert offered == read
