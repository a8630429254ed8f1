"""The GitHub Actions example: the workflow is valid YAML with the triggers, secrets,
cache and report steps it promises, and its validate script runs as written
against a real repository whose base branch is `origin/main`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from helpers import write_skill, write_suite

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "github-actions" / "skill-validate.yml"
GOOD = "# Caps\n\nAnswer in capitals.\n"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps() -> list[dict]:
    return workflow()["jobs"]["validate"]["steps"]


def test_triggers_secrets_cache_and_reports():
    wf = workflow()
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads `on` as a boolean
    assert set(on["pull_request"]["paths"]) == {"skills/**", "tasks/**"}
    job = wf["jobs"]["validate"]
    assert "${{ secrets.OPENAI_API_KEY }}" in job["env"].values()
    assert "head.repo.full_name == github.repository" in job["if"]
    uses = {s.get("uses", "").split("@")[0]: s for s in steps()}
    assert uses["actions/checkout"]["with"]["fetch-depth"] == 0
    assert uses["actions/cache/restore"]["with"]["path"] == "runs/rollouts.sqlite"
    assert uses["actions/cache/save"]["if"] == "success() || failure()"
    junit = uses["mikepenz/action-junit-report"]
    assert junit["if"] == "success() || failure()"
    assert junit["with"]["report_paths"] == "reports/*.junit.xml"
    assert wf["permissions"]["checks"] == "write"


def test_install_step_needs_a_pinned_requirement_and_checks_what_it_got(tmp_path):
    step = next(s for s in steps() if s.get("name") == "Install skillopt")
    assert step["env"]["SKILLOPT_REQUIREMENT"] == "${{ vars.SKILLOPT_REQUIREMENT }}"
    lines = [line.strip() for line in step["run"].splitlines()]
    # never a bare `pip install skillopt`: that name on PyPI is another project
    assert 'pip install "$SKILLOPT_REQUIREMENT"' in lines
    assert not any(line.split("#")[0].strip() == "pip install skillopt" for line in lines)
    assert lines.index('pip install "$SKILLOPT_REQUIREMENT"') < next(
        i for i, line in enumerate(lines) if line.startswith("skillopt validate --help")
    )
    # unset, the step stops before pip with a message naming the variable
    env = {"PATH": os.environ["PATH"], "SKILLOPT_REQUIREMENT": ""}
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "::error::set the repository variable SKILLOPT_REQUIREMENT" in proc.stdout


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_validate_script_runs_as_written(isolated, tmp_path, monkeypatch):
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "t")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "t@example.com")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(isolated, "init", "-q", "-b", "main")
    skill = write_skill(isolated / "skills", "caps", body=GOOD)
    write_skill(isolated / "skills", "no-suite", body=GOOD)  # skipped: no tasks/no-suite.yaml
    items = [
        {"id": f"w{i}", "input": f"word{i}", "expected": f"WORD{i}", "split": "test"}
        for i in range(3)
    ]
    write_suite(isolated / "tasks" / "caps.yaml", items)
    git(isolated, "add", "-A")
    git(isolated, "commit", "-qm", "base")
    git(isolated, "remote", "add", "origin", str(origin))
    git(isolated, "push", "-q", "origin", "main")
    git(isolated, "fetch", "-q", "origin")
    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md").read_text().replace("Answer in capitals.", "Echo the input.")
    )  # the pull request breaks the skill

    script = next(s["run"] for s in steps() if s.get("name") == "Validate skills")
    summary = tmp_path / "step-summary.md"
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "tests"),
        "BASE_REF": "main",
        "GITHUB_STEP_SUMMARY": str(summary),
        "MIN_SCORE": "0.8",
        "MAX_REGRESSIONS": "0",
        "SKILLOPT_TARGET": "scripted/scripted_targets:follows_skill",
    }
    proc = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=isolated,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the regression fails the job
    assert "pass→fail 3" in proc.stdout
    assert (isolated / "reports" / "caps.junit.xml").is_file()
    assert sorted(p.name for p in (isolated / "reports" / "summaries").iterdir()) == ["caps.md"]
    text = summary.read_text()
    assert "## skillopt validate: `caps` ❌ failed" in text and "baseline (`origin/main`)" in text
    assert (isolated / "reports" / "comment.md").read_text() == text

    (skill / "SKILL.md").write_text(
        (skill / "SKILL.md").read_text().replace("Echo the input.", "Answer in capitals.")
    )  # fixed: the job passes
    summary.unlink()
    proc = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=isolated,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "✅ passed" in summary.read_text()
    assert (isolated / "reports" / "comment.md").read_text() == summary.read_text()
