"""`skillopt eval --show-failures`: after the table, each failed or unscored task
with the prompt as the target saw it, its answer, the expected value, score and
feedback (long texts cut unless --full); `--json` carries the same per rollout."""

from __future__ import annotations

import json

import pytest
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()
FLAKY = "scripted/scripted_targets:follows_skill_but_boom_fails"


@pytest.fixture
def project(isolated):
    rules = "\n".join(f"- rule {i}" for i in range(40))  # a long skill: a long prompt
    skill = write_skill(isolated / "skills", "plain", body=f"# Plain\n\n{rules}\n")
    items = [
        {"id": "ok", "input": "same", "expected": "same"},
        {"id": "caps", "input": "word", "expected": "WORD"},
        {"id": "boom", "input": "boom <script>x</script>", "expected": {"a": 1}},
    ]
    suite = write_suite(
        isolated / "tasks" / "plain.yaml",
        items,
        split={"seed": 3, "train": 0.0, "val": 0.0, "test": 1.0},
    )
    return skill, suite


def test_show_failures_prints_each_failed_task_and_json_carries_it(project, isolated):
    skill, suite = project
    out = isolated / "out.json"
    args = ["eval", str(skill), "--tasks", str(suite), "--target", FLAKY, "--show-failures"]
    res = runner.invoke(app, [*args, "--json", str(out)])
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert "failures (skill · test): 2 of 3 tasks" in text
    failures = text.split("failures (skill · test)")[1]
    assert "\nok\n" not in failures  # a passing task is not shown
    caps = failures.split("\ncaps\n")[1].split("\nboom")[0]
    # the prompt: the skill's head and tail, how much was cut, then the task
    assert "[system]" in caps and "- rule 0" in caps and "- rule 20" not in caps
    assert "more lines (--full shows them)" in caps and caps.count("[user]") == 1
    assert "answer: word" in caps and "expected: WORD" in caps
    assert "score: 0.000 (fail)" in caps and "differs only in letter case" in caps
    boom = failures.split("\nboom\n")[1]
    assert "error: provider unavailable (503)" in boom and "answer: (none)" in boom
    assert 'expected: {"a": 1}' in boom and "<script>x</script>" in boom  # shown as text

    whole = runner.invoke(app, [*args, "--full"])
    assert whole.exit_code == 0, whole.output
    assert "- rule 20" in whole.stdout and "more lines" not in whole.stdout

    rollouts = {r["task_id"]: r for r in json.loads(out.read_text())["rollouts"]}
    caps_json = rollouts["caps"]
    assert (caps_json["answer"], caps_json["expected"], caps_json["score"]) == ("word", "WORD", 0.0)
    assert caps_json["feedback"].startswith("expected 'WORD'")
    assert [m["role"] for m in caps_json["messages"]] == ["system", "user"]
    assert caps_json["messages"][1]["content"] == "word"
    assert caps_json["prompt"].startswith("[system]\n# Plain") and caps_json["prompt"].endswith(
        "[user]\nword"
    )
    assert rollouts["boom"]["expected"] == {"a": 1} and rollouts["boom"]["scored"] is False
