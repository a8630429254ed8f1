"""`skillopt init` and a new user's path: init → eval → train, offline, in three
commands, through the real CLI (in process with a scripted target; in child
processes with the embedded model, following the commands init prints)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import have_local
from ptyterm import run_in_pty
from typer.testing import CliRunner

from skillopt import api
from skillopt import starter as starter_module
from skillopt.cli.main import app
from skillopt.config import resolve_settings
from skillopt.suite.hygiene import check_splits
from skillopt.suite.loader import load_suite

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
LEARNER = "scripted/scripted_targets:numbers_by_example"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def child_env() -> dict[str, str]:
    """This checkout first on the child's path (its `skillopt`, the scripted targets)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}


def test_init_writes_a_skill_that_lints_a_suite_that_loads_and_offline_settings(isolated):
    res = invoke("init", "invoice-triage")
    assert res.exit_code == 0, res.output
    skill = isolated / "skills" / "invoice-triage"
    suite = isolated / "tasks" / "invoice-triage.yaml"
    assert res.stdout.splitlines()[:3] == [
        f"wrote {skill / 'SKILL.md'}".replace(str(isolated) + "/", ""),
        "wrote tasks/invoice-triage.yaml",
        "wrote skillopt.yaml",
    ]
    assert res.stdout.rstrip().endswith(
        "next:\n"
        "  skillopt eval skills/invoice-triage --tasks tasks/invoice-triage.yaml\n"
        "  skillopt train skills/invoice-triage --tasks tasks/invoice-triage.yaml"
    )
    assert api.lint([skill]) == []  # not an error, not even a warning
    loaded = load_suite(suite)
    assert loaded.counts() == {"train": 4, "val": 4, "test": 4}
    assert {t.scorer.name for t in loaded.tasks} == {"exact"}
    assert check_splits(loaded).repeats == ()  # the example items repeat nothing
    settings = resolve_settings(project_file=isolated / "skillopt.yaml", env={})
    assert (settings.target, settings.optimizer, settings.judge) == (
        "local/gemma-3-270m",
        "exemplars",
        None,
    )
    assert settings.store == str(isolated / "runs/rollouts.sqlite")
    assert (
        "description: Write a number given in words as digits. Use when"
        in (skill / "SKILL.md").read_text()
    )


@pytest.mark.parametrize("scorer", api.INIT_SCORERS)
def test_every_scorer_choice_loads(isolated, scorer):
    res = invoke("init", "demo", "--scorer", scorer, "--description", "Does X. Use when Y.")
    assert res.exit_code == 0, res.output
    assert "nothing was asked" not in res.stderr  # every choice was given
    loaded = load_suite(isolated / "tasks" / "demo.yaml")
    assert {t.scorer.name for t in loaded.tasks} == {scorer}
    settings = resolve_settings(project_file=isolated / "skillopt.yaml", env={})
    if scorer == "judge":
        assert settings.judge == starter_module.JUDGE_MODEL
        assert f"set {starter_module.JUDGE_KEY}" in res.stdout
        assert "Score 1 when it is exactly right" in loaded.tasks[0].scorer.params.rubric
    else:
        assert settings.judge is None and "note:" not in res.stdout


def test_the_api_offers_the_starters_scorers():
    assert api.INIT_SCORERS == starter_module.SCORERS
    assert api.init_defaults()[1] == starter_module.SCORERS[0]


def test_init_refuses_to_overwrite_naming_each_file_and_writes_nothing(isolated):
    (isolated / "skillopt.yaml").write_text("target: openai/gpt-4o-mini\n")
    (isolated / "tasks").mkdir()
    (isolated / "tasks" / "demo.yaml").write_text("mine\n")
    res = invoke("init", "demo")
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1  # one line
    assert "tasks/demo.yaml, skillopt.yaml: they exist" in res.stderr
    assert "--force" in res.stderr and "SKILL.md" not in res.stderr
    assert not (isolated / "skills").exists()
    assert (isolated / "skillopt.yaml").read_text() == "target: openai/gpt-4o-mini\n"
    res = invoke("init", "demo", "--force")
    assert res.exit_code == 0, res.output
    assert "target: local/gemma-3-270m" in (isolated / "skillopt.yaml").read_text()


@pytest.mark.parametrize("name", ["My_Skill", "-demo", "demo-", "de--mo", "a" * 65, "démo"])
def test_a_bad_name_is_one_error_and_nothing_is_written(isolated, name):
    res = invoke("init", "--", name)  # `--`: "-demo" is a name, not an option
    assert res.exit_code == 2, res.output
    assert "is not a skill name: use 1-64 lowercase letters" in res.stderr
    assert res.stderr.count("\n") == 1 and "nothing was asked" not in res.stderr
    assert list(isolated.iterdir()) == []


@pytest.mark.parametrize(
    ("description", "why"),
    [("Uses <b> tags", "must not contain '<' or '>'"), ("  ", "must not be empty")],
)
def test_a_bad_description_is_refused(isolated, description, why):
    res = invoke("init", "demo", "--description", description)
    assert res.exit_code == 2 and why in res.stderr, res.output
    assert list(isolated.iterdir()) == []


def test_without_a_terminal_the_defaults_are_used_and_said(isolated):
    res = invoke("init", "demo", "--scorer", "number")
    assert res.exit_code == 0, res.output
    assert "not a terminal, so nothing was asked: using the example task's description " in (
        res.stderr
    )
    assert "scorer exact" not in res.stderr  # the scorer was given
    assert invoke("init", "other", "proj", "--yes").stderr == ""


def test_a_project_folder_is_written_into_and_cd_is_said(isolated):
    res = invoke("init", "demo", "proj", "--description", "A: b, 'c' # d. Use when e.")
    assert res.exit_code == 0, res.output
    assert (isolated / "proj" / "skills" / "demo" / "SKILL.md").is_file()
    assert "next:\n  cd proj\n  skillopt eval skills/demo" in res.stdout
    assert api.lint([isolated / "proj" / "skills" / "demo"]) == []
    text = (isolated / "proj" / "skills" / "demo" / "SKILL.md").read_text()
    assert "description: 'A: b, ''c'' # d. Use when e.'" in text  # quoted as YAML needs


def test_init_asks_on_a_terminal(isolated):
    screen = run_in_pty(
        [sys.executable, "-m", "skillopt", "init", "demo"],
        cwd=isolated,
        env=child_env(),
        replies=[
            (b"when should an agent use it?", b"Sorts tickets by urgency. Use when one arrives."),
            (b"How are answers checked", b"fuzzy"),
            (b"How are answers checked", b"number"),
        ],
        deadline_s=60,
    )
    assert screen.returncode == 0, screen.text
    assert "unknown scorer 'fuzzy'" in screen.text
    skill = (isolated / "skills" / "demo" / "SKILL.md").read_text()
    assert "description: Sorts tickets by urgency. Use when one arrives.\n" in skill
    loaded = load_suite(isolated / "tasks" / "demo.yaml")
    assert {t.scorer.name for t in loaded.tasks} == {"number"}
    assert "nothing was asked" not in screen.text


def test_a_new_users_path_offline_with_a_scripted_target(isolated):
    """init → eval → train, three commands, the target a scripted learner that gets
    one-word numbers right and hyphenated ones once the skill shows one."""
    assert invoke("init", "numbers", "--yes").exit_code == 0
    skill, suite = "skills/numbers", "tasks/numbers.yaml"
    res = invoke("eval", skill, "--tasks", suite, "--target", LEARNER, "--json", "eval.json")
    assert res.exit_code == 0, res.output
    data = json.loads((isolated / "eval.json").read_text())
    assert data["results"][0]["mean"] == 0.5 and data["near_duplicates"] == []
    res = invoke("train", skill, "--tasks", suite, "--target", LEARNER)
    assert res.exit_code == 0, res.output
    (run,) = (isolated / "runs").glob("numbers-*")
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["initial_val"], summary["best_val"]) == (0.25, 0.75)
    assert (run / "best" / "SKILL.md").read_text().count("Input: ") >= 1


@pytest.mark.slow  # the embedded model, a whole training run, child processes
@pytest.mark.skipif(not have_local(), reason="the embedded model needs the `local` extra")
def test_a_new_users_path_with_the_embedded_model_as_init_says(isolated):
    env = {**child_env(), "COLUMNS": "200"}
    init = subprocess.run(
        [sys.executable, "-m", "skillopt", "init", "numbers", "--yes"],
        cwd=isolated, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    commands = re.findall(r"^  (skillopt .+)$", init.stdout, re.M)
    assert [c.split()[1] for c in commands] == ["eval", "train"]
    results = []
    for command in commands:
        argv = [sys.executable, "-m", "skillopt", *command.split()[1:]]
        results.append(subprocess.run(argv, cwd=isolated, env=env, capture_output=True, text=True))
        assert results[-1].returncode == 0, results[-1].stderr
    evaluated = re.search(r"^test\s+skill\s+(\d\.\d+)", results[0].stdout, re.M)
    assert evaluated is not None, results[0].stdout
    assert 0 < float(evaluated.group(1)) < 1  # 0.500 measured: neither none nor all
    (run,) = (isolated / "runs").glob("numbers-*")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "finished"
    assert summary["best_val"] > summary["initial_val"]  # 0.500 → 0.750 measured
    assert (run / "best" / "SKILL.md").is_file() and (run / "report.md").is_file()
