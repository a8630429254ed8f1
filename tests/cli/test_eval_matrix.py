"""`skillopt eval` and `skillopt validate` over several targets and harnesses (the
matrix), end to end through the CLI, with scripted targets and stand-in agent CLIs."""

from __future__ import annotations

import json
import re

import pytest
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()
FOLLOW = "scripted/scripted_targets:follows_skill"
UPPER = "scripted/scripted_targets:upper"


@pytest.fixture
def project(isolated):
    skill = write_skill(isolated / "skills", "caps", body="# Caps\n\nAnswer in capitals.\n")
    items = [{"id": f"w{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(3)]
    items.append({"id": "same", "input": "ALREADY", "expected": "ALREADY"})
    suite = write_suite(
        isolated / "tasks" / "caps.yaml",
        items,
        split={"seed": 3, "train": 0.0, "val": 0.0, "test": 1.0},
    )
    return skill, suite


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def table_rows(text: str) -> dict[str, list[str]]:
    """The matrix table's rows by their target, split on runs of spaces."""
    rows = {}
    for line in text.splitlines():
        cols = re.split(r"\s{2,}|\s(?=[-+\d—])", line.strip())
        if cols and cols[0].startswith("scripted/"):
            rows[cols[0]] = line.split()
    return rows


def test_two_targets_print_one_table_and_a_rerun_calls_no_model(project, isolated):
    skill, suite = project
    args = ["eval", skill, "--tasks", suite, "--target", FOLLOW, "--target", UPPER]
    first = invoke(*args, "--json", isolated / "m1.json")
    assert first.exit_code == 0, first.output
    rows = table_rows(first.stdout)
    # follows_skill: only "same" right bare (1/4), all four with the skill
    assert rows[FOLLOW] == [FOLLOW, "chat", "0.250", "1.000", "+0.750", "4"]
    # upper capitalises anyway: the skill changes nothing
    assert rows[UPPER] == [UPPER, "chat", "1.000", "1.000", "+0.000", "4"]
    assert "2 target × harness cells" in first.stdout
    data = json.loads((isolated / "m1.json").read_text())
    cells = {(c["target"], c["harness"]): c for c in data["cells"]}
    assert set(cells) == {(FOLLOW, "chat"), (UPPER, "chat")}
    whole = cells[(FOLLOW, "chat")]["result"]  # the cell's full eval result
    assert {(r["variant"], r["split"]) for r in whole["results"]} == {
        ("skill", "test"),
        ("no-skill", "test"),
    }
    assert whole["comparisons"][0]["fail_to_pass"] == ["w0", "w1", "w2"]
    assert sum(r["model_calls"] for c in cells.values() for r in c["result"]["results"]) == 16

    second = invoke(*args, "--json", isolated / "m2.json")
    assert second.exit_code == 0, second.output
    assert table_rows(second.stdout) == rows
    again = json.loads((isolated / "m2.json").read_text())
    results = [r for c in again["cells"] for r in c["result"]["results"]]
    assert [r["model_calls"] for r in results] == [0, 0, 0, 0]
    assert [r["cached"] for r in results] == [4, 4, 4, 4]


def test_a_cell_that_cannot_run_is_listed_with_its_reason_never_a_zero(
    project, isolated, no_keys, monkeypatch
):
    skill, suite = project
    empty = isolated / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no claude here
    res = invoke(
        "eval",
        skill,
        "--tasks",
        suite,
        "--target",
        FOLLOW,
        "--target",
        "openai/gpt-4o-mini",
        "--harness",
        "chat",
        "--harness",
        "claude-code",
        "--json",
        "m.json",
    )
    assert res.exit_code == 0, res.output
    cells = {(c["target"], c["harness"]): c for c in json.load(open("m.json"))["cells"]}
    assert cells[(FOLLOW, "chat")]["scored"] is True
    assert cells[(FOLLOW, "chat")]["rows"][0]["skill"] == 1.0
    no_key = cells[("openai/gpt-4o-mini", "chat")]
    assert no_key["scored"] is False and no_key["rows"] == [] and no_key["result"] is None
    assert "OPENAI_API_KEY is not set" in no_key["reason"]
    # a model skillopt runs itself cannot be handed to an agent CLI as --model
    mismatch = cells[(FOLLOW, "claude-code")]
    assert mismatch["scored"] is False and "is a model skillopt runs itself" in mismatch["reason"]
    assert "unscored openai/gpt-4o-mini · chat: OPENAI_API_KEY is not set" in res.stdout
    assert "0.000" not in res.stdout  # an unscored cell is never a score


def test_agent_clis_that_are_not_installed_are_unscored_cells(project, isolated, monkeypatch):
    skill, suite = project
    empty = isolated / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    res = invoke("eval", skill, "--tasks", suite, "--harness", "claude-code", "--harness", "codex")
    assert res.exit_code == 1  # no cell could score anything
    assert "no cell was scored" in res.output
    lines = [line for line in res.stdout.splitlines() if line.startswith("unscored")]
    assert len(lines) == 2 and all("which is not on PATH" in line for line in lines), lines
    assert "internal error" not in res.output


def test_an_unknown_harness_stops_before_any_model_call(project, isolated):
    skill, suite = project
    res = invoke(
        "eval",
        skill,
        "--tasks",
        suite,
        "--target",
        FOLLOW,
        "--harness",
        "chat",
        "--harness",
        "chatt",
    )
    assert res.exit_code == 2
    assert "unknown harness 'chatt'" in res.output
    assert "rollouts.sqlite" not in " ".join(
        p.name for p in __import__("pathlib").Path().rglob("*")
    )


def test_the_matrix_page_is_self_contained_and_escaped(isolated):
    skill = write_skill(isolated / "skills", "caps", body="# Caps\n\nAnswer in capitals.\n")
    items = [{"id": "<b>x</b>", "input": "<script>alert(1)</script>", "expected": "NO"}]
    items.append({"id": "w1", "input": "word1", "expected": "WORD1"})
    suite = write_suite(
        isolated / "tasks" / "odd.yaml",
        items,
        split={"seed": 3, "train": 0.0, "val": 0.0, "test": 1.0},
    )
    res = invoke(
        "eval", skill, "--tasks", suite, "--target", FOLLOW, "--target", UPPER, "--html", "m.html"
    )
    assert res.exit_code == 0, res.output
    page = (isolated / "m.html").read_text()
    assert "<script>alert" not in page and "<b>x</b>" not in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page  # the task id, shown as text
    assert "default-src 'none'" in page and "http" not in page.replace("http-equiv", "")
    assert page.count(f"<td>{FOLLOW}</td>") == 1 and page.count(f"<td>{UPPER}</td>") == 1
    assert '<td class="num status-finished">+0.500</td>' in page  # follows_skill: w1 fixed


def test_one_target_with_html_is_a_one_cell_matrix(project, isolated):
    skill, suite = project
    res = invoke("eval", skill, "--tasks", suite, "--target", FOLLOW, "--html", "one.html")
    assert res.exit_code == 0, res.output
    assert "1 target × harness cells" in res.stdout
    assert "+0.750" in (isolated / "one.html").read_text()


def test_a_matrix_needs_a_skill(project):
    _, suite = project
    res = invoke("eval", "--no-skill", "--tasks", suite, "--target", FOLLOW, "--target", UPPER)
    assert res.exit_code == 2
    assert "scores the bare model beside the skill" in res.output


def test_validate_holds_each_cell_to_the_minimum_and_names_the_failing_one(project, isolated):
    skill, suite = project
    weak = "scripted/scripted_targets:zero_latency"  # answers "A" to everything
    res = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "--target",
        FOLLOW,
        "--target",
        weak,
        "--min-score",
        "0.8",
        "--json",
        "v.json",
    )
    assert res.exit_code == 1, res.output
    assert f"min-score [{weak} · chat]: mean 0.000 < 0.800" in res.output
    assert (
        f"min-score [{FOLLOW} · chat]"
        not in res.output.split("validate failed")[0].split("failed ")[-1]
    )
    assert "validate failed" in res.stdout
    data = json.load(open("v.json"))
    verdicts = {c["target"]: c["passed"] for c in data["cells"]}
    assert verdicts == {FOLLOW: True, weak: False}
    assert data["failures"] == [f"min-score [{weak} · chat]: mean 0.000 < 0.800"]

    ok = invoke(
        "validate",
        skill,
        "--tasks",
        suite,
        "--target",
        FOLLOW,
        "--target",
        UPPER,
        "--min-score",
        "0.8",
    )
    assert ok.exit_code == 0, ok.output
    assert "validate passed" in ok.stdout


def test_validate_fails_a_cell_that_cannot_run(project, no_keys):
    skill, suite = project
    res = invoke(
        "validate", skill, "--tasks", suite, "--target", FOLLOW, "--target", "openai/gpt-4o-mini"
    )
    assert res.exit_code == 1, res.output
    assert "scored [openai/gpt-4o-mini · chat]: could not run: OPENAI_API_KEY is not set" in (
        res.output
    )


def test_the_stand_in_agents_give_the_load_column(project, agents, isolated):
    skill, _ = project
    items = [{"id": "w0", "input": "word-0", "expected": "WORD-0"}]
    suite = write_suite(
        isolated / "tasks" / "one.yaml",
        items,
        split={"seed": 3, "train": 0.0, "val": 0.0, "test": 1.0},
    )
    helpful = write_skill(
        isolated / "skills", "helpful", body="# Help\n\nWrite WORD items in capitals.\n"
    )
    del skill
    res = invoke(
        "eval",
        helpful,
        "--tasks",
        suite,
        "--harness",
        "claude-code",
        "--harness",
        "codex",
        "--json",
        "a.json",
    )
    assert res.exit_code == 0, res.output
    assert "load" in res.stdout.splitlines()[1]
    cells = json.load(open("a.json"))["cells"]
    assert [(c["harness"], c["rows"][0]["load_rate"]) for c in cells] == [
        ("claude-code", 1.0),
        ("codex", 1.0),
    ]
    assert [c["rows"][0]["delta"] for c in cells] == [1.0, 1.0]
