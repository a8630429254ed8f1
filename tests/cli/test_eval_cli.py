"""`skillopt eval` end to end through the CLI, with scripted targets."""

from __future__ import annotations

import json

import pytest
from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()
FOLLOW = "scripted/scripted_targets:follows_skill"


@pytest.fixture
def project(isolated):
    skill = write_skill(isolated / "skills", "caps", body="# Caps\n\nAnswer in capitals.\n")
    items = [{"id": f"w{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(6)]
    items.append({"id": "same", "input": "ALREADY", "expected": "ALREADY"})
    suite = write_suite(
        isolated / "tasks" / "caps.yaml",
        items,
        split={"seed": 3, "train": 0.0, "val": 0.0, "test": 1.0},
    )
    return skill, suite


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_eval_prints_table_and_compares_with_no_skill(project, isolated):
    skill, suite = project
    res = invoke(
        "eval",
        skill,
        "--tasks",
        suite,
        "--target",
        FOLLOW,
        "--compare-no-skill",
        "--json",
        isolated / "out.json",
    )
    assert res.exit_code == 0, res.output
    assert "caps" in res.stdout and "test" in res.stdout
    assert "1.000" in res.stdout and "100.0%" in res.stdout  # the skill scores all 7
    assert "0.143" in res.stdout  # the bare model only gets "same" right: 1/7
    assert "Δ test: +0.857" in res.stdout
    assert "fail→pass 6: w0, w1, w2, w3, w4, w5" in res.stdout
    assert "pass→fail 0" in res.stdout
    data = json.loads((isolated / "out.json").read_text())
    summary = {(r["variant"], r["split"]): r for r in data["results"]}
    assert summary[("skill", "test")]["mean"] == 1.0
    assert summary[("no-skill", "test")]["n"] == 7
    assert data["comparisons"][0]["fail_to_pass"] == [f"w{i}" for i in range(6)]
    wrong = [r for r in data["rollouts"] if r["variant"] == "no-skill" and not r["passed"]]
    assert wrong[0]["feedback"].startswith("expected 'WORD")


def test_rerun_is_served_from_the_store(project):
    skill, suite = project
    first = invoke("eval", skill, "--tasks", suite, "--target", FOLLOW, "--json", "a.json")
    assert first.exit_code == 0
    second = invoke("eval", skill, "--tasks", suite, "--target", FOLLOW, "--json", "b.json")
    assert second.exit_code == 0
    a = json.load(open("a.json"))["results"][0]
    b = json.load(open("b.json"))["results"][0]
    assert a["cached"] == 0 and a["model_calls"] == 7
    assert b["cached"] == 7 and b["model_calls"] == 0 and b["mean"] == a["mean"]


def test_no_skill_and_split_all(project, isolated):
    skill, _ = project
    items = [
        {"id": f"i{i}", "input": f"w{i}", "expected": f"W{i}", "split": s}
        for i, s in enumerate(["train", "train", "val", "test", "test"])
    ]
    suite = write_suite(isolated / "tasks" / "mixed.yaml", items)
    res = invoke(
        "eval",
        "--no-skill",
        "--tasks",
        suite,
        "--target",
        FOLLOW,
        "--split",
        "all",
        "--json",
        "all.json",
    )
    assert res.exit_code == 0, res.output
    rows = json.load(open("all.json"))["results"]
    assert [(r["variant"], r["split"], r["tasks"]) for r in rows] == [
        ("no-skill", "train", 2),
        ("no-skill", "val", 1),
        ("no-skill", "test", 2),
    ]


def test_unscored_rollouts_are_reported_not_zero(project, isolated):
    skill, _ = project
    items = [{"id": f"w{i}", "input": f"word{i}", "expected": f"WORD{i}"} for i in range(3)]
    suite = write_suite(
        isolated / "tasks" / "three.yaml",
        items,
        split={"seed": 3, "train": 0.0, "val": 0.0, "test": 1.0},
    )
    res = invoke(
        "eval",
        skill,
        "--tasks",
        suite,
        "--target",
        "scripted/scripted_targets:always_down",
        "--json",
        "down.json",
    )
    assert res.exit_code == 1
    assert "3 rollout(s) unscored" in res.stderr
    assert "provider unavailable (503)" in res.stderr
    assert "no rollout was scored" in res.stderr
    row = json.load(open("down.json"))["results"][0]
    assert row["unscored"] == 3 and row["n"] == 0 and row["mean"] is None


def test_the_same_failure_task_after_task_stops_the_run(project):
    """A provider answering 503 to everything: five in a row stop the run (exit 2),
    instead of running every task into the same wall."""
    skill, suite = project
    res = invoke(
        "eval",
        skill,
        "--tasks",
        suite,
        "--split",
        "all",
        "--concurrency",
        "1",
        "--target",
        "scripted/scripted_targets:always_down",
    )
    assert res.exit_code == 2
    assert (
        "stopped: 5 tasks in a row failed the same way (server): provider unavailable "
        "(503). These are unscored, not zeros"
    ) in " ".join(res.stderr.split())


@pytest.mark.parametrize(
    "suite_text, needle",
    [
        ("items: [\n  {id: a, input: x\n", "invalid YAML"),
        ("items:\n  - {id: a, input: x, expected: y, scorer: fuzzy}\n", "unknown scorer 'fuzzy'"),
        ("items:\n  - {id: a, expected: y}\n", "item 'a': field 'input': required"),
        ("items:\n  - {id: a, input: x}\n", "item 'a': field 'expected'"),
        (
            "items:\n  - {id: a, input: x, expected: y}\n  - {id: a, input: z, expected: w}\n",
            "item 'a': field 'id': duplicate id",
        ),
        ("items:\n  - {id: a, input: x, expected: y, split: train}\n", "split 'test' is empty"),
    ],
)
def test_bad_suite_is_one_line_exit_2(project, isolated, suite_text, needle):
    skill, _ = project
    bad = isolated / "bad.yaml"
    bad.write_text(suite_text)
    res = invoke("eval", skill, "--tasks", bad, "--target", FOLLOW)
    assert res.exit_code == 2, res.output
    assert needle in res.stderr
    assert "bad.yaml" in res.stderr
    assert "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) == 1


def test_bad_jsonl_names_line(project, isolated):
    skill, _ = project
    (isolated / "items.jsonl").write_text('{"id": "a", "input": "x", "expected": "X"}\n{oops\n')
    (isolated / "s.yaml").write_text("items: items.jsonl\n")
    res = invoke("eval", skill, "--tasks", isolated / "s.yaml", "--target", FOLLOW)
    assert res.exit_code == 2
    assert "items.jsonl:2: invalid JSON" in res.stderr


def test_input_errors_before_any_model_call(project, isolated):
    skill, suite = project
    cases = [
        (["eval", skill, "--tasks", suite, "--target", "no-such-model"], "unknown model"),
        (["eval", isolated / "nope", "--tasks", suite, "--target", FOLLOW], "no such skill"),
        (
            ["eval", skill, "--tasks", isolated / "none.yaml", "--target", FOLLOW],
            "no such task suite",
        ),
        (["eval", skill, "--tasks", suite], "no target model"),
        (["eval", skill, "--tasks", suite, "--target", FOLLOW, "--split", "dev"], "unknown split"),
    ]
    for args, needle in cases:
        res = invoke(*args)
        assert res.exit_code == 2, (args, res.output)
        assert needle in res.stderr, (args, res.stderr)
        assert "Traceback" not in res.output
    bad_skill = isolated / "skills" / "broken"
    bad_skill.mkdir()
    (bad_skill / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n")
    res = invoke("eval", bad_skill, "--tasks", suite, "--target", FOLLOW)
    assert res.exit_code == 2 and "SKILL.md" in res.stderr and "invalid YAML" in res.stderr
    assert not (isolated / "runs").exists()  # nothing ran, nothing was stored


def test_debug_shows_the_traceback(project, isolated):
    skill, _ = project
    res = runner.invoke(
        app,
        ["--debug", "eval", str(skill), "--tasks", str(isolated / "none.yaml"), "--target", FOLLOW],
    )
    assert res.exit_code != 0
    assert res.exception is not None and type(res.exception).__name__ == "InputError"


def test_json_dash_prints_the_result_on_stdout_instead_of_the_table(project):
    skill, suite = project
    res = invoke("eval", skill, "--tasks", suite, "--target", FOLLOW, "--json", "-")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # nothing else on stdout
    assert data["results"][0]["mean"] == 1.0 and len(data["rollouts"]) == 7
    assert "wrote" not in res.stderr


def test_no_skill_path_is_one_line_exit_2(project):
    res = invoke("eval", "--tasks", project[1])
    assert res.exit_code == 2, res.output
    assert res.stderr == "error: SKILL: give a SKILL path, or --no-skill\n"


def test_a_folder_of_skills_is_refused_naming_the_subfolders_looked_in(project, isolated):
    _, suite = project
    write_skill(isolated / "skills", "other", body="# Other\n")
    res = invoke("eval", isolated / "skills", "--tasks", suite, "-t", "scripted/echo")
    assert res.exit_code == 2
    assert "holds 2 skill folders (caps, other): name one, e.g. " in res.stderr, res.stderr
    (isolated / "loose" / "notes").mkdir(parents=True)
    res = invoke("eval", isolated / "loose", "--tasks", suite, "-t", "scripted/echo")
    assert res.exit_code == 2
    assert "no SKILL.md in this directory, nor in its subfolders (notes)" in res.stderr
