"""Run output stays out of the user's repository: a directory skillopt makes for its
output (`runs/`, a store's folder, the audit repository's folder) holds a
`.gitignore` ignoring everything in it; a directory that already existed is left
as it was."""

from __future__ import annotations

import subprocess

from helpers import write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.runs.rundir import IGNORE_ALL, RunDir
from skillopt.store.audit import _bare_repo
from skillopt.store.rollouts import RolloutStore

runner = CliRunner()


def git(cwd, *args) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_eval_in_a_repository_leaves_nothing_untracked(isolated, monkeypatch):
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "t")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "t@example.com")
    git(isolated, "init", "-q", "-b", "main")
    skill = write_skill(isolated / "skills", "caps", body="# Caps\n\nAnswer in capitals.\n")
    items = [
        {"id": f"w{i}", "input": f"w{i}", "expected": f"W{i}", "split": "test"} for i in range(2)
    ]
    suite = write_suite(isolated / "tasks" / "caps.yaml", items)
    git(isolated, "add", "-A")
    git(isolated, "commit", "-qm", "skill")

    res = runner.invoke(
        app, ["eval", str(skill), "--tasks", str(suite), "--target", "scripted/echo"]
    )
    assert res.exit_code == 0, res.output
    assert (isolated / "runs" / "rollouts.sqlite").is_file()  # the default store
    assert (isolated / "runs" / ".gitignore").read_text() == IGNORE_ALL
    assert git(isolated, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(isolated, "check-ignore", "runs/rollouts.sqlite").strip() == "runs/rollouts.sqlite"


def test_each_output_directory_made_gets_the_file_and_an_existing_one_is_left_alone(tmp_path):
    run = RunDir.create(tmp_path / "made" / "runs", "r1")
    assert (
        run.path.is_dir() and (tmp_path / "made" / "runs" / ".gitignore").read_text() == IGNORE_ALL
    )
    assert not (tmp_path / "made" / ".gitignore").exists()  # only the output directory itself
    RolloutStore(tmp_path / "stores" / "s.sqlite").close()
    assert (tmp_path / "stores" / ".gitignore").read_text() == IGNORE_ALL
    _bare_repo(tmp_path / "audits" / "audit.git")
    assert (tmp_path / "audits" / ".gitignore").read_text() == IGNORE_ALL

    mine = tmp_path / "mine"
    mine.mkdir()
    RunDir.create(mine, "r2")
    RolloutStore(mine / "s.sqlite").close()
    assert not (mine / ".gitignore").exists()  # the user's own directory: not ours to ignore
    (mine / ".gitignore").write_text("keep\n")
    RunDir.create(mine, "r3")
    assert (mine / ".gitignore").read_text() == "keep\n"


def test_a_kept_agent_workspace_makes_runs_git_ignored(tmp_path):
    """An agent eval with a --store elsewhere keeps a failed task's workspace under
    runs/workspaces: the runs/ it makes is git-ignored like any other output folder."""
    from skillopt.harness.workspace import Workspace
    from skillopt.skill.document import Skill
    from skillopt.suite.task import Task

    ws = Workspace.create(
        Skill.empty(),
        Task(id="t1", input="x", expected="X", prompt="x", split="test", scorer=None),
        ".agents/skills",
    )
    kept = ws.keep(tmp_path / "runs" / "workspaces", "t1")
    assert kept.parent == tmp_path / "runs" / "workspaces"
    assert (tmp_path / "runs" / ".gitignore").read_text() == IGNORE_ALL
