"""`skillopt eval --harness claude-code|codex` through the CLI with the stand-ins:
what the user sees, the exit codes, and Ctrl-C killing agents still running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.agent_cli import HELPFUL
from helpers import wait_dead, write_skill, write_suite
from typer.testing import CliRunner

from skillopt.cli.main import app

runner = CliRunner()
TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(isolated):
    skill = write_skill(isolated / "skills", "caps", body=f"# Caps\n\n- {HELPFUL}\n")
    items = [
        {"id": f"word-{i}", "input": f"word-{i}", "expected": f"WORD-{i}", "split": "test"}
        for i in range(4)
    ]
    suite = write_suite(isolated / "tasks" / "caps.yaml", items)
    return skill, suite


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_eval_through_an_agent_cli(agents, project, isolated, harness):
    skill, suite = project
    res = runner.invoke(
        app,
        [
            "eval",
            str(skill),
            "--tasks",
            str(suite),
            "--harness",
            harness,
            "--compare-no-skill",
            "--json",
            "out.json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert f"target default · harness {harness}" in res.stdout
    assert "skill loaded in 4/4 tasks (skill · test)" in res.stdout
    if harness == "claude-code":  # its init event names the model it ran
        assert "model reported by the agent: claude-opus-4-8[1m]" in res.stdout
    assert "Δ test: +1.000" in res.stdout
    assert "kept 4 workspace(s) of failed tasks" in res.stderr  # the no-skill failures
    data = json.loads((isolated / "out.json").read_text())
    skill_result = next(r for r in data["results"] if r["variant"] == "skill")
    assert skill_result["skill_invoked"] == 4 and skill_result["traced"] == 4
    kept = [r["workspace"] for r in data["rollouts"] if r["workspace"]]
    assert len(kept) == 4 and all(Path(k, "work").is_dir() for k in kept)


def test_missing_cli_exits_2_with_one_line(project, tmp_path, monkeypatch):
    skill, suite = project
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    res = runner.invoke(app, ["eval", str(skill), "--tasks", str(suite), "--harness", "codex"])
    assert res.exit_code == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs `codex`, which is not on PATH" in lines[0]
    assert "--harness chat|claude-code|codex|command" in lines[0]


def test_auth_failure_on_every_task_exits_with_the_clis_message(agents, project):
    agents.configure("claude", mode="auth")
    skill, suite = project
    res = runner.invoke(
        app,
        [
            "eval",
            str(skill),
            "--tasks",
            str(suite),
            "--harness",
            "claude-code",
            "--concurrency",
            "1",
        ],
    )
    assert res.exit_code == 2
    assert "4 tasks in a row failed the same way (auth)" in res.stderr
    assert "(API error 401): Invalid API key · Fix external API key" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_a_kill_stops_the_agents_still_running(agents, project, isolated, sig):
    agents.configure("claude", mode="hang")
    skill, suite = project
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skillopt",
            "eval",
            str(skill),
            "--tasks",
            str(suite),
            "--harness",
            "claude-code",
            "--concurrency",
            "2",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the limits below are for a machine at load 12: never what passes the test
    deadline = time.monotonic() + 300
    while len(agents.hang_pids()) < 4:  # 2 agents + children
        assert time.monotonic() < deadline, "the agents never started"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(sig)
    # an exit within 300 s is not the agents' 600 s timeout: they were stopped
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert wait_dead(agents.hang_pids(), timeout=60)


@pytest.mark.parametrize(
    "harness, where",
    [
        ("claude-code", "home/.claude/skills"),  # personal skills beat project skills
        ("claude-code", "claude-config/skills"),  # ... wherever CLAUDE_CONFIG_DIR puts them
        ("codex", "home/.agents/skills"),
        ("codex", "codex-home/skills"),  # $CODEX_HOME/skills, the legacy place
    ],
)
def test_without_isolation_a_user_level_copy_of_the_skill_stops_the_run_before_any_task(
    agents, project, isolated, tmp_path, monkeypatch, harness, where
):
    (isolated / "skillopt.yaml").write_text("agent:\n  isolate: false\n")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    if where.startswith("claude-config"):
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    if where.startswith("codex-home"):
        monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    skill, suite = project
    write_skill(tmp_path / where, "caps", body="# An older copy\n")
    res = runner.invoke(app, ["eval", str(skill), "--tasks", str(suite), "--harness", harness])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert f"{tmp_path / where / 'caps'} holds a user-level skill named 'caps'" in lines[0]
    assert "Move it aside" in lines[0]
    assert agents.calls("claude") == [] and agents.calls("codex") == []  # no task ran


def test_user_skills_of_other_names_are_no_obstacle(agents, project, isolated):
    write_skill(isolated.parent / "home" / ".claude" / "skills", "other", body="# Other\n")
    skill, suite = project
    res = runner.invoke(
        app, ["eval", str(skill), "--tasks", str(suite), "--harness", "claude-code"]
    )
    assert res.exit_code == 0, res.output
    assert "mean" in res.stdout and len(agents.calls("claude")) == 4


def test_a_suite_default_target_the_cli_cannot_run_gives_way_to_its_default(
    agents, project, isolated
):
    """A suite written for the embedded model, run with an agent CLI and no --target:
    the CLI's own default model runs, and one line says so."""
    skill, _ = project
    items = [{"id": "w", "input": "word-1", "expected": "WORD-1", "split": "test"}]
    suite = write_suite(
        isolated / "tasks" / "local.yaml", items, defaults={"target": "local/gemma3-270m"}
    )
    res = runner.invoke(
        app, ["eval", str(skill), "--tasks", str(suite), "--harness", "claude-code"]
    )
    assert res.exit_code == 0, res.output
    warnings = [line for line in res.stderr.splitlines() if "default target" in line]
    assert len(warnings) == 1
    assert "'local/gemma3-270m' is a model skillopt runs itself" in warnings[0]
    assert "target default · harness claude-code" in res.stdout
    assert "--model" not in agents.calls("claude")[0]["argv"]
    # an explicit --target of that kind is still refused, with the reason
    res = runner.invoke(
        app,
        [
            "eval",
            str(skill),
            "--tasks",
            str(suite),
            "--harness",
            "claude-code",
            "--target",
            "local/gemma3-270m",
        ],
    )
    assert res.exit_code == 2 and "skillopt runs itself" in res.stderr


def test_validate_says_so_too_when_the_suite_default_target_gives_way(agents, project, isolated):
    skill, _ = project
    items = [{"id": "w", "input": "word-1", "expected": "WORD-1", "split": "test"}]
    suite = write_suite(
        isolated / "tasks" / "local.yaml", items, defaults={"target": "local/gemma3-270m"}
    )
    res = runner.invoke(
        app,
        [
            "validate",
            str(skill),
            "--tasks",
            str(suite),
            "--harness",
            "claude-code",
            "--min-score",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "'local/gemma3-270m' is a model skillopt runs itself" in res.stderr
