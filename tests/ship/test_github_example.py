"""The GitHub Actions examples: each workflow is valid YAML with the triggers, secrets,
caches and report steps it promises, its install step refuses to guess where
skillopt comes from, and the validate script (the same in both) runs as written
against a real repository whose base branch is `origin/main`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import have_local, write_skill, write_suite

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "github-actions"
WORKFLOW = EXAMPLES / "skill-validate.yml"
LOCAL = EXAMPLES / "skill-validate-local.yml"  # the embedded model, no key
GOOD = "# Caps\n\nAnswer in capitals.\n"


def workflow(path: Path = WORKFLOW) -> dict:
    return yaml.safe_load(path.read_text())


def steps(path: Path = WORKFLOW) -> list[dict]:
    return workflow(path)["jobs"]["validate"]["steps"]


def triggers(wf: dict) -> dict:
    return wf[True] if True in wf else wf["on"]  # YAML 1.1 reads `on` as a boolean


def step(path: Path, name: str) -> dict:
    return next(s for s in steps(path) if s.get("name", "").startswith(name))


def test_triggers_secrets_cache_and_reports():
    wf = workflow()
    on = triggers(wf)
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


@pytest.mark.parametrize("path", [WORKFLOW, LOCAL], ids=["provider", "local"])
def test_install_step_needs_a_pinned_requirement_and_checks_what_it_got(tmp_path, path):
    install = step(path, "Install skillopt")
    assert install["env"]["SKILLOPT_REQUIREMENT"] == "${{ vars.SKILLOPT_REQUIREMENT }}"
    lines = [line.strip() for line in install["run"].splitlines()]
    # never a bare `pip install skillopt`: that name on PyPI is another project
    assert 'pip install "$SKILLOPT_REQUIREMENT"' in lines
    assert not any(line.split("#")[0].strip() == "pip install skillopt" for line in lines)
    assert lines.index('pip install "$SKILLOPT_REQUIREMENT"') < next(
        i for i, line in enumerate(lines) if line.startswith("skillopt validate --help")
    )
    # unset, the step stops before pip with a message naming the variable
    env = {"PATH": os.environ["PATH"], "SKILLOPT_REQUIREMENT": ""}
    proc = subprocess.run(
        ["bash", "-e", "-c", install["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "::error::set the repository variable SKILLOPT_REQUIREMENT" in proc.stdout
    assert "skillopt is not on PyPI" in proc.stdout


@pytest.mark.parametrize("path", [WORKFLOW, LOCAL], ids=["provider", "local"])
def test_no_invented_home_for_skillopt(path):
    """skillopt has no public URL or release tag: the examples say where to put
    yours, and never point pip at PyPI's unrelated `skillopt`."""
    text = path.read_text()
    assert "<owner>" not in text and "v0.1.0" not in text and "github.com/" not in text
    assert "git+https://<host>/<path>/skillopt.git@<tag-or-commit>" in text
    assert "vendor/skillopt" in text


def test_both_variants_validate_with_the_same_script():
    """The local variant's validate step is the provider one's, word for word: the
    run-as-written test below covers both."""
    assert step(LOCAL, "Validate skills") == step(WORKFLOW, "Validate skills")
    assert triggers(workflow(LOCAL)) == triggers(workflow(WORKFLOW))


def test_local_variant_runs_the_embedded_model_with_a_pip_cache():
    wf = workflow(LOCAL)
    job = wf["jobs"]["validate"]
    assert job["env"]["SKILLOPT_TARGET"] == "local/gemma-3-270m"
    assert "secrets." not in LOCAL.read_text()  # no key: forks run it too
    assert "if" not in job
    names = [s.get("name", s.get("uses", "")) for s in job["steps"]]
    restore = step(LOCAL, "Restore pip's cache")
    save = step(LOCAL, "Save pip's cache")
    install = step(LOCAL, "Install skillopt")
    assert restore["uses"].startswith("actions/cache/restore@")
    assert restore["with"]["path"] == "~/.cache/pip"
    assert "${{ vars.SKILLOPT_REQUIREMENT }}" in restore["with"]["key"]
    assert restore["with"]["key"].startswith(restore["with"]["restore-keys"].strip())
    # saved right after installing, so a first run that then fails validation
    # still keeps the compiled wheel
    assert save["uses"].startswith("actions/cache/save@")
    assert save["with"]["path"] == "~/.cache/pip"
    assert save["if"] == "steps.pip-cache.outputs.cache-hit != 'true'"
    assert save["with"]["key"] == "${{ steps.pip-cache.outputs.cache-primary-key }}"
    assert restore["id"] == "pip-cache"
    order = [names.index(s["name"]) for s in (restore, install, save)]
    assert order == sorted(order) and order[2] < names.index("Validate skills")
    assert job["timeout-minutes"] >= 30 and "compiles llama-cpp-python" in LOCAL.read_text()
    # a fork's read-only token cannot publish: those steps are for this repository's PRs
    for name in ("Publish the JUnit report", "Comment the summary"):
        assert "head.repo.full_name == github.repository" in step(LOCAL, name)["if"]


def fake_bin(tmp_path: Path, python: str) -> Path:
    """`pip` that records its arguments, a `skillopt` that has `validate`, and
    `python` as given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "pip": f'printf "%s\\n" "$@" > {tmp_path / "pip-args"}',
        "skillopt": "exit 0",
        "python": f'exec {python} "$@"',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_local_install_step_insists_on_the_local_extra(tmp_path):
    install = step(LOCAL, "Install skillopt")
    requirement = "skillopt @ git+https://git.example.org/me/skillopt.git@abc123"
    # `python -S` has no site-packages: llama_cpp is not importable
    bin_dir = fake_bin(tmp_path, f"{sys.executable} -S")
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SKILLOPT_REQUIREMENT": requirement,
    }
    proc = subprocess.run(
        ["bash", "-e", "-c", install["run"]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "::error::the embedded model is not installed" in proc.stdout
    assert "skillopt[local] @" in proc.stdout
    # the requirement reaches pip as one argument, spaces and all
    assert (tmp_path / "pip-args").read_text() == "install\n" + requirement + "\n"


@pytest.mark.skipif(not have_local(), reason='needs pip install -e ".[local]"')
def test_local_install_step_passes_with_the_local_extra(tmp_path):
    install = step(LOCAL, "Install skillopt")
    bin_dir = fake_bin(tmp_path, sys.executable)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SKILLOPT_REQUIREMENT": "./vendor/skillopt[local]",
    }
    proc = subprocess.run(
        ["bash", "-e", "-c", install["run"]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


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
        # this checkout first: the `skillopt` on PATH may be an install of another one
        "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}",
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
