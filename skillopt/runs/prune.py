"""Tidying the git refs that runs leave behind (`skillopt prune`): a run's branch
`skillopt/<run-id>` and the refs of its rejected candidates, in the user's
repository or the runs directory's `audit.git`.

Invariants: only refs are deleted, never a run directory and never a commit (git
drops the unreachable ones at its next `gc`); a branch checked out in a worktree
is never deleted; without a runs directory nothing is pruned unless every run's
refs are asked for (`everything`), since every run would look deleted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from skillopt.errors import InputError
from skillopt.runs.read import runs_dir
from skillopt.store.refs import checked_out, delete_refs, run_refs


@dataclass(frozen=True)
class Pruned:
    """A run whose refs `prune` deleted (or, in a dry run, would delete), and why;
    `kept` is set instead when they stay although it asked (a checked-out branch)."""

    run_id: str
    repo: str
    refs: tuple[str, ...]
    why: str
    kept: str = ""


def prune(
    *,
    run_dir: str | Path | None = None,
    repos: Sequence[str | Path] = (),
    keep: int | None = None,
    older_than_days: float | None = None,
    everything: bool = False,
    dry_run: bool = False,
    now: float | None = None,
) -> list[Pruned]:
    """Delete the git refs (`skillopt/<run-id>` and its rejected candidates) of runs
    whose directory under `run_dir` is gone; also, with `keep`, of every run but the
    newest `keep`; with `older_than_days`, of runs whose newest commit is older;
    with `everything`, of all runs. Only refs are deleted: run directories stay,
    and git drops the unreachable commits at its next `gc`. A branch checked out in
    a worktree is never deleted.

    `repos` are the repositories to tidy; by default the one holding the current
    directory and `<run_dir>/audit.git`, those that exist (none: nothing to do)."""
    base = runs_dir(run_dir)
    if not base.is_dir() and not everything:
        raise InputError(
            "no runs directory here: every run would look deleted. Pass --run-dir "
            "where your runs are, or --all to prune every run's refs",
            path=base,
        )
    targets = [Path(r) for r in repos] or _default_repos(base)
    found = [(repo, refs) for repo in targets for refs in run_refs(repo)]
    found.sort(key=lambda x: (x[1].last, x[1].run_id), reverse=True)
    cutoff = None if older_than_days is None else (now or time.time()) - older_than_days * 86400
    busy = {repo: checked_out(repo) for repo in targets}
    out: list[Pruned] = []
    for rank, (repo, rr) in enumerate(found):
        if everything:
            why = "--all"
        elif not (base / rr.run_id).is_dir():
            why = f"its run directory is gone ({base / rr.run_id})"
        elif keep is not None and rank >= keep:
            why = f"not among the newest {keep}"
        elif cutoff is not None and rr.last < cutoff:
            why = f"older than {older_than_days:g} days"
        else:
            continue
        branch = f"refs/heads/skillopt/{rr.run_id}"
        here = branch in busy[repo]
        refs = tuple(r for r in rr.refs if not (here and r == branch))
        out.append(Pruned(rr.run_id, str(repo), refs, why, "checked out" if here else ""))
    if not dry_run:
        for repo in targets:
            delete_refs(repo, [r for p in out if p.repo == str(repo) for r in p.refs])
    return out


def _default_repos(base: Path) -> list[Path]:
    import git

    out = []
    try:
        here = git.Repo(Path.cwd(), search_parent_directories=True)
        out.append(Path(here.working_tree_dir or here.git_dir))
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        pass
    bare = base / "audit.git"
    if bare.is_dir():
        out.append(bare)
    return out
