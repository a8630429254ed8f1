"""Reading runs back: a run by id or directory, its steps (from its checkpoint and
its git history), one step's commit, diffs, and its best skill; and tidying the
git refs that runs leave behind (`prune`).

Invariant: a step is what `state.json` recorded, joined with its audit commit when
it made a candidate. A step that made none (no candidate, a skipped slow update)
has no commit, and everything that shows it says why.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt.config import resolve_settings
from skillopt.errors import InputError
from skillopt.optimize.state import TrainState
from skillopt.skill.document import Skill
from skillopt.store.audit import Audit, AuditCommit, checked_out, delete_refs, run_refs
from skillopt.store.run import RunDir


def find_run(ref: str | Path, run_dir: str | Path | None = None) -> RunDir:
    """A run by directory, or by id under `run_dir` (default: the configured runs
    directory)."""
    return RunDir.find(str(ref), runs_dir(run_dir))


def runs_dir(run_dir: str | Path | None = None) -> Path:
    """`run_dir`, or the configured runs directory."""
    base = resolve_settings({"run_dir": str(run_dir) if run_dir is not None else None})
    return Path(base.run_dir)


def open_run(ref: str | Path, run_dir: str | Path | None = None) -> tuple[RunDir, Audit]:
    """(RunDir, Audit) of a run given by id or directory."""
    run = find_run(ref, run_dir)
    audit_conf = run.config().get("audit") or {}
    audit = Audit.open(audit_conf["repo"], run.run_id, audit_conf["skill_path"])
    return run, audit


@dataclass(frozen=True)
class RunStep:
    """One step of a run: its decision and reason, and its audit commit when it made
    a candidate (`commit` None: no candidate, or a skipped slow update). `record` is
    the step's evidence as `state.json` holds it ({} for a commit the checkpoint
    has not recorded yet)."""

    step: int
    kind: str  # initial | step | slow_update
    epoch: int | None
    decision: str  # initial | accepted | rejected | no_candidate | skipped
    reason: str
    commit: AuditCommit | None
    record: dict[str, Any] = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        """One sentence on what happened at a step with no commit:
        `step 3 made no candidate: no failures to learn from and no edit proposed`."""
        what = "slow update" if self.kind == "slow_update" else "step"
        if self.decision == "skipped":
            happened = f"{what} {self.step} was skipped"
        elif self.decision == "no_candidate":
            happened = f"{what} {self.step} made no candidate"
        else:
            happened = f"{what} {self.step}: {self.decision.replace('_', ' ')}"
        return f"{happened}: {self.reason}" if self.reason else happened


def _records(run: RunDir) -> list[dict[str, Any]]:
    """The step records of the run's checkpoint; none if it has none or cannot be
    read (the git history is still shown)."""
    try:
        state = TrainState.load(run)
    except InputError:
        return []
    return [dict(rec) for rec in state.steps] if state is not None else []


def steps(ref: str | Path, run_dir: str | Path | None = None) -> list[RunStep]:
    """Every step of a run, in order: the candidates committed to git and the
    steps that made none, each with its reason."""
    run, audit = open_run(ref, run_dir)
    commits = {c.step: c for c in audit.history()}
    out = {}
    for rec in _records(run):
        out[rec["step"]] = RunStep(
            rec["step"],
            rec["kind"],
            rec.get("epoch"),
            rec["decision"],
            rec.get("reason") or "",
            commits.get(rec["step"]),
            rec,
        )
    for number, c in commits.items():  # committed, not yet in the checkpoint
        if number not in out:
            ev = c.evidence
            out[number] = RunStep(number, ev.kind or "initial", ev.epoch, c.decision, "", c)
    return [out[k] for k in sorted(out)]


def find_step(ref: str | Path, step: int, run_dir: str | Path | None = None) -> RunStep:
    """One step of a run; an `InputError` naming the recorded steps when it has none."""
    found = steps(ref, run_dir)
    for s in found:
        if s.step == step:
            return s
    recorded = f"0 to {found[-1].step}" if found else "none"
    raise InputError(f"run {str(ref)!r} has no step {step} (recorded steps: {recorded})")


def history(ref: str | Path, run_dir: str | Path | None = None) -> list[AuditCommit]:
    """The training story of a run, read back from git."""
    _, audit = open_run(ref, run_dir)
    return audit.history()


def diff(ref: str | Path, step: int | None = None, run_dir: str | Path | None = None) -> str:
    """The skill diff of one step (against its parent), or of the whole run."""
    _, audit = open_run(ref, run_dir)
    if step is None:
        accepted = audit.accepted()
        if not accepted:
            raise InputError(f"run {str(ref)!r} has no commits yet")
        return audit.diff(accepted[0].sha, accepted[-1].sha)
    commit = step_commit(audit, ref, step, run_dir)
    return audit.diff(commit.parent if step > 0 else None, commit.sha)


def step(ref: str | Path, step: int, run_dir: str | Path | None = None) -> AuditCommit:
    """The audit commit of one step (its message holds the evidence)."""
    _, audit = open_run(ref, run_dir)
    return step_commit(audit, ref, step, run_dir)


def step_commit(
    audit: Audit, ref: str | Path, step: int, run_dir: str | Path | None = None
) -> AuditCommit:
    """The commit of `step`; when it has none, an `InputError` saying what happened
    at that step (or that the run has no such step)."""
    commit = audit.find_step(step)
    if commit is not None:
        return commit
    found = find_step(ref, step, run_dir)
    if found.commit is not None:
        return found.commit
    raise InputError(f"run {str(ref)!r}: {found.describe()}; nothing was committed")


def load_skill_or_run(ref: str | Path, run_dir: str | Path | None = None) -> Skill:
    """A skill from its directory (or SKILL.md), or a run's best skill by run id/dir."""
    path = Path(ref)
    if path.exists() and not (path / "run.yaml").is_file():
        return Skill.load(path)
    try:
        run = find_run(ref, run_dir)
    except InputError:
        raise InputError(
            f"{str(ref)!r} is neither a skill (a directory with SKILL.md) nor a "
            "run (a run directory or id)"
        ) from None
    best = run.path / "best"
    if not (best / "SKILL.md").is_file():
        raise InputError(
            f"run {run.run_id} has no best skill yet; continue it with "
            f"`skillopt train --resume {run.run_id}`",
            path=run.path,
        )
    return Skill.load(best)


# ---------------------------------------------------------------------- tidying
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
