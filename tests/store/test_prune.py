"""`skillopt prune`: the git refs runs leave behind, tidied in real repositories."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import git
import pytest
from helpers import write_skill
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.runs.rundir import RunDir
from skillopt.skill.document import Skill
from skillopt.store.audit import Audit
from skillopt.store.trailers import StepTrailers

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def make_run(skill_dir: Path, runs: Path, run_id: str, *, rejected: bool = True) -> None:
    """A run as training leaves it: its directory, the branch with the initial
    commit, and (with `rejected`) a rejected candidate's ref."""
    RunDir.create(runs, run_id)
    audit = Audit.create(skill_dir, runs, run_id)
    skill = Skill.load(skill_dir)
    audit.commit(skill, "step 0", "", StepTrailers(step=0, decision="initial", skill_hash="h"))
    if rejected:
        worse = Skill.parse(skill.text + "\n- worse\n", root=skill_dir)
        audit.commit(worse, "step 1", "", StepTrailers(step=1, decision="rejected", gate="strict"))


def refs(repo: Path) -> list[str]:
    listed = git.Repo(repo).git.for_each_ref(
        "--format=%(refname)", "refs/heads/skillopt/", "refs/skillopt/"
    )
    return sorted(listed.split())


@pytest.fixture
def project(isolated):
    """A user's repository holding a skill, with three runs whose refs are in it."""
    repo = git.Repo.init(isolated, initial_branch="main")
    skill = write_skill(isolated / "skills", "words")
    (isolated / ".gitignore").write_text("runs/\n")
    repo.index.add([".gitignore", "skills/words/SKILL.md"])
    repo.index.commit("user work")
    runs = isolated / "runs"
    for run_id in ("words-1", "words-2", "words-3"):
        make_run(skill, runs, run_id)
    return {"root": isolated, "repo": repo, "skill": skill, "runs": runs}


def test_runs_whose_directory_is_gone_lose_their_refs(project):
    root, runs = project["root"], project["runs"]
    shutil.rmtree(runs / "words-2")
    before = refs(root)
    assert len(before) == 6

    dry = runner.invoke(app, ["prune", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "would delete 2 refs of words-2" in dry.stdout and "run directory is gone" in dry.stdout
    assert refs(root) == before  # a dry run deletes nothing

    res = runner.invoke(app, ["prune"])
    assert res.exit_code == 0, res.output
    assert "deleted 2 refs of 1 run\n" in res.stdout
    assert refs(root) == [r for r in before if "words-2" not in r]
    assert project["repo"].head.commit.message == "user work"  # nothing else touched
    assert (runs / "words-1").is_dir() and (runs / "words-3").is_dir()
    again = runner.invoke(app, ["prune"])
    assert again.exit_code == 0 and "nothing to prune" in again.stdout


def test_keep_the_newest_runs_and_never_a_checked_out_branch(project):
    root, repo = project["root"], project["repo"]
    # commit times decide what is newest: words-1 oldest, words-3 newest
    for age, run_id in ((3, "words-1"), (2, "words-2"), (1, "words-3")):
        branch = repo.commit(f"refs/heads/skillopt/{run_id}")
        env = {
            **os.environ,
            "GIT_COMMITTER_DATE": f"{1_700_000_000 - age * 86400} +0000",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
        }
        sha = repo.git.commit_tree(branch.tree.hexsha, "-p", branch.hexsha, "-m", "x", env=env)
        repo.git.update_ref(f"refs/heads/skillopt/{run_id}", sha)
        for ref in repo.references:
            if ref.path.startswith(f"refs/skillopt/{run_id}/"):
                repo.git.update_ref(ref.path, sha)
    res = runner.invoke(app, ["prune", "--keep", "1"])
    assert res.exit_code == 0, res.output
    assert "not among the newest 1" in res.stdout
    assert refs(root) == [
        "refs/heads/skillopt/words-3",
        "refs/skillopt/words-3/rejected/1",
    ]

    repo.git.checkout("skillopt/words-3")  # a user looking at a run's result
    res = runner.invoke(app, ["prune", "--all"])
    assert res.exit_code == 0, res.output
    assert "kept skillopt/words-3: checked out" in res.stdout
    assert refs(root) == ["refs/heads/skillopt/words-3"]
    assert repo.head.ref.name == "skillopt/words-3"


def test_older_than_days(project):
    res = runner.invoke(app, ["prune", "--older-than", "1", "--dry-run"])
    assert res.exit_code == 0 and "nothing to prune" in res.stdout  # all made just now
    res = runner.invoke(app, ["prune", "--older-than", "0"])
    assert res.exit_code == 0, res.output
    assert "deleted 6 refs of 3 runs" in res.stdout and refs(project["root"]) == []


def test_runs_outside_a_repository_are_tidied_in_runs_audit_git(isolated):
    skill = write_skill(isolated / "skills", "words")
    runs = isolated / "runs"
    make_run(skill, runs, "words-1", rejected=False)
    make_run(skill, runs, "words-2")
    shutil.rmtree(runs / "words-1")
    res = runner.invoke(app, ["prune"])
    assert res.exit_code == 0, res.output
    assert "deleted 1 ref of words-1 in runs/audit.git: its run directory is gone" in res.stdout
    assert "deleted 1 ref of 1 run\n" in res.stdout
    assert refs(runs / "audit.git") == [
        "refs/heads/skillopt/words-2",
        "refs/skillopt/words-2/rejected/1",
    ]


def test_a_missing_runs_directory_is_refused_unless_all(project):
    res = runner.invoke(app, ["prune", "--run-dir", "elsewhere"])
    assert res.exit_code == 2
    assert "every run would look deleted" in res.stderr and "--all" in res.stderr
    assert len(refs(project["root"])) == 6


def test_the_readme_one_liner_deletes_every_runs_refs(project):
    """The git command the README gives for tidying by hand does what it says."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^git for-each-ref .*skillopt.*$", readme, re.MULTILINE)
    subprocess.run(line, shell=True, cwd=project["root"], check=True)
    assert refs(project["root"]) == []
    assert project["repo"].head.ref.name == "main"
