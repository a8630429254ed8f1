"""Tidying the audit trail: the refs skillopt wrote in a repository, found by run and
deleted for `skillopt prune`.

Invariant: only the refs skillopt writes, `refs/heads/skillopt/<run-id>` and
`refs/skillopt/<run-id>/rejected/<step>`, are listed or deleted, those of one
repository in one transaction.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt.errors import InputError, SkilloptError

if TYPE_CHECKING:  # gitpython's import runs `git version`: each use imports it
    import git


@dataclass(frozen=True)
class RunRefs:
    """The refs one run left in a repository: its branch `skillopt/<run-id>` and its
    rejected candidates, and when the newest of their commits was made."""

    run_id: str
    refs: tuple[str, ...]
    last: float  # commit time (Unix seconds) of the newest commit the refs point at


def run_refs(repo_path: str | Path) -> list[RunRefs]:
    """Every run's refs in the repository at `repo_path`, newest run first."""
    import git

    repo = _repo(repo_path)
    try:
        listed = repo.git.for_each_ref(
            "--format=%(refname) %(committerdate:unix)", "refs/heads/skillopt/", "refs/skillopt/"
        )
    except git.GitCommandError as exc:  # a ref whose commit is gone: git reads no date
        why = " ".join(str(exc.stderr).split()) or str(exc.status)
        raise InputError(
            f"the repository is damaged, its refs cannot be read ({why}); `git fsck` says more",
            path=repo_path,
        ) from None
    runs: dict[str, tuple[list[str], float]] = {}
    for line in listed.splitlines():
        ref, _, when = line.rpartition(" ")
        run_id = _run_of(ref)
        if run_id is None:
            continue
        refs, last = runs.setdefault(run_id, ([], 0.0))
        refs.append(ref)
        runs[run_id] = (refs, max(last, float(when or 0)))
    out = [RunRefs(run_id, tuple(sorted(refs)), last) for run_id, (refs, last) in runs.items()]
    return sorted(out, key=lambda r: (r.last, r.run_id), reverse=True)


def _run_of(ref: str) -> str | None:
    """The run id of a ref skillopt writes, else None."""
    if ref.startswith("refs/heads/skillopt/"):
        run_id = ref[len("refs/heads/skillopt/") :]
        return run_id if run_id and "/" not in run_id else None
    parts = ref.split("/")  # refs/skillopt/<run-id>/rejected/<step>
    if len(parts) == 5 and parts[:2] == ["refs", "skillopt"] and parts[3] == "rejected":
        return parts[2]
    return None


def checked_out(repo_path: str | Path) -> set[str]:
    """The branches checked out in the repository's worktrees (never deleted)."""
    repo = _repo(repo_path)
    if repo.bare:
        return set()
    listed = repo.git.worktree("list", "--porcelain")
    return {line.split(" ", 1)[1] for line in listed.splitlines() if line.startswith("branch ")}


def delete_refs(repo_path: str | Path, refs: list[str]) -> None:
    """Delete `refs` in one `git update-ref` transaction: all of them or none."""
    if not refs:
        return
    repo = _repo(repo_path)
    done = subprocess.run(
        ["git", "--git-dir", repo.git_dir, "update-ref", "--stdin"],
        input="".join(f"delete {ref}\n" for ref in refs),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SkilloptError(f"git could not delete the refs in {repo_path}: {done.stderr.strip()}")


def _repo(path: str | Path) -> git.Repo:
    import git

    try:
        return git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise InputError("not a git repository", path=path) from None
